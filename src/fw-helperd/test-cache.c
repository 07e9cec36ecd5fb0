/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fw-helperd-cache.h"
#include "fw-helperd-memory.h"
#include "macro.h"
#include "util.h"

static unsigned n_failed;

static void check(bool ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "FAIL", what);
	if (!ok)
		n_failed++;
}

static FwBlob *memory_blob(size_t size, uint8_t fill)
{
	FwBlob *b = calloc(1, sizeof(*b));

	b->fd = -EBADF;
	b->path = strdup("/lib/firmware/test.bin");
	b->data = malloc(size);
	memset(b->data, fill, size);
	b->size = size;
	return b;
}

static CachedBlob *new_cached(const char *name, size_t size)
{
	CachedBlob *c = NULL;

	if (cached_blob_new(name, memory_blob(size, 0x5a), &c) < 0)
		return NULL;
	return c;
}

static void test_refcount(void)
{
	_cleanup_(cache_freep) Cache *c = NULL;
	CachedBlob *a = new_cached("a.bin", 100), *in_use;

	check(cache_new(1000, &c) == 0, "new cache");
	check(cache_add(c, a) == 0 && c->n_entries == 1 && c->bytes == 100, "added");
	check(cache_add(c, a) == -EEXIST, "same name twice refused");
	a = cached_blob_unref(a); /* the cache holds the only reference now */

	in_use = cache_get(c, "a.bin");
	check(in_use && c->hits == 1, "lookup is a hit");
	check(!cache_get(c, "b.bin") && c->hits == 1, "miss is not a hit");
	check(cache_clear(c) == 100 && c->n_entries == 0 && c->bytes == 0, "cleared: 100 bytes");
	/* a request streaming from it still can */
	check(in_use && in_use->blob->size == 100 && ((uint8_t *)in_use->blob->data)[99] == 0x5a,
	      "blob still valid after the cache let go");
	check(atomic_load(&in_use->n_ref) == 1, "held by the request alone");
	cached_blob_unref(in_use);
}

static void test_budget(void)
{
	_cleanup_(cache_freep) Cache *c = NULL;
	_cleanup_(cached_blob_unrefp) CachedBlob *a = new_cached("a", 600), *b = new_cached("b", 500),
						 *small = new_cached("c", 400);

	check(cache_new(1000, &c) == 0, "new cache");
	check(cache_add(c, a) == 0, "600 of 1000");
	check(cache_add(c, b) == -ENOSPC && c->bytes == 600, "500 more does not fit");
	check(cache_add(c, small) == 0 && c->bytes == 1000, "400 fits exactly");
	check(cache_contains(c, "c") && !cache_contains(c, "b"), "contents as expected");
}

/* The order added is the order walked: prewarm ranks what it reads, the pin keeps it. */
static void test_order(void)
{
	_cleanup_(cache_freep) Cache *c = NULL;
	const char *want[] = { "first", "second", "third" };
	size_t i = 0;

	check(cache_new(1000, &c) == 0, "new cache");
	for (size_t k = 0; k < ELEMENTSOF(want); k++) {
		_cleanup_(cached_blob_unrefp) CachedBlob *b = new_cached(want[k], 10);

		check(cache_add(c, b) == 0, want[k]);
	}
	for (CacheEntry *e = c->entries; e; e = e->next, i++)
		check(i < ELEMENTSOF(want) && strcmp(e->blob->name, want[i]) == 0, "walked in the order added");
	check(i == 3, "three entries walked");
	cache_clear(c);
	{
		_cleanup_(cached_blob_unrefp) CachedBlob *b = new_cached("again", 10);

		check(cache_add(c, b) == 0 && c->entries == c->last && !c->entries->next,
		      "added after a clear: alone");
	}
}

static char *temp_file(size_t size)
{
	char tmpl[] = "/tmp/test-cache-XXXXXX";
	int fd = mkstemp(tmpl);
	uint8_t buf[4096];

	if (fd < 0)
		return NULL;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	for (size_t done = 0; done < size; done += sizeof(buf))
		if (write(fd, buf, MIN(sizeof(buf), size - done)) < 0)
			break;
	close(fd);
	return strdup(tmpl);
}

static FwBlob *file_blob(const char *path)
{
	FwBlob *b = calloc(1, sizeof(*b));

	b->path = strdup(path);
	b->fd = open(path, O_RDONLY | O_CLOEXEC);
	fstat(b->fd, &b->st);
	b->size = (size_t)b->st.st_size;
	return b;
}

static bool byte_at(int fd, size_t offset, uint8_t want)
{
	uint8_t got;

	return pread(fd, &got, 1, (off_t)offset) == 1 && got == want;
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)((i % 4096) * 7 + 3);
}

static void test_read_into_memory(void)
{
	size_t size = 3 * 1024 * 1024 + 17;
	_cleanup_free_ char *path = temp_file(size);
	_cleanup_(fw_blob_freep) FwBlob *b = NULL, *late = NULL, *cancelled = NULL, *changed = NULL;
	atomic_bool cancel = true;
	struct stat file_st, held_st;
	int fd, seals;

	check(path != NULL, "temporary firmware");
	b = file_blob(path);
	file_st = b->st;
	check(fw_blob_read_into_memory(b, USEC_INFINITY, NULL) == 0, "read whole");
	check(b->held && !b->data && b->size == size && fstat(b->fd, &held_st) == 0 &&
		      held_st.st_ino != file_st.st_ino && held_st.st_size == (off_t)size,
	      "held in a memfd of its size, not the file");
	check(byte_at(b->fd, 0, pattern(0)) && byte_at(b->fd, size - 1, pattern(size - 1)),
	      "first and last byte right");
	seals = fcntl(b->fd, F_GET_SEALS);
	check(seals >= 0 && (seals & (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) ==
				    (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
	      "sealed against writes, size changes and unsealing");
	check(write(b->fd, "x", 1) < 0 && ftruncate(b->fd, 1) < 0, "cannot be changed");
	check(b->st.st_ino == file_st.st_ino, "st still says which file it was read from");
	check(fw_blob_read_into_memory(b, USEC_INFINITY, NULL) == 0 && b->held,
	      "held twice: left as it is");

	late = file_blob(path);
	check(fw_blob_read_into_memory(late, 1, NULL) == -ETIME && !late->held && !late->data,
	      "past deadline: -ETIME, nothing kept");
	cancelled = file_blob(path);
	check(fw_blob_read_into_memory(cancelled, USEC_INFINITY, &cancel) == -ECANCELED,
	      "cancelled: -ECANCELED");

	changed = file_blob(path);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	check(fd >= 0 && write(fd, "x", 1) == 1, "file grows meanwhile");
	safe_close(fd);
	check(fw_blob_read_into_memory(changed, USEC_INFINITY, NULL) == -ESTALE && !changed->held,
	      "changed: -ESTALE");
	unlink(path);
}

/* An unpacked image: copied into the memfd, its heap copy and unpack budget given back. */
static void test_unpacked_into_memory(void)
{
	_cleanup_(fw_memory_freep) FwMemory *budget = NULL;
	_cleanup_(fw_blob_freep) FwBlob *b = memory_blob(300000, 0xa5);

	check(fw_memory_new(1 << 20, &budget) == 0 && fw_memory_reserve(budget, 300000, 0) == 0,
	      "unpack budget reserved");
	b->memory = budget;
	b->reserved = 300000;
	check(fw_blob_read_into_memory(b, USEC_INFINITY, NULL) == 0 && b->held && !b->data &&
		      byte_at(b->fd, 299999, 0xa5),
	      "unpacked image held in a memfd");
	check(fw_memory_used(budget) == 0 && b->reserved == 0, "its unpack budget released");
}

/* Out of descriptors: the bytes go on the heap as before, the file closed. */
static void test_no_descriptor_left(void)
{
	_cleanup_free_ char *path = temp_file(70000);
	_cleanup_(fw_blob_freep) FwBlob *b = NULL;
	struct rlimit saved, tight;
	int r;

	b = file_blob(path);
	check(getrlimit(RLIMIT_NOFILE, &saved) == 0, "descriptor limit read");
	tight = (struct rlimit){ .rlim_cur = (rlim_t)b->fd + 1, .rlim_max = saved.rlim_max };
	check(setrlimit(RLIMIT_NOFILE, &tight) == 0, "no descriptor left above the file's");
	r = fw_blob_read_into_memory(b, USEC_INFINITY, NULL);
	check(setrlimit(RLIMIT_NOFILE, &saved) == 0, "limit restored");
	check(r == 0 && !b->held && b->data && b->fd < 0 &&
		      ((uint8_t *)b->data)[69999] == pattern(69999),
	      "held on the heap instead, file closed");
	unlink(path);
}

int main(void)
{
	test_refcount();
	test_budget();
	test_order();
	test_read_into_memory();
	test_unpacked_into_memory();
	test_no_descriptor_left();
	printf("%u failed\n", n_failed);
	return n_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
