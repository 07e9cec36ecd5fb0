/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fw-helperd-kmod.h"
#include "fw-helperd-netlink.h"
#include "fw-helperd-rules.h"
#include "fw-helperd-udev.h"
#include "macro.h"

/*
 * The other text the daemon reads from outside: a request's uevent file (FIRMWARE=,
 * TIMEOUT=), the kernel's uevent messages (binary: NUL-separated), udev rules files (does one assign FW_HELPERD_IGNORE?) and the companion
 * module's entries. Each result is checked against what the input allows.
 */

static void fuzz_uevent(const char *text)
{
	_cleanup_free_ char *copy = strdup(text), *name = NULL;
	char *needle;

	if (!copy)
		return;
	(void)uevent_parse(copy, &name);
	if (!name)
		return;
	/* a FIRMWARE= line of the input, whole, without its line end */
	FUZZ_ASSERT(!strchr(name, '\n'));
	needle = malloc(strlen(name) + sizeof("FIRMWARE="));
	if (!needle)
		return;
	sprintf(needle, "FIRMWARE=%s", name);
	FUZZ_ASSERT(strstr(text, needle));
	free(needle);
}

static bool inside(const char *p, const char *buf, size_t len)
{
	return !p || (p >= buf && p + strlen(p) <= buf + len);
}

/* Whatever it takes from a message lies within the message, and agrees with its head. */
static void fuzz_kernel_message(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *buf = NULL;
	KernelUevent e;

	if (size > KERNEL_UEVENT_MAX || !(buf = malloc(size + 1)))
		return;
	memcpy(buf, data, size);
	if (kernel_uevent_parse(buf, size, &e) < 0)
		return;
	FUZZ_ASSERT(e.action && e.devpath && e.subsystem && e.devpath[0] == '/');
	FUZZ_ASSERT(inside(e.action, buf, size) && inside(e.devpath, buf, size) &&
		    inside(e.subsystem, buf, size) && inside(e.firmware, buf, size) &&
		    inside(e.timeout, buf, size));
	FUZZ_ASSERT(strncmp(buf, e.action, strlen(e.action)) == 0 &&
		    buf[strlen(e.action)] == '@' && strcmp(buf + strlen(e.action) + 1, e.devpath) == 0);
}

static void fuzz_entries(const char *text)
{
	_cleanup_free_ char *copy = strdup(text);
	char *save = NULL;

	for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		CompanionEntry e = {};

		if (companion_parse_entry(line, &e) < 0)
			continue;
		FUZZ_ASSERT(e.name && *e.name && strstr(line, e.name));
		free(e.name);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_free_ char *text = NULL;

	if (size > 64 * 1024)
		return 0;
	fuzz_kernel_message(data, size);
	text = strndup((const char *)data, size);
	if (!text)
		return 0;
	fuzz_uevent(text);
	if (rules_text_assigns(text, "FW_HELPERD_IGNORE"))
		FUZZ_ASSERT(strstr(text, "{FW_HELPERD_IGNORE}"));
	fuzz_entries(text);
	return 0;
}
