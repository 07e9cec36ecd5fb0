/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>

#include "fw-helperd-guard-verdict.h"
#include "tests.h"

static void test_waits_while_on_its_way(void)
{
	/* early boot: a start job queued behind the boot's ordering */
	CHECK(guard_verdict("loaded", "inactive", 42) == GUARD_WAIT);
	/* a restart after a crash, or during a package upgrade */
	CHECK(guard_verdict("loaded", "failed", 7) == GUARD_WAIT);
	CHECK(guard_verdict("loaded", "activating", 0) == GUARD_WAIT);
	CHECK(guard_verdict("loaded", "deactivating", 0) == GUARD_WAIT);
	CHECK(guard_verdict("loaded", "active", 0) == GUARD_WAIT);
}

static void test_aborts_when_it_cannot_run(void)
{
	CHECK(guard_verdict("masked", "inactive", 0) == GUARD_ABORT);
	CHECK(guard_verdict("not-found", "inactive", 0) == GUARD_ABORT);
	CHECK(guard_verdict("bad-setting", "inactive", 0) == GUARD_ABORT);
	/* exit 78, or the start limit */
	CHECK(guard_verdict("loaded", "failed", 0) == GUARD_ABORT);
	CHECK(guard_verdict("loaded", "inactive", 0) == GUARD_ABORT);
	CHECK(guard_verdict(NULL, NULL, 0) == GUARD_ABORT);
	CHECK(guard_verdict("loaded", NULL, 0) == GUARD_ABORT);
}

int main(void)
{
	test_waits_while_on_its_way();
	test_aborts_when_it_cannot_run();
	return test_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
