/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

#include "macro.h"

/*
 * Whether reading firmware from disk is safe again after resume (or at early boot): the root
 * file system is writable again and the firmware roots are readable. A root that was
 * read-only before suspend (an immutable system) never becomes writable: there the roots
 * being readable is enough, so nothing waits forever.
 *
 * Writability is the superblock's, from the super options of /proc/self/mountinfo: the
 * per-mount flags say read-only for every service with ProtectSystem=strict, whatever the
 * real root does.
 */

/* Test hook: $FW_HELPERD_GATE_PATH names the path whose file system stands in for "/". */
#define GATE_PATH_ENV "FW_HELPERD_GATE_PATH"

typedef struct Gate {
	char *path;		/* "/" unless the test hook says otherwise */
	char *mountinfo;	/* "/proc/self/mountinfo" */
	bool root_ro_before;	/* the root was read-only when the cycle began */
} Gate;

int gate_new(const char *path, const char *mountinfo, Gate **ret);
Gate *gate_free(Gate *g);
DEFINE_TRIVIAL_CLEANUP_FUNC(Gate *, gate_free);

/*
 * From mountinfo text: 1 when the file system mounted where path lives (the mount with the
 * longest matching mount point, the last one of equals) is writable, 0 when read-only,
 * -ENOENT when no mount covers it, -EBADMSG for lines it cannot parse.
 */
int gate_parse_writable(const char *mountinfo_text, const char *path);

/* The same from g->mountinfo; a file that cannot be read counts as writable (fail open). */
bool gate_root_writable(Gate *g);

/*
 * 1 when the roots can be read: each one either opens as a directory and lists, or is
 * simply absent (nothing to wait for there). 0 when one fails otherwise (EIO, EACCES...).
 */
int gate_roots_readable(char *const *roots);

/* Whether name (plain, .zst or .xz) can be read beneath one of roots. */
bool gate_name_present(char *const *roots, const char *name);

/* Remembers how the root was before the cycle (or before the start). */
void gate_arm(Gate *g);
/* The verdict: may firmware be read from disk now? */
bool gate_is_open(Gate *g, char *const *roots);
