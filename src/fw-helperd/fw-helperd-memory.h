/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

#include "macro.h"
#include "util.h"

/*
 * A budget of bytes shared by the threads that unpack compressed firmware
 * ([Firmware] UnpackMemoryMax=). A thread reserves what it will need before it unpacks,
 * waiting while others hold the budget, so that however many requests and prewarm threads
 * run at once, their images and decoders together stay under the limit. Each thread holds
 * at most one reservation at a time: nobody waits while holding, so nobody deadlocks.
 */
typedef struct FwMemory FwMemory;

int fw_memory_new(size_t limit, FwMemory **ret);
FwMemory *fw_memory_free(FwMemory *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(FwMemory *, fw_memory_free);

/*
 * Reserves n bytes, waiting until deadline (CLOCK_MONOTONIC; USEC_INFINITY: no end) for
 * others to release theirs. -EFBIG when n exceeds the whole limit (it could never fit),
 * -ETIMEDOUT when the deadline came first.
 */
int fw_memory_reserve(FwMemory *m, size_t n, usec_t deadline);
void fw_memory_release(FwMemory *m, size_t n);

/* A new limit (on reload); reservations already made stand. */
void fw_memory_set_limit(FwMemory *m, size_t limit);

size_t fw_memory_limit(FwMemory *m);
size_t fw_memory_used(FwMemory *m);
/* The most ever reserved at once. */
size_t fw_memory_peak(FwMemory *m);
