/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fw-helperd-cache.h"

/* Between two chunks the deadline and the cancel flag are looked at. */
#define READ_CHUNK (1024 * 1024)

/* Nothing can change a held image under a request streaming from it, nor unseal it. */
#define HELD_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U /* linux/memfd.h of 6.3; glibc 2.36 lacks it */
#endif

int cached_blob_new(const char *name, FwBlob *blob, CachedBlob **ret)
{
	CachedBlob *c;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->name = strdup(name);
	if (!c->name) {
		free(c);
		return -ENOMEM;
	}
	atomic_init(&c->n_ref, 1);
	c->blob = blob;
	*ret = c;
	return 0;
}

CachedBlob *cached_blob_ref(CachedBlob *c)
{
	if (c)
		atomic_fetch_add(&c->n_ref, 1);
	return c;
}

CachedBlob *cached_blob_unref(CachedBlob *c)
{
	if (!c || atomic_fetch_sub(&c->n_ref, 1) > 1)
		return NULL;
	fw_blob_free(c->blob);
	verify_check_done(&c->verify);
	free(c->name);
	free(c);
	return NULL;
}

int cache_new(uint64_t max_bytes, Cache **ret)
{
	Cache *c;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->max_bytes = max_bytes;
	*ret = c;
	return 0;
}

Cache *cache_free(Cache *c)
{
	if (!c)
		return NULL;
	cache_clear(c);
	free(c);
	return NULL;
}

static CacheEntry *cache_find(Cache *c, const char *name)
{
	for (CacheEntry *e = c->entries; e; e = e->next)
		if (strcmp(e->blob->name, name) == 0)
			return e;
	return NULL;
}

int cache_add(Cache *c, CachedBlob *blob)
{
	CacheEntry *e;

	if (cache_find(c, blob->name))
		return -EEXIST;
	if (blob->blob->size > c->max_bytes || c->bytes > c->max_bytes - blob->blob->size)
		return -ENOSPC;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->blob = cached_blob_ref(blob);
	if (c->last)
		c->last->next = e;
	else
		c->entries = e;
	c->last = e;
	c->n_entries++;
	c->bytes += blob->blob->size;
	return 0;
}

CachedBlob *cache_get(Cache *c, const char *name)
{
	CacheEntry *e = cache_find(c, name);

	if (!e)
		return NULL;
	c->hits++;
	return cached_blob_ref(e->blob);
}

bool cache_contains(Cache *c, const char *name)
{
	return cache_find(c, name) != NULL;
}

uint64_t cache_clear(Cache *c)
{
	uint64_t bytes = c->bytes;

	for (CacheEntry *e = c->entries, *next; e; e = next) {
		next = e->next;
		cached_blob_unref(e->blob);
		free(e);
	}
	c->entries = c->last = NULL;
	c->n_entries = 0;
	c->bytes = 0;
	c->hits = 0;
	return bytes;
}

static bool interrupted(usec_t deadline, const atomic_bool *cancel, int *ret)
{
	if (cancel && atomic_load(cancel))
		*ret = -ECANCELED;
	else if (deadline != USEC_INFINITY && now_usec(CLOCK_MONOTONIC) >= deadline)
		*ret = -ETIME;
	else
		return false;
	return true;
}

/* The file must still be what was opened: one rewritten meanwhile would be held as a mix. */
static int check_unchanged(const FwBlob *b)
{
	struct stat st;

	if (fstat(b->fd, &st) < 0)
		return -errno;
	if (st.st_size != b->st.st_size || st.st_mtim.tv_sec != b->st.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != b->st.st_mtim.tv_nsec)
		return -ESTALE;
	return 0;
}

static int memfd_new(void)
{
	int fd;

	/* 6.3 and later warn once about a memfd made without saying whether it may execute */
	fd = memfd_create("fw-helperd-held", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
	if (fd < 0 && errno == EINVAL) /* 6.1 */
		fd = memfd_create("fw-helperd-held", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	return fd < 0 ? -errno : fd;
}

/*
 * Copies the file, a chunk at a time, into memfd within the kernel, or else (memfd < 0)
 * into buf, and checks it did not change meanwhile.
 */
static int copy_file(const FwBlob *b, int memfd, uint8_t *buf, usec_t deadline,
		     const atomic_bool *cancel)
{
	uint64_t done = 0;
	int r;

	while (done < b->size) {
		size_t want = (size_t)MIN(b->size - done, (uint64_t)READ_CHUNK);
		off_t offset = (off_t)done;
		ssize_t n;

		if (interrupted(deadline, cancel, &r))
			return r;
		n = memfd >= 0 ? sendfile(memfd, b->fd, &offset, want) :
				 pread(b->fd, buf + done, want, offset);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ESTALE; /* shrank under us */
		done += (uint64_t)n;
	}
	return check_unchanged(b);
}

static int copy_data(int memfd, const FwBlob *b, usec_t deadline, const atomic_bool *cancel)
{
	const uint8_t *p = b->data;
	size_t done = 0;
	int r;

	while (done < b->size) {
		ssize_t n;

		if (interrupted(deadline, cancel, &r))
			return r;
		n = write(memfd, p + done, MIN(b->size - done, (size_t)READ_CHUNK));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* For when no descriptor is left for a memfd: the bytes on the heap, as before memfds. */
static int read_into_heap(FwBlob *b, usec_t deadline, const atomic_bool *cancel)
{
	_cleanup_free_ uint8_t *data = NULL;
	int r;

	data = malloc(MAX(b->size, (size_t)1));
	if (!data)
		return -ENOMEM;
	r = copy_file(b, -EBADF, data, deadline, cancel);
	if (r < 0)
		return r;
	b->data = TAKE_PTR(data);
	b->fd = safe_close(b->fd);
	return 0;
}

int fw_blob_read_into_memory(FwBlob *b, usec_t deadline, const atomic_bool *cancel)
{
	_cleanup_close_ int memfd = -EBADF;
	int r;

	if (b->held || (b->fd < 0 && !b->data))
		return 0;
	memfd = memfd_new();
	if (memfd == -EMFILE || memfd == -ENFILE)
		return b->data ? 0 : read_into_heap(b, deadline, cancel);
	if (memfd < 0)
		return memfd;
	r = b->data ? copy_data(memfd, b, deadline, cancel) :
		      copy_file(b, memfd, NULL, deadline, cancel);
	if (r < 0)
		return r;
	if (fcntl(memfd, F_ADD_SEALS, HELD_SEALS) < 0)
		return -errno;
	safe_close(b->fd);
	b->data = mfree(b->data);
	fw_blob_unreserve(b); /* what it was unpacked into is gone */
	b->fd = TAKE_FD(memfd);
	b->held = true;
	return 0;
}

int cached_blob_hold(const char *name, FwBlob *blob, Verifier *v, char *const *roots,
		     usec_t deadline, const atomic_bool *cancel, CachedBlob **ret)
{
	_cleanup_(verify_check_done) VerifyCheck check = {};
	CachedBlob *c;
	unsigned generation = verifier_generation(v);
	int r;

	/* looked up while the file is open: a symlink is still told from what it points to */
	r = verify_begin(v, roots, name, blob, &check);
	if (r < 0)
		return r;
	r = fw_blob_read_into_memory(blob, deadline, cancel);
	if (r < 0)
		return r;
	r = verify_complete(&check, blob);
	if (r < 0)
		return r;
	r = cached_blob_new(name, blob, &c);
	if (r < 0)
		return r;
	c->checked = true;
	c->verify = check;
	check = (VerifyCheck){};
	c->verify_generation = generation;
	*ret = c;
	return 0;
}

bool cached_blob_checked(const CachedBlob *c, Verifier *v)
{
	return c->checked && c->verify_generation == verifier_generation(v);
}
