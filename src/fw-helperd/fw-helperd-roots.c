/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "fw-helperd-roots.h"
#include "util.h"

struct RootsWatch {
	int inotify_fd;
	bool changed;
};

/* IN_MASK_ADD: a root may be the directory above another, absent, one: one watch, both masks. */
#define ROOT_MASK (IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_MASK_ADD)
#define ABOVE_MASK (ROOT_MASK | IN_CREATE | IN_MOVED_TO)

/* Not there, or not a directory: the nearest directory above it is watched instead. */
static bool absent(int error)
{
	return error == ENOENT || error == ENOTDIR;
}

/*
 * Watches root, else the nearest directory above it that exists. One out of reach (EACCES:
 * hidden by the sandbox) stays so, as the loader takes it (absent): nothing to watch.
 */
static int watch_root(int inotify_fd, const char *root)
{
	_cleanup_free_ char *above = NULL;
	char *slash;

	if (inotify_add_watch(inotify_fd, root, ROOT_MASK) >= 0 || errno == EACCES)
		return 0;
	if (!absent(errno))
		return -errno;
	above = strdup(root);
	if (!above)
		return -ENOMEM;
	while ((slash = strrchr(above, '/'))) {
		slash[slash == above] = 0; /* "/x" leaves "/" */
		if (inotify_add_watch(inotify_fd, above, ABOVE_MASK) >= 0 || errno == EACCES)
			return 0;
		if (!absent(errno) || slash == above)
			return -errno;
	}
	return -EINVAL; /* not absolute */
}

int roots_watch_new(char *const *roots, RootsWatch **ret)
{
	_cleanup_(roots_watch_freep) RootsWatch *w = NULL;
	int r;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->inotify_fd < 0)
		return -errno;
	for (size_t j = 0; roots && roots[j]; j++) {
		r = watch_root(w->inotify_fd, roots[j]);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(w);
	return 0;
}

RootsWatch *roots_watch_free(RootsWatch *w)
{
	if (!w)
		return NULL;
	safe_close(w->inotify_fd);
	free(w);
	return NULL;
}

bool roots_watch_changed(RootsWatch *w)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	if (!w)
		return true;
	if (w->changed)
		return true;
	/* any event, IN_Q_OVERFLOW and IN_IGNORED included, says the roots may have changed */
	if (read(w->inotify_fd, buf, sizeof(buf)) > 0 || (errno != EAGAIN && errno != EINTR))
		w->changed = true;
	return w->changed;
}
