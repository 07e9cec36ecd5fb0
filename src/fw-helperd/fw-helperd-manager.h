/* SPDX-License-Identifier: MIT */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "fw-helperd-conf.h"
#include "fw-helperd-request.h"
#include "fw-helperd-roots.h"
#include "fw-helperd-rules.h"
#include "fw-helperd-verify.h"
#include "fw-helperd-worker.h"
#include "macro.h"

typedef struct Sleep Sleep;
typedef struct Companion Companion;

typedef enum ManagerState {
	MANAGER_STARTING,
	MANAGER_RUNNING,
	MANAGER_RELOADING,
	MANAGER_STOPPING,
	_MANAGER_STATE_MAX,
} ManagerState;

const char *manager_state_to_string(ManagerState s);

/* A name asked for and not found, kept for `fwctl status`. */
typedef struct MissingEntry {
	char *name;
	uint64_t count;
	usec_t last;		/* CLOCK_REALTIME */
	struct MissingEntry *next;
} MissingEntry;

#define MISSING_MAX 64

typedef struct ManagerOptions {
	const char *config_file;
	char * const *config_dropin_dirs;	/* highest priority first */
	const char *sysfs_root;		/* "/sys", or a fixture tree */
	const char *firmware_prefix;	/* prepended to the kernel's built-in roots (tests) */
	int event_source;		/* overrides the config when >= 0 */
	bool no_bus;
} ManagerOptions;

typedef struct Manager {
	sd_event *event;
	sd_bus *bus;
	ManagerState state;
	ManagerOptions options;
	Config *config;
	char *kernel_release;
	/* Search roots as last built, and the custom path parameter they were built from:
	 * built again when that parameter reads otherwise or the configuration is reloaded. */
	char **roots;
	char *roots_custom;
	int custom_path_fd;	/* the parameter, kept open: -errno until it could be opened */
	/* The roots opened, for the requests of a run until they may have changed (root_watch),
	 * the mounts changed or the roots were built again (root_set_stale); let go once
	 * nothing is in flight (on_changed()), where the watch stays. */
	FwRootSet *root_set;
	RootsWatch *root_watch;
	bool root_set_stale;
	bool root_watch_failed;	/* said once: without a watch, the roots are opened anew */

	struct udev *udev;
	/* udev's events: with EventSource=udev, open while a udev rule may exclude a request
	 * (rules), or when the kernel's cannot be read (fw-helperd-udev.c: udev_tells()) */
	struct udev_monitor *monitor;
	sd_event_source *monitor_source;
	/* The kernel's uevents, read straight from netlink (fw-helperd-netlink.c): alone with
	 * EventSource=kernel; with EventSource=udev, a request's copy is taken at once unless a
	 * rule may exclude it, and whichever copy of an event (same SEQNUM) comes second is
	 * passed over. */
	int kernel_fd;
	sd_event_source *kernel_source;
	char *kernel_messages;		/* a batch's messages, one slot each */
	char **watched_subsystems;	/* passed on besides "firmware" (removals, the module) */
	bool kernel_lost;		/* some were lost (ENOBUFS): a scan once the socket is empty */
	RulesWatch *rules;
	uint64_t taken_seqnums[256];
	unsigned taken_next;
	/* Directories answered lately: the kernel deletes one a little after the answer, and
	 * a scan or a late event meanwhile must not take it again. */
	ino_t answered_inos[64];
	unsigned answered_next;
	sd_event_source *mountinfo_source;
	sd_event_source *exit_timer;
	sd_event_source *changed_timer;	/* armed while a change is still to be told */
	sd_event_source *tell_timer;	/* armed while new counters wait for TELL_INTERVAL_USEC */
	usec_t told_usec;		/* when the bus and PID 1 were last told */
	bool state_untold;		/* a new State or SleepState: told without waiting for TELL_INTERVAL_USEC */
	sd_event_source *rescan_source;	/* a scan due on the loop's next turn (request_done()) */
	sd_event_source *bus_reconnect;	/* armed while the bus is lost */
	bool watchdog_on;		/* systemd's watchdog pinged (only while busy) */
	uint64_t watchdog_usec;		/* WatchdogSec= as systemd passed it at start; 0: none */
	usec_t reconnect_interval;

	WorkerPool *workers;
	Sleep *sleep;		/* logind, registry, cache, deferral (fw-helperd-sleep.c) */
	Companion *companion;	/* the fwh_cache kernel module (fw-helperd-kmod.c) */
	Verifier *verifier;	/* [Integrity]: manifests and policies (fw-helperd-verify.c) */
	FwMemory *unpack_memory; /* UnpackMemoryMax=, shared by requests and prewarm */
	Request *requests;	/* pending: queued, deferred or being answered */
	unsigned n_requests;
	MissingEntry *missing;	/* newest first */
	unsigned n_missing;

	uint64_t served, failed, missing_count, rejected, bytes_served;
} Manager;

/* From manager_new() and manager_run(): the configuration (or Mode=required) stops the
 * start, and restarting cannot help (exit status 78). No library returns this errno. */
#define MANAGER_UNRECOVERABLE (-ENOTRECOVERABLE)

int manager_new(const ManagerOptions *options, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Connects the event sources, answers what is pending, and runs until told to stop. */
int manager_run(Manager *m);

/* What a uevent or a sysfs scan says about one pending request. */
typedef struct RequestInfo {
	const char *name;	/* FIRMWARE=, or derived from the directory name */
	const char *sysfs_dir;	/* absolute path of the request's directory */
	const char *devpath;	/* requesting device, may be NULL */
	unsigned timeout_sec;	/* TIMEOUT= of the uevent, 0 when unknown */
	usec_t age;		/* how long ago udev first saw it (the kernel's timer runs since) */
	const char *origin;	/* how we heard of it: "udev", "kernel" or "scan" (static) */
	bool crowded;		/* others came with it: it is streamed by a worker, beside them */
	ino_t ino;		/* sysfs_dir's inode when the caller looked already, else 0 */
} RequestInfo;

/* Takes a pending request; one already being answered is ignored. */
int manager_submit(Manager *m, const RequestInfo *info);
/*
 * Answers a taken request, on the loop when it is small enough (request_run_inline()),
 * else hands it to a worker; the sleep side calls it for deferred ones, which always go
 * to a worker. req may be completed and freed on return: the caller must not touch it.
 * Requests that came together (RequestInfo.crowded) are streamed by the workers side by
 * side rather than one after another on the loop; a missing name is answered at once.
 */
int manager_dispatch(Manager *m, Request *req);
/*
 * Looks for pending requests in sysfs; returns how many were new. manager_rescan() leaves
 * other programs' requests alone (fw-helperd-udev.c: scan_may_take()); manager_rescan_all()
 * is the admin's word (fwctl rescan) and takes every one.
 */
int manager_rescan(Manager *m);
int manager_rescan_all(Manager *m);
/* Whether the request in sysfs_dir is in flight or was answered a moment ago. */
bool manager_knows_request(Manager *m, const char *sysfs_dir);
int manager_reload(Manager *m);
/* The companion module was loaded while we run without it: take it (see the .c). */
void manager_module_returned(Manager *m);
void manager_stop(Manager *m);

/* Search roots as of now (the custom path parameter may change at runtime); a copy. */
int manager_search_roots(Manager *m, char ***ret);
/* The same roots opened, as of the last manager_search_roots(); a reference, or NULL. */
FwRootSet *manager_root_set(Manager *m);

/*
 * Counters changed: told to the bus and systemd once, CHANGED_DELAY_USEC later, and at
 * most once in TELL_INTERVAL_USEC.
 */
void manager_changed(Manager *m);
/* The manager's or the sleep cycle's state changed: told CHANGED_DELAY_USEC later. */
void manager_state_changed(Manager *m);
