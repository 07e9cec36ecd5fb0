/* SPDX-License-Identifier: MIT */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fw-helperd-kmod.h"
#include "fw-helperd-manager.h"
#include "log.h"

/* sysexits.h's EX_CONFIG: the unit does not restart on it (RestartPreventExitStatus=). */
#define EXIT_CONFIG 78

/* Where drop-ins are looked for, highest priority first, as systemd looks for its own. */
static char *const default_dropin_dirs[] = {
	CONFIG_DROPIN_DIR,
	RUNTIME_DIR "/fw-helperd.conf.d",
	"/usr/local/lib/fw-helperd/fw-helperd.conf.d",
	"/usr/lib/fw-helperd/fw-helperd.conf.d",
	NULL,
};
/* --config-dir=DIR: that one directory instead */
static char *arg_dropin_dir[2];

static ManagerOptions arg_options = {
	.config_file = CONFIG_FILE,
	.config_dropin_dirs = default_dropin_dirs,
	.event_source = -1,
};
static bool arg_check_config;
static bool arg_log_level_set;
static bool arg_load_module;

static void help(void)
{
	printf("%s [OPTIONS...]\n\n"
	       "Answers the kernel's firmware requests from the firmware search path.\n\n"
	       "Options:\n"
	       "  -h --help                 Show this help\n"
	       "     --version              Show package version\n"
	       "     --config=FILE          Configuration file (default: %s)\n"
	       "     --config-dir=DIR       Read drop-ins from DIR only (default: %s\n"
	       "                            and the same under /run, /usr/local/lib, /usr/lib)\n"
	       "     --check-config         Parse the configuration, report problems and exit\n"
	       "     --load-module          Load the companion module as [Module] Mode= says and exit\n"
	       "     --event-source=SOURCE  udev, kernel or none (overrides EventSource=)\n"
	       "     --no-bus               Do not connect to the system bus\n"
	       "     --sysfs-root=DIR       Where sysfs is mounted (default: /sys)\n"
	       "     --firmware-prefix=DIR  Prefix for the kernel's built-in firmware roots\n"
	       "     --log-level=LEVEL      emerg..debug (default: info)\n"
	       "     --log-target=TARGET    auto, journal or stderr (default: auto)\n"
	       "\nSee the fw-helperd(8) man page for details.\n",
	       program_invocation_short_name, CONFIG_FILE, CONFIG_DROPIN_DIR);
}

enum {
	ARG_VERSION = 0x100,
	ARG_CONFIG,
	ARG_CONFIG_DIR,
	ARG_CHECK_CONFIG,
	ARG_LOAD_MODULE,
	ARG_EVENT_SOURCE,
	ARG_NO_BUS,
	ARG_SYSFS_ROOT,
	ARG_FIRMWARE_PREFIX,
	ARG_LOG_LEVEL,
	ARG_LOG_TARGET,
};

static int parse_argv(int argc, char *argv[])
{
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, ARG_VERSION },
		{ "config", required_argument, NULL, ARG_CONFIG },
		{ "config-dir", required_argument, NULL, ARG_CONFIG_DIR },
		{ "check-config", no_argument, NULL, ARG_CHECK_CONFIG },
		{ "load-module", no_argument, NULL, ARG_LOAD_MODULE },
		{ "event-source", required_argument, NULL, ARG_EVENT_SOURCE },
		{ "no-bus", no_argument, NULL, ARG_NO_BUS },
		{ "sysfs-root", required_argument, NULL, ARG_SYSFS_ROOT },
		{ "firmware-prefix", required_argument, NULL, ARG_FIRMWARE_PREFIX },
		{ "log-level", required_argument, NULL, ARG_LOG_LEVEL },
		{ "log-target", required_argument, NULL, ARG_LOG_TARGET },
		{}
	};
	int c, r;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
		switch (c) {
		case 'h':
			help();
			return 0;
		case ARG_VERSION:
			printf("fw-helperd %s\n", PACKAGE_VERSION);
			return 0;
		case ARG_CONFIG:
			arg_options.config_file = optarg;
			break;
		case ARG_CONFIG_DIR:
			arg_dropin_dir[0] = optarg;
			arg_options.config_dropin_dirs = arg_dropin_dir;
			break;
		case ARG_CHECK_CONFIG:
			arg_check_config = true;
			break;
		case ARG_LOAD_MODULE:
			arg_load_module = true;
			break;
		case ARG_EVENT_SOURCE:
			arg_options.event_source = event_source_from_string(optarg);
			if (arg_options.event_source < 0)
				return log_error_errno(-EINVAL, "Unknown event source '%s'.", optarg);
			break;
		case ARG_NO_BUS:
			arg_options.no_bus = true;
			break;
		case ARG_SYSFS_ROOT:
			arg_options.sysfs_root = optarg;
			break;
		case ARG_FIRMWARE_PREFIX:
			arg_options.firmware_prefix = optarg;
			break;
		case ARG_LOG_LEVEL:
			r = log_level_from_string(optarg);
			if (r < 0)
				return log_error_errno(r, "Unknown log level '%s'.", optarg);
			log_set_max_level(r);
			arg_log_level_set = true;
			break;
		case ARG_LOG_TARGET:
			r = log_target_from_string(optarg);
			if (r < 0)
				return log_error_errno(r, "Unknown log target '%s'.", optarg);
			log_set_target(r);
			break;
		case '?':
			return -EINVAL;
		default:
			return -EINVAL;
		}
	if (optind < argc)
		return log_error_errno(-EINVAL, "%s takes no arguments.", program_invocation_short_name);
	return 1;
}

static int check_config(void)
{
	_cleanup_(config_freep) Config *c = NULL;
	int r;

	r = config_load(arg_options.config_file, arg_options.config_dropin_dirs, &c);
	if (r < 0)
		return EXIT_CONFIG;
	printf("Configuration OK.\n");
	return EXIT_SUCCESS;
}

/*
 * For the unit's ExecStartPre=: the module's sysfs directory must exist before the service's
 * sandbox is set up, or ProtectKernelTunables= leaves it read-only to the daemon
 * (ReadWritePaths= skips what does not exist yet). Problems are logged by the daemon itself.
 */
static int load_module(void)
{
	_cleanup_(config_freep) Config *c = NULL;
	_cleanup_(companion_freep) Companion *companion = NULL;
	_cleanup_(sd_event_unrefp) sd_event *e = NULL;

	if (config_load(arg_options.config_file, arg_options.config_dropin_dirs, &c) < 0)
		return EXIT_CONFIG;
	if (sd_event_default(&e) < 0)
		return EXIT_FAILURE;
	if (!arg_log_level_set)
		log_set_max_level(LOG_WARNING); /* the daemon itself says what it uses */
	return companion_new(e, arg_options.sysfs_root, c->companion_mode, &companion) < 0 ?
		EXIT_FAILURE : EXIT_SUCCESS;
}

static int run(void)
{
	_cleanup_(manager_freep) Manager *m = NULL;
	int r;

	if (arg_check_config)
		return check_config();
	if (arg_load_module)
		return load_module();
	r = manager_new(&arg_options, &m);
	if (r == MANAGER_UNRECOVERABLE)
		return EXIT_CONFIG;
	if (r < 0)
		return EXIT_FAILURE;
	r = manager_run(m);
	if (r == MANAGER_UNRECOVERABLE)
		return EXIT_CONFIG;
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

int main(int argc, char *argv[])
{
	int r;

	r = parse_argv(argc, argv);
	if (r <= 0)
		return r < 0 ? 2 : EXIT_SUCCESS;
	return run();
}
