/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

#define N_BIG 300

/* N_BIG lines of about 250 bytes: far more than a page (and than one 64 KiB read). */
static char *big_entries_text(void)
{
	size_t size = N_BIG * 300, len = 0;
	char *text = malloc(size);

	for (unsigned i = 0; text && i < N_BIG; i++)
		len += (size_t)snprintf(text + len, size - len, "%s %u %d vendor/%0230u-%u.bin\n",
					i % 3 == 0 ? "cached" : i % 3 == 1 ? "failed" : "loading",
					i % 3 == 0 ? 1000 + i : 0, i % 3 == 1 ? -2 : 0, i, i);
	return text;
}

/* A pipe hands out what was written so far, as sysfs hands out a page per read(). */
static void *write_in_pages(void *path)
{
	_cleanup_free_ char *text = big_entries_text();
	size_t len = text ? strlen(text) : 0;
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	for (size_t off = 0; fd >= 0 && off < len; off += 4096) {
		if (write(fd, text + off, MIN((size_t)4096, len - off)) < 0)
			break;
		usleep(2000);
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void check_big(Companion *c, const char *what)
{
	CompanionEntry *e = NULL;
	size_t n = 0;
	unsigned loading = 0;

	printf("# %s\n", what);
	CHECK(companion_entries(c, &e, &n) == 0);
	CHECK(n == N_BIG);
	for (size_t i = 0; i < n; i++)
		loading += e[i].state == COMPANION_ENTRY_LOADING;
	CHECK(loading == N_BIG / 3);
	CHECK(n == N_BIG && strstr(e[N_BIG - 1].name, "-299.bin") && e[N_BIG - 1].state == COMPANION_ENTRY_LOADING);
	companion_entries_free(e, n);
}

/* The module's list past a page: read to the end, from a short-reading file and a big one. */
static void test_entries_past_a_page(void)
{
	char root[] = "/tmp/test-kmod-XXXXXX";
	_cleanup_free_ char *dir = NULL, *path = NULL, *text = big_entries_text();
	Companion *c = NULL;
	sd_event *e = NULL;
	pthread_t writer;
	FILE *f;

	/* a reader that stops early closes the pipe under the writer */
	signal(SIGPIPE, SIG_IGN);
	CHECK(mkdtemp(root) != NULL);
	dir = path_join(root, "kernel/fwh_cache");
	path = path_join(dir, "entries");
	{
		_cleanup_free_ char *cmd = NULL;

		CHECK(asprintf(&cmd, "mkdir -p '%s'", dir) > 0 && system(cmd) == 0);
	}
	sd_event_default(&e);
	CHECK(companion_new(e, root, COMPANION_IF_AVAILABLE, &c) == 0 && companion_available(c));

	CHECK(mkfifo(path, 0600) == 0);
	CHECK(pthread_create(&writer, NULL, write_in_pages, path) == 0);
	check_big(c, "a page per read()");
	pthread_join(writer, NULL);

	unlink(path);
	f = fopen(path, "we");
	CHECK(f && text && fputs(text, f) >= 0 && fclose(f) == 0);
	check_big(c, "a regular file larger than one 64 KiB read");

	companion_free(c);
	sd_event_unref(e);
	{
		_cleanup_free_ char *cmd = NULL;

		CHECK(asprintf(&cmd, "rm -rf '%s'", root) > 0 && system(cmd) == 0);
	}
}

int main(void)
{
	test_parse();
	test_modes();
	test_unavailable();
	test_entries_past_a_page();
	return test_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
