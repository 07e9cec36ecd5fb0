/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "fw-helperd-cache.h"
#include "fw-helperd-loader.h"
#include "fw-helperd-verify.h"
#include "macro.h"
#include "util.h"

typedef enum RequestResult {
	REQUEST_PENDING,
	REQUEST_SERVED,		/* streamed and committed with "0" */
	REQUEST_MISSING,	/* no file in any root: "-1" */
	REQUEST_REJECTED,	/* hostile name: "-1" without looking */
	REQUEST_FAILED,		/* found but reading, decompressing or streaming failed: "-1" */
	REQUEST_TIMEOUT,	/* our deadline passed before the kernel's: "-1" */
	REQUEST_GONE,		/* the kernel dropped it under us (timed out, device removed) */
	REQUEST_CANCELLED,	/* the daemon stopped before it could answer: "-1" */
	REQUEST_UNVERIFIED,	/* refused by [Integrity] Policy=enforce: "-1" */
	_REQUEST_RESULT_MAX,
} RequestResult;

const char *request_result_to_string(RequestResult r);

/* Why a request failed or went away, where the result alone does not say (FW_REASON=). */
typedef enum RequestReason {
	REASON_NONE,
	REASON_DEVICE_REMOVED,		/* the requesting device went with the request */
	REASON_KERNEL_REFUSED_SIZE,	/* larger than the kernel takes for this request */
	REASON_UNPACK_MEMORY,		/* unpacking needs more than UnpackMemoryMax= */
	REASON_UNPACK_MEMORY_BUSY,	/* other unpacks held UnpackMemoryMax= until the deadline */
	_REQUEST_REASON_MAX,
} RequestReason;

/* The FW_REASON= value; NULL for REASON_NONE. */
const char *request_reason_to_string(RequestReason r);

/*
 * The largest image the event loop streams itself (request_run_inline()). Under qemu TCG,
 * the benchmark guest, sendfile() into `data` moves 200-400 MiB/s (bench/README.md,
 * throughput-64m), so 256 KiB holds the loop for about 1 ms, less than the two thread
 * wake-ups it saves cost there; through an [Integrity] hash (no sendfile(), ~60 MiB/s)
 * about 4 ms. Anything larger goes to a worker, so one big image never holds up the rest.
 */
#define REQUEST_INLINE_MAX (256U * 1024U)

/*
 * One pending firmware request: a directory /sys/.../firmware/<kobj>/ with `loading` and
 * `data`. Created and completed on the event loop. Most are answered on the loop too
 * (request_run_inline()); the others are run by request_run() on a worker thread, which
 * touches only the fields marked (worker).
 */
typedef struct Request {
	char *name;		/* FIRMWARE= */
	char *kobj;		/* directory name, unique among pending requests */
	char *sysfs_dir;	/* absolute path of the directory */
	char *devpath;		/* DEVPATH of the requesting device, or NULL */
	const char *origin;	/* "udev", "kernel" or "scan" (static) */
	/* The search roots, fixed when the request was taken: an opened set (a reference) whose
	 * paths they are, or when none could be opened the paths alone (request_roots()). */
	FwRootSet *root_set;
	char **roots;
	uint64_t max_size;
	FwMemory *unpack_memory;	/* the manager's budget for unpacking (outlives the request) */
	usec_t started;		/* CLOCK_MONOTONIC */
	usec_t deadline;	/* answer before this, CLOCK_MONOTONIC */
	atomic_bool cancel;	/* set by the loop: stop streaming, abort */
	atomic_bool running;	/* a worker has picked it up */
	bool timed_out;		/* the deadline fired (loop only) */
	ino_t ino;		/* of the directory when taken: tells a successor of the same name */
	bool asked_again;	/* a successor's add came while in flight (loop only) */
	sd_event_source *deadline_source;
	void *userdata;
	CachedBlob *cached;	/* set by the loop: serve this, touching no file system at all */
	Verifier *verifier;	/* set by the loop (the manager's, outlives the request), or NULL */
	bool deferred;		/* held back until the file systems are back (loop only) */
	usec_t deferred_since;	/* CLOCK_MONOTONIC */
	usec_t deferred_usec;	/* how long it was held back */
	sd_event_source *defer_source;	/* ends the wait in time for the deadline */

	/* (worker) */
	FwBlob *blob;		/* found by request_resolve() (maybe on the loop), until served */
	RequestResult result;
	int error;		/* negative errno behind a failure */
	RequestReason reason;
	int64_t bytes;
	char *path;		/* the file served */
	FwCompression compression;
	VerifyCheck verify;	/* the manifest check of the blob found */
	bool verified_held;	/* verify is the check made when cached was read (prewarm) */
	usec_t duration;

	struct Request *next;
} Request;

/* started: CLOCK_MONOTONIC, when the request was seen */
int request_new(const char *name, const char *kobj, const char *sysfs_dir, const char *devpath,
		usec_t started, Request **ret);
Request *request_free(Request *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Request *, request_free);

/*
 * On the loop: resolves r and answers it unless that might make the loop wait for more
 * than the disk (an image to unpack, which may wait for UnpackMemoryMax=) or stream more
 * than max bytes (REQUEST_INLINE_MAX; 0 answers only what streams nothing, such as a
 * missing name). True when r is complete; false when it is for request_run() on a worker,
 * which does not look it up again.
 */
bool request_run_inline(Request *r, size_t max);

/* Blocking, on a worker: resolves r unless done, unpacks, streams; sets the (worker) fields. */
void request_run(Request *r);

/*
 * Whether the device that asked went with the request directory sysfs_dir (unplugged while
 * the request was pending). The kernel puts a request right under its device when that has
 * a class, else under a "firmware" glue directory of it, which goes with its last request:
 * a request that simply ended leaves the device's directory in place.
 */
bool request_device_gone(const char *sysfs_dir);

/*
 * Whether the kernel is done with a finished request's directory: false for one that went
 * "gone" for want of a file (-ENOENT), which may be there yet, to be taken again by a scan.
 */
bool request_settled(const Request *r);

/* FW_VERIFIED_AT=: "prewarm" (the held copy's check), "serve", or NULL when not checked. */
const char *request_verified_at(const Request *r);
/* The roots r searches (root_set's, else roots). */
char *const *request_roots(const Request *r);

/* How a request that was not served ended, for the message of its journal entry. */
const char *request_outcome(const Request *r);
