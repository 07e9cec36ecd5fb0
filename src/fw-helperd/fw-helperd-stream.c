/* SPDX-License-Identifier: MIT */
/*
 * The kernel side of a fallback request: drivers/base/firmware_loader/sysfs.c (6.1, 6.12).
 *
 * What the kernel does, and what this file relies on:
 * - loading "1" discards any partial load and starts one; "0" maps the pages, runs
 *   security_kernel_post_load_data() (an LSM or IMA may refuse the image there: the write
 *   then fails with its error and the request is aborted); "-1" aborts. Once the request
 *   is done or aborted, further writes to loading are accepted and ignored, or fail with
 *   -ENODEV once the node is removed.
 * - data writes go through kernfs, which takes at most one page per write() (short
 *   writes are normal) and fails with -ENODEV once the request is done or its device
 *   node removed (timeout, device gone). The image size is the highest offset written.
 * - a data write fails with -ENOMEM when the kernel takes no more: a driver that loads into
 *   a buffer of its own (request_firmware_into_buf()) gets nothing past its size, the write
 *   that would cross it fails whole and the request stays open; or pages for a growing
 *   image could not be allocated (the request is then aborted). Either way the image is too
 *   large for this request: it is aborted with "-1" and reported as -EFBIG.
 * - "0" with nothing written completes with no data, and the driver then gets -ENOMEM
 *   from fw_load_sysfs_fallback(); the kernel's own loader refuses empty files too
 *   (kernel_read_file(): -EINVAL). So an empty blob is never committed: it is aborted
 *   with "-1" and reported as -ENODATA.
 * - A node that was removed is dead for good; a new request for the same name gets a new
 *   directory with a new inode (kernfs ids carry a generation), which is how a restart
 *   is told apart from a request that simply went away.
 *
 * The empty commit, the -ENODEV after "0", and a restart after a kernel timeout were
 * checked against test_firmware on Debian's 6.1 and 6.12 kernels.
 *
 * Files are read with pread() into a bounce buffer, never mmap()ed: a firmware file
 * truncated under us would raise SIGBUS in the daemon instead of an error here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fw-helperd-stream.h"
#include "log.h"
#include "macro.h"

/*
 * Bytes read from the file per pread(). The kernel takes one page per write() whatever
 * we hand it, so this only sets how often we read and check the deadline and cancel
 * flag. Measured, 64 MiB with one-page writes: on the host into /dev/null, 16 KiB 13.6
 * ms and 64 KiB..4 MiB 11.6-12.0 ms; into a real request (6.1 and 6.12 under TCG,
 * test_firmware) 4 KiB..1 MiB all 230-350 ms, the spread being noise: the kernel's
 * per-page work dominates. 128 KiB sits on the plateau, stays in L2 and bounds the
 * time between two deadline checks.
 */
#define STREAM_CHUNK_SIZE (128U * 1024U)

/* A new request under the same name while we stream is rare; a loop of them is a bug. */
#define STREAM_MAX_RESTARTS 2

typedef struct StreamRequest {
	int dir_fd;	/* tells a new request under the same name from the old one */
	int loading_fd;
	int data_fd;
} StreamRequest;

#define STREAM_REQUEST_NULL \
	((StreamRequest){ .dir_fd = -EBADF, .loading_fd = -EBADF, .data_fd = -EBADF })

static void stream_request_done(StreamRequest *r)
{
	r->dir_fd = safe_close(r->dir_fd);
	r->loading_fd = safe_close(r->loading_fd);
	r->data_fd = safe_close(r->data_fd);
}

static bool error_is_gone(int r)
{
	return r == -ENODEV || r == -ENOENT;
}

static ssize_t stream_write(const FwStreamOps *ops, int fd, const void *buf, size_t len)
{
	if (ops && ops->write)
		return ops->write(fd, buf, len);
	return write(fd, buf, len);
}

static ssize_t stream_pread(const FwStreamOps *ops, int fd, void *buf, size_t len, off_t offset)
{
	if (ops && ops->pread)
		return ops->pread(fd, buf, len, offset);
	return pread(fd, buf, len, offset);
}

/* Writes all of buf: kernfs takes one page per call, and a signal may interrupt us. */
static int write_full(const FwStreamOps *ops, int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = stream_write(ops, fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if (n == 0)	/* no progress would loop for ever */
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Not "Cannot allocate memory", which would blame the daemon: see the top of this file. */
static int data_write_error(int r)
{
	return r == -ENOMEM ? -EFBIG : r;
}

static int loading_write(const FwStreamOps *ops, const StreamRequest *req, const char *value)
{
	return write_full(ops, req->loading_fd, value, strlen(value));
}

static int stream_check_interrupt(usec_t deadline, const atomic_bool *cancel)
{
	if (cancel && atomic_load(cancel))
		return -ECANCELED;
	if (deadline != USEC_INFINITY && now_usec(CLOCK_MONOTONIC) >= deadline)
		return -ETIME;
	return 0;
}

/* Before each chunk but the first: the check before "1" was one write ago (a clock read). */
static int stream_check_chunk(uint64_t offset, usec_t deadline, const atomic_bool *cancel)
{
	return offset == 0 ? 0 : stream_check_interrupt(deadline, cancel);
}

static int stream_request_open(const char *sysfs_dir, StreamRequest *ret)
{
	_cleanup_close_ int dir_fd = -EBADF, loading_fd = -EBADF, data_fd = -EBADF;

	dir_fd = open(sysfs_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		return -errno;
	loading_fd = openat(dir_fd, "loading", O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (loading_fd < 0)
		return -errno;
	data_fd = openat(dir_fd, "data", O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (data_fd < 0)
		return -errno;

	*ret = (StreamRequest){
		.dir_fd = TAKE_FD(dir_fd),
		.loading_fd = TAKE_FD(loading_fd),
		.data_fd = TAKE_FD(data_fd),
	};
	return 0;
}

/*
 * Opens a request that replaced the one we had. device_add() creates the directory a
 * moment before its attributes: give loading and data a little time to appear.
 */
static int stream_request_open_new(const char *sysfs_dir, StreamRequest *ret)
{
	for (unsigned i = 0;; i++) {
		int r = stream_request_open(sysfs_dir, ret);

		if (r != -ENOENT || i >= 20)
			return r;
		(void)usleep(1000);
	}
}

/*
 * True when sysfs_dir exists again but is not the directory we had open (dir_fd): a new
 * request. Asked only once something failed; an open directory still stats when sysfs has
 * removed it.
 */
static bool stream_request_replaced(const char *sysfs_dir, int dir_fd)
{
	struct stat old, st;

	if (fstat(dir_fd, &old) < 0 || stat(sysfs_dir, &st) < 0)
		return false;
	return st.st_dev != old.st_dev || st.st_ino != old.st_ino;
}

static void stream_observe(const FwStreamOps *ops, uint64_t offset, const void *buf, size_t len)
{
	if (ops && ops->observe)
		ops->observe(ops->userdata, offset, buf, len);
}

static int stream_buffer(const FwStreamOps *ops, int data_fd, const FwBlob *blob,
			 usec_t deadline, const atomic_bool *cancel)
{
	const uint8_t *p = blob->data;
	size_t left = blob->size;

	while (left > 0) {
		size_t n = MIN(left, (size_t)STREAM_CHUNK_SIZE);
		int r;

		r = stream_check_chunk(blob->size - left, deadline, cancel);
		if (r < 0)
			return r;
		stream_observe(ops, blob->size - left, p, n);
		r = write_full(ops, data_fd, p, n);
		if (r < 0)
			return data_write_error(r);
		p += n;
		left -= n;
	}
	return 0;
}

/*
 * After the last chunk: the file must still have the size and mtime it had when opened.
 * A file that grew or was rewritten in place would otherwise go out as a mix of two
 * versions, or cut short.
 */
static int stream_check_unchanged(const FwBlob *blob)
{
	struct stat st;

	if (fstat(blob->fd, &st) < 0)
		return -errno;
	if (st.st_size != blob->st.st_size ||
	    st.st_mtim.tv_sec != blob->st.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != blob->st.st_mtim.tv_nsec)
		return -ESTALE;
	return 0;
}

/* Streams [*offset, blob->size) with pread()/write(); *offset tells how far it got. */
static int stream_file_read_write(const FwStreamOps *ops, int data_fd, const FwBlob *blob,
				  usec_t deadline, const atomic_bool *cancel, uint64_t *offset)
{
	_cleanup_free_ uint8_t *buf = NULL;

	buf = malloc(STREAM_CHUNK_SIZE);
	if (!buf)
		return -ENOMEM;

	while (*offset < blob->size) {
		size_t want = (size_t)MIN((uint64_t)STREAM_CHUNK_SIZE, blob->size - *offset);
		ssize_t n;
		int r;

		r = stream_check_chunk(*offset, deadline, cancel);
		if (r < 0)
			return r;
		n = stream_pread(ops, blob->fd, buf, want, (off_t)*offset);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if (n == 0)
			return -ESTALE;	/* it shrank: never hand the kernel a truncated image */
		stream_observe(ops, *offset, buf, (size_t)n);
		r = write_full(ops, data_fd, buf, (size_t)n);
		if (r < 0)
			return data_write_error(r);
		*offset += (uint64_t)n;
	}
	return 0;
}

/*
 * The same with sendfile(): no bounce buffer and no syscall per page; the kernel splices
 * page cache pages into kernfs (kernfs_file_fops has .splice_write =
 * iter_file_splice_write, which loops over kernfs' one-page writes). Checked against
 * real requests on 6.1 and 6.12 (64 MiB, byte-exact, under TCG): 190-210 ms against
 * 290-310 ms for read/write on 6.12, within noise on 6.1. The daemon's default
 * (FwStreamOps.sendfile); the hooks of the tests see the read/write path.
 */
static int stream_file_sendfile(int data_fd, const FwBlob *blob, usec_t deadline,
				const atomic_bool *cancel, uint64_t *offset)
{
	while (*offset < blob->size) {
		size_t want = (size_t)MIN((uint64_t)STREAM_CHUNK_SIZE * 8, blob->size - *offset);
		off_t off = (off_t)*offset;
		ssize_t n;
		int r;

		r = stream_check_chunk(*offset, deadline, cancel);
		if (r < 0)
			return r;
		n = sendfile(data_fd, blob->fd, &off, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return data_write_error(negative_errno());
		}
		if (n == 0)
			return -ESTALE;	/* it shrank */
		*offset += (uint64_t)n;
	}
	return 0;
}

static int stream_file(const FwStreamOps *ops, int data_fd, const FwBlob *blob,
		       usec_t deadline, const atomic_bool *cancel)
{
	uint64_t offset = 0;
	int r;

	if (ops && ops->sendfile && !ops->observe) {
		r = stream_file_sendfile(data_fd, blob, deadline, cancel, &offset);
		if ((r == -EINVAL || r == -ENOSYS) && offset == 0) {
			log_debug_errno(r, "sendfile() into 'data' refused, using read/write: %m");
			r = stream_file_read_write(ops, data_fd, blob, deadline, cancel, &offset);
		}
	} else
		r = stream_file_read_write(ops, data_fd, blob, deadline, cancel, &offset);
	if (r < 0)
		return r;
	return blob->held ? 0 : stream_check_unchanged(blob); /* sealed: it cannot change */
}

/* One attempt: "1", the blob, "0". On failure the request is aborted unless it is gone. */
static int64_t stream_serve_request(const StreamRequest *req, const char *sysfs_dir,
				    const FwBlob *blob, usec_t deadline, const atomic_bool *cancel,
				    const FwStreamOps *ops)
{
	int r;

	r = stream_check_interrupt(deadline, cancel);
	if (r < 0)
		goto abort;
	if (blob->size == 0) {
		r = -ENODATA;
		goto abort;
	}
	r = loading_write(ops, req, "1");
	if (r < 0)
		goto abort;
	if (blob->data)
		r = stream_buffer(ops, req->data_fd, blob, deadline, cancel);
	else
		r = stream_file(ops, req->data_fd, blob, deadline, cancel);
	if (r < 0)
		goto abort;
	if (ops && ops->precommit) {
		r = ops->precommit(ops->userdata);
		if (r < 0)
			goto abort;
	}

	/* No deadline check here: the image is complete, committing takes one write. */
	r = loading_write(ops, req, "0");
	if (r < 0)
		goto abort;	/* the kernel already aborted; "-1" is a harmless no-op */
	return (int64_t)blob->size;

abort:
	if (!error_is_gone(r)) {
		int q = loading_write(ops, req, "-1");

		if (q < 0 && !error_is_gone(q))
			log_debug_errno(q, "Failed to abort firmware request '%s': %m", sysfs_dir);
	}
	return r;
}

int64_t fw_stream_serve(const char *sysfs_dir, const FwBlob *blob, usec_t deadline,
			const atomic_bool *cancel, const FwStreamOps *ops)
{
	for (unsigned attempt = 0;; attempt++) {
		_cleanup_(stream_request_done) StreamRequest req = STREAM_REQUEST_NULL;
		int64_t n;
		int r;

		r = attempt == 0 ? stream_request_open(sysfs_dir, &req) :
				   stream_request_open_new(sysfs_dir, &req);
		if (r < 0)
			return r;
		n = stream_serve_request(&req, sysfs_dir, blob, deadline, cancel, ops);
		if (n >= 0 || !error_is_gone((int)n))
			return n;
		if (attempt >= STREAM_MAX_RESTARTS || !stream_request_replaced(sysfs_dir, req.dir_fd))
			return n;
		log_debug("Firmware request '%s' was replaced while streaming, starting again.",
			  sysfs_dir);
	}
}

int fw_stream_abort(const char *sysfs_dir)
{
	_cleanup_free_ char *path = NULL;

	path = path_join(sysfs_dir, "loading");
	if (!path)
		return -ENOMEM;
	return write_string_at(AT_FDCWD, path, "-1");
}
