/* SPDX-License-Identifier: MIT */
/*
 * Checking firmware against manifests of SHA-256 sums before it reaches the kernel.
 *
 * The manifest format is sha256sum(1)'s own output, so `cd <root> && sha256sum ... >
 * SHA256SUMS` writes one and `sha256sum -c` checks the same file:
 * - One line per file: 64 hex digits (either case), one space, then a space (text mode)
 *   or "*" (binary mode; the same on Linux), then the path up to the end of the line.
 *   A path holding a newline or a backslash is written by sha256sum with a leading "\"
 *   on the line and "\n", "\\" inside the path; both are understood. A trailing "\r"
 *   (a manifest edited on Windows) is dropped.
 * - Blank lines, lines of only white space and lines whose first non-blank byte is "#"
 *   are ignored; leading blanks before the sum are allowed.
 * - Paths are normalised before use: "./" components and repeated "/" go, so
 *   "./ath10k//fw.bin" and "ath10k/fw.bin" are the same entry. A path with ".."
 *   components names nothing the loader would open and is reported as malformed.
 * - The sum is of the file as it lies in the root: for foo.bin.xz, of the compressed
 *   file, which is what sha256sum computed.
 * - A line is at most MANIFEST_LINE_MAX bytes, a manifest at most MANIFEST_SIZE_MAX.
 * - A malformed line is logged as "file:line: ..." and ignored. When its path can still
 *   be told (a sum with a wrong length or a non-hex digit, followed by the two-byte
 *   separator and a path), it stands as an entry that matches nothing: under enforce that
 *   file is refused rather than served unverified, under warn it is served and logged.
 * - Duplicates: the last line for a path wins, as later assignments do in
 *   fw-helperd.conf (so `cat old new > SHA256SUMS` means the new sums); a duplicate with
 *   a different sum is logged.
 *
 * Where sums come from, for a file <root>/<rel>: every [Integrity] Manifest= file, the
 * last configured first, then <root>/SHA256SUMS. Lines in a configured manifest may be
 * absolute ("<root>/<rel>") or relative ("<rel>", meaning in any root); in SHA256SUMS they
 * are relative to its root. The first source that has an entry decides: a configured
 * manifest (under /etc, say) is the operator's word and outranks SHA256SUMS, which lies
 * beside the firmware and is no better protected than the firmware itself.
 * A file reached through a symlink inside its root (linux-firmware has many) is looked
 * up under the name asked for first, then under the path of the file it resolves to.
 *
 * Manifests are parsed once and kept; each request stats them and a manifest whose
 * device, inode, size, mtime or ctime changed is parsed again. Reload drops them all.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fw-helperd-conf.h"
#include "fw-helperd-messages.h"
#include "fw-helperd-verify.h"
#include "log.h"
#include "macro.h"
#include "util.h"

#define MANIFEST_NAME "SHA256SUMS"
#define MANIFEST_LINE_MAX (1U + SHA256_DIGEST_SIZE * 2U + 2U + PATH_MAX)
#define MANIFEST_SIZE_MAX (64U * 1024U * 1024U)
#define HASH_CHUNK_SIZE (128U * 1024U)

static const char *const policy_table[_VERIFY_POLICY_MAX] = {
	[VERIFY_POLICY_OFF] = "off",
	[VERIFY_POLICY_WARN] = "warn",
	[VERIFY_POLICY_ENFORCE] = "enforce",
};

const char *verify_policy_to_string(VerifyPolicy p)
{
	return p >= 0 && p < _VERIFY_POLICY_MAX ? policy_table[p] : NULL;
}

VerifyPolicy verify_policy_from_string(const char *s)
{
	for (int i = 0; s && i < _VERIFY_POLICY_MAX; i++)
		if (strcmp(s, policy_table[i]) == 0)
			return (VerifyPolicy)i;
	return _VERIFY_POLICY_INVALID;
}

static const char *const status_table[_VERIFY_STATUS_MAX] = {
	[VERIFY_SKIPPED] = "skipped",	  [VERIFY_PENDING] = "pending",
	[VERIFY_MATCH] = "match",	  [VERIFY_MISMATCH] = "mismatch",
	[VERIFY_NO_ENTRY] = "no-entry",	  [VERIFY_BAD_ENTRY] = "bad-entry",
	[VERIFY_ERROR] = "error",
};

const char *verify_status_to_string(VerifyStatus s)
{
	return s >= 0 && s < _VERIFY_STATUS_MAX ? status_table[s] : NULL;
}

/*
 * Drops "." components and repeated or trailing "/"; keeps a leading "/". Refuses "..",
 * an empty result and NUL-free but otherwise unchecked bytes are kept as they are.
 */
static int path_normalize(const char *path, size_t len, char **ret)
{
	_cleanup_free_ char *out = NULL;
	const char *p = path, *end = path + len;
	char *o;

	out = malloc(len + 2);
	if (!out)
		return -ENOMEM;
	o = out;
	if (p < end && *p == '/')
		*o++ = '/';
	while (p < end) {
		const char *slash;
		size_t n;

		while (p < end && *p == '/')
			p++;
		slash = memchr(p, '/', (size_t)(end - p));
		n = (size_t)((slash ?: end) - p);
		if (n == 0)
			break;
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return -EINVAL;
		if (!(n == 1 && p[0] == '.')) {
			if (o > out && o[-1] != '/')
				*o++ = '/';
			memcpy(o, p, n);
			o += n;
		}
		p += n;
	}
	*o = 0;
	if (out[0] == 0 || strcmp(out, "/") == 0 || memchr(out, 0, (size_t)(o - out)))
		return -EINVAL;
	*ret = TAKE_PTR(out);
	return 0;
}

int verify_root_policy_parse(const char *s, char **ret_root, VerifyPolicy *ret_policy)
{
	_cleanup_free_ char *root = NULL;
	const char *colon = strrchr(s, ':');
	VerifyPolicy p;
	int r;

	if (!colon || s[0] != '/')
		return -EINVAL;
	p = verify_policy_from_string(colon + 1);
	if (p < 0)
		return -EINVAL;
	r = path_normalize(s, (size_t)(colon - s), &root);
	if (r < 0)
		return r;
	*ret_root = TAKE_PTR(root);
	*ret_policy = p;
	return 0;
}

/* ---- Manifest ---------------------------------------------------------------------- */

Manifest *manifest_free(Manifest *m)
{
	if (!m)
		return NULL;
	for (size_t i = 0; i < m->n_entries; i++)
		free(m->entries[i].path);
	free(m->entries);
	free(m->filename);
	return mfree(m);
}

/* A broken manifest must not flood the journal: the first few lines, then a count. */
#define MANIFEST_LOG_MAX 16U

static void manifest_log(Manifest *m, unsigned line, const char *why)
{
	const char *filename = m->filename;
	LogEntry e = {};

	if (++m->n_logged > MANIFEST_LOG_MAX)
		return;
	if (m->n_logged == MANIFEST_LOG_MAX)
		why = "More problems, not logged";

	log_entry_add(&e, "FW_MANIFEST=%s", filename);
	log_entry_add(&e, "FW_MANIFEST_LINE=%u", line);
	log_entry_send(&e, LOG_WARNING, 0, FW_MESSAGE_CONFIG, "%s:%u: %s.", filename, line, why);
}

/* sha256sum's escaping: "\\" and "\n" (and "\r", written by newer coreutils). */
static int path_unescape(const char *s, size_t len, char **ret, size_t *ret_len)
{
	_cleanup_free_ char *out = malloc(len + 1);
	size_t n = 0;

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '\\') {
			out[n++] = s[i];
			continue;
		}
		if (++i >= len)
			return -EINVAL;
		if (s[i] == '\\')
			out[n++] = '\\';
		else if (s[i] == 'n')
			out[n++] = '\n';
		else if (s[i] == 'r')
			out[n++] = '\r';
		else
			return -EINVAL;
	}
	out[n] = 0;
	*ret_len = n;
	*ret = TAKE_PTR(out);
	return 0;
}

static int manifest_add(Manifest *m, size_t *allocated, char *path, const uint8_t *digest,
			unsigned line)
{
	ManifestEntry *e;

	if (m->n_entries >= *allocated) {
		size_t n = MAX(*allocated * 2, (size_t)64);

		e = reallocarray(m->entries, n, sizeof(*e));
		if (!e)
			return -ENOMEM;
		m->entries = e;
		*allocated = n;
	}
	e = &m->entries[m->n_entries++];
	*e = (ManifestEntry){ .path = path, .bad = !digest, .line = line };
	if (digest)
		memcpy(e->digest, digest, SHA256_DIGEST_SIZE);
	return 0;
}

/*
 * Splits one line (no newline, no "\r") into sum and path. Returns 0 with a valid sum,
 * -EBADMSG with *ret_why set when the sum is bad but a path could still be told,
 * -EINVAL when nothing usable is there.
 */
static int manifest_split(const char *s, size_t len, uint8_t digest[SHA256_DIGEST_SIZE],
			  const char **ret_path, size_t *ret_path_len, bool *ret_escaped,
			  const char **ret_why)
{
	char hex[SHA256_DIGEST_SIZE * 2 + 1];
	const char *sep = NULL;
	bool escaped = len > 0 && s[0] == '\\';

	if (escaped) {
		s++;
		len--;
	}
	*ret_escaped = escaped;
	if (len > SHA256_DIGEST_SIZE * 2 + 2 && s[SHA256_DIGEST_SIZE * 2] == ' ' &&
	    (s[SHA256_DIGEST_SIZE * 2 + 1] == ' ' || s[SHA256_DIGEST_SIZE * 2 + 1] == '*')) {
		*ret_path = s + SHA256_DIGEST_SIZE * 2 + 2;
		*ret_path_len = len - SHA256_DIGEST_SIZE * 2 - 2;
		memcpy(hex, s, SHA256_DIGEST_SIZE * 2);
		hex[SHA256_DIGEST_SIZE * 2] = 0;
		if (sha256_from_hex(hex, digest) == 0 && !memchr(hex, 0, sizeof(hex) - 1))
			return 0;
		*ret_why = "Invalid hex digit in SHA-256 sum, ignoring line";
		return -EBADMSG;
	}
	/* a sum of the wrong length: find the separator after it to still know the path */
	for (size_t i = 1; i + 2 < len && !sep; i++)
		if (s[i] == ' ' && (s[i + 1] == ' ' || s[i + 1] == '*'))
			sep = s + i;
	if (!sep || memchr(s, ' ', (size_t)(sep - s)))
		return -EINVAL;
	*ret_path = sep + 2;
	*ret_path_len = len - (size_t)(sep + 2 - s);
	*ret_why = "SHA-256 sum is not 64 hex digits, ignoring line";
	return -EBADMSG;
}

static int manifest_parse_line(Manifest *m, size_t *allocated, const char *s, size_t len,
			       unsigned line)
{
	_cleanup_free_ char *unescaped = NULL, *path = NULL;
	uint8_t digest[SHA256_DIGEST_SIZE];
	const char *p, *why = NULL;
	size_t plen;
	bool escaped;
	int r, q;

	r = manifest_split(s, len, digest, &p, &plen, &escaped, &why);
	if (r == -EINVAL) {
		manifest_log(m, line, "Expected '<sha256> <path>' or '<sha256> *<path>', ignoring line");
		return 0;
	}
	if (escaped) {
		q = path_unescape(p, plen, &unescaped, &plen);
		if (q == -ENOMEM)
			return q;
		if (q < 0) {
			manifest_log(m, line, "Invalid escape sequence in path, ignoring line");
			return 0;
		}
		p = unescaped;
	}
	q = memchr(p, 0, plen) ? -EINVAL : path_normalize(p, plen, &path);
	if (q == -ENOMEM)
		return q;
	if (q < 0) {
		manifest_log(m, line, "Path is empty, contains \"..\" or a NUL byte, ignoring line");
		return 0;
	}
	if (r < 0) {
		manifest_log(m, line, why);
		m->n_bad++;
	}
	q = manifest_add(m, allocated, path, r < 0 ? NULL : digest, line);
	if (q < 0)
		return q;
	TAKE_PTR(path);
	return 0;
}

static int entry_compare(const void *a, const void *b)
{
	const ManifestEntry *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	if (c != 0)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

static bool entry_same_sum(const ManifestEntry *a, const ManifestEntry *b)
{
	if (a->bad || b->bad)
		return a->bad == b->bad;
	return memcmp(a->digest, b->digest, SHA256_DIGEST_SIZE) == 0;
}

/* Sorts by path and keeps the last line for each path. */
static void manifest_dedup(Manifest *m)
{
	size_t out = 0;

	if (m->n_entries == 0)
		return;
	qsort(m->entries, m->n_entries, sizeof(ManifestEntry), entry_compare);
	for (size_t i = 1; i < m->n_entries; i++) {
		ManifestEntry *kept = &m->entries[out];

		if (strcmp(kept->path, m->entries[i].path) != 0) {
			m->entries[++out] = m->entries[i];
			continue;
		}
		if (!entry_same_sum(kept, &m->entries[i])) {
			char why[96];

			snprintf(why, sizeof(why), "Sum differs from line %u for the same path, "
				 "this later line wins", kept->line);
			manifest_log(m, m->entries[i].line, why);
		}
		free(kept->path);
		*kept = m->entries[i];
	}
	m->n_entries = out + 1;
}

int manifest_parse(const char *filename, const char *text, size_t len, Manifest **ret)
{
	_cleanup_(manifest_freep) Manifest *m = NULL;
	const char *p = text, *end = text + len;
	size_t allocated = 0;
	unsigned line = 0;
	int r;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->filename = strdup(filename);
	if (!m->filename)
		return -ENOMEM;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)) ?: end;
		const char *s = p;
		size_t n;

		p = eol < end ? eol + 1 : end;
		line++;
		while (s < eol && (*s == ' ' || *s == '\t'))
			s++;
		n = (size_t)(eol - s);
		if (n > 0 && s[n - 1] == '\r')
			n--;
		if (n == 0 || s[0] == '#')
			continue;
		if (n > MANIFEST_LINE_MAX) {
			manifest_log(m, line, "Line too long, ignoring line");
			continue;
		}
		r = manifest_parse_line(m, &allocated, s, n, line);
		if (r < 0)
			return r;
	}
	manifest_dedup(m);
	*ret = TAKE_PTR(m);
	return 0;
}

static int entry_find(const void *key, const void *entry)
{
	return strcmp(key, ((const ManifestEntry *)entry)->path);
}

const ManifestEntry *manifest_lookup(const Manifest *m, const char *path)
{
	_cleanup_free_ char *normalized = NULL;

	if (!m || m->n_entries == 0 || path_normalize(path, strlen(path), &normalized) < 0)
		return NULL;
	return bsearch(normalized, m->entries, m->n_entries, sizeof(ManifestEntry), entry_find);
}

/* ---- Verifier: settings and the manifests parsed so far ----------------------------- */

typedef struct ManifestFile {
	char *path;
	bool known;		/* st and error describe what we saw last */
	struct stat st;
	int error;		/* 0, -ENOENT (no manifest there) or why it could not be read */
	Manifest *manifest;
	struct ManifestFile *next;
} ManifestFile;

struct Verifier {
	pthread_mutex_t lock;
	VerifyPolicy policy;
	char **policy_roots;		/* RootPolicy= roots, in the order given */
	VerifyPolicy *root_policies;	/* policy of policy_roots[i]; the last one for a root wins */
	char **manifests;		/* Manifest= */
	ManifestFile *files;
	unsigned generation;		/* counts verifier_configure() calls */
};

static void manifest_files_free(ManifestFile *f)
{
	while (f) {
		ManifestFile *next = f->next;

		manifest_free(f->manifest);
		free(f->path);
		free(f);
		f = next;
	}
}

static void verifier_clear(Verifier *v)
{
	strv_free(v->policy_roots);
	v->policy_roots = NULL;
	v->root_policies = mfree(v->root_policies);
	strv_free(v->manifests);
	v->manifests = NULL;
	manifest_files_free(v->files);
	v->files = NULL;
}

int verifier_new(Verifier **ret)
{
	Verifier *v;

	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	pthread_mutex_init(&v->lock, NULL);
	*ret = v;
	return 0;
}

Verifier *verifier_free(Verifier *v)
{
	if (!v)
		return NULL;
	verifier_clear(v);
	pthread_mutex_destroy(&v->lock);
	return mfree(v);
}

int verifier_configure(Verifier *v, const Config *c)
{
	_cleanup_strv_free_ char **roots = NULL, **manifests = NULL;
	_cleanup_free_ VerifyPolicy *policies = NULL;
	size_t n = strv_length(c->integrity_root_policy);

	policies = calloc(n + 1, sizeof(VerifyPolicy));
	if (!policies)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *root = NULL;
		int r;

		/* checked when the configuration was parsed */
		r = verify_root_policy_parse(c->integrity_root_policy[i], &root, &policies[i]);
		if (r < 0)
			return r;
		if (strv_extend(&roots, root) < 0)
			return -ENOMEM;
	}
	if (c->integrity_manifests) {
		manifests = strv_copy(c->integrity_manifests);
		if (!manifests)
			return -ENOMEM;
	}

	pthread_mutex_lock(&v->lock);
	verifier_clear(v);
	v->policy = c->integrity_policy;
	v->policy_roots = TAKE_PTR(roots);
	v->root_policies = TAKE_PTR(policies);
	v->manifests = TAKE_PTR(manifests);
	v->generation++;
	pthread_mutex_unlock(&v->lock);
	return 0;
}

unsigned verifier_generation(Verifier *v)
{
	unsigned g;

	if (!v)
		return 0;
	pthread_mutex_lock(&v->lock);
	g = v->generation;
	pthread_mutex_unlock(&v->lock);
	return g;
}

static VerifyPolicy policy_locked(Verifier *v, const char *root)
{
	_cleanup_free_ char *normalized = NULL;
	VerifyPolicy p = v->policy;

	if (!root || path_normalize(root, strlen(root), &normalized) < 0)
		return p;
	for (size_t i = 0; v->policy_roots && v->policy_roots[i]; i++)
		if (strcmp(v->policy_roots[i], normalized) == 0)
			p = v->root_policies[i];
	return p;
}

/* Off for every root (the default): a request need not find which root its file is in. */
static bool verifier_all_off(Verifier *v)
{
	bool off;

	if (!v)
		return true;
	pthread_mutex_lock(&v->lock);
	off = v->policy == VERIFY_POLICY_OFF;
	for (size_t i = 0; off && v->policy_roots && v->policy_roots[i]; i++)
		off = v->root_policies[i] == VERIFY_POLICY_OFF;
	pthread_mutex_unlock(&v->lock);
	return off;
}

VerifyPolicy verifier_policy(Verifier *v, const char *root)
{
	VerifyPolicy p;

	if (!v)
		return VERIFY_POLICY_OFF;
	pthread_mutex_lock(&v->lock);
	p = policy_locked(v, root);
	pthread_mutex_unlock(&v->lock);
	return p;
}

static bool stat_same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static int manifest_read(const char *path, struct stat *ret_st, char **ret_text, size_t *ret_len)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct stat st;

	/* O_NONBLOCK: a FIFO in place of the manifest must not hang a worker */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADFD;
	if ((uint64_t)st.st_size > MANIFEST_SIZE_MAX)
		return -EFBIG;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	while (len <= (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len != (size_t)st.st_size)
		return -ESTALE;	/* changed while we read: the next request reads it again */
	*ret_st = st;
	*ret_text = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

/* Brings f up to date with the file system: a stat, and a parse when it changed. */
static void manifest_file_refresh(ManifestFile *f)
{
	_cleanup_free_ char *text = NULL;
	Manifest *m = NULL;
	struct stat st;
	size_t len = 0;
	int r;

	if (stat(f->path, &st) < 0)
		r = -errno;
	else if (f->known && f->error == 0 && stat_same(&st, &f->st))
		return;
	else
		r = manifest_read(f->path, &st, &text, &len);
	if (r == 0)
		r = manifest_parse(f->path, text, len, &m);
	if (r < 0 && f->known && r == f->error)
		return;	/* logged already */

	f->manifest = manifest_free(f->manifest);
	f->known = r != -ESTALE && r != -ENOMEM;
	f->error = r;
	if (r == 0) {
		f->manifest = m;
		f->st = st;
		log_debug("Read manifest %s: %zu entries, %u malformed lines.", f->path,
			  m->n_entries, m->n_bad);
	} else if (r == -ENOENT)
		log_debug("No manifest %s.", f->path);
	else
		log_warning_errno(r, "Failed to read manifest %s, ignoring it: %m", f->path);
}

static ManifestFile *manifest_file_get(Verifier *v, const char *path)
{
	ManifestFile *f;

	for (f = v->files; f; f = f->next)
		if (strcmp(f->path, path) == 0)
			goto refresh;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->path = strdup(path);
	if (!f->path)
		return mfree(f);
	f->next = v->files;
	v->files = f;
refresh:
	manifest_file_refresh(f);
	return f;
}

/* Copies what entry says into c. */
static int check_take_entry(VerifyCheck *c, const ManifestFile *f, const ManifestEntry *e)
{
	free(c->manifest);
	if (asprintf(&c->manifest, "%s:%u", f->path, e->line) < 0) {
		c->manifest = NULL;
		return -ENOMEM;
	}
	if (e->bad) {
		c->status = VERIFY_BAD_ENTRY;
		return 0;
	}
	memcpy(c->expected, e->digest, SHA256_DIGEST_SIZE);
	c->has_expected = true;
	c->status = VERIFY_PENDING;
	return 0;
}

/* Entry for <root>/<rel> in f, trying absolute then relative for configured manifests. */
static const ManifestEntry *lookup_in(const ManifestFile *f, const char *root, const char *rel,
				      bool absolute_too)
{
	const ManifestEntry *e = NULL;

	if (!f || !f->manifest)
		return NULL;
	if (absolute_too) {
		_cleanup_free_ char *abs = path_join(root, rel);

		e = abs ? manifest_lookup(f->manifest, abs) : NULL;
	}
	return e ?: manifest_lookup(f->manifest, rel);
}

/*
 * Looks for the first source with an entry for any of rels (the name asked for, then the
 * file it resolved to): configured manifests, last first, then <root>/SHA256SUMS.
 */
static int verifier_lookup(Verifier *v, const char *root, char *const *rels, VerifyCheck *c)
{
	_cleanup_free_ char *own = NULL;
	size_t n;
	int r = 0;

	own = path_join(root, MANIFEST_NAME);
	if (!own)
		return -ENOMEM;
	c->status = VERIFY_NO_ENTRY;
	pthread_mutex_lock(&v->lock);
	n = strv_length(v->manifests);
	for (size_t k = 0; k <= n; k++) {
		size_t i = n - 1 - k;	/* wraps past 0 to SIZE_MAX when k == n: our own */
		ManifestFile *f = manifest_file_get(v, k < n ? v->manifests[i] : own);

		if (!f) {
			r = -ENOMEM;
			break;
		}
		for (char *const *rel = rels; *rel; rel++) {
			const ManifestEntry *e = lookup_in(f, root, *rel, k < n);

			if (e) {
				r = check_take_entry(c, f, e);
				goto out;
			}
		}
	}
out:
	pthread_mutex_unlock(&v->lock);
	return r;
}

/* ---- Checking one blob ------------------------------------------------------------- */

void verify_check_done(VerifyCheck *c)
{
	c->root = mfree(c->root);
	c->manifest = mfree(c->manifest);
}

int verify_check_copy(const VerifyCheck *c, VerifyCheck *ret)
{
	VerifyCheck copy = *c;

	copy.root = copy.manifest = NULL;
	copy.hash_stream = false;
	copy.ops = (FwStreamOps){};
	if ((c->root && !(copy.root = strdup(c->root))) ||
	    (c->manifest && !(copy.manifest = strdup(c->manifest)))) {
		verify_check_done(&copy);
		return -ENOMEM;
	}
	*ret = copy;
	return 0;
}

bool verify_check_refused(const VerifyCheck *c)
{
	return c->policy == VERIFY_POLICY_ENFORCE && c->status != VERIFY_MATCH &&
	       c->status != VERIFY_SKIPPED && c->status != VERIFY_PENDING;
}

static const char *compression_suffix(FwCompression c)
{
	return c == FW_COMPRESSION_ZSTD ? ".zst" : c == FW_COMPRESSION_XZ ? ".xz" : "";
}

/* Which of roots the loader found blob in, and the file's path relative to it. */
static int blob_root(char *const *roots, const char *name, const FwBlob *blob, char **ret_root,
		     char **ret_rel)
{
	_cleanup_free_ char *rel = NULL;

	if (asprintf(&rel, "%s%s", name, compression_suffix(blob->compression)) < 0)
		return -ENOMEM;
	for (char *const *root = roots; root && *root; root++) {
		if (!path_is_join(blob->path, *root, rel))
			continue;
		*ret_root = strdup(*root);
		if (!*ret_root)
			return -ENOMEM;
		*ret_rel = TAKE_PTR(rel);
		return 0;
	}
	return -ENOENT;
}

/* The path of the file fd has open, relative to root after resolving symlinks, or NULL. */
static char *fd_path_beneath(int fd, const char *root)
{
	_cleanup_free_ char *real_root = NULL;
	char proc[sizeof("/proc/self/fd/") + 12], target[PATH_MAX];
	ssize_t n;
	size_t len;

	if (fd < 0)
		return NULL;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%i", fd);
	n = readlink(proc, target, sizeof(target) - 1);
	real_root = realpath(root, NULL);
	if (n <= 0 || !real_root)
		return NULL;
	target[n] = 0;
	len = strlen(real_root);
	if (strncmp(target, real_root, len) != 0 || target[len] != '/')
		return NULL;
	return strdup(target + len + 1);
}

static void check_finish(VerifyCheck *c)
{
	c->has_actual = true;
	if (c->status != VERIFY_PENDING)
		return;
	c->status = memcmp(c->expected, c->actual, SHA256_DIGEST_SIZE) == 0 ? VERIFY_MATCH :
									       VERIFY_MISMATCH;
}

/* Hashes [0, size) of fd, then checks it is still the file st describes (unless NULL). */
static int hash_fd(int fd, const struct stat *st, uint64_t size, uint8_t ret[SHA256_DIGEST_SIZE])
{
	_cleanup_free_ uint8_t *buf = NULL;
	struct stat now;
	uint64_t offset = 0;
	Sha256 h;

	buf = malloc(HASH_CHUNK_SIZE);
	if (!buf)
		return -ENOMEM;
	sha256_init(&h);
	while (offset < size) {
		ssize_t n = pread(fd, buf, (size_t)MIN((uint64_t)HASH_CHUNK_SIZE, size - offset),
				  (off_t)offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ESTALE;
		sha256_update(&h, (size_t)n, buf);
		offset += (uint64_t)n;
	}
	if (st) { /* NULL for a sealed memfd: nothing can change it */
		if (fstat(fd, &now) < 0)
			return -errno;
		if (now.st_size != st->st_size || now.st_mtim.tv_sec != st->st_mtim.tv_sec ||
		    now.st_mtim.tv_nsec != st->st_mtim.tv_nsec)
			return -ESTALE;
	}
	sha256_final(&h, ret);
	return 0;
}

/*
 * The compressed file blob was decompressed from, opened again: only if it is still the
 * same inode, unchanged, is its sum the sum of what the kernel is about to get.
 */
static int open_compressed_source(const FwBlob *blob)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat st;

	fd = open(blob->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_dev != blob->st.st_dev || st.st_ino != blob->st.st_ino ||
	    st.st_size != blob->st.st_size || st.st_mtim.tv_sec != blob->st.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != blob->st.st_mtim.tv_nsec)
		return -ESTALE;
	return TAKE_FD(fd);
}

/* Hashes what is at hand without streaming: the data in memory, or the file. */
static int hash_blob_now(const FwBlob *blob, int source_fd, uint8_t ret[SHA256_DIGEST_SIZE])
{
	Sha256 h;

	if (source_fd >= 0)
		return hash_fd(source_fd, &blob->st, (uint64_t)blob->st.st_size, ret);
	if (blob->data) {
		sha256_init(&h);
		sha256_update(&h, blob->size, blob->data);
		sha256_final(&h, ret);
		return 0;
	}
	if (blob->fd >= 0)
		return hash_fd(blob->fd, blob->held ? NULL : &blob->st, blob->size, ret);
	return -EBADF;
}

static void verify_observe(void *userdata, uint64_t offset, const void *buf, size_t len)
{
	VerifyCheck *c = userdata;

	if (offset == 0)
		sha256_init(&c->hash);
	sha256_update(&c->hash, len, buf);
}

static int verify_precommit(void *userdata)
{
	VerifyCheck *c = userdata;

	sha256_final(&c->hash, c->actual);
	check_finish(c);
	return verify_check_refused(c) ? -EACCES : 0;
}

const FwStreamOps *verify_stream_ops(VerifyCheck *c)
{
	if (!c->hash_stream)
		return NULL;
	c->ops = (FwStreamOps){
		.observe = verify_observe,
		.precommit = verify_precommit,
		.userdata = c,
	};
	return &c->ops;
}

/* The names to look the blob up under: as asked for, then what it resolves to. */
static void blob_lookup_names(const FwBlob *blob, int source_fd, const char *root, char *rel,
			      char *ret[static 3])
{
	int fd = source_fd >= 0 ? source_fd : blob->fd;
	char *resolved;

	ret[0] = rel;
	ret[1] = ret[2] = NULL;
	resolved = fd_path_beneath(fd, root);
	if (resolved && strcmp(resolved, rel) != 0)
		ret[1] = resolved;
	else
		free(resolved);
}

/* Finds the expected sum of <c->root>/<rel>; opens the compressed file into *source_fd. */
static int check_lookup(Verifier *v, const FwBlob *blob, char *rel, int *source_fd,
			VerifyCheck *c)
{
	_cleanup_free_ char *resolved = NULL;
	char *names[3];

	if (blob->compression != FW_COMPRESSION_NONE) {
		*source_fd = open_compressed_source(blob);
		if (*source_fd < 0) {
			c->status = VERIFY_ERROR;
			c->error = *source_fd;
			return 0;
		}
	}
	blob_lookup_names(blob, *source_fd, c->root, rel, names);
	resolved = names[1];
	return verifier_lookup(v, c->root, names, c);
}

/* Hashes the blob before anything is streamed, and decides. Returns 0 or -ENOMEM. */
static int check_hash_now(VerifyCheck *c, const FwBlob *blob, int source_fd)
{
	int r;

	if (c->status == VERIFY_ERROR)
		return 0;
	r = hash_blob_now(blob, source_fd, c->actual);
	if (r == -ENOMEM)
		return r;
	if (r >= 0)
		check_finish(c);
	else if (c->status == VERIFY_PENDING) {
		c->status = VERIFY_ERROR;
		c->error = r;
	}
	/* else refused or logged anyway: the sum was only for the journal */
	return 0;
}

int verify_begin(Verifier *v, char *const *roots, const char *name, const FwBlob *blob,
		 VerifyCheck *c)
{
	_cleanup_free_ char *rel = NULL;
	_cleanup_close_ int source_fd = -EBADF;
	int r;

	*c = (VerifyCheck){ .status = VERIFY_SKIPPED, .policy = VERIFY_POLICY_OFF };
	if (verifier_all_off(v))
		return 0;
	r = blob_root(roots, name, blob, &c->root, &rel);
	if (r == -ENOMEM)
		return r;
	c->policy = verifier_policy(v, c->root);
	if (c->policy == VERIFY_POLICY_OFF)
		return 0;
	if (r < 0)
		c->status = VERIFY_NO_ENTRY;	/* not where the loader puts things */
	else {
		r = check_lookup(v, blob, rel, &source_fd, c);
		if (r < 0)
			return r;
	}
	/* plain files: hashed on their way to the kernel, one read, decided before "0" */
	if (blob->compression == FW_COMPRESSION_NONE &&
	    (c->status == VERIFY_PENDING || !verify_check_refused(c))) {
		c->hash_stream = true;
		return 0;
	}
	r = check_hash_now(c, blob, source_fd);
	if (r < 0)
		return r;
	return verify_check_refused(c) ? -EACCES : 0;
}

int verify_complete(VerifyCheck *c, const FwBlob *blob)
{
	int r;

	if (c->hash_stream) {
		c->hash_stream = false;
		r = hash_blob_now(blob, -EBADF, c->actual);
		if (r == -ENOMEM)
			return r;
		if (r >= 0)
			check_finish(c);
		else {
			c->status = VERIFY_ERROR;
			c->error = r;
		}
	}
	return verify_check_refused(c) ? -EACCES : 0;
}

int verify_blob(Verifier *v, char *const *roots, const char *name, const FwBlob *blob,
		VerifyCheck *ret)
{
	VerifyCheck c;
	int r;

	r = verify_begin(v, roots, name, blob, &c);
	if (r == 0)
		r = verify_complete(&c, blob);
	if (r != -ENOMEM)
		verify_log(&c, NULL, name, blob->path, r >= 0);
	if (ret)
		*ret = c;
	else
		verify_check_done(&c);
	return r;
}

/* ---- Journal ----------------------------------------------------------------------- */

static const char *status_explain(const VerifyCheck *c)
{
	switch (c->status) {
	case VERIFY_MISMATCH:
		return "does not match its manifest";
	case VERIFY_NO_ENTRY:
		return "has no entry in any manifest";
	case VERIFY_BAD_ENTRY:
		return "has a malformed manifest entry";
	default:
		return "could not be read to be verified";
	}
}

bool verify_check_failed(const VerifyCheck *c)
{
	return c->status != VERIFY_SKIPPED && c->status != VERIFY_MATCH &&
	       c->status != VERIFY_PENDING;
}

void verify_log(const VerifyCheck *c, LogEntry *request_fields, const char *name,
		const char *path, bool served)
{
	_cleanup_free_ char *shown = NULL;
	char expected[SHA256_DIGEST_SIZE * 2 + 1] = "", actual[SHA256_DIGEST_SIZE * 2 + 1] = "";
	char error[64] = "";
	LogEntry own = {}, *e = request_fields ?: &own;

	if (!verify_check_failed(c)) {
		log_entry_done(e);
		return;
	}
	shown = cescape(name);
	if (c->has_expected)
		sha256_to_hex(c->expected, expected);
	if (c->has_actual)
		sha256_to_hex(c->actual, actual);
	if (!request_fields)
		log_entry_add(e, "FIRMWARE=%s", name);
	log_entry_add(e, "FW_PATH=%s", path);
	log_entry_add(e, "FW_EXPECTED_SHA256=%s", expected);
	log_entry_add(e, "FW_ACTUAL_SHA256=%s", actual);
	log_entry_add(e, "FW_VERIFY_POLICY=%s", verify_policy_to_string(c->policy));
	log_entry_add(e, "FW_VERIFY_STATUS=%s", verify_status_to_string(c->status));
	if (c->root)
		log_entry_add(e, "FW_ROOT=%s", c->root);
	if (c->manifest)
		log_entry_add(e, "FW_MANIFEST=%s", c->manifest);
	if (c->status == VERIFY_ERROR)
		snprintf(error, sizeof(error), " (%s)", strerror(-c->error));
	log_entry_send(e, served ? LOG_WARNING : LOG_ERR, 0, FW_MESSAGE_VERIFY_FAILED,
		       "Firmware %s (%s) %s%s: expected sha256 %s, actual %s; %s.", shown, path,
		       status_explain(c), error,
		       *expected ? expected : "(none)", *actual ? actual : "(unknown)",
		       served ? "served anyway (policy warn)" : "refused with -1");
}
