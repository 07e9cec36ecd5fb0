/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fw-helperd-registry.h"
#include "macro.h"
#include "util.h"

static unsigned n_failed;

static void check(bool ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "FAIL", what);
	if (!ok)
		n_failed++;
}

static char *temp_dir(void)
{
	char tmpl[] = "/tmp/test-registry-XXXXXX";

	return mkdtemp(tmpl) ? strdup(tmpl) : NULL;
}

static void test_references(void)
{
	_cleanup_(registry_freep) Registry *r = NULL;
	RegistryEntry *e;

	check(registry_new(NULL, &r) == 0, "new registry");
	check(registry_record(r, "a.bin", "/devices/x", 10) == 1, "first use of a name is new");
	check(registry_record(r, "a.bin", "/devices/x", 10) == 0, "same device again changes nothing");
	check(registry_record(r, "a.bin", "/devices/y", 10) == 1, "a second device is a new reference");
	check(registry_record(r, "b.bin", "/devices/x", 20) == 1, "second name");
	e = registry_find(r, "a.bin");
	check(e && strv_length(e->devices) == 2 && e->size == 10, "two devices hold a.bin");

	check(registry_forget_device(r, "/devices/x") == 1, "x gone: b.bin forgotten, a.bin kept");
	check(registry_find(r, "a.bin") && !registry_find(r, "b.bin"), "a.bin still needed by y");
	check(registry_forget_device(r, "/devices/nothere") == 0, "unknown device: nothing forgotten");
	check(registry_forget_device(r, "/devices/y") == 1, "last reference gone: forgotten");
	check(r->n_entries == 0 && !r->entries, "registry empty");

	/* a request without a device is never dropped by a removal */
	check(registry_record(r, "anon.bin", NULL, 5) == 1, "anonymous use");
	check(registry_record(r, "anon.bin", "/devices/z", 5) == 1, "and one with a device");
	check(registry_forget_device(r, "/devices/z") == 0, "anonymous use keeps the name");
	e = registry_find(r, "anon.bin");
	check(e && (e->sources & REGISTRY_SERVED), "still served");
}

static void test_sources(void)
{
	_cleanup_(registry_freep) Registry *r = NULL;
	char *config[] = { "c1.bin", "both.bin", NULL };
	char *config2[] = { "c2.bin", NULL };
	RegistryEntry *e;

	check(registry_new(NULL, &r) == 0, "new registry");
	check(registry_record(r, "both.bin", "/devices/d", 1) == 1, "served");
	check(registry_set_source(r, REGISTRY_CONFIG, config) == 0, "config names set");
	e = registry_find(r, "both.bin");
	check(e && e->sources == (REGISTRY_SERVED | REGISTRY_CONFIG), "served and config");
	check(strcmp(registry_sources_to_string(e->sources), "served,config") == 0,
	      "sources shown as served,config");
	check(registry_find(r, "c1.bin") && registry_find(r, "c1.bin")->sources == REGISTRY_CONFIG,
	      "config-only name");
	check(registry_set_source(r, REGISTRY_CONFIG, config2) == 0, "config replaced");
	check(!registry_find(r, "c1.bin"), "name no longer configured is dropped");
	e = registry_find(r, "both.bin");
	check(e && e->sources == REGISTRY_SERVED, "served name loses only the config source");
	check(registry_forget_device(r, "/devices/d") == 1, "device gone");
	check(registry_set_source(r, REGISTRY_CONFIG, NULL) == 0 && r->n_entries == 0,
	      "empty config: nothing left");
}

static bool present_unless_gone(const char *devpath, void *userdata)
{
	return !strv_contains(userdata, devpath);
}

/* Devices gone without their removal heard of: found by looking, as at each prewarm. */
static void test_forget_absent(void)
{
	_cleanup_(registry_freep) Registry *r = NULL;
	char *gone[] = { "/devices/pci/a", "/devices/pci/b", NULL };

	check(registry_new(NULL, &r) == 0, "new registry");
	check(registry_record(r, "one.bin", "/devices/pci/a", 1) == 1 &&
	      registry_record(r, "two.bin", "/devices/pci/a", 1) == 1 &&
	      registry_record(r, "two.bin", "/devices/pci/b", 1) == 1 &&
	      registry_record(r, "three.bin", "/devices/pci/b", 1) == 1 &&
	      registry_record(r, "three.bin", "/devices/usb/c", 1) == 1 &&
	      registry_record(r, "four.bin", "/devices/usb/c", 1) == 1, "four names of three devices");
	check(registry_forget_absent(r, present_unless_gone, gone) == 2, "a and b gone: two names with them");
	check(!registry_find(r, "one.bin") && !registry_find(r, "two.bin"), "their names forgotten");
	check(registry_find(r, "three.bin") && strv_length(registry_find(r, "three.bin")->devices) == 1,
	      "a name another present device needs stays, with that device only");
	check(registry_find(r, "four.bin"), "the present device's own name stays");
	check(registry_forget_absent(r, present_unless_gone, gone) == 0, "nothing more to forget");
}

static bool not_skipped(const char *name, void *userdata)
{
	return strcmp(name, userdata) != 0;
}

/* What is pinned when room runs short: devices' names first, then configured, hints last. */
static void test_rank(void)
{
	_cleanup_(registry_freep) Registry *r = NULL;
	char *hints[] = { "hint1.bin", "hint2.bin", "dev2.bin", NULL };
	char *config[] = { "conf.bin", NULL };
	/* dev2.bin was known as a hint before it was served: oldest in its rank */
	const char *want[] = { "dev2.bin", "dev1.bin", "conf.bin", "hint1.bin", "hint2.bin" };
	_cleanup_strv_free_ char **names = NULL, **kept = NULL;

	check(registry_new(NULL, &r) == 0, "new registry");
	/* hints known first (at start), as on a real system */
	check(registry_set_source(r, REGISTRY_HINT, hints) == 0, "hints");
	check(registry_set_source(r, REGISTRY_CONFIG, config) == 0, "config");
	check(registry_record(r, "dev1.bin", "/devices/a", 1) == 1, "dev1 served");
	check(registry_record(r, "dev2.bin", "/devices/b", 1) == 1, "dev2 served (also hinted)");
	check(registry_names_by_rank(r, NULL, NULL, &names) == 0, "ranked");
	check(strv_length(names) == ELEMENTSOF(want), "every name once");
	for (size_t i = 0; i < ELEMENTSOF(want); i++)
		check(names && names[i] && strcmp(names[i], want[i]) == 0, want[i]);
	check(registry_names_by_rank(r, not_skipped, "conf.bin", &kept) == 0 && strv_length(kept) == 4 &&
		      !strv_contains(kept, "conf.bin") && strcmp(kept[2], "hint1.bin") == 0,
	      "filtered, order kept");
}

static bool present_only_a(const char *devpath, void *userdata)
{
	return strcmp(devpath, "/devices/a") == 0;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_persistence(void)
{
	_cleanup_free_ char *dir = temp_dir(), *path = NULL, *text = NULL;
	_cleanup_(registry_freep) Registry *r = NULL, *loaded = NULL, *corrupt = NULL;
	char *config[] = { "config.bin", NULL };
	RegistryEntry *e;

	path = dir ? path_join(dir, "registry") : NULL;
	check(path && registry_new(path, &r) == 0, "registry with a file");
	check(registry_load(r, NULL, NULL) == 0 && r->n_entries == 0, "missing file: empty");
	registry_record(r, "x/one.bin", "/devices/a", 100);
	registry_record(r, "x/one.bin", "/devices/b", 100);
	registry_record(r, "two.bin", "/devices/b", 200);
	registry_record(r, "anon.bin", NULL, 300);
	registry_set_source(r, REGISTRY_CONFIG, config);
	check(r->dirty, "dirty after changes");
	check(registry_save(r) == 0 && !r->dirty, "saved");
	check(read_string_at(AT_FDCWD, path, &text) == 0 && !strstr(text, "config.bin"),
	      "config names are not persisted");

	check(registry_new(path, &loaded) == 0, "second registry");
	check(registry_load(loaded, present_only_a, NULL) == 2, "two names survive (b is gone)");
	e = registry_find(loaded, "x/one.bin");
	check(e && strv_length(e->devices) == 1 && strcmp(e->devices[0], "/devices/a") == 0 &&
		      e->size == 100, "x/one.bin kept with device a only");
	check(!registry_find(loaded, "two.bin"), "two.bin's only device went away");
	e = registry_find(loaded, "anon.bin");
	check(e && e->anonymous && e->size == 300, "anonymous entry round trip");
	check(loaded->dirty, "dropped devices make it dirty");

	/* corrupt: garbage lines, a bad name, a truncated last line */
	write_file(path, "# fw-helperd registry 1\n"
			 "good.bin\t42\t/devices/a\n"
			 "no-size-here\n"
			 "../etc/passwd\t1\t/devices/a\n"
			 "bad.bin\tnotanumber\t/devices/a\n"
			 "nodev.bin\t7\trelative\n"
			 "\n"
			 "cut.bin\t9\t/devi");
	check(registry_new(path, &corrupt) == 0, "third registry");
	check(registry_load(corrupt, NULL, NULL) == 1, "only the good line is loaded");
	check(registry_find(corrupt, "good.bin") && corrupt->n_entries == 1, "good.bin loaded");
	check(corrupt->dirty && registry_save(corrupt) == 0, "corrupt file rewritten");
	corrupt = registry_free(corrupt);

	write_file(path, "\x7f" "ELF garbage\n\x01\x02");
	check(registry_new(path, &corrupt) == 0 && registry_load(corrupt, NULL, NULL) == 0 &&
		      corrupt->n_entries == 0, "wrong header: started empty");

	unlink(path);
	check(rmdir(dir) == 0, "no temporary file left behind");
}

int main(void)
{
	test_references();
	test_sources();
	test_forget_absent();
	test_rank();
	test_persistence();
	printf("%u failed\n", n_failed);
	return n_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
