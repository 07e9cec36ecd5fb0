/* SPDX-License-Identifier: MIT */
#include <stddef.h>
#include <stdlib.h>
#include <systemd/sd-bus.h>

#include "config.h"
#include "fw-helperd-bus.h"
#include "fw-helperd-manager.h"
#include "fw-helperd-polkit.h"
#include "fw-helperd-sleep.h"
#include "json.h"
#include "log.h"
#include "utf8.h"

static int property_get_version(sd_bus *bus, const char *path, const char *interface,
				const char *property, sd_bus_message *reply, void *userdata,
				sd_bus_error *error)
{
	return sd_bus_message_append(reply, "s", PACKAGE_VERSION);
}

static int property_get_state(sd_bus *bus, const char *path, const char *interface,
			      const char *property, sd_bus_message *reply, void *userdata,
			      sd_bus_error *error)
{
	Manager *m = userdata;

	return sd_bus_message_append(reply, "s", manager_state_to_string(m->state));
}

static int property_get_event_source(sd_bus *bus, const char *path, const char *interface,
				     const char *property, sd_bus_message *reply, void *userdata,
				     sd_bus_error *error)
{
	Manager *m = userdata;

	return sd_bus_message_append(reply, "s", event_source_to_string(m->config->event_source));
}

/*
 * Firmware names, device and file paths are bytes; a D-Bus string must be UTF-8 or sd-bus
 * refuses the whole message. Bytes that are not are sent as \xNN (the journal has them raw).
 */
static int append_escaped(sd_bus_message *reply, const char *s)
{
	_cleanup_free_ char *escaped = utf8_escape(s, 0);

	if (!escaped)
		return -ENOMEM;
	return sd_bus_message_append(reply, "s", escaped);
}

static int append_escaped_strv(sd_bus_message *reply, char * const *l)
{
	int r;

	r = sd_bus_message_open_container(reply, 'a', "s");
	if (r < 0)
		return r;
	for (; l && *l; l++) {
		r = append_escaped(reply, *l);
		if (r < 0)
			return r;
	}
	return sd_bus_message_close_container(reply);
}

static int property_get_search_path(sd_bus *bus, const char *path, const char *interface,
				    const char *property, sd_bus_message *reply, void *userdata,
				    sd_bus_error *error)
{
	_cleanup_strv_free_ char **roots = NULL;
	Manager *m = userdata;
	int r;

	r = manager_search_roots(m, &roots);
	if (r < 0)
		return r;
	return append_escaped_strv(reply, roots);
}

static int property_get_missing(sd_bus *bus, const char *path, const char *interface,
				const char *property, sd_bus_message *reply, void *userdata,
				sd_bus_error *error)
{
	Manager *m = userdata;
	int r;

	r = sd_bus_message_open_container(reply, 'a', "s");
	if (r < 0)
		return r;
	for (MissingEntry *e = m->missing; e; e = e->next) {
		r = append_escaped(reply, e->name);
		if (r < 0)
			return r;
	}
	return sd_bus_message_close_container(reply);
}

/* Counters live in Manager; the vtable's offset points userdata at the field. */
static int property_get_u64(sd_bus *bus, const char *path, const char *interface,
			    const char *property, sd_bus_message *reply, void *userdata,
			    sd_bus_error *error)
{
	return sd_bus_message_append(reply, "t", *(uint64_t *)userdata);
}

static int property_get_unsigned(sd_bus *bus, const char *path, const char *interface,
				 const char *property, sd_bus_message *reply, void *userdata,
				 sd_bus_error *error)
{
	return sd_bus_message_append(reply, "u", *(unsigned *)userdata);
}

static int property_get_sleep_state(sd_bus *bus, const char *path, const char *interface,
				    const char *property, sd_bus_message *reply, void *userdata,
				    sd_bus_error *error)
{
	Manager *m = userdata;

	return sd_bus_message_append(reply, "s", sleep_state_to_string(m->sleep->state));
}

static int property_get_cache_entries(sd_bus *bus, const char *path, const char *interface,
				      const char *property, sd_bus_message *reply, void *userdata,
				      sd_bus_error *error)
{
	Manager *m = userdata;

	return sd_bus_message_append(reply, "u", m->sleep->cache->n_entries);
}

static int property_get_cache_bytes(sd_bus *bus, const char *path, const char *interface,
				    const char *property, sd_bus_message *reply, void *userdata,
				    sd_bus_error *error)
{
	Manager *m = userdata;

	return sd_bus_message_append(reply, "t", m->sleep->cache->bytes);
}

static int method_describe(sd_bus_message *message, void *userdata, sd_bus_error *error)
{
	_cleanup_free_ char *json = NULL;
	Manager *m = userdata;
	int r;

	r = manager_describe_json(m, &json);
	if (r < 0)
		return r;
	return sd_bus_reply_method_return(message, "s", json);
}

/* State changes are authorised through polkit (root passes without asking): see
 * fw-helperd-polkit.h and the actions in org.fwhelperd1.policy. */
static int reload_authorized(sd_bus_message *message, void *userdata, sd_bus_error *error)
{
	Manager *m = userdata;

	if (manager_reload(m) < 0)
		return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
					"Configuration is invalid, previous one kept (see the journal).");
	return sd_bus_reply_method_return(message, NULL);
}

static int method_reload(sd_bus_message *message, void *userdata, sd_bus_error *error)
{
	return polkit_authorize(message, "org.fwhelperd1.reload", reload_authorized, userdata, error);
}

static int rescan_authorized(sd_bus_message *message, void *userdata, sd_bus_error *error)
{
	Manager *m = userdata;
	int r;

	r = manager_rescan_all(m);
	if (r < 0)
		return r;
	return sd_bus_reply_method_return(message, "u", (uint32_t)r);
}

static int method_rescan(sd_bus_message *message, void *userdata, sd_bus_error *error)
{
	return polkit_authorize(message, "org.fwhelperd1.rescan", rescan_authorized, userdata, error);
}

static int prewarm_authorized(sd_bus_message *message, void *userdata, sd_bus_error *error)
{
	Manager *m = userdata;

	/* replied to once the blobs are in memory */
	return sleep_prewarm_on_demand(m->sleep, message);
}

static int method_prewarm(sd_bus_message *message, void *userdata, sd_bus_error *error)
{
	return polkit_authorize(message, "org.fwhelperd1.prewarm", prewarm_authorized, userdata, error);
}

static int method_list_firmware(sd_bus_message *message, void *userdata, sd_bus_error *error)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	Manager *m = userdata;
	int r;

	sleep_forget_gone_devices(m->sleep);
	r = sd_bus_message_new_method_return(message, &reply);
	if (r < 0)
		return r;
	r = sd_bus_message_open_container(reply, 'a', "(stsas)");
	if (r < 0)
		return r;
	for (RegistryEntry *e = m->sleep->registry->entries; e; e = e->next) {
		r = sd_bus_message_open_container(reply, 'r', "stsas");
		if (r < 0)
			return r;
		r = append_escaped(reply, e->name);
		if (r < 0)
			return r;
		r = sd_bus_message_append(reply, "ts", e->size, registry_sources_to_string(e->sources));
		if (r < 0)
			return r;
		r = append_escaped_strv(reply, e->devices);
		if (r < 0)
			return r;
		r = sd_bus_message_close_container(reply);
		if (r < 0)
			return r;
	}
	r = sd_bus_message_close_container(reply);
	if (r < 0)
		return r;
	return sd_bus_send(NULL, reply, NULL);
}

/*
 * A property claims EMITS_CHANGE (MissingFirmware, a list: EMITS_INVALIDATION) exactly when
 * manager_bus_emit_changed() sends it; EventSource and SearchPath, which change only on
 * reload and are not sent, say so with 0, as fw-helperd(8) documents.
 */
static const sd_bus_vtable manager_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_PROPERTY("State", "s", property_get_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("EventSource", "s", property_get_event_source, 0, 0),
	SD_BUS_PROPERTY("Served", "t", property_get_u64, offsetof(Manager, served),
			SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("Failed", "t", property_get_u64, offsetof(Manager, failed),
			SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("Missing", "t", property_get_u64, offsetof(Manager, missing_count),
			SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("Rejected", "t", property_get_u64, offsetof(Manager, rejected),
			SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("BytesServed", "t", property_get_u64, offsetof(Manager, bytes_served),
			SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("InFlight", "u", property_get_unsigned, offsetof(Manager, n_requests),
			SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("SearchPath", "as", property_get_search_path, 0, 0),
	SD_BUS_PROPERTY("MissingFirmware", "as", property_get_missing, 0,
			SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
	SD_BUS_PROPERTY("SleepState", "s", property_get_sleep_state, 0,
			SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("CacheEntries", "u", property_get_cache_entries, 0,
			SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_PROPERTY("CacheBytes", "t", property_get_cache_bytes, 0,
			SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_METHOD_WITH_ARGS("Describe", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", json),
				method_describe, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("Reload", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_reload,
				SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("Rescan", SD_BUS_NO_ARGS, SD_BUS_RESULT("u", found), method_rescan,
				SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("Prewarm", SD_BUS_NO_ARGS,
				SD_BUS_RESULT("u", cache_entries, "t", cache_bytes), method_prewarm,
				SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_ARGS("ListFirmware", SD_BUS_NO_ARGS,
				SD_BUS_RESULT("a(stsas)", firmware), method_list_firmware,
				SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_VTABLE_END
};

/* Reconnection backs off from 100 ms to 5 s: dbus may take a while to come back. */
#define BUS_START_WAIT_USEC (1 * USEC_PER_SEC)
#define RECONNECT_MIN_USEC (100 * USEC_PER_MSEC)
#define RECONNECT_MAX_USEC (5 * USEC_PER_SEC)

static int on_disconnected(sd_bus_message *message, void *userdata, sd_bus_error *error);

static int on_name_reply(sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
	const sd_bus_error *e = sd_bus_message_get_error(reply);

	if (e)
		log_error("Failed to take the bus name " BUS_NAME ": %s", e->message ?: e->name);
	return 0;
}

/*
 * wait: how long to wait for the name, at start, so that `fwctl` right after the start finds
 * it; 0 asks without waiting. Requests must not stall on a slow bus, nor on one whose socket
 * is there before dbus-daemon is (socket activation early in boot): after the wait the name
 * request stays queued, and the bus grants it when it comes.
 */
static int bus_connect(Manager *m, usec_t wait)
{
	_cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
	int r;

	r = sd_bus_open_system(&bus);
	if (r < 0)
		return log_debug_errno(r, "Failed to connect to the system bus: %m");
	r = sd_bus_add_object_vtable(bus, NULL, BUS_PATH, BUS_INTERFACE, manager_vtable, m);
	if (r < 0)
		return log_error_errno(r, "Failed to register D-Bus object: %m");
	if (wait > 0) {
		(void)sd_bus_set_method_call_timeout(bus, wait);
		r = sd_bus_request_name(bus, BUS_NAME, 0);
		(void)sd_bus_set_method_call_timeout(bus, 0); /* back to the default */
		if (r == -ETIMEDOUT) {
			log_notice("The system bus is slow to answer; " BUS_NAME " is taken when it does.");
			r = 0;
		}
	} else
		r = sd_bus_request_name_async(bus, NULL, BUS_NAME, 0, on_name_reply, m);
	if (r < 0)
		return log_error_errno(r, "Failed to take the bus name " BUS_NAME ": %m");
	/* Without this the connection would just stay dead when dbus restarts. */
	r = sd_bus_match_signal_async(bus, NULL, "org.freedesktop.DBus.Local", NULL,
				      "org.freedesktop.DBus.Local", "Disconnected", on_disconnected,
				      NULL, m);
	if (r < 0)
		return log_error_errno(r, "Failed to watch for the bus going away: %m");
	r = sd_bus_attach_event(bus, m->event, SD_EVENT_PRIORITY_NORMAL);
	if (r < 0)
		return log_error_errno(r, "Failed to attach the bus to the event loop: %m");
	m->bus = TAKE_PTR(bus);
	return 0;
}

static int on_reconnect(sd_event_source *s, uint64_t usec, void *userdata)
{
	Manager *m = userdata;
	int r;

	if (m->bus) {
		/* off the bus's own dispatch: safe to let go of it now */
		sleep_bus_lost(m->sleep);
		m->bus = sd_bus_flush_close_unref(m->bus);
	}
	r = bus_connect(m, 0);
	if (r < 0) {
		m->reconnect_interval = MIN(m->reconnect_interval * 2, RECONNECT_MAX_USEC);
		(void)sd_event_source_set_time_relative(s, m->reconnect_interval);
		return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	}
	m->bus_reconnect = sd_event_source_disable_unref(m->bus_reconnect);
	log_info("Back on the system bus as " BUS_NAME ".");
	sleep_bus_attached(m->sleep);
	manager_changed(m);
	return 0;
}

static int schedule_reconnect(Manager *m)
{
	int r;

	m->reconnect_interval = RECONNECT_MIN_USEC;
	r = sd_event_add_time_relative(m->event, &m->bus_reconnect, CLOCK_MONOTONIC, 0, 0,
				       on_reconnect, m);
	if (r < 0)
		return log_error_errno(r, "Failed to schedule reconnecting to the bus: %m");
	return 0;
}

static int on_disconnected(sd_bus_message *message, void *userdata, sd_bus_error *error)
{
	Manager *m = userdata;

	if (m->bus_reconnect || m->state == MANAGER_STOPPING)
		return 0;
	log_warning("Lost the system bus; serving on, reconnecting.");
	return schedule_reconnect(m);
}

/* Requests are answered with or without the bus: early in boot dbus is not up yet, and a
 * daemon that refused to start without it would leave every request to the guard's -1. */
int manager_bus_start(Manager *m)
{
	int r;

	r = bus_connect(m, BUS_START_WAIT_USEC);
	if (r >= 0)
		return 0;
	log_notice_errno(r, "System bus not available (%m); serving without it, connecting when it comes.");
	return schedule_reconnect(m);
}

void manager_bus_emit_changed(Manager *m)
{
	if (!m->bus)
		return;
	(void)sd_bus_emit_properties_changed(m->bus, BUS_PATH, BUS_INTERFACE, "State", "Served",
					     "Failed", "Missing", "Rejected", "BytesServed",
					     "InFlight", "MissingFirmware", "SleepState", "CacheEntries",
					     "CacheBytes", NULL);
}

static void describe_counters(JsonWriter *w, Manager *m)
{
	json_key(w, "counters");
	json_object_begin(w);
	json_key(w, "served");
	json_uint(w, m->served);
	json_key(w, "failed");
	json_uint(w, m->failed);
	json_key(w, "missing");
	json_uint(w, m->missing_count);
	json_key(w, "rejected");
	json_uint(w, m->rejected);
	json_key(w, "bytes_served");
	json_uint(w, m->bytes_served);
	json_key(w, "in_flight");
	json_uint(w, m->n_requests);
	json_object_end(w);
}

static void describe_missing(JsonWriter *w, Manager *m)
{
	json_key(w, "missing_firmware");
	json_array_begin(w);
	for (MissingEntry *e = m->missing; e; e = e->next) {
		json_object_begin(w);
		json_key(w, "name");
		json_string(w, e->name);
		json_key(w, "count");
		json_uint(w, e->count);
		json_key(w, "last_realtime_usec");
		json_uint(w, e->last);
		json_object_end(w);
	}
	json_array_end(w);
}

int manager_describe_json(Manager *m, char **ret)
{
	_cleanup_strv_free_ char **roots = NULL;
	JsonWriter w;
	int r;

	r = manager_search_roots(m, &roots);
	if (r < 0)
		return r;
	r = json_writer_init(&w);
	if (r < 0)
		return r;
	json_object_begin(&w);
	json_key(&w, "version");
	json_string(&w, PACKAGE_VERSION);
	json_key(&w, "state");
	json_string(&w, manager_state_to_string(m->state));
	json_key(&w, "event_source");
	json_string(&w, event_source_to_string(m->config->event_source));
	describe_counters(&w, m);
	json_key(&w, "search_path");
	json_array_begin(&w);
	for (char **p = roots; *p; p++)
		json_string(&w, *p);
	json_array_end(&w);
	describe_missing(&w, m);
	sleep_describe_json(m->sleep, &w);
	json_object_end(&w);
	return json_writer_finish(&w, ret);
}
