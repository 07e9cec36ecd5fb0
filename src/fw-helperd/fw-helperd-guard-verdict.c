/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "fw-helperd-guard-verdict.h"

GuardVerdict guard_verdict(const char *load_state, const char *active_state, uint32_t job)
{
	/* "masked", "not-found", "bad-setting", "error": no start can succeed */
	if (!load_state || strcmp(load_state, "loaded") != 0)
		return GUARD_ABORT;
	if (!active_state)
		return GUARD_ABORT;
	/* A queued start or restart job: early boot, or a restart after a crash or an upgrade. */
	if (job != 0)
		return GUARD_WAIT;
	/* Starting, or stopping: a stopping daemon answers what is pending before it lets go. */
	if (strcmp(active_state, "activating") == 0 || strcmp(active_state, "deactivating") == 0 ||
	    strcmp(active_state, "reloading") == 0 || strcmp(active_state, "active") == 0)
		return GUARD_WAIT;
	/* "failed" (exit 78, start limit hit) or "inactive" with nothing queued */
	return GUARD_ABORT;
}
