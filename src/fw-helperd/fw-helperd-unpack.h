/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "fw-helperd-memory.h"
#include "util.h"

typedef enum FwCompression {
	FW_COMPRESSION_NONE,
	FW_COMPRESSION_ZSTD,
	FW_COMPRESSION_XZ,
} FwCompression;

const char *fw_compression_to_string(FwCompression c);

/* What one lookup may take. */
typedef struct FwLimits {
	uint64_t max_size;	/* MaxSize=: the largest image served */
	FwMemory *memory;	/* UnpackMemoryMax=: shared by every unpacking thread; NULL: none */
	usec_t deadline;	/* how long to wait for memory (CLOCK_MONOTONIC; USEC_INFINITY) */
} FwLimits;

/*
 * Unpacks the compressed file fd into memory, after reserving from limits->memory what the
 * image and the decoder will take: the size the file declares (the xz index, the zstd frame
 * header) when it has one, else the most the budget allows. An image that turns out larger
 * than it declared is unpacked once more under that worst case. On success *ret_reserved
 * is the part of the budget the image still holds (its size): release it with
 * fw_memory_release() once the image is freed or accounted for elsewhere.
 *
 * -EFBIG: larger than max_size. -ENOBUFS: needs more memory than UnpackMemoryMax= holds.
 * -ETIMEDOUT: others held the budget until the deadline. -EBADMSG: corrupt or truncated.
 */
int fw_unpack(int fd, FwCompression compression, const FwLimits *limits, void **ret_data,
	      size_t *ret_size, size_t *ret_reserved);
