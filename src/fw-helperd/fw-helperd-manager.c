/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <libudev.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>

#include "config.h"
#include "fw-helperd-bus.h"
#include "fw-helperd-kmod.h"
#include "fw-helperd-manager.h"
#include "fw-helperd-messages.h"
#include "fw-helperd-name.h"
#include "fw-helperd-sleep.h"
#include "fw-helperd-stream.h"
#include "fw-helperd-udev.h"
#include "log.h"

/* How long SIGTERM waits for requests being answered before aborting them. */
#define STOP_TIMEOUT_USEC (5 * USEC_PER_SEC)
/* In the runtime directory; rules.d/50-firmware.rules tests for it by its full path. */
#define LISTENING_FLAG "listening"
/*
 * How long a change waits before it is told (D-Bus PropertiesChanged, systemd's STATUS=, the
 * watchdog going off): each of those wakes dbus-daemon or PID 1, which then compete for the
 * CPU with the drivers being answered. A run of requests is told once, after this.
 */
#define CHANGED_DELAY_USEC (100 * USEC_PER_MSEC)
/*
 * New counters alone are told at most this often: requests further apart than the delay
 * above (a boot's drivers, one after another) would each wake PID 1 and dbus-daemon. A new
 * State or SleepState does not wait for it.
 */
#define TELL_INTERVAL_USEC (1 * USEC_PER_SEC)

static const char *const state_table[_MANAGER_STATE_MAX] = {
	[MANAGER_STARTING] = "starting",
	[MANAGER_RUNNING] = "running",
	[MANAGER_RELOADING] = "reloading",
	[MANAGER_STOPPING] = "stopping",
};

const char *manager_state_to_string(ManagerState s)
{
	return s >= 0 && s < _MANAGER_STATE_MAX ? state_table[s] : NULL;
}

static void request_done(void *userdata);

static size_t unpack_limit(const Config *c)
{
	return (size_t)MIN(c->unpack_memory_max, (uint64_t)SIZE_MAX / 2);
}

int manager_new(const ManagerOptions *options, Manager **ret)
{
	_cleanup_(manager_freep) Manager *m = NULL;
	struct utsname u;
	int r;

	m = calloc(1, sizeof(*m));
	if (!m)
		return log_oom();
	m->options = *options;
	m->custom_path_fd = -EBADF;
	m->kernel_fd = -EBADF;
	if (!m->options.sysfs_root)
		m->options.sysfs_root = "/sys";

	r = config_load(m->options.config_file, m->options.config_dropin_dirs, &m->config);
	if (r < 0) {
		log_error_errno(r, "Refusing to start with a broken or unreadable configuration: %m");
		return MANAGER_UNRECOVERABLE;
	}
	if (m->options.event_source >= 0)
		m->config->event_source = m->options.event_source;
	if (verifier_new(&m->verifier) < 0 || verifier_configure(m->verifier, m->config) < 0)
		return log_oom();
	if (fw_memory_new(unpack_limit(m->config), &m->unpack_memory) < 0)
		return log_oom();

	uname(&u);
	m->kernel_release = strdup(u.release);
	if (!m->kernel_release)
		return log_oom();

	/* not the default loop: sd_event_prepare() checks a default loop's thread with a
	 * gettid() system call on every iteration (systemd 252) */
	r = sd_event_new(&m->event);
	if (r < 0)
		return log_error_errno(r, "Failed to allocate event loop: %m");
	r = sleep_new(m, &m->sleep);
	if (r < 0)
		return log_oom();

	*ret = TAKE_PTR(m);
	return 0;
}

/* Built again, and opened again, for the next request. */
static void search_roots_forget(Manager *m)
{
	strv_free(m->roots);
	m->roots = NULL;
	m->roots_custom = mfree(m->roots_custom);
	m->root_set_stale = true;
}

/*
 * Nothing in flight any more: the roots are let go, opened again by the next request. Held
 * open, they would keep their file systems from being unmounted (EBUSY).
 */
static void root_set_release(Manager *m)
{
	m->root_set = fw_root_set_unref(m->root_set);
}

static void missing_free_all(Manager *m)
{
	for (MissingEntry *e = m->missing, *next; e; e = next) {
		next = e->next;
		free(e->name);
		free(e);
	}
	m->missing = NULL;
	m->n_missing = 0;
}

Manager *manager_free(Manager *m)
{
	if (!m)
		return NULL;
	manager_udev_stop(m);
	/* Joins the threads: requests still queued run to the end (their cancel flag is set). */
	for (Request *r = m->requests; r; r = r->next)
		r->cancel = true;
	m->workers = worker_pool_free(m->workers);
	m->sleep = sleep_free(m->sleep);
	m->companion = companion_free(m->companion);
	m->verifier = verifier_free(m->verifier);
	m->unpack_memory = fw_memory_free(m->unpack_memory); /* after every thread is joined */
	sd_event_source_disable_unref(m->mountinfo_source);
	sd_event_source_disable_unref(m->exit_timer);
	sd_event_source_disable_unref(m->changed_timer);
	sd_event_source_disable_unref(m->tell_timer);
	sd_event_source_disable_unref(m->rescan_source);
	sd_event_source_disable_unref(m->bus_reconnect);
	sd_bus_flush_close_unref(m->bus);
	sd_event_unref(m->event);
	missing_free_all(m);
	config_free(m->config);
	search_roots_forget(m);
	root_set_release(m);
	roots_watch_free(m->root_watch);
	safe_close(m->custom_path_fd);
	free(m->kernel_release);
	free(m);
	return NULL;
}

/*
 * The roots opened again when they may have changed, or after they were let go. The watch
 * is kept while nothing changes (it holds no file system busy) and made anew, first, when
 * something did or the roots or mounts are new: what changes while the roots are opened
 * is seen next time. Without a watch (inotify refused), the roots are opened for every
 * request, as fw_blob_find() does.
 */
static int root_set_update(Manager *m)
{
	bool changed = roots_watch_changed(m->root_watch) || m->root_set_stale;
	FwRootSet *set = NULL;
	int r;

	if (m->root_set && !changed && fw_root_set_settled(m->root_set))
		return 0;
	if (changed && !m->root_watch_failed) {
		m->root_watch = roots_watch_free(m->root_watch);
		r = roots_watch_new(m->roots, &m->root_watch);
		if (r < 0) {
			log_warning_errno(r, "Cannot watch the firmware search roots, opening them "
					  "for every request: %m");
			m->root_watch_failed = true;
		}
	}
	r = fw_root_set_open(m->roots, &set);
	if (r < 0)
		return r;
	fw_root_set_unref(m->root_set);
	m->root_set = set;
	m->root_set_stale = false;
	return 0;
}

/*
 * The parameter is read for every request, since an admin may write it at any time (it
 * has no change notification); the roots are built again only when it reads otherwise
 * than when they were built. Its file is kept open, which makes that one pread().
 */
static int search_roots_update(Manager *m)
{
	_cleanup_free_ char *custom = NULL;
	_cleanup_strv_free_ char **roots = NULL;
	int r;

	if (m->custom_path_fd < 0)
		m->custom_path_fd = fw_search_path_open_custom(m->options.sysfs_root);
	if (m->custom_path_fd >= 0)
		(void)fw_search_path_read_custom(m->custom_path_fd, &custom);
	if (m->roots && streq_ptr(custom, m->roots_custom))
		return root_set_update(m);
	r = fw_search_path_build(m->options.firmware_prefix, custom, m->kernel_release,
				 m->config->search_path, &roots);
	if (r < 0)
		return r;
	search_roots_forget(m);
	m->roots = TAKE_PTR(roots);
	m->roots_custom = TAKE_PTR(custom);
	return root_set_update(m);
}

int manager_search_roots(Manager *m, char ***ret)
{
	char **copy;
	int r;

	r = search_roots_update(m);
	if (r < 0)
		return r;
	copy = strv_copy(m->roots);
	if (!copy)
		return -ENOMEM;
	*ret = copy;
	return 0;
}

FwRootSet *manager_root_set(Manager *m)
{
	return fw_root_set_ref(m->root_set);
}

/* A request's roots: the opened set, shared; the paths copied only when there is none. */
static int take_roots(Manager *m, Request *req)
{
	int r;

	r = search_roots_update(m);
	if (r < 0)
		return r;
	req->root_set = manager_root_set(m);
	if (req->root_set)
		return 0;
	req->roots = strv_copy(m->roots);
	return req->roots || !m->roots ? 0 : -ENOMEM;
}

/* The kernel's fallback timeout in seconds (0: none), as the uevent did not say. */
static unsigned read_kernel_timeout(Manager *m)
{
	_cleanup_free_ char *path = NULL, *s = NULL;
	uint64_t v;

	path = path_join(m->options.sysfs_root, "class/firmware/timeout");
	if (!path || read_string_at(AT_FDCWD, path, &s) < 0 || safe_atou64(s, &v) < 0)
		return 60;
	return (unsigned)MIN(v, (uint64_t)UINT32_MAX);
}

/* 0 when gone */
static ino_t dir_ino(const char *path)
{
	struct stat st;

	return stat(path, &st) < 0 ? 0 : st.st_ino;
}

static bool answered_lately(Manager *m, ino_t ino)
{
	for (size_t i = 0; ino != 0 && i < ELEMENTSOF(m->answered_inos); i++)
		if (m->answered_inos[i] == ino)
			return true;
	return false;
}

static Request *find_request(Manager *m, const char *kobj)
{
	for (Request *r = m->requests; r; r = r->next)
		if (strcmp(r->kobj, kobj) == 0)
			return r;
	return NULL;
}

bool manager_knows_request(Manager *m, const char *sysfs_dir)
{
	const char *kobj = strrchr(sysfs_dir, '/');

	return find_request(m, kobj ? kobj + 1 : sysfs_dir) || answered_lately(m, dir_ino(sysfs_dir));
}


static void unlink_request(Manager *m, Request *req)
{
	for (Request **p = &m->requests; *p; p = &(*p)->next)
		if (*p == req) {
			*p = req->next;
			m->n_requests--;
			return;
		}
}

static void log_rejected(const RequestInfo *info, const char *reason)
{
	_cleanup_free_ char *shown = cescape(info->name);
	LogEntry e = {};

	log_entry_add(&e, "FIRMWARE=%s", info->name);
	if (info->devpath)
		log_entry_add(&e, "DEVPATH=%s", info->devpath);
	log_entry_add(&e, "FW_RESULT=rejected");
	if (info->origin)
		log_entry_add(&e, "FW_EVENT=%s", info->origin);
	log_entry_add(&e, "FW_REASON=%s", reason);
	log_entry_send(&e, LOG_WARNING, 0, FW_MESSAGE_REJECTED,
		       "Refused firmware request for '%s': %s; answered -1.", shown ?: "?", reason);
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata)
{
	Request *req = userdata;
	Manager *m = req->userdata;

	/* A worker that is streaming notices on its own; one still queued is aborted now. */
	req->timed_out = true;
	req->cancel = true;
	if (req->deferred)
		sleep_request_deadline(m->sleep, req); /* to a worker, which sees cancel and aborts */
	else if (!req->running)
		(void)fw_stream_abort(req->sysfs_dir);
	return 0;
}

static int arm_deadline(Manager *m, Request *req, unsigned timeout_sec)
{
	usec_t timeout, margin = m->config->timeout_margin;

	if (timeout_sec == 0)
		return 0; /* the kernel waits forever */
	timeout = (usec_t)timeout_sec * USEC_PER_SEC;
	req->deadline = req->started + (timeout > 2 * margin ? timeout - margin : timeout / 2);
	return sd_event_add_time(m->event, &req->deadline_source, CLOCK_MONOTONIC, req->deadline,
				 0, on_deadline, req);
}

/* inline_max: the most the loop streams itself (request_run_inline()). */
static int dispatch(Manager *m, Request *req, size_t inline_max)
{
	int r;

	/* One held back may still find its disk slow to answer: looking is a worker's job. */
	if (req->deferred_since == 0 && request_run_inline(req, inline_max)) {
		log_debug("Answered firmware request %s for %s on the loop%s.", req->name,
			  req->devpath ?: "?", req->cached ? " from memory" : "");
		request_done(req);
		return 0;
	}
	r = worker_pool_submit(m->workers, (worker_run_t)request_run, req);
	if (r < 0)
		return log_oom();
	log_debug("Answering firmware request %s for %s on a worker%s.", req->name,
		  req->devpath ?: "?", req->cached ? " from memory" : "");
	return 0;
}

int manager_dispatch(Manager *m, Request *req)
{
	/*
	 * Held back until the file systems came back: the roots opened as they are now, not
	 * as when it was taken (a file system may have been mounted since, unseen as yet).
	 * The paths of then, opened anew, if the roots cannot be had now.
	 */
	m->root_set_stale = true;
	if (search_roots_update(m) >= 0 && m->root_set) {
		fw_root_set_unref(req->root_set);
		req->root_set = manager_root_set(m);
	} else if (req->root_set && !req->roots &&
		   (req->roots = strv_copy(fw_root_set_paths(req->root_set))))
		req->root_set = fw_root_set_unref(req->root_set);
	return dispatch(m, req, REQUEST_INLINE_MAX);
}

int manager_submit(Manager *m, const RequestInfo *info)
{
	_cleanup_(request_freep) Request *req = NULL;
	Request *existing, *taken;
	const char *kobj, *reason;
	usec_t started;
	ino_t ino;
	int r;

	if (m->state == MANAGER_STOPPING)
		return 0; /* left pending for the next instance */
	kobj = strrchr(info->sysfs_dir, '/');
	kobj = kobj ? kobj + 1 : info->sysfs_dir;
	ino = info->ino ?: dir_ino(info->sysfs_dir);
	existing = find_request(m, kobj);
	if (existing) {
		/*
		 * A directory other than the one taken is a new request, which the kernel could
		 * add only after the one in flight was answered: look again once that is done.
		 */
		if (ino != existing->ino)
			existing->asked_again = true;
		return 0;
	}

	if (fw_name_check(info->name, &reason) < 0) {
		m->rejected++;
		(void)fw_stream_abort(info->sysfs_dir);
		log_rejected(info, reason);
		manager_changed(m);
		return 0;
	}

	if (answered_lately(m, ino))
		return 0; /* still there, but done with: the kernel is deleting it */

	/*
	 * Seen when the loop woke for it: the loop's time, which costs no clock read (under
	 * TCG without a vDSO clock, a system call). Deadlines count from when the kernel
	 * started waiting, as far as udev tells.
	 */
	(void)sd_event_now(m->event, CLOCK_MONOTONIC, &started);
	r = request_new(info->name, kobj, info->sysfs_dir, info->devpath,
			info->age < started ? started - info->age : started, &req);
	if (r < 0)
		return log_oom();
	req->ino = ino;
	req->origin = info->origin;
	r = take_roots(m, req);
	if (r < 0)
		return log_error_errno(r, "Failed to build the firmware search path: %m");
	req->max_size = m->config->max_size;
	req->unpack_memory = m->unpack_memory;
	req->verifier = m->verifier;
	r = arm_deadline(m, req, info->timeout_sec ?: read_kernel_timeout(m));
	if (r < 0)
		return log_error_errno(r, "Failed to arm request deadline: %m");

	/* Listed before it is answered: request_done() unlinks it, and may scan again. */
	req->userdata = m;
	req->next = m->requests;
	m->requests = req;
	m->n_requests++;
	taken = TAKE_PTR(req);
	/* A held copy attached, or held back while the file systems are not back after resume. */
	r = sleep_intercept(m->sleep, taken);
	if (r == 0) /* may complete and free it */
		r = dispatch(m, taken, info->crowded ? 0 : REQUEST_INLINE_MAX);
	if (r < 0) {
		unlink_request(m, taken);
		request_free(taken);
	}
	/*
	 * Told once it is answered or handed on: one answered on the loop has left nothing in
	 * flight, and neither wakes PID 1 twice (the watchdog on, then off) nor keeps it from
	 * the CPU meanwhile. The loop was not watched while it answered, at most a
	 * REQUEST_INLINE_MAX read from a plain file (a loop hung in the disk could not be
	 * killed anyway); one on a worker or held back turns the watchdog on here.
	 */
	manager_changed(m);
	return r < 0 ? r : 1;
}

static void remember_missing(Manager *m, const char *name)
{
	MissingEntry *e, **p;

	for (p = &m->missing; *p; p = &(*p)->next)
		if (strcmp((*p)->name, name) == 0)
			break;
	e = *p;
	if (e) {
		*p = e->next; /* moved to the front below */
	} else {
		e = calloc(1, sizeof(*e));
		if (!e || !(e->name = strdup(name))) {
			free(e);
			return;
		}
		m->n_missing++;
	}
	e->count++;
	e->last = now_usec(CLOCK_REALTIME);
	e->next = m->missing;
	m->missing = e;

	if (m->n_missing > MISSING_MAX) {
		/* drop the oldest */
		for (p = &m->missing; (*p)->next; p = &(*p)->next)
			;
		free((*p)->name);
		free(*p);
		*p = NULL;
		m->n_missing--;
	}
}

static bool is_optional(Manager *m, const char *name)
{
	for (char **p = m->config->optional_firmware; p && *p; p++)
		if (fnmatch(*p, name, 0) == 0)
			return true;
	return false;
}

static void add_request_fields(LogEntry *e, const Request *req)
{
	const char *verified_at = request_verified_at(req);

	log_entry_add_string(e, "FIRMWARE", req->name);
	if (req->devpath)
		log_entry_add_string(e, "DEVPATH", req->devpath);
	log_entry_add_string(e, "FW_RESULT", request_result_to_string(req->result));
	if (req->origin)
		log_entry_add_string(e, "FW_EVENT", req->origin);
	log_entry_add_uint(e, "FW_DURATION_USEC", req->duration);
	if (req->result == REQUEST_SERVED)
		log_entry_add_string(e, "FW_SOURCE", req->cached ? "cache" : "disk");
	if (verified_at)
		log_entry_add_string(e, "FW_VERIFIED_AT", verified_at);
	if (req->deferred_usec > 0)
		log_entry_add_uint(e, "FW_DEFERRED_USEC", req->deferred_usec);
}

static void log_completion(Manager *m, Request *req)
{
	_cleanup_free_ char *shown = cescape(req->name);
	_cleanup_strv_free_ char **tried = NULL;
	LogEntry e = {};

	add_request_fields(&e, req);
	switch (req->result) {
	case REQUEST_SERVED:
		log_entry_add_string(&e, "FW_PATH", req->path);
		log_entry_add_uint(&e, "FW_SIZE", (uint64_t)req->bytes);
		log_entry_add_string(&e, "FW_COMPRESSION", fw_compression_to_string(req->compression));
		log_entry_add_string(&e, "FW_VERIFY", verify_status_to_string(req->verify.status));
		log_entry_send(&e, LOG_INFO, 0, FW_MESSAGE_SERVED,
			       "Served firmware %s (%" PRIi64 " bytes) from %s%s in %" PRIu64 " us.",
			       shown, req->bytes, req->path, req->cached ? " (held in memory)" : "",
			       req->duration);
		/* Policy=warn: a second entry, under the MESSAGE_ID operators watch for */
		if (verify_check_failed(&req->verify)) {
			add_request_fields(&e, req);
			verify_log(&req->verify, &e, req->name, req->path, true);
		}
		return;
	case REQUEST_UNVERIFIED:
		verify_log(&req->verify, &e, req->name, req->path, false);
		return;
	case REQUEST_MISSING:
		(void)fw_search_candidates(request_roots(req), req->name, &tried);
		for (char **t = tried; t && *t; t++)
			log_entry_add_string(&e, "FW_TRIED", *t);
		log_entry_send(&e, is_optional(m, req->name) ? m->config->optional_log_level : LOG_WARNING,
			       0, FW_MESSAGE_MISSING,
			       "Firmware %s not found in %zu places; answered -1.", shown,
			       strv_length(tried));
		return;
	default:
		if (req->path)
			log_entry_add_string(&e, "FW_PATH", req->path);
		if (req->reason != REASON_NONE)
			log_entry_add_string(&e, "FW_REASON", request_reason_to_string(req->reason));
		log_entry_send(&e, req->result == REQUEST_GONE ? LOG_NOTICE : LOG_ERR, req->error,
			       FW_MESSAGE_FAILED, "Firmware %s %s after %" PRIu64 " us: %m.", shown,
			       request_outcome(req), req->duration);
	}
}

static void count_completion(Manager *m, const Request *req)
{
	switch (req->result) {
	case REQUEST_SERVED:
		m->served++;
		m->bytes_served += (uint64_t)req->bytes;
		break;
	case REQUEST_MISSING:
		m->missing_count++;
		remember_missing(m, req->name);
		break;
	default:
		m->failed++;
	}
}

static int on_rescan(sd_event_source *s, void *userdata)
{
	Manager *m = userdata;

	m->rescan_source = sd_event_source_disable_unref(m->rescan_source);
	if (m->state == MANAGER_RUNNING)
		(void)manager_rescan(m);
	return 0;
}

/*
 * On the loop's next turn, once for any number of requests: request_done() may run inside
 * a scan (a request answered on the loop), and one gone for want of a file would be taken
 * again and again within it.
 */
static void rescan_soon(Manager *m)
{
	if (!m->rescan_source && sd_event_add_defer(m->event, &m->rescan_source, on_rescan, m) < 0)
		log_oom();
}

/*
 * On the loop, once req is answered: by a worker, or on the loop itself from within
 * manager_dispatch(). Frees req.
 */
static void request_done(void *userdata)
{
	Request *req = userdata;
	Manager *m = req->userdata;

	if (req->timed_out && req->result != REQUEST_SERVED)
		req->result = REQUEST_TIMEOUT;
	unlink_request(m, req);
	/* The rescan below for a request gone for want of a file must be free to take it again. */
	if (req->ino != 0 && request_settled(req))
		m->answered_inos[m->answered_next++ % ELEMENTSOF(m->answered_inos)] = req->ino;
	sleep_request_done(m->sleep, req);
	count_completion(m, req);
	log_completion(m, req);
	/*
	 * A new request under the same name may have been ignored while this one was in flight
	 * (on a worker: one answered on the loop is never asked again meanwhile).
	 */
	if (req->asked_again && m->state == MANAGER_RUNNING)
		(void)manager_udev_scan_one(m, req->kobj, req->ino);
	else if (req->result == REQUEST_GONE && m->state == MANAGER_RUNNING)
		rescan_soon(m);
	request_free(req);
	manager_changed(m);

	if (m->state == MANAGER_STOPPING && !m->requests)
		sd_event_exit(m->event, 0);
}

static int on_restart_reply(sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
	const sd_bus_error *e = sd_bus_message_get_error(reply);

	if (e)
		log_warning("Could not restart to use the companion module: %s", e->message ?: e->name);
	return 0;
}

/*
 * Under systemd our sandbox made /sys/kernel/fwh_cache writable as it was at start (or
 * not at all, when it did not exist): a module loaded since can only be written to by a
 * new instance. systemd restarts us; pending requests are left for the next one.
 */
void manager_module_returned(Manager *m)
{
	_cleanup_free_ char *unit = NULL;
	int r;

	if (!m->bus || sd_pid_get_unit(0, &unit) < 0) {
		(void)companion_recheck(m->companion);
		return;
	}
	log_notice("Companion module %s loaded; restarting %s to use it.", COMPANION_MODULE_NAME, unit);
	r = sd_bus_call_method_async(m->bus, NULL, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
				     "org.freedesktop.systemd1.Manager", "TryRestartUnit",
				     on_restart_reply, m, "ss", unit, "replace");
	if (r < 0)
		log_warning_errno(r, "Could not restart to use the companion module: %m");
}

static void manager_rescan_cb(void *userdata)
{
	(void)manager_rescan(userdata);
}

int manager_rescan(Manager *m)
{
	return manager_udev_scan(m, SCAN_AUTOMATIC);
}

int manager_rescan_all(Manager *m)
{
	return manager_udev_scan(m, SCAN_ALL);
}

int manager_reload(Manager *m)
{
	_cleanup_(config_freep) Config *c = NULL;
	int r;

	m->state = MANAGER_RELOADING;
	(void)sd_notify(false, "RELOADING=1");
	r = config_load(m->options.config_file, m->options.config_dropin_dirs, &c);
	if (r < 0)
		log_error_errno(r, "Configuration not reloaded, keeping the previous one.");
	else {
		if (m->options.event_source >= 0)
			c->event_source = m->options.event_source;
		config_free(m->config);
		m->config = TAKE_PTR(c);
		fw_memory_set_limit(m->unpack_memory, unpack_limit(m->config));
		search_roots_forget(m); /* SearchPath= may have changed */
		sleep_config_changed(m->sleep);
		log_info("Configuration reloaded.");
	}
	/* manifests are read again on the next request, whether the configuration changed or not */
	if (verifier_configure(m->verifier, m->config) < 0)
		log_oom();
	m->state = MANAGER_RUNNING;
	(void)sd_notify(false, "READY=1");
	manager_state_changed(m);
	return r;
}

static int on_exit_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	Manager *m = userdata;

	log_warning("Still answering %u requests at shutdown, aborting them.", m->n_requests);
	for (Request *r = m->requests; r; r = r->next) {
		r->cancel = true;
		if (!r->running)
			(void)fw_stream_abort(r->sysfs_dir);
	}
	return 0;
}

/* Deferred requests stay pending in sysfs: the next instance's scan picks them up. */
static void drop_deferred(Manager *m)
{
	for (Request *r = m->requests, *next; r; r = next) {
		next = r->next;
		if (!r->deferred)
			continue;
		log_info("Leaving firmware request %s pending for the next start.", r->name);
		unlink_request(m, r);
		request_free(r);
	}
}

/*
 * While LISTENING_FLAG exists, udev's rule leaves requests to us instead of tagging them for
 * systemd, which would cost PID 1 a device unit (and dbus-daemon its signals) per request.
 */
static void listening_flag_set(Manager *m, bool on)
{
	_cleanup_free_ char *path = path_join(m->sleep->runtime_dir, LISTENING_FLAG);
	int fd;

	if (!path)
		return;
	if (!on) {
		if (unlink(path) < 0 && errno != ENOENT)
			log_warning_errno(-errno, "Cannot remove %s: %m", path);
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		log_debug_errno(-errno, "Cannot create %s, requests keep starting us through systemd: %m",
				path);
	safe_close(fd);
}

void manager_stop(Manager *m)
{
	if (m->state == MANAGER_STOPPING)
		return;
	/*
	 * Requests udev sees from now on go to the guard, which starts a successor once we are
	 * gone. Those whose events are queued here are taken; the scan hands any other pending
	 * one to udev again (manager_udev_scan()): none is left to nobody.
	 */
	listening_flag_set(m, false);
	if (m->state == MANAGER_RUNNING) {
		manager_udev_drain(m);
		(void)manager_rescan(m);
	}
	m->state = MANAGER_STOPPING;
	(void)sd_notify(false, "STOPPING=1");
	manager_udev_stop(m);
	sleep_stop(m->sleep);
	drop_deferred(m);
	manager_state_changed(m);
	if (!m->requests) {
		sd_event_exit(m->event, 0);
		return;
	}
	/* Give what is queued or streaming a moment to finish, then abort the rest. */
	(void)sd_event_add_time_relative(m->event, &m->exit_timer, CLOCK_MONOTONIC, STOP_TIMEOUT_USEC,
					 0, on_exit_timeout, m);
}

/*
 * systemd's watchdog only while there is something to answer or a suspend cycle under
 * way, where a hung loop would cost drivers their timeouts. An idle daemon then wakes
 * for nothing at all: no pings, and WATCHDOG_USEC=0 tells systemd not to expect any.
 */
static bool manager_busy(Manager *m)
{
	return m->n_requests > 0 || m->state != MANAGER_RUNNING ||
	       (m->sleep && m->sleep->state != SLEEP_IDLE);
}

static void update_watchdog(Manager *m)
{
	bool busy = manager_busy(m);

	if (busy == m->watchdog_on || m->watchdog_usec == 0)
		return;
	if (busy) {
		(void)sd_notifyf(false, "WATCHDOG=1\nWATCHDOG_USEC=%" PRIu64, m->watchdog_usec);
		(void)sd_event_set_watchdog(m->event, true);
	} else {
		(void)sd_event_set_watchdog(m->event, false);
		(void)sd_notify(false, "WATCHDOG_USEC=0");
	}
	m->watchdog_on = busy;
}

/* The bus (PropertiesChanged) and PID 1 (STATUS=) told how things stand. */
static void tell(Manager *m)
{
	m->tell_timer = sd_event_source_disable_unref(m->tell_timer);
	(void)sd_event_now(m->event, CLOCK_MONOTONIC, &m->told_usec);
	m->state_untold = false;
	manager_bus_emit_changed(m);
	(void)sd_notifyf(false, "STATUS=%s: %" PRIu64 " served, %" PRIu64 " missing, %" PRIu64
			 " failed, %u in flight", manager_state_to_string(m->state), m->served,
			 m->missing_count, m->failed + m->rejected, m->n_requests);
}

static int on_tell(sd_event_source *s, uint64_t usec, void *userdata)
{
	tell(userdata);
	return 0;
}

static int on_changed(sd_event_source *s, uint64_t usec, void *userdata)
{
	Manager *m = userdata;
	usec_t due;

	m->changed_timer = sd_event_source_disable_unref(m->changed_timer);
	if (m->n_requests == 0)
		root_set_release(m);
	update_watchdog(m);
	due = m->told_usec + TELL_INTERVAL_USEC;
	if (m->state_untold || usec >= due)
		tell(m);
	else if (!m->tell_timer && /* else told when that fires, with what stands then */
		 sd_event_add_time(m->event, &m->tell_timer, CLOCK_MONOTONIC, due, 0, on_tell, m) < 0)
		tell(m);
	return 0;
}

void manager_changed(Manager *m)
{
	if (!m->event)
		return;
	/* The watchdog goes on at once: a loop that hung in the meantime would go unnoticed. */
	if (manager_busy(m) && !m->watchdog_on)
		update_watchdog(m);
	if (m->changed_timer)
		return;
	(void)sd_event_add_time_relative(m->event, &m->changed_timer, CLOCK_MONOTONIC,
					 CHANGED_DELAY_USEC, 0, on_changed, m);
}

void manager_state_changed(Manager *m)
{
	m->state_untold = true;
	manager_changed(m);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	Manager *m = userdata;

	if (si->ssi_signo == SIGHUP)
		(void)manager_reload(m);
	else
		manager_stop(m);
	return 0;
}

/* Mounts changed: firmware roots may have appeared, so look again. */
static int on_mountinfo(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	Manager *m = userdata;

	m->root_set_stale = true; /* a root may have been mounted over, or come with a mount */
	sleep_mounts_changed(m->sleep);
	(void)manager_rescan(m);
	return 0;
}

static int watch_mounts(Manager *m)
{
	int fd, r;

	fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return log_warning_errno(-errno, "Cannot watch mounts, rescans only on demand: %m");
	r = sd_event_add_io(m->event, &m->mountinfo_source, fd, EPOLLPRI, on_mountinfo, m);
	if (r < 0) {
		close(fd);
		return log_warning_errno(r, "Cannot watch mounts: %m");
	}
	(void)sd_event_source_set_io_fd_own(m->mountinfo_source, true);
	return 0;
}

static int setup_signals(Manager *m)
{
	static const int signals[] = { SIGTERM, SIGINT, SIGHUP };
	sigset_t mask;
	int r;

	sigemptyset(&mask);
	for (size_t i = 0; i < ELEMENTSOF(signals); i++)
		sigaddset(&mask, signals[i]);
	/* Blocked in every thread: the workers are created after this. */
	if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
		return -EINVAL;
	for (size_t i = 0; i < ELEMENTSOF(signals); i++) {
		r = sd_event_add_signal(m->event, NULL, signals[i], on_signal, m);
		if (r < 0)
			return log_error_errno(r, "Failed to watch signal %d: %m", signals[i]);
	}
	return 0;
}

int manager_run(Manager *m)
{
	int r;

	r = setup_signals(m);
	if (r < 0)
		return r;
	r = worker_pool_new(m->event, m->config->workers, request_done, &m->workers);
	if (r < 0)
		return log_error_errno(r, "Failed to start worker threads: %m");
	/* read once: the environment does not change, and every request would parse it */
	if (sd_watchdog_enabled(false, &m->watchdog_usec) <= 0)
		m->watchdog_usec = 0;
	m->watchdog_on = sd_event_set_watchdog(m->event, true) > 0;

	if (!m->options.no_bus) {
		r = manager_bus_start(m);
		if (r < 0)
			return r;
	}
	/* Listen first, then scan: a request that appears in between is seen at least once. */
	r = manager_udev_start(m);
	if (r < 0)
		return r;
	/* The module's own loads come back to us as requests: the loop must be up first. */
	r = companion_new(m->event, m->options.sysfs_root, m->config->companion_mode, &m->companion);
	if (r < 0) {
		log_error_errno(r, "The companion module is required (Mode=required) but cannot be used.");
		return MANAGER_UNRECOVERABLE;
	}
	companion_set_answering(m->companion, manager_rescan_cb, m);
	/* rmmod and modprobe of the module while we run */
	if (m->config->companion_mode != COMPANION_OFF)
		(void)manager_udev_watch_subsystem(m, "module");
	/* Before the scan: a start on a read-only root defers what it finds. */
	r = sleep_start(m->sleep);
	if (r < 0)
		return r;
	(void)watch_mounts(m);
	r = manager_rescan(m);
	if (r < 0)
		log_warning_errno(r, "Initial scan for pending requests failed: %m");

	m->state = MANAGER_RUNNING;
	listening_flag_set(m, true);
	manager_state_changed(m);
	(void)sd_notify(false, "READY=1");
	log_info("fw-helperd " PACKAGE_VERSION " running (%s events, %u workers).",
		 event_source_to_string(m->config->event_source), m->config->workers);
	return sd_event_loop(m->event);
}
