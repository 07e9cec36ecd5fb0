/* SPDX-License-Identifier: MIT */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "fw-helperd-cache.h"
#include "fw-helperd-gate.h"
#include "fw-helperd-registry.h"
#include "fw-helperd-worker.h"
#include "json.h"
#include "macro.h"
#include "util.h"

typedef struct Manager Manager;
typedef struct Request Request;
typedef struct PrewarmBatch PrewarmBatch;

/*
 * One suspend cycle, as logind drives it:
 *   idle --PrepareForSleep(true)--> prewarming --done or deadline--> sleeping (lock released)
 *   sleeping --PrepareForSleep(false)--> resuming --CacheReleaseSec--> idle (memory released)
 * While idle (and resuming) a logind "delay" inhibitor lock is held.
 */
typedef enum SleepState {
	SLEEP_IDLE,
	SLEEP_PREWARMING,
	SLEEP_SLEEPING,
	SLEEP_RESUMING,
	_SLEEP_STATE_MAX,
	_SLEEP_STATE_INVALID = -EINVAL,	/* makes the enum signed: "< 0" checks work */
} SleepState;

/* NULL for values out of range. */
const char *sleep_state_to_string(SleepState s);
/* _SLEEP_STATE_INVALID (-EINVAL) for NULL and unknown names. */
SleepState sleep_state_from_string(const char *s);

/* The [Sleep] settings (fw-helperd.conf(5)), taken from the Config at start and on reload. */
typedef struct SleepSettings {
	char **prewarm_firmware;	/* PrewarmFirmware=: names needed across suspend, asked for or not */
	uint64_t prewarm_memory_max;	/* PrewarmMemoryMax=: ceiling of the memory held (128M) */
	usec_t prewarm_timeout;		/* PrewarmTimeoutSec=: how long prewarm may delay suspend (3s) */
	unsigned resume_firmware_timeout; /* ResumeFirmwareTimeoutSec=, in whole seconds (120; 0: unchanged) */
	usec_t cache_release;		/* CacheReleaseSec=: memory kept after resume (30s) */
	usec_t defer_max;		/* DeferMaxSec=: the longest a request waits for the file systems (30s) */
} SleepSettings;

typedef struct Sleep {
	Manager *manager;
	SleepSettings settings;
	SleepState state;
	Registry *registry;
	Cache *cache;
	Gate *gate;
	WorkerPool *pool;		/* prewarm reads: never queued behind (or ahead of) requests */
	char *runtime_dir;		/* $RUNTIME_DIRECTORY or RUNTIME_DIR */

	/* logind */
	int inhibit_fd;			/* the delay lock while held */
	sd_bus_slot *inhibit_call, *prepare_match, *owner_match, *preparing_call;
	bool restarted_asleep;		/* restarted mid-cycle: is logind still preparing? */

	PrewarmBatch *batch;		/* the prewarm running, NULL when none */
	bool hints_running, hints_again;
	sd_event_source *grace_timer;	/* CacheReleaseSec after resume or an on-demand prewarm */
	sd_event_source *module_timer;	/* bounds the module hand-off before the lock goes */
	usec_t cache_since;		/* CLOCK_MONOTONIC, when the cache was filled */

	/* Deferral: at resume, or at a start on a read-only root, until the gate opens. */
	bool deferring;
	bool gate_checking, gate_again;
	const char *deferring_why;	/* "resume" or "boot" */
	bool deferring_boot;		/* at boot, names found on disk are served at once */
	sd_event_source *window_timer;	/* ends the deferral after DeferMaxSec at the latest */
	sd_event_source *recheck_timer;	/* while requests wait: mount events do not cross namespaces */
	usec_t recheck_interval;
	unsigned n_deferred;

	unsigned saved_timeout;		/* /sys/class/firmware/timeout before it was raised, 0: not raised */
	bool released;			/* the cache of this cycle was released */
} Sleep;

int sleep_new(Manager *m, Sleep **ret);
Sleep *sleep_free(Sleep *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Sleep *, sleep_free);

/* The settings in effect (from the configuration). */
const SleepSettings *sleep_settings(Sleep *s);

/* After the bus is up and before the first scan: registry, state of a previous instance, logind. */
int sleep_start(Sleep *s);
/* The bus went away: every call and match on it is dropped, the lock with it. */
void sleep_bus_lost(Sleep *s);
/* On a new bus connection: watches logind again and takes a new lock. */
void sleep_bus_attached(Sleep *s);
/* At SIGTERM: deferred requests stay pending for the next instance; the timeout is restored. */
void sleep_stop(Sleep *s);

/*
 * Called for every new request before it is answered. Attaches a cached blob when the
 * name is held in memory (req->cached: no file system access at all) and returns 0; returns 1
 * when the request is deferred (it is dispatched later, at the latest just before its
 * deadline); 0 when it goes to disk now.
 */
int sleep_intercept(Sleep *s, Request *req);
/* A deferred request's deadline fired (should not happen, the deferral ends first). */
void sleep_request_deadline(Sleep *s, Request *req);
/* On the loop, for every finished request before it is logged and freed. */
void sleep_request_done(Sleep *s, Request *req);

void sleep_mounts_changed(Sleep *s);
void sleep_device_removed(Sleep *s, const char *devpath);
/*
 * The same for every device that is gone, heard of or not: a removal reaches us only through
 * udev's monitor, filtered by subsystem, and one missed would keep the device's names for
 * every later prewarm. Done before each prewarm and before the names are listed.
 */
void sleep_forget_gone_devices(Sleep *s);
void sleep_config_changed(Sleep *s);

/* Prewarm(): fills the cache now; replies (u entries, t bytes) to message when done. */
int sleep_prewarm_on_demand(Sleep *s, sd_bus_message *message);

void sleep_describe_json(Sleep *s, JsonWriter *w);

/*
 * The hand-off to the companion kernel module (fw-helperd-kmod.h): called with the names
 * held in memory once prewarm is over, before the lock is released, and with NULL once the
 * memory was released (unpin). Returns 0 when done, 1 when it finishes later and then calls
 * sleep_module_done(); the lock goes at the prewarm deadline (plus a moment) at the latest.
 * The companion's pins come back as fallback requests, answered from memory meanwhile.
 * A no-op until the companion is wired in.
 */
int sleep_module_sync(Sleep *s, char *const *names, usec_t deadline);
void sleep_module_done(Sleep *s);

/* ---- between fw-helperd-sleep.c, -prewarm.c and -defer.c ---- */

/* Work on the sleep side's own threads: prewarm reads, module hint scans, gate checks. */
typedef struct SleepJob SleepJob;
struct SleepJob {
	void (*run)(SleepJob *j);	/* on a thread */
	void (*done)(SleepJob *j);	/* back on the loop; frees the job */
};
/* -ESHUTDOWN once the daemon stops. */
int sleep_job_submit(Sleep *s, SleepJob *j);

void sleep_set_state(Sleep *s, SleepState state);
/* Prewarm is over (done or out of time): for sleep the lock goes, else the grace period starts. */
void sleep_prewarm_done(Sleep *s, bool for_sleep, SleepState before, usec_t deadline);
/* Puts the kernel's fallback timeout back once nothing needs it raised any more. */
void sleep_maybe_restore_timeout(Sleep *s);

/* fw-helperd-prewarm.c: reads the registry's names into the cache, bounded in time and memory. */
int prewarm_start(Sleep *s, bool for_sleep);
/* Reports what was read and moves on; reads still running are cancelled. */
void prewarm_finish(Sleep *s, bool timed_out);
int prewarm_on_demand(Sleep *s, sd_bus_message *message);
void prewarm_abandon(Sleep *s);

/*
 * fw-helperd-defer.c: holds requests back until the gate opens (root writable and firmware
 * roots readable), each at the latest until just before its deadline.
 */
void defer_begin(Sleep *s, const char *why);
void defer_end(Sleep *s, const char *why);
void defer_check_gate(Sleep *s);
/* 1: req is held back and dispatched later; 0: it goes on now. */
int defer_request(Sleep *s, Request *req);
void defer_release(Sleep *s, Request *req, const char *why);
void defer_stop(Sleep *s);
