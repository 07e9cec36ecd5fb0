/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

/* The kernel builds "<root>/<name><suffix>" into a PATH_MAX buffer; a component is a dirent. */
#define FW_NAME_MAX 4000
#define FW_NAME_COMPONENT_MAX 255

/*
 * Checks a firmware name from a uevent or a sysfs directory before it is looked up.
 * Returns 0 when it may be looked up, else -EINVAL (or -ENAMETOOLONG) and, when
 * ret_reason is set, a static sentence saying why: empty, absolute, a "." or ".."
 * component, an empty component ("a//b"), control bytes or DEL, too long.
 */
int fw_name_check(const char *name, const char **ret_reason);

/*
 * The kernel names the request's sysfs directory after the firmware, with every '/'
 * turned into '!' (kobject names cannot hold '/'). Turns such a directory name back.
 */
int fw_name_from_sysfs(const char *dirname, char **ret);
