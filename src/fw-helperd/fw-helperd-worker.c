/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>

#include "fw-helperd-worker.h"
#include "log.h"

typedef struct Job {
	worker_run_t run;
	void *userdata;
	struct Job *next;
} Job;

/* A singly linked FIFO; head is taken first. */
typedef struct JobQueue {
	Job *head, *tail;
} JobQueue;

struct WorkerPool {
	sd_event_source *done_source;
	worker_done_t done;
	int efd;

	pthread_mutex_t lock;
	pthread_cond_t wake;
	JobQueue todo, finished;
	unsigned n_pending;	/* submitted, done() not yet called */
	bool quit;

	pthread_t *threads;
	unsigned n_threads;
};

static void queue_push(JobQueue *q, Job *j)
{
	j->next = NULL;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
}

static Job *queue_pop(JobQueue *q)
{
	Job *j = q->head;

	if (j) {
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
	}
	return j;
}

static void *worker_thread(void *arg)
{
	WorkerPool *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		Job *j;

		while (!p->todo.head && !p->quit)
			pthread_cond_wait(&p->wake, &p->lock);
		j = queue_pop(&p->todo);
		if (!j)
			break; /* quit and drained */
		pthread_mutex_unlock(&p->lock);

		j->run(j->userdata);

		pthread_mutex_lock(&p->lock);
		queue_push(&p->finished, j);
		eventfd_write(p->efd, 1);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* On the loop: hands every finished job to done(). */
static void drain_finished(WorkerPool *p)
{
	JobQueue finished;

	pthread_mutex_lock(&p->lock);
	finished = p->finished;
	p->finished = (JobQueue){};
	pthread_mutex_unlock(&p->lock);

	for (Job *j = finished.head, *next; j; j = next) {
		next = j->next;
		p->n_pending--;
		p->done(j->userdata);
		free(j);
	}
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	WorkerPool *p = userdata;
	eventfd_t v;

	(void)eventfd_read(p->efd, &v);
	drain_finished(p);
	return 0;
}

int worker_pool_new(sd_event *event, unsigned n_threads, worker_done_t done, WorkerPool **ret)
{
	_cleanup_(worker_pool_freep) WorkerPool *p = NULL;
	int r;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->done = done;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->efd < 0)
		return -errno;
	r = sd_event_add_io(event, &p->done_source, p->efd, EPOLLIN, on_done, p);
	if (r < 0)
		return r;
	(void)sd_event_source_set_description(p->done_source, "worker-done");

	p->threads = calloc(n_threads, sizeof(pthread_t));
	if (!p->threads)
		return -ENOMEM;
	for (; p->n_threads < n_threads; p->n_threads++) {
		r = pthread_create(&p->threads[p->n_threads], NULL, worker_thread, p);
		if (r != 0)
			return -r;
	}
	*ret = TAKE_PTR(p);
	return 0;
}

WorkerPool *worker_pool_free(WorkerPool *p)
{
	if (!p)
		return NULL;

	pthread_mutex_lock(&p->lock);
	p->quit = true;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->n_threads; i++)
		pthread_join(p->threads[i], NULL);
	drain_finished(p);

	sd_event_source_disable_unref(p->done_source);
	safe_close(p->efd);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->wake);
	free(p->threads);
	free(p);
	return NULL;
}

int worker_pool_submit(WorkerPool *p, worker_run_t run, void *userdata)
{
	Job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->run = run;
	j->userdata = userdata;

	pthread_mutex_lock(&p->lock);
	queue_push(&p->todo, j);
	p->n_pending++;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

unsigned worker_pool_pending(WorkerPool *p)
{
	return p->n_pending;
}
