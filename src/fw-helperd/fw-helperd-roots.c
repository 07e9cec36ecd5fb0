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

/*
 * What happens in the directory above a root: the root created, moved in, removed or moved
 * away. Not the root itself: its IN_DELETE_SELF comes only once nothing holds it open, and
 * the set of opened roots does. IN_MASK_ADD: two roots may share the directory above.
 */
#define ABOVE_MASK (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | \
		    IN_MOVE_SELF | IN_ONLYDIR | IN_MASK_ADD)

/* Not there, or not a directory: the next directory up is watched instead. */
static bool absent(int error)
{
	return error == ENOENT || error == ENOTDIR;
}

/*
 * Watches the nearest directory above root that exists. One out of reach (EACCES: hidden
 * by the sandbox) stays so, as the loader takes its roots (absent): nothing to watch.
 */
static int watch_root(int inotify_fd, const char *root)
{
	_cleanup_free_ char *above = strdup(root);
	char *slash;

	if (!above)
		return -ENOMEM;
	for (;;) {
		slash = strrchr(above, '/');
		if (!slash || (slash == above && above[1] == 0))
			return 0; /* "/" itself, or not absolute: nothing above to watch */
		slash[slash == above] = 0; /* "/x" leaves "/" */
		if (inotify_add_watch(inotify_fd, above, ABOVE_MASK) >= 0 || errno == EACCES)
			return 0;
		if (!absent(errno))
			return -errno;
	}
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
