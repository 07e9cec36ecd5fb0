/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A broken promise of the code under test: libFuzzer keeps the input that did it. */
#define FUZZ_ASSERT(cond)                                                         \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                  \
		}                                                                 \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
