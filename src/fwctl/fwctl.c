/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "config.h"
#include "json.h"
#include "log.h"
#include "macro.h"
#include "util.h"

#define BUS_NAME "org.fwhelperd1"
#define BUS_PATH "/org/fwhelperd1"
#define BUS_INTERFACE "org.fwhelperd1.Manager"

/* Documented in --help; scripts rely on them. */
enum {
	EXIT_USAGE = 2,
	EXIT_NOT_RUNNING = 3,
	EXIT_PERMISSION = 4,
};

static bool arg_json;
static bool arg_ask_password = true;

/* Everything `fwctl status` shows: one field per property, filled by status_properties[]. */
typedef struct Status {
	char *version;
	char *state;
	char *event_source;
	uint64_t served;
	uint64_t failed;
	uint64_t missing;
	uint64_t rejected;
	uint64_t bytes_served;
	uint32_t in_flight;
	char **search_path;
	char **missing_firmware;
	char *sleep_state;
	uint32_t cache_entries;
	uint64_t cache_bytes;
} Status;

typedef struct PropertyMap {
	const char *name;
	const char *signature;
	size_t offset;
} PropertyMap;

static const PropertyMap status_properties[] = {
	{ "Version", "s", offsetof(Status, version) },
	{ "State", "s", offsetof(Status, state) },
	{ "EventSource", "s", offsetof(Status, event_source) },
	{ "Served", "t", offsetof(Status, served) },
	{ "Failed", "t", offsetof(Status, failed) },
	{ "Missing", "t", offsetof(Status, missing) },
	{ "Rejected", "t", offsetof(Status, rejected) },
	{ "BytesServed", "t", offsetof(Status, bytes_served) },
	{ "InFlight", "u", offsetof(Status, in_flight) },
	{ "SearchPath", "as", offsetof(Status, search_path) },
	{ "MissingFirmware", "as", offsetof(Status, missing_firmware) },
	{ "SleepState", "s", offsetof(Status, sleep_state) },
	{ "CacheEntries", "u", offsetof(Status, cache_entries) },
	{ "CacheBytes", "t", offsetof(Status, cache_bytes) },
};

static void status_done(Status *s)
{
	free(s->version);
	free(s->state);
	free(s->event_source);
	strv_free(s->search_path);
	strv_free(s->missing_firmware);
	free(s->sleep_state);
	*s = (Status){};
}

/*
 * Turns a failed call into one line for the user and the exit status scripts test:
 * "not running" and "permission denied" return their own positive codes, anything else the
 * negative errno (a plain failure).
 */
static int log_bus_error(int r, const sd_bus_error *error, const char *what)
{
	if (sd_bus_error_has_names(error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER)) {
		log_error("fw-helperd is not running (nobody owns %s on the system bus).", BUS_NAME);
		return EXIT_NOT_RUNNING;
	}
	if (sd_bus_error_has_name(error, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED)) {
		log_error("Failed to %s: authentication required (polkit), and %s.", what,
			  arg_ask_password ? "no agent asked for it" : "--no-ask-password was given");
		return EXIT_PERMISSION;
	}
	if (sd_bus_error_has_name(error, SD_BUS_ERROR_ACCESS_DENIED) || r == -EACCES || r == -EPERM) {
		log_error("Failed to %s: permission denied (%s)", what,
			  error->message ?: "polkit said no");
		return EXIT_PERMISSION;
	}
	if (sd_bus_error_is_set(error))
		return log_error_errno(r, "Failed to %s: %s", what, error->message ?: error->name);
	return log_error_errno(r, "Failed to %s: %m", what);
}

/*
 * Calls a method on the daemon without D-Bus activation: asking a stopped daemon how it is
 * must say "not running", not start it behind the administrator's back.
 */
static int call_daemon(sd_bus *bus, const char *interface, const char *member, sd_bus_error *error,
		       sd_bus_message **ret_reply, const char *types, ...)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
	va_list ap;
	int r;

	r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, BUS_PATH, interface, member);
	if (r < 0)
		return r;
	r = sd_bus_message_set_auto_start(m, false);
	if (r < 0)
		return r;
	if (types) {
		va_start(ap, types);
		r = sd_bus_message_appendv(m, types, ap);
		va_end(ap);
		if (r < 0)
			return r;
	}
	return sd_bus_call(bus, m, 0, error, ret_reply);
}

static const PropertyMap *property_map_find(const PropertyMap *map, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(map[i].name, name) == 0)
			return map + i;
	return NULL;
}

/* Reads the variant's contents (already entered) into the field the map points at. */
static int read_property_value(sd_bus_message *m, const PropertyMap *p, void *base)
{
	void *field = (char *)base + p->offset;
	const char *s;
	int r;

	switch (p->signature[0]) {
	case 's':
		r = sd_bus_message_read_basic(m, 's', &s);
		if (r < 0)
			return r;
		free(*(char **)field);
		*(char **)field = strdup(s);
		return *(char **)field ? 0 : -ENOMEM;
	case 't':
		return sd_bus_message_read_basic(m, 't', field);
	case 'u':
		return sd_bus_message_read_basic(m, 'u', field);
	case 'b': /* into an int, as sd-bus wants */
		return sd_bus_message_read_basic(m, 'b', field);
	case 'a': /* "as" is the only array fwctl maps */
		strv_free(*(char ***)field);
		*(char ***)field = NULL;
		return sd_bus_message_read_strv(m, (char ***)field);
	}
	return -EINVAL;
}

static int read_property(sd_bus_message *m, const PropertyMap *map, size_t n, void *base)
{
	const PropertyMap *p;
	const char *name;
	int r;

	r = sd_bus_message_read_basic(m, 's', &name);
	if (r < 0)
		return r;
	p = property_map_find(map, n, name);
	if (!p)
		return sd_bus_message_skip(m, "v");
	r = sd_bus_message_enter_container(m, 'v', p->signature);
	if (r == -ENXIO)
		return log_debug_errno(-EBADMSG, "Property %s is not of type '%s'.", name, p->signature);
	if (r < 0)
		return r;
	r = read_property_value(m, p, base);
	if (r < 0)
		return r;
	return sd_bus_message_exit_container(m);
}

/* One GetAll round trip; properties this fwctl does not know (a newer daemon) are skipped. */
static int get_all_properties(sd_bus *bus, const PropertyMap *map, size_t n, void *base,
			      sd_bus_error *error)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	int r;

	r = call_daemon(bus, "org.freedesktop.DBus.Properties", "GetAll", error, &reply, "s",
			BUS_INTERFACE);
	if (r < 0)
		return r;
	r = sd_bus_message_enter_container(reply, 'a', "{sv}");
	if (r < 0)
		return r;
	while ((r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
		r = read_property(reply, map, n, base);
		if (r < 0)
			return r;
		r = sd_bus_message_exit_container(reply);
		if (r < 0)
			return r;
	}
	if (r < 0)
		return r;
	r = sd_bus_message_exit_container(reply);
	return r < 0 ? r : 0;
}

/* "4.0K", "12.5M": 1024-based like the rest of the project's sizes (see parse_size()). */
static const char *format_bytes(char *buf, size_t size, uint64_t bytes)
{
	static const char suffixes[] = "KMGTPE";
	double v = (double)bytes;
	size_t i;

	if (bytes < 1024) {
		snprintf(buf, size, "%" PRIu64 "B", bytes);
		return buf;
	}
	for (i = 0; v >= 1024.0 * 1024.0 && i < sizeof(suffixes) - 2; i++)
		v /= 1024.0;
	snprintf(buf, size, "%.1f%c", v / 1024.0, suffixes[i]);
	return buf;
}

#define KEY_WIDTH 16

/*
 * Values come from the kernel's requests: control bytes are shown escaped, never raw.
 * Without a key, the value continues the list above it, aligned with its first value.
 */
static void print_field(const char *key, const char *value)
{
	_cleanup_free_ char *escaped = cescape(value ?: "n/a");

	printf("%*s%s %s\n", KEY_WIDTH, key ?: "", key ? ":" : " ", escaped ?: "n/a");
}

static void print_list(const char *key, char **l, const char *empty)
{
	if (!l || !*l) {
		print_field(key, empty);
		return;
	}
	for (char **i = l; *i; i++)
		print_field(i == l ? key : NULL, *i);
}

static void print_u64(const char *key, uint64_t v)
{
	printf("%*s: %" PRIu64 "\n", KEY_WIDTH, key, v);
}

static void print_status(const Status *s)
{
	char bytes[32];

	print_field("Version", s->version);
	print_field("State", s->state);
	print_field("Event source", s->event_source);
	print_u64("Served", s->served);
	print_u64("Failed", s->failed);
	print_u64("Missing", s->missing);
	print_u64("Rejected", s->rejected);
	printf("%*s: %" PRIu64 " (%s)\n", KEY_WIDTH, "Bytes served", s->bytes_served,
	       format_bytes(bytes, sizeof(bytes), s->bytes_served));
	print_u64("In flight", s->in_flight);
	print_list("Search path", s->search_path, "(none)");
	print_list("Missing firmware", s->missing_firmware, "(none)");
	print_field("Sleep state", s->sleep_state);
	printf("%*s: %" PRIu32 " images, %" PRIu64 " bytes (%s)\n", KEY_WIDTH, "Held in memory",
	       s->cache_entries, s->cache_bytes, format_bytes(bytes, sizeof(bytes), s->cache_bytes));
}

static int verb_status_json(sd_bus *bus)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	_cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
	const char *json;
	int r;

	r = call_daemon(bus, BUS_INTERFACE, "Describe", &error, &reply, NULL);
	if (r >= 0)
		r = sd_bus_message_read(reply, "s", &json);
	if (r < 0)
		return log_bus_error(r, &error, "describe fw-helperd's state");
	puts(json);
	return 0;
}

static int verb_status(sd_bus *bus, int argc, char *argv[])
{
	_cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
	_cleanup_(status_done) Status s = {};
	int r;

	if (arg_json)
		return verb_status_json(bus);

	r = get_all_properties(bus, status_properties, ELEMENTSOF(status_properties), &s, &error);
	if (r < 0)
		return log_bus_error(r, &error, "read fw-helperd's properties");
	print_status(&s);
	return 0;
}

static int verb_reload(sd_bus *bus, int argc, char *argv[])
{
	_cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
	int r;

	r = call_daemon(bus, BUS_INTERFACE, "Reload", &error, NULL, NULL);
	if (r < 0)
		return log_bus_error(r, &error, "reload fw-helperd");
	return 0;
}

static int print_rescan_json(uint32_t found)
{
	_cleanup_free_ char *text = NULL;
	JsonWriter w;
	int r;

	r = json_writer_init(&w);
	if (r < 0)
		return log_oom();
	json_object_begin(&w);
	json_key(&w, "found");
	json_uint(&w, found);
	json_object_end(&w);
	r = json_writer_finish(&w, &text);
	if (r < 0)
		return log_oom();
	puts(text);
	return 0;
}

static int verb_rescan(sd_bus *bus, int argc, char *argv[])
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	_cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
	uint32_t found;
	int r;

	r = call_daemon(bus, BUS_INTERFACE, "Rescan", &error, &reply, NULL);
	if (r >= 0)
		r = sd_bus_message_read(reply, "u", &found);
	if (r < 0)
		return log_bus_error(r, &error, "rescan for pending firmware requests");
	if (arg_json)
		return print_rescan_json(found);
	printf("Found %" PRIu32 " pending firmware request%s.\n", found, found == 1 ? "" : "s");
	return 0;
}

static int print_prewarm_json(uint32_t entries, uint64_t bytes)
{
	_cleanup_free_ char *text = NULL;
	JsonWriter w;
	int r;

	r = json_writer_init(&w);
	if (r < 0)
		return log_oom();
	json_object_begin(&w);
	json_key(&w, "cache_entries");
	json_uint(&w, entries);
	json_key(&w, "cache_bytes");
	json_uint(&w, bytes);
	json_object_end(&w);
	r = json_writer_finish(&w, &text);
	if (r < 0)
		return log_oom();
	puts(text);
	return 0;
}

static int verb_prewarm(sd_bus *bus, int argc, char *argv[])
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	_cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
	uint32_t entries;
	uint64_t bytes;
	char size[32];
	int r;

	r = call_daemon(bus, BUS_INTERFACE, "Prewarm", &error, &reply, NULL);
	if (r >= 0)
		r = sd_bus_message_read(reply, "ut", &entries, &bytes);
	if (r < 0)
		return log_bus_error(r, &error, "prewarm firmware");
	if (arg_json)
		return print_prewarm_json(entries, bytes);
	printf("Holding %" PRIu32 " firmware image%s in memory (%s).\n", entries,
	       entries == 1 ? "" : "s", format_bytes(size, sizeof(size), bytes));
	return 0;
}

/* One entry of ListFirmware(): (name, size, source, devices). */
typedef struct FirmwareEntry {
	const char *name;
	uint64_t size;
	const char *source;
	char **devices;
} FirmwareEntry;

static int read_firmware_entry(sd_bus_message *reply, FirmwareEntry *e)
{
	int r;

	r = sd_bus_message_enter_container(reply, 'r', "stsas");
	if (r <= 0)
		return r;
	r = sd_bus_message_read(reply, "sts", &e->name, &e->size, &e->source);
	if (r < 0)
		return r;
	r = sd_bus_message_read_strv(reply, &e->devices);
	if (r < 0)
		return r;
	r = sd_bus_message_exit_container(reply);
	return r < 0 ? r : 1;
}

static void print_firmware_json(JsonWriter *w, const FirmwareEntry *e)
{
	json_object_begin(w);
	json_key(w, "name");
	json_string(w, e->name);
	json_key(w, "size");
	json_uint(w, e->size);
	json_key(w, "source");
	json_string(w, e->source);
	json_key(w, "devices");
	json_array_begin(w);
	for (char **d = e->devices; d && *d; d++)
		json_string(w, *d);
	json_array_end(w);
	json_object_end(w);
}

static void print_firmware(const FirmwareEntry *e)
{
	_cleanup_free_ char *name = cescape(e->name);
	char size[32];

	printf("%-40s %8s  %-18s", name ?: "?", e->size ? format_bytes(size, sizeof(size), e->size) : "-",
	       e->source);
	for (char **d = e->devices; d && *d; d++) {
		_cleanup_free_ char *dev = cescape(*d);

		printf("%s%s", d == e->devices ? " " : ", ", dev ?: "?");
	}
	putchar('\n');
}

static int verb_list(sd_bus *bus, int argc, char *argv[])
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	_cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
	_cleanup_free_ char *text = NULL;
	JsonWriter w;
	unsigned n = 0;
	int r;

	r = call_daemon(bus, BUS_INTERFACE, "ListFirmware", &error, &reply, NULL);
	if (r >= 0)
		r = sd_bus_message_enter_container(reply, 'a', "(stsas)");
	if (r < 0)
		return log_bus_error(r, &error, "list the firmware fw-helperd keeps track of");
	if (arg_json && json_writer_init(&w) < 0)
		return log_oom();
	if (arg_json)
		json_array_begin(&w);
	else
		printf("%-40s %8s  %-18s %s\n", "NAME", "SIZE", "SOURCE", "DEVICES");
	for (;;) {
		FirmwareEntry e = {};

		r = read_firmware_entry(reply, &e);
		if (r <= 0)
			break;
		if (arg_json)
			print_firmware_json(&w, &e);
		else
			print_firmware(&e);
		strv_free(e.devices);
		n++;
	}
	if (r < 0) {
		if (arg_json)
			json_writer_done(&w);
		return log_error_errno(r, "Bad reply to ListFirmware(): %m");
	}
	if (arg_json) {
		json_array_end(&w);
		if (json_writer_finish(&w, &text) < 0)
			return log_oom();
		puts(text);
	} else
		printf("\n%u firmware name%s.\n", n, n == 1 ? "" : "s");
	return 0;
}

typedef struct Verb {
	const char *name;
	unsigned min_args; /* counting the verb itself */
	unsigned max_args;
	bool is_default;
	/* Returns 0, a positive exit status, or a negative errno (exit status 1). */
	int (*dispatch)(sd_bus *bus, int argc, char *argv[]);
} Verb;

static const Verb verbs[] = {
	{ "status", 1, 1, true, verb_status },
	{ "reload", 1, 1, false, verb_reload },
	{ "rescan", 1, 1, false, verb_rescan },
	{ "list", 1, 1, false, verb_list },
	{ "prewarm", 1, 1, false, verb_prewarm },
};

static void help(void)
{
	printf("%s [OPTIONS...] COMMAND\n\n"
	       "Query and control fw-helperd, the firmware helper daemon.\n\n"
	       "Commands:\n"
	       "  status                 Show state, counters, search path and missing firmware\n"
	       "                         (the default)\n"
	       "  reload                 Re-read the configuration (authorised by polkit)\n"
	       "  rescan                 Answer firmware requests that are pending in sysfs\n"
	       "                         (authorised by polkit)\n"
	       "  list                   Show the firmware needed across suspend: name, size,\n"
	       "                         source (served, hint, config) and devices\n"
	       "  prewarm                Read that firmware into memory now, as before sleep\n"
	       "                         (authorised by polkit)\n"
	       "\nOptions:\n"
	       "  -h --help              Show this help\n"
	       "     --version           Show package version\n"
	       "     --json              Print machine-readable JSON (status: the daemon's\n"
	       "                         Describe() document)\n"
	       "     --no-ask-password   Do not ask for a password to authorise reload, rescan\n"
	       "                         and prewarm (polkit); fail instead\n"
	       "\nExit status:\n"
	       "  0  success\n"
	       "  1  the operation failed\n"
	       "  2  usage error\n"
	       "  3  fw-helperd is not running\n"
	       "  4  permission denied (polkit said no, or asked for a password\n"
	       "     that was not given)\n"
	       "\nThe system bus is found through $DBUS_SYSTEM_BUS_ADDRESS, if set.\n"
	       "See the fwctl(1) man page for details.\n",
	       program_invocation_short_name);
}

/* Returns 1 to go on, 0 to exit successfully (--help, --version), < 0 on a usage error. */
static int parse_argv(int argc, char *argv[])
{
	enum {
		ARG_VERSION = 0x100,
		ARG_JSON,
		ARG_NO_ASK_PASSWORD,
	};
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, ARG_VERSION },
		{ "json", no_argument, NULL, ARG_JSON },
		{ "no-ask-password", no_argument, NULL, ARG_NO_ASK_PASSWORD },
		{}
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
		switch (c) {
		case 'h':
			help();
			return 0;
		case ARG_VERSION:
			printf("fwctl %s\n", PACKAGE_VERSION);
			return 0;
		case ARG_JSON:
			arg_json = true;
			break;
		case ARG_NO_ASK_PASSWORD:
			arg_ask_password = false;
			break;
		case '?':
			return -EINVAL; /* getopt_long() said why */
		default:
			return -EINVAL;
		}
	}
	return 1;
}

/* The verb argv names (or the default one), or NULL after saying what is wrong. */
static const Verb *find_verb(int argc, char *argv[])
{
	unsigned n_args = argc > 0 ? (unsigned)argc : 1;
	const Verb *verb = NULL;

	for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
		if (argc > 0 ? strcmp(verbs[i].name, argv[0]) == 0 : verbs[i].is_default)
			verb = verbs + i;
	if (!verb) {
		log_error("Unknown command '%s', see '%s --help'.", argv[0], program_invocation_short_name);
		return NULL;
	}
	if (n_args < verb->min_args || n_args > verb->max_args) {
		log_error("Too %s arguments for '%s'.", n_args < verb->min_args ? "few" : "many",
			  verb->name);
		return NULL;
	}
	return verb;
}

static int run(int argc, char *argv[])
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	const Verb *verb;
	int r;

	log_set_target(LOG_TARGET_STDERR);

	r = parse_argv(argc, argv);
	if (r <= 0)
		return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
	verb = find_verb(argc - optind, argv + optind);
	if (!verb)
		return EXIT_USAGE;

	r = sd_bus_open_system(&bus);
	if (r < 0) {
		log_error_errno(r, "Failed to connect to the system bus: %m");
		return EXIT_FAILURE;
	}
	/* polkit may ask for a password through an agent (a desktop's, or pkttyagent) */
	(void)sd_bus_set_allow_interactive_authorization(bus, arg_ask_password);
	r = verb->dispatch(bus, argc - optind, argv + optind);
	if (fflush(stdout) != 0 && r >= 0) {
		log_error_errno(negative_errno(), "Failed to write to standard output: %m");
		return EXIT_FAILURE;
	}
	return r < 0 ? EXIT_FAILURE : r;
}

int main(int argc, char *argv[])
{
	return run(argc, argv);
}
