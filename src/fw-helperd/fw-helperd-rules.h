/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "util.h"

/*
 * Whether an admin keeps fw-helperd away from some requests: does any udev rules file
 * assign FW_HELPERD_IGNORE? Only udev can tell which requests, after its rules ran; when no
 * file assigns it, the kernel's own event may be answered without waiting for udev.
 * The directories are watched with inotify and read again lazily, on the next question.
 */
typedef struct RulesWatch RulesWatch;

/*
 * How often a directory that does not exist is looked for again: udevd itself reads its
 * rules again only when it finds them changed, at most every 3 s (systemd 252), so a
 * directory created since is not stale for us either within that time.
 */
#define RULES_ABSENT_RETRY_USEC (1 * USEC_PER_SEC)

/*
 * dirs: NULL-terminated, searched as udev does; NULL for udev's own directories.
 * absent_retry_usec: RULES_ABSENT_RETRY_USEC, or less for tests.
 */
int rules_watch_new(sd_event *event, const char *const *dirs, usec_t absent_retry_usec,
		    RulesWatch **ret);
RulesWatch *rules_watch_free(RulesWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(RulesWatch *, rules_watch_free);

/* true when a rules file assigns the property (or the directories cannot be watched). */
bool rules_watch_excludes(RulesWatch *w);

/* Whether the text of a rules file assigns ENV{key} (=, += or :=) outside comments. */
bool rules_text_assigns(const char *text, const char *key);
