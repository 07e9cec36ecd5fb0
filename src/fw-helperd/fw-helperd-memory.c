/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "fw-helperd-memory.h"

struct FwMemory {
	pthread_mutex_t lock;
	pthread_cond_t released;	/* on CLOCK_MONOTONIC, like every deadline here */
	size_t limit;
	size_t used;
	size_t peak;
};

int fw_memory_new(size_t limit, FwMemory **ret)
{
	pthread_condattr_t attr;
	FwMemory *m;
	int r;

	m = calloc(1, sizeof(FwMemory));
	if (!m)
		return -ENOMEM;
	m->limit = limit;
	r = pthread_condattr_init(&attr);
	if (r == 0)
		r = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (r == 0)
		r = pthread_cond_init(&m->released, &attr);
	pthread_condattr_destroy(&attr);
	if (r != 0) {
		free(m);
		return -r;
	}
	pthread_mutex_init(&m->lock, NULL);
	*ret = m;
	return 0;
}

FwMemory *fw_memory_free(FwMemory *m)
{
	if (!m)
		return NULL;
	pthread_cond_destroy(&m->released);
	pthread_mutex_destroy(&m->lock);
	free(m);
	return NULL;
}

static struct timespec timespec_from_usec(usec_t u)
{
	return (struct timespec){ .tv_sec = (time_t)(u / USEC_PER_SEC),
				  .tv_nsec = (long)(u % USEC_PER_SEC) * 1000 };
}

int fw_memory_reserve(FwMemory *m, size_t n, usec_t deadline)
{
	struct timespec until = timespec_from_usec(deadline);
	int r = 0;

	pthread_mutex_lock(&m->lock);
	for (;;) {
		if (n > m->limit) {
			r = -EFBIG;
			break;
		}
		if (m->used <= m->limit - n) {
			m->used += n;
			if (m->used > m->peak)
				m->peak = m->used;
			break;
		}
		if (deadline == USEC_INFINITY)
			r = -pthread_cond_wait(&m->released, &m->lock);
		else
			r = -pthread_cond_timedwait(&m->released, &m->lock, &until);
		if (r == -ETIMEDOUT)
			break;
		r = 0;
	}
	pthread_mutex_unlock(&m->lock);
	return r;
}

void fw_memory_release(FwMemory *m, size_t n)
{
	if (n == 0)
		return;
	pthread_mutex_lock(&m->lock);
	m->used -= MIN(n, m->used);
	pthread_cond_broadcast(&m->released);
	pthread_mutex_unlock(&m->lock);
}

void fw_memory_set_limit(FwMemory *m, size_t limit)
{
	pthread_mutex_lock(&m->lock);
	m->limit = limit;
	/* a higher limit may let a waiter in; a lower one makes it give up with -EFBIG */
	pthread_cond_broadcast(&m->released);
	pthread_mutex_unlock(&m->lock);
}

/* One of m's counters, read under its lock (another thread may be changing it). */
static size_t read_locked(FwMemory *m, const size_t *field)
{
	size_t n;

	pthread_mutex_lock(&m->lock);
	n = *field;
	pthread_mutex_unlock(&m->lock);
	return n;
}

size_t fw_memory_limit(FwMemory *m)
{
	return read_locked(m, &m->limit);
}

size_t fw_memory_used(FwMemory *m)
{
	return read_locked(m, &m->used);
}

size_t fw_memory_peak(FwMemory *m)
{
	return read_locked(m, &m->peak);
}
