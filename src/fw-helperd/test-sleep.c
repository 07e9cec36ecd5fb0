/* SPDX-License-Identifier: MIT */
/*
 * The sleep state names, as the state file in the runtime directory holds them: a state
 * file with a name this daemon does not know (a newer one wrote it, or it is corrupt) must
 * read as invalid, so that load_state() falls back to idle.
 */
#include <stdlib.h>
#include <string.h>

#include "tests.h"

#include "fw-helperd-sleep.h"

static void test_state_names(void)
{
	for (SleepState i = 0; i < _SLEEP_STATE_MAX; i++)
		CHECK(sleep_state_from_string(sleep_state_to_string(i)) == i);
	CHECK(strcmp(sleep_state_to_string(SLEEP_RESUMING), "resuming") == 0);
	CHECK(sleep_state_to_string(_SLEEP_STATE_MAX) == NULL);
	CHECK(sleep_state_to_string(_SLEEP_STATE_INVALID) == NULL);
}

static void test_state_invalid(void)
{
	SleepState s = sleep_state_from_string("hibernating");

	/* an unsigned enum made this false, and the huge value went on as a state */
	CHECK(s < 0);
	CHECK(s == _SLEEP_STATE_INVALID && s == -EINVAL);
	CHECK(sleep_state_from_string("") < 0);
	CHECK(sleep_state_from_string(NULL) < 0);
	CHECK(sleep_state_from_string("IDLE") < 0);
}

int main(void)
{
	test_state_names();
	test_state_invalid();
	return test_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
