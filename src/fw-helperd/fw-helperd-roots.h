/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>

#include "macro.h"

/*
 * Tells when the firmware search roots, opened once and kept (FwRootSet), may no longer be
 * what a lookup by path would find: a root removed or moved away, or one that did not
 * exist created or moved in since. For each root, the nearest directory above it that
 * exists is watched with inotify for names created, removed or moved there (not the root
 * itself: its IN_DELETE_SELF is not sent while the set holds it open). The events are
 * read when asked, never by the event loop: an idle daemon does not wake when a package
 * is installed. Mounts are not seen here (the manager watches /proc/self/mountinfo), nor
 * a symlink on the way to a root pointed elsewhere (/lib -> usr/lib is not changed on a
 * running system).
 */
typedef struct RootsWatch RootsWatch;

int roots_watch_new(char *const *roots, RootsWatch **ret);
RootsWatch *roots_watch_free(RootsWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(RootsWatch *, roots_watch_free);

/* Whether anything watched changed since roots_watch_new(), then for good; one read(). */
bool roots_watch_changed(RootsWatch *w);
