/* SPDX-License-Identifier: MIT */
/*
 * Manifests, policies and the whole path of a request under them: request_run() against
 * a fixture firmware root and a fixture "sysfs" request directory whose loading and data
 * are regular files. Every write to loading goes through one fd, so its contents tell
 * what the kernel was told, in order: "10" served, "1-1" streamed then refused before
 * the commit, "-1" refused before anything was sent.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fw-helperd-cache.h"
#include "fw-helperd-conf.h"
#include "fw-helperd-request.h"
#include "fw-helperd-stream.h"
#include "fw-helperd-verify.h"
#include "log.h"
#include "macro.h"
#include "sha256.h"
#include "util.h"

/* MaxSize= alone, no unpack budget */
#define LIMITS(max) (&(FwLimits){ .max_size = (max), .deadline = USEC_INFINITY })

#define CHECK(expr)                                                                    \
	do {                                                                           \
		if (!(expr)) {                                                         \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#expr);                                                \
			return -1;                                                     \
		}                                                                      \
	} while (0)

#define BLOB_SIZE (300U * 1024U + 7U)	/* several stream chunks */
#define ZERO_SUM "0000000000000000000000000000000000000000000000000000000000000000"

static struct {
	char tmp[PATH_MAX];
	char root[PATH_MAX];	/* tmp/root: the firmware root */
	char dir[PATH_MAX];	/* tmp/sysfs/test.bin: the request */
	char blob_sum[SHA256_DIGEST_SIZE * 2 + 1];
} fx;

static int write_file(const char *path, const void *data, size_t len)
{
	_cleanup_close_ int fd = -EBADF;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		return -errno;
	return 0;
}

static int write_at(const char *dir, const char *name, const char *text)
{
	_cleanup_free_ char *path = path_join(dir, name);

	return path ? write_file(path, text, strlen(text)) : -ENOMEM;
}

static char *read_text(const char *dir, const char *name)
{
	_cleanup_free_ char *path = path_join(dir, name);
	char *s = NULL;

	if (path && read_string_at(AT_FDCWD, path, &s) < 0)
		return strdup("(unreadable)");
	return s;
}

static off_t file_size(const char *dir, const char *name)
{
	_cleanup_free_ char *path = path_join(dir, name);
	struct stat st;

	return path && stat(path, &st) == 0 ? st.st_size : -1;
}

static void sum_hex(const void *data, size_t len, char ret[SHA256_DIGEST_SIZE * 2 + 1])
{
	uint8_t digest[SHA256_DIGEST_SIZE];
	Sha256 h;

	sha256_init(&h);
	sha256_update(&h, len, data);
	sha256_final(&h, digest);
	sha256_to_hex(digest, ret);
}

static int reset_request(void)
{
	if (write_at(fx.dir, "loading", "") < 0 || write_at(fx.dir, "data", "") < 0)
		return -EIO;
	return 0;
}

static int fixture_setup(void)
{
	_cleanup_free_ uint8_t *buf = malloc(BLOB_SIZE);
	char path[PATH_MAX + 32];

	if (!buf)
		return -ENOMEM;
	memset(&fx, 0, sizeof(fx));
	strcpy(fx.tmp, "/tmp/test-verify-XXXXXX");
	if (!mkdtemp(fx.tmp))
		return -errno;
	snprintf(fx.root, sizeof(fx.root), "%s/root", fx.tmp);
	snprintf(path, sizeof(path), "%s/sysfs", fx.tmp);
	snprintf(fx.dir, sizeof(fx.dir), "%s/sysfs/test.bin", fx.tmp);
	if (mkdir(fx.root, 0755) < 0 || mkdir(path, 0755) < 0 || mkdir(fx.dir, 0755) < 0)
		return -errno;
	for (size_t i = 0; i < BLOB_SIZE; i++)
		buf[i] = (uint8_t)((i * 2654435761U) >> 13);
	snprintf(path, sizeof(path), "%s/test.bin", fx.root);
	if (write_file(path, buf, BLOB_SIZE) < 0)
		return -EIO;
	sum_hex(buf, BLOB_SIZE, fx.blob_sum);
	return reset_request();
}

static void fixture_teardown(void)
{
	char cmd[PATH_MAX + 16];

	if (startswith(fx.tmp, "/tmp/test-verify-")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx.tmp);
		(void)!system(cmd);
	}
}

static int verifier_from(const char *conf_text, Verifier **ret)
{
	_cleanup_(config_freep) Config *c = NULL;
	_cleanup_(verifier_freep) Verifier *v = NULL;

	if (config_new(&c) < 0 || config_parse_string(c, "test.conf", conf_text) < 0)
		return -EINVAL;
	if (verifier_new(&v) < 0 || verifier_configure(v, c) < 0)
		return -ENOMEM;
	*ret = TAKE_PTR(v);
	return 0;
}

/* Runs one request for name beneath the fixture root; returns its result. */
static RequestResult run(Verifier *v, const char *name, Request **ret)
{
	_cleanup_(request_freep) Request *r = NULL;
	RequestResult result;

	if (reset_request() < 0 || request_new(name, "test.bin", fx.dir, NULL, now_usec(CLOCK_MONOTONIC), &r) < 0)
		return _REQUEST_RESULT_MAX;
	if (strv_extend(&r->roots, fx.root) < 0)
		return _REQUEST_RESULT_MAX;
	r->max_size = 1U << 30;
	r->verifier = v;
	request_run(r);
	result = r->result;
	if (ret)
		*ret = TAKE_PTR(r);
	return result;
}

static int check_loading(const char *expected)
{
	_cleanup_free_ char *s = read_text(fx.dir, "loading");

	if (!s || strcmp(s, expected) != 0) {
		fprintf(stderr, "loading is '%s', expected '%s'\n", s ?: "(null)", expected);
		return -1;
	}
	return 0;
}

static int manifest_of(const char *text, Manifest **ret)
{
	return manifest_parse("test.sums", text, strlen(text), ret);
}

/* ---- the parser ----------------------------------------------------------------------- */

static int test_parse_forms(void)
{
	_cleanup_(manifest_freep) Manifest *m = NULL;
	const char *a = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	_cleanup_free_ char *text = NULL;
	const ManifestEntry *e;
	uint8_t d[SHA256_DIGEST_SIZE];

	CHECK(asprintf(&text,
		       "# made by sha256sum\n"
		       "\n"
		       "   \t\n"
		       "%s  text.bin\n"
		       "%s *binary.bin\n"
		       "  %s  ./dir//sub/./x.bin\r\n"
		       "\\%s  back\\\\slash\\nnewline.bin\n"
		       "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855  upper.bin\n"
		       "%s  name with  spaces.bin\n"
		       "%s  /abs/olute.bin", /* no final newline */
		       a, a, a, a, a, a) >= 0);
	CHECK(manifest_of(text, &m) == 0);
	CHECK(m->n_entries == 7 && m->n_bad == 0);
	CHECK(sha256_from_hex(a, d) == 0);
	CHECK((e = manifest_lookup(m, "text.bin")) && !e->bad && memcmp(e->digest, d, 32) == 0);
	CHECK(e->line == 4);
	CHECK((e = manifest_lookup(m, "binary.bin")) && !e->bad);
	CHECK((e = manifest_lookup(m, "dir/sub/x.bin")) && e->line == 6);
	CHECK(manifest_lookup(m, "./dir/sub//x.bin"));
	CHECK(manifest_lookup(m, "back\\slash\nnewline.bin"));
	CHECK((e = manifest_lookup(m, "upper.bin")) && memcmp(e->digest, d, 32) == 0);
	CHECK(manifest_lookup(m, "name with  spaces.bin"));
	CHECK(manifest_lookup(m, "/abs/olute.bin") && !manifest_lookup(m, "abs/olute.bin"));
	CHECK(!manifest_lookup(m, "missing.bin"));
	return 0;
}

static int test_parse_bad(void)
{
	_cleanup_(manifest_freep) Manifest *m = NULL;
	_cleanup_free_ char *text = NULL, *long_line = NULL;
	const ManifestEntry *e;
	size_t n = PATH_MAX + 200;

	long_line = malloc(n + 1);
	CHECK(long_line);
	memset(long_line, 'a', n);
	memcpy(long_line + 64, "  ", 2);
	long_line[n] = 0;
	CHECK(asprintf(&text,
		       "g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  badhex.bin\n"
		       "e3b0c44298fc  short.bin\n"
		       "not a manifest line\n"
		       ZERO_SUM "  ../escape.bin\n"
		       ZERO_SUM "  \n"
		       ZERO_SUM " onespace.bin\n"
		       "\\" ZERO_SUM "  bad\\qescape.bin\n"
		       "%s\n"
		       ZERO_SUM "  good.bin\n",
		       long_line) >= 0);
	CHECK(manifest_of(text, &m) == 0);
	/* bad hex and a short sum still name their file: entries that match nothing */
	CHECK((e = manifest_lookup(m, "badhex.bin")) && e->bad);
	CHECK((e = manifest_lookup(m, "short.bin")) && e->bad);
	CHECK(m->n_bad == 2);
	CHECK(!manifest_lookup(m, "../escape.bin") && !manifest_lookup(m, "escape.bin"));
	CHECK(!manifest_lookup(m, "onespace.bin"));
	CHECK((e = manifest_lookup(m, "good.bin")) && !e->bad && e->line == 9);
	CHECK(m->n_entries == 3);
	return 0;
}

static int test_parse_duplicates(void)
{
	_cleanup_(manifest_freep) Manifest *m = NULL;
	const char *text =
		ZERO_SUM "  dup.bin\n"
		"1111111111111111111111111111111111111111111111111111111111111111  other.bin\n"
		"2222222222222222222222222222222222222222222222222222222222222222  ./dup.bin\n"
		"xyz  bad-then-good.bin\n"
		ZERO_SUM "  bad-then-good.bin\n"
		ZERO_SUM "  good-then-bad.bin\n"
		"xyz  good-then-bad.bin\n";
	const ManifestEntry *e;

	CHECK(manifest_of(text, &m) == 0);
	CHECK(m->n_entries == 4);
	/* the last line for a path wins, whatever it says */
	CHECK((e = manifest_lookup(m, "dup.bin")) && e->line == 3 && e->digest[0] == 0x22);
	CHECK((e = manifest_lookup(m, "bad-then-good.bin")) && !e->bad);
	CHECK((e = manifest_lookup(m, "good-then-bad.bin")) && e->bad);
	return 0;
}

/* ---- configuration and policy ----------------------------------------------------------- */

static int test_policy_resolution(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(config_freep) Config *c = NULL;

	CHECK(verifier_from("[Integrity]\nPolicy=warn\n"
			    "RootPolicy=/srv/firmware:enforce //opt/fw/:off\n"
			    "RootPolicy=/srv/firmware:off /srv/firmware:enforce\n", &v) == 0);
	CHECK(verifier_policy(v, "/srv/firmware") == VERIFY_POLICY_ENFORCE);
	CHECK(verifier_policy(v, "/srv/firmware/") == VERIFY_POLICY_ENFORCE);
	CHECK(verifier_policy(v, "/opt/fw") == VERIFY_POLICY_OFF);
	CHECK(verifier_policy(v, "/lib/firmware") == VERIFY_POLICY_WARN);
	CHECK(verifier_policy(v, "/srv/firmware/updates") == VERIFY_POLICY_WARN);
	CHECK(verifier_policy(NULL, "/srv/firmware") == VERIFY_POLICY_OFF);

	CHECK(config_new(&c) == 0);
	CHECK(c->integrity_policy == VERIFY_POLICY_OFF);
	CHECK(config_parse_string(c, "t", "[Integrity]\nPolicy=strict\n") == -EINVAL);
	CHECK(config_parse_string(c, "t", "[Integrity]\nRootPolicy=/srv\n") == -EINVAL);
	CHECK(config_parse_string(c, "t", "[Integrity]\nRootPolicy=srv:warn\n") == -EINVAL);
	CHECK(config_parse_string(c, "t", "[Integrity]\nRootPolicy=/a/../b:warn\n") == -EINVAL);
	CHECK(config_parse_string(c, "t", "[Integrity]\nManifest=relative.sums\n") == -EINVAL);
	CHECK(config_parse_string(c, "t", "[Integrity]\nRootPolicy=/a:b/c:warn\nManifest=/etc//x\n") == 0);
	CHECK(c->integrity_root_policy && strcmp(c->integrity_root_policy[0], "/a:b/c:warn") == 0);
	CHECK(c->integrity_manifests && strcmp(c->integrity_manifests[0], "/etc/x") == 0);
	CHECK(config_parse_string(c, "t", "[Integrity]\nRootPolicy=\nPolicy=\n") == 0);
	CHECK(!c->integrity_root_policy && c->integrity_policy == VERIFY_POLICY_OFF);
	return 0;
}

/* ---- requests under each policy --------------------------------------------------------- */

static int write_sums(const char *sum, const char *name)
{
	_cleanup_free_ char *line = NULL;

	if (asprintf(&line, "%s  %s\n", sum, name) < 0)
		return -ENOMEM;
	return write_at(fx.root, "SHA256SUMS", line);
}

static int test_enforce_match(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(request_freep) Request *r = NULL;

	CHECK(write_sums(fx.blob_sum, "test.bin") == 0);
	CHECK(verifier_from("[Integrity]\nPolicy=enforce\n", &v) == 0);
	CHECK(run(v, "test.bin", &r) == REQUEST_SERVED);
	CHECK(r->verify.status == VERIFY_MATCH);
	CHECK(check_loading("10") == 0);
	CHECK(file_size(fx.dir, "data") == BLOB_SIZE);
	return 0;
}

static int test_enforce_mismatch(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(request_freep) Request *r = NULL;
	char hex[65];

	CHECK(write_sums(ZERO_SUM, "test.bin") == 0);
	CHECK(verifier_from("[Integrity]\nRootPolicy=/tmp/../tmp:warn\n", &v) == -EINVAL);
	{
		_cleanup_free_ char *conf = NULL;

		CHECK(asprintf(&conf, "[Integrity]\nRootPolicy=%s:enforce\n", fx.root) >= 0);
		CHECK(verifier_from(conf, &v) == 0);
	}
	CHECK(run(v, "test.bin", &r) == REQUEST_UNVERIFIED);
	CHECK(r->error == -EACCES);
	CHECK(r->verify.status == VERIFY_MISMATCH);
	CHECK(r->verify.has_expected && r->verify.has_actual);
	sha256_to_hex(r->verify.actual, hex);
	CHECK(strcmp(hex, fx.blob_sum) == 0);
	sha256_to_hex(r->verify.expected, hex);
	CHECK(strcmp(hex, ZERO_SUM) == 0);
	CHECK(r->verify.manifest && endswith(r->verify.manifest, "/SHA256SUMS:1"));
	/* streamed (one read, hashed on the way), then aborted before the commit */
	CHECK(check_loading("1-1") == 0);
	verify_log(&r->verify, NULL, r->name, r->path, false);
	return 0;
}

static int test_enforce_missing_entry(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(request_freep) Request *r = NULL;
	char hex[65], path[PATH_MAX + 16];

	CHECK(write_sums(fx.blob_sum, "other.bin") == 0);
	CHECK(verifier_from("[Integrity]\nPolicy=enforce\n", &v) == 0);
	CHECK(run(v, "test.bin", &r) == REQUEST_UNVERIFIED);
	CHECK(r->verify.status == VERIFY_NO_ENTRY && !r->verify.has_expected);
	/* the actual sum still goes to the journal, for the operator to add */
	sha256_to_hex(r->verify.actual, hex);
	CHECK(r->verify.has_actual && strcmp(hex, fx.blob_sum) == 0);
	CHECK(check_loading("-1") == 0);
	CHECK(file_size(fx.dir, "data") == 0);

	/* no manifest at all is no entry either */
	request_free(TAKE_PTR(r));
	snprintf(path, sizeof(path), "%s/SHA256SUMS", fx.root);
	CHECK(unlink(path) == 0);
	CHECK(run(v, "test.bin", &r) == REQUEST_UNVERIFIED);
	CHECK(check_loading("-1") == 0);
	return 0;
}

static int test_enforce_bad_entry(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(request_freep) Request *r = NULL;

	CHECK(write_at(fx.root, "SHA256SUMS", "12345  test.bin\n") == 0);
	CHECK(verifier_from("[Integrity]\nPolicy=enforce\n", &v) == 0);
	CHECK(run(v, "test.bin", &r) == REQUEST_UNVERIFIED);
	CHECK(r->verify.status == VERIFY_BAD_ENTRY);
	CHECK(check_loading("-1") == 0);
	v = verifier_free(v);
	request_free(TAKE_PTR(r));

	CHECK(verifier_from("[Integrity]\nPolicy=warn\n", &v) == 0);
	CHECK(run(v, "test.bin", &r) == REQUEST_SERVED);
	CHECK(r->verify.status == VERIFY_BAD_ENTRY && r->verify.has_actual);
	CHECK(check_loading("10") == 0);
	return 0;
}

static int test_warn_serves(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(request_freep) Request *r = NULL;

	CHECK(write_sums(ZERO_SUM, "test.bin") == 0);
	CHECK(verifier_from("[Integrity]\nPolicy=warn\n", &v) == 0);
	CHECK(run(v, "test.bin", &r) == REQUEST_SERVED);
	CHECK(r->verify.status == VERIFY_MISMATCH && r->verify.policy == VERIFY_POLICY_WARN);
	CHECK(check_loading("10") == 0);
	CHECK(file_size(fx.dir, "data") == BLOB_SIZE);
	verify_log(&r->verify, NULL, r->name, r->path, true);
	request_free(TAKE_PTR(r));

	CHECK(write_sums(ZERO_SUM, "other.bin") == 0);
	CHECK(run(v, "test.bin", &r) == REQUEST_SERVED);
	CHECK(r->verify.status == VERIFY_NO_ENTRY && r->verify.has_actual);
	return 0;
}

static int test_off_ignores(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(request_freep) Request *r = NULL;
	_cleanup_free_ char *conf = NULL;

	CHECK(write_sums(ZERO_SUM, "test.bin") == 0);
	CHECK(asprintf(&conf, "[Integrity]\nPolicy=enforce\nRootPolicy=%s:off\n", fx.root) >= 0);
	CHECK(verifier_from(conf, &v) == 0);
	CHECK(run(v, "test.bin", &r) == REQUEST_SERVED);
	CHECK(r->verify.status == VERIFY_SKIPPED);
	CHECK(check_loading("10") == 0);
	request_free(TAKE_PTR(r));
	/* and no verifier at all (the default) */
	CHECK(run(NULL, "test.bin", &r) == REQUEST_SERVED);
	CHECK(check_loading("10") == 0);
	return 0;
}

static int test_reparse(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(request_freep) Request *r = NULL;
	_cleanup_free_ char *sums = path_join(fx.root, "SHA256SUMS");
	struct timespec times[2];
	struct stat st;

	CHECK(write_sums(ZERO_SUM, "test.bin") == 0);
	CHECK(verifier_from("[Integrity]\nPolicy=enforce\n", &v) == 0);
	CHECK(run(v, "test.bin", NULL) == REQUEST_UNVERIFIED);
	CHECK(stat(sums, &st) == 0);

	/* same size, same mtime, rewritten in place: ctime still tells */
	CHECK(write_sums(fx.blob_sum, "test.bin") == 0);
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	CHECK(utimensat(AT_FDCWD, sums, times, 0) == 0);
	CHECK(run(v, "test.bin", &r) == REQUEST_SERVED);
	request_free(TAKE_PTR(r));

	/* replaced, with a new mtime */
	CHECK(write_sums(ZERO_SUM, "test.bin") == 0);
	times[1].tv_sec += 10;
	CHECK(utimensat(AT_FDCWD, sums, times, 0) == 0);
	CHECK(run(v, "test.bin", &r) == REQUEST_UNVERIFIED);
	CHECK(check_loading("1-1") == 0);
	return 0;
}

static int test_configured_manifest(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(request_freep) Request *r = NULL;
	_cleanup_free_ char *conf = NULL, *line = NULL;

	/* SHA256SUMS beside the firmware says something else: the configured file wins */
	CHECK(write_sums(ZERO_SUM, "test.bin") == 0);
	CHECK(asprintf(&line, "# absolute\n%s  %s/test.bin\n", fx.blob_sum, fx.root) >= 0);
	CHECK(write_at(fx.tmp, "abs.sums", line) == 0);
	CHECK(asprintf(&conf, "[Integrity]\nPolicy=enforce\nManifest=%s/abs.sums\n", fx.tmp) >= 0);
	CHECK(verifier_from(conf, &v) == 0);
	CHECK(run(v, "test.bin", &r) == REQUEST_SERVED);
	CHECK(r->verify.status == VERIFY_MATCH && endswith(r->verify.manifest, "abs.sums:2"));
	request_free(TAKE_PTR(r));
	v = verifier_free(v);

	/* relative: in any root; a later Manifest= outranks an earlier one */
	free(line);
	CHECK(asprintf(&line, "%s  test.bin\n", fx.blob_sum) >= 0);
	CHECK(write_at(fx.tmp, "rel.sums", line) == 0);
	CHECK(write_at(fx.tmp, "zero.sums", ZERO_SUM "  test.bin\n") == 0);
	free(conf);
	CHECK(asprintf(&conf, "[Integrity]\nPolicy=enforce\nManifest=%s/zero.sums %s/rel.sums\n",
		       fx.tmp, fx.tmp) >= 0);
	CHECK(verifier_from(conf, &v) == 0);
	CHECK(run(v, "test.bin", &r) == REQUEST_SERVED);
	return 0;
}

static int test_symlink(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(request_freep) Request *r = NULL;
	_cleanup_free_ char *sub = path_join(fx.root, "vendor"), *link = NULL;

	/* linux-firmware style: the sum is of the file, the name asked for is a link to it */
	CHECK(mkdir(sub, 0755) == 0 || errno == EEXIST);
	link = path_join(sub, "alias.bin");
	(void)unlink(link);
	CHECK(symlink("../test.bin", link) == 0);
	CHECK(write_sums(fx.blob_sum, "test.bin") == 0);
	CHECK(verifier_from("[Integrity]\nPolicy=enforce\n", &v) == 0);
	CHECK(run(v, "vendor/alias.bin", &r) == REQUEST_SERVED);
	CHECK(r->verify.status == VERIFY_MATCH);
	return 0;
}

static int test_compressed(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(request_freep) Request *r = NULL;
	_cleanup_free_ uint8_t *xz = NULL;
	char cmd[PATH_MAX * 2 + 64], sum[65], path[PATH_MAX + 16];
	struct stat st;

	snprintf(cmd, sizeof(cmd), "xz -c -C crc32 '%s/test.bin' > '%s/packed.bin.xz' 2>/dev/null",
		 fx.root, fx.root);
	if (system(cmd) != 0) {
		fprintf(stderr, "xz(1) not found, skipping the compressed case\n");
		return 0;
	}
	snprintf(path, sizeof(path), "%s/packed.bin.xz", fx.root);
	{
		_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);

		CHECK(fd >= 0 && fstat(fd, &st) == 0);
		xz = malloc((size_t)st.st_size);
		CHECK(xz && read(fd, xz, (size_t)st.st_size) == st.st_size);
	}
	sum_hex(xz, (size_t)st.st_size, sum);
	/* the sum of the compressed file, as sha256sum writes it */
	CHECK(write_sums(sum, "packed.bin.xz") == 0);
	CHECK(verifier_from("[Integrity]\nPolicy=enforce\n", &v) == 0);
	CHECK(run(v, "packed.bin", &r) == REQUEST_SERVED);
	CHECK(r->verify.status == VERIFY_MATCH && r->compression == FW_COMPRESSION_XZ);
	CHECK(file_size(fx.dir, "data") == BLOB_SIZE);
	request_free(TAKE_PTR(r));

	/* the sum of the decompressed image is not the sum of the file: refused, before "1" */
	CHECK(write_sums(fx.blob_sum, "packed.bin.xz") == 0);
	CHECK(run(v, "packed.bin", &r) == REQUEST_UNVERIFIED);
	CHECK(r->verify.status == VERIFY_MISMATCH);
	CHECK(check_loading("-1") == 0);
	return 0;
}

/* verify_blob(), as the prewarm cache calls it on a copy held in memory. */
static int test_verify_blob(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(fw_blob_freep) FwBlob *blob = NULL;
	char *roots[] = { fx.root, NULL };
	VerifyCheck c;

	CHECK(write_sums(fx.blob_sum, "test.bin") == 0);
	CHECK(verifier_from("[Integrity]\nPolicy=enforce\n", &v) == 0);
	CHECK(fw_blob_open(roots, "test.bin", LIMITS(1U << 30), &blob, NULL) == 0);
	CHECK(verify_blob(v, roots, "test.bin", blob, &c) == 0 && c.status == VERIFY_MATCH);
	verify_check_done(&c);

	/* in memory, then the manifest changes */
	CHECK(blob->fd >= 0);
	blob->data = malloc(blob->size);
	CHECK(blob->data && pread(blob->fd, blob->data, blob->size, 0) == (ssize_t)blob->size);
	blob->fd = safe_close(blob->fd);
	CHECK(verify_blob(v, roots, "test.bin", blob, NULL) == 0);
	((uint8_t *)blob->data)[100] ^= 1;
	CHECK(verify_blob(v, roots, "test.bin", blob, &c) == -EACCES && c.status == VERIFY_MISMATCH);
	verify_check_done(&c);
	return 0;
}

/* Holds name as prewarm does: found, checked, read into memory. */
static int hold(Verifier *v, const char *name, CachedBlob **ret)
{
	_cleanup_(fw_blob_freep) FwBlob *blob = NULL;
	char *roots[] = { fx.root, NULL };
	int r;

	r = fw_blob_open(roots, name, LIMITS(1U << 30), &blob, NULL);
	if (r < 0)
		return r;
	r = cached_blob_hold(name, blob, v, roots, USEC_INFINITY, NULL, ret);
	if (r < 0)
		return r;
	TAKE_PTR(blob);
	return 0;
}

/* Runs a request for name answered from held (a reference of its own). */
static RequestResult run_held(Verifier *v, const char *name, CachedBlob *held, Request **ret)
{
	_cleanup_(request_freep) Request *r = NULL;
	RequestResult result;

	if (reset_request() < 0 || request_new(name, "test.bin", fx.dir, NULL, now_usec(CLOCK_MONOTONIC), &r) < 0)
		return _REQUEST_RESULT_MAX;
	if (strv_extend(&r->roots, fx.root) < 0)
		return _REQUEST_RESULT_MAX;
	r->max_size = 1U << 30;
	r->verifier = v;
	r->cached = cached_blob_ref(held);
	request_run(r);
	result = r->result;
	*ret = TAKE_PTR(r);
	return result;
}

/* The request's data file holds exactly the fixture's bytes (the original test.bin). */
static int check_data_is_blob(void)
{
	_cleanup_free_ char *data = path_join(fx.dir, "data");
	_cleanup_free_ uint8_t *buf = malloc(BLOB_SIZE + 1);
	_cleanup_close_ int fd = -EBADF;
	char sum[SHA256_DIGEST_SIZE * 2 + 1];

	fd = data ? open(data, O_RDONLY | O_CLOEXEC) : -EBADF;
	if (!buf || fd < 0 || read(fd, buf, BLOB_SIZE + 1) != BLOB_SIZE)
		return -1;
	sum_hex(buf, BLOB_SIZE, sum);
	return strcmp(sum, fx.blob_sum) == 0 ? 0 : -1;
}

/*
 * Held images are answered after resume without any file system: here the firmware root,
 * with the files and the manifest in it, is gone altogether, and both (a plain and an xz
 * image) are still served, with the bytes and the check of when they were held.
 */
static int test_held_no_fs(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(cached_blob_unrefp) CachedBlob *plain = NULL, *packed = NULL;
	_cleanup_(request_freep) Request *r = NULL;
	_cleanup_(config_freep) Config *conf = NULL;
	char cmd[PATH_MAX * 3 + 128], gone[PATH_MAX + 8];

	snprintf(cmd, sizeof(cmd), "xz -c -C crc32 '%s/test.bin' > '%s/packed.bin.xz' 2>/dev/null",
		 fx.root, fx.root);
	if (system(cmd) != 0) {
		fprintf(stderr, "xz(1) not found, skipping the held case\n");
		return 0;
	}
	snprintf(cmd, sizeof(cmd), "cd '%s' && sha256sum test.bin packed.bin.xz > SHA256SUMS",
		 fx.root);
	CHECK(system(cmd) == 0);
	CHECK(verifier_from("[Integrity]\nPolicy=enforce\n", &v) == 0);
	CHECK(hold(v, "test.bin", &plain) == 0 && plain->checked);
	CHECK(plain->verify.status == VERIFY_MATCH);
	CHECK(hold(v, "packed.bin", &packed) == 0 && packed->checked);
	CHECK(packed->verify.status == VERIFY_MATCH && packed->blob->compression == FW_COMPRESSION_XZ);

	/* changed on disk, manifest and all, then the whole root goes */
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && echo other > test.bin && echo other | xz > packed.bin.xz && "
		 "sha256sum test.bin packed.bin.xz > SHA256SUMS", fx.root);
	CHECK(system(cmd) == 0);
	snprintf(gone, sizeof(gone), "%s.gone", fx.root);
	CHECK(rename(fx.root, gone) == 0);

	CHECK(run_held(v, "test.bin", plain, &r) == REQUEST_SERVED);
	CHECK(r->verify.status == VERIFY_MATCH && strcmp(request_verified_at(r), "prewarm") == 0);
	CHECK(check_loading("10") == 0 && check_data_is_blob() == 0);
	request_free(TAKE_PTR(r));
	CHECK(run_held(v, "packed.bin", packed, &r) == REQUEST_SERVED);
	CHECK(r->verify.status == VERIFY_MATCH && strcmp(request_verified_at(r), "prewarm") == 0);
	CHECK(r->compression == FW_COMPRESSION_XZ && r->verify.manifest);
	CHECK(check_loading("10") == 0 && check_data_is_blob() == 0);
	request_free(TAKE_PTR(r));

	/* a Reload since: the check no longer stands, checked now (and nothing is there) */
	CHECK(config_new(&conf) == 0);
	CHECK(config_parse_string(conf, "test.conf", "[Integrity]\nPolicy=enforce\n") == 0);
	CHECK(verifier_configure(v, conf) == 0);
	CHECK(run_held(v, "packed.bin", packed, &r) == REQUEST_UNVERIFIED);
	CHECK(strcmp(request_verified_at(r), "serve") == 0 && check_loading("-1") == 0);
	request_free(TAKE_PTR(r));
	CHECK(rename(gone, fx.root) == 0);
	return 0;
}

/* Under enforce, an image that fails its check at prewarm is not held; under warn it is. */
static int test_held_refused(void)
{
	_cleanup_(verifier_freep) Verifier *v = NULL;
	_cleanup_(cached_blob_unrefp) CachedBlob *held = NULL;
	_cleanup_(request_freep) Request *r = NULL;

	CHECK(write_sums(ZERO_SUM, "test.bin") == 0);
	CHECK(verifier_from("[Integrity]\nPolicy=enforce\n", &v) == 0);
	CHECK(hold(v, "test.bin", &held) == -EACCES && !held);
	v = verifier_free(v);
	CHECK(verifier_from("[Integrity]\nPolicy=warn\n", &v) == 0);
	CHECK(hold(v, "test.bin", &held) == 0 && held->verify.status == VERIFY_MISMATCH);
	/* served anyway, and the journal still learns of the mismatch found at prewarm */
	CHECK(run_held(v, "test.bin", held, &r) == REQUEST_SERVED);
	CHECK(r->verify.status == VERIFY_MISMATCH && r->verified_held);
	CHECK(strcmp(request_verified_at(r), "prewarm") == 0);
	request_free(TAKE_PTR(r));
	held = cached_blob_unref(held);

	/* checks off: held unchecked, and the journal names no time of a check */
	CHECK(hold(NULL, "test.bin", &held) == 0 && held->verify.status == VERIFY_SKIPPED);
	CHECK(run_held(NULL, "test.bin", held, &r) == REQUEST_SERVED && !request_verified_at(r));
	return 0;
}

/* ---- the streamer's hooks --------------------------------------------------------------- */

static struct {
	uint64_t seen;
	bool in_order;
	int precommit_result;
	unsigned precommits;
} hook;

static void observe(void *userdata, uint64_t offset, const void *buf, size_t len)
{
	if (offset != hook.seen)
		hook.in_order = false;
	hook.seen += len;
}

static int precommit(void *userdata)
{
	hook.precommits++;
	return hook.precommit_result;
}

static int test_stream_precommit(void)
{
	_cleanup_(fw_blob_freep) FwBlob *blob = NULL;
	char *roots[] = { fx.root, NULL };
	const FwStreamOps ops = { .observe = observe, .precommit = precommit, .sendfile = true };

	CHECK(fw_blob_open(roots, "test.bin", LIMITS(1U << 30), &blob, NULL) == 0);

	hook = (typeof(hook)){ .in_order = true, .precommit_result = -EACCES };
	CHECK(reset_request() == 0);
	CHECK(fw_stream_serve(fx.dir, blob, USEC_INFINITY, NULL, &ops) == -EACCES);
	CHECK(check_loading("1-1") == 0);
	/* every byte seen once, in order: sendfile is off while something observes */
	CHECK(hook.seen == BLOB_SIZE && hook.in_order && hook.precommits == 1);

	hook = (typeof(hook)){ .in_order = true };
	CHECK(reset_request() == 0);
	CHECK(fw_stream_serve(fx.dir, blob, USEC_INFINITY, NULL, &ops) == BLOB_SIZE);
	CHECK(check_loading("10") == 0);
	CHECK(hook.seen == BLOB_SIZE && hook.in_order && hook.precommits == 1);
	return 0;
}

/* The hooks verify_begin() hands the streamer: a restart (offset 0 again) hashes afresh. */
static int test_stream_ops_restart(void)
{
	VerifyCheck c = { .policy = VERIFY_POLICY_ENFORCE, .status = VERIFY_PENDING,
			  .has_expected = true, .hash_stream = true };
	const FwStreamOps *ops = verify_stream_ops(&c);
	Sha256 h;

	sha256_init(&h);
	sha256_update(&h, 3, (const uint8_t *)"xyz");
	sha256_final(&h, c.expected);
	CHECK(ops && ops->observe && ops->precommit && !ops->sendfile);
	ops->observe(ops->userdata, 0, "abc", 3);
	ops->observe(ops->userdata, 0, "x", 1);	/* the request was replaced: again from 0 */
	ops->observe(ops->userdata, 1, "yz", 2);
	CHECK(ops->precommit(ops->userdata) == 0 && c.status == VERIFY_MATCH);

	c.status = VERIFY_PENDING;
	ops->observe(ops->userdata, 0, "xyZ", 3);
	CHECK(ops->precommit(ops->userdata) == -EACCES && c.status == VERIFY_MISMATCH);

	c.status = VERIFY_PENDING;
	c.policy = VERIFY_POLICY_WARN;
	ops->observe(ops->userdata, 0, "xyZ", 3);
	CHECK(ops->precommit(ops->userdata) == 0 && c.status == VERIFY_MISMATCH);
	verify_check_done(&c);
	return 0;
}

int main(void)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} tests[] = {
		{ "parse_forms", test_parse_forms },
		{ "parse_bad", test_parse_bad },
		{ "parse_duplicates", test_parse_duplicates },
		{ "policy_resolution", test_policy_resolution },
		{ "stream_precommit", test_stream_precommit },
		{ "stream_ops_restart", test_stream_ops_restart },
		{ "enforce_match", test_enforce_match },
		{ "enforce_mismatch", test_enforce_mismatch },
		{ "enforce_missing_entry", test_enforce_missing_entry },
		{ "enforce_bad_entry", test_enforce_bad_entry },
		{ "warn_serves", test_warn_serves },
		{ "off_ignores", test_off_ignores },
		{ "reparse", test_reparse },
		{ "configured_manifest", test_configured_manifest },
		{ "symlink", test_symlink },
		{ "compressed", test_compressed },
		{ "verify_blob", test_verify_blob },
		{ "held_no_fs", test_held_no_fs },
		{ "held_refused", test_held_refused },
	};
	unsigned failed = 0;

	log_set_target(LOG_TARGET_STDERR);
	for (size_t i = 0; i < ELEMENTSOF(tests); i++) {
		int r;

		if (fixture_setup() < 0) {
			fprintf(stderr, "fixture setup failed\n");
			return EXIT_FAILURE;
		}
		r = tests[i].fn();
		fixture_teardown();
		printf("%s %s\n", r == 0 ? "PASS" : "FAIL", tests[i].name);
		if (r != 0)
			failed++;
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
