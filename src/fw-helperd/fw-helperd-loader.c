/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fw-helperd-loader.h"
#include "fw-helperd-name.h"
#include "log.h"
#include "macro.h"
#include "util.h"

#ifndef SYS_openat2
#define SYS_openat2 437 /* the same number on every architecture */
#endif

/* Follows the kernel's own limit, so a chain the kernel resolves resolves here too. */
#define SYMLINKS_MAX 40

/*
 * Setting this in the environment makes the loader resolve names without openat2(), as on
 * kernels before 5.6, so that path is tested on every kernel.
 */
#define ENV_NO_OPENAT2 "FW_HELPERD_NO_OPENAT2"

/*
 * openat2() with RESOLVE_BENEATH fails with EAGAIN when a rename or mount raced with the
 * lookup and the kernel could not rule out an escape; it asks the caller to try again.
 */
#define OPENAT2_EAGAIN_TRIES 8

static long openat2_syscall(int dir_fd, const char *path, void *how, size_t size)
{
	return syscall(SYS_openat2, dir_fd, path, how, size);
}

static fw_openat2_fn openat2_call = openat2_syscall;
/* Cleared once openat2() is found missing (ENOSYS) or filtered (EPERM): kept per process. */
static atomic_bool openat2_usable = true;

void fw_loader_test_set_openat2(fw_openat2_fn fn)
{
	openat2_call = fn ?: openat2_syscall;
	atomic_store(&openat2_usable, true);
}

static fw_walk_step_fn walk_step_hook;

void fw_loader_test_set_walk_step(fw_walk_step_fn fn)
{
	walk_step_hook = fn;
}

static bool isempty(const char *s)
{
	return !s || !*s;
}

/* Joins prefix and dir with runs of '/' collapsed and no trailing '/', so that
 * "/lib/firmware/" and "/lib//firmware" count as the same root. */
static char *root_normalize(const char *prefix, const char *dir)
{
	_cleanup_free_ char *joined = NULL;
	char *w;

	if (asprintf(&joined, "%s/%s", prefix ?: "", dir) < 0)
		return NULL;
	w = joined;
	for (const char *r = joined; *r; r++)
		if (*r != '/' || w == joined || w[-1] != '/')
			*w++ = *r;
	if (w - joined > 1 && w[-1] == '/')
		w--;
	*w = 0;
	/* the separator added above turns "" + "foo" into "/foo": keep relative dirs relative */
	if (isempty(prefix) && dir[0] != '/')
		memmove(joined, joined + 1, strlen(joined));
	return TAKE_PTR(joined);
}

static int roots_add(char ***roots, const char *prefix, const char *dir, bool must_be_absolute)
{
	_cleanup_free_ char *root = NULL;

	if (isempty(dir))
		return 0;
	root = root_normalize(prefix, dir);
	if (!root)
		return -ENOMEM;
	if (must_be_absolute && root[0] != '/') {
		/* the kernel would resolve it against its own cwd; we refuse to guess */
		log_debug("Ignoring relative firmware search path '%s'.", root);
		return 0;
	}
	if (strv_contains(*roots, root))
		return 0;
	return strv_extend(roots, root);
}

int fw_search_path_build(const char *prefix, const char *custom_path, const char *kernel_release,
			 char *const *extra_dirs, char ***ret_roots)
{
	_cleanup_strv_free_ char **roots = NULL;
	_cleanup_free_ char *updates_release = NULL, *release = NULL;
	int r;

	roots = calloc(1, sizeof(char *));
	if (!roots)
		return -ENOMEM;
	if (!isempty(kernel_release) &&
	    (asprintf(&updates_release, "/lib/firmware/updates/%s", kernel_release) < 0 ||
	     asprintf(&release, "/lib/firmware/%s", kernel_release) < 0))
		return -ENOMEM;

	/* Mirrors fw_path[] in drivers/base/firmware_loader/main.c. */
	r = roots_add(&roots, NULL, custom_path, true);
	if (r >= 0)
		r = roots_add(&roots, prefix, updates_release, false);
	if (r >= 0)
		r = roots_add(&roots, prefix, "/lib/firmware/updates", false);
	if (r >= 0)
		r = roots_add(&roots, prefix, release, false);
	if (r >= 0)
		r = roots_add(&roots, prefix, "/lib/firmware", false);
	for (char *const *d = extra_dirs; r >= 0 && d && *d; d++)
		r = roots_add(&roots, NULL, *d, true);
	if (r < 0)
		return r;

	*ret_roots = TAKE_PTR(roots);
	return 0;
}

int fw_search_path_open_custom(const char *sysfs_root)
{
	_cleanup_free_ char *path = NULL;
	int fd;

	path = path_join(sysfs_root ?: "/sys", "module/firmware_class/parameters/path");
	if (!path)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

int fw_search_path_read_custom(int fd, char **ret)
{
	_cleanup_free_ char *value = NULL;
	int r;

	r = pread_string(fd, &value);
	if (r < 0)
		return r;
	/* an unset parameter reads as an empty line */
	*ret = isempty(value) ? NULL : TAKE_PTR(value);
	return 0;
}

FwBlob *fw_blob_free(FwBlob *b)
{
	if (!b)
		return NULL;
	safe_close(b->fd);
	fw_blob_unreserve(b);
	free(b->data);
	free(b->path);
	free(b);
	return NULL;
}

void fw_blob_unreserve(FwBlob *b)
{
	if (b->memory)
		fw_memory_release(b->memory, b->reserved);
	b->memory = NULL;
	b->reserved = 0;
}

/* 0 for a regular file; else the errno that says what it is instead. */
static int mode_regular(mode_t mode)
{
	if (S_ISDIR(mode))
		return -EISDIR;
	if (S_ISLNK(mode))
		return -ELOOP;
	return S_ISREG(mode) ? 0 : -EBADFD;
}

/* Like systemd's fd_verify_regular(): the errno says what it was instead. */
static int stat_regular(int fd, struct stat *ret_st)
{
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0)
		return -errno;
	r = mode_regular(st.st_mode);
	if (r < 0)
		return r;
	*ret_st = st;
	return 0;
}

/*
 * Turns the O_PATH handle of what a name resolved to into a readable fd, after checking it
 * is a regular file: a FIFO or a device node is never opened for reading. open_again()
 * repeats the lookup (there is no portable reopen of an O_PATH fd without /proc), so the
 * result must be the very inode checked, else the file was swapped under us. known: the
 * handle's stat when the caller has it already, else NULL. *ret_st: the file as opened.
 */
typedef int (*open_again_t)(int dir_fd, const char *path);

static int open_checked(int path_fd, const struct stat *known, int dir_fd, const char *path,
			open_again_t open_again, int *ret_fd, struct stat *ret_st)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat checked, opened;
	int r;

	if (known) {
		checked = *known;
		r = mode_regular(checked.st_mode);
	} else
		r = stat_regular(path_fd, &checked);
	if (r < 0)
		return r;
	fd = open_again(dir_fd, path);
	if (fd < 0)
		return fd;
	r = stat_regular(fd, &opened);
	if (r < 0)
		return r;
	if (opened.st_dev != checked.st_dev || opened.st_ino != checked.st_ino)
		return -ESTALE;
	/*
	 * O_NONBLOCK only guarded the open; reads of the firmware should block as usual. No
	 * other flag F_SETFL can change was opened with: 0 clears it without asking (F_GETFL).
	 */
	if (fcntl(fd, F_SETFL, 0) < 0)
		return -errno;
	*ret_fd = TAKE_FD(fd);
	*ret_st = opened;
	return 0;
}

static int openat2_beneath(int dir_fd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	for (unsigned i = 0; i < OPENAT2_EAGAIN_TRIES; i++) {
		fd = openat2_call(dir_fd, path, &how, sizeof(how));
		if (fd >= 0)
			return (int)fd;
		if (errno != EAGAIN)
			break;
	}
	return -errno;
}

static int openat2_read(int dir_fd, const char *path)
{
	return openat2_beneath(dir_fd, path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
}

static int open_beneath_openat2(int root_fd, const char *path, int *ret_fd, struct stat *ret_st)
{
	_cleanup_close_ int path_fd = -EBADF;

	path_fd = openat2_beneath(root_fd, path, O_PATH);
	if (path_fd < 0)
		return path_fd;
	return open_checked(path_fd, NULL, root_fd, path, openat2_read, ret_fd, ret_st);
}

static int openat_read_nofollow(int dir_fd, const char *name)
{
	int fd;

	fd = openat(dir_fd, name, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * Replaces *left with target + "/" + rest, the way the kernel continues after a symlink:
 * the symlink is name below dir_fd, or dir_fd itself (an O_PATH handle) when name is "".
 */
static int walk_splice_symlink(int dir_fd, const char *name, const char *rest, char **left)
{
	char target[PATH_MAX];
	char *next;
	ssize_t n;

	n = readlinkat(dir_fd, name, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = 0;
	if (asprintf(&next, "%s/%s", target, rest) < 0)
		return -ENOMEM;
	free(*left);
	*left = next;
	return 0;
}

/* One step of a walk: comp below dir_fd as an O_PATH handle, never followed. */
static int walk_open_step(int dir_fd, const char *comp, struct stat *ret_st)
{
	_cleanup_close_ int fd = openat(dir_fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 || fstat(fd, ret_st) < 0)
		return -errno;
	return TAKE_FD(fd);
}

/*
 * The symlink (as walk_splice_symlink() names it) spliced into *left, counted against
 * SYMLINKS_MAX as the kernel does.
 */
static int walk_follow(int dir_fd, const char *name, unsigned *links, char **left)
{
	if (++*links > SYMLINKS_MAX)
		return -ELOOP;
	return walk_splice_symlink(dir_fd, name, *left, left);
}

/* Pops the first component of *left into comp; returns 1, or 0 when nothing is left. */
static int walk_next(char **left, char comp[static NAME_MAX + 1], bool *ret_last)
{
	const char *p = *left + strspn(*left, "/");
	size_t n = strcspn(p, "/");

	if (n == 0)
		return 0;
	if (n > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(comp, p, n);
	comp[n] = 0;
	p += n;
	*ret_last = p[strspn(p, "/")] == 0;
	memmove(*left, p, strlen(p) + 1);
	return 1;
}

/*
 * A directory step of a walk: comp below dir_fd opened as an O_PATH handle when it is a
 * directory itself, never following it; -ENOTDIR when it is anything else (a symlink
 * included), which walk_beneath() then looks at.
 */
static int walk_open_dir(int dir_fd, const char *comp)
{
	int fd = openat(dir_fd, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/*
 * The hand walk cannot see a directory renamed out of the root while it stands in it,
 * which openat2() guards against. So once the file is open, the directory it was found in
 * must still lie depth levels below the root: as many ".." from it lead to the root.
 */
static int verify_beneath(int dir_fd, unsigned depth, const struct stat *root)
{
	_cleanup_close_ int owned = -EBADF;
	struct stat st;

	for (unsigned i = 0; i < depth; i++) {
		int up = openat(dir_fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);

		if (up < 0)
			return -errno;
		safe_close(owned);
		dir_fd = owned = up;
	}
	if (fstat(dir_fd, &st) < 0)
		return -errno;
	return st.st_dev == root->st_dev && st.st_ino == root->st_ino ? 0 : -EXDEV;
}

/*
 * The walk's last step, st what it is: opened, then checked to be beneath root (NULL: the
 * walk never left the root, where no rename can have taken it).
 */
static int open_last(int dir_fd, const char *name, const struct stat *st, const struct stat *root,
		     unsigned depth, int *ret_fd, struct stat *ret_st)
{
	_cleanup_close_ int fd = -EBADF;
	int r;

	r = open_checked(-EBADF, st, dir_fd, name, openat_read_nofollow, &fd, ret_st);
	if (r >= 0 && root)
		r = verify_beneath(dir_fd, depth, root);
	if (r < 0)
		return r;
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/*
 * The openat2(RESOLVE_BENEATH) walk done by hand, one step at a time: ".." may not climb
 * above the root, absolute symlinks are refused, relative ones are spliced into the rest
 * of the path, as the kernel does. A directory on the way is opened at once (O_DIRECTORY
 * never follows a symlink with O_NOFOLLOW); anything else is looked at with fstatat()
 * first, so the last step opens for reading only what is a regular file there, relative
 * to the directory already resolved and without following anything.
 */
static int walk_beneath(int root_fd, const struct stat *root_st, const char *path, int *ret_fd,
			struct stat *ret_st)
{
	_cleanup_free_ char *left = NULL;
	_cleanup_close_ int owned = -EBADF;	/* dir_fd once the walk left the root */
	int dir_fd = root_fd;
	char comp[NAME_MAX + 1];
	unsigned depth = 0, links = 0;
	bool last;
	int r;

	left = strdup(path);
	if (!left)
		return -ENOMEM;

	while ((r = walk_next(&left, comp, &last)) > 0) {
		struct stat st;
		int fd;

		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0 && depth == 0)
			return -EXDEV;
		fd = last ? -ENOTDIR : walk_open_dir(dir_fd, comp);
		if (fd >= 0) {
			depth = strcmp(comp, "..") == 0 ? depth - 1 : depth + 1;
			safe_close(owned);
			dir_fd = owned = fd;
			if (walk_step_hook)
				walk_step_hook(comp);
			continue;
		}
		if (fd != -ENOTDIR)
			return fd;
		if (fstatat(dir_fd, comp, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		if (S_ISLNK(st.st_mode)) {
			r = walk_follow(dir_fd, comp, &links, &left);
			if (r < 0)
				return r;
			/* RESOLVE_BENEATH refuses absolute symlinks outright, wherever they point */
			if (left[0] == '/')
				return -EXDEV;
		} else if (!last)
			return -ENOTDIR; /* a directory only if it was just put there: not followed */
		else
			return open_last(dir_fd, comp, &st, dir_fd == root_fd ? NULL : root_st, depth,
					 ret_fd, ret_st);
	}
	if (r < 0)
		return r;
	return -EISDIR; /* the name resolved to a directory (or to the root itself) */
}

struct FwRootSet {
	atomic_uint n_ref;
	char **paths;
	size_t n;
	bool settled;	/* every root opened or absent: no error that may pass */
	struct stat *st;	/* per root opened: what its handle is, for verify_beneath() */
	int fds[];	/* per root: its handle, or -ENOENT (absent), or another -errno */
};

/*
 * Whether path is surely not below root_fd, by one plain lookup. That lookup follows what
 * the walk refuses, but a name it does not find (ENOENT, ENOTDIR) the walk cannot find
 * either, beneath the root or through the roots; anything else is left to the walk.
 */
static bool surely_absent(int root_fd, const char *path)
{
	struct stat st;

	return fstatat(root_fd, path, &st, AT_SYMLINK_NOFOLLOW) < 0 &&
	       (errno == ENOENT || errno == ENOTDIR);
}

/*
 * openat2() is missing before Linux 5.6 (ENOSYS), and a seccomp filter that does not know
 * it answers EPERM (systemd's SystemCallErrorNumber=EPERM; RestrictSUIDSGID=, which the
 * shipped unit sets, refuses it outright, as a filter cannot see the flags of an open_how):
 * either way, for the life of the process, the same checks are done by hand. probe: the
 * candidate is less likely there than not (fw_blob_find_in()), so by hand it is looked up
 * plainly before it is walked.
 */
static int open_beneath(const FwRootSet *set, size_t j, const char *path, bool probe,
			int *ret_fd, struct stat *ret_st)
{
	int root_fd = set->fds[j], r;

	if (atomic_load(&openat2_usable) && !secure_getenv(ENV_NO_OPENAT2)) {
		r = open_beneath_openat2(root_fd, path, ret_fd, ret_st);
		if (r != -ENOSYS && r != -EPERM)
			return r;
		atomic_store(&openat2_usable, false);
		log_debug_errno(r, "openat2() is not usable (%m), resolving firmware paths by hand.");
	}
	if (probe && surely_absent(root_fd, path))
		return -ENOENT;
	return walk_beneath(root_fd, &set->st[j], path, ret_fd, ret_st);
}

/* Appends "/" + comp to the canonical path, or drops its last component for "..". */
static int canonical_step(char canonical[static PATH_MAX], const char *comp)
{
	size_t len = strlen(canonical), n = strlen(comp);
	char *slash;

	if (strcmp(comp, "..") == 0) {
		slash = strrchr(canonical, '/');
		if (slash)
			*slash = 0; /* ".." of "/" is "/" */
		return 0;
	}
	if (len + 1 + n >= PATH_MAX)
		return -ENAMETOOLONG;
	canonical[len] = '/';
	memcpy(canonical + len + 1, comp, n + 1);
	return 0;
}

static int walk_from_slash(int *dir_fd, char canonical[static PATH_MAX])
{
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	safe_close(*dir_fd);
	*dir_fd = fd;
	canonical[0] = 0;
	return 0;
}

/*
 * Resolves the absolute path as the kernel's loader does, following every symlink wherever
 * it leads, but one O_PATH|O_NOFOLLOW step at a time, so that it ends with a handle of what
 * the path reached and that object's canonical path ("" stands for "/"). Where it lies is
 * not decided here: the handle is matched against a lookup beneath a root afterwards.
 */
static int walk_canonical(const char *path, char canonical[static PATH_MAX], int *ret_fd)
{
	_cleanup_free_ char *left = NULL;
	_cleanup_close_ int dir_fd = -EBADF;
	char comp[NAME_MAX + 1];
	unsigned links = 0;
	bool last;
	int r;

	left = strdup(path);
	if (!left)
		return -ENOMEM;
	r = walk_from_slash(&dir_fd, canonical);
	if (r < 0)
		return r;

	while ((r = walk_next(&left, comp, &last)) > 0) {
		_cleanup_close_ int fd = -EBADF;
		struct stat st;

		if (strcmp(comp, ".") == 0)
			continue;
		fd = walk_open_step(dir_fd, comp, &st);
		if (fd < 0)
			return fd;
		if (S_ISLNK(st.st_mode)) {
			r = walk_follow(fd, "", &links, &left);
			if (r >= 0 && left[0] == '/')
				r = walk_from_slash(&dir_fd, canonical);
			if (r < 0)
				return r;
			continue;
		}
		r = canonical_step(canonical, comp);
		if (r < 0)
			return r;
		if (!S_ISDIR(st.st_mode)) {
			if (!last)
				return -ENOTDIR;
			*ret_fd = TAKE_FD(fd);
			return 0;
		}
		safe_close(dir_fd);
		dir_fd = TAKE_FD(fd);
	}
	if (r < 0)
		return r;
	*ret_fd = TAKE_FD(dir_fd); /* the path ended on a directory */
	return 0;
}

/*
 * A compressed file stays packed (its fd open, no data): fw_blob_unpack() unpacks it. st:
 * fd's stat, as taken when it was opened.
 */
static int blob_new(const char *path, FwCompression compression, int fd, const struct stat *st,
		    uint64_t max_size, FwBlob **ret)
{
	_cleanup_(fw_blob_freep) FwBlob *b = NULL;

	b = calloc(1, sizeof(FwBlob));
	if (!b)
		return -ENOMEM;
	b->fd = -EBADF;
	b->compression = compression;
	b->path = strdup(path);
	if (!b->path)
		return -ENOMEM;
	b->st = *st;
	if (compression == FW_COMPRESSION_NONE) {
		if ((uint64_t)b->st.st_size > max_size)
			return -EFBIG;
		b->size = (size_t)b->st.st_size;
	}
	b->fd = fd;
	*ret = TAKE_PTR(b);
	return 0;
}

bool fw_blob_packed(const FwBlob *b)
{
	/* a held image is in its memfd, whatever the file it came from was */
	return b->compression != FW_COMPRESSION_NONE && !b->data && !b->held;
}

int fw_blob_unpack(FwBlob *b, const FwLimits *limits)
{
	int r;

	if (!fw_blob_packed(b))
		return 0;
	r = fw_unpack(b->fd, b->compression, limits, &b->data, &b->size, &b->reserved);
	if (r < 0)
		return r;
	b->memory = limits->memory;
	b->fd = safe_close(b->fd);
	return 0;
}

/* Errors that mean "nothing of that name in this root", so the search goes on. */
static bool error_is_absent(int r)
{
	/* ENAMETOOLONG: the suffix pushed a 255-byte component over NAME_MAX */
	return r == -ENOENT || r == -ENOTDIR || r == -ENAMETOOLONG;
}

/*
 * A root's handle, or -ENOENT for one that is absent or out of reach (e.g. hidden by the
 * sandbox): as good as absent. The root itself is configuration: symlinks in it
 * (/lib -> usr/lib) are fine.
 */
static int open_root(const char *root)
{
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC), r = -errno;

	if (fd >= 0)
		return fd;
	if (r == -EACCES)
		log_debug("Firmware root %s is not reachable, skipping it.", root);
	return error_is_absent(r) || r == -EACCES ? -ENOENT : r;
}

int fw_root_set_open(char *const *roots, FwRootSet **ret)
{
	size_t n = strv_length(roots);
	FwRootSet *s;

	s = calloc(1, sizeof(FwRootSet) + sizeof(int) * n);
	if (!s)
		return -ENOMEM;
	s->paths = strv_copy(roots);
	s->st = calloc(n ?: 1, sizeof(struct stat));
	if (!s->paths || !s->st) {
		strv_free(s->paths);
		free(s->st);
		free(s);
		return -ENOMEM;
	}
	atomic_init(&s->n_ref, 1);
	s->n = n;
	s->settled = true;
	for (size_t j = 0; j < n; j++) {
		s->fds[j] = open_root(roots[j]);
		if (s->fds[j] >= 0 && fstat(s->fds[j], &s->st[j]) < 0) {
			int e = -errno;

			safe_close(s->fds[j]);
			s->fds[j] = e;
		}
		if (s->fds[j] < 0 && s->fds[j] != -ENOENT)
			s->settled = false;
	}
	*ret = s;
	return 0;
}

char *const *fw_root_set_paths(const FwRootSet *s)
{
	return s->paths;
}

FwRootSet *fw_root_set_ref(FwRootSet *s)
{
	if (s)
		atomic_fetch_add(&s->n_ref, 1);
	return s;
}

FwRootSet *fw_root_set_unref(FwRootSet *s)
{
	if (!s || atomic_fetch_sub(&s->n_ref, 1) > 1)
		return NULL;
	for (size_t j = 0; j < s->n; j++)
		safe_close(s->fds[j]);
	free(s->st);
	strv_free(s->paths);
	free(s);
	return NULL;
}

bool fw_root_set_settled(const FwRootSet *s)
{
	return s->settled;
}

/* The roots of one lookup: their handles, from a set opened once for many lookups. */
typedef struct Search {
	const FwRootSet *set;
	char **canonical;	/* where each root really is, once a symlink leaving its root asks */
} Search;

static void search_done(Search *s)
{
	for (size_t j = 0; s->canonical && j < s->set->n; j++)
		free(s->canonical[j]);
	free(s->canonical);
}

static void search_init(Search *s, const FwRootSet *set)
{
	*s = (Search){ .set = set };
}

/* Canonical paths of the roots, NULL for one that is absent or moved since it was opened. */
static int search_canonicalize(Search *s)
{
	const FwRootSet *set = s->set;
	char canonical[PATH_MAX];

	if (s->canonical)
		return 0;
	s->canonical = calloc(set->n ?: 1, sizeof(char *));
	if (!s->canonical)
		return -ENOMEM;
	for (size_t j = 0; j < set->n; j++) {
		_cleanup_close_ int fd = -EBADF;
		struct stat a;

		if (set->fds[j] < 0 || walk_canonical(set->paths[j], canonical, &fd) < 0)
			continue;
		if (fstat(fd, &a) < 0 || a.st_dev != set->st[j].st_dev || a.st_ino != set->st[j].st_ino)
			continue;
		s->canonical[j] = strdup(canonical);
		if (!s->canonical[j])
			return -ENOMEM;
	}
	return 0;
}

/* The rest of path below root (canonical paths, "" for "/"), or NULL when outside. */
static const char *path_below(const char *path, const char *root)
{
	size_t n = strlen(root);

	if (strncmp(path, root, n) != 0 || path[n] != '/' || path[n + 1] == 0)
		return NULL;
	return path + n + 1;
}

/*
 * The kernel follows a symlink wherever it leads; we do when the file it finally reaches
 * lies in one of the roots. The chain is followed from "/" step by step (walk_canonical),
 * then that file is opened once more beneath the root its path lies in, with the same
 * RESOLVE_BENEATH rules as any name: only a handle that is the very file the chain reached
 * counts. So nothing outside the roots is opened for reading, whatever changes meanwhile.
 */
static int open_through_roots(Search *s, const char *path, int *ret_fd, struct stat *ret_st)
{
	_cleanup_close_ int reached = -EBADF, fd = -EBADF;
	char canonical[PATH_MAX];
	struct stat want, got;
	const char *rest = NULL;
	size_t j;
	int r;

	r = walk_canonical(path, canonical, &reached);
	if (r < 0)
		return r;
	r = search_canonicalize(s);
	if (r < 0)
		return r;
	for (j = 0; j < s->set->n && !rest; j++)
		rest = s->canonical[j] ? path_below(canonical, s->canonical[j]) : NULL;
	if (!rest)
		return -EXDEV;
	r = open_beneath(s->set, j - 1, rest, false, &fd, &got);
	if (r < 0)
		return r;
	if (fstat(reached, &want) < 0)
		return -errno;
	if (want.st_dev != got.st_dev || want.st_ino != got.st_ino)
		return -ESTALE;
	*ret_fd = TAKE_FD(fd);
	*ret_st = got;
	return 0;
}

/* Looks for root j's path (relative to the root: relative); probe as for open_beneath(). */
static int try_root(Search *s, size_t j, const char *relative, const char *path,
		    FwCompression compression, uint64_t max_size, bool probe, FwBlob **ret)
{
	_cleanup_close_ int fd = -EBADF;
	struct stat st;
	int r;

	if (s->set->fds[j] < 0)
		return s->set->fds[j];
	r = open_beneath(s->set, j, relative, probe, &fd, &st);
	if (r == -EXDEV)
		r = open_through_roots(s, path, &fd, &st);
	if (r < 0)
		return error_is_absent(r) ? -ENOENT : r;
	r = blob_new(path, compression, fd, &st, max_size, ret);
	if (r < 0)
		return r;
	TAKE_FD(fd); /* owned by the blob now */
	return 0;
}

/* A symlink we will not follow: out of every root, or in circles. */
static bool error_is_refused_link(int r)
{
	return r == -EXDEV || r == -ELOOP;
}

/* As _request_firmware() does it, 5.19 and later: plain, then zstd, then xz. */
static const struct {
	const char *suffix;
	FwCompression compression;
} search_order[] = {
	{ "", FW_COMPRESSION_NONE },
	{ ".zst", FW_COMPRESSION_ZSTD },
	{ ".xz", FW_COMPRESSION_XZ },
};

int fw_search_candidates(char *const *roots, const char *name, char ***ret)
{
	_cleanup_strv_free_ char **list = NULL;

	for (size_t i = 0; i < ELEMENTSOF(search_order); i++) {
		_cleanup_free_ char *relative = strjoin(name, search_order[i].suffix);

		if (!relative)
			return -ENOMEM;
		for (size_t j = 0; roots && roots[j]; j++) {
			_cleanup_free_ char *path = path_join(roots[j], relative);

			if (!path || strv_extend(&list, path) < 0)
				return -ENOMEM;
		}
	}
	*ret = TAKE_PTR(list);
	return 0;
}

/*
 * One difference from the kernel, on purpose: the kernel warns about a candidate it cannot
 * read and goes on to the next root. We stop at the first candidate that exists, good or
 * bad, and return why it failed. A broken file in updates/ (a corrupt .xz, a directory) is
 * an override the administrator meant: quietly serving the older image from /lib/firmware
 * instead would hide that. A symlink we refuse is different: the kernel would have followed
 * it and found something, or failed and gone on, so the search goes on past it; only when
 * nothing else is found is the refusal the answer.
 *
 * Paths are put together only for roots that exist: a name found costs no string it does
 * not keep, and a name not found none before it is answered (fw_search_candidates()).
 */
int fw_blob_find_in(const FwRootSet *set, const char *name, uint64_t max_size, FwBlob **ret,
		    char **ret_failed)
{
	_cleanup_free_ char *failed = NULL;
	char *const *roots = set->paths;
	int r, refused = 0;
	bool looked = false;
	Search s;

	r = fw_name_check(name, NULL);
	if (r < 0)
		return r;
	search_init(&s, set);
	r = -ENOENT;
	for (size_t i = 0; i < ELEMENTSOF(search_order) && r == -ENOENT; i++) {
		_cleanup_free_ char *relative = strjoin(name, search_order[i].suffix);

		if (!relative) {
			r = -ENOMEM;
			break;
		}
		for (size_t j = 0; j < set->n && r == -ENOENT; j++) {
			_cleanup_free_ char *path = NULL;

			if (set->fds[j] == -ENOENT)
				continue; /* an absent root has nothing */
			path = path_join(roots[j], relative);
			if (!path) {
				r = -ENOMEM;
				break;
			}
			/* the first root that exists usually has it, plain; most other candidates
			 * are not there */
			r = try_root(&s, j, relative, path, search_order[i].compression, max_size,
				     looked, ret);
			looked = true;
			if (error_is_refused_link(r)) {
				log_debug_errno(r, "Not following the symlink %s: %m.", path);
				if (!refused) {
					refused = r;
					failed = TAKE_PTR(path);
				}
				r = -ENOENT;
			} else if (r < 0 && r != -ENOENT) {
				free(failed);
				failed = TAKE_PTR(path);
			}
		}
	}
	search_done(&s);
	if (r == -ENOENT && refused)
		r = refused;
	if (r < 0 && r != -ENOENT && ret_failed)
		*ret_failed = TAKE_PTR(failed);
	return r;
}

int fw_blob_find(char *const *roots, const char *name, uint64_t max_size, FwBlob **ret,
		 char **ret_failed)
{
	FwRootSet *set = NULL;
	int r;

	r = fw_root_set_open(roots, &set);
	if (r < 0)
		return r;
	r = fw_blob_find_in(set, name, max_size, ret, ret_failed);
	fw_root_set_unref(set);
	return r;
}

int fw_blob_open(char *const *roots, const char *name, const FwLimits *limits, FwBlob **ret,
		 char **ret_failed)
{
	_cleanup_(fw_blob_freep) FwBlob *b = NULL;
	int r;

	r = fw_blob_find(roots, name, limits->max_size, &b, ret_failed);
	if (r < 0)
		return r;
	r = fw_blob_unpack(b, limits);
	if (r < 0) {
		if (ret_failed)
			*ret_failed = TAKE_PTR(b->path);
		return r;
	}
	*ret = TAKE_PTR(b);
	return 0;
}
