/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fw-helperd-manager.h"
#include "fw-helperd-messages.h"
#include "fw-helperd-sleep.h"
#include "log.h"

/*
 * While requests wait for the gate: first re-check soon, then back off to this. Under
 * ProtectSystem= the timer is what notices the remount (see on_recheck()), so the back-off
 * stays short: a read of mountinfo four times a second, only while something waits.
 */
#define RECHECK_MIN_USEC (100 * USEC_PER_MSEC)
#define RECHECK_MAX_USEC (250 * USEC_PER_MSEC)

static void log_deferral_end(Request *req, const char *why)
{
	_cleanup_free_ char *shown = cescape(req->name);
	LogEntry e = {};

	log_entry_add(&e, "FIRMWARE=%s", req->name);
	if (req->devpath)
		log_entry_add(&e, "DEVPATH=%s", req->devpath);
	log_entry_add(&e, "FW_DEFERRED_USEC=%" PRIu64, req->deferred_usec);
	log_entry_add(&e, "FW_DEFER_END=%s", why);
	log_entry_send(&e, LOG_INFO, 0, FW_MESSAGE_DEFERRED,
		       "Firmware request for %s waited %" PRIu64 " ms for the file systems (%s), "
		       "answering it from disk now.",
		       shown ?: "?", req->deferred_usec / USEC_PER_MSEC, why);
}

static void stop_recheck_if_idle(Sleep *s)
{
	if (s->n_deferred == 0)
		s->recheck_timer = sd_event_source_disable_unref(s->recheck_timer);
}

/* Hands a deferred request to a worker: the gate opened, or its time is up. */
void defer_release(Sleep *s, Request *req, const char *why)
{
	if (!req->deferred)
		return;
	req->deferred = false;
	req->defer_source = sd_event_source_disable_unref(req->defer_source);
	req->deferred_usec = now_usec(CLOCK_MONOTONIC) - req->deferred_since;
	s->n_deferred--;
	log_deferral_end(req, why);
	(void)manager_dispatch(s->manager, req);
	stop_recheck_if_idle(s);
	sleep_maybe_restore_timeout(s);
	manager_changed(s->manager);
}

static void release_all(Sleep *s, const char *why)
{
	for (Request *r = s->manager->requests, *next; r; r = next) {
		next = r->next;
		defer_release(s, r, why);
	}
}

void defer_end(Sleep *s, const char *why)
{
	if (!s->deferring)
		return;
	s->deferring = false;
	s->window_timer = sd_event_source_disable_unref(s->window_timer);
	log_debug("No more deferral (%s, %s).", s->deferring_why, why);
	release_all(s, why);
	sleep_maybe_restore_timeout(s);
}

/*
 * Whether the firmware roots can be read is asked on a thread: on a disk that is not back
 * yet opendir() may block, and the loop must go on answering from memory meanwhile. The
 * root's writability comes from /proc and is looked at here.
 */
typedef struct GateJob {
	SleepJob job;
	Sleep *sleep;
	char **roots;
	int readable;	/* (worker) */
} GateJob;

static void gate_job_run(SleepJob *job)
{
	GateJob *j = (GateJob *)job;

	j->readable = gate_roots_readable(j->roots);
}

static void gate_job_done(SleepJob *job)
{
	GateJob *j = (GateJob *)job;
	Sleep *s = j->sleep;
	bool readable = j->readable > 0;

	strv_free(j->roots);
	free(j);
	s->gate_checking = false;
	if (readable && s->deferring) {
		log_info("File systems are back (%s), firmware is read from disk again.",
			 s->gate->root_ro_before ? "firmware roots readable" : "root writable");
		defer_end(s, "gate");
	} else if (s->gate_again) {
		s->gate_again = false;
		defer_check_gate(s);
	}
}

/* Looks at the gate; everything waiting goes to disk once it is open. */
void defer_check_gate(Sleep *s)
{
	GateJob *j;

	if (!s->deferring)
		return;
	if (s->gate_checking) {
		s->gate_again = true;
		return;
	}
	if (!s->gate->root_ro_before && !gate_root_writable(s->gate))
		return; /* a mount event or the re-check timer asks again */
	j = calloc(1, sizeof(*j));
	if (!j)
		return (void)log_oom();
	j->job = (SleepJob){ .run = gate_job_run, .done = gate_job_done };
	j->sleep = s;
	if (manager_search_roots(s->manager, &j->roots) < 0 ||
	    sleep_job_submit(s, &j->job) < 0) {
		strv_free(j->roots);
		free(j);
		return;
	}
	s->gate_checking = true;
}

static int on_window_end(sd_event_source *source, uint64_t usec, void *userdata)
{
	Sleep *s = userdata;

	if (s->n_deferred > 0)
		log_notice("File systems still not back after %" PRIu64 " s, reading firmware from disk anyway.",
			   sleep_settings(s)->defer_max / USEC_PER_SEC);
	defer_end(s, "limit");
	return 0;
}

void defer_begin(Sleep *s, const char *why)
{
	s->deferring = true;
	s->deferring_why = why;
	s->deferring_boot = strcmp(why, "boot") == 0;
	s->window_timer = sd_event_source_disable_unref(s->window_timer);
	if (sd_event_add_time_relative(s->manager->event, &s->window_timer, CLOCK_MONOTONIC,
				       sleep_settings(s)->defer_max, 0, on_window_end, s) < 0)
		s->deferring = false; /* unbounded waiting is worse than reading early */
}

/*
 * Mount events do not cross mount namespaces (a service with ProtectSystem= has its own, and a
 * remount in the host's wakes only the host's mountinfo), so while requests wait the gate is
 * also looked at on a backing-off timer; every wait is bounded by its request's deadline.
 */
static int on_recheck(sd_event_source *source, uint64_t usec, void *userdata)
{
	Sleep *s = userdata;

	if (!s->deferring || s->n_deferred == 0) {
		s->recheck_timer = sd_event_source_disable_unref(s->recheck_timer);
		return 0;
	}
	defer_check_gate(s);
	s->recheck_interval = MIN(s->recheck_interval * 2, RECHECK_MAX_USEC);
	(void)sd_event_source_set_time_relative(source, s->recheck_interval);
	(void)sd_event_source_set_enabled(source, SD_EVENT_ONESHOT);
	return 0;
}

static int on_defer_limit(sd_event_source *source, uint64_t usec, void *userdata)
{
	Request *req = userdata;
	Manager *m = req->userdata;

	defer_release(m->sleep, req, "deadline");
	return 0;
}

/* Answering takes time too: stop waiting this long before the deadline. */
static usec_t serve_reserve(usec_t span)
{
	return MIN(MAX(span / 4, 500 * USEC_PER_MSEC), 5 * USEC_PER_SEC);
}

/* Holds req back while the file systems are not back; 1 when it was, 0 when it goes on now. */
static int hold(Sleep *s, Request *req)
{
	usec_t now = now_usec(CLOCK_MONOTONIC), until = USEC_INFINITY;
	int r;

	if (req->deadline != USEC_INFINITY) {
		usec_t reserve = serve_reserve(req->deadline - MIN(req->started, req->deadline));

		if (req->deadline <= now + reserve)
			return 0; /* no time to wait at all */
		until = req->deadline - reserve;
	}
	if (until != USEC_INFINITY) {
		r = sd_event_add_time(s->manager->event, &req->defer_source, CLOCK_MONOTONIC, until,
				      0, on_defer_limit, req);
		if (r < 0)
			return 0;
	}
	req->deferred = true;
	req->deferred_since = now;
	s->n_deferred++;
	if (!s->recheck_timer) {
		s->recheck_interval = RECHECK_MIN_USEC;
		(void)sd_event_add_time_relative(s->manager->event, &s->recheck_timer,
						 CLOCK_MONOTONIC, s->recheck_interval, 0,
						 on_recheck, s);
	}
	log_debug("Deferring firmware request %s until the file systems are back (%s, at most %" PRIu64
		  " ms).", req->name, s->deferring_why,
		  until == USEC_INFINITY ? UINT64_MAX : (until - now) / USEC_PER_MSEC);
	return 1;
}

int defer_request(Sleep *s, Request *req)
{
	int r;

	if (!s->deferring)
		return 0;
	/* At boot a read-only root may stay so (an immutable system): what is there already is
	 * served now, only what is missing waits for more file systems. Not after resume, where
	 * looking may block on a disk that is not back. */
	if (s->deferring_boot && gate_name_present(request_roots(req), req->name))
		return 0;
	r = hold(s, req);
	if (r > 0)
		defer_check_gate(s);
	return r;
}

/* The daemon stops: no timers left behind; the requests stay pending for the next start. */
void defer_stop(Sleep *s)
{
	s->window_timer = sd_event_source_disable_unref(s->window_timer);
	s->recheck_timer = sd_event_source_disable_unref(s->recheck_timer);
	s->deferring = false;
	s->n_deferred = 0;
}
