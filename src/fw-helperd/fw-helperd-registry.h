/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

/*
 * What firmware this machine needs across suspend: every name fw-helperd served, held by
 * the requesting devices present (the userspace counterpart of the kernel's devres-tied
 * firmware names), plus names an administrator or a loaded module hints at. Lives on the
 * event loop only.
 */
typedef enum RegistrySource {
	REGISTRY_SERVED = 1 << 0,	/* a device asked for it since boot */
	REGISTRY_HINT = 1 << 1,		/* MODULE_FIRMWARE of a module a bound device uses */
	REGISTRY_CONFIG = 1 << 2,	/* PrewarmFirmware= */
} RegistrySource;

typedef struct RegistryEntry {
	char *name;
	unsigned sources;	/* RegistrySource bits; never 0 for a listed entry */
	uint64_t size;		/* bytes last served or prewarmed, 0 while unknown */
	char **devices;		/* DEVPATHs of the requesting devices, each once: the references */
	bool anonymous;		/* served to a request with no device: no removal drops it */
	struct RegistryEntry *next;
} RegistryEntry;

typedef struct Registry {
	RegistryEntry *entries;	/* oldest first: prewarm goes in the order names were needed */
	unsigned n_entries;
	char *path;		/* where it is persisted, or NULL */
	bool dirty;		/* changed since the last save */
} Registry;

/* path: the file it is kept in (may be NULL: memory only). */
int registry_new(const char *path, Registry **ret);
Registry *registry_free(Registry *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Registry *, registry_free);

RegistryEntry *registry_find(Registry *r, const char *name);

/*
 * Records that name was served to devpath (NULL: a request with no device) with size bytes.
 * Returns 1 when the name or the device is new, 0 when already known, -ENOMEM.
 */
int registry_record(Registry *r, const char *name, const char *devpath, uint64_t size);

/* Drops devpath's references; returns how many names were forgotten with it. */
int registry_forget_device(Registry *r, const char *devpath);
/* Drops every device device_present() says is gone; returns how many names went with them. */
int registry_forget_absent(Registry *r, bool (*device_present)(const char *devpath, void *userdata),
			   void *userdata);

/*
 * Makes names (NULL-terminated, may be NULL) exactly the set carrying source, which must be
 * REGISTRY_HINT or REGISTRY_CONFIG; entries left with no source are dropped. 0 or -ENOMEM.
 */
int registry_set_source(Registry *r, RegistrySource source, char *const *names);

void registry_set_size(Registry *r, const char *name, uint64_t size);

/* How surely a name is needed: 0 a device asked for it, 1 the admin named it, 2 a hint. */
#define REGISTRY_RANKS 3
unsigned registry_rank(const RegistryEntry *e);

/*
 * The names for which keep() says true (keep NULL: all), those devices asked for first, then
 * those configured, hints last; each rank oldest first. A module may hint at hundreds of
 * names (every chip it drives) where a device asked for one: when room runs short, what is
 * surely needed must come first. 0 or -ENOMEM; *ret may be NULL (no names).
 */
int registry_names_by_rank(Registry *r, bool (*keep)(const char *name, void *userdata),
			   void *userdata, char ***ret);

/* "served", "hint", "config", or a comma-separated combination; a static string. */
const char *registry_sources_to_string(unsigned sources);

/*
 * Persists the served entries atomically (a temporary file renamed over path), when dirty.
 * Hints and config names are not stored: they are derived again on every start.
 */
int registry_save(Registry *r);

/*
 * Loads what a previous instance saved. A missing file is an empty registry; a corrupt one
 * (bad header, malformed lines) is tolerated: what cannot be parsed is skipped. Devices for
 * which device_present() says false are dropped (they went away while nobody listened).
 * Returns the number of names loaded, or -ENOMEM.
 */
int registry_load(Registry *r, bool (*device_present)(const char *devpath, void *userdata),
		  void *userdata);
