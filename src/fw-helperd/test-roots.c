/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fw-helperd-loader.h"
#include "fw-helperd-roots.h"
#include "tests.h"
#include "util.h"

static char top[] = "/tmp/test-roots-XXXXXX";

static char *at(const char *relative)
{
	return path_join(top, relative);
}

static void touch(const char *relative)
{
	_cleanup_free_ char *path = at(relative);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, "fw", 2) != 2) {
		perror(path);
		exit(EXIT_FAILURE);
	}
	close(fd);
}

static void mkdir_at(const char *relative)
{
	_cleanup_free_ char *path = at(relative);

	if (mkdir(path, 0755) < 0) {
		perror(path);
		exit(EXIT_FAILURE);
	}
}

/* The roots top/a and top/b, b may be NULL. */
static char **roots_of(const char *a, const char *b)
{
	_cleanup_free_ char *pa = at(a), *pb = b ? at(b) : NULL;
	char **roots = NULL;

	if (strv_extend(&roots, pa) < 0 || (pb && strv_extend(&roots, pb) < 0))
		exit(EXIT_FAILURE);
	return roots;
}

/* roots: "present" (exists) and "lib/updates/rel" (absent, and so is lib/updates) */
static RootsWatch *watch_two(char ***roots)
{
	RootsWatch *w = NULL;

	*roots = roots_of("present", "lib/updates/rel");
	CHECK(roots_watch_new(*roots, &w) == 0);
	return w;
}

static void test_watch(void)
{
	_cleanup_strv_free_ char **roots = NULL;
	RootsWatch *w;

	mkdir_at("present");
	mkdir_at("lib");

	w = watch_two(&roots);
	CHECK(!roots_watch_changed(w));
	touch("present/fw.bin"); /* what a root holds is looked up by name each time */
	CHECK(!roots_watch_changed(w));
	mkdir_at("lib/updates"); /* on the way to the absent root: it may come next */
	CHECK(roots_watch_changed(w));
	CHECK(roots_watch_changed(w)); /* for good */
	roots_watch_free(w);
	strv_free(roots);

	w = watch_two(&roots);
	CHECK(!roots_watch_changed(w));
	mkdir_at("lib/updates/rel"); /* the absent root itself */
	CHECK(roots_watch_changed(w));
	roots_watch_free(w);
	strv_free(roots);

	w = watch_two(&roots);
	CHECK(!roots_watch_changed(w));
	{
		_cleanup_free_ char *from = at("present"), *to = at("moved");

		CHECK(rename(from, to) == 0); /* a root moved away */
	}
	CHECK(roots_watch_changed(w));
	roots_watch_free(w);

	CHECK(roots_watch_changed(NULL)); /* no watch: anything may have changed */
}

/* A set is what the roots were when opened: a root created later is not in it. */
static void test_set(void)
{
	_cleanup_strv_free_ char **roots = NULL;
	_cleanup_(fw_root_set_unrefp) FwRootSet *set = NULL, *again = NULL, *loop = NULL;
	_cleanup_(fw_blob_freep) FwBlob *b = NULL, *c = NULL;
	_cleanup_free_ char *found = NULL, *link = at("loop");

	roots = roots_of("set-a", "set-b");
	mkdir_at("set-b");
	touch("set-b/fw.bin");

	CHECK(fw_root_set_open(roots, &set) == 0 && fw_root_set_settled(set));
	CHECK(fw_blob_find_in(set, "fw.bin", UINT64_MAX, &b, NULL) == 0);
	found = at("set-b/fw.bin");
	CHECK(b && strcmp(b->path, found) == 0);

	mkdir_at("set-a");
	touch("set-a/fw.bin");
	CHECK(fw_blob_find_in(set, "fw.bin", UINT64_MAX, &c, NULL) == 0);
	CHECK(c && strcmp(c->path, found) == 0); /* set-a came after the set */
	fw_blob_free(c);
	c = NULL;
	CHECK(fw_root_set_open(roots, &again) == 0);
	CHECK(fw_blob_find_in(again, "fw.bin", UINT64_MAX, &c, NULL) == 0);
	CHECK(c && strstr(c->path, "/set-a/"));
	CHECK(fw_root_set_ref(again) == again && !fw_root_set_unref(again));

	/* an error that is not absence may pass: such a set is opened again next time */
	CHECK(symlink("loop", link) == 0);
	free(roots[0]);
	roots[0] = strdup(link);
	CHECK(fw_root_set_open(roots, &loop) == 0 && !fw_root_set_settled(loop));
}

int main(void)
{
	_cleanup_free_ char *cmd = NULL;

	if (!mkdtemp(top))
		return EXIT_FAILURE;
	test_watch();
	test_set();
	if (asprintf(&cmd, "rm -rf %s", top) > 0)
		(void)system(cmd);
	return test_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
