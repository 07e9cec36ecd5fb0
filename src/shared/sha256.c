/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "sha256.h"

void sha256_to_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char ret[SHA256_DIGEST_SIZE * 2 + 1])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
		ret[2 * i] = hex[digest[i] >> 4];
		ret[2 * i + 1] = hex[digest[i] & 15];
	}
	ret[SHA256_DIGEST_SIZE * 2] = 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int sha256_from_hex(const char *s, uint8_t ret[SHA256_DIGEST_SIZE])
{
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
		int hi = hexval(s[2 * i]), lo = hi < 0 ? -1 : hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		ret[i] = (uint8_t)(hi << 4 | lo);
	}
	return s[SHA256_DIGEST_SIZE * 2] == 0 ? 0 : -EINVAL;
}
