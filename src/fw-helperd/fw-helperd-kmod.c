/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "config.h"
#include "fw-helperd-kmod.h"
#include "fw-helperd-messages.h"
#include "log.h"

#if HAVE_KMOD
#include <libkmod.h>
#endif

struct Companion {
	sd_event *event;
	CompanionMode mode;
	char *dir;		/* <sysfs>/kernel/fwh_cache */
	const char *status;	/* "off", "loaded", or why it is not used */

	/* the helper's side of the module's fallback requests (companion_set_answering()) */
	void (*rescan)(void *userdata);
	void *rescan_userdata;
	bool answering;		/* userspace_fallback switched on by us */
	sd_event_source *answer_source, *rescan_timer;	/* entries changed; look again */
	usec_t rescan_interval;

	/* a pin in progress */
	char **pinning;
	sd_event_source *entries_source, *deadline_source, *first_check;
	companion_pinned_t done;
	void *userdata;
};

/* No uevent announces the module's custom fallback requests: look, sooner first. */
#define RESCAN_MIN_USEC (20 * USEC_PER_MSEC)
#define RESCAN_MAX_USEC (500 * USEC_PER_MSEC)
/* Far above what the module lists: max_entries lines of at most 255 + 64 bytes. */
#define ENTRIES_TEXT_MAX (64U * 1024U * 1024U)

static const char *const mode_table[_COMPANION_MODE_MAX] = {
	[COMPANION_OFF] = "off",
	[COMPANION_IF_AVAILABLE] = "if-available",
	[COMPANION_REQUIRED] = "required",
};

const char *companion_mode_to_string(CompanionMode m)
{
	return m >= 0 && m < _COMPANION_MODE_MAX ? mode_table[m] : NULL;
}

CompanionMode companion_mode_from_string(const char *s)
{
	for (int i = 0; i < _COMPANION_MODE_MAX; i++)
		if (strcmp(s, mode_table[i]) == 0)
			return i;
	return _COMPANION_MODE_INVALID;
}

/* A sentence for the journal: why the kernel would not take the module. */
static const char *load_error_reason(int r)
{
	switch (r) {
	case -ENOENT:
		return "not installed for this kernel (build it with DKMS)";
	case -EPERM:
	case -EACCES:
		return "the kernel refuses to load modules (lockdown, or no CAP_SYS_MODULE)";
	case -EKEYREJECTED:
	case -ENOKEY:
	case -EBADMSG:
		return "its signature was rejected (Secure Boot requires signed modules)";
	case -ENOANO:
		return "blacklisted in modprobe.d";
	case -EEXIST:
		return "a module of that name is already loaded";
	case -ECHILD:
		return "not loaded (the unit's ExecStartPre= loads it: see its entry before this one)";
	default:
		return "loading failed";
	}
}

static void log_module(int level, int error, const char *status, const char *detail)
{
	LogEntry e = {};

	log_entry_add(&e, "FW_MODULE=%s", COMPANION_MODULE_NAME);
	log_entry_add(&e, "FW_MODULE_STATUS=%s", status);
	log_entry_send(&e, level, error, FW_MESSAGE_MODULE, "Companion module %s %s%s%s",
		       COMPANION_MODULE_NAME, status, detail ? ": " : ".", detail ? detail : "");
}

static int insert_module(void)
{
#if HAVE_KMOD
	struct kmod_ctx *ctx;
	struct kmod_module *mod = NULL;
	int r;

	ctx = kmod_new(NULL, NULL);
	if (!ctx)
		return -ENOMEM;
	r = kmod_module_new_from_name(ctx, COMPANION_MODULE_NAME, &mod);
	if (r >= 0) {
		r = kmod_module_probe_insert_module(mod, KMOD_PROBE_APPLY_BLACKLIST, NULL, NULL,
						    NULL, NULL);
		if (r > 0)
			r = -ENOANO; /* stands for "blacklisted by the admin" */
		/* libkmod says -ENOENT for "no such module" and for a missing modules.dep alike */
		kmod_module_unref(mod);
	}
	kmod_unref(ctx);
	return r;
#else
	return -EOPNOTSUPP;
#endif
}

int companion_new(sd_event *event, const char *sysfs_root, CompanionMode mode, Companion **ret)
{
	_cleanup_(companion_freep) Companion *c = NULL;
	int r;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->event = sd_event_ref(event);
	c->mode = mode;
	c->dir = path_join(sysfs_root ?: "/sys", "kernel/" COMPANION_MODULE_NAME);
	if (!c->dir)
		return -ENOMEM;

	if (mode == COMPANION_OFF) {
		c->status = "off";
		*ret = TAKE_PTR(c);
		return 0;
	}
	if (access(c->dir, F_OK) < 0) {
		/* Against a fixture sysfs tree (tests), never touch the running kernel. Under the
		 * unit the daemon has no CAP_SYS_MODULE: ExecStartPre=+ did the loading. */
		if (sysfs_root && strcmp(sysfs_root, "/sys") != 0)
			r = -ENOENT;
		else if (prctl(PR_CAPBSET_READ, CAP_SYS_MODULE) <= 0)
			r = -ECHILD;
		else
			r = insert_module();
		if (r < 0 || access(c->dir, F_OK) < 0) {
			c->status = r < 0 ? load_error_reason(r) : "loaded but its sysfs interface is missing";
			log_module(mode == COMPANION_REQUIRED ? LOG_ERR : LOG_NOTICE, r, "not used",
				   c->status);
			if (mode == COMPANION_REQUIRED)
				return -ENODEV;
			*ret = TAKE_PTR(c);
			return 0;
		}
	}
	c->status = "loaded";
	log_module(LOG_INFO, 0, "in use", NULL);
	*ret = TAKE_PTR(c);
	return 0;
}

static int set_userspace_fallback(Companion *c, bool on)
{
	_cleanup_close_ int dirfd = open(c->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dirfd < 0)
		return -errno;
	return write_string_at(dirfd, "userspace_fallback", on ? "1" : "0");
}

/* sysfs polling re-arms only after the attribute is read again. false: the file is gone
 * (the module was unloaded; its poll then reports an event forever). */
static bool drain(int fd)
{
	char buf[256];
	ssize_t n;

	(void)lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	return n == 0;
}

static bool any_loading(Companion *c)
{
	CompanionEntry *e = NULL;
	bool loading = false;
	size_t n = 0;

	if (companion_entries(c, &e, &n) < 0)
		return false;
	for (size_t i = 0; i < n && !loading; i++)
		loading = e[i].state == COMPANION_ENTRY_LOADING;
	companion_entries_free(e, n);
	return loading;
}

static int on_rescan(sd_event_source *s, uint64_t usec, void *userdata)
{
	Companion *c = userdata;

	c->rescan(c->rescan_userdata);
	if (!any_loading(c))
		return 0; /* the next change of entries arms it again */
	c->rescan_interval = MIN(c->rescan_interval * 2, RESCAN_MAX_USEC);
	(void)sd_event_source_set_time_relative(s, c->rescan_interval);
	return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static void stop_answering(Companion *c)
{
	c->answer_source = sd_event_source_disable_unref(c->answer_source);
	c->rescan_timer = sd_event_source_disable_unref(c->rescan_timer);
	c->answering = false;
}

/* rmmod under us: nothing to pin into until it is back (companion_pin() looks again). */
static void companion_lost(Companion *c)
{
	stop_answering(c);
	c->status = "unloaded";
	log_module(LOG_WARNING, -ENODEV, "not used", "unloaded while in use");
}

/* Whoever wrote the name (our pin or an admin), a load that waits for us is found soon. */
static int on_answer_entries(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	Companion *c = userdata;

	if (!drain(fd)) {
		companion_lost(c);
		return 0;
	}
	c->rescan_interval = RESCAN_MIN_USEC;
	(void)sd_event_source_set_time_relative(c->rescan_timer, c->rescan_interval);
	(void)sd_event_source_set_enabled(c->rescan_timer, SD_EVENT_ONESHOT);
	return 0;
}

/* handler runs whenever the module's entries change (sysfs_notify: POLLPRI). */
static int add_entries_source(Companion *c, sd_event_source **ret, sd_event_io_handler_t handler)
{
	_cleanup_free_ char *path = path_join(c->dir, "entries");
	int fd, r;

	if (!path)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	drain(fd);
	r = sd_event_add_io(c->event, ret, fd, EPOLLPRI, handler, c);
	if (r < 0) {
		close(fd);
		return r;
	}
	return sd_event_source_set_io_fd_own(*ret, true);
}

static int watch_answers(Companion *c)
{
	int r;

	r = add_entries_source(c, &c->answer_source, on_answer_entries);
	if (r < 0)
		return r;
	r = sd_event_add_time_relative(c->event, &c->rescan_timer, CLOCK_MONOTONIC,
				       RESCAN_MIN_USEC, 0, on_rescan, c);
	if (r < 0)
		return r;
	/* loads waiting from before our start are found at once */
	return sd_event_source_set_enabled(c->rescan_timer, any_loading(c) ? SD_EVENT_ONESHOT : SD_EVENT_OFF);
}

void companion_set_answering(Companion *c, void (*rescan)(void *userdata), void *userdata)
{
	int r;

	if (!companion_available(c))
		return;
	c->rescan = rescan;
	c->rescan_userdata = userdata;
	r = watch_answers(c);
	if (r >= 0)
		r = set_userspace_fallback(c, true);
	if (r < 0) {
		/* an older module, say: names only we can find are pinned only with a forced fallback */
		log_full_errno(LOG_NOTICE, r, "Companion module does not ask fw-helperd for what only it can find: %m");
		stop_answering(c);
		return;
	}
	c->answering = true;
}

static void pin_finish(Companion *c)
{
	c->entries_source = sd_event_source_disable_unref(c->entries_source);
	c->deadline_source = sd_event_source_disable_unref(c->deadline_source);
	c->first_check = sd_event_source_disable_unref(c->first_check);
	strv_free(c->pinning);
	c->pinning = NULL;
	c->done = NULL;
}

Companion *companion_free(Companion *c)
{
	if (!c)
		return NULL;
	pin_finish(c);
	/* nobody answers any more: the module's loads go back to the direct loader alone */
	if (c->answering)
		(void)set_userspace_fallback(c, false);
	sd_event_source_disable_unref(c->answer_source);
	sd_event_source_disable_unref(c->rescan_timer);
	sd_event_unref(c->event);
	free(c->dir);
	free(c);
	return NULL;
}

bool companion_available(const Companion *c)
{
	return c && c->status && strcmp(c->status, "loaded") == 0;
}

static bool can_take(const Companion *c)
{
	return c && c->mode != COMPANION_OFF && !companion_available(c) && access(c->dir, F_OK) >= 0;
}

bool companion_recheck(Companion *c)
{
	if (can_take(c)) {
		c->status = "loaded";
		log_module(LOG_INFO, 0, "in use", "loaded since the start");
		if (c->rescan)
			companion_set_answering(c, c->rescan, c->rescan_userdata);
	}
	return companion_available(c);
}

/* An answer watch on the files of a module unloaded since then reads nothing. */
static bool answer_watch_alive(Companion *c)
{
	return !c->answer_source || drain(sd_event_source_get_io_fd(c->answer_source));
}

bool companion_module_changed(Companion *c, bool present)
{
	if (!c || c->mode == COMPANION_OFF)
		return false;
	if (companion_available(c) && (!present || !answer_watch_alive(c)))
		companion_lost(c);
	return present && can_take(c);
}

const char *companion_status(const Companion *c)
{
	return c ? c->status : "off";
}

int companion_parse_entry(const char *line, CompanionEntry *ret)
{
	static const char *const states[] = { "loading", "cached", "failed" };
	char state[16];
	unsigned long long size;
	int error, n = 0;

	if (sscanf(line, "%15s %llu %d %n", state, &size, &error, &n) != 3 || n == 0 || !line[n])
		return -EBADMSG;
	for (size_t i = 0; i < ELEMENTSOF(states); i++)
		if (strcmp(state, states[i]) == 0) {
			char *name = strdup(line + n);

			if (!name)
				return -ENOMEM;
			*ret = (CompanionEntry){ .name = name, .state = i, .size = size, .error = error };
			return 0;
		}
	return -EBADMSG;
}

void companion_entries_free(CompanionEntry *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(e[i].name);
	free(e);
}

int companion_entries(Companion *c, CompanionEntry **ret, size_t *ret_n)
{
	_cleanup_free_ char *text = NULL, *path = NULL;
	CompanionEntry *entries = NULL;
	size_t n = 0;
	char *line, *save = NULL;
	int r;

	if (!companion_available(c))
		return -ENODEV;
	path = path_join(c->dir, "entries");
	if (!path)
		return -ENOMEM;
	/* to the end: sysfs gives a page per read(), and one read() would cut the list at
	 * 4 KiB, so that pin_check() and any_loading() missed what follows */
	r = read_full_file(path, ENTRIES_TEXT_MAX, &text);
	if (r < 0)
		return r;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		CompanionEntry *grown = realloc(entries, sizeof(*entries) * (n + 1));

		if (!grown) {
			companion_entries_free(entries, n);
			return -ENOMEM;
		}
		entries = grown;
		if (companion_parse_entry(line, &entries[n]) >= 0)
			n++;
	}
	*ret = entries;
	*ret_n = n;
	return 0;
}

/* Counts the states of the names being pinned; calls done once none is loading. */
static void pin_check(Companion *c, bool final)
{
	CompanionEntry *e = NULL;
	unsigned cached = 0, failed = 0, loading = 0;
	companion_pinned_t done = c->done;
	void *userdata = c->userdata;
	size_t n = 0;

	if (companion_entries(c, &e, &n) < 0) {
		final = true;
		loading = strv_length(c->pinning);
	}
	for (size_t i = 0; i < n; i++) {
		if (!strv_contains(c->pinning, e[i].name))
			continue;
		if (e[i].state == COMPANION_ENTRY_CACHED)
			cached++;
		else if (e[i].state == COMPANION_ENTRY_FAILED)
			failed++;
		else
			loading++;
	}
	companion_entries_free(e, n);
	if (loading > 0 && !final)
		return;
	pin_finish(c);
	if (done)
		done(c, cached, failed, loading, userdata);
}

static int on_entries(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	Companion *c = userdata;

	drain(fd);
	pin_check(c, false);
	return 0;
}

/* done() must never run inside companion_pin(): the caller is told "later" first. */
static int on_first_check(sd_event_source *s, void *userdata)
{
	Companion *c = userdata;

	c->first_check = sd_event_source_disable_unref(c->first_check);
	pin_check(c, false);
	return 0;
}

static int on_pin_deadline(sd_event_source *s, uint64_t usec, void *userdata)
{
	pin_check(userdata, true);
	return 0;
}

static int watch_entries(Companion *c, usec_t deadline)
{
	int r;

	r = add_entries_source(c, &c->entries_source, on_entries);
	if (r < 0)
		return r;
	return sd_event_add_time(c->event, &c->deadline_source, CLOCK_MONOTONIC, deadline, 0,
				 on_pin_deadline, c);
}

/* The module holds max_entries images at most: names (the least needed, they come last)
 * that found no room are told, for an admin to raise it. */
static void log_not_pinned(char **names, unsigned pinned)
{
	_cleanup_free_ char *joined = strv_join(names, " ");
	LogEntry e = {};

	log_entry_add(&e, "FW_MODULE=%s", COMPANION_MODULE_NAME);
	log_entry_add(&e, "FW_MODULE_STATUS=full");
	log_entry_add(&e, "FW_MODULE_NOT_PINNED=%s", joined ?: "");
	log_entry_add(&e, "FW_MODULE_NOT_PINNED_COUNT=%zu", strv_length(names));
	log_entry_send(&e, LOG_NOTICE, -ENOSPC, FW_MESSAGE_MODULE,
		       "Companion module %s is full (max_entries) after %u names, %zu not pinned: %s",
		       COMPANION_MODULE_NAME, pinned, strv_length(names), joined ?: "?");
}

int companion_pin(Companion *c, char *const *names, usec_t deadline, companion_pinned_t done,
		  void *userdata)
{
	_cleanup_close_ int dirfd = -EBADF;
	_cleanup_strv_free_ char **full = NULL;
	unsigned asked = 0;
	int r;

	if (!companion_available(c))
		return -ENODEV;
	pin_finish(c);
	dirfd = open(c->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	c->pinning = strv_copy(names);
	if (!c->pinning)
		return -ENOMEM;
	/* The module switches it off when a load of its went unanswered (we were stopped,
	 * say, or too slow): we answer now. */
	if (c->answering)
		(void)set_userspace_fallback(c, true);
	for (char *const *n = names; n && *n; n++) {
		r = write_string_at(dirfd, "cache", *n);
		if (r == -ENOSPC && strv_extend(&full, *n) < 0)
			return -ENOMEM;
		if (r < 0)
			log_debug_errno(r, "Companion module refused to pin %s: %m", *n);
		else
			asked++;
	}
	if (full)
		log_not_pinned(full, asked);
	c->done = done;
	c->userdata = userdata;
	r = watch_entries(c, deadline);
	if (r >= 0)
		r = sd_event_add_defer(c->event, &c->first_check, on_first_check, c);

	if (r < 0) {
		pin_finish(c);
		return r;
	}
	return (int)asked;
}

int companion_unpin_all(Companion *c)
{
	_cleanup_free_ char *path = NULL;
	int r;

	if (!companion_available(c))
		return 0;
	pin_finish(c);
	path = path_join(c->dir, "uncache");
	if (!path)
		return -ENOMEM;
	r = write_string_at(AT_FDCWD, path, "*");
	return r == -ENOENT ? 0 : r; /* nothing pinned */
}
