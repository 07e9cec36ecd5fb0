/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "fw-helperd-unpack.h"
#include "macro.h"

#define READ_CHUNK (64U * 1024U)
/* xz -9 needs 65 MiB to unpack; anything asking for more is not a firmware image. */
#define XZ_MEMLIMIT (128U * 1024U * 1024U)
/*
 * What an xz decoder is first given: the 8 MiB dictionary of xz's default preset (-6) and
 * its state. A file made with a larger dictionary says so and is unpacked again with
 * what it needs (up to XZ_MEMLIMIT).
 */
#define XZ_DECODER_FIRST ((8U << 20) + (1U << 20))
/* The index of an xz file with a few thousand blocks; a firmware image has one or a few. */
#define XZ_INDEX_MEMLIMIT (1U << 20)
/* zstd's own default ceiling (ZSTD_WINDOWLOG_LIMIT_DEFAULT), lowered further for small images. */
#define ZSTD_WINDOWLOG_CEILING 27
/* A zstd stream's buffers beyond its window: input and output blocks, and the context. */
#define ZSTD_DECODER_OVERHEAD ((size_t)ZSTD_BLOCKSIZE_MAX * 2 + (256U << 10))
/* ZSTD_FRAMEHEADERSIZE_MAX, which zstd.h keeps to static linking */
#define ZSTD_FRAME_HEADER_MAX 18
#define SIZE_UNKNOWN UINT64_MAX

const char *fw_compression_to_string(FwCompression c)
{
	static const char *const table[] = {
		[FW_COMPRESSION_NONE] = "none",
		[FW_COMPRESSION_ZSTD] = "zstd",
		[FW_COMPRESSION_XZ] = "xz",
	};

	return (unsigned)c < ELEMENTSOF(table) ? table[c] : NULL;
}

/* What the start of a file says about it; SIZE_UNKNOWN where it does not. */
typedef struct Probe {
	uint64_t size;		/* of the whole image (xz), of the first frame (zstd) */
	uint64_t window;	/* zstd: the first frame's window */
} Probe;

/* What one attempt reserves: the image (up to its limit, and one byte past) and a decoder. */
typedef struct Plan {
	size_t image;
	size_t decoder;
	int window_log;	/* zstd: the largest window allowed */
	bool declared;	/* image is the size the file declared, not the most allowed */
	bool reserved;	/* taken from a budget */
} Plan;

/*
 * The image being unpacked, never past limit + 1: one byte past means too big. What was
 * reserved for it is allocated at once (exact): pages never written cost nothing, and
 * growing by realloc() would hold the old and the new copy at the same time. Without a
 * budget it grows by doubling.
 */
typedef struct Sink {
	uint8_t *data;
	size_t size;
	size_t allocated;
	size_t limit;
	bool exact;
} Sink;

static int sink_reserve(Sink *s)
{
	size_t n;
	uint8_t *p;

	if (s->size < s->allocated)
		return 0;
	if (s->allocated > s->limit)
		return -ENOBUFS;
	n = s->exact ? s->limit + 1 : s->allocated ? s->allocated * 2 : READ_CHUNK;
	if (n < s->allocated || n > s->limit)
		n = s->limit + 1;
	p = realloc(s->data, n);
	if (!p)
		return -ENOMEM;
	s->data = p;
	s->allocated = n;
	return 0;
}

static ssize_t read_chunk(int fd, void *buf, size_t len)
{
	ssize_t n;

	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static ssize_t pread_chunk(int fd, void *buf, size_t len, off_t offset)
{
	ssize_t n;

	do
		n = pread(fd, buf, len, offset);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static int xz_error(lzma_ret lr)
{
	switch (lr) {
	case LZMA_MEM_ERROR:
		return -ENOMEM;
	case LZMA_MEMLIMIT_ERROR:
		return -E2BIG; /* the decoder needs more than planned: see unpack_xz() */
	default:
		return -EBADMSG; /* format, options, data or truncation (LZMA_BUF_ERROR) */
	}
}

/*
 * The uncompressed size the xz index records, over every stream of the file. The decoder
 * checks the index against the data, so an image cannot grow past it unnoticed; a file
 * that is cut or corrupt gives SIZE_UNKNOWN here and its error when unpacked.
 */
static Probe xz_probe(int fd)
{
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_index *index = NULL;
	Probe p = { SIZE_UNKNOWN, SIZE_UNKNOWN };
	uint8_t buf[8192];
	struct stat st;
	off_t pos = 0;

	if (fstat(fd, &st) < 0 ||
	    lzma_file_info_decoder(&s, &index, XZ_INDEX_MEMLIMIT, (uint64_t)st.st_size) != LZMA_OK)
		return p;
	for (;;) {
		lzma_ret lr;

		if (s.avail_in == 0) {
			ssize_t n = pread_chunk(fd, buf, sizeof(buf), pos);

			if (n <= 0)
				break;
			pos += n;
			s.next_in = buf;
			s.avail_in = (size_t)n;
		}
		lr = lzma_code(&s, LZMA_RUN);
		if (lr == LZMA_SEEK_NEEDED) {
			pos = (off_t)s.seek_pos;
			s.avail_in = 0;
		} else if (lr == LZMA_STREAM_END) {
			p.size = lzma_index_uncompressed_size(index);
			lzma_index_end(index, NULL);
			break;
		} else if (lr != LZMA_OK)
			break;
	}
	lzma_end(&s);
	return p;
}

/*
 * The first frame's content size and window, read from its header (RFC 8878 3.1.1.1) without
 * zstd's static-only API. A skippable or unknown frame gives nothing: the worst case then.
 */
static Probe zstd_probe(int fd)
{
	uint8_t h[ZSTD_FRAME_HEADER_MAX];
	Probe p = { SIZE_UNKNOWN, SIZE_UNKNOWN };
	unsigned long long size;
	ssize_t n;

	n = pread_chunk(fd, h, sizeof(h), 0);
	if (n < 6 || h[0] != 0x28 || h[1] != 0xb5 || h[2] != 0x2f || h[3] != 0xfd)
		return p;
	size = ZSTD_getFrameContentSize(h, (size_t)n);
	if (size != ZSTD_CONTENTSIZE_UNKNOWN && size != ZSTD_CONTENTSIZE_ERROR)
		p.size = size;
	if (h[4] & 0x20)
		p.window = p.size; /* single segment: the window is the content */
	else {
		unsigned exponent = h[5] >> 3, mantissa = h[5] & 7;
		uint64_t base = 1ULL << (10 + exponent);

		p.window = base + base / 8 * mantissa;
	}
	return p;
}

/* The smallest window log that holds window bytes, within zstd's default ceiling. */
static int zstd_window_log(uint64_t window)
{
	int log = 10; /* ZSTD_WINDOWLOG_ABSOLUTEMIN */

	while (log < ZSTD_WINDOWLOG_CEILING && (1ULL << log) < window)
		log++;
	return log;
}

/*
 * The decoder's share of a plan for plan->image: xz's dictionary (xz_decoder once the
 * decoder said what it needs, else a first guess); zstd's window, which its frame header
 * gives (the image's size bounds it where the file has none).
 */
static void plan_decoder(FwCompression compression, const Probe *probe, size_t xz_decoder,
			 Plan *plan)
{
	uint64_t window;

	if (compression == FW_COMPRESSION_XZ) {
		plan->decoder = xz_decoder ?: XZ_DECODER_FIRST;
		return;
	}
	window = probe->window != SIZE_UNKNOWN ? probe->window : plan->image;
	plan->window_log = zstd_window_log(window);
	/* with a declared size, zstd buffers no more than the image (ZSTD_decodingBufferSize_min) */
	if (plan->declared)
		window = MIN(window, (uint64_t)plan->image);
	plan->decoder = (size_t)MIN(window, 1ULL << plan->window_log) + ZSTD_DECODER_OVERHEAD;
}

static int unpack_xz(int fd, size_t memlimit, Sink *sink, size_t *ret_needed)
{
	_cleanup_free_ uint8_t *in = NULL;
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_action action = LZMA_RUN;
	lzma_ret lr;
	int r;

	in = malloc(READ_CHUNK);
	if (!in)
		return -ENOMEM;
	/* CONCATENATED: accept stream padding and multiple streams, as xz(1) writes them */
	lr = lzma_stream_decoder(&s, memlimit, LZMA_CONCATENATED);
	if (lr != LZMA_OK)
		return xz_error(lr);
	for (;;) {
		ssize_t n;

		if (s.avail_in == 0 && action == LZMA_RUN) {
			n = read_chunk(fd, in, READ_CHUNK);
			if (n < 0) {
				r = (int)n;
				break;
			}
			if (n == 0)
				action = LZMA_FINISH;
			s.next_in = in;
			s.avail_in = (size_t)n;
		}
		r = sink_reserve(sink);
		if (r < 0)
			break;
		s.next_out = sink->data + sink->size;
		s.avail_out = sink->allocated - sink->size;
		lr = lzma_code(&s, action);
		sink->size = (size_t)(s.next_out - sink->data);
		if (sink->size > sink->limit) {
			r = -ENOBUFS;
			break;
		}
		if (lr == LZMA_STREAM_END) {
			r = 0;
			break;
		}
		if (lr != LZMA_OK) {
			r = xz_error(lr);
			if (r == -E2BIG)
				*ret_needed = (size_t)lzma_memusage(&s);
			break;
		}
	}
	lzma_end(&s);
	return r;
}

static void zstd_freep(ZSTD_DStream **z)
{
	ZSTD_freeDStream(*z);
}

static int zstd_error(size_t ret)
{
	if (ZSTD_getErrorCode(ret) == ZSTD_error_memory_allocation)
		return -ENOMEM;
	if (ZSTD_getErrorCode(ret) == ZSTD_error_frameParameter_windowTooLarge)
		return -E2BIG;
	return -EBADMSG;
}

/*
 * Streams, never trusting the content size a frame declares beyond planning: the sink's
 * limit is what stops it. Ends well only when the input ends on a frame boundary.
 */
static int unpack_zstd(int fd, int window_log, Sink *sink)
{
	_cleanup_(zstd_freep) ZSTD_DStream *z = NULL;
	_cleanup_free_ uint8_t *in = NULL;
	ZSTD_inBuffer input = {};
	size_t pending = 0;
	bool got_input = false, output_full = false;
	int r;

	in = malloc(READ_CHUNK);
	z = ZSTD_createDStream();
	if (!in || !z)
		return -ENOMEM;
	if (ZSTD_isError(ZSTD_DCtx_setParameter(z, ZSTD_d_windowLogMax, window_log)))
		return -EINVAL;
	for (;;) {
		ZSTD_outBuffer output;

		/* a full output buffer may hide more output: drain it before reading on */
		if (input.pos == input.size && !output_full) {
			ssize_t n = read_chunk(fd, in, READ_CHUNK);

			if (n < 0)
				return (int)n;
			if (n == 0)
				break;
			input = (ZSTD_inBuffer){ .src = in, .size = (size_t)n };
			got_input = true;
		}
		r = sink_reserve(sink);
		if (r < 0)
			return r;
		output = (ZSTD_outBuffer){ .dst = sink->data, .size = sink->allocated, .pos = sink->size };
		pending = ZSTD_decompressStream(z, &output, &input);
		if (ZSTD_isError(pending))
			return zstd_error(pending);
		sink->size = output.pos;
		if (sink->size > sink->limit)
			return -ENOBUFS;
		output_full = output.pos == output.size;
	}
	return got_input && pending == 0 ? 0 : -EBADMSG;
}

/*
 * One attempt under plan, from the start of the file. -ENOBUFS: the image is larger than
 * plan->image; -E2BIG: the xz decoder needs *ret_needed bytes of its own.
 */
static int unpack_once(int fd, FwCompression compression, const Plan *plan, Sink *sink,
		       size_t *ret_needed)
{
	*sink = (Sink){ .limit = plan->image, .exact = plan->declared || plan->reserved };
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	if (compression == FW_COMPRESSION_XZ)
		return unpack_xz(fd, plan->decoder, sink, ret_needed);
	return unpack_zstd(fd, plan->window_log, sink);
}

/* The image as the file declares it. */
static void plan_declared(FwCompression compression, const Probe *probe, Plan *plan)
{
	*plan = (Plan){ .image = (size_t)probe->size, .declared = true };
	plan_decoder(compression, probe, 0, plan);
}

/*
 * The most an image may take when the file does not say: under MaxSize= and what the
 * budget leaves beside the decoder. xz_decoder as for plan_decoder().
 */
static int plan_worst(FwCompression compression, const FwLimits *limits, const Probe *probe,
		      size_t xz_decoder, Plan *plan)
{
	*plan = (Plan){ .image = (size_t)MIN(limits->max_size, (uint64_t)SIZE_MAX / 2) };
	plan_decoder(compression, probe, xz_decoder, plan);
	if (limits->memory) {
		size_t budget = fw_memory_limit(limits->memory);

		if (budget <= plan->decoder + 1)
			return -ENOBUFS;
		plan->image = MIN(plan->image, budget - plan->decoder - 1);
	}
	return 0;
}

static int reserve(const FwLimits *limits, Plan *plan, size_t *reserved)
{
	size_t n = plan->image + 1 + plan->decoder;
	int r;

	if (!limits->memory)
		return 0;
	r = fw_memory_reserve(limits->memory, n, limits->deadline);
	if (r == -EFBIG)
		return -ENOBUFS; /* more than the whole budget */
	if (r < 0)
		return r;
	*reserved = n;
	plan->reserved = true;
	return 0;
}

static void unreserve(const FwLimits *limits, size_t *reserved, size_t keep)
{
	if (limits->memory)
		fw_memory_release(limits->memory, *reserved - keep);
	*reserved = keep;
}

/* The next plan after an attempt failed with r, or r itself when there is none. */
static int plan_next(FwCompression compression, const FwLimits *limits, const Probe *probe,
		     int r, size_t needed, Plan *plan)
{
	if (r == -E2BIG) {
		if (compression != FW_COMPRESSION_XZ || needed <= plan->decoder ||
		    needed > XZ_MEMLIMIT)
			return -EFBIG; /* needs more memory to unpack than any firmware image does */
		if (plan->declared) {
			plan->decoder = needed;
			return 0;
		}
		return plan_worst(compression, limits, probe, needed, plan);
	}
	if (r != -ENOBUFS)
		return r;
	if ((uint64_t)plan->image >= limits->max_size)
		return -EFBIG;
	if (!plan->declared)
		return -ENOBUFS; /* larger than the budget allows */
	/* more than the file declared (more zstd frames): as if it declared nothing */
	return plan_worst(compression, limits, probe,
			  compression == FW_COMPRESSION_XZ ? plan->decoder : 0, plan);
}

int fw_unpack(int fd, FwCompression compression, const FwLimits *limits, void **ret_data,
	      size_t *ret_size, size_t *ret_reserved)
{
	size_t reserved = 0, needed = 0;
	Sink sink = {};
	Probe probe;
	Plan plan;
	int r;

	probe = compression == FW_COMPRESSION_XZ ? xz_probe(fd) : zstd_probe(fd);
	if (probe.size != SIZE_UNKNOWN && probe.size > limits->max_size)
		return -EFBIG;
	if (probe.size != SIZE_UNKNOWN)
		plan_declared(compression, &probe, &plan);
	else {
		r = plan_worst(compression, limits, &probe, 0, &plan);
		if (r < 0)
			return r;
	}
	/* at most three: declared size, larger decoder, worst case */
	for (unsigned attempt = 0; attempt < 3; attempt++) {
		r = reserve(limits, &plan, &reserved);
		if (r < 0)
			return r;
		r = unpack_once(fd, compression, &plan, &sink, &needed);
		if (r == 0)
			break;
		free(sink.data);
		sink.data = NULL;
		unreserve(limits, &reserved, 0);
		r = plan_next(compression, limits, &probe, r, needed, &plan);
		if (r < 0)
			return r;
		r = -ENOBUFS;
	}
	if (r < 0)
		return r;
	/* keep only the image: the decoder is gone, and the worst case was only a bound */
	if (sink.allocated > sink.size) {
		uint8_t *p = realloc(sink.data, sink.size ?: 1);

		if (p)
			sink.data = p;
	}
	unreserve(limits, &reserved, MIN(reserved, sink.size));
	*ret_data = sink.data;
	*ret_size = sink.size;
	*ret_reserved = reserved;
	return 0;
}
