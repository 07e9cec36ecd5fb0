/* SPDX-License-Identifier: MIT */
/*
 * fw-helperd-guard DEVPATH: run by udev (50-firmware.rules) for a firmware request that
 * arrives while fw-helperd is not listening. It asks systemd to start the daemon and waits
 * while the daemon is on its way; the daemon's first scan answers the request. When the
 * daemon cannot run (unit masked or gone, failed with a broken configuration, stopped by its
 * start limit, no systemd at all) the guard answers -1 at once, as udev's own stub did, so
 * that no driver waits out the kernel's timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "fw-helperd-guard-verdict.h"
#include "fw-helperd-messages.h"
#include "log.h"
#include "util.h"

#define UNIT "fw-helperd.service"
#define LISTENING_FLAG RUNTIME_DIR "/listening"
#define POLL_USEC (10 * USEC_PER_MSEC)
/* Without systemd nothing starts the daemon: give one already starting by hand a moment. */
#define NO_SYSTEMD_PATIENCE_USEC (500 * USEC_PER_MSEC)
/* How long a starting daemon may take before the guard answers for it; a start job that
 * waits behind early boot is usually done within a second or two. */
#define START_PATIENCE_USEC (15 * USEC_PER_SEC)

static const char *arg_sysfs_root = "/sys";

static int connect_systemd(sd_bus **ret)
{
	sd_bus *bus = NULL;
	int r;

	/* PID 1's own socket: no dbus-daemon needed (early boot, dbus down). */
	r = sd_bus_new(&bus);
	if (r < 0)
		return r;
	r = sd_bus_set_address(bus, "unix:path=/run/systemd/private");
	if (r >= 0)
		r = sd_bus_start(bus);
	if (r < 0) {
		sd_bus_unref(bus);
		bus = NULL;
		r = sd_bus_open_system(&bus);
		if (r < 0)
			return r;
	}
	*ret = bus;
	return 0;
}

/* The unit's state now; 0, or a negative errno when systemd cannot be asked. */
static int unit_state(sd_bus *bus, const char *path, char **ret_load, char **ret_active,
		      uint32_t *ret_job)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	uint32_t job = 0;
	int r;

	r = sd_bus_get_property_string(bus, "org.freedesktop.systemd1", path,
				       "org.freedesktop.systemd1.Unit", "LoadState", &error, ret_load);
	if (r >= 0)
		r = sd_bus_get_property_string(bus, "org.freedesktop.systemd1", path,
					       "org.freedesktop.systemd1.Unit", "ActiveState", &error,
					       ret_active);
	if (r >= 0)
		r = sd_bus_get_property(bus, "org.freedesktop.systemd1", path,
					"org.freedesktop.systemd1.Unit", "Job", &error, &reply, "(uo)");
	if (r >= 0)
		r = sd_bus_message_read(reply, "(uo)", &job, NULL);
	sd_bus_message_unref(reply);
	sd_bus_error_free(&error);
	if (r < 0)
		return r;
	*ret_job = job;
	return 0;
}

/* Starts the unit without waiting; returns its object path, or a negative errno with the
 * reason in *error (masked, not found, ...). */
static int start_unit(sd_bus *bus, sd_bus_error *error, char **ret_path)
{
	sd_bus_message *reply = NULL;
	const char *path;
	int r;

	r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
			       "org.freedesktop.systemd1.Manager", "StartUnit", error, NULL, "ss",
			       UNIT, "replace");
	if (r < 0)
		return r;
	r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
			       "org.freedesktop.systemd1.Manager", "GetUnit", error, &reply, "s", UNIT);
	if (r >= 0)
		r = sd_bus_message_read(reply, "o", &path);
	if (r >= 0 && !(*ret_path = strdup(path)))
		r = -ENOMEM;
	sd_bus_message_unref(reply);
	return r;
}

/* 1 while the request waits for an answer; 0 once answered or gone. */
static int request_pending(int dirfd)
{
	return faccessat(dirfd, "loading", F_OK, 0) >= 0;
}

/* The request's directory is named after the firmware, with '/' shown as '!' (kobject names). */
static char *firmware_name(const char *devpath)
{
	const char *slash = strrchr(devpath, '/');
	char *name = strdup(slash ? slash + 1 : devpath);

	for (char *p = name; p && *p; p++)
		if (*p == '!')
			*p = '/';
	return name;
}

static void answer_abort(int dirfd, const char *devpath, const char *why)
{
	_cleanup_free_ char *firmware = firmware_name(devpath);
	LogEntry e = {};
	int r;

	r = write_string_at(dirfd, "loading", "-1");
	if (r == -ENOENT)
		return; /* answered or gone meanwhile */
	log_entry_add(&e, "FIRMWARE=%s", firmware ?: "");
	log_entry_add(&e, "DEVPATH=%s", devpath);
	log_entry_add(&e, "FW_RESULT=aborted");
	log_entry_add(&e, "FW_REASON=%s", why);
	log_entry_send(&e, r < 0 ? LOG_ERR : LOG_WARNING, r, FW_MESSAGE_GUARD,
		       r < 0 ? "Failed to abort firmware request %s while fw-helperd cannot run (%s): %m" :
			       "Firmware request %s aborted: fw-helperd cannot answer it (%s).",
		       firmware ?: devpath, why);
}

static int guard(const char *devpath)
{
	_cleanup_free_ char *dir = NULL, *unit_path = NULL;
	_cleanup_close_ int dirfd = -EBADF;
	sd_bus_error error = SD_BUS_ERROR_NULL;
	sd_bus *bus = NULL;
	const char *why = NULL;
	usec_t start = now_usec(CLOCK_MONOTONIC);

	dir = path_join(arg_sysfs_root, devpath);
	if (!dir)
		return log_oom();
	dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return 0; /* gone before we looked */

	if (connect_systemd(&bus) < 0)
		why = "no-systemd";
	else if (start_unit(bus, &error, &unit_path) < 0)
		why = sd_bus_error_has_name(&error, "org.freedesktop.systemd1.UnitMasked") ?
			      "unit-masked" : "unit-not-startable";
	sd_bus_error_free(&error);

	for (;;) {
		_cleanup_free_ char *load = NULL, *active = NULL;
		usec_t waited = now_usec(CLOCK_MONOTONIC) - start;
		uint32_t job = 0;

		if (!request_pending(dirfd) || access(LISTENING_FLAG, F_OK) >= 0)
			break;
		if (!why && unit_state(bus, unit_path, &load, &active, &job) < 0)
			why = "no-systemd";
		if (why) {
			if (waited < NO_SYSTEMD_PATIENCE_USEC && strcmp(why, "no-systemd") == 0) {
				(void)usleep(POLL_USEC);
				continue;
			}
			answer_abort(dirfd, devpath, why);
			break;
		}
		if (guard_verdict(load, active, job) == GUARD_ABORT)
			why = strcmp(load, "loaded") != 0 ? "unit-not-loaded" :
			      strcmp(active, "failed") == 0 ? "unit-failed" : "unit-stopped";
		else if (waited >= START_PATIENCE_USEC)
			why = "start-timeout";
		else
			(void)usleep(POLL_USEC);
	}
	sd_bus_flush_close_unref(bus);
	return 0;
}

int main(int argc, char *argv[])
{
	const char *root = getenv("FW_HELPERD_SYSFS_ROOT");

	if (argc != 2 || argv[1][0] != '/') {
		fprintf(stderr, "Usage: %s DEVPATH\n"
				"Run by udev for a firmware request while fw-helperd is not running.\n",
			program_invocation_short_name);
		return 2;
	}
	if (root && root[0] == '/')
		arg_sysfs_root = root; /* tests against a fixture tree */
	/* udev gives RUN programs no journal stream of their own */
	log_set_target(LOG_TARGET_JOURNAL);
	return guard(argv[1]) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
