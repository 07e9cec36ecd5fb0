/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <libgen.h>
#include <libudev.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fw-helperd-kmod.h"
#include "fw-helperd-manager.h"
#include "fw-helperd-name.h"
#include "fw-helperd-netlink.h"
#include "fw-helperd-sleep.h"
#include "fw-helperd-udev.h"
#include "log.h"

/* udev property an admin sets on a request to keep fw-helperd away from it (rules.d/). */
#define IGNORE_PROPERTY "FW_HELPERD_IGNORE"

/* What the daemon reads of a device event: udev's copy (libudev) or the kernel's own. */
typedef struct DeviceEvent {
	const char *action;
	const char *syspath;
	const char *devpath;
	const char *subsystem;
	const char *firmware;	/* FIRMWARE= */
	const char *timeout;	/* TIMEOUT= */
	uint64_t seqnum;
	usec_t age;		/* since udev first saw it; 0 for the kernel's copy */
	bool excluded;		/* an admin's rule set FW_HELPERD_IGNORE=1 (udev's copy only) */
	bool from_kernel;
} DeviceEvent;

/*
 * The requesting device of a request directory: the kernel puts the request right under
 * its parent when the parent has a class (/sys/devices/virtual/misc/test_firmware/<name>),
 * else under a "firmware" glue directory of the parent (.../<parent>/firmware/<name>);
 * parentless requests live in /sys/devices/virtual/firmware/<name>. Glue directories have
 * no uevent file, devices do: only a parent named "firmware" needs a look to tell which.
 * Returns a DEVPATH ("/devices/...") or NULL.
 */
static char *requester_devpath(const char *sysfs_root, const char *syspath)
{
	_cleanup_free_ char *parent = strdup(syspath), *uevent = NULL;
	size_t root_len = strlen(sysfs_root);
	char *slash;

	if (!parent || !(slash = strrchr(parent, '/')))
		return NULL;
	*slash = 0;
	slash = strrchr(parent, '/');
	if (slash && strcmp(slash + 1, "firmware") == 0) {
		uevent = path_join(parent, "uevent");
		if (!uevent)
			return NULL;
		if (access(uevent, F_OK) < 0)
			*slash = 0; /* the glue: the device is the one above */
	}
	if (strncmp(parent, sysfs_root, root_len) != 0 || parent[root_len] != '/')
		return NULL;
	if (strcmp(parent + root_len, "/devices/virtual") == 0 ||
	    strcmp(parent + root_len, "/devices/virtual/firmware") == 0)
		return NULL;
	return strdup(parent + root_len);
}

static unsigned parse_timeout(const char *s)
{
	uint64_t v;

	if (!s || safe_atou64(s, &v) < 0)
		return 0;
	return (unsigned)MIN(v, (uint64_t)UINT32_MAX);
}

static bool is_firmware_add(const DeviceEvent *e)
{
	return e->action && strcmp(e->action, "add") == 0 && e->syspath && e->firmware &&
	       strcmp(e->subsystem ?: "", "firmware") == 0;
}

/* Exactly "1" excludes, as the rule in rules.d/50-firmware.rules tests it. */
static bool is_excluded(struct udev_device *d)
{
	const char *v = udev_device_get_property_value(d, IGNORE_PROPERTY);

	return v && strcmp(v, "1") == 0;
}

static void event_from_udev(struct udev_device *d, DeviceEvent *ret)
{
	*ret = (DeviceEvent){
		.action = udev_device_get_action(d),
		.syspath = udev_device_get_syspath(d),
		.devpath = udev_device_get_devpath(d),
		.subsystem = udev_device_get_subsystem(d),
		.firmware = udev_device_get_property_value(d, "FIRMWARE"),
		.timeout = udev_device_get_property_value(d, "TIMEOUT"),
		.seqnum = udev_device_get_seqnum(d),
		.excluded = is_excluded(d),
	};
	if (is_firmware_add(ret))
		ret->age = udev_device_get_usec_since_initialized(d);
}

/* syspath: "/sys" and the event's DEVPATH, owned by the caller. */
static void event_from_kernel(const KernelUevent *k, const char *syspath, DeviceEvent *ret)
{
	*ret = (DeviceEvent){
		.action = k->action,
		.syspath = syspath,
		.devpath = k->devpath,
		.subsystem = k->subsystem,
		.firmware = k->firmware,
		.timeout = k->timeout,
		.seqnum = k->seqnum,
		.from_kernel = true,
	};
}

/* ino: the request directory's inode when the caller looked already, else 0. */
static void submit_device(Manager *m, const DeviceEvent *e, bool crowded, ino_t ino)
{
	_cleanup_free_ char *devpath = requester_devpath("/sys", e->syspath);

	(void)manager_submit(m, &(RequestInfo){
		.name = e->firmware,
		.sysfs_dir = e->syspath,
		.devpath = devpath,
		.timeout_sec = parse_timeout(e->timeout),
		.age = e->age,
		.origin = e->from_kernel ? "kernel" : "udev",
		.crowded = crowded,
		.ino = ino,
	});
}

/* The other copy of an event taken already (each comes once): forgets it. */
static bool taken_before(Manager *m, uint64_t seqnum)
{
	for (size_t i = 0; seqnum > 0 && i < ELEMENTSOF(m->taken_seqnums); i++)
		if (m->taken_seqnums[i] == seqnum) {
			m->taken_seqnums[i] = 0;
			return true;
		}
	return false;
}

/*
 * With both copies of each event, the first is taken and the second passed over. A
 * request gone already is passed over too: a scan may have taken and answered it before
 * its event was read, or udev's copy comes after the kernel's was taken, its SEQNUM since
 * pushed out by a burst. Except on the kernel's copy of a request whose device went with it
 * (unplugged before we could look): that is taken, so that it is logged. The kernel's copy
 * is queued before udev has even seen the event, and its source is dispatched first
 * (manager_udev_start): it is the first copy. *ret_ino: the directory's inode, 0 when gone.
 */
static bool take_first_copy(Manager *m, const DeviceEvent *e, ino_t *ret_ino)
{
	struct stat st;

	if (taken_before(m, e->seqnum))
		return false;
	if (stat(e->syspath, &st) < 0) {
		if (!(e->from_kernel && request_device_gone(e->syspath)))
			return false;
		st.st_ino = 0;
	}
	*ret_ino = st.st_ino;
	m->taken_seqnums[m->taken_next++ % ELEMENTSOF(m->taken_seqnums)] = e->seqnum;
	return true;
}

/*
 * Both copies may come: udev's beside the kernel's, whenever its monitor is open
 * (udev_tells()). The kernel's copy taken is remembered, so that udev's is passed over.
 */
static bool both_copies(Manager *m)
{
	return m->kernel_fd >= 0 && m->config->event_source == EVENT_SOURCE_UDEV;
}

/* Events come: a scan leaves a request it finds to its event (ask_kernel_again()). */
static bool events_come(Manager *m)
{
	return m->monitor || m->kernel_fd >= 0;
}

static void handle_device(Manager *m, const DeviceEvent *e, bool crowded)
{
	ino_t ino = 0;

	if (e->action && strcmp(e->subsystem ?: "", "module") == 0) {
		const char *sysname = strrchr(e->devpath ?: "", '/');

		if (sysname && strcmp(sysname + 1, COMPANION_MODULE_NAME) == 0 &&
		    companion_module_changed(m->companion, strcmp(e->action, "remove") != 0))
			manager_module_returned(m);
		return;
	}
	if (e->action && strcmp(e->action, "remove") == 0 && e->devpath) {
		/* a device firmware was served to is gone: its names may be no longer needed */
		sleep_device_removed(m->sleep, e->devpath);
		return;
	}
	if (!is_firmware_add(e))
		return;
	if (e->excluded) {
		log_debug("Ignoring firmware request %s: %s is set.", e->syspath, IGNORE_PROPERTY);
		return;
	}
	if (both_copies(m) && !take_first_copy(m, e, &ino))
		return;
	submit_device(m, e, crowded, ino);
}

/* A burst at boot must not overflow a socket; above the system's maximum only with
 * CAP_NET_ADMIN, which the unit does not grant (fine without). */
#define UEVENT_RCVBUF (8 * 1024 * 1024)

/* The most events read ahead of taking them. */
#define UEVENT_BATCH 64

typedef struct UeventBatch {
	DeviceEvent events[UEVENT_BATCH];
	struct udev_device *devices[UEVENT_BATCH];	/* udev's copies, which events[] read */
	char *syspaths[UEVENT_BATCH];			/* the kernel's copies' */
	size_t n;
	bool crowded;	/* more than one firmware request among them */
} UeventBatch;

/*
 * Reads what is queued, up to UEVENT_BATCH events, before any is taken: a burst of
 * requests answered one after another on the loop would make each wait for those before
 * it, which workers answer side by side (RequestInfo.crowded). False once none is left.
 */
static bool receive_batch(struct udev_monitor *monitor, UeventBatch *b)
{
	size_t n_requests = 0;

	for (b->n = 0; b->n < UEVENT_BATCH; b->n++) {
		b->syspaths[b->n] = NULL;
		b->devices[b->n] = udev_monitor_receive_device(monitor);
		if (!b->devices[b->n])
			break;
		event_from_udev(b->devices[b->n], &b->events[b->n]);
		n_requests += is_firmware_add(&b->events[b->n]);
	}
	b->crowded = n_requests > 1;
	return b->n > 0;
}

/*
 * The kernel's uevents beside udev's pass firmware requests only; alone, also what
 * udev's monitor would be told to pass (manager_udev_watch_subsystem()).
 */
static bool kernel_event_wanted(Manager *m, const KernelUevent *k)
{
	if (strcmp(k->subsystem, "firmware") == 0)
		return true;
	return !m->monitor && strv_contains(m->watched_subsystems, k->subsystem);
}

/* The same from the kernel's socket, each message into its own slot of m->kernel_messages. */
static bool receive_kernel_batch(Manager *m, UeventBatch *b)
{
	size_t n_requests = 0;
	KernelUevent k;
	int r;

	b->n = 0;
	while (b->n < UEVENT_BATCH) {
		char *slot = m->kernel_messages + b->n * (KERNEL_UEVENT_MAX + 1);

		r = kernel_uevent_receive(m->kernel_fd, slot, &k);
		if (r == -ENOBUFS) {
			log_warning("Kernel uevents were lost (receive buffer full); looking for requests.");
			m->kernel_lost = true;
			continue;
		}
		if (r == 0 && m->kernel_lost) {
			/*
			 * The requests among the lost are still in sysfs. Looked for once the socket
			 * is empty: until then the kernel drops what comes without saying so again,
			 * such as the event a scan asks it to repeat (ask_kernel_again()).
			 */
			m->kernel_lost = false;
			(void)manager_udev_scan(m, SCAN_AUTOMATIC);
		}
		if (r <= 0) {
			if (r < 0)
				log_debug_errno(r, "Failed to read the kernel's uevents: %m");
			break;
		}
		if (!kernel_event_wanted(m, &k))
			continue;
		b->devices[b->n] = NULL;
		b->syspaths[b->n] = path_join("/sys", k.devpath);
		if (!b->syspaths[b->n]) {
			log_oom();
			continue;
		}
		event_from_kernel(&k, b->syspaths[b->n], &b->events[b->n]);
		n_requests += is_firmware_add(&b->events[b->n]);
		b->n++;
	}
	b->crowded = n_requests > 1;
	return b->n > 0;
}

static void batch_done(UeventBatch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		udev_device_unref(b->devices[i]);
		free(b->syspaths[i]);
	}
}

static int on_uevent(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	Manager *m = userdata;
	UeventBatch b;

	while (receive_batch(m->monitor, &b)) {
		for (size_t i = 0; i < b.n; i++)
			handle_device(m, &b.events[i], b.crowded);
		batch_done(&b);
	}
	return 0;
}

static int open_udev_monitor(Manager *m)
{
	int r;

	m->monitor = udev_monitor_new_from_netlink(m->udev, "udev");
	if (!m->monitor)
		return log_error_errno(-EIO, "Failed to listen to udev events.");
	r = udev_monitor_filter_add_match_subsystem_devtype(m->monitor, "firmware", NULL);
	for (char **s = m->watched_subsystems; s && *s && r >= 0; s++)
		r = udev_monitor_filter_add_match_subsystem_devtype(m->monitor, *s, NULL);
	if (r < 0)
		return log_error_errno(r, "Failed to filter udev events: %m");
	(void)udev_monitor_set_receive_buffer_size(m->monitor, UEVENT_RCVBUF);
	r = udev_monitor_enable_receiving(m->monitor);
	if (r < 0)
		return log_error_errno(r, "Failed to receive udev events: %m");
	r = sd_event_add_io(m->event, &m->monitor_source, udev_monitor_get_fd(m->monitor), EPOLLIN,
			    on_uevent, m);
	if (r < 0)
		return log_error_errno(r, "Failed to watch udev events: %m");
	(void)sd_event_source_set_description(m->monitor_source, "udev");
	return 0;
}

static void close_udev_monitor(Manager *m)
{
	m->monitor_source = sd_event_source_disable_unref(m->monitor_source);
	m->monitor = udev_monitor_unref(m->monitor);
}

/*
 * udev's copies are needed only while a rule may exclude a request (FW_HELPERD_IGNORE):
 * without one, the kernel's copy is taken at once, and udev's would be read (a libudev
 * device each, the add and the remove) only to be passed over. So udev's monitor is open
 * exactly while a rule may exclude, and a change either way sets *rescan: a scan finds a
 * request whose copy fell between, udev's sent before the monitor was open, or one left
 * to udev's copy before the monitor closed. Asked at each request's kernel copy, as the
 * rules are read again lazily: true when a rule may exclude it, and udev's copy tells.
 */
static bool udev_tells(Manager *m, bool *rescan)
{
	if (!rules_watch_excludes(m->rules))
		return false;
	if (!m->monitor) {
		if (open_udev_monitor(m) < 0) {
			close_udev_monitor(m); /* tried again at the next request */
			return true;
		}
		log_debug("A udev rule may exclude requests: reading udev's events.");
		*rescan = true;
	}
	return true;
}

/*
 * No rule excludes any more. Once the request that showed it was taken: what udev sent
 * meanwhile is read (that request's own copy among it is passed over), then no more.
 */
static void stop_udev_copies(Manager *m, bool *rescan)
{
	(void)on_uevent(m->monitor_source, -1, EPOLLIN, m);
	close_udev_monitor(m);
	log_debug("No udev rule excludes requests: reading the kernel's events alone.");
	*rescan = true;
}

/*
 * The kernel's event. Beside a rules watch (EventSource=udev), a request's is taken unless
 * a udev rule may exclude it; everything else only while udev's monitor is closed.
 */
static int on_kernel_uevent(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	Manager *m = userdata;
	bool rescan = false;
	UeventBatch b;

	while (receive_kernel_batch(m, &b)) {
		for (size_t i = 0; i < b.n; i++) {
			const DeviceEvent *e = &b.events[i];

			if (!m->rules || !is_firmware_add(e)) {
				if (!m->monitor)
					handle_device(m, e, b.crowded);
			} else if (!udev_tells(m, &rescan)) {
				handle_device(m, e, b.crowded);
				if (m->monitor)
					stop_udev_copies(m, &rescan);
			}
		}
		batch_done(&b);
	}
	if (rescan)
		(void)manager_udev_scan(m, SCAN_AUTOMATIC);
	return 0;
}

static int open_kernel_uevents(Manager *m)
{
	int r;

	m->kernel_messages = malloc(UEVENT_BATCH * (KERNEL_UEVENT_MAX + 1));
	if (!m->kernel_messages)
		return log_oom();
	r = kernel_uevents_open(UEVENT_RCVBUF, &m->kernel_fd);
	if (r < 0)
		return log_error_errno(r, "Failed to listen to kernel events: %m");
	r = sd_event_add_io(m->event, &m->kernel_source, m->kernel_fd, EPOLLIN, on_kernel_uevent, m);
	if (r < 0)
		return log_error_errno(r, "Failed to watch kernel events: %m");
	(void)sd_event_source_set_description(m->kernel_source, "kernel");
	return 0;
}

static void close_kernel_uevents(Manager *m)
{
	m->kernel_source = sd_event_source_disable_unref(m->kernel_source);
	m->kernel_fd = safe_close(m->kernel_fd);
	m->kernel_messages = mfree(m->kernel_messages);
}

int manager_udev_start(Manager *m)
{
	int r;

	if (m->config->event_source == EVENT_SOURCE_NONE)
		return 0;
	/* also for udev's database, which scans consult (udev_verdict()) */
	m->udev = udev_new();
	if (!m->udev)
		return log_oom();
	if (m->config->event_source == EVENT_SOURCE_KERNEL)
		return open_kernel_uevents(m); /* "firmware" passes always: kernel_event_wanted() */
	/* The kernel's events are only a speed-up: udev's alone answer everything. */
	r = rules_watch_new(m->event, NULL, RULES_ABSENT_RETRY_USEC, &m->rules);
	if (r < 0) {
		log_warning_errno(r, "Cannot watch udev's rules, waiting for udev's events: %m");
		return open_udev_monitor(m);
	}
	if (open_kernel_uevents(m) < 0) {
		close_kernel_uevents(m);
		m->rules = rules_watch_free(m->rules);
		return open_udev_monitor(m);
	}
	/* Both readable in one iteration: the kernel's copies first (take_first_copy()). */
	(void)sd_event_source_set_priority(m->kernel_source, SD_EVENT_PRIORITY_NORMAL - 1);
	/* udev's only while a rule may exclude (udev_tells()); the start-up scan follows */
	return rules_watch_excludes(m->rules) ? open_udev_monitor(m) : 0;
}

void manager_udev_drain(Manager *m)
{
	/* the kernel's copies first, as when both are readable (manager_udev_start()) */
	if (m->kernel_fd >= 0)
		(void)on_kernel_uevent(m->kernel_source, -1, EPOLLIN, m);
	if (m->monitor)
		(void)on_uevent(m->monitor_source, -1, EPOLLIN, m);
}

/* Remembered for a monitor opened later; the kernel's events pass it (kernel_event_wanted()). */
int manager_udev_watch_subsystem(Manager *m, const char *subsystem)
{
	int r;

	if (!subsystem || strcmp(subsystem, "firmware") == 0 ||
	    strv_contains(m->watched_subsystems, subsystem))
		return 0;
	if (strv_extend(&m->watched_subsystems, subsystem) < 0)
		return log_oom();
	if (!m->monitor)
		return 0;
	r = udev_monitor_filter_add_match_subsystem_devtype(m->monitor, subsystem, NULL);
	if (r >= 0)
		r = udev_monitor_filter_update(m->monitor);
	if (r < 0)
		return log_debug_errno(r, "Failed to watch %s devices for removal: %m", subsystem);
	return 0;
}

void manager_udev_stop(Manager *m)
{
	close_udev_monitor(m);
	close_kernel_uevents(m);
	strv_free(m->watched_subsystems);
	m->watched_subsystems = NULL;
	m->rules = rules_watch_free(m->rules);
	m->udev = udev_unref(m->udev);
}

typedef enum UdevVerdict {
	UDEV_UNSEEN,	/* no database entry: not processed yet, or never sent (no uevent) */
	UDEV_TAKE,	/* processed, and an event went out: a uevent request */
	UDEV_EXCLUDED,	/* processed, and an admin's rule set FW_HELPERD_IGNORE=1 */
} UdevVerdict;

/*
 * What udev's database says of a request. Only a request with a uevent gets an entry (our
 * rule makes sure it has one while the daemon is away: FW_HELPERD_UEVENT); one without is
 * either still in udev's queue or was sent with no uevent at all.
 */
static UdevVerdict udev_verdict(Manager *m, const char *syspath)
{
	struct udev_device *d;
	UdevVerdict v;

	if (!m->udev)
		return UDEV_UNSEEN;
	d = udev_device_new_from_syspath(m->udev, syspath);
	if (!d)
		return UDEV_UNSEEN;
	v = !udev_device_get_is_initialized(d) ? UDEV_UNSEEN : is_excluded(d) ? UDEV_EXCLUDED : UDEV_TAKE;
	udev_device_unref(d);
	return v;
}

/* CustomFallback=: names (globs) or device paths (from "/devices/") that are ours too. */
static bool configured_custom_fallback(Manager *m, const char *name, const char *devpath)
{
	for (char **p = m->config->custom_fallback; p && *p; p++)
		if (**p == '/' ? devpath && fnmatch(*p, devpath, 0) == 0 : fnmatch(*p, name, 0) == 0)
			return true;
	return false;
}

/*
 * The kernel repeats a request's add event when asked to (as `udevadm trigger` does), but
 * never for one sent without a uevent: its device keeps uevents suppressed. So this hands a
 * uevent request to udev's rules (which may exclude it) and leaves another program's
 * no-uevent request (dell_rbu's BIOS upload, with no timeout) to that program.
 */
static void ask_kernel_again(Manager *m, const char *syspath)
{
	_cleanup_close_ int dirfd = -EBADF;
	int r;

	if (manager_knows_request(m, syspath))
		return;
	dirfd = open(syspath, O_PATH | O_DIRECTORY | O_CLOEXEC);
	r = dirfd < 0 ? -errno : write_string_at(dirfd, "uevent", "add");
	if (r < 0 && r != -ENOENT)
		log_debug_errno(r, "Cannot ask the kernel to repeat the event of %s: %m", syspath);
}

unsigned uevent_parse(char *text, char **ret_name)
{
	unsigned timeout = 0;
	char *line, *save = NULL;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
		if (startswith(line, "FIRMWARE=") && !*ret_name)
			*ret_name = strdup(line + strlen("FIRMWARE="));
		else if (startswith(line, "TIMEOUT="))
			timeout = parse_timeout(line + strlen("TIMEOUT="));
	}
	return timeout;
}

/* The request's uevent file repeats what its add event said. */
static unsigned read_uevent(const char *syspath, char **ret_name)
{
	_cleanup_free_ char *text = NULL;
	int dirfd;

	dirfd = open(syspath, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return 0;
	if (read_string_at(dirfd, "uevent", &text) < 0)
		text = NULL;
	close(dirfd);
	return uevent_parse(text, ret_name);
}

static bool same_as_dirname(const char *name, const char *dirname)
{
	for (; *name && *dirname; name++, dirname++)
		if (*name != *dirname && !(*name == '/' && *dirname == '!'))
			return false;
	return *name == *dirname;
}

static int scan_entry(Manager *m, int dirfd, const char *class_dir, const char *entry, ScanScope scope)
{
	_cleanup_free_ char *link = NULL, *name = NULL, *devpath = NULL;
	char syspath[PATH_MAX];
	UdevVerdict verdict;
	unsigned timeout;

	if (faccessat(dirfd, entry, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	link = malloc(strlen(entry) + sizeof("/loading"));
	if (!link)
		return log_oom();
	sprintf(link, "%s/loading", entry);
	if (faccessat(dirfd, link, F_OK, 0) < 0)
		return 0; /* the class's own files (timeout) and finished requests */
	free(link);
	link = path_join(class_dir, entry);
	if (!link)
		return log_oom();
	if (!realpath(link, syspath))
		return 0; /* gone meanwhile */
	verdict = udev_verdict(m, syspath);
	if (verdict == UDEV_EXCLUDED)
		return 0;
	timeout = read_uevent(syspath, &name);
	if (name && !same_as_dirname(name, entry))
		name = mfree(name); /* a newline in the name splits the uevent text: trust the dirent */
	if (!name && fw_name_from_sysfs(entry, &name) < 0)
		return log_oom();
	devpath = requester_devpath(m->options.sysfs_root, syspath);
	/* Without events (EventSource=none) scans are all there is. */
	if (scope == SCAN_AUTOMATIC && events_come(m) && verdict == UDEV_UNSEEN &&
	    !companion_owns_devpath(devpath) && !configured_custom_fallback(m, name, devpath)) {
		ask_kernel_again(m, syspath);
		return 0;
	}
	return manager_submit(m, &(RequestInfo){
		.name = name,
		.sysfs_dir = syspath,
		.devpath = devpath,
		.timeout_sec = timeout,
		.origin = "scan",
	});
}

int manager_udev_scan_one(Manager *m, const char *kobj, ino_t old_ino)
{
	_cleanup_free_ char *class_dir = NULL;
	struct stat st;
	int dirfd, r;

	class_dir = path_join(m->options.sysfs_root, "class/firmware");
	if (!class_dir)
		return log_oom();
	dirfd = open(class_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* the predecessor's directory lingers until the kernel's waiter deletes it */
	if (fstatat(dirfd, kobj, &st, 0) < 0 || st.st_ino == old_ino)
		r = 0;
	else
		r = scan_entry(m, dirfd, class_dir, kobj, SCAN_AUTOMATIC);
	close(dirfd);
	if (r > 0)
		log_debug("Took request %s, asked again while its predecessor was answered.", kobj);
	return r;
}

int manager_udev_scan(Manager *m, ScanScope scope)
{
	_cleanup_free_ char *class_dir = NULL;
	DIR *d;
	int found = 0;

	class_dir = path_join(m->options.sysfs_root, "class/firmware");
	if (!class_dir)
		return log_oom();
	d = opendir(class_dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	for (struct dirent *de; (de = readdir(d));) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (scan_entry(m, dirfd(d), class_dir, de->d_name, scope) > 0)
			found++;
	}
	closedir(d);
	if (found > 0)
		log_info("Found %d pending firmware requests.", found);
	return found;
}
