/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "fw-helperd-loader.h"
#include "util.h"

/*
 * Hooks for tests: inject short writes, EINTR, ENODEV... NULL means the real syscalls.
 * write sees every write, to loading as well as to data: tell them apart by the fd.
 */
typedef struct FwStreamOps {
	ssize_t (*write)(int fd, const void *buf, size_t len);
	ssize_t (*pread)(int fd, void *buf, size_t len, off_t offset);
	/* Try sendfile() from a file blob into data first (bypasses the two hooks above),
	 * falling back to pread()/write() when the kernel refuses it (EINVAL, ENOSYS).
	 * Works on 6.1 and 6.12; the daemon sets it unless an [Integrity] check observes.
	 * Ignored when observe is set: the data must pass through our hands to be seen. */
	bool sendfile;
	/* Sees every byte of the image in order as it goes into data, once (offset 0 again
	 * means the request was replaced and the stream starts over). */
	void (*observe)(void *userdata, uint64_t offset, const void *buf, size_t len);
	/* Called with the image complete, before the final "0": a negative errno aborts the
	 * request with "-1" instead of committing it, and is returned. */
	int (*precommit)(void *userdata);
	void *userdata;
} FwStreamOps;

/*
 * Answers the request whose sysfs directory is sysfs_dir (".../firmware/<name>"):
 * "1" to loading, the blob into data, "0" to loading, each write checked (the final "0"
 * too: a security module may reject the image there).
 *
 * Stops with -ETIME once deadline (CLOCK_MONOTONIC, USEC_INFINITY for none) passes, with
 * -ECANCELED when *cancel becomes true, with -ESTALE when the file shrinks, grows or
 * changes under us, with -EFBIG when the kernel takes no more data (ENOMEM from data: the
 * driver's own buffer is smaller than the blob). Any failure while the request still exists writes "-1" to loading
 * at once, so the kernel never sits out its timeout because of us. -ENODEV/-ENOENT mean
 * the request went away (timed out, device removed); if the directory exists again (a
 * new request under the same name), it starts again from "1", a bounded number of times.
 * Returns bytes written (>= 0) or a negative errno.
 */
int64_t fw_stream_serve(const char *sysfs_dir, const FwBlob *blob, usec_t deadline,
			const atomic_bool *cancel, const FwStreamOps *ops);

/* Writes "-1" to loading. Returns 0, or -ENODEV/-ENOENT when the request is gone. */
int fw_stream_abort(const char *sysfs_dir);
