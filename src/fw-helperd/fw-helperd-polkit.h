/* SPDX-License-Identifier: MIT */
#pragma once

#include <systemd/sd-bus.h>

/* Does what an authorised method call asked for; returns like an sd-bus method handler. */
typedef int (*polkit_authorized_t)(sd_bus_message *message, void *userdata, sd_bus_error *error);

/*
 * Authorises a method call for polkit's action, then runs authorized() for it. Root passes at
 * once; anyone else is asked of polkit (interactively when the caller allows it), and the
 * call is answered when polkit has decided, with an error when it says no or is not there.
 * Returns like an sd-bus method handler.
 */
int polkit_authorize(sd_bus_message *message, const char *action, polkit_authorized_t authorized,
		     void *userdata, sd_bus_error *error);
