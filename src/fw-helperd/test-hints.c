/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fw-helperd-hints.h"
#include "macro.h"
#include "util.h"

static unsigned n_failed;

static void check(bool ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "FAIL", what);
	if (!ok)
		n_failed++;
}

static char *top;

static void mk(const char *rel)
{
	_cleanup_free_ char *cmd = NULL;

	if (asprintf(&cmd, "mkdir -p '%s/%s'", top, rel) > 0 && system(cmd) != 0)
		check(false, rel);
}

static void ln(const char *target, const char *rel)
{
	_cleanup_free_ char *path = path_join(top, rel);

	check(path && symlink(target, path) == 0, rel);
}

static void touch(const char *rel)
{
	_cleanup_free_ char *path = path_join(top, rel);
	FILE *f = path ? fopen(path, "we") : NULL;

	check(f != NULL, rel);
	if (f)
		fclose(f);
}

static int fake_lookup(void *userdata, const char *module, char ***names)
{
	static const char *const foo[] = { "foo/fw1.bin", "foo/fw2.bin", "foo/missing.bin",
					   "foo/*.bin", "../etc/passwd", "foo/fw1.bin", NULL };
	const char *const *l = strcmp(module, "foo") == 0 ? foo : NULL;
	unsigned *calls = userdata;

	(*calls)++;
	if (strcmp(module, "bar") == 0)
		strv_extend(names, "bar.bin");
	for (; l && *l; l++)
		if (strv_extend(names, *l) < 0)
			return -ENOMEM;
	return 0;
}

int main(void)
{
	char tmpl[] = "/tmp/test-hints-XXXXXX";
	_cleanup_strv_free_ char **modules = NULL, **names = NULL;
	_cleanup_free_ char *sys = NULL, *fw = NULL, *cmd = NULL;
	char *roots[2] = {};
	unsigned calls = 0;

	top = mkdtemp(tmpl);
	check(top != NULL, "temporary directory");
	sys = path_join(top, "sys");
	fw = path_join(top, "fw");
	mk("sys/module/foo");
	mk("sys/module/bar");
	mk("sys/devices/pci0000:00/0000:00:01.0");
	/* foo: a module with a bound device */
	mk("sys/bus/pci/drivers/foo");
	ln("../../../../module/foo", "sys/bus/pci/drivers/foo/module");
	ln("../../../../devices/pci0000:00/0000:00:01.0", "sys/bus/pci/drivers/foo/0000:00:01.0");
	touch("sys/bus/pci/drivers/foo/bind");
	/* bar: loaded, nothing bound */
	mk("sys/bus/pci/drivers/bar");
	ln("../../../../module/bar", "sys/bus/pci/drivers/bar/module");
	touch("sys/bus/pci/drivers/bar/uevent");
	/* built in: a device but no module */
	mk("sys/bus/usb/drivers/hub");
	ln("../../../../devices/pci0000:00/0000:00:01.0", "sys/bus/usb/drivers/hub/1-0:1.0");
	/* the same module again under another bus */
	mk("sys/bus/platform/drivers/foo");
	ln("../../../../module/foo", "sys/bus/platform/drivers/foo/module");
	ln("../../../../devices/pci0000:00/0000:00:01.0", "sys/bus/platform/drivers/foo/dev");

	mk("fw/foo");
	touch("fw/foo/fw1.bin");
	touch("fw/foo/fw2.bin.xz");
	touch("fw/bar.bin");

	check(hints_bound_modules(sys, &modules) == 0, "walk");
	check(strv_length(modules) == 1 && strcmp(modules[0], "foo") == 0,
	      "only foo has a bound device, listed once");

	roots[0] = fw;
	check(hints_collect(sys, roots, fake_lookup, &calls, &names) == 0, "collect");
	check(calls == 1, "one lookup per bound module");
	check(strv_length(names) == 2 && strv_contains(names, "foo/fw1.bin") &&
		      strv_contains(names, "foo/fw2.bin"),
	      "existing names (plain and .xz) kept; missing, globs, hostile and duplicates dropped");

	strv_free(names);
	names = NULL;
	check(hints_collect("/nonexistent", roots, fake_lookup, &calls, &names) == 0 && !names,
	      "no sysfs: no hints");

	if (asprintf(&cmd, "rm -rf '%s'", top) > 0 && system(cmd) != 0)
		check(false, "cleanup");
	printf("%u failed\n", n_failed);
	return n_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
