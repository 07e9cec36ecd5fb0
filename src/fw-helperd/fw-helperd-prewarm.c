/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fw-helperd-manager.h"
#include "fw-helperd-messages.h"
#include "fw-helperd-sleep.h"
#include "log.h"

/*
 * A prewarm in flight. Jobs read on the prewarm pool; the loop collects them. When the
 * deadline passes the batch is reported and abandoned: jobs still reading are cancelled and
 * free it when the last one is back.
 */
typedef struct PrewarmJob {
	SleepJob job;			/* first: the pool hands this back */
	PrewarmBatch *batch;
	char *name;
	/* (worker) */
	CachedBlob *result;
	int error;
	struct PrewarmJob *next;
} PrewarmJob;

struct PrewarmBatch {
	Sleep *sleep;			/* loop only */
	atomic_bool cancel;
	atomic_uint_fast64_t reserved;	/* bytes promised to jobs so far */
	uint64_t budget;		/* what the cache may still take */
	uint64_t max_size;
	FwMemory *unpack_memory;	/* the manager's, shared with requests */
	char **roots;
	Verifier *verifier;		/* the manager's (outlives the prewarm threads), or NULL */
	usec_t started, deadline;	/* CLOCK_MONOTONIC */
	PrewarmJob *running;		/* loop: jobs not back yet */
	bool for_sleep;			/* PrepareForSleep(true), else Prewarm() */
	SleepState before;		/* state to go back to after an on-demand prewarm */
	bool abandoned;			/* reported; late results are dropped */
	sd_event_source *deadline_source;
	sd_bus_message *reply;		/* Prewarm() waiting for the result */
	char **cached, **too_big, **late, **failed;
};

static void prewarm_job_free(PrewarmJob *j)
{
	cached_blob_unref(j->result);
	free(j->name);
	free(j);
}

static void batch_free(PrewarmBatch *b)
{
	if (!b)
		return;
	sd_event_source_disable_unref(b->deadline_source);
	sd_bus_message_unref(b->reply);
	strv_free(b->roots);
	strv_free(b->cached);
	strv_free(b->too_big);
	strv_free(b->late);
	strv_free(b->failed);
	free(b);
}

static int reserve(PrewarmBatch *b, uint64_t size)
{
	uint_fast64_t cur = atomic_load(&b->reserved);

	do {
		if (size > b->budget || cur > b->budget - size)
			return -ENOSPC;
	} while (!atomic_compare_exchange_weak(&b->reserved, &cur, cur + size));
	return 0;
}

/* On a prewarm thread: finds name and reads it whole into memory, within budget and time. */
static void prewarm_job_run(SleepJob *job)
{
	_cleanup_(fw_blob_freep) FwBlob *blob = NULL;
	PrewarmJob *j = (PrewarmJob *)job;
	PrewarmBatch *b = j->batch;
	FwLimits limits;
	uint64_t left;
	int r;

	if (atomic_load(&b->cancel)) {
		j->error = -ECANCELED;
		return;
	}
	left = b->budget - MIN(atomic_load(&b->reserved), b->budget);
	limits = (FwLimits){ .max_size = MIN(b->max_size, left), .memory = b->unpack_memory,
			     .deadline = b->deadline };
	r = fw_blob_open(b->roots, j->name, &limits, &blob, NULL);
	if (r < 0) {
		/* EFBIG: over what the cache may still take; ETIMEDOUT: no unpack memory in time */
		j->error = r == -EFBIG ? -ENOSPC : r == -ETIMEDOUT ? -ETIME : r;
		return;
	}
	if (blob->size == 0) {
		j->error = -ENODATA; /* never served either */
		return;
	}
	r = reserve(b, blob->size);
	if (r < 0) {
		j->error = r;
		return;
	}
	/* checked now, while the files and manifests are surely there: the check is kept */
	r = cached_blob_hold(j->name, blob, b->verifier, b->roots, b->deadline, &b->cancel,
			     &j->result);
	if (r < 0) {
		atomic_fetch_sub(&b->reserved, blob->size);
		j->error = r;
		return;
	}
	/* counted against PrewarmMemoryMax= from now on, no longer against UnpackMemoryMax= */
	fw_blob_unreserve(blob);
	TAKE_PTR(blob);
}

static void unlink_job(PrewarmBatch *b, PrewarmJob *j)
{
	for (PrewarmJob **p = &b->running; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			return;
		}
}

static bool strv_isempty(char **l)
{
	return !l || !*l;
}

static char *join_or_none(char **l)
{
	return l && *l ? strv_join(l, " ") : strdup("");
}

static void log_prewarm(Sleep *s, PrewarmBatch *b, bool timed_out)
{
	_cleanup_free_ char *cached = join_or_none(b->cached), *too_big = join_or_none(b->too_big),
			    *late = join_or_none(b->late), *failed = join_or_none(b->failed);
	usec_t duration = now_usec(CLOCK_MONOTONIC) - b->started;
	size_t n_missed = strv_length(b->too_big) + strv_length(b->late);
	LogEntry e = {};

	if (!cached || !too_big || !late || !failed) {
		log_oom();
		return;
	}
	log_entry_add(&e, "FW_PREWARM_TRIGGER=%s", b->for_sleep ? "sleep" : "request");
	log_entry_add(&e, "FW_PREWARM_NAMES=%s", cached);
	log_entry_add(&e, "FW_PREWARM_TOO_BIG=%s", too_big);
	log_entry_add(&e, "FW_PREWARM_LATE=%s", late);
	log_entry_add(&e, "FW_PREWARM_FAILED=%s", failed);
	timed_out = timed_out || !strv_isempty(b->late);
	log_entry_add(&e, "FW_PREWARM_TIMED_OUT=%d", timed_out);
	log_entry_add(&e, "FW_CACHE_ENTRIES=%u", s->cache->n_entries);
	log_entry_add(&e, "FW_CACHE_BYTES=%" PRIu64, s->cache->bytes);
	log_entry_add(&e, "FW_MEMORY_MAX=%" PRIu64, s->cache->max_bytes);
	log_entry_add(&e, "FW_DURATION_USEC=%" PRIu64, duration);
	log_entry_send(&e, n_missed > 0 ? LOG_WARNING : LOG_INFO, 0, FW_MESSAGE_PREWARMED,
		       "Prewarmed %u firmware images (%" PRIu64 " bytes) in %" PRIu64 " ms%s%s%s%s%s.",
		       s->cache->n_entries, s->cache->bytes, duration / USEC_PER_MSEC,
		       n_missed > 0 ? "; not held: " : "", too_big, *too_big && *late ? " " : "", late,
		       timed_out ? " (out of time)" : "");
}

/* Reports the batch and moves on; jobs still reading are cancelled. */
void prewarm_finish(Sleep *s, bool timed_out)
{
	PrewarmBatch *b = s->batch;

	s->batch = NULL;
	b->deadline_source = sd_event_source_disable_unref(b->deadline_source);
	atomic_store(&b->cancel, true);
	for (PrewarmJob *j = b->running; j; j = j->next)
		(void)strv_extend(&b->late, j->name);
	log_prewarm(s, b, timed_out);
	if (b->reply) {
		(void)sd_bus_reply_method_return(b->reply, "ut", (uint32_t)s->cache->n_entries,
						 (uint64_t)s->cache->bytes);
		b->reply = sd_bus_message_unref(b->reply);
	}
	sleep_prewarm_done(s, b->for_sleep, b->before, b->deadline);
	if (b->running)
		b->abandoned = true; /* the last job back frees it */
	else
		batch_free(b);
}

static void prewarm_job_done(SleepJob *job)
{
	PrewarmJob *j = (PrewarmJob *)job;
	PrewarmBatch *b = j->batch;
	Sleep *s;
	int r;

	unlink_job(b, j);
	if (b->abandoned) {
		prewarm_job_free(j);
		if (!b->running)
			batch_free(b);
		return;
	}
	s = b->sleep;
	r = j->error;
	if (r >= 0) {
		r = cache_add(s->cache, j->result);
		if (r >= 0 || r == -EEXIST)
			registry_set_size(s->registry, j->name, j->result->blob->size);
	}
	if (r >= 0 || r == -EEXIST)
		(void)strv_extend(&b->cached, j->name);
	else if (r == -ENOSPC)
		(void)strv_extend(&b->too_big, j->name);
	else if (r == -ETIME || r == -ECANCELED)
		(void)strv_extend(&b->late, j->name);
	else if (r == -EACCES) {
		log_warning("Firmware %s does not pass its manifest check, not held in memory; "
			    "a request for it is checked on disk.", j->name);
		(void)strv_extend(&b->failed, j->name);
	} else if (r == -ENOBUFS) {
		log_warning("Firmware %s needs more memory to unpack than UnpackMemoryMax= allows, "
			    "not held in memory.", j->name);
		(void)strv_extend(&b->failed, j->name);
	} else {
		log_debug_errno(r, "Prewarming %s failed: %m", j->name);
		(void)strv_extend(&b->failed, j->name);
	}
	prewarm_job_free(j);
	if (!b->running)
		prewarm_finish(s, false);
}

static int on_prewarm_deadline(sd_event_source *source, uint64_t usec, void *userdata)
{
	Sleep *s = userdata;

	log_warning("Prewarm not finished after %" PRIu64 " ms, letting the system go anyway.",
		    sleep_settings(s)->prewarm_timeout / USEC_PER_MSEC);
	prewarm_finish(s, true);
	return 0;
}

static int prewarm_submit(Sleep *s, PrewarmBatch *b, const char *name)
{
	PrewarmJob *j;
	int r;

	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->job = (SleepJob){ .run = prewarm_job_run, .done = prewarm_job_done };
	j->batch = b;
	j->name = strdup(name);
	if (!j->name) {
		free(j);
		return -ENOMEM;
	}
	r = sleep_job_submit(s, &j->job);
	if (r < 0) {
		prewarm_job_free(j);
		return r;
	}
	j->next = b->running;
	b->running = j;
	return 0;
}

/*
 * Queued by rank, so that when memory runs short what is surely needed is held: a module
 * may list hundreds of names (every chip it drives), a device asked for one of them.
 */
static void submit_all(Sleep *s, PrewarmBatch *b)
{
	for (unsigned pass = 0; pass < REGISTRY_RANKS; pass++)
		for (RegistryEntry *e = s->registry->entries; e; e = e->next) {
			if (registry_rank(e) != pass)
				continue;
			if (cache_contains(s->cache, e->name)) {
				(void)strv_extend(&b->cached, e->name);
				continue;
			}
			if (prewarm_submit(s, b, e->name) < 0) {
				(void)strv_extend(&b->failed, e->name);
				log_oom();
			}
		}
}

int prewarm_start(Sleep *s, bool for_sleep)
{
	const SleepSettings *set = sleep_settings(s);
	PrewarmBatch *b;
	int r;

	if (s->batch) {
		s->batch->for_sleep = s->batch->for_sleep || for_sleep;
		return 0;
	}
	if (s->module_timer)
		return 0; /* done already, handing off to the companion module */
	sleep_forget_gone_devices(s);
	s->grace_timer = sd_event_source_disable_unref(s->grace_timer);
	b = calloc(1, sizeof(*b));
	if (!b)
		return log_oom();
	s->batch = b;
	b->sleep = s;
	b->for_sleep = for_sleep;
	b->before = s->state;
	b->started = now_usec(CLOCK_MONOTONIC);
	b->deadline = b->started + set->prewarm_timeout;
	s->cache->max_bytes = set->prewarm_memory_max;
	b->budget = s->cache->max_bytes - MIN(s->cache->bytes, s->cache->max_bytes);
	b->max_size = s->manager->config->max_size;
	b->unpack_memory = s->manager->unpack_memory;
	b->verifier = s->manager->verifier;
	sleep_set_state(s, SLEEP_PREWARMING);

	r = manager_search_roots(s->manager, &b->roots);
	if (r >= 0)
		r = sd_event_add_time(s->manager->event, &b->deadline_source, CLOCK_MONOTONIC,
				      b->deadline, 0, on_prewarm_deadline, s);
	if (r < 0) {
		log_error_errno(r, "Failed to start prewarm: %m");
		prewarm_finish(s, false);
		return r;
	}
	submit_all(s, b);
	log_debug("Prewarming %zu firmware images (%" PRIu64 " bytes allowed, %" PRIu64 " ms).",
		  s->registry->n_entries - strv_length(b->cached), b->budget,
		  set->prewarm_timeout / USEC_PER_MSEC);
	if (!b->running)
		prewarm_finish(s, false);
	return 0;
}

int prewarm_on_demand(Sleep *s, sd_bus_message *message)
{
	int r;

	r = prewarm_start(s, false);
	if (r < 0)
		return r;
	if (!s->batch) /* nothing to read: done already */
		return sd_bus_reply_method_return(message, "ut", (uint32_t)s->cache->n_entries,
						  (uint64_t)s->cache->bytes);
	if (s->batch->reply)
		return sd_bus_reply_method_errorf(message, SD_BUS_ERROR_FAILED,
						  "A prewarm is already running.");
	s->batch->reply = sd_bus_message_ref(message);
	return 1;
}

/* The daemon stops: jobs still reading give up, the last one back frees the batch. */
void prewarm_abandon(Sleep *s)
{
	PrewarmBatch *b = TAKE_PTR(s->batch);

	if (!b)
		return;
	atomic_store(&b->cancel, true);
	b->abandoned = true;
	if (!b->running)
		batch_free(b);
}
