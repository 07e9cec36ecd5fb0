/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "fw-helperd-bus.h"
#include "fw-helperd-hints.h"
#include "fw-helperd-kmod.h"
#include "fw-helperd-manager.h"
#include "fw-helperd-messages.h"
#include "fw-helperd-sleep.h"
#include "fw-helperd-udev.h"
#include "log.h"

#define LOGIND_NAME "org.freedesktop.login1"
#define LOGIND_PATH "/org/freedesktop/login1"
#define LOGIND_INTERFACE "org.freedesktop.login1.Manager"

#define PREWARM_THREADS 2

static const char *const state_table[_SLEEP_STATE_MAX] = {
	[SLEEP_IDLE] = "idle",
	[SLEEP_PREWARMING] = "prewarming",
	[SLEEP_SLEEPING] = "sleeping",
	[SLEEP_RESUMING] = "resuming",
};

const char *sleep_state_to_string(SleepState s)
{
	return s >= 0 && s < _SLEEP_STATE_MAX ? state_table[s] : NULL;
}

SleepState sleep_state_from_string(const char *s)
{
	for (SleepState i = 0; i < _SLEEP_STATE_MAX; i++)
		if (s && strcmp(state_table[i], s) == 0)
			return i;
	return _SLEEP_STATE_INVALID;
}

static void sleep_job_run(void *userdata)
{
	SleepJob *j = userdata;

	j->run(j);
}

static void sleep_job_done(void *userdata)
{
	SleepJob *j = userdata;

	j->done(j);
}

int sleep_job_submit(Sleep *s, SleepJob *j)
{
	if (!s->pool)
		return -ESHUTDOWN; /* stopping: nothing new */
	return worker_pool_submit(s->pool, sleep_job_run, j);
}

static void take_lock(Sleep *s);
static void release_lock(Sleep *s);
static void enter_resume(Sleep *s, const char *why);

const SleepSettings *sleep_settings(Sleep *s)
{
	return &s->settings;
}

/* Borrows from the Config: taken again whenever the configuration is replaced. */
static void settings_load(Sleep *s)
{
	const Config *c = s->manager->config;

	s->settings = (SleepSettings){
		.prewarm_firmware = c->prewarm_firmware,
		.prewarm_memory_max = c->prewarm_memory_max,
		.prewarm_timeout = c->prewarm_timeout,
		/* whole seconds for the kernel, rounded up */
		.resume_firmware_timeout = (unsigned)MIN((c->resume_firmware_timeout + USEC_PER_SEC - 1) /
							 USEC_PER_SEC, (usec_t)INT32_MAX),
		.cache_release = c->cache_release,
		.defer_max = c->defer_max,
	};
}

/* ---- state kept under the runtime directory across a restart ---- */

static char *runtime_path(Sleep *s, const char *file)
{
	return path_join(s->runtime_dir, file);
}

/* Replaces path's contents with text; O_TRUNC, so a fixture file reads back like sysfs. */
static int write_truncating(const char *path, const char *text, int flags)
{
	_cleanup_close_ int fd = -EBADF;
	size_t len = strlen(text);
	ssize_t n;

	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY | flags, 0644);
	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

static void save_state(Sleep *s)
{
	_cleanup_free_ char *path = runtime_path(s, "sleep-state"), *tmp = NULL, *text = NULL;
	int r;

	if (!path)
		return;
	if (s->state == SLEEP_IDLE && s->saved_timeout == 0) {
		(void)unlink(path);
		return;
	}
	if (asprintf(&text, "STATE=%s\nSAVED_TIMEOUT=%u\nROOT_RO_BEFORE=%d\n",
		     sleep_state_to_string(s->state), s->saved_timeout,
		     s->gate->root_ro_before) < 0 ||
	    asprintf(&tmp, "%s.tmp", path) < 0)
		return;
	r = write_truncating(tmp, text, O_CREAT);
	if (r >= 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		log_debug_errno(r, "Failed to save the sleep state to '%s': %m", path);
		(void)unlink(tmp);
	}
}

/* What a previous instance left behind mid-cycle; returns the state it was in. */
static SleepState load_state(Sleep *s)
{
	_cleanup_free_ char *path = runtime_path(s, "sleep-state"), *text = NULL;
	SleepState state = SLEEP_IDLE;
	char *save = NULL;
	uint64_t v;

	if (!path || read_string_at(AT_FDCWD, path, &text) < 0)
		return SLEEP_IDLE;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (startswith(l, "STATE="))
			state = sleep_state_from_string(l + strlen("STATE="));
		else if (startswith(l, "SAVED_TIMEOUT=") &&
			 safe_atou64(l + strlen("SAVED_TIMEOUT="), &v) >= 0 && v <= UINT32_MAX)
			s->saved_timeout = (unsigned)v;
		else if (startswith(l, "ROOT_RO_BEFORE="))
			s->gate->root_ro_before = strcmp(l + strlen("ROOT_RO_BEFORE="), "1") == 0;
	}
	return state < 0 ? SLEEP_IDLE : state;
}

void sleep_set_state(Sleep *s, SleepState state)
{
	if (s->state == state)
		return;
	log_debug("Sleep state %s -> %s.", sleep_state_to_string(s->state),
		  sleep_state_to_string(state));
	s->state = state;
	save_state(s);
	manager_state_changed(s->manager);
}

/* ---- the kernel's fallback timeout ---- */

static char *timeout_path(Sleep *s)
{
	return path_join(s->manager->options.sysfs_root, "class/firmware/timeout");
}

static void raise_timeout(Sleep *s)
{
	_cleanup_free_ char *path = timeout_path(s), *value = NULL;
	unsigned wanted = sleep_settings(s)->resume_firmware_timeout;
	char buf[32];
	uint64_t v;
	int r;

	if (!path || wanted == 0 || s->saved_timeout > 0)
		return;
	if (read_string_at(AT_FDCWD, path, &value) < 0 || safe_atou64(value, &v) < 0)
		return;
	if (v == 0 || v >= wanted)
		return; /* 0 waits forever already */
	snprintf(buf, sizeof(buf), "%u", wanted);
	r = write_truncating(path, buf, 0);
	if (r < 0) {
		log_warning_errno(r, "Failed to raise the firmware fallback timeout: %m");
		return;
	}
	s->saved_timeout = (unsigned)v;
	save_state(s);
	log_info("Firmware fallback timeout raised from %" PRIu64 " s to %u s for the resume window.",
		 v, wanted);
}

/* Once the cache is released and no request waits for the file systems any more. */
static void restore_timeout(Sleep *s, bool force)
{
	_cleanup_free_ char *path = timeout_path(s);
	char buf[32];
	int r;

	if (s->saved_timeout == 0 || !path)
		return;
	if (!force && (!s->released || s->deferring || s->n_deferred > 0))
		return;
	snprintf(buf, sizeof(buf), "%u", s->saved_timeout);
	r = write_truncating(path, buf, 0);
	if (r < 0)
		log_warning_errno(r, "Failed to restore the firmware fallback timeout: %m");
	else
		log_info("Firmware fallback timeout restored to %u s.", s->saved_timeout);
	s->saved_timeout = 0;
	save_state(s);
}

/* ---- the cache ---- */

static void on_module_pinned(Companion *c, unsigned cached, unsigned failed, unsigned loading,
			     void *userdata)
{
	LogEntry e = {};

	log_entry_add(&e, "FW_MODULE=%s", COMPANION_MODULE_NAME);
	log_entry_add(&e, "FW_MODULE_CACHED=%u", cached);
	log_entry_add(&e, "FW_MODULE_FAILED=%u", failed);
	log_entry_add(&e, "FW_MODULE_LOADING=%u", loading);
	log_entry_send(&e, failed + loading > 0 ? LOG_WARNING : LOG_INFO, 0, FW_MESSAGE_MODULE,
		       "Companion module pinned %u firmware images in the kernel (%u failed, %u still loading).",
		       cached, failed, loading);
	sleep_module_done(userdata);
}

/*
 * The companion module pins names in the kernel's own firmware cache, so drivers find
 * them in their resume path with user space frozen. It loads on its own workqueue; names
 * only we can find come back to this loop as fallback requests, answered from the cache.
 * Returns 1 while it pins (sleep_module_done() follows), 0 when there is nothing to wait for.
 */
int sleep_module_sync(Sleep *s, char *const *names, usec_t deadline)
{
	Companion *companion = s->manager->companion;
	int r;

	if (!companion_recheck(companion))
		return 0;
	if (!names) {
		r = companion_unpin_all(companion);
		if (r < 0)
			log_warning_errno(r, "Failed to release the companion module's images: %m");
		return 0;
	}
	r = companion_pin(companion, names, deadline, on_module_pinned, s);
	if (r < 0) {
		log_warning_errno(r, "Failed to hand firmware to the companion module: %m");
		return 0;
	}
	return 1;
}

static void release_cache(Sleep *s, const char *why)
{
	uint64_t bytes, hits = s->cache->hits;
	unsigned entries = s->cache->n_entries;
	usec_t held = s->cache_since ? now_usec(CLOCK_MONOTONIC) - s->cache_since : 0;
	LogEntry e = {};

	s->grace_timer = sd_event_source_disable_unref(s->grace_timer);
	bytes = cache_clear(s->cache);
	s->cache_since = 0;
	if (bytes > 0)
		malloc_trim(0);
	(void)sleep_module_sync(s, NULL, USEC_INFINITY);

	log_entry_add(&e, "FW_CACHE_ENTRIES=%u", entries);
	log_entry_add(&e, "FW_CACHE_BYTES=%" PRIu64, bytes);
	log_entry_add(&e, "FW_CACHE_HITS=%" PRIu64, hits);
	log_entry_add(&e, "FW_HELD_USEC=%" PRIu64, held);
	log_entry_add(&e, "FW_RELEASE_REASON=%s", why);
	log_entry_send(&e, LOG_INFO, 0, FW_MESSAGE_CACHE_RELEASED,
		       "Released %u cached firmware images (%" PRIu64 " bytes, %" PRIu64
		       " served from memory) after %" PRIu64 " ms.",
		       entries, bytes, hits, held / USEC_PER_MSEC);
	s->released = true;
	if (s->state == SLEEP_RESUMING)
		sleep_set_state(s, SLEEP_IDLE);
	sleep_maybe_restore_timeout(s);
	manager_changed(s->manager);
}

void sleep_maybe_restore_timeout(Sleep *s)
{
	restore_timeout(s, false);
}

static int on_grace_end(sd_event_source *source, uint64_t usec, void *userdata)
{
	Sleep *s = userdata;

	release_cache(s, s->state == SLEEP_RESUMING ? "resumed" : "idle");
	return 0;
}

static void arm_grace(Sleep *s)
{
	s->grace_timer = sd_event_source_disable_unref(s->grace_timer);
	if (sd_event_add_time_relative(s->manager->event, &s->grace_timer, CLOCK_MONOTONIC,
				       sleep_settings(s)->cache_release, 0, on_grace_end, s) < 0)
		release_cache(s, "no-timer");
}

/* Everything is in place for the resume path: the system may go. */
static void let_go(Sleep *s)
{
	s->module_timer = sd_event_source_disable_unref(s->module_timer);
	/* the timeout is raised before the lock goes: resume-time requests get the long one */
	raise_timeout(s);
	sleep_set_state(s, SLEEP_SLEEPING);
	release_lock(s);
}

void sleep_module_done(Sleep *s)
{
	if (s->module_timer)
		let_go(s);
}

static int on_module_timeout(sd_event_source *source, uint64_t usec, void *userdata)
{
	Sleep *s = userdata;

	log_warning("Companion module hand-off not finished in time, letting the system go anyway.");
	let_go(s);
	return 0;
}

static bool held(const char *name, void *userdata)
{
	return cache_contains(userdata, name);
}

/*
 * What the module is to pin, most surely needed first (registry_names_by_rank()): it takes
 * only so many (max_entries), and the order in which names finished reading says nothing.
 * Names held but no longer in the registry (their device went meanwhile) come last.
 */
static char **names_to_pin(Sleep *s)
{
	char **names = NULL;

	if (registry_names_by_rank(s->registry, held, s->cache, &names) < 0)
		return NULL;
	for (CacheEntry *e = s->cache->entries; e; e = e->next)
		if (!strv_contains(names, e->blob->name) && strv_extend(&names, e->blob->name) < 0) {
			strv_free(names);
			return NULL;
		}
	return names;
}

void sleep_prewarm_done(Sleep *s, bool for_sleep, SleepState before, usec_t deadline)
{
	_cleanup_strv_free_ char **names = names_to_pin(s);
	int r;

	if (s->cache->n_entries > 0) {
		s->cache_since = s->cache_since ?: now_usec(CLOCK_MONOTONIC);
		s->released = false;
	}
	r = names ? sleep_module_sync(s, names, deadline) : 0;
	manager_changed(s->manager);
	if (!for_sleep) {
		sleep_set_state(s, before == SLEEP_PREWARMING ? SLEEP_IDLE : before);
		arm_grace(s);
		return;
	}
	/* a hand-off still under way holds the lock a moment longer, never past the deadline */
	if (r > 0 && sd_event_add_time(s->manager->event, &s->module_timer, CLOCK_MONOTONIC,
				       MAX(deadline, now_usec(CLOCK_MONOTONIC)) + 100 * USEC_PER_MSEC,
				       0, on_module_timeout, s) >= 0)
		return;
	let_go(s);
}

int sleep_prewarm_on_demand(Sleep *s, sd_bus_message *message)
{
	return prewarm_on_demand(s, message);
}

int sleep_intercept(Sleep *s, Request *req)
{
	req->cached = cache_get(s->cache, req->name);
	if (req->cached)
		return 0; /* from memory: no file system is touched */
	return defer_request(s, req);
}

void sleep_request_deadline(Sleep *s, Request *req)
{
	defer_release(s, req, "deadline");
}

void sleep_mounts_changed(Sleep *s)
{
	defer_check_gate(s);
}

/* ---- the registry ---- */

static bool device_present(const char *devpath, void *userdata)
{
	Sleep *s = userdata;
	_cleanup_free_ char *path = path_join(s->manager->options.sysfs_root, devpath);

	return path && access(path, F_OK) == 0;
}

/* udev's monitor passes only the subsystems asked for: add the device's, for its removal. */
static void watch_device(Sleep *s, const char *devpath)
{
	_cleanup_free_ char *dir = path_join(s->manager->options.sysfs_root, devpath), *link = NULL;
	char target[4096];
	ssize_t n;

	if (!dir || !(link = path_join(dir, "subsystem")))
		return;
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return;
	target[n] = 0;
	(void)manager_udev_watch_subsystem(s->manager, strrchr(target, '/') ? strrchr(target, '/') + 1 : target);
}

static void save_registry(Sleep *s)
{
	int r = registry_save(s->registry);

	if (r < 0)
		log_warning_errno(r, "Failed to save the firmware registry to '%s': %m",
				  s->registry->path);
}

void sleep_request_done(Sleep *s, Request *req)
{
	if (req->deferred) {
		/* completed without a worker: should not happen, keep the count right */
		req->deferred = false;
		s->n_deferred--;
	}
	if (req->result != REQUEST_SERVED)
		return;
	/* the companion module's own loads are the pin, not a device's need */
	if (companion_owns_devpath(req->devpath))
		return;
	if (registry_record(s->registry, req->name, req->devpath, (uint64_t)req->bytes) > 0 &&
	    req->devpath)
		watch_device(s, req->devpath);
	save_registry(s);
}

void sleep_device_removed(Sleep *s, const char *devpath)
{
	int n = registry_forget_device(s->registry, devpath);

	if (n > 0)
		log_info("%s went away, %d firmware names no longer needed.", devpath, n);
	save_registry(s);
}

void sleep_forget_gone_devices(Sleep *s)
{
	int n = registry_forget_absent(s->registry, device_present, s);

	if (n < 0) {
		log_oom();
		return;
	}
	if (n > 0)
		log_info("Devices went away unheard of, %d firmware names no longer needed.", n);
	save_registry(s);
}

typedef struct HintsJob {
	SleepJob job;
	Sleep *sleep;
	char *sysfs_root;
	char **roots;
	/* (worker) */
	char **names;
	int error;
} HintsJob;

static void hints_job_free(HintsJob *j)
{
	free(j->sysfs_root);
	strv_free(j->roots);
	strv_free(j->names);
	free(j);
}

static void hints_job_run(SleepJob *job)
{
	HintsJob *j = (HintsJob *)job;

	j->error = hints_collect(j->sysfs_root, j->roots, NULL, NULL, &j->names);
}

static void refresh_hints(Sleep *s);

static void hints_job_done(SleepJob *job)
{
	HintsJob *j = (HintsJob *)job;
	Sleep *s = j->sleep;

	s->hints_running = false;
	if (j->error < 0)
		log_debug_errno(j->error, "Looking for firmware of loaded modules failed: %m");
	else if (registry_set_source(s->registry, REGISTRY_HINT, j->names) < 0)
		log_oom();
	else
		log_debug("%zu firmware names hinted by the modules of bound devices.",
			  strv_length(j->names));
	hints_job_free(j);
	manager_changed(s->manager);
	if (s->hints_again) {
		s->hints_again = false;
		refresh_hints(s);
	}
}

/* Module hints read module files: off the loop, one scan at a time. */
static void refresh_hints(Sleep *s)
{
	HintsJob *j;

	if (!s->pool)
		return;
	if (s->hints_running) {
		s->hints_again = true;
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return (void)log_oom();
	j->job = (SleepJob){ .run = hints_job_run, .done = hints_job_done };
	j->sleep = s;
	j->sysfs_root = strdup(s->manager->options.sysfs_root);
	if (!j->sysfs_root || manager_search_roots(s->manager, &j->roots) < 0 ||
	    sleep_job_submit(s, &j->job) < 0) {
		hints_job_free(j);
		return;
	}
	s->hints_running = true;
}

void sleep_config_changed(Sleep *s)
{
	settings_load(s);
	if (registry_set_source(s->registry, REGISTRY_CONFIG, sleep_settings(s)->prewarm_firmware) < 0)
		log_oom();
	s->cache->max_bytes = sleep_settings(s)->prewarm_memory_max;
	refresh_hints(s);
	manager_changed(s->manager);
}

/* ---- logind ---- */

static void release_lock(Sleep *s)
{
	if (s->inhibit_fd < 0)
		return;
	s->inhibit_fd = safe_close(s->inhibit_fd);
	log_info("Released the sleep delay lock.");
}

static int on_inhibit_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	Sleep *s = userdata;
	const sd_bus_error *e;
	int fd, r;

	s->inhibit_call = sd_bus_slot_unref(s->inhibit_call);
	e = sd_bus_message_get_error(reply);
	if (e) {
		log_info("No sleep delay lock from logind (%s), serving without one.", e->message ?: e->name);
		return 0;
	}
	r = sd_bus_message_read(reply, "h", &fd);
	if (r < 0)
		return log_warning_errno(r, "Bad reply to Inhibit(): %m");
	release_lock(s);
	s->inhibit_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (s->inhibit_fd < 0)
		return log_warning_errno(-errno, "Failed to keep the sleep delay lock: %m");
	if (s->state == SLEEP_SLEEPING) {
		release_lock(s); /* taken while suspend was already under way */
		return 0;
	}
	log_info("Holding a sleep delay lock.");
	return 0;
}

static void take_lock(Sleep *s)
{
	sd_bus *bus = s->manager->bus;
	int r;

	if (!bus || s->inhibit_fd >= 0 || s->inhibit_call)
		return;
	r = sd_bus_call_method_async(bus, &s->inhibit_call, LOGIND_NAME, LOGIND_PATH,
				     LOGIND_INTERFACE, "Inhibit", on_inhibit_reply, s, "ssss",
				     "sleep", "fw-helperd", "Prewarming firmware for resume", "delay");
	if (r < 0)
		log_warning_errno(r, "Failed to ask logind for a sleep delay lock: %m");
}

static void enter_resume(Sleep *s, const char *why)
{
	s->restarted_asleep = false;
	s->preparing_call = sd_bus_slot_unref(s->preparing_call);
	if (s->batch)
		prewarm_finish(s, true);
	if (s->module_timer)
		let_go(s);
	sleep_set_state(s, SLEEP_RESUMING);
	s->released = false;
	log_info("Resumed (%s): %u firmware images held in memory for %" PRIu64 " s.", why,
		 s->cache->n_entries, sleep_settings(s)->cache_release / USEC_PER_SEC);
	defer_begin(s, "resume");
	defer_check_gate(s); /* usually open already: then nothing waits at all */
	arm_grace(s);
	/* Taken at once rather than after the grace period: a second suspend right after
	 * resume must wait for prewarm too. */
	take_lock(s);
}

static int on_prepare_for_sleep(sd_bus_message *message, void *userdata, sd_bus_error *ret_error)
{
	Sleep *s = userdata;
	int start, r;

	r = sd_bus_message_read(message, "b", &start);
	if (r < 0)
		return log_warning_errno(r, "Bad PrepareForSleep signal: %m");
	if (start) {
		if (s->state == SLEEP_SLEEPING)
			return 0;
		log_info("System is going to sleep, prewarming firmware.");
		defer_end(s, "sleep");
		gate_arm(s->gate);
		(void)prewarm_start(s, true);
		return 0;
	}
	if (s->state == SLEEP_IDLE && !s->batch)
		return 0; /* a resume we were not around to prepare for: nothing held */
	enter_resume(s, "PrepareForSleep");
	return 0;
}

static int on_logind_owner(sd_bus_message *message, void *userdata, sd_bus_error *ret_error)
{
	Sleep *s = userdata;
	const char *name, *old_owner, *new_owner;

	if (sd_bus_message_read(message, "sss", &name, &old_owner, &new_owner) < 0)
		return 0;
	/* The old lock died with the old logind; a new one needs a new lock. */
	release_lock(s);
	s->inhibit_call = sd_bus_slot_unref(s->inhibit_call);
	if (!new_owner || !*new_owner) {
		log_info("logind went away; serving on, the sleep delay lock is taken again when it returns.");
		return 0;
	}
	log_info("logind is (back) on the bus, taking the sleep delay lock.");
	if (s->state == SLEEP_SLEEPING)
		enter_resume(s, "logind restarted");
	else
		take_lock(s);
	return 0;
}

static int on_preparing_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	Sleep *s = userdata;
	int preparing = 0;

	s->preparing_call = sd_bus_slot_unref(s->preparing_call);
	if (!s->restarted_asleep || s->state != SLEEP_SLEEPING)
		return 0;
	if (!sd_bus_message_is_method_error(reply, NULL) &&
	    sd_bus_message_enter_container(reply, 'v', "b") >= 0)
		(void)sd_bus_message_read(reply, "b", &preparing);
	if (preparing) {
		/* The suspend goes on without us: PrepareForSleep(false) ends it. */
		log_info("logind is still preparing for sleep, resuming after the system wakes up.");
		return 0;
	}
	enter_resume(s, "restart");
	return 0;
}

/* Once the PrepareForSleep match is in place, no signal can slip between the property read
 * and the match: a restart mid-cycle asks logind whether the suspend is still ahead. */
static int on_prepare_match_installed(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	Sleep *s = userdata;
	int r;

	if (sd_bus_message_is_method_error(reply, NULL))
		log_warning("Failed to watch PrepareForSleep: %s",
			    sd_bus_message_get_error(reply)->message ?: "unknown error");
	if (!s->restarted_asleep || s->preparing_call)
		return 0;
	r = sd_bus_call_method_async(s->manager->bus, &s->preparing_call, LOGIND_NAME, LOGIND_PATH,
				     "org.freedesktop.DBus.Properties", "Get", on_preparing_reply, s,
				     "ss", LOGIND_INTERFACE, "PreparingForSleep");
	if (r < 0) {
		log_warning_errno(r, "Failed to ask logind whether it prepares for sleep: %m");
		enter_resume(s, "restart");
	}
	return 0;
}

static int watch_logind(Sleep *s)
{
	sd_bus *bus = s->manager->bus;
	int r;

	r = sd_bus_match_signal_async(bus, &s->prepare_match, LOGIND_NAME, LOGIND_PATH,
				      LOGIND_INTERFACE, "PrepareForSleep", on_prepare_for_sleep,
				      on_prepare_match_installed, s);
	if (r < 0) {
		if (s->restarted_asleep)
			enter_resume(s, "restart");
		return log_warning_errno(r, "Failed to watch PrepareForSleep: %m");
	}
	r = sd_bus_add_match_async(bus, &s->owner_match,
				   "type='signal',sender='org.freedesktop.DBus',"
				   "path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',"
				   "member='NameOwnerChanged',arg0='" LOGIND_NAME "'",
				   on_logind_owner, NULL, s);
	if (r < 0)
		return log_warning_errno(r, "Failed to watch logind: %m");
	take_lock(s);
	return 0;
}

void sleep_bus_lost(Sleep *s)
{
	release_lock(s);
	s->inhibit_call = sd_bus_slot_unref(s->inhibit_call);
	s->preparing_call = sd_bus_slot_unref(s->preparing_call);
	s->prepare_match = sd_bus_slot_unref(s->prepare_match);
	s->owner_match = sd_bus_slot_unref(s->owner_match);
}

void sleep_bus_attached(Sleep *s)
{
	/* A suspend may have come and gone unseen: what is held is released on schedule. */
	if (s->state == SLEEP_SLEEPING)
		enter_resume(s, "bus lost");
	(void)watch_logind(s);
}

/* ---- life cycle ---- */

int sleep_new(Manager *m, Sleep **ret)
{
	_cleanup_(sleep_freep) Sleep *s = NULL;
	const char *dir = getenv("RUNTIME_DIRECTORY");
	_cleanup_free_ char *registry_path = NULL;
	int r;

	/*
	 * Images are big and live for one cycle: each gets its own mapping, returned to the
	 * system as soon as it is freed. glibc's default raises the threshold after the first
	 * such free, and later images land in a worker thread's arena, whose top neither free()
	 * nor malloc_trim() gives back: memory would not return to its baseline.
	 */
	(void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->manager = m;
	s->inhibit_fd = -EBADF;
	settings_load(s);
	/* systemd's RuntimeDirectory= says where; it may list several, the first is ours */
	s->runtime_dir = dir && *dir ? strndup(dir, strcspn(dir, ":")) : strdup(RUNTIME_DIR);
	if (!s->runtime_dir)
		return -ENOMEM;
	registry_path = path_join(s->runtime_dir, "registry");
	if (!registry_path)
		return -ENOMEM;
	r = registry_new(registry_path, &s->registry);
	if (r < 0)
		return r;
	r = cache_new(sleep_settings(s)->prewarm_memory_max, &s->cache);
	if (r < 0)
		return r;
	r = gate_new(getenv(GATE_PATH_ENV), NULL, &s->gate);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(s);
	return 0;
}

Sleep *sleep_free(Sleep *s)
{
	if (!s)
		return NULL;
	prewarm_abandon(s);
	/* Joins the prewarm threads: the last job of an abandoned batch frees it. s->pool is
	 * NULL meanwhile, so nothing done() does submits more. */
	worker_pool_free(TAKE_PTR(s->pool));
	release_lock(s);
	sd_bus_slot_unref(s->inhibit_call);
	sd_bus_slot_unref(s->preparing_call);
	sd_bus_slot_unref(s->prepare_match);
	sd_bus_slot_unref(s->owner_match);
	sd_event_source_disable_unref(s->grace_timer);
	sd_event_source_disable_unref(s->module_timer);
	sd_event_source_disable_unref(s->window_timer);
	sd_event_source_disable_unref(s->recheck_timer);
	cache_free(s->cache);
	registry_free(s->registry);
	gate_free(s->gate);
	free(s->runtime_dir);
	free(s);
	return NULL;
}

int sleep_start(Sleep *s)
{
	SleepState before;
	int r;

	r = worker_pool_new(s->manager->event, PREWARM_THREADS, sleep_job_done, &s->pool);
	if (r < 0)
		return log_error_errno(r, "Failed to start prewarm threads: %m");
	if (mkdir(s->runtime_dir, 0755) < 0 && errno != EEXIST)
		log_warning_errno(-errno, "Cannot create '%s', the registry is not kept across restarts: %m",
				  s->runtime_dir);
	r = registry_load(s->registry, device_present, s);
	if (r < 0)
		return log_oom();
	if (r > 0)
		log_info("Remembered %d firmware names needed across suspend.", r);
	for (RegistryEntry *e = s->registry->entries; e; e = e->next)
		for (char **d = e->devices; d && *d; d++)
			watch_device(s, *d);
	save_registry(s);
	sleep_config_changed(s);

	before = load_state(s);
	if (before == SLEEP_SLEEPING || before == SLEEP_RESUMING || before == SLEEP_PREWARMING) {
		/* Restarted mid-cycle: what was in memory is gone, the rest of the cycle is not.
		 * The previous instance handed the raised timeout back on its way out. */
		log_info("Started in the middle of a suspend cycle (%s).", sleep_state_to_string(before));
		s->state = SLEEP_SLEEPING;
		raise_timeout(s);
		if (s->manager->bus) {
			/* settled once logind answers; until then requests wait as after resume */
			s->restarted_asleep = true;
			defer_begin(s, "resume");
			defer_check_gate(s);
		} else
			enter_resume(s, "restart");
	} else if (s->saved_timeout > 0) {
		/* the cycle was over, only the timeout was still raised */
		restore_timeout(s, true);
	}
	if (s->state == SLEEP_IDLE && !gate_root_writable(s->gate)) {
		log_info("Root file system is read-only, firmware requests wait for it (at most %" PRIu64 " s).",
			 sleep_settings(s)->defer_max / USEC_PER_SEC);
		s->gate->root_ro_before = false;
		defer_begin(s, "boot");
	}
	if (s->manager->bus)
		(void)watch_logind(s);
	return 0;
}

void sleep_stop(Sleep *s)
{
	if (s->batch)
		prewarm_finish(s, true);
	s->grace_timer = sd_event_source_disable_unref(s->grace_timer);
	defer_stop(s);
	/* The raised timeout is handed back; the next instance resumes the cycle from the state file. */
	restore_timeout(s, true);
	save_state(s);
}

void sleep_describe_json(Sleep *s, JsonWriter *w)
{
	json_key(w, "sleep");
	json_object_begin(w);
	json_key(w, "state");
	json_string(w, sleep_state_to_string(s->state));
	json_key(w, "inhibitor_held");
	json_bool(w, s->inhibit_fd >= 0);
	json_key(w, "cache_entries");
	json_uint(w, s->cache->n_entries);
	json_key(w, "cache_bytes");
	json_uint(w, s->cache->bytes);
	json_key(w, "cache_hits");
	json_uint(w, s->cache->hits);
	json_key(w, "deferring");
	json_bool(w, s->deferring);
	json_key(w, "deferred");
	json_uint(w, s->n_deferred);
	json_key(w, "registry_entries");
	json_uint(w, s->registry->n_entries);
	json_key(w, "saved_timeout");
	json_uint(w, s->saved_timeout);
	json_object_end(w);
}
