/* SPDX-License-Identifier: MIT */
#pragma once

#include <systemd/sd-event.h>

#include "macro.h"

/*
 * A bounded pool of threads for the blocking part of a request (reading, decompressing,
 * streaming into sysfs), so one huge or slow blob never blocks the event loop or the other
 * requests. Results come back to the loop through an eventfd: done() always runs on the
 * loop's thread. Requests that cannot make the loop wait long (a missing name, a plain
 * file or a held copy of at most REQUEST_INLINE_MAX) come here only when others came
 * with them (RequestInfo.crowded); alone, the loop answers them itself
 * (fw-helperd-request.h), which saves the two wake-ups of a hand-off.
 */
typedef struct WorkerPool WorkerPool;

typedef void (*worker_run_t)(void *userdata);
typedef void (*worker_done_t)(void *userdata);

int worker_pool_new(sd_event *event, unsigned n_threads, worker_done_t done, WorkerPool **ret);
/* Joins every thread after the queue drains; queued jobs still run and complete. */
WorkerPool *worker_pool_free(WorkerPool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(WorkerPool *, worker_pool_free);

int worker_pool_submit(WorkerPool *p, worker_run_t run, void *userdata);
unsigned worker_pool_pending(WorkerPool *p);
