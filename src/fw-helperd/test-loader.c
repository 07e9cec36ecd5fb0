/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <lzma.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "fw-helperd-loader.h"
#include "macro.h"
#include "util.h"

/* MaxSize= alone, no unpack budget */
#define LIMITS(max) (&(FwLimits){ .max_size = (max), .deadline = USEC_INFINITY })

/*
 * Fixture trees under a mkdtemp() directory: <base>/lib/firmware/... is the built-in search
 * path seen through fw_search_path_build()'s prefix, <base>/custom the firmware_class.path
 * root, <base>/extra a SearchPath= root, <base>/outside what no root may reach.
 * The whole suite runs twice: with openat2() and with the hand walk used without it.
 */

#define RELEASE "6.1.0-test"
#define MiB (1024U * 1024U)

static unsigned n_failed;
static char base[] = "/tmp/test-loader-XXXXXX";
static const char *mode = "openat2";

static void check(bool ok, const char *what, const char *format, ...) _printf_(3, 4);
static void check(bool ok, const char *what, const char *format, ...)
{
	va_list ap;

	printf("%s - [%s] %s", ok ? "ok" : "FAIL", mode, what);
	if (!ok && format) {
		printf(": ");
		va_start(ap, format);
		vprintf(format, ap);
		va_end(ap);
	}
	printf("\n");
	if (!ok)
		n_failed++;
}

static void die(const char *what)
{
	fprintf(stderr, "fixture setup failed: %s: %m\n", what);
	exit(EXIT_FAILURE);
}

static char *fixture(const char *relative)
{
	char *p = path_join(base, relative);

	if (!p)
		die("path_join");
	return p;
}

static void mkdir_parents(const char *path)
{
	_cleanup_free_ char *copy = strdup(path);

	if (!copy)
		die("strdup");
	for (char *s = strchr(copy + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		if (mkdir(copy, 0755) < 0 && errno != EEXIST)
			die(copy);
		*s = '/';
	}
}

static void put(const char *relative, const void *data, size_t size)
{
	_cleanup_free_ char *path = fixture(relative);
	_cleanup_fclose_ FILE *f = NULL;

	mkdir_parents(path);
	f = fopen(path, "we");
	if (!f || fwrite(data, 1, size, f) != size)
		die(path);
}

static void put_string(const char *relative, const char *s)
{
	put(relative, s, strlen(s));
}

static void put_symlink(const char *relative, const char *target)
{
	_cleanup_free_ char *path = fixture(relative);

	mkdir_parents(path);
	if (symlink(target, path) < 0)
		die(path);
}

static void rm(const char *relative)
{
	_cleanup_free_ char *path = fixture(relative);

	if (unlink(path) < 0)
		die(path);
}

static void *xz_compress(const void *data, size_t size, size_t *ret_size)
{
	size_t allocated = size + size / 2 + 4096, pos = 0;
	uint8_t *out = malloc(allocated);

	if (!out || lzma_easy_buffer_encode(6, LZMA_CHECK_CRC32, NULL, data, size, out, &pos,
					    allocated) != LZMA_OK)
		die("lzma_easy_buffer_encode");
	*ret_size = pos;
	return out;
}

/*
 * With a checksum, as zstd(1) writes it by default: without one a flipped literal byte
 * cannot be noticed by anyone, the kernel included. declare_size false writes the frame
 * the way a stream is written, with no content size in its header.
 */
static void *zstd_compress(const void *data, size_t size, bool declare_size, size_t *ret_size)
{
	size_t allocated = ZSTD_compressBound(size), n;
	ZSTD_CCtx *c = ZSTD_createCCtx();
	uint8_t *out = malloc(allocated);

	if (!c || !out)
		die("ZSTD_createCCtx");
	ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, declare_size);
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	if (declare_size)
		n = ZSTD_compress2(c, out, allocated, data, size);
	else {
		ZSTD_inBuffer in = { data, size, 0 };
		ZSTD_outBuffer o = { out, allocated, 0 };

		n = ZSTD_compressStream2(c, &o, &in, ZSTD_e_end);
		if (n != 0)
			die("ZSTD_compressStream2");
		n = o.pos;
	}
	if (ZSTD_isError(n))
		die("ZSTD_compress2");
	ZSTD_freeCCtx(c);
	*ret_size = n;
	return out;
}

static void put_xz(const char *relative, const void *data, size_t size)
{
	_cleanup_free_ void *z = NULL;
	size_t n;

	z = xz_compress(data, size, &n);
	put(relative, z, n);
}

static void put_zstd(const char *relative, const void *data, size_t size, bool declare_size)
{
	_cleanup_free_ void *z = NULL;
	size_t n;

	z = zstd_compress(data, size, declare_size, &n);
	put(relative, z, n);
}

static char **roots_default(void)
{
	_cleanup_free_ char *custom = fixture("custom"), *extra = fixture("extra");
	char *extras[] = { extra, NULL };
	char **roots = NULL;

	if (fw_search_path_build(base, custom, RELEASE, extras, &roots) < 0)
		die("fw_search_path_build");
	return roots;
}

/* Loads name and returns its contents as a string (plain or decompressed), or NULL. */
static int load(const char *name, uint64_t max_size, FwBlob **ret_blob, char **ret_contents)
{
	_cleanup_strv_free_ char **roots = roots_default();
	_cleanup_(fw_blob_freep) FwBlob *b = NULL;
	char *contents;
	int r;

	r = fw_blob_open(roots, name, LIMITS(max_size), &b, NULL);
	if (r < 0)
		return r;
	contents = calloc(1, b->size + 1);
	if (!contents)
		die("calloc");
	if (b->data)
		memcpy(contents, b->data, b->size);
	else if (pread(b->fd, contents, b->size, 0) != (ssize_t)b->size)
		die("pread");
	*ret_contents = contents;
	if (ret_blob)
		*ret_blob = TAKE_PTR(b);
	return 0;
}

static void expect_contents(const char *name, const char *want, const char *what)
{
	_cleanup_free_ char *got = NULL;
	int r;

	r = load(name, 64 * MiB, NULL, &got);
	check(r == 0 && strcmp(got, want) == 0, what, "wanted '%s', got %s '%s'", want,
	      r < 0 ? strerror(-r) : "contents", got ?: "");
}

static void expect_error(const char *name, uint64_t max_size, int want, const char *what)
{
	_cleanup_free_ char *got = NULL;
	int r;

	r = load(name, max_size, NULL, &got);
	check(r == want, what, "wanted %s, got %s%s%s", strerror(-want), r < 0 ? strerror(-r) : "a blob",
	      got ? ": " : "", got ?: "");
}

static void test_search_path(void)
{
	_cleanup_strv_free_ char **roots = NULL, **bare = NULL;
	_cleanup_free_ char *joined = NULL, *want = NULL;
	char *extras[] = { "/opt/fw/", "/fixture/lib/firmware/", "relative/dir", "/opt//fw", NULL };
	int r;

	r = fw_search_path_build("/fixture/", "/custom//path/", RELEASE, extras, &roots);
	joined = roots ? strv_join(roots, " ") : NULL;
	want = strdup("/custom/path /fixture/lib/firmware/updates/" RELEASE " /fixture/lib/firmware/updates "
		      "/fixture/lib/firmware/" RELEASE " /fixture/lib/firmware /opt/fw");
	check(r == 0 && joined && strcmp(joined, want) == 0,
	      "search path: custom first, kernel order, extra last, no duplicates, no relative dirs",
	      "wanted '%s', got '%s'", want, joined ?: strerror(-r));

	r = fw_search_path_build(NULL, "", NULL, NULL, &bare);
	free(joined);
	joined = bare ? strv_join(bare, " ") : NULL;
	check(r == 0 && joined && strcmp(joined, "/lib/firmware/updates /lib/firmware") == 0,
	      "search path: no prefix, empty custom path, no release", "got '%s'", joined ?: strerror(-r));
}

static void test_read_custom(void)
{
	_cleanup_free_ char *sysfs = fixture("sys"), *value = NULL, *shorter = NULL,
			    *sentinel = strdup("x");
	_cleanup_close_ int fd = -EBADF;
	char *unset = sentinel;
	int r;

	put_string("sys/module/firmware_class/parameters/path", "/opt/firmware\n");
	fd = fw_search_path_open_custom(sysfs);
	check(fd >= 0, "custom path parameter opened", "got %s", strerror(-fd));
	r = fw_search_path_read_custom(fd, &value);
	check(r == 0 && value && strcmp(value, "/opt/firmware") == 0, "custom path read, newline stripped",
	      "got %s '%s'", strerror(-r), value ?: "(null)");

	/* the same fd sees what is written later, from the start, however short */
	put_string("sys/module/firmware_class/parameters/path", "/fw\n");
	r = fw_search_path_read_custom(fd, &shorter);
	check(r == 0 && shorter && strcmp(shorter, "/fw") == 0, "custom path read again through the open fd",
	      "got %s '%s'", strerror(-r), shorter ?: "(null)");

	put_string("sys/module/firmware_class/parameters/path", "\n");
	r = fw_search_path_read_custom(fd, &unset);
	check(r == 0 && !unset, "unset custom path reads as NULL", "got %s '%s'", strerror(-r), unset ?: "(null)");

	rm("sys/module/firmware_class/parameters/path");
	r = fw_search_path_open_custom(sysfs);
	check(r == -ENOENT, "missing parameter: -ENOENT", "got %s", strerror(-r));
}

/* The same name in every root: take them away one by one, each time the next one shows. */
static void test_precedence(void)
{
	static const struct {
		const char *path;
		const char *what;
	} ladder[] = {
		{ "custom/prec.bin", "custom path beats updates/<release>" },
		{ "lib/firmware/updates/" RELEASE "/prec.bin", "updates/<release> beats updates" },
		{ "lib/firmware/updates/prec.bin", "updates beats <release>" },
		{ "lib/firmware/" RELEASE "/prec.bin", "<release> beats /lib/firmware" },
		{ "lib/firmware/prec.bin", "/lib/firmware beats extra dirs" },
		{ "extra/prec.bin", "extra dirs are searched last" },
	};

	for (size_t i = 0; i < ELEMENTSOF(ladder); i++)
		put_string(ladder[i].path, ladder[i].path);
	for (size_t i = 0; i < ELEMENTSOF(ladder); i++) {
		expect_contents("prec.bin", ladder[i].path, ladder[i].what);
		rm(ladder[i].path);
	}
	expect_error("prec.bin", 64 * MiB, -ENOENT, "gone from every root: -ENOENT");
}

/* Where a name not found was looked for, for the journal: the search's own order. */
static void test_candidates(void)
{
	_cleanup_strv_free_ char **tried = NULL, **roots = roots_default();
	_cleanup_free_ char *contents = NULL, *first = NULL, *zst = NULL, *last = NULL;
	size_t n_roots = strv_length(roots);
	int r;

	r = load("nowhere.bin", 64 * MiB, NULL, &contents);
	check(r == -ENOENT, "a name in no root: -ENOENT", "got %s", strerror(-r));
	r = fw_search_candidates(roots, "nowhere.bin", &tried);
	first = path_join(roots[0], "nowhere.bin");
	zst = path_join(roots[0], "nowhere.bin.zst");
	last = path_join(roots[n_roots - 1], "nowhere.bin.xz");
	check(r == 0 && strv_length(tried) == 3 * n_roots && strcmp(tried[0], first) == 0 &&
		      strcmp(tried[n_roots], zst) == 0 && strcmp(tried[3 * n_roots - 1], last) == 0,
	      "the candidates are every root for plain, then .zst, then .xz",
	      "got %s, %zu paths, first '%s'", strerror(-r), strv_length(tried),
	      tried ? tried[0] : "(none)");
}

static void test_suffix_order(void)
{
	/* a plain file in the last root still beats compressed ones in the first */
	put_string("lib/firmware/sfx.bin", "plain");
	put_zstd("custom/sfx.bin.zst", "zstd", 4, true);
	put_xz("custom/sfx.bin.xz", "xz", 2);
	expect_contents("sfx.bin", "plain", "plain name in any root beats .zst/.xz in an earlier one");
	rm("lib/firmware/sfx.bin");
	put_xz("lib/firmware/updates/sfx2.bin.xz", "xz", 2);
	put_zstd("lib/firmware/sfx2.bin.zst", "zstd", 4, true);
	expect_contents("sfx2.bin", "zstd", ".zst in any root beats .xz in an earlier one");
	expect_contents("sfx.bin", "zstd", ".zst beats .xz in the same root");
}

static void test_plain_blob(void)
{
	_cleanup_(fw_blob_freep) FwBlob *b = NULL;
	_cleanup_free_ char *contents = NULL, *want_path = fixture("lib/firmware/vendor/plain.bin");
	int r;

	put_string("lib/firmware/vendor/plain.bin", "0123456789");
	r = load("vendor/plain.bin", 64 * MiB, &b, &contents);
	check(r == 0 && b->fd >= 0 && !b->data && b->size == 10 && b->st.st_size == 10 &&
		      S_ISREG(b->st.st_mode) && b->compression == FW_COMPRESSION_NONE &&
		      strcmp(b->path, want_path) == 0,
	      "plain file in a subdirectory: fd kept open, st filled, no copy", "got %s", strerror(-r));
	check(r == 0 && (fcntl(b->fd, F_GETFL) & O_NONBLOCK) == 0 && (fcntl(b->fd, F_GETFD) & FD_CLOEXEC),
	      "plain file fd is blocking and close-on-exec", NULL);
	expect_error("vendor/plain.bin", 9, -EFBIG, "plain file past max_size: -EFBIG");
	expect_contents("vendor/plain.bin", "0123456789", "plain file of exactly max_size is served");
}

static void test_compressed(void)
{
	_cleanup_(fw_blob_freep) FwBlob *b = NULL;
	_cleanup_free_ char *contents = NULL;
	int r;

	put_xz("lib/firmware/c/x.bin.xz", "xz payload", 10);
	r = load("c/x.bin", 64 * MiB, &b, &contents);
	check(r == 0 && strcmp(contents, "xz payload") == 0 && b->compression == FW_COMPRESSION_XZ &&
		      b->fd < 0 && b->data && b->size == 10 && endswith(b->path, "/c/x.bin.xz"),
	      ".xz decompressed into memory", "got %s '%s'", strerror(-r), contents ?: "");
	b = fw_blob_free(b);
	contents = mfree(contents);

	put_zstd("lib/firmware/c/z.bin.zst", "zstd payload", 12, true);
	r = load("c/z.bin", 64 * MiB, &b, &contents);
	check(r == 0 && strcmp(contents, "zstd payload") == 0 && b->compression == FW_COMPRESSION_ZSTD &&
		      b->fd < 0 && b->size == 12,
	      ".zst decompressed into memory", "got %s '%s'", strerror(-r), contents ?: "");

	put_zstd("lib/firmware/c/stream.bin.zst", "no size in the header", 21, false);
	expect_contents("c/stream.bin", "no size in the header", ".zst frame without a content size");
}

/* The event loop looks up with fw_blob_find(): nothing is unpacked until fw_blob_unpack(). */
static void test_find_then_unpack(void)
{
	_cleanup_(fw_blob_freep) FwBlob *b = NULL;
	_cleanup_strv_free_ char **roots = roots_default();
	_cleanup_free_ char *failed = NULL;
	int r;

	put_xz("lib/firmware/split/x.bin.xz", "packed payload", 14);
	r = fw_blob_find(roots, "split/x.bin", 64 * MiB, &b, NULL);
	check(r == 0 && fw_blob_packed(b) && b->fd >= 0 && !b->data && b->size == 0 &&
		      b->compression == FW_COMPRESSION_XZ && endswith(b->path, "/split/x.bin.xz"),
	      "find: a .xz is found packed, its file open", "got %s", strerror(-r));
	r = r < 0 ? r : fw_blob_unpack(b, LIMITS(64 * MiB));
	check(r == 0 && !fw_blob_packed(b) && b->fd < 0 && b->size == 14 && b->data &&
		      memcmp(b->data, "packed payload", 14) == 0,
	      "unpack: then unpacked into memory, its file closed", "got %s", strerror(-r));
	r = r < 0 ? r : fw_blob_unpack(b, LIMITS(1));
	check(r == 0 && b->size == 14, "unpack: a no-op once unpacked", "got %s", strerror(-r));
	b = fw_blob_free(b);

	put_string("lib/firmware/split/bad.bin.xz", "not xz at all");
	r = fw_blob_find(roots, "split/bad.bin", 64 * MiB, &b, NULL);
	check(r == 0 && fw_blob_packed(b), "find: a corrupt .xz is found, not read",
	      "got %s", strerror(-r));
	r = r < 0 ? r : fw_blob_unpack(b, LIMITS(64 * MiB));
	check(r == -EBADMSG, "unpack: the corrupt .xz fails there", "got %s", strerror(-r));
	b = fw_blob_free(b);
	r = fw_blob_open(roots, "split/bad.bin", LIMITS(64 * MiB), &b, &failed);
	check(r == -EBADMSG && failed && endswith(failed, "/split/bad.bin.xz"),
	      "open: the corrupt .xz is the failed candidate", "got %s %s", strerror(-r),
	      failed ?: "(none)");

	put_string("lib/firmware/split/plain.bin", "0123456789");
	r = fw_blob_find(roots, "split/plain.bin", 9, &b, NULL);
	check(r == -EFBIG, "find: a plain file past max_size is refused", "got %s", strerror(-r));
	r = fw_blob_find(roots, "split/plain.bin", 10, &b, NULL);
	check(r == 0 && !fw_blob_packed(b) && b->size == 10 && fw_blob_unpack(b, LIMITS(1)) == 0,
	      "find: a plain file is ready, unpack leaves it alone", "got %s", strerror(-r));
}

static void test_big_compressed(void)
{
	size_t size = 3 * MiB + 17;
	_cleanup_free_ uint8_t *data = malloc(size);
	_cleanup_(fw_blob_freep) FwBlob *b = NULL;
	_cleanup_strv_free_ char **roots = roots_default();
	int r;

	if (!data)
		die("malloc");
	for (size_t i = 0; i < size; i++)
		data[i] = (uint8_t)(i * 7 + i / 4096);
	put_zstd("lib/firmware/big.bin.zst", data, size, false);
	r = fw_blob_open(roots, "big.bin", LIMITS(size), &b, NULL);
	check(r == 0 && b->size == size && memcmp(b->data, data, size) == 0,
	      "multi-MiB .zst of exactly max_size round-trips", "got %s", strerror(-r));
	b = fw_blob_free(b);
	put_xz("lib/firmware/big2.bin.xz", data, size);
	r = fw_blob_open(roots, "big2.bin", LIMITS(size), &b, NULL);
	check(r == 0 && b->size == size && memcmp(b->data, data, size) == 0,
	      "multi-MiB .xz of exactly max_size round-trips", "got %s", strerror(-r));
	expect_error("big.bin", size - 1, -EFBIG, ".zst one byte past max_size: -EFBIG");
	expect_error("big2.bin", size - 1, -EFBIG, ".xz one byte past max_size: -EFBIG");
}

static void test_bombs(void)
{
	size_t size = 64 * MiB;
	_cleanup_free_ uint8_t *zeros = calloc(1, size);

	if (!zeros)
		die("calloc");
	/* a few KiB on disk, and the zstd header even declares the size: it must not matter */
	put_zstd("lib/firmware/bomb.bin.zst", zeros, size, true);
	put_xz("lib/firmware/bomb2.bin.xz", zeros, size);
	expect_error("bomb.bin", 1 * MiB, -EFBIG, ".zst bomb stops at max_size");
	expect_error("bomb2.bin", 1 * MiB, -EFBIG, ".xz bomb stops at max_size");
}

static void test_corrupt(void)
{
	static const char text[] = "some firmware that compresses into more than a header, "
				   "some firmware that compresses into more than a header";
	_cleanup_free_ uint8_t *xz = NULL, *zst = NULL;
	size_t n_xz, n_zst;

	xz = xz_compress(text, sizeof(text), &n_xz);
	zst = zstd_compress(text, sizeof(text), false, &n_zst);

	xz[n_xz / 2] ^= 0x55;
	zst[n_zst / 2] ^= 0x55;
	put("lib/firmware/bad/flipped.bin.xz", xz, n_xz);
	put("lib/firmware/bad/flipped2.bin.zst", zst, n_zst);
	expect_error("bad/flipped.bin", 64 * MiB, -EBADMSG, ".xz with a flipped byte: -EBADMSG");
	expect_error("bad/flipped2.bin", 64 * MiB, -EBADMSG, ".zst with a flipped byte: -EBADMSG");

	xz[n_xz / 2] ^= 0x55;
	zst[n_zst / 2] ^= 0x55;
	put("lib/firmware/bad/short.bin.xz", xz, n_xz - 5);
	put("lib/firmware/bad/short2.bin.zst", zst, n_zst - 5);
	expect_error("bad/short.bin", 64 * MiB, -EBADMSG, "truncated .xz: -EBADMSG");
	expect_error("bad/short2.bin", 64 * MiB, -EBADMSG, "truncated .zst: -EBADMSG");

	put_string("lib/firmware/bad/text.bin.xz", "not xz at all");
	put_string("lib/firmware/bad/text2.bin.zst", "not zstd at all");
	put("lib/firmware/bad/empty.bin.xz", "", 0);
	put("lib/firmware/bad/empty2.bin.zst", "", 0);
	expect_error("bad/text.bin", 64 * MiB, -EBADMSG, "plain text named .xz: -EBADMSG");
	expect_error("bad/text2.bin", 64 * MiB, -EBADMSG, "plain text named .zst: -EBADMSG");
	expect_error("bad/empty.bin", 64 * MiB, -EBADMSG, "empty .xz: -EBADMSG");
	expect_error("bad/empty2.bin", 64 * MiB, -EBADMSG, "empty .zst: -EBADMSG");
}

static void test_symlinks(void)
{
	/* as linux-firmware's WHENCE "Link:" lines install them */
	put_string("lib/firmware/links/target.bin", "target");
	put_symlink("lib/firmware/links/same-dir.bin", "target.bin");
	put_symlink("lib/firmware/other/up-and-over.bin", "../links/target.bin");
	put_symlink("lib/firmware/other/chain.bin", "up-and-over.bin");
	put_symlink("lib/firmware/linkdir", "links");
	expect_contents("links/same-dir.bin", "target", "relative symlink in the same directory");
	expect_contents("other/up-and-over.bin", "target", "relative symlink through '..' inside the root");
	expect_contents("other/chain.bin", "target", "chain of relative symlinks");
	expect_contents("linkdir/target.bin", "target", "symlinked directory inside the root");

	put_symlink("lib/firmware/updates/dangling.bin", "does-not-exist.bin");
	put_string("lib/firmware/dangling.bin", "fallback");
	expect_contents("dangling.bin", "fallback", "dangling symlink counts as absent");

	put_symlink("lib/firmware/loop-a.bin", "loop-b.bin");
	put_symlink("lib/firmware/loop-b.bin", "loop-a.bin");
	expect_error("loop-a.bin", 64 * MiB, -ELOOP, "symlink loop: -ELOOP");
}

/* Links the kernel follows out of one root and into another, or through directories outside. */
static void test_symlinks_across_roots(void)
{
	_cleanup_free_ char *in_root = fixture("lib/firmware/links/target.bin"),
			   *in_extra = fixture("extra/cross/abs-target.bin"),
			   *alternative = fixture("etc/alternatives/regulatory.db"),
			   *debian = fixture("lib/firmware/regulatory.db-debian"),
			   *loop_b = fixture("lib/firmware/updates/aloop-b.bin"),
			   *linkdir = fixture("lib/firmware/linkdir");

	put_symlink("lib/firmware/absolute.bin", in_root);
	expect_contents("absolute.bin", "target", "absolute symlink into its own root");

	put_string("extra/cross/abs-target.bin", "in the extra root");
	put_symlink("lib/firmware/updates/abs-other.bin", in_extra);
	expect_contents("abs-other.bin", "in the extra root", "absolute symlink into another root");

	/* Debian's wireless-regdb: /lib/firmware/regulatory.db -> /etc/alternatives/... */
	put_string("lib/firmware/regulatory.db-debian", "debian regdb");
	put_symlink("etc/alternatives/regulatory.db", debian);
	put_symlink("lib/firmware/regulatory.db", alternative);
	expect_contents("regulatory.db", "debian regdb",
			"absolute symlink through a directory outside the roots, back into a root");
	put_symlink("lib/firmware/rel-alt.db", "../../etc/alternatives/regulatory.db");
	expect_contents("rel-alt.db", "debian regdb", "the same with a relative first link");

	put_string("lib/firmware/upd.bin", "in /lib/firmware");
	put_symlink("lib/firmware/updates/upd.bin", "../upd.bin");
	expect_contents("upd.bin", "in /lib/firmware", "updates/x -> ../x: from one root into the next");

	put_symlink("lib/firmware/updates/through-dir/x.bin", "../../linkdir/target.bin");
	expect_contents("through-dir/x.bin", "target", "relative symlink out of updates/ through a linked dir");
	put_symlink("custom/linkdir-abs", linkdir);
	expect_contents("linkdir-abs/target.bin", "target", "absolute symlink to a directory in another root");

	put_symlink("lib/firmware/aloop-a.bin", loop_b);
	put_symlink("lib/firmware/updates/aloop-b.bin", "../aloop-a.bin");
	expect_error("aloop-a.bin", 64 * MiB, -ELOOP, "loop of symlinks across roots: -ELOOP");
}

/* Whatever the links, nothing outside the roots is served, and a later root still counts. */
static void test_symlinks_refused(void)
{
	_cleanup_free_ char *secret = fixture("outside/secret.bin"), *outside = fixture("outside"),
			   *escape_path = fixture("lib/firmware/escape.bin"), *failed = NULL;
	_cleanup_strv_free_ char **roots = roots_default();
	_cleanup_(fw_blob_freep) FwBlob *b = NULL;
	_cleanup_free_ char *contents = NULL;
	int r;

	put_string("outside/secret.bin", "secret");
	put_symlink("lib/firmware/escape.bin", "../../outside/secret.bin");
	r = load("escape.bin", 64 * MiB, NULL, &contents);
	check(r == -EXDEV && !contents, "symlink out of every root, nothing else found: -EXDEV",
	      "got %s '%s'", strerror(-r), contents ?: "");
	r = fw_blob_open(roots, "escape.bin", LIMITS(64 * MiB), &b, &failed);
	check(r == -EXDEV && failed && strcmp(failed, escape_path) == 0,
	      "the refused candidate is the one reported, not the last one tried", "got %s '%s'",
	      strerror(-r), failed ?: "(null)");

	/* The last candidate of all (the last root, .xz): a refusal ends nothing. */
	put_xz("extra/escape.bin.xz", "the very last candidate", 23);
	expect_contents("escape.bin", "the very last candidate",
			"refused symlink, then only the very last candidate: served");

	put_string("extra/escape.bin", "harmless copy in a later root");
	expect_contents("escape.bin", "harmless copy in a later root",
			"refused symlink, then a good file in a later root: served");

	put_symlink("lib/firmware/updates/shadow.bin", secret);
	expect_error("shadow.bin", 64 * MiB, -EXDEV, "absolute symlink out of every root: -EXDEV");
	put_symlink("lib/firmware/updates/hop.bin", "../hop2.bin");
	put_symlink("lib/firmware/hop2.bin", secret);
	expect_error("hop.bin", 64 * MiB, -EXDEV, "symlink into another root and on out of it: -EXDEV");
	put_symlink("lib/firmware/outdir", outside);
	expect_error("outdir/secret.bin", 64 * MiB, -EXDEV, "symlinked directory outside every root: -EXDEV");
	put_symlink("lib/firmware/etc-link.bin", "/etc/passwd");
	expect_error("etc-link.bin", 64 * MiB, -EXDEV, "symlink to /etc/passwd: -EXDEV");
}

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL - opening a FIFO hung\n";

	(void)!write(STDOUT_FILENO, msg, sizeof(msg) - 1);
	_exit(EXIT_FAILURE);
}

/*
 * A writer blocks in open() until some reader opens the FIFO: if the child's open()
 * returns, the loader opened the FIFO for reading. O_PATH handles do not count.
 */
static bool process_is_sleeping(pid_t pid)
{
	char path[64], buf[512], *paren;
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof(path), "/proc/%i/stat", (int)pid);
	f = fopen(path, "re");
	if (!f || !fgets(buf, sizeof(buf), f))
		return false;
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && paren[2] == 'S';
}

static pid_t fifo_watch(const char *fifo)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int fd = open(fifo, O_WRONLY | O_CLOEXEC);

		_exit(fd >= 0 ? 0 : 1);
	}
	/* the writer has to be waiting in open() before the loader looks */
	for (int i = 0; i < 200 && !process_is_sleeping(pid); i++)
		usleep(10000);
	usleep(20000);
	return pid;
}

static bool fifo_was_opened(pid_t pid)
{
	int status;

	for (int i = 0; i < 50; i++) { /* give a reader's open 0.5 s to wake the writer */
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) && WEXITSTATUS(status) == 0;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return false;
}

static void test_special_files(void)
{
	_cleanup_free_ char *fifo = fixture("lib/firmware/fifo.bin");
	pid_t watcher;

	if (mkfifo(fifo, 0644) < 0)
		die("mkfifo");
	watcher = fifo_watch(fifo);
	signal(SIGALRM, on_alarm);
	alarm(10);
	expect_error("fifo.bin", 64 * MiB, -EBADFD, "FIFO refused without blocking");
	alarm(0);
	check(!fifo_was_opened(watcher), "FIFO never opened for reading", "a writer got through");

	put_string("lib/firmware/isdir.bin/inner", "x");
	expect_error("isdir.bin", 64 * MiB, -EISDIR, "directory named like firmware: -EISDIR");

	put_string("lib/firmware/updates/notdir", "a file where a directory is expected");
	put_string("lib/firmware/notdir/fw.bin", "found below");
	expect_contents("notdir/fw.bin", "found below", "file in place of a directory counts as absent");

	expect_error("../outside/secret.bin", 64 * MiB, -EINVAL, "'../' name refused before any lookup");
	expect_error("/etc/passwd", 64 * MiB, -EINVAL, "absolute name refused before any lookup");
}

/* The openat2() the loader calls: fails `failures` times with `error`, then is the real one. */
static struct {
	int error;
	unsigned failures;
	unsigned calls;
} fake;

static long fake_openat2(int dir_fd, const char *path, void *how, size_t size)
{
	fake.calls++;
	if (fake.failures > 0) {
		fake.failures--;
		errno = fake.error;
		return -1;
	}
	return syscall(SYS_openat2, dir_fd, path, how, size);
}

static void fake_openat2_set(int error, unsigned failures)
{
	fake.error = error;
	fake.failures = failures;
	fake.calls = 0;
	fw_loader_test_set_openat2(fake_openat2);
}

/* How the loader copes when openat2() fails for reasons of its own (openat2 pass only). */
static void test_openat2_errors(void)
{
	static const int unusable[] = { EPERM, ENOSYS };

	put_string("lib/firmware/seam.bin", "through the seam");

	fake_openat2_set(EAGAIN, 3);
	expect_contents("seam.bin", "through the seam", "openat2() EAGAIN (a rename raced): tried again");
	check(fake.calls > 3, "openat2() EAGAIN: the retries went to openat2()", "%u calls", fake.calls);

	fake_openat2_set(EAGAIN, UINT_MAX);
	expect_error("seam.bin", 64 * MiB, -EAGAIN, "openat2() EAGAIN every time: fails, no endless loop");
	check(fake.calls > 1 && fake.calls <= 16, "openat2() EAGAIN every time: a bounded number of tries",
	      "%u calls", fake.calls);

	for (size_t i = 0; i < ELEMENTSOF(unusable); i++) {
		fake_openat2_set(unusable[i], UINT_MAX);
		expect_contents("seam.bin", "through the seam",
				unusable[i] == EPERM ? "openat2() EPERM (seccomp filter): resolved by hand" :
						       "openat2() ENOSYS (before 5.6): resolved by hand");
		expect_contents("seam.bin", "through the seam", "and again");
		check(fake.calls == 1, "openat2() not tried again once found unusable", "%u calls",
		      fake.calls);
	}

	fake_openat2_set(EACCES, UINT_MAX);
	expect_error("seam.bin", 64 * MiB, -EACCES, "any other openat2() error is the lookup's answer");
	fw_loader_test_set_openat2(NULL);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void run_suite(void)
{
	test_precedence();
	test_candidates();
	test_suffix_order();
	test_plain_blob();
	test_compressed();
	test_find_then_unpack();
	test_big_compressed();
	test_bombs();
	test_corrupt();
	test_symlinks();
	test_symlinks_across_roots();
	test_symlinks_refused();
	test_special_files();
}

static unsigned renamed_away;

static void rename_vendor_away(const char *dir)
{
	_cleanup_free_ char *from = fixture("lib/firmware/vendor"), *to = fixture("outside/vendor");

	if (strcmp(dir, "vendor") != 0 || renamed_away++ > 0)
		return;
	mkdir_parents(to);
	if (rename(from, to) < 0)
		die("rename");
}

/*
 * The race openat2() guards against, done by hand: the directory the walk stands in is
 * renamed out of the root before the file in it is opened. What it then finds lies
 * outside every root and must not be served (fallback pass only: the hook is the walk's).
 */
static void test_walk_renamed(void)
{
	_cleanup_free_ char *contents = NULL;
	int r;

	put_string("lib/firmware/vendor/moved.bin", "moved out under the walk");
	fw_loader_test_set_walk_step(rename_vendor_away);
	r = load("vendor/moved.bin", 64 * MiB, NULL, &contents);
	fw_loader_test_set_walk_step(NULL);
	check(renamed_away == 1, "the directory was renamed while the walk stood in it", "%u renames",
	      renamed_away);
	check(r < 0 && !contents, "a file whose directory left the root meanwhile is not served",
	      "got %s '%s'", strerror(-r), contents ?: "");
	rm("outside/vendor/moved.bin");
}

static bool have_openat2(void)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC };
	long fd = syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof(how));

	if (fd < 0)
		return false;
	close((int)fd);
	return true;
}

int main(void)
{
	test_search_path();
	printf("compression names: %s %s %s\n", fw_compression_to_string(FW_COMPRESSION_NONE),
	       fw_compression_to_string(FW_COMPRESSION_ZSTD), fw_compression_to_string(FW_COMPRESSION_XZ));

	for (int pass = 0; pass < 2; pass++) {
		if (pass == 0 && !have_openat2()) {
			printf("skip - openat2() unavailable here: only the fallback pass runs\n");
			continue;
		}
		if (pass == 1) {
			setenv("FW_HELPERD_NO_OPENAT2", "1", 1);
			mode = "fallback";
		}
		strcpy(base, "/tmp/test-loader-XXXXXX");
		if (!mkdtemp(base))
			die("mkdtemp");
		test_read_custom();
		run_suite();
		if (pass == 0)
			test_openat2_errors();
		else
			test_walk_renamed();
		nftw(base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	}

	if (n_failed > 0) {
		printf("%u check(s) failed\n", n_failed);
		return EXIT_FAILURE;
	}
	printf("all checks passed\n");
	return EXIT_SUCCESS;
}
