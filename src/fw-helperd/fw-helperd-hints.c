/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fw-helperd-gate.h"
#include "fw-helperd-hints.h"
#include "fw-helperd-name.h"
#include "log.h"
#include "macro.h"
#include "util.h"

#if HAVE_KMOD
#include <libkmod.h>
#endif

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

static bool is_dot(const char *name)
{
	return name[0] == '.';
}

/* A driver directory with a device symlink in it has a device bound. */
static bool driver_has_device(int driver_fd)
{
	_cleanup_(closedirp) DIR *d = NULL;
	int fd = dup(driver_fd);

	if (fd < 0)
		return false;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return false;
	}
	for (struct dirent *de; (de = readdir(d));) {
		if (de->d_type != DT_LNK || is_dot(de->d_name))
			continue;
		if (strcmp(de->d_name, "module") == 0 || strcmp(de->d_name, "subsystem") == 0)
			continue;
		return true; /* bind/unbind/uevent are files; links are devices */
	}
	return false;
}

static int add_driver_module(int drivers_fd, const char *driver, char ***modules)
{
	_cleanup_close_ int fd = -EBADF;
	char target[PATH_MAX];
	const char *name;
	ssize_t n;

	fd = openat(drivers_fd, driver, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = readlinkat(fd, "module", target, sizeof(target) - 1);
	if (n <= 0)
		return 0; /* built in */
	target[n] = 0;
	name = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
	if (strv_contains(*modules, name) || !driver_has_device(fd))
		return 0;
	return strv_extend(modules, name);
}

int hints_bound_modules(const char *sysfs_root, char ***ret)
{
	_cleanup_free_ char *bus_dir = path_join(sysfs_root ?: "/sys", "bus");
	_cleanup_strv_free_ char **modules = NULL;
	_cleanup_(closedirp) DIR *buses = NULL;
	int r;

	if (!bus_dir)
		return -ENOMEM;
	buses = opendir(bus_dir);
	for (struct dirent *bus; buses && (bus = readdir(buses));) {
		_cleanup_(closedirp) DIR *drivers = NULL;
		_cleanup_free_ char *sub = NULL;
		int fd;

		if (is_dot(bus->d_name) || asprintf(&sub, "%s/drivers", bus->d_name) < 0)
			continue;
		fd = openat(dirfd(buses), sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		drivers = fdopendir(fd);
		if (!drivers) {
			close(fd);
			continue;
		}
		for (struct dirent *drv; (drv = readdir(drivers));) {
			if (is_dot(drv->d_name))
				continue;
			r = add_driver_module(dirfd(drivers), drv->d_name, &modules);
			if (r < 0)
				return r;
		}
	}
	*ret = TAKE_PTR(modules);
	return 0;
}

#if HAVE_KMOD
static int kmod_firmware(void *userdata, const char *module, char ***names)
{
	struct kmod_ctx *ctx = userdata;
	struct kmod_module *mod = NULL;
	struct kmod_list *info = NULL, *l;
	int r;

	r = kmod_module_new_from_name(ctx, module, &mod);
	if (r < 0)
		return 0;
	if (kmod_module_get_info(mod, &info) < 0) {
		kmod_module_unref(mod);
		return 0;
	}
	r = 0;
	kmod_list_foreach(l, info) {
		const char *key = kmod_module_info_get_key(l), *value = kmod_module_info_get_value(l);

		if (key && value && strcmp(key, "firmware") == 0 && strv_extend(names, value) < 0) {
			r = -ENOMEM;
			break;
		}
	}
	kmod_module_info_free_list(info);
	kmod_module_unref(mod);
	return r;
}
#endif

int hints_collect(const char *sysfs_root, char *const *roots, hints_module_firmware_t lookup,
		  void *userdata, char ***ret)
{
	_cleanup_strv_free_ char **modules = NULL, **names = NULL, **found = NULL;
#if HAVE_KMOD
	struct kmod_ctx *ctx = NULL;
#endif
	int r;

	r = hints_bound_modules(sysfs_root, &modules);
	if (r < 0)
		return r;
#if HAVE_KMOD
	if (!lookup && modules) {
		ctx = kmod_new(NULL, NULL);
		if (ctx) {
			lookup = kmod_firmware;
			userdata = ctx;
		}
	}
#endif
	for (char **m = modules; lookup && m && *m; m++) {
		r = lookup(userdata, *m, &names);
		if (r < 0)
			break;
	}
#if HAVE_KMOD
	if (ctx)
		kmod_unref(ctx);
#endif
	if (r < 0)
		return r;
	for (char **n = names; n && *n; n++) {
		/* globs ("fw-*.bin") name no one file; hostile names are not looked up */
		if (strpbrk(*n, "*?[") || fw_name_check(*n, NULL) < 0 || strv_contains(found, *n))
			continue;
		if (gate_name_present(roots, *n) && strv_extend(&found, *n) < 0)
			return -ENOMEM;
	}
	*ret = TAKE_PTR(found);
	return 0;
}
