/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdint.h>

/* What the guard does about a pending request, given the unit's state as systemd reports it. */
typedef enum GuardVerdict {
	GUARD_WAIT,  /* the daemon is on its way (starting, restarting): it will answer */
	GUARD_ABORT, /* the daemon cannot run (masked, missing, failed, stopped): answer -1 */
} GuardVerdict;

/* load_state and active_state are the unit's LoadState= and ActiveState=; job is the id of
 * its pending job, 0 for none. */
GuardVerdict guard_verdict(const char *load_state, const char *active_state, uint32_t job);
