/* SPDX-License-Identifier: MIT */
#pragma once

#include <nettle/sha2.h>
#include <stddef.h>
#include <stdint.h>

/*
 * SHA-256 from nettle, incremental, for checking firmware against a manifest:
 * sha256_init(&h), sha256_update(&h, length, data) (nettle's order), sha256_final(&h, ret).
 * nettle's context is a plain struct: nothing to allocate, nothing that can fail.
 */
typedef struct sha256_ctx Sha256;

static inline void sha256_final(Sha256 *h, uint8_t ret[SHA256_DIGEST_SIZE])
{
	sha256_digest(h, SHA256_DIGEST_SIZE, ret);
}

/* Lower-case hex, 64 characters plus NUL. */
void sha256_to_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char ret[SHA256_DIGEST_SIZE * 2 + 1]);
/* Parses 64 hex digits (either case); -EINVAL otherwise. */
int sha256_from_hex(const char *s, uint8_t ret[SHA256_DIGEST_SIZE]);
