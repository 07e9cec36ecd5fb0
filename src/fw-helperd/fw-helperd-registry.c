/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fw-helperd-name.h"
#include "fw-helperd-registry.h"
#include "log.h"
#include "util.h"

#define REGISTRY_HEADER "# fw-helperd registry 1"
/* Stands for "served to a request without a device" in the saved file. */
#define ANONYMOUS_DEVICE "*"

int registry_new(const char *path, Registry **ret)
{
	_cleanup_(registry_freep) Registry *r = NULL;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (path) {
		r->path = strdup(path);
		if (!r->path)
			return -ENOMEM;
	}
	*ret = TAKE_PTR(r);
	return 0;
}

static RegistryEntry *entry_free(RegistryEntry *e)
{
	if (!e)
		return NULL;
	free(e->name);
	strv_free(e->devices);
	free(e);
	return NULL;
}

Registry *registry_free(Registry *r)
{
	if (!r)
		return NULL;
	for (RegistryEntry *e = r->entries, *next; e; e = next) {
		next = e->next;
		entry_free(e);
	}
	free(r->path);
	free(r);
	return NULL;
}

RegistryEntry *registry_find(Registry *r, const char *name)
{
	for (RegistryEntry *e = r->entries; e; e = e->next)
		if (strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

/* Appends a new entry for name with no source yet. */
static RegistryEntry *entry_add(Registry *r, const char *name)
{
	RegistryEntry *e, **tail;

	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->name = strdup(name);
	if (!e->name)
		return entry_free(e);
	for (tail = &r->entries; *tail; tail = &(*tail)->next)
		;
	*tail = e;
	r->n_entries++;
	return e;
}

static void entry_remove(Registry *r, RegistryEntry *e)
{
	for (RegistryEntry **p = &r->entries; *p; p = &(*p)->next)
		if (*p == e) {
			*p = e->next;
			r->n_entries--;
			entry_free(e);
			return;
		}
}

int registry_record(Registry *r, const char *name, const char *devpath, uint64_t size)
{
	RegistryEntry *e;
	bool changed = false;

	e = registry_find(r, name);
	if (!e) {
		e = entry_add(r, name);
		if (!e)
			return -ENOMEM;
		changed = true;
	}
	if (!(e->sources & REGISTRY_SERVED))
		changed = true;
	e->sources |= REGISTRY_SERVED;
	if (size > 0 && e->size != size) {
		e->size = size;
		r->dirty = true;
	}
	if (!devpath) {
		changed = changed || !e->anonymous;
		e->anonymous = true;
	} else if (!strv_contains(e->devices, devpath)) {
		if (strv_extend(&e->devices, devpath) < 0)
			return -ENOMEM;
		changed = true;
	}
	if (changed)
		r->dirty = true;
	return changed;
}

/* Removes s from the NULL-terminated list l; returns whether it was there. */
static bool strv_remove(char **l, const char *s)
{
	char **p;

	for (p = l; p && *p; p++)
		if (strcmp(*p, s) == 0)
			break;
	if (!p || !*p)
		return false;
	free(*p);
	memmove(p, p + 1, (strv_length(p + 1) + 1) * sizeof(char *));
	return true;
}

int registry_forget_device(Registry *r, const char *devpath)
{
	int forgotten = 0;

	for (RegistryEntry *e = r->entries, *next; e; e = next) {
		next = e->next;
		if (!strv_remove(e->devices, devpath))
			continue;
		r->dirty = true;
		if (strv_length(e->devices) > 0 || e->anonymous)
			continue;
		e->sources &= ~REGISTRY_SERVED;
		if (e->sources == 0) {
			entry_remove(r, e);
			forgotten++;
		}
	}
	return forgotten;
}

int registry_forget_absent(Registry *r, bool (*device_present)(const char *devpath, void *userdata),
			   void *userdata)
{
	_cleanup_strv_free_ char **gone = NULL;
	int forgotten = 0;

	/* collected first: forgetting may free the entries walked */
	for (RegistryEntry *e = r->entries; e; e = e->next)
		for (char **d = e->devices; d && *d; d++)
			if (!strv_contains(gone, *d) && !device_present(*d, userdata) &&
			    strv_extend(&gone, *d) < 0)
				return -ENOMEM;
	for (char **d = gone; d && *d; d++)
		forgotten += registry_forget_device(r, *d);
	return forgotten;
}

int registry_set_source(Registry *r, RegistrySource source, char *const *names)
{
	for (RegistryEntry *e = r->entries, *next; e; e = next) {
		next = e->next;
		if (!(e->sources & source) || strv_contains(names, e->name))
			continue;
		e->sources &= ~source;
		if (e->sources == 0)
			entry_remove(r, e);
	}
	for (char *const *n = names; n && *n; n++) {
		RegistryEntry *e = registry_find(r, *n);

		if (!e) {
			e = entry_add(r, *n);
			if (!e)
				return -ENOMEM;
		}
		e->sources |= source;
	}
	return 0;
}

void registry_set_size(Registry *r, const char *name, uint64_t size)
{
	RegistryEntry *e = registry_find(r, name);

	if (!e || e->size == size)
		return;
	e->size = size;
	if (e->sources & REGISTRY_SERVED)
		r->dirty = true;
}

unsigned registry_rank(const RegistryEntry *e)
{
	if (e->sources & REGISTRY_SERVED)
		return 0;
	return e->sources & REGISTRY_CONFIG ? 1 : 2;
}

int registry_names_by_rank(Registry *r, bool (*keep)(const char *name, void *userdata),
			   void *userdata, char ***ret)
{
	char **names = NULL;

	for (unsigned rank = 0; rank < REGISTRY_RANKS; rank++)
		for (RegistryEntry *e = r->entries; e; e = e->next) {
			if (registry_rank(e) != rank || (keep && !keep(e->name, userdata)))
				continue;
			if (strv_extend(&names, e->name) < 0) {
				strv_free(names);
				return -ENOMEM;
			}
		}
	*ret = names;
	return 0;
}

const char *registry_sources_to_string(unsigned sources)
{
	static const char *const table[8] = {
		[0] = "",
		[REGISTRY_SERVED] = "served",
		[REGISTRY_HINT] = "hint",
		[REGISTRY_CONFIG] = "config",
		[REGISTRY_SERVED | REGISTRY_HINT] = "served,hint",
		[REGISTRY_SERVED | REGISTRY_CONFIG] = "served,config",
		[REGISTRY_HINT | REGISTRY_CONFIG] = "hint,config",
		[REGISTRY_SERVED | REGISTRY_HINT | REGISTRY_CONFIG] = "served,hint,config",
	};

	return table[sources & 7];
}

/* Fields are tab-separated, one entry a line: nothing saved may hold either. */
static bool field_ok(const char *s)
{
	return s && *s && !strpbrk(s, "\t\n");
}

static void entry_write(FILE *f, const RegistryEntry *e)
{
	if (!(e->sources & REGISTRY_SERVED) || !field_ok(e->name))
		return;
	fprintf(f, "%s\t%" PRIu64, e->name, e->size);
	if (e->anonymous)
		fputs("\t" ANONYMOUS_DEVICE, f);
	for (char **d = e->devices; d && *d; d++)
		if (field_ok(*d))
			fprintf(f, "\t%s", *d);
	fputc('\n', f);
}

int registry_save(Registry *r)
{
	_cleanup_free_ char *tmp = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	int fd, q;

	if (!r->path || !r->dirty)
		return 0;
	if (asprintf(&tmp, "%s.XXXXXX", r->path) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		q = -errno;
		close(fd);
		(void)unlink(tmp);
		return q;
	}
	(void)fchmod(fd, 0644);
	fputs(REGISTRY_HEADER "\n", f);
	for (RegistryEntry *e = r->entries; e; e = e->next)
		entry_write(f, e);
	if (fflush(f) != 0 || ferror(f) || fsync(fd) < 0 || rename(tmp, r->path) < 0) {
		q = negative_errno();
		(void)unlink(tmp);
		return q;
	}
	r->dirty = false;
	return 0;
}

/* One line "name<TAB>size[<TAB>device]..."; malformed lines are skipped (-EBADMSG). */
static int load_line(Registry *r, char *line,
		     bool (*device_present)(const char *devpath, void *userdata), void *userdata,
		     unsigned *dropped)
{
	char *save = NULL, *name, *size_s, *dev;
	uint64_t size;
	bool recorded = false;
	int q;

	name = strtok_r(line, "\t", &save);
	size_s = strtok_r(NULL, "\t", &save);
	if (!name || !size_s || safe_atou64(size_s, &size) < 0 || fw_name_check(name, NULL) < 0)
		return -EBADMSG;
	while ((dev = strtok_r(NULL, "\t", &save))) {
		if (strcmp(dev, ANONYMOUS_DEVICE) == 0)
			q = registry_record(r, name, NULL, size);
		else if (dev[0] != '/' || (device_present && !device_present(dev, userdata))) {
			(*dropped)++;
			continue;
		} else
			q = registry_record(r, name, dev, size);
		if (q < 0)
			return q;
		recorded = true;
	}
	return recorded;
}

int registry_load(Registry *r, bool (*device_present)(const char *devpath, void *userdata),
		  void *userdata)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	size_t allocated = 0;
	ssize_t len;
	unsigned dropped = 0;
	int loaded = 0, skipped = 0, q;

	if (!r->path)
		return 0;
	f = fopen(r->path, "re");
	if (!f)
		return 0; /* nothing saved yet, or unreadable: start empty either way */
	len = getline(&line, &allocated, f);
	if (len <= 0 || strncmp(line, REGISTRY_HEADER "\n", (size_t)len) != 0) {
		log_debug("Ignoring '%s': not a registry this version wrote.", r->path);
		r->dirty = true; /* replaced at the next save */
		return 0;
	}
	while ((len = getline(&line, &allocated, f)) > 0) {
		if (line[len - 1] != '\n') {
			skipped++; /* cut short: a writer died mid-line (not ours: we rename) */
			break;
		}
		line[len - 1] = 0;
		q = load_line(r, line, device_present, userdata, &dropped);
		if (q == -ENOMEM)
			return q;
		if (q < 0)
			skipped++;
		else if (q > 0)
			loaded++;
	}
	if (skipped > 0)
		log_debug("Skipped %d malformed lines in '%s'.", skipped, r->path);
	/* Saved again only when the file and memory differ. */
	r->dirty = skipped > 0 || dropped > 0;
	return loaded;
}
