/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "utf8.h"
#include "util.h"

usec_t now_usec(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (usec_t)ts.tv_sec * USEC_PER_SEC + (usec_t)ts.tv_nsec / 1000;
}

int write_string_at(int dirfd, const char *path, const char *s)
{
	_cleanup_close_ int fd = -EBADF;
	size_t len = strlen(s);
	ssize_t n;

	fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	do
		n = write(fd, s, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

int read_string_at(int dirfd, const char *path, char **ret)
{
	_cleanup_close_ int fd = -EBADF;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return pread_string(fd, ret);
}

int pread_string(int fd, char **ret)
{
	char buf[65536];
	ssize_t n;
	char *s;

	do
		n = pread(fd, buf, sizeof(buf) - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = 0;
	s = strdup(buf);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

int read_full_file(const char *path, size_t max, char **ret)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *buf = NULL;
	size_t allocated = 0, len = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (allocated - len < 4096 + 1) {
			char *grown;

			if (allocated >= max)
				return -EFBIG;
			allocated = allocated ? allocated * 2 : 16384;
			grown = realloc(buf, allocated);
			if (!grown)
				return -ENOMEM;
			buf = grown;
		}
		n = read(fd, buf + len, allocated - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (!buf && !(buf = malloc(1)))
		return -ENOMEM;
	buf[len] = 0;
	*ret = TAKE_PTR(buf);
	return 0;
}

int safe_atou64(const char *s, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno > 0)
		return -errno;
	if (*end)
		return -EINVAL;
	*ret = v;
	return 0;
}

static int split_number_suffix(const char *s, uint64_t *ret_number, const char **ret_suffix)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno > 0)
		return -errno;
	*ret_number = v;
	*ret_suffix = end;
	return 0;
}

int parse_size(const char *s, uint64_t *ret)
{
	static const struct { const char *suffix; uint64_t factor; } table[] = {
		{ "", 1 },	     { "B", 1 },	 { "K", 1ULL << 10 },
		{ "M", 1ULL << 20 }, { "G", 1ULL << 30 }, { "T", 1ULL << 40 },
	};
	const char *suffix;
	uint64_t v;
	int r;

	r = split_number_suffix(s, &v, &suffix);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(table); i++)
		if (strcmp(suffix, table[i].suffix) == 0) {
			if (v > UINT64_MAX / table[i].factor)
				return -ERANGE;
			*ret = v * table[i].factor;
			return 0;
		}
	return -EINVAL;
}

int parse_timespan(const char *s, usec_t *ret)
{
	static const struct { const char *suffix; usec_t factor; } table[] = {
		{ "", USEC_PER_SEC },	 { "s", USEC_PER_SEC },	 { "sec", USEC_PER_SEC },
		{ "ms", USEC_PER_MSEC }, { "min", 60 * USEC_PER_SEC }, { "us", 1 },
	};
	const char *suffix;
	uint64_t v;
	int r;

	r = split_number_suffix(s, &v, &suffix);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(table); i++)
		if (strcmp(suffix, table[i].suffix) == 0) {
			if (v > UINT64_MAX / table[i].factor)
				return -ERANGE;
			*ret = v * table[i].factor;
			return 0;
		}
	return -EINVAL;
}

int parse_boolean(const char *s)
{
	static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
	static const char *const no[] = { "0", "no", "n", "false", "f", "off" };

	for (size_t i = 0; i < ELEMENTSOF(yes); i++)
		if (strcasecmp(s, yes[i]) == 0)
			return 1;
	for (size_t i = 0; i < ELEMENTSOF(no); i++)
		if (strcasecmp(s, no[i]) == 0)
			return 0;
	return -EINVAL;
}

/* How much of a path_join() keeps of a, and where it starts in b. */
static size_t join_parts(const char *a, const char **b)
{
	size_t la = strlen(a);

	while (la > 1 && a[la - 1] == '/')
		la--;
	while (**b == '/')
		(*b)++;
	return la;
}

char *path_join(const char *a, const char *b)
{
	size_t la = join_parts(a, &b), lb = strlen(b);
	char *p;

	p = malloc(la + 1 + lb + 1);
	if (!p)
		return NULL;
	memcpy(p, a, la);
	p[la] = '/';
	memcpy(p + la + 1, b, lb + 1);
	return p;
}

char *strjoin(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p;

	p = malloc(la + lb + 1);
	if (!p)
		return NULL;
	memcpy(p, a, la);
	memcpy(p + la, b, lb + 1);
	return p;
}

bool path_is_join(const char *path, const char *a, const char *b)
{
	size_t la = join_parts(a, &b);

	return strncmp(path, a, la) == 0 && path[la] == '/' && strcmp(path + la + 1, b) == 0;
}

bool startswith(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool endswith(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

size_t strv_length(char * const *l)
{
	size_t n = 0;

	if (l)
		while (l[n])
			n++;
	return n;
}

bool strv_contains(char * const *l, const char *s)
{
	if (l)
		for (; *l; l++)
			if (strcmp(*l, s) == 0)
				return true;
	return false;
}

int strv_extend(char ***l, const char *s)
{
	size_t n = strv_length(*l);
	char **nl;
	char *c;

	c = strdup(s);
	if (!c)
		return -ENOMEM;
	nl = realloc(*l, sizeof(char *) * (n + 2));
	if (!nl) {
		free(c);
		return -ENOMEM;
	}
	nl[n] = c;
	nl[n + 1] = NULL;
	*l = nl;
	return 0;
}

int strv_split(const char *s, char ***ret)
{
	_cleanup_strv_free_ char **l = NULL;
	const char *p = s;

	l = calloc(1, sizeof(char *));
	if (!l)
		return -ENOMEM;
	for (;;) {
		_cleanup_free_ char *word = NULL;
		size_t n;

		p += strspn(p, " \t\n");
		n = strcspn(p, " \t\n");
		if (n == 0)
			break;
		word = strndup(p, n);
		if (!word || strv_extend(&l, word) < 0)
			return -ENOMEM;
		p += n;
	}
	*ret = TAKE_PTR(l);
	return 0;
}

char **strv_copy(char * const *l)
{
	_cleanup_strv_free_ char **c = NULL;

	c = calloc(1, sizeof(char *));
	if (!c)
		return NULL;
	if (l)
		for (; *l; l++)
			if (strv_extend(&c, *l) < 0)
				return NULL;
	return TAKE_PTR(c);
}

char *cescape(const char *s)
{
	return utf8_escape(s, ESCAPE_CONTROL | ESCAPE_NON_ASCII | ESCAPE_BACKSLASH);
}

char *strv_join(char * const *l, const char *sep)
{
	size_t n = 1, ls = strlen(sep);
	char *r, *p;

	for (char * const *i = l; i && *i; i++)
		n += strlen(*i) + ls;
	r = malloc(n);
	if (!r)
		return NULL;
	p = r;
	*p = 0;
	for (char * const *i = l; i && *i; i++) {
		if (i != l)
			p = stpcpy(p, sep);
		p = stpcpy(p, *i);
	}
	return r;
}
