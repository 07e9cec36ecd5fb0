/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fw-helperd-rules.h"
#include "tests.h"
#include "util.h"

#define KEY "FW_HELPERD_IGNORE"

static void test_text(void)
{
	CHECK(rules_text_assigns("ENV{FW_HELPERD_IGNORE}=\"1\"\n", KEY));
	CHECK(rules_text_assigns("SUBSYSTEM==\"firmware\", ENV{FW_HELPERD_IGNORE}:=\"1\"", KEY));
	CHECK(rules_text_assigns("x\n  ENV{FW_HELPERD_IGNORE} += \"1\"\n", KEY));
	CHECK(rules_text_assigns("ENV{FW_HELPERD_IGNORE}==\"1\", ENV{FW_HELPERD_IGNORE}=\"0\"", KEY));
	/* comparisons, comments and other keys do not count */
	CHECK(!rules_text_assigns("ENV{FW_HELPERD_IGNORE}==\"1\", GOTO=\"end\"\n", KEY));
	CHECK(!rules_text_assigns("ENV{FW_HELPERD_IGNORE}!=\"1\"\n", KEY));
	CHECK(!rules_text_assigns("#   ENV{FW_HELPERD_IGNORE}=\"1\"\n", KEY));
	CHECK(!rules_text_assigns("  # ENV{FW_HELPERD_IGNORE}=\"1\"\n", KEY));
	CHECK(!rules_text_assigns("ENV{FW_HELPERD_IGNORE_X}=\"1\"\n", KEY));
	CHECK(!rules_text_assigns("ENV{X_FW_HELPERD_IGNORE}=\"1\"\n", KEY));
	CHECK(!rules_text_assigns("", KEY));
}

static void write_file(const char *dir, const char *name, const char *text)
{
	_cleanup_free_ char *path = path_join(dir, name);
	FILE *f = path ? fopen(path, "we") : NULL;

	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

static void remove_tree(const char *path)
{
	_cleanup_free_ char *cmd = NULL;

	if (asprintf(&cmd, "rm -rf %s", path) > 0)
		(void)system(cmd);
}

static void test_watch(void)
{
	char tmpl[] = "/tmp/test-rules-XXXXXX";
	_cleanup_free_ char *etc = NULL, *run = NULL, *cmd = NULL;
	_cleanup_(rules_watch_freep) RulesWatch *w = NULL;
	sd_event *e = NULL;

	if (!mkdtemp(tmpl) || sd_event_default(&e) < 0)
		goto setup_failed;
	etc = path_join(tmpl, "etc");
	run = path_join(tmpl, "run"); /* created later, as /run/udev/rules.d may be */
	if (!etc || !run || mkdir(etc, 0755) < 0)
		goto setup_failed;
	write_file(etc, "50-firmware.rules", "ENV{FW_HELPERD_IGNORE}==\"1\", GOTO=\"end\"\n");

	CHECK(rules_watch_new(e, (const char *const[]){ etc, run, NULL }, 0, &w) == 0);
	CHECK(!rules_watch_excludes(w));
	write_file(etc, "40-local.rules", "DEVPATH==\"*/x/*\", ENV{FW_HELPERD_IGNORE}=\"1\"\n");
	CHECK(rules_watch_excludes(w));
	write_file(etc, "40-local.rules", "# nothing\n");
	CHECK(!rules_watch_excludes(w));
	write_file(etc, "40-local.rules.bak", "ENV{FW_HELPERD_IGNORE}=\"1\"\n");
	CHECK(!rules_watch_excludes(w)); /* not a .rules file */

	CHECK(mkdir(run, 0755) == 0);
	CHECK(!rules_watch_excludes(w)); /* the new directory is watched from here on */
	write_file(run, "10-x.rules", "ENV{FW_HELPERD_IGNORE}:=\"1\"\n");
	CHECK(rules_watch_excludes(w));
	CHECK(asprintf(&cmd, "rm -f %s/10-x.rules", run) > 0 && system(cmd) == 0);
	CHECK(!rules_watch_excludes(w));
	/* removed and created again: watched again */
	CHECK(rmdir(run) == 0 && !rules_watch_excludes(w) && mkdir(run, 0755) == 0);
	CHECK(!rules_watch_excludes(w));
	write_file(run, "10-y.rules", "ENV{FW_HELPERD_IGNORE}=\"1\"\n");
	CHECK(rules_watch_excludes(w));

	w = rules_watch_free(w);
	remove_tree(tmpl);
	sd_event_unref(e);
	return;
setup_failed:
	CHECK(!"set-up");
	sd_event_unref(e);
}

/*
 * A directory that does not exist is not looked for on every question, only once
 * absent_retry_usec has passed: what it holds is seen from then on, not at once.
 */
static void test_absent_retry(void)
{
	const usec_t retry = 3 * USEC_PER_SEC;
	char tmpl[] = "/tmp/test-rules-XXXXXX";
	_cleanup_free_ char *run = NULL;
	_cleanup_(rules_watch_freep) RulesWatch *w = NULL;
	sd_event *e = NULL;
	usec_t made;

	if (!mkdtemp(tmpl) || sd_event_default(&e) < 0 || !(run = path_join(tmpl, "run"))) {
		CHECK(!"set-up");
		sd_event_unref(e);
		return;
	}
	CHECK(rules_watch_new(e, (const char *const[]){ run, NULL }, retry, &w) == 0);
	CHECK(!rules_watch_excludes(w));
	CHECK(mkdir(run, 0755) == 0);
	made = now_usec(CLOCK_MONOTONIC);
	write_file(run, "10-x.rules", "ENV{FW_HELPERD_IGNORE}=\"1\"\n");
	/* not looked for again yet (unless this host stalled for the whole interval) */
	CHECK(!rules_watch_excludes(w) || now_usec(CLOCK_MONOTONIC) - made >= retry);
	usleep(retry + 100 * USEC_PER_MSEC);
	CHECK(rules_watch_excludes(w));

	w = rules_watch_free(w);
	remove_tree(tmpl);
	sd_event_unref(e);
}

int main(void)
{
	test_text();
	test_watch();
	test_absent_retry();
	return test_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
