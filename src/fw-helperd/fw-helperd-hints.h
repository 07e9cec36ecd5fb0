/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Firmware a machine may need across suspend though nobody asked for it since boot: the
 * MODULE_FIRMWARE names of the modules that bound devices use, kept only where the file
 * exists in the search path. Blocking (sysfs walk, module files): run off the event loop.
 */

/* The module names behind bound drivers: <sysfs>/bus/ * /drivers/ * with a device link and a module link. */
int hints_bound_modules(const char *sysfs_root, char ***ret);

/* Looks up a module's MODULE_FIRMWARE names; appends them to *names. */
typedef int (*hints_module_firmware_t)(void *userdata, const char *module, char ***names);

/*
 * The names of bound modules (via lookup, libkmod's when NULL) that exist beneath one of
 * roots (plain, .zst or .xz), each once. Without libkmod and no lookup: none.
 */
int hints_collect(const char *sysfs_root, char *const *roots, hints_module_firmware_t lookup,
		  void *userdata, char ***ret);
