/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdio.h>

/* Plain C tests: one line per check, and a failure count for the exit status. */
static int test_failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (cond) {                                                    \
			printf("ok   %s\n", #cond);                            \
		} else {                                                       \
			printf("FAIL %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
			test_failures++;                                       \
		}                                                              \
	} while (0)
