/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fw-helperd-verify.h"
#include "log.h"
#include "macro.h"
#include "util.h"

/*
 * Feeds arbitrary bytes to manifest_parse() (manifests lie beside the firmware and may be
 * written by anyone who can write a firmware root). Besides crashes and leaks, checks what
 * lookups rely on: entries sorted with one per path, paths normalised, every entry found
 * under its own path, and the same answer on a second parse.
 */

static void check_path(const char *p)
{
	FUZZ_ASSERT(*p && strcmp(p, "/") != 0);
	FUZZ_ASSERT(!strstr(p, "//"));
	FUZZ_ASSERT(!startswith(p, "./") && !strstr(p, "/./") && !endswith(p, "/.") && strcmp(p, ".") != 0);
	FUZZ_ASSERT(!startswith(p, "../") && !strstr(p, "/../") && !endswith(p, "/..") &&
		    strcmp(p, "..") != 0);
	FUZZ_ASSERT(!endswith(p, "/"));
}

static void check_manifest(const Manifest *m)
{
	for (size_t i = 0; i < m->n_entries; i++) {
		const ManifestEntry *e = &m->entries[i];

		check_path(e->path);
		FUZZ_ASSERT(e->line > 0);
		if (i > 0)
			FUZZ_ASSERT(strcmp(m->entries[i - 1].path, e->path) < 0);
		FUZZ_ASSERT(manifest_lookup(m, e->path) == e);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* every malformed line is logged: keep the fuzzer fast and its output clean */
	log_set_target(LOG_TARGET_STDERR);
	log_set_max_level(LOG_CRIT);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(manifest_freep) Manifest *a = NULL, *b = NULL;

	if (size > 256 * 1024)
		return 0;
	if (manifest_parse("fuzz.sums", (const char *)data, size, &a) < 0 ||
	    manifest_parse("fuzz.sums", (const char *)data, size, &b) < 0)
		return 0;	/* only -ENOMEM */
	check_manifest(a);
	FUZZ_ASSERT(a->n_entries == b->n_entries && a->n_bad == b->n_bad);
	for (size_t i = 0; i < a->n_entries; i++) {
		FUZZ_ASSERT(strcmp(a->entries[i].path, b->entries[i].path) == 0);
		FUZZ_ASSERT(a->entries[i].bad == b->entries[i].bad);
		FUZZ_ASSERT(memcmp(a->entries[i].digest, b->entries[i].digest, SHA256_DIGEST_SIZE) == 0);
	}
	return 0;
}
