/* SPDX-License-Identifier: MIT */
#pragma once

#include <sys/types.h>

typedef struct Manager Manager;

/* Listens for firmware `add` events: udev's monitor (after rules) or the kernel's netlink. */
int manager_udev_start(Manager *m);
void manager_udev_stop(Manager *m);
/* Takes the events queued so far, without waiting for more. */
void manager_udev_drain(Manager *m);
/* Also passes remove events of subsystem (of a device firmware was served to). */
int manager_udev_watch_subsystem(Manager *m, const char *subsystem);

typedef enum ScanScope {
	SCAN_AUTOMATIC,	/* ours only: another program's no-uevent request is left to it */
	SCAN_ALL,	/* every pending request (fwctl rescan) */
} ScanScope;

/* Every directory under <sysfs>/class/firmware with a `loading` file is a pending request. */
int manager_udev_scan(Manager *m, ScanScope scope);
/* The same for the one directory kobj (automatic), unless it is still the one of inode old_ino. */
int manager_udev_scan_one(Manager *m, const char *kobj, ino_t old_ino);

/*
 * The text of a request's uevent file: the exact FIRMWARE= (the directory name has '/'
 * turned into '!') into *ret_name (left alone when already set, NULL on -ENOMEM) and
 * TIMEOUT=, returned (0 if unknown). Cuts text into lines.
 */
unsigned uevent_parse(char *text, char **ret_name);
