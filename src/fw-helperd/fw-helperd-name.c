/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fw-helperd-name.h"
#include "macro.h"

/*
 * What a name may hold. The kernel itself checks nothing but "not empty": the name comes
 * from a driver and ends up in "<root>/<name>" for filp_open(). We are the ones who turn
 * it into a path, so we refuse whatever could leave the root or confuse a reader of the
 * journal: "." and ".." components, absolute names, empty components (the kernel would
 * collapse them, we would rather not guess) and control bytes (a newline splits the uevent
 * text, and the journal would show a forged line). Everything else is accepted, including
 * space, '+', ',', '@', '~' and bytes >= 0x80: the kernel passes them on, some vendor
 * trees use them, and nothing in a path component gives them a meaning. '!' is accepted
 * too, but such a name only survives the sysfs directory name when the uevent carries it.
 */

static int refuse(int error, const char *reason, const char **ret_reason)
{
	if (ret_reason)
		*ret_reason = reason;
	return error;
}

static int check_component(const char *c, size_t len, const char **ret_reason)
{
	if (len == 0)
		return refuse(-EINVAL, "Firmware name has an empty path component.", ret_reason);
	if (len > FW_NAME_COMPONENT_MAX)
		return refuse(-ENAMETOOLONG, "Firmware name has a path component longer than 255 bytes.",
			      ret_reason);
	if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
		return refuse(-EINVAL, "Firmware name has a \".\" or \"..\" path component.", ret_reason);
	for (size_t i = 0; i < len; i++) {
		unsigned char b = (unsigned char)c[i];

		if (b < 0x20 || b == 0x7f)
			return refuse(-EINVAL, "Firmware name contains control characters.", ret_reason);
	}
	return 0;
}

int fw_name_check(const char *name, const char **ret_reason)
{
	size_t len;

	if (!name || !*name)
		return refuse(-EINVAL, "Firmware name is empty.", ret_reason);
	len = strnlen(name, FW_NAME_MAX + 1);
	if (len > FW_NAME_MAX)
		return refuse(-ENAMETOOLONG, "Firmware name is too long.", ret_reason);
	if (name[0] == '/')
		return refuse(-EINVAL, "Firmware name is an absolute path.", ret_reason);

	for (const char *p = name;;) {
		size_t n = strcspn(p, "/");
		int r;

		r = check_component(p, n, ret_reason);
		if (r < 0)
			return r;
		if (!p[n])
			return 0;
		p += n + 1; /* a trailing '/' leaves an empty last component, refused above */
	}
}

int fw_name_from_sysfs(const char *dirname, char **ret)
{
	char *name;

	if (!dirname)
		return -EINVAL;
	name = strdup(dirname);
	if (!name)
		return -ENOMEM;
	for (char *p = name; *p; p++)
		if (*p == '!')
			*p = '/';
	*ret = name;
	return 0;
}
