/* SPDX-License-Identifier: MIT */
/*
 * fw_stream_serve() against a fixture "sysfs" directory: loading and data are regular
 * files in a mkdtemp() tree, and the FwStreamOps hooks play the kernel's part (one page
 * per write, EINTR, -ENODEV once the request is gone, an LSM refusing the final "0").
 * Every value written to a loading file is logged, so each test checks what the kernel
 * would have been told, in order.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fw-helperd-cache.h"
#include "fw-helperd-stream.h"
#include "macro.h"
#include "util.h"

#define CHECK(expr)                                                                    \
	do {                                                                           \
		if (!(expr)) {                                                         \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#expr);                                                \
			return -1;                                                     \
		}                                                                      \
	} while (0)

#define CHECK_LOG(expected)                                                            \
	do {                                                                           \
		if (strcmp(knobs.log, (expected)) != 0) {                              \
			fprintf(stderr, "%s:%d: loading log is '%s', expected '%s'\n", \
				__FILE__, __LINE__, knobs.log, (expected));            \
			return -1;                                                     \
		}                                                                      \
	} while (0)

#define PAGE 4096U
#define BLOB_SIZE (1024U * 1024U + 123U)	/* several chunks, not page aligned */
#define MAX_REQUESTS 8

/* The fixture, and what the hooks should do to it. Hooks have no user pointer. */
static struct {
	char root[PATH_MAX];
	char dir[PATH_MAX];			/* the request: root/firmware/test.bin */
	ino_t loading_inos[MAX_REQUESTS];	/* every loading file created, for the log */
	size_t n_requests;
	char log[256];				/* values written to loading, space separated */

	size_t page_limit;			/* write at most this per call (0: no limit) */
	unsigned eintr_every;			/* every Nth write/pread fails with EINTR */
	unsigned write_calls, pread_calls;
	uint64_t data_written;			/* into the current request's data */
	uint64_t gone_after;			/* then the request goes away (0: never) */
	uint64_t buffer_size;			/* the driver's own buffer: no data past it */
	unsigned recreate;			/* ...and comes back this many times */
	const char *fail_loading;		/* this value written to loading fails */
	void (*before_pread)(int fd, unsigned call);
	atomic_bool cancel;
} knobs;

static uint8_t pattern_byte(uint64_t i)
{
	/* no period of a page or a chunk, so misplaced data shows */
	return (uint8_t)((i * 2654435761U) >> 13);
}

static int write_file(const char *path, const void *data, size_t len)
{
	_cleanup_close_ int fd = -EBADF;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		return -errno;
	return 0;
}

static int read_file(const char *path, uint8_t **ret, size_t *ret_size)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ uint8_t *buf = NULL;
	struct stat st;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	if (read(fd, buf, (size_t)st.st_size) != st.st_size)
		return -EIO;
	*ret = TAKE_PTR(buf);
	*ret_size = (size_t)st.st_size;
	return 0;
}

/* Creates dir with empty loading and data files, as the kernel's device_add() would. */
static int make_request_dir(const char *dir)
{
	_cleanup_free_ char *loading = NULL, *data = NULL;
	struct stat st;

	if (mkdir(dir, 0755) < 0)
		return -errno;
	loading = path_join(dir, "loading");
	data = path_join(dir, "data");
	if (!loading || !data)
		return -ENOMEM;
	if (write_file(loading, "", 0) < 0 || write_file(data, "", 0) < 0)
		return -EIO;
	if (stat(loading, &st) < 0 || knobs.n_requests >= MAX_REQUESTS)
		return -EIO;
	knobs.loading_inos[knobs.n_requests++] = st.st_ino;
	return 0;
}

static int fixture_setup(void)
{
	char *firmware;

	memset(&knobs, 0, sizeof(knobs));
	strcpy(knobs.root, "/tmp/test-stream-XXXXXX");
	if (!mkdtemp(knobs.root))
		return -errno;
	firmware = path_join(knobs.root, "firmware");
	if (!firmware || mkdir(firmware, 0755) < 0)
		return -EIO;
	snprintf(knobs.dir, sizeof(knobs.dir), "%s/test.bin", firmware);
	free(firmware);
	return make_request_dir(knobs.dir);
}

static void fixture_teardown(void)
{
	char cmd[PATH_MAX + 16];

	if (knobs.root[0] && startswith(knobs.root, "/tmp/test-stream-")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", knobs.root);
		(void)!system(cmd);
	}
}

/* The request goes away, as on a kernel timeout; with recreate left, a new one appears. */
static void request_vanish(void)
{
	char gone[PATH_MAX + 32], fresh[PATH_MAX + 8];

	snprintf(gone, sizeof(gone), "%s/gone-%zu", knobs.root, knobs.n_requests);
	(void)rename(knobs.dir, gone);
	knobs.data_written = 0;
	if (knobs.recreate == 0)
		return;
	knobs.recreate--;
	/* made beside the old one first, so it cannot reuse the old inode */
	snprintf(fresh, sizeof(fresh), "%s.new", knobs.dir);
	if (make_request_dir(fresh) == 0)
		(void)rename(fresh, knobs.dir);
}

static bool fd_is_loading(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return false;
	for (size_t i = 0; i < knobs.n_requests; i++)
		if (knobs.loading_inos[i] == st.st_ino)
			return true;
	return false;
}

static void log_loading(const char *value, bool failed)
{
	size_t l = strlen(knobs.log);

	snprintf(knobs.log + l, sizeof(knobs.log) - l, "%s%s%s", l ? " " : "", failed ? "!" : "",
		 value);
}

static ssize_t hook_write(int fd, const void *buf, size_t len)
{
	knobs.write_calls++;
	if (knobs.eintr_every && knobs.write_calls % knobs.eintr_every == 0) {
		errno = EINTR;
		return -1;
	}

	if (fd_is_loading(fd)) {
		char value[16] = {};
		ssize_t n;

		memcpy(value, buf, MIN(len, sizeof(value) - 1));
		if (knobs.fail_loading && strcmp(value, knobs.fail_loading) == 0) {
			log_loading(value, true);
			errno = EACCES;	/* what an LSM refusing the image gives */
			return -1;
		}
		n = write(fd, buf, len);
		if (n == (ssize_t)len)
			log_loading(value, false);
		return n;
	}

	if (knobs.gone_after && knobs.data_written >= knobs.gone_after) {
		request_vanish();
		errno = ENODEV;
		return -1;
	}
	if (knobs.page_limit)
		len = MIN(len, knobs.page_limit);
	if (knobs.buffer_size && knobs.data_written + len > knobs.buffer_size) {
		errno = ENOMEM;	/* sysfs.c firmware_data_write(), request still open */
		return -1;
	}
	ssize_t n = write(fd, buf, len);
	if (n > 0)
		knobs.data_written += (uint64_t)n;
	return n;
}

static ssize_t hook_pread(int fd, void *buf, size_t len, off_t offset)
{
	knobs.pread_calls++;
	if (knobs.eintr_every && knobs.pread_calls % knobs.eintr_every == 0) {
		errno = EINTR;
		return -1;
	}
	if (knobs.before_pread)
		knobs.before_pread(fd, knobs.pread_calls);
	return pread(fd, buf, len, offset);
}

static const FwStreamOps hook_ops = { .write = hook_write, .pread = hook_pread };

/* A blob backed by a file in the fixture, as fw_blob_open() returns it. */
static int blob_file(size_t size, FwBlob *ret)
{
	_cleanup_free_ uint8_t *buf = malloc(size + 1);
	char path[PATH_MAX + 16];
	int fd;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < size; i++)
		buf[i] = pattern_byte(i);
	snprintf(path, sizeof(path), "%s/blob.bin", knobs.root);
	if (write_file(path, buf, size) < 0)
		return -EIO;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*ret = (FwBlob){ .path = NULL, .fd = fd, .size = size };
	if (fstat(fd, &ret->st) < 0)
		return -errno;
	return 0;
}

static int blob_buffer(size_t size, FwBlob *ret)
{
	uint8_t *buf = malloc(size + 1);

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < size; i++)
		buf[i] = pattern_byte(i);
	*ret = (FwBlob){ .fd = -EBADF, .data = buf, .size = size,
			 .compression = FW_COMPRESSION_XZ };
	return 0;
}

static void blob_done(FwBlob *b)
{
	safe_close(b->fd);
	free(b->data);
}

/* The current request's data holds exactly the first size pattern bytes. */
static bool data_matches(const char *dir, size_t size)
{
	_cleanup_free_ char *path = path_join(dir, "data");
	_cleanup_free_ uint8_t *buf = NULL;
	size_t n;

	if (!path || read_file(path, &buf, &n) < 0 || n != size)
		return false;
	for (size_t i = 0; i < n; i++)
		if (buf[i] != pattern_byte(i))
			return false;
	return true;
}

static size_t data_size(const char *dir)
{
	_cleanup_free_ char *path = path_join(dir, "data");
	struct stat st;

	return path && stat(path, &st) == 0 ? (size_t)st.st_size : SIZE_MAX;
}

static int test_page_limited_writes(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	knobs.page_limit = PAGE;
	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &hook_ops) == BLOB_SIZE);
	CHECK(data_matches(knobs.dir, BLOB_SIZE));
	CHECK_LOG("1 0");
	/* one page per call, so at least this many writes reached data */
	CHECK(knobs.write_calls >= BLOB_SIZE / PAGE);
	return 0;
}

static int test_real_syscalls(void)
{
	_cleanup_(blob_done) FwBlob blob = {};
	_cleanup_free_ char *loading = path_join(knobs.dir, "loading");
	_cleanup_free_ uint8_t *buf = NULL;
	size_t n;

	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, NULL) == BLOB_SIZE);
	CHECK(data_matches(knobs.dir, BLOB_SIZE));
	CHECK(read_file(loading, &buf, &n) == 0);
	CHECK(n == 2 && memcmp(buf, "10", 2) == 0);
	return 0;
}

static int test_eintr(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	knobs.page_limit = PAGE;
	knobs.eintr_every = 3;
	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &hook_ops) == BLOB_SIZE);
	CHECK(data_matches(knobs.dir, BLOB_SIZE));
	CHECK_LOG("1 0");
	return 0;
}

static int test_buffer_blob(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	knobs.page_limit = PAGE;
	CHECK(blob_buffer(BLOB_SIZE, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &hook_ops) == BLOB_SIZE);
	CHECK(data_matches(knobs.dir, BLOB_SIZE));
	CHECK_LOG("1 0");
	return 0;
}

/*
 * A blob held in a sealed memfd (prewarm) goes out through sendfile() like a file, and
 * stays what was held when the file it came from changes afterwards.
 */
static int test_held_blob(void)
{
	_cleanup_(blob_done) FwBlob blob = {};
	static const FwStreamOps sendfile_ops = { .sendfile = true };
	char path[PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/blob.bin", knobs.root);
	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	/* a file's times are not the memfd's: only "held" tells the stream not to compare */
	CHECK(futimens(blob.fd, (struct timespec[2]){ { 0, UTIME_OMIT }, { 946684800, 0 } }) == 0);
	CHECK(fstat(blob.fd, &blob.st) == 0);
	CHECK(fw_blob_read_into_memory(&blob, USEC_INFINITY, NULL) == 0 && blob.held);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	CHECK(fd >= 0 && write(fd, "changed", 7) == 7);
	safe_close(fd);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &sendfile_ops) == BLOB_SIZE);
	CHECK(data_matches(knobs.dir, BLOB_SIZE));
	/* the read/write path too, as an [Integrity] check that sees the bytes takes it */
	knobs.page_limit = PAGE;
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &hook_ops) == BLOB_SIZE);
	CHECK(data_matches(knobs.dir, BLOB_SIZE));
	CHECK(knobs.pread_calls > 0);
	return 0;
}

static int test_empty_blob(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	CHECK(blob_file(0, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &hook_ops) == -ENODATA);
	CHECK_LOG("-1");
	return 0;
}

static int test_gone_midstream(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	knobs.page_limit = PAGE;
	knobs.gone_after = 300000;
	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &hook_ops) == -ENODEV);
	CHECK_LOG("1");		/* no "-1" into a request that is gone, no "0" ever */
	CHECK(access(knobs.dir, F_OK) < 0);
	return 0;
}

/*
 * A driver loading into a buffer of its own (request_firmware_into_buf()): the write that would
 * cross its end fails whole with ENOMEM and the request stays open. It must be aborted at once,
 * never committed with what fit, and reported as too large rather than as out of memory.
 */
static int test_kernel_buffer_too_small(void)
{
	_cleanup_(blob_done) FwBlob file = {}, buffer = {};

	knobs.page_limit = PAGE;
	knobs.buffer_size = 3 * PAGE + 100;
	CHECK(blob_file(BLOB_SIZE, &file) == 0);
	CHECK(fw_stream_serve(knobs.dir, &file, USEC_INFINITY, NULL, &hook_ops) == -EFBIG);
	CHECK_LOG("1 -1");
	CHECK(data_size(knobs.dir) == 3 * PAGE);

	knobs.data_written = 0;
	CHECK(blob_buffer(BLOB_SIZE, &buffer) == 0);
	CHECK(fw_stream_serve(knobs.dir, &buffer, USEC_INFINITY, NULL, &hook_ops) == -EFBIG);
	CHECK_LOG("1 -1 1 -1");
	return 0;
}

static unsigned vanish_count;

/* After the first request went away, the new one is served in full. */
static ssize_t hook_write_vanish_once(int fd, const void *buf, size_t len)
{
	if (!fd_is_loading(fd) && vanish_count == 0 && knobs.data_written >= 300000) {
		vanish_count++;
		knobs.recreate = 1;
		request_vanish();
		errno = ENODEV;
		return -1;
	}
	return hook_write(fd, buf, len);
}

static int test_restart(void)
{
	_cleanup_(blob_done) FwBlob blob = {};
	const FwStreamOps ops = { .write = hook_write_vanish_once, .pread = hook_pread };

	vanish_count = 0;
	knobs.page_limit = PAGE;
	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &ops) == BLOB_SIZE);
	CHECK(vanish_count == 1);
	CHECK(knobs.n_requests == 2);
	CHECK(data_matches(knobs.dir, BLOB_SIZE));
	CHECK_LOG("1 1 0");	/* the old request: "1" only; the new one from the start */
	return 0;
}

static int test_restart_bounded(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	knobs.page_limit = PAGE;
	knobs.gone_after = 100000;
	knobs.recreate = 10;	/* a new request every time: we must give up */
	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &hook_ops) == -ENODEV);
	CHECK_LOG("1 1 1");	/* the first attempt and two restarts */
	return 0;
}

static int reopen_blob_rw(FwBlob *blob)
{
	char path[PATH_MAX + 16];
	int fd;

	snprintf(path, sizeof(path), "%s/blob.bin", knobs.root);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	safe_close(blob->fd);
	blob->fd = fd;
	return 0;
}

static void truncate_on_second_read(int fd, unsigned call)
{
	if (call == 2)
		(void)!ftruncate(fd, 200000);
}

static int test_truncated(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	knobs.before_pread = truncate_on_second_read;
	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(reopen_blob_rw(&blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &hook_ops) == -ESTALE);
	CHECK_LOG("1 -1");
	CHECK(data_size(knobs.dir) <= 200000);
	return 0;
}

static void grow_on_second_read(int fd, unsigned call)
{
	struct timespec times[2];
	struct stat st;

	if (call != 2 || fstat(fd, &st) < 0)
		return;
	(void)!pwrite(fd, "more", 4, st.st_size);
	/* keep the old mtime: the read past the end alone must notice */
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	(void)futimens(fd, times);
}

static void touch_on_second_read(int fd, unsigned call)
{
	struct timespec times[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = 1000000000 } };

	if (call == 2)
		(void)futimens(fd, times);
}

static int test_grown(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	knobs.before_pread = grow_on_second_read;
	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(reopen_blob_rw(&blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &hook_ops) == -ESTALE);
	CHECK_LOG("1 -1");
	return 0;
}

static int test_modified(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	knobs.before_pread = touch_on_second_read;
	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(reopen_blob_rw(&blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &hook_ops) == -ESTALE);
	CHECK_LOG("1 -1");
	return 0;
}

static void sleep_on_first_read(int fd, unsigned call)
{
	if (call == 1)
		(void)nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
}

static int test_deadline(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	knobs.before_pread = sleep_on_first_read;
	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_MSEC,
			      NULL, &hook_ops) == -ETIME);
	CHECK_LOG("1 -1");
	CHECK(data_size(knobs.dir) < BLOB_SIZE);
	return 0;
}

static int test_deadline_passed(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, now_usec(CLOCK_MONOTONIC) - 1, NULL, &hook_ops) ==
	      -ETIME);
	CHECK_LOG("-1");
	CHECK(data_size(knobs.dir) == 0);
	return 0;
}

static void cancel_on_second_read(int fd, unsigned call)
{
	if (call == 2)
		atomic_store(&knobs.cancel, true);
}

static int test_cancel(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	knobs.before_pread = cancel_on_second_read;
	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, &knobs.cancel, &hook_ops) ==
	      -ECANCELED);
	CHECK_LOG("1 -1");
	CHECK(data_size(knobs.dir) < BLOB_SIZE);
	return 0;
}

static int test_commit_refused(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	knobs.fail_loading = "0";
	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &hook_ops) == -EACCES);
	CHECK_LOG("1 !0 -1");
	return 0;
}

static int test_start_refused(void)
{
	_cleanup_(blob_done) FwBlob blob = {};

	knobs.fail_loading = "1";
	CHECK(blob_buffer(BLOB_SIZE, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &hook_ops) == -EACCES);
	CHECK_LOG("!1 -1");
	CHECK(data_size(knobs.dir) == 0);
	return 0;
}

static int test_missing_dir(void)
{
	_cleanup_(blob_done) FwBlob blob = {};
	char dir[PATH_MAX + 32];

	snprintf(dir, sizeof(dir), "%s/firmware/other.bin", knobs.root);
	CHECK(blob_buffer(100, &blob) == 0);
	CHECK(fw_stream_serve(dir, &blob, USEC_INFINITY, NULL, &hook_ops) == -ENOENT);
	CHECK_LOG("");
	CHECK(fw_stream_abort(dir) == -ENOENT);
	return 0;
}

static int test_abort(void)
{
	_cleanup_free_ char *loading = path_join(knobs.dir, "loading");
	_cleanup_free_ uint8_t *buf = NULL;
	size_t n;

	CHECK(fw_stream_abort(knobs.dir) == 0);
	CHECK(read_file(loading, &buf, &n) == 0);
	CHECK(n == 2 && memcmp(buf, "-1", 2) == 0);
	return 0;
}

static int test_sendfile(void)
{
	_cleanup_(blob_done) FwBlob blob = {};
	const FwStreamOps ops = { .write = hook_write, .pread = hook_pread, .sendfile = true };

	CHECK(blob_file(BLOB_SIZE, &blob) == 0);
	CHECK(fw_stream_serve(knobs.dir, &blob, USEC_INFINITY, NULL, &ops) == BLOB_SIZE);
	CHECK(data_matches(knobs.dir, BLOB_SIZE));
	CHECK_LOG("1 0");
	CHECK(knobs.write_calls == 2);	/* "1" and "0": the data went by sendfile() */
	return 0;
}

static const struct {
	const char *name;
	int (*func)(void);
} tests[] = {
	{ "page-limited writes", test_page_limited_writes },
	{ "real syscalls", test_real_syscalls },
	{ "EINTR", test_eintr },
	{ "buffer blob", test_buffer_blob },
	{ "held blob", test_held_blob },
	{ "empty blob", test_empty_blob },
	{ "request gone mid-stream", test_gone_midstream },
	{ "kernel buffer too small", test_kernel_buffer_too_small },
	{ "restart on a new request", test_restart },
	{ "restarts bounded", test_restart_bounded },
	{ "file truncated", test_truncated },
	{ "file grown", test_grown },
	{ "file modified", test_modified },
	{ "deadline mid-stream", test_deadline },
	{ "deadline already passed", test_deadline_passed },
	{ "cancelled", test_cancel },
	{ "commit refused", test_commit_refused },
	{ "start refused", test_start_refused },
	{ "missing directory", test_missing_dir },
	{ "abort", test_abort },
	{ "sendfile", test_sendfile },
};

int main(void)
{
	unsigned failed = 0;

	for (size_t i = 0; i < ELEMENTSOF(tests); i++) {
		int r;

		if (fixture_setup() < 0) {
			fprintf(stderr, "fixture setup failed\n");
			return EXIT_FAILURE;
		}
		r = tests[i].func();
		printf("%s: %s\n", r == 0 ? "ok" : "FAIL", tests[i].name);
		if (r != 0)
			failed++;
		fixture_teardown();
	}
	printf("%zu tests, %u failed\n", ELEMENTSOF(tests), failed);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
