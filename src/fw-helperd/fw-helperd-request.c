/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fw-helperd-request.h"
#include "fw-helperd-stream.h"

static const char *const result_table[_REQUEST_RESULT_MAX] = {
	[REQUEST_PENDING] = "pending",	 [REQUEST_SERVED] = "served",
	[REQUEST_MISSING] = "missing",	 [REQUEST_REJECTED] = "rejected",
	[REQUEST_FAILED] = "failed",	 [REQUEST_TIMEOUT] = "timeout",
	[REQUEST_GONE] = "gone",	 [REQUEST_CANCELLED] = "cancelled",
	[REQUEST_UNVERIFIED] = "unverified",
};

const char *request_result_to_string(RequestResult r)
{
	return r >= 0 && r < _REQUEST_RESULT_MAX ? result_table[r] : NULL;
}

/* Nothing to see on the way: the kernel copies from the page cache itself. */
static const FwStreamOps plain_ops = { .sendfile = true };

int request_new(const char *name, const char *kobj, const char *sysfs_dir, const char *devpath,
		usec_t started, Request **ret)
{
	_cleanup_(request_freep) Request *r = NULL;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->name = strdup(name);
	r->kobj = strdup(kobj);
	r->sysfs_dir = strdup(sysfs_dir);
	if (!r->name || !r->kobj || !r->sysfs_dir)
		return -ENOMEM;
	if (devpath) {
		r->devpath = strdup(devpath);
		if (!r->devpath)
			return -ENOMEM;
	}
	r->deadline = USEC_INFINITY;
	r->started = started;
	*ret = TAKE_PTR(r);
	return 0;
}

Request *request_free(Request *r)
{
	if (!r)
		return NULL;
	sd_event_source_disable_unref(r->deadline_source);
	sd_event_source_disable_unref(r->defer_source);
	cached_blob_unref(r->cached);
	fw_blob_free(r->blob);
	free(r->name);
	free(r->kobj);
	free(r->sysfs_dir);
	free(r->devpath);
	free(r->path);
	strv_free(r->roots);
	fw_root_set_unref(r->root_set);
	verify_check_done(&r->verify);
	free(r);
	return NULL;
}

static const char *const reason_table[_REQUEST_REASON_MAX] = {
	[REASON_DEVICE_REMOVED] = "device-removed",
	[REASON_KERNEL_REFUSED_SIZE] = "kernel-refused-size",
	[REASON_UNPACK_MEMORY] = "unpack-memory",
	[REASON_UNPACK_MEMORY_BUSY] = "unpack-memory-busy",
};

const char *request_reason_to_string(RequestReason r)
{
	return r > REASON_NONE && r < _REQUEST_REASON_MAX ? reason_table[r] : NULL;
}

/* Strips the last component of path, in place; false when there is none. */
static bool strip_last(char *path)
{
	char *slash = strrchr(path, '/');

	if (!slash || slash == path)
		return false;
	*slash = 0;
	return true;
}

static bool path_gone(const char *path)
{
	return access(path, F_OK) < 0 && errno == ENOENT;
}

bool request_device_gone(const char *sysfs_dir)
{
	_cleanup_free_ char *parent = strdup(sysfs_dir);
	const char *base;

	if (!parent || !strip_last(parent) || !path_gone(parent))
		return false;
	base = strrchr(parent, '/');
	if (!base || strcmp(base + 1, "firmware") != 0)
		return true;
	/* a glue directory, removed with its last request too: the device is one further up */
	return strip_last(parent) && path_gone(parent);
}

static RequestResult result_from_error(Request *r, int error)
{
	if (error == -ENODEV || error == -ENOENT) {
		if (request_device_gone(r->sysfs_dir))
			r->reason = REASON_DEVICE_REMOVED;
		return REQUEST_GONE;
	}
	if (error == -ETIME)
		return REQUEST_TIMEOUT;
	if (error == -ECANCELED)
		return REQUEST_CANCELLED;
	if (error == -EFBIG)
		r->reason = REASON_KERNEL_REFUSED_SIZE; /* from fw_stream_serve(): see there */
	return REQUEST_FAILED;
}

const char *request_outcome(const Request *r)
{
	switch (r->result) {
	case REQUEST_GONE:
		return r->reason == REASON_DEVICE_REMOVED ? "request went away with its device" :
							    "request went away";
	case REQUEST_TIMEOUT:
		return "not answered in time, aborted";
	case REQUEST_CANCELLED:
		return "aborted while stopping";
	default:
		if (r->reason == REASON_KERNEL_REFUSED_SIZE)
			return "refused by the kernel, larger than it takes for this request, answered -1";
		if (r->reason == REASON_UNPACK_MEMORY)
			return "needs more memory to unpack than UnpackMemoryMax= allows, answered -1";
		if (r->reason == REASON_UNPACK_MEMORY_BUSY)
			return "no memory to unpack it came free in time, answered -1";
		return "could not be served, answered -1";
	}
}

/* "-1"; a request that cannot be told is gone, and its error is why it cannot. */
static void abort_or_gone(Request *r)
{
	int q = fw_stream_abort(r->sysfs_dir);

	if (q < 0) {
		r->result = REQUEST_GONE;
		r->error = q;
		if (request_device_gone(r->sysfs_dir))
			r->reason = REASON_DEVICE_REMOVED;
	}
}

bool request_settled(const Request *r)
{
	/*
	 * -ENODEV: the kernel is done with it (timed out, aborted), the directory only lingers
	 * until it is deleted. -ENOENT: a file of it is missing, which is also how a request
	 * looks while the kernel still adds its attributes: not done with at all.
	 */
	return !(r->result == REQUEST_GONE && r->error == -ENOENT);
}

char *const *request_roots(const Request *r)
{
	return r->root_set ? fw_root_set_paths(r->root_set) : r->roots;
}

const char *request_verified_at(const Request *r)
{
	if (r->verify.status == VERIFY_SKIPPED)
		return NULL;
	return r->verified_held ? "prewarm" : "serve";
}

/*
 * A copy held in memory was checked when it was read, against the manifests as they were
 * then: that check stands, so answering it opens and stats nothing (after resume the file
 * systems may not be back, or the files may have changed meanwhile). Unless a Reload came
 * in between; anything else is checked now.
 */
static int request_verify(Request *r, const FwBlob *serve)
{
	int e;

	if (!r->cached || !cached_blob_checked(r->cached, r->verifier))
		return verify_begin(r->verifier, request_roots(r), r->name, serve, &r->verify);
	e = verify_check_copy(&r->cached->verify, &r->verify);
	if (e < 0)
		return e;
	r->verified_held = true;
	return verify_check_refused(&r->verify) ? -EACCES : 0;
}

/*
 * Looks r's name up (unless a held copy or an earlier call has it) and opens it, a
 * compressed file still packed; false when r is answered already: "-1" for a missing name
 * or a failed lookup, or nothing for a request that went away. Sets the (worker) fields.
 */
static bool request_resolve(Request *r)
{
	int e;

	if (r->cached || r->blob)
		return true; /* held in memory, or found on the loop before it was queued */
	e = r->root_set ? fw_blob_find_in(r->root_set, r->name, r->max_size, &r->blob,
					  &r->path) :
			  fw_blob_find(r->roots, r->name, r->max_size, &r->blob, &r->path);
	if (e < 0) {
		r->error = e;
		r->result = e == -ENOENT ? REQUEST_MISSING : REQUEST_FAILED;
		abort_or_gone(r);
		return false;
	}
	return true;
}

/* What is to be served: the held copy (the loop's reference keeps it alive until
 * request_free()), or what request_resolve() found. */
static const FwBlob *request_blob(const Request *r)
{
	return r->cached ? r->cached->blob : r->blob;
}

/* Unpacks what is still packed; on failure the kernel is told "-1" at once. */
static int request_unpack(Request *r)
{
	FwLimits limits = { .max_size = r->max_size, .memory = r->unpack_memory,
			    .deadline = r->deadline };
	int e;

	if (r->cached)
		return 0;
	e = fw_blob_unpack(r->blob, &limits);
	if (e < 0) {
		r->error = e;
		r->result = REQUEST_FAILED;
		if (e == -ENOBUFS)
			r->reason = REASON_UNPACK_MEMORY;
		else if (e == -ETIMEDOUT)
			r->reason = REASON_UNPACK_MEMORY_BUSY;
		r->path = strdup(r->blob->path);
		abort_or_gone(r);
	}
	return e;
}

/* Streams what request_resolve() found. */
static void request_serve(Request *r)
{
	const FwBlob *serve;
	int64_t n;
	int e;

	if (request_unpack(r) < 0)
		return;
	serve = request_blob(r);
	r->path = strdup(serve->path);
	r->compression = serve->compression;

	/* under enforce, nothing unverified reaches the kernel: refused before "1" or "0" */
	e = request_verify(r, serve);
	if (e < 0) {
		r->error = e;
		r->result = e == -EACCES ? REQUEST_UNVERIFIED : REQUEST_FAILED;
		abort_or_gone(r);
		return;
	}
	n = fw_stream_serve(r->sysfs_dir, serve, r->deadline, &r->cancel,
			    verify_stream_ops(&r->verify) ?: &plain_ops);
	if (n < 0) {
		r->error = (int)n;
		r->result = verify_check_refused(&r->verify) ? REQUEST_UNVERIFIED :
							       result_from_error(r, (int)n);
		return;
	}
	r->bytes = n;
	r->result = REQUEST_SERVED;
}

/* Whether what was found is at most max bytes to stream, waiting for nothing but the disk. */
static bool request_small(const Request *r, size_t max)
{
	const FwBlob *b = request_blob(r);

	return !fw_blob_packed(b) && b->size <= max;
}

/* The blob goes at once: an unpacked image gives its share of UnpackMemoryMax= back. */
static void request_finish(Request *r)
{
	r->blob = fw_blob_free(r->blob);
	r->duration = now_usec(CLOCK_MONOTONIC) - r->started;
}

/*
 * After a wait in the queue: gone meanwhile (device unplugged, kernel timeout), there is no
 * file to look up. One answered on the loop was seen (manager_submit()) a moment ago; if it
 * went since, the stream or the "-1" finds that out.
 */
static bool request_still_there(Request *r)
{
	if (access(r->sysfs_dir, F_OK) >= 0)
		return true;
	r->error = -errno;
	r->result = result_from_error(r, r->error);
	return false;
}

bool request_run_inline(Request *r, size_t max)
{
	if (request_resolve(r)) {
		if (!request_small(r, max))
			return false;
		request_serve(r);
	}
	request_finish(r);
	return true;
}

void request_run(Request *r)
{
	r->running = true;
	if (r->cancel) {
		/* the deadline passed or the daemon stops while it was queued */
		(void)fw_stream_abort(r->sysfs_dir);
		r->error = -ECANCELED;
		r->result = REQUEST_CANCELLED;
	} else if (request_still_there(r) && request_resolve(r))
		request_serve(r);
	request_finish(r);
}
