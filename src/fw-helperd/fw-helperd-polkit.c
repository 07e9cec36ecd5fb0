/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "fw-helperd-polkit.h"
#include "log.h"
#include "macro.h"

/* CheckAuthorization()'s flag: polkit may ask the user through an agent. */
#define POLKIT_ALLOW_USER_INTERACTION 1u
/* Long enough for a person to answer a password prompt. */
#define POLKIT_INTERACTIVE_TIMEOUT_USEC (5ULL * 60 * 1000000)

typedef struct PolkitQuery {
	sd_bus_message *request;
	polkit_authorized_t authorized;
	void *userdata;
} PolkitQuery;

static void polkit_query_free(void *p)
{
	PolkitQuery *q = p;

	sd_bus_message_unref(q->request);
	free(q);
}

static int sender_is_root(sd_bus_message *message)
{
	_cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
	uid_t euid;
	int r;

	r = sd_bus_query_sender_creds(message, SD_BUS_CREDS_EUID | SD_BUS_CREDS_AUGMENT, &creds);
	if (r < 0)
		return r;
	r = sd_bus_creds_get_euid(creds, &euid);
	if (r < 0)
		return r;
	return euid == 0;
}

static int run_authorized(PolkitQuery *q)
{
	sd_bus_error error = SD_BUS_ERROR_NULL;
	int r;

	r = q->authorized(q->request, q->userdata, &error);
	if (sd_bus_error_is_set(&error))
		r = sd_bus_reply_method_error(q->request, &error);
	else if (r < 0)
		r = sd_bus_reply_method_errno(q->request, r, NULL);
	sd_bus_error_free(&error);
	return r;
}

static int on_check_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	PolkitQuery *q = userdata;
	const sd_bus_error *e = sd_bus_message_get_error(reply);
	int authorized = false, challenge = false, r;

	if (e) {
		log_debug("polkit did not answer for %s: %s", sd_bus_message_get_member(q->request),
			  e->message ?: e->name);
		return sd_bus_reply_method_errorf(q->request, SD_BUS_ERROR_ACCESS_DENIED,
						  "Access denied: polkit is not available (%s).",
						  e->message ?: e->name);
	}
	r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
	if (r >= 0)
		r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
	if (r < 0)
		return sd_bus_reply_method_errno(q->request, r, NULL);
	if (authorized)
		return run_authorized(q);
	if (challenge)
		return sd_bus_reply_method_errorf(q->request,
						  SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
						  "Interactive authentication required.");
	return sd_bus_reply_method_errorf(q->request, SD_BUS_ERROR_ACCESS_DENIED, "Access denied.");
}

static int ask_polkit(sd_bus_message *message, const char *action, PolkitQuery *q)
{
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
	sd_bus *bus = sd_bus_message_get_bus(message);
	bool interactive = sd_bus_message_get_allow_interactive_authorization(message) > 0;
	sd_bus_slot *slot = NULL;
	int r;

	r = sd_bus_message_new_method_call(bus, &call, "org.freedesktop.PolicyKit1",
					   "/org/freedesktop/PolicyKit1/Authority",
					   "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization");
	if (r < 0)
		return r;
	r = sd_bus_message_append(call, "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s",
				  sd_bus_message_get_sender(message), action, 0,
				  interactive ? POLKIT_ALLOW_USER_INTERACTION : 0u, "");
	if (r < 0)
		return r;
	r = sd_bus_call_async(bus, &slot, call, on_check_reply, q,
			      interactive ? POLKIT_INTERACTIVE_TIMEOUT_USEC : 0);
	if (r < 0)
		return r;
	/* The bus keeps the query until polkit answers or the connection goes. */
	(void)sd_bus_slot_set_destroy_callback(slot, polkit_query_free);
	(void)sd_bus_slot_set_floating(slot, true);
	sd_bus_slot_unref(slot);
	return 0;
}

int polkit_authorize(sd_bus_message *message, const char *action, polkit_authorized_t authorized,
		     void *userdata, sd_bus_error *error)
{
	PolkitQuery *q;
	int r;

	r = sender_is_root(message);
	if (r < 0)
		return r;
	if (r > 0)
		return authorized(message, userdata, error);

	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	*q = (PolkitQuery){ sd_bus_message_ref(message), authorized, userdata };
	r = ask_polkit(message, action, q);
	if (r < 0) {
		polkit_query_free(q);
		return r;
	}
	return 1; /* answered when polkit has decided */
}
