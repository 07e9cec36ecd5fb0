/* SPDX-License-Identifier: MIT */
/*
 * Unpacking under UnpackMemoryMax=: bombs in either format are refused without taking more
 * than the budget, honest images unpack and keep only their size reserved, and two
 * unpacks that do not fit together take turns.
 */
#include <errno.h>
#include <lzma.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zstd.h>

#include "fw-helperd-memory.h"
#include "fw-helperd-unpack.h"
#include "tests.h"
#include "util.h"

#define MiB (1024U * 1024U)
#define BUDGET (48U * MiB)
#define CHUNK (16U * MiB)	/* one stream or frame of a bomb: zeros */
#define CHUNKS 16		/* a bomb unpacks to 256 MiB */

/* An anonymous file holding data, as the loader hands one over: open, at offset 0. */
static int file_of(const void *data, size_t size)
{
	char name[] = "/tmp/test-unpack-file-XXXXXX";
	int fd = mkstemp(name);

	if (fd < 0 || unlink(name) < 0 || write(fd, data, size) != (ssize_t)size ||
	    lseek(fd, 0, SEEK_SET) != 0)
		abort();
	return fd;
}

static uint8_t *xz_of(const void *data, size_t size, size_t *ret_size)
{
	size_t allocated = size / 2 + 65536, pos = 0;
	uint8_t *out = malloc(allocated);

	if (!out || lzma_easy_buffer_encode(1, LZMA_CHECK_CRC32, NULL, data, size, out, &pos,
					    allocated) != LZMA_OK)
		abort();
	*ret_size = pos;
	return out;
}

/* declare_size false: written as a stream is, with no size and a 512 KiB window. */
static uint8_t *zstd_of(const void *data, size_t size, bool declare_size, size_t *ret_size)
{
	size_t allocated = ZSTD_compressBound(size);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	uint8_t *out = malloc(allocated);
	ZSTD_inBuffer in = { data, size, 0 };
	ZSTD_outBuffer o = { out, allocated, 0 };

	if (!c || !out)
		abort();
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
	ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, 19);
	if (declare_size)
		ZSTD_CCtx_setPledgedSrcSize(c, size);
	if (ZSTD_compressStream2(c, &o, &in, ZSTD_e_end) != 0)
		abort();
	ZSTD_freeCCtx(c);
	*ret_size = o.pos;
	return out;
}

/* copies of one compressed stream or frame, as cat(1) joins them: a valid file either way */
static int repeated(const uint8_t *unit, size_t size, unsigned copies)
{
	uint8_t *all = malloc(size * copies);
	int fd;

	if (!all)
		abort();
	for (unsigned i = 0; i < copies; i++)
		memcpy(all + i * size, unit, size);
	fd = file_of(all, size * copies);
	free(all);
	return fd;
}

static long maxrss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static int unpack(int fd, FwCompression c, FwMemory *m, uint64_t max_size, usec_t deadline,
		  void **data, size_t *size, size_t *reserved)
{
	FwLimits limits = { .max_size = max_size, .memory = m, .deadline = deadline };

	*data = NULL;
	return fw_unpack(fd, c, &limits, data, size, reserved);
}

static void test_bombs(FwMemory *m)
{
	_cleanup_free_ uint8_t *zeros = calloc(1, CHUNK), *xz = NULL, *zd = NULL, *zs = NULL;
	size_t n_xz, n_zd, n_zs, size, reserved;
	void *data;
	long before;
	int fd, r;

	if (!zeros)
		abort();
	xz = xz_of(zeros, CHUNK, &n_xz);
	zd = zstd_of(zeros, CHUNK, true, &n_zd);
	zs = zstd_of(zeros, CHUNK, false, &n_zs);
	before = maxrss_kib();

	/* xz: the index declares 256 MiB, refused before a byte is unpacked */
	fd = repeated(xz, n_xz, CHUNKS);
	r = unpack(fd, FW_COMPRESSION_XZ, m, 1ULL << 30, USEC_INFINITY, &data, &size, &reserved);
	CHECK(r == -ENOBUFS);
	CHECK(fw_memory_peak(m) == 0);
	close(fd);

	/* zstd, frames declaring 16 MiB each: the first plan overflows, the worst case too */
	fd = repeated(zd, n_zd, CHUNKS);
	r = unpack(fd, FW_COMPRESSION_ZSTD, m, 1ULL << 30, USEC_INFINITY, &data, &size, &reserved);
	CHECK(r == -ENOBUFS);
	close(fd);

	/* zstd, frames with no size at all: straight to the worst case, which overflows */
	fd = repeated(zs, n_zs, CHUNKS);
	r = unpack(fd, FW_COMPRESSION_ZSTD, m, 1ULL << 30, USEC_INFINITY, &data, &size, &reserved);
	CHECK(r == -ENOBUFS);
	close(fd);

	CHECK(fw_memory_used(m) == 0);
	CHECK(fw_memory_peak(m) > 0 && fw_memory_peak(m) <= BUDGET);
	printf("# bombs of %u MiB: budget peak %zu MiB, max RSS +%ld MiB\n", CHUNK / MiB * CHUNKS,
	       fw_memory_peak(m) / MiB, (maxrss_kib() - before) / 1024);
	CHECK(maxrss_kib() - before <= (long)(BUDGET / 1024) + 8 * 1024);

	/* the same bombs under MaxSize= smaller than the budget: too big, not out of memory */
	fd = repeated(zs, n_zs, CHUNKS);
	r = unpack(fd, FW_COMPRESSION_ZSTD, m, 8 * MiB, USEC_INFINITY, &data, &size, &reserved);
	CHECK(r == -EFBIG);
	close(fd);
	fd = repeated(xz, n_xz, 2);
	r = unpack(fd, FW_COMPRESSION_XZ, m, 8 * MiB, USEC_INFINITY, &data, &size, &reserved);
	CHECK(r == -EFBIG);
	close(fd);
}

static uint8_t *pattern(size_t size)
{
	uint8_t *p = malloc(size);

	if (!p)
		abort();
	for (size_t i = 0; i < size; i++)
		p[i] = (uint8_t)(i * 7 + i / 4096);
	return p;
}

static void test_honest(FwMemory *m)
{
	size_t image = 3 * MiB + 17, n, size, reserved;
	_cleanup_free_ uint8_t *p = pattern(image), *z = NULL;
	static const struct {
		FwCompression c;
		bool declare;
		unsigned copies;
	} cases[] = {
		{ FW_COMPRESSION_XZ, true, 1 },
		{ FW_COMPRESSION_XZ, true, 2 },		/* two streams */
		{ FW_COMPRESSION_ZSTD, true, 1 },
		{ FW_COMPRESSION_ZSTD, false, 1 },	/* worst case, then trimmed */
		{ FW_COMPRESSION_ZSTD, true, 2 },	/* more than the first frame declares */
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		void *data;
		int fd, r;

		z = cases[i].c == FW_COMPRESSION_XZ ? xz_of(p, image, &n) :
						      zstd_of(p, image, cases[i].declare, &n);
		fd = repeated(z, n, cases[i].copies);
		r = unpack(fd, cases[i].c, m, 1ULL << 30, USEC_INFINITY, &data, &size, &reserved);
		printf("# %s%s x%u: %s\n", fw_compression_to_string(cases[i].c),
		       cases[i].declare ? "" : " (no size)", cases[i].copies, strerror(-r));
		CHECK(r == 0 && size == image * cases[i].copies);
		CHECK(r == 0 && memcmp(data, p, image) == 0 &&
		      memcmp((uint8_t *)data + size - image, p, image) == 0);
		/* only the image stays reserved: the decoder and the worst case are given back */
		CHECK(reserved == size && fw_memory_used(m) == size);
		fw_memory_release(m, reserved);
		free(data);
		free(z);
		z = NULL;
		close(fd);
	}
	CHECK(fw_memory_used(m) == 0);
}

typedef struct Second {
	int fd;
	FwMemory *m;
	int r;
	size_t size, reserved;
	void *data;
} Second;

static void *second_unpack(void *userdata)
{
	Second *s = userdata;

	s->r = unpack(s->fd, FW_COMPRESSION_XZ, s->m, 1ULL << 30, USEC_INFINITY, &s->data,
		      &s->size, &s->reserved);
	return NULL;
}

/* Two unpacks that do not fit together: the second waits for the first, or times out. */
static void test_turns(void)
{
	size_t image = 20 * MiB, n, size, reserved;
	_cleanup_(fw_memory_freep) FwMemory *m = NULL;
	_cleanup_free_ uint8_t *p = pattern(image), *z = NULL;
	Second second = {};
	pthread_t t;
	void *data;
	int fd, r;

	/* room for one image and its decoder, not two images */
	CHECK(fw_memory_new(image + 16 * MiB, &m) == 0);
	z = xz_of(p, image, &n);
	fd = file_of(z, n);
	r = unpack(fd, FW_COMPRESSION_XZ, m, 1ULL << 30, USEC_INFINITY, &data, &size, &reserved);
	CHECK(r == 0 && reserved == image);

	second.fd = file_of(z, n);
	r = unpack(second.fd, FW_COMPRESSION_XZ, m, 1ULL << 30,
		   now_usec(CLOCK_MONOTONIC) + 100 * USEC_PER_MSEC, &second.data, &second.size,
		   &second.reserved);
	CHECK(r == -ETIMEDOUT);

	second.m = m;
	CHECK(pthread_create(&t, NULL, second_unpack, &second) == 0);
	usleep(200 * 1000);
	CHECK(fw_memory_used(m) == image); /* the second is still waiting */
	fw_memory_release(m, reserved);
	free(data);
	pthread_join(t, NULL);
	CHECK(second.r == 0 && second.size == image && memcmp(second.data, p, image) == 0);
	CHECK(fw_memory_peak(m) <= image + 16 * MiB);
	fw_memory_release(m, second.reserved);
	free(second.data);
	close(fd);
	close(second.fd);

	/* an image that would need more than the whole budget fails at once, no wait */
	fw_memory_set_limit(m, image / 2);
	fd = file_of(z, n);
	r = unpack(fd, FW_COMPRESSION_XZ, m, 1ULL << 30, USEC_INFINITY, &data, &size, &reserved);
	CHECK(r == -ENOBUFS);
	close(fd);
}

/* Without a budget (tests, tools), only MaxSize= bounds an image. */
static void test_no_budget(void)
{
	_cleanup_free_ uint8_t *p = pattern(MiB), *z = NULL;
	size_t n, size, reserved;
	void *data;
	int fd, r;

	z = zstd_of(p, MiB, false, &n);
	fd = file_of(z, n);
	r = unpack(fd, FW_COMPRESSION_ZSTD, NULL, 1ULL << 30, USEC_INFINITY, &data, &size,
		   &reserved);
	CHECK(r == 0 && size == MiB && reserved == 0 && memcmp(data, p, MiB) == 0);
	free(data);
	close(fd);
}

int main(void)
{
	_cleanup_(fw_memory_freep) FwMemory *m = NULL;

	/* as the daemon runs (sleep_new()): every image its own mapping, unmapped when freed */
	(void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	CHECK(fw_memory_new(BUDGET, &m) == 0);
	test_bombs(m);
	test_honest(m);
	test_turns();
	test_no_budget();
	return test_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
