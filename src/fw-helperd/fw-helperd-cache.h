/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fw-helperd-loader.h"
#include "fw-helperd-verify.h"
#include "macro.h"
#include "util.h"

/*
 * Firmware held in memory across suspend. A CachedBlob is reference-counted (atomically:
 * the last reference may be dropped by a worker thread), so a request streaming from one
 * never sees it freed when the cache is released meanwhile. The Cache itself lives on the
 * event loop only.
 */
typedef struct CachedBlob {
	atomic_uint n_ref;
	char *name;
	FwBlob *blob;	/* held in memory (file closed): serving it touches no file system */
	/* The manifest check made when it was read (cached_blob_hold()), which stands for its
	 * answers: after resume neither the file nor the manifests may be there yet. */
	bool checked;
	VerifyCheck verify;
	unsigned verify_generation;	/* verifier_generation() then */
} CachedBlob;

CachedBlob *cached_blob_ref(CachedBlob *c);
CachedBlob *cached_blob_unref(CachedBlob *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(CachedBlob *, cached_blob_unref);

/* Wraps blob (taken on success, with one reference for the caller). */
int cached_blob_new(const char *name, FwBlob *blob, CachedBlob **ret);

/*
 * Checks blob (just found for name beneath roots by fw_blob_open(), its file still open)
 * against the manifests as they are now, reads it into memory (fw_blob_read_into_memory())
 * and wraps it, blob taken, the check kept with it. A compressed file is hashed as it lies
 * on disk, a plain one as the bytes held. Returns 0, -EACCES when v's policy refuses it,
 * or an error of fw_blob_read_into_memory(); blob stays the caller's on failure.
 */
int cached_blob_hold(const char *name, FwBlob *blob, Verifier *v, char *const *roots,
		     usec_t deadline, const atomic_bool *cancel, CachedBlob **ret);

/* Whether c's check stands for an answer verified by v now: no Reload came in between. */
bool cached_blob_checked(const CachedBlob *c, Verifier *v);

typedef struct CacheEntry {
	CachedBlob *blob;
	struct CacheEntry *next;
} CacheEntry;

typedef struct Cache {
	CacheEntry *entries;	/* in the order added */
	CacheEntry *last;
	unsigned n_entries;
	uint64_t bytes;		/* held by the cache (blobs still streaming after a clear are not) */
	uint64_t max_bytes;	/* PrewarmMemoryMax= */
	uint64_t hits;		/* served from memory since the last clear */
} Cache;

int cache_new(uint64_t max_bytes, Cache **ret);
Cache *cache_free(Cache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Cache *, cache_free);

/* Adds a reference to blob after those held: -EEXIST when the name is held already, -ENOSPC
 * when it does not fit. */
int cache_add(Cache *c, CachedBlob *blob);
/* A new reference to name's blob, or NULL; counts a hit. */
CachedBlob *cache_get(Cache *c, const char *name);
bool cache_contains(Cache *c, const char *name);
/* Drops every entry; returns the bytes it held. Blobs in use live on until unreferenced. */
uint64_t cache_clear(Cache *c);

/*
 * Turns a blob into one held in memory, in a sealed memfd (FwBlob.held), so that requests
 * stream it with sendfile() as they would the file, and no file system is touched: copies
 * the file in chunks within the kernel (checking deadline on CLOCK_MONOTONIC and *cancel
 * in between) and checks it did not change meanwhile, or copies the unpacked data and
 * frees it with its share of the unpack budget; then closes the file. With no descriptor
 * left for a memfd (EMFILE, ENFILE) the bytes go on the heap instead (FwBlob.data).
 * Blobs held already are left as they are.
 * Returns 0, -ETIME, -ECANCELED, -ESTALE or another negative errno; b is unchanged then.
 */
int fw_blob_read_into_memory(FwBlob *b, usec_t deadline, const atomic_bool *cancel);
