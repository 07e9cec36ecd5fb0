/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "util.h"

/*
 * The companion kernel module fwh_cache (module/): pins firmware in the kernel's own
 * firmware cache across suspend, so a driver's request_firmware() in its resume path is
 * served with user space frozen. Driven through /sys/kernel/fwh_cache/.
 */
#define COMPANION_MODULE_NAME "fwh_cache"

/* The module's own loads: requests below its root device (/sys/devices/fwh_cache/entryN). */
static inline bool companion_owns_devpath(const char *devpath)
{
	return devpath && startswith(devpath, "/devices/" COMPANION_MODULE_NAME "/");
}

typedef enum CompanionMode {
	COMPANION_OFF,		/* never load or use it */
	COMPANION_IF_AVAILABLE,	/* load it when installed and allowed; carry on without */
	COMPANION_REQUIRED,	/* refuse to start without it */
	_COMPANION_MODE_MAX,
	_COMPANION_MODE_INVALID = -EINVAL,
} CompanionMode;

const char *companion_mode_to_string(CompanionMode m);
CompanionMode companion_mode_from_string(const char *s);

typedef enum CompanionEntryState {
	COMPANION_ENTRY_LOADING,
	COMPANION_ENTRY_CACHED,
	COMPANION_ENTRY_FAILED,
} CompanionEntryState;

typedef struct CompanionEntry {
	char *name;
	CompanionEntryState state;
	uint64_t size;
	int error;
} CompanionEntry;

typedef struct Companion Companion;

/* Called once every pinned name left "loading", or when the deadline passed. */
typedef void (*companion_pinned_t)(Companion *c, unsigned cached, unsigned failed, unsigned loading,
				   void *userdata);

/*
 * Loads the module per mode with libkmod (unless its sysfs directory is already there).
 * Returns 0 and a Companion that may be unavailable (companion_available() false, with the
 * reason logged as a structured entry); -ENODEV only for COMPANION_REQUIRED.
 */
int companion_new(sd_event *event, const char *sysfs_root, CompanionMode mode, Companion **ret);
Companion *companion_free(Companion *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Companion *, companion_free);

bool companion_available(const Companion *c);
/* The same, after taking the module when it was loaded since (after a failed load at
 * start, or after it was unloaded under us). */
bool companion_recheck(Companion *c);
/* The module's uevent (subsystem "module", fwh_cache): added or removed. true: it is
 * there and not used, companion_recheck() would take it. */
bool companion_module_changed(Companion *c, bool present);
const char *companion_status(const Companion *c);

/*
 * The helper answers the module's loads: a name its direct loader misses becomes a fallback
 * request without a uevent, found by rescan(userdata), which runs with backoff while names
 * load. Off again when the companion is freed.
 */
void companion_set_answering(Companion *c, void (*rescan)(void *userdata), void *userdata);

/*
 * Asks the module to pin names (non-blocking writes: it loads on its own workqueue; names
 * only user space can find come back to us as fallback requests, which the loop answers).
 * done runs on the loop when no name is loading any more, or at deadline.
 */
int companion_pin(Companion *c, char *const *names, usec_t deadline, companion_pinned_t done,
		  void *userdata);
/* Releases every pinned image. */
int companion_unpin_all(Companion *c);

/* The module's entries, parsed. */
int companion_entries(Companion *c, CompanionEntry **ret, size_t *ret_n);
void companion_entries_free(CompanionEntry *e, size_t n);

/* Parses one line of the entries file ("<state> <size> <error> <name>"). */
int companion_parse_entry(const char *line, CompanionEntry *ret);
