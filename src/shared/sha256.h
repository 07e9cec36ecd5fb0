/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* SHA-256 (FIPS 180-4), incremental, for checking firmware against a manifest. */
#define SHA256_DIGEST_SIZE 32

typedef struct Sha256 {
	uint32_t state[8];
	uint64_t length;	/* bytes hashed so far */
	uint8_t block[64];
	size_t used;		/* bytes waiting in block */
} Sha256;

void sha256_init(Sha256 *h);
void sha256_update(Sha256 *h, const void *data, size_t len);
void sha256_final(Sha256 *h, uint8_t ret[SHA256_DIGEST_SIZE]);

/* Lower-case hex, 64 characters plus NUL. */
void sha256_to_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char ret[SHA256_DIGEST_SIZE * 2 + 1]);
/* Parses 64 hex digits (either case); -EINVAL otherwise. */
int sha256_from_hex(const char *s, uint8_t ret[SHA256_DIGEST_SIZE]);
