/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fw-helperd-conf.h"
#include "log.h"
#include "macro.h"

/*
 * Feeds arbitrary text to config_parse_string() on a fresh Config. Besides crashes and
 * leaks, checks what an accepted configuration promises the daemon: values in range,
 * search roots absolute and normalised, and the same answer on a second parse.
 */

static void check_search_root(const char *p)
{
	FUZZ_ASSERT(p[0] == '/');
	FUZZ_ASSERT(!strstr(p, "//"));
	FUZZ_ASSERT(!strstr(p, "/./") && !endswith(p, "/."));
	FUZZ_ASSERT(!strstr(p, "/../") && !endswith(p, "/.."));
	FUZZ_ASSERT(strcmp(p, "/") == 0 || !endswith(p, "/"));
}

static void check_config(const Config *c)
{
	FUZZ_ASSERT(c->workers >= 1 && c->workers <= 64);
	FUZZ_ASSERT(c->max_size > 0);
	FUZZ_ASSERT(event_source_to_string(c->event_source));
	FUZZ_ASSERT(c->optional_log_level >= 0 && c->optional_log_level <= 7);
	FUZZ_ASSERT(c->timeout_margin != USEC_INFINITY);
	for (char **p = c->search_path; p && *p; p++)
		check_search_root(*p);
	for (char **p = c->optional_firmware; p && *p; p++)
		FUZZ_ASSERT(**p && !strpbrk(*p, " \t\n"));
}

static bool strv_same(char **a, char **b)
{
	size_t n = strv_length(a);

	if (n != strv_length(b))
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* every rejected line would be logged: keep the fuzzer fast and its output clean */
	log_set_target(LOG_TARGET_STDERR);
	log_set_max_level(LOG_CRIT);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(config_freep) Config *a = NULL, *b = NULL;
	_cleanup_free_ char *text = NULL;
	int ra, rb;

	if (size > 64 * 1024)
		return 0;
	text = strndup((const char *)data, size);
	if (!text || config_new(&a) < 0 || config_new(&b) < 0)
		return 0;

	ra = config_parse_string(a, "fuzz.conf", text);
	rb = config_parse_string(b, "fuzz.conf", text);
	FUZZ_ASSERT(ra == 0 || ra == -EINVAL || ra == -ENOMEM);
	FUZZ_ASSERT(ra == rb);
	/* a parser stores only valid values, so even a rejected file leaves a sane Config */
	check_config(a);
	if (ra < 0)
		return 0;
	FUZZ_ASSERT(a->workers == b->workers && a->max_size == b->max_size);
	FUZZ_ASSERT(strv_same(a->search_path, b->search_path));
	FUZZ_ASSERT(strv_same(a->optional_firmware, b->optional_firmware));
	FUZZ_ASSERT(strv_same(a->custom_fallback, b->custom_fallback));
	return 0;
}
