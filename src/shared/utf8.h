/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Firmware names are bytes: the kernel takes any name a driver passes. D-Bus and JSON take
 * only UTF-8, and sd-bus refuses a string that is not (surrogates, overlong forms, code
 * points past U+10FFFF and the noncharacters U+FDD0..U+FDEF, U+xxFFFE/U+xxFFFF included).
 */

/* Bytes in the valid UTF-8 character s starts with (1-4), 0 when it starts none (or at NUL). */
size_t utf8_char_len(const char *s);
bool utf8_is_valid(const char *s);

typedef enum EscapeFlags {
	ESCAPE_CONTROL = 1 << 0,	/* bytes < 0x20 and DEL */
	ESCAPE_NON_ASCII = 1 << 1,	/* every byte >= 0x80, valid UTF-8 or not */
	ESCAPE_BACKSLASH = 1 << 2,	/* '\\' itself, so that the result reads back unambiguously */
} EscapeFlags;

/*
 * A copy in which every byte that is not part of a valid UTF-8 character, plus what flags
 * ask for, is written as "\xNN" (as systemd's utf8_escape_non_printable() does). With no
 * flags it is the form for D-Bus and JSON: valid text unchanged, always valid UTF-8.
 * NULL on allocation failure.
 */
char *utf8_escape(const char *s, EscapeFlags flags);
