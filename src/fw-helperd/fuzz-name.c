/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fw-helperd-name.h"
#include "macro.h"

/*
 * Feeds arbitrary bytes to fw_name_check() and fw_name_from_sysfs() and checks what an
 * accepted name promises, component by component, with a second, naive implementation:
 * a bug in the check should show up as a disagreement, not only as a crash.
 */

static bool component_is_safe(const char *c, size_t len)
{
	if (len == 0 || len > FW_NAME_COMPONENT_MAX)
		return false;
	if (strncmp(c, ".", len) == 0 || strncmp(c, "..", len) == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)c[i] < 0x20 || c[i] == 0x7f)
			return false;
	return true;
}

static bool name_is_safe(const char *name)
{
	size_t len = strlen(name);
	const char *c = name;

	if (len == 0 || len > FW_NAME_MAX || name[0] == '/')
		return false;
	for (const char *s = name;; s++)
		if (*s == '/' || *s == 0) {
			if (!component_is_safe(c, (size_t)(s - c)))
				return false;
			if (*s == 0)
				return true;
			c = s + 1;
		}
}

static void fuzz_check(const char *s)
{
	const char *reason = NULL;
	int r;

	r = fw_name_check(s, &reason);
	FUZZ_ASSERT(r == 0 || r == -EINVAL || r == -ENAMETOOLONG);
	FUZZ_ASSERT((r == 0) == name_is_safe(s));
	if (r < 0)
		FUZZ_ASSERT(reason && *reason);
}

static void fuzz_from_sysfs(const char *s)
{
	_cleanup_free_ char *name = NULL;

	if (fw_name_from_sysfs(s, &name) < 0)
		return; /* only -ENOMEM */
	FUZZ_ASSERT(strlen(name) == strlen(s));
	for (size_t i = 0; s[i]; i++)
		FUZZ_ASSERT(s[i] == '!' ? name[i] == '/' : name[i] == s[i]);
	fuzz_check(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *s = NULL;

	/* long enough to cross FW_NAME_MAX, short enough to keep the fuzzer fast */
	if (size > 2 * FW_NAME_MAX)
		return 0;
	s = strndup((const char *)data, size);
	if (!s)
		return 0;
	fuzz_check(s);
	fuzz_from_sysfs(s);
	return 0;
}
