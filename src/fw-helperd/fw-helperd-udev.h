/* SPDX-License-Identifier: MIT */
#pragma once

typedef struct Manager Manager;

/* Listens for firmware `add` events: udev's monitor (after rules) or the kernel's netlink. */
int manager_udev_start(Manager *m);
void manager_udev_stop(Manager *m);

/* Every directory under <sysfs>/class/firmware with a `loading` file is a pending request. */
int manager_udev_scan(Manager *m);
