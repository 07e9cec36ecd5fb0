/* SPDX-License-Identifier: MIT */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "fw-helperd-kmod.h"
#include "fw-helperd-verify.h"
#include "macro.h"
#include "util.h"

typedef enum EventSource {
	EVENT_SOURCE_UDEV,	/* udev's netlink monitor, after rules (the default) */
	EVENT_SOURCE_KERNEL,	/* the kernel's uevent netlink, where no udevd runs */
	EVENT_SOURCE_NONE,	/* rescans only (tests, or driven by D-Bus Rescan()) */
	_EVENT_SOURCE_MAX,
	_EVENT_SOURCE_INVALID = -EINVAL,	/* makes the enum signed: "< 0" checks work */
} EventSource;

/* NULL for values out of range. */
const char *event_source_to_string(EventSource s);
/* _EVENT_SOURCE_INVALID (-EINVAL) for unknown names. */
EventSource event_source_from_string(const char *s);

/*
 * /etc/fw-helperd/fw-helperd.conf, then the fw-helperd.conf.d/ drop-ins of every directory
 * in file name order, systemd-style INI (see fw-helperd.conf(5)). Later assignments override earlier ones;
 * list settings append, and an empty assignment resets the list.
 */
typedef struct Config {
	/* [Firmware] */
	char **search_path;		/* SearchPath=: roots after the kernel's own */
	char **optional_firmware;	/* OptionalFirmware=: fnmatch globs of names drivers only probe for */
	int optional_log_level;		/* OptionalLogLevel=: level for missing optional names (debug) */
	uint64_t max_size;		/* MaxSize=: largest blob served (1G) */
	uint64_t unpack_memory_max;	/* UnpackMemoryMax=: memory all unpacking together may take (256M) */

	/* [Service] */
	unsigned workers;		/* Workers=: concurrent requests (4) */
	EventSource event_source;	/* EventSource=: udev | kernel | none */
	usec_t timeout_margin;		/* TimeoutMarginSec=: answer or abort this long before the kernel gives up (1s) */
	char **custom_fallback;		/* CustomFallback=: no-uevent requests scans may take (names or /devices/ paths, globs) */

	/* [Sleep] (fw-helperd-sleep.h) */
	char **prewarm_firmware;	/* PrewarmFirmware=: names held in memory across suspend, asked for or not */
	uint64_t prewarm_memory_max;	/* PrewarmMemoryMax=: most memory the cache may hold (128M) */
	usec_t prewarm_timeout;		/* PrewarmTimeoutSec=: longest prewarm may delay suspend (3s) */
	usec_t resume_firmware_timeout;	/* ResumeFirmwareTimeoutSec=: kernel fallback timeout while resuming (120s; 0: unchanged) */
	usec_t cache_release;		/* CacheReleaseSec=: memory kept after resume (30s) */
	usec_t defer_max;		/* DeferMaxSec=: longest wait for the file systems after resume or at boot (30s) */

	/* [Module] */
	CompanionMode companion_mode;	/* Mode=: off | if-available | required (if-available) */

	/* [Integrity] (fw-helperd-verify.c) */
	VerifyPolicy integrity_policy;	/* Policy=: off | warn | enforce, for every root (off) */
	char **integrity_root_policy;	/* RootPolicy=: "<root>:<policy>" overrides, root normalised */
	char **integrity_manifests;	/* Manifest=: absolute paths of manifest files */
} Config;

/* A Config with every default set. */
int config_new(Config **ret);
Config *config_free(Config *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Config *, config_free);

/*
 * Loads main_path (missing is fine), then the *.conf files of dropin_dirs (highest priority
 * first, NULL-terminated, may be NULL; missing directories are fine) as systemd reads its
 * drop-ins: ordered by file name across all directories, a name in a higher-priority
 * directory hides the same name in lower ones, and one that is empty or a symlink to
 * /dev/null masks the name. Syntax errors and invalid values are logged as
 * "file:line: ..." and make it fail with -EINVAL; unknown sections and keys are logged as
 * warnings with file:line and ignored.
 */
int config_load(const char *main_path, char * const *dropin_dirs, Config **ret);

/* Parses one file's text into c (for the fuzzer and tests); filename is for messages. */
int config_parse_string(Config *c, const char *filename, const char *text);
