/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

#include "macro.h"

/*
 * Tells when the firmware search roots, opened once and kept (FwRootSet), may no longer be
 * what a lookup by path would find: a root that exists removed or moved away, or one that
 * does not exist created (or moved in) since. Each existing root is watched with inotify
 * for itself; for each absent one, the nearest directory above it that exists, for what is
 * created in it. The events are read when asked, never by the event loop: an idle daemon
 * does not wake when a firmware package is installed. Mounts are not seen here (the
 * manager watches /proc/self/mountinfo), nor a symlink on the way to a root pointed
 * elsewhere (a root is a directory, /lib -> usr/lib is not changed on a running system).
 */
typedef struct RootsWatch RootsWatch;

int roots_watch_new(char *const *roots, RootsWatch **ret);
RootsWatch *roots_watch_free(RootsWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(RootsWatch *, roots_watch_free);

/* Whether anything watched changed since roots_watch_new(), then for good; one read(). */
bool roots_watch_changed(RootsWatch *w);
