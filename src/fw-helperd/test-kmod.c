/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"

#include "fw-helperd-kmod.h"


static void test_parse(void)
{
	CompanionEntry e;

	CHECK(companion_parse_entry("cached 301234 0 fwh-test/resume.bin", &e) == 0);
	CHECK(e.state == COMPANION_ENTRY_CACHED && e.size == 301234 && e.error == 0 &&
	      strcmp(e.name, "fwh-test/resume.bin") == 0);
	free(e.name);
	CHECK(companion_parse_entry("failed 0 -2 name with blanks.bin", &e) == 0);
	CHECK(e.state == COMPANION_ENTRY_FAILED && e.error == -2 &&
	      strcmp(e.name, "name with blanks.bin") == 0);
	free(e.name);
	CHECK(companion_parse_entry("loading 0 0 x", &e) == 0 && e.state == COMPANION_ENTRY_LOADING);
	free(e.name);
	CHECK(companion_parse_entry("weird 0 0 x", &e) < 0);
	CHECK(companion_parse_entry("cached 12 0", &e) < 0);
	CHECK(companion_parse_entry("cached 12 0 ", &e) < 0);
	CHECK(companion_parse_entry("", &e) < 0);
}

static void test_modes(void)
{
	CHECK(companion_mode_from_string("off") == COMPANION_OFF);
	CHECK(companion_mode_from_string("if-available") == COMPANION_IF_AVAILABLE);
	CHECK(companion_mode_from_string("required") == COMPANION_REQUIRED);
	CHECK(companion_mode_from_string("yes") < 0);
	CHECK(strcmp(companion_mode_to_string(COMPANION_REQUIRED), "required") == 0);
}

/* Against a fixture sysfs without the module: usable modes degrade, required refuses. */
static void test_unavailable(void)
{
	Companion *c = NULL;
	sd_event *e = NULL;

	sd_event_default(&e);
	CHECK(companion_new(e, "/nonexistent-sysfs", COMPANION_OFF, &c) == 0);
	CHECK(!companion_available(c) && strcmp(companion_status(c), "off") == 0);
	c = companion_free(c);
	CHECK(companion_new(e, "/nonexistent-sysfs", COMPANION_IF_AVAILABLE, &c) == 0);
	CHECK(!companion_available(c));
	CHECK(companion_pin(c, NULL, 0, NULL, NULL) == -ENODEV);
	CHECK(companion_unpin_all(c) == 0);
	c = companion_free(c);
	CHECK(companion_new(e, "/nonexistent-sysfs", COMPANION_REQUIRED, &c) == -ENODEV);
	sd_event_unref(e);
}

int main(void)
{
	test_parse();
	test_modes();
	test_unavailable();
	return test_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
