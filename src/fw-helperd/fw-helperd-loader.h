/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fw-helperd-unpack.h"
#include "macro.h"

/*
 * Builds the search roots in the kernel's own order (drivers/base/firmware_loader/main.c fw_path[]):
 * custom_path (the firmware_class.path module parameter, skipped when NULL or empty),
 * /lib/firmware/updates/<release>, /lib/firmware/updates, /lib/firmware/<release>,
 * /lib/firmware, then extra_dirs in order. prefix (NULL or "" for none) is prepended to
 * every built-in root, for tests against a fixture tree. Duplicates are dropped.
 */
int fw_search_path_build(const char *prefix, const char *custom_path, const char *kernel_release,
			 char *const *extra_dirs, char ***ret_roots);

/*
 * Opens /sys/module/firmware_class/parameters/path (sysfs_root may be NULL for "/sys"), to
 * be read for every request with fw_search_path_read_custom(): one pread() each time.
 */
int fw_search_path_open_custom(const char *sysfs_root);
/* What the parameter holds now; NULL when it is unset. */
int fw_search_path_read_custom(int fd, char **ret);

typedef struct FwBlob {
	char *path;		/* the file found, e.g. "/lib/firmware/foo.bin.xz" */
	FwCompression compression;
	int fd;			/* the opened file: plain, or compressed and still packed; else -EBADF */
	struct stat st;		/* of the file as opened */
	void *data;		/* decompressed contents once unpacked, else NULL */
	/* fd is a sealed memfd holding the image, no longer the file (fw_blob_read_into_memory()):
	 * it cannot change, and what st and path say is of the file it was read from */
	bool held;
	size_t size;		/* bytes to hand to the kernel (0 while packed) */
	FwMemory *memory;	/* the budget data was reserved from, or NULL */
	size_t reserved;	/* bytes of it data holds */
} FwBlob;

/* Gives data's share of the budget back (freeing the blob does too). */
void fw_blob_unreserve(FwBlob *b);
FwBlob *fw_blob_free(FwBlob *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(FwBlob *, fw_blob_free);

/*
 * Finds name beneath the roots, in the kernel's order: every root for the plain name,
 * then every root for name.zst, then name.xz. Symlinks are followed as the kernel does,
 * but only to a file that lies inside one of the roots: the file is opened beneath a root
 * (openat2 RESOLVE_BENEATH, or an equivalent walk where the kernel lacks it), and a link
 * that leaves its root is followed from "/" and then opened again beneath the root it
 * leads into. A plain file larger than max_size is refused with -EFBIG; a compressed one
 * is left packed (fw_blob_packed()), its file open, for fw_blob_unpack().
 *
 * The first candidate that exists decides, good or bad; but a symlink that is refused
 * (leading out of every root, or in a loop) only answers when no later candidate exists.
 *
 * On an error other than -ENOENT, *ret_failed (may be NULL) is the candidate the error is
 * about; after -ENOENT, fw_search_candidates() lists where the name was looked for.
 * Returns 0 and a blob, -ENOENT when no root has it, or another negative errno
 * (-EXDEV: a symlink leads out of every root; -ELOOP: symlinks in a loop; -EISDIR...).
 * Never waits for anything but the file systems: the event loop may call it.
 */
int fw_blob_find(char *const *roots, const char *name, uint64_t max_size, FwBlob **ret,
		 char **ret_failed);

/*
 * Every full path a search for name looks at, in its order: plain in every root, then .zst,
 * then .xz, a root that does not exist included. For the journal, once a name that was not
 * found has been answered: the search itself makes none of these strings.
 */
int fw_search_candidates(char *const *roots, const char *name, char ***ret);

/*
 * Search roots opened once (O_PATH), for many lookups: fw_blob_find() opens and closes
 * every root for each name, where most of them do not exist. Shared by reference between
 * the loop and the workers; a set never changes once opened, so one that may have gone
 * stale (a root created, removed or mounted over since) is replaced, not updated.
 */
typedef struct FwRootSet FwRootSet;
int fw_root_set_open(char *const *roots, FwRootSet **ret);
FwRootSet *fw_root_set_ref(FwRootSet *s);
FwRootSet *fw_root_set_unref(FwRootSet *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(FwRootSet *, fw_root_set_unref);
/* False when a root failed to open with an error that may pass (not merely absent). */
bool fw_root_set_settled(const FwRootSet *s);
/* The roots it opened, in order: as long as the set lives, on any thread. */
char *const *fw_root_set_paths(const FwRootSet *s);
/* fw_blob_find() through the handles of a set. */
int fw_blob_find_in(const FwRootSet *set, const char *name, uint64_t max_size, FwBlob **ret,
		    char **ret_failed);

/* Whether b is a compressed file not unpacked yet (size unknown, nothing in memory or held). */
bool fw_blob_packed(const FwBlob *b);

/*
 * Unpacks a packed blob into memory under limits (fw_unpack()), closing its file; a no-op
 * for any other. Blobs larger than limits->max_size (after unpacking) are refused with
 * -EFBIG, images that need more than the unpack budget with -ENOBUFS, and -ETIMEDOUT says
 * the budget stayed busy until limits->deadline: this may block, so not on the event loop.
 * -EBADMSG: corrupt compressed data.
 */
int fw_blob_unpack(FwBlob *b, const FwLimits *limits);

/* fw_blob_find(), then fw_blob_unpack(): a blob ready to serve. On an unpacking error,
 * *ret_failed is the compressed file. */
int fw_blob_open(char *const *roots, const char *name, const FwLimits *limits, FwBlob **ret,
		 char **ret_failed);

/*
 * Tests only: fn stands in for the openat2() system call (how is a struct open_how; it
 * returns a descriptor or -1 with errno set), NULL puts the real one back. Either way the
 * loader tries openat2() again, as a fresh process would.
 */
typedef long (*fw_openat2_fn)(int dir_fd, const char *path, void *how, size_t size);
void fw_loader_test_set_openat2(fw_openat2_fn fn);

/* Tests only: fn is called after each directory the hand walk steps into (NULL: none), so a
 * test can rename it away while the walk stands in it. */
typedef void (*fw_walk_step_fn)(const char *dir);
void fw_loader_test_set_walk_step(fw_walk_step_fn fn);
