/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* What sd-bus accepts: its unichar_is_valid() rules, written out from the Unicode standard. */
static bool code_point_valid(uint32_t c)
{
	if (c > 0x10ffff)
		return false;
	if (c >= 0xd800 && c <= 0xdfff)		/* UTF-16 surrogates */
		return false;
	if (c >= 0xfdd0 && c <= 0xfdef)		/* noncharacters */
		return false;
	return (c & 0xfffe) != 0xfffe;		/* U+FFFE, U+FFFF in every plane */
}

size_t utf8_char_len(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	uint32_t c, min;
	size_t len;

	if (s[0] < 0x80)
		return s[0] ? 1 : 0;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2, c = s[0] & 0x1f, min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3, c = s[0] & 0x0f, min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4, c = s[0] & 0x07, min = 0x10000;
	} else
		return 0;
	/* a NUL fails the continuation test, so this never reads past the string */
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || !code_point_valid(c)) /* c < min: an overlong form */
		return 0;
	return len;
}

bool utf8_is_valid(const char *s)
{
	while (*s) {
		size_t n = utf8_char_len(s);

		if (n == 0)
			return false;
		s += n;
	}
	return true;
}

static bool byte_escaped(unsigned char c, EscapeFlags flags)
{
	if ((flags & ESCAPE_CONTROL) && (c < 0x20 || c == 0x7f))
		return true;
	if ((flags & ESCAPE_NON_ASCII) && c >= 0x80)
		return true;
	return (flags & ESCAPE_BACKSLASH) && c == '\\';
}

char *utf8_escape(const char *s, EscapeFlags flags)
{
	char *r, *p;

	r = malloc(strlen(s) * 4 + 1);
	if (!r)
		return NULL;
	p = r;
	while (*s) {
		size_t n = utf8_char_len(s);

		if (n > 1 && !(flags & ESCAPE_NON_ASCII)) {
			p = mempcpy(p, s, n);
			s += n;
		} else if (n == 0 || byte_escaped((unsigned char)*s, flags))
			p += sprintf(p, "\\x%02x", (unsigned char)*s++);
		else
			*p++ = *s++;
	}
	*p = 0;
	return r;
}
