/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fw-helperd-gate.h"
#include "util.h"

/* /proc/self/mountinfo of a machine with very many mounts still fits. */
#define MOUNTINFO_MAX (64U << 20)

int gate_new(const char *path, const char *mountinfo, Gate **ret)
{
	_cleanup_(gate_freep) Gate *g = NULL;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->path = strdup(path ?: "/");
	g->mountinfo = strdup(mountinfo ?: "/proc/self/mountinfo");
	if (!g->path || !g->mountinfo)
		return -ENOMEM;
	*ret = TAKE_PTR(g);
	return 0;
}

Gate *gate_free(Gate *g)
{
	if (!g)
		return NULL;
	free(g->path);
	free(g->mountinfo);
	free(g);
	return NULL;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo; in place. */
static void unoctal(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else
			*w++ = *s;
	}
	*w = 0;
}

/* Length of mount point mp when it covers path ("/" covers all, "/a" covers "/a/b" not "/ab"). */
static size_t covers(const char *mp, const char *path)
{
	size_t n = strlen(mp);

	if (strcmp(mp, "/") == 0)
		return 1;
	if (strncmp(mp, path, n) != 0 || (path[n] != 0 && path[n] != '/'))
		return 0;
	return n;
}

/* "rw" or "ro" among comma-separated options: 1, 0, or -EBADMSG when neither. */
static int options_writable(const char *options)
{
	_cleanup_free_ char *copy = strdup(options);
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *o = strtok_r(copy, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		if (strcmp(o, "rw") == 0)
			return 1;
		if (strcmp(o, "ro") == 0)
			return 0;
	}
	return -EBADMSG;
}

/* One line: "id parent maj:min root mountpoint opts [optional...] - fstype source superopts". */
static int parse_line(char *line, char **ret_mountpoint, char **ret_super)
{
	char *save = NULL, *field, *mountpoint = NULL;
	unsigned i = 0;

	for (field = strtok_r(line, " ", &save); field; field = strtok_r(NULL, " ", &save), i++) {
		if (i == 4)
			mountpoint = field;
		if (i >= 6 && strcmp(field, "-") == 0)
			break;
	}
	if (!field || !mountpoint)
		return -EBADMSG;
	/* fstype, source, super options */
	if (!strtok_r(NULL, " ", &save) || !strtok_r(NULL, " ", &save))
		return -EBADMSG;
	field = strtok_r(NULL, " ", &save);
	if (!field)
		return -EBADMSG;
	unoctal(mountpoint);
	*ret_mountpoint = mountpoint;
	*ret_super = field;
	return 0;
}

int gate_parse_writable(const char *mountinfo_text, const char *path)
{
	_cleanup_free_ char *text = strdup(mountinfo_text);
	char *save = NULL, *mountpoint, *super;
	size_t best = 0;
	int writable = -ENOENT, r;

	if (!text)
		return -ENOMEM;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t n;

		r = parse_line(line, &mountpoint, &super);
		if (r < 0)
			return r;
		n = covers(mountpoint, path);
		if (n == 0 || n < best)
			continue;
		r = options_writable(super);
		if (r < 0)
			return r;
		best = n;
		writable = r;
	}
	return writable;
}

bool gate_root_writable(Gate *g)
{
	_cleanup_free_ char *text = NULL;

	if (read_full_file(g->mountinfo, MOUNTINFO_MAX, &text) < 0)
		return true;
	return gate_parse_writable(text, g->path) != 0;
}

int gate_roots_readable(char *const *roots)
{
	for (char *const *root = roots; root && *root; root++) {
		DIR *d = opendir(*root);

		if (!d) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			return 0;
		}
		errno = 0;
		if (!readdir(d) && errno != 0) {
			closedir(d);
			return 0;
		}
		closedir(d);
	}
	return 1;
}

bool gate_name_present(char *const *roots, const char *name)
{
	static const char *const suffixes[] = { "", ".zst", ".xz" };

	for (char *const *root = roots; root && *root; root++)
		for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
			_cleanup_free_ char *path = NULL;

			if (asprintf(&path, "%s/%s%s", *root, name, suffixes[i]) < 0)
				return false;
			if (access(path, R_OK) == 0)
				return true;
		}
	return false;
}

void gate_arm(Gate *g)
{
	g->root_ro_before = !gate_root_writable(g);
}

bool gate_is_open(Gate *g, char *const *roots)
{
	if (!g->root_ro_before && !gate_root_writable(g))
		return false;
	return gate_roots_readable(roots) > 0;
}
