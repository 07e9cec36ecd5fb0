/* SPDX-License-Identifier: MIT */
#pragma once

typedef struct Manager Manager;

#define BUS_NAME "org.fwhelperd1"
#define BUS_PATH "/org/fwhelperd1"
#define BUS_INTERFACE "org.fwhelperd1.Manager"

/* Connects to the system bus ($DBUS_SYSTEM_BUS_ADDRESS is honoured) and takes the name. */
int manager_bus_start(Manager *m);
/* Emits PropertiesChanged for the counters and state. */
void manager_bus_emit_changed(Manager *m);
/* Describe(): the whole state as JSON. */
int manager_describe_json(Manager *m, char **ret);
