/* SPDX-License-Identifier: MIT */
/*
 * The configuration parser: defaults, every key, list semantics, drop-in order, and the
 * messages an operator sees (stderr is captured into a file and searched).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fw-helperd-conf.h"
#include "log.h"
#include "macro.h"
#include "util.h"

#define CHECK(expr)                                                                    \
	do {                                                                           \
		if (!(expr)) {                                                         \
			fprintf(stdout, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#expr);                                                \
			return -1;                                                     \
		}                                                                      \
	} while (0)

static char tmpdir[] = "/tmp/test-conf-XXXXXX";

/* A NULL-terminated list of one directory, for config_load(). */
#define STRV(s) ((char *[]){ (s), NULL })
static char captured[16384];
static int saved_stderr = -1;

/* From here to capture_end(), log lines go to a file instead of the terminal. */
static void capture_begin(void)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/stderr", tmpdir);
	fflush(stderr);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	saved_stderr = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
}

static const char *capture_end(void)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	snprintf(path, sizeof(path), "%s/stderr", tmpdir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, captured, sizeof(captured) - 1) : -1;
	captured[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	return captured;
}

/* Parses text into a fresh config, capturing what was logged. */
static int parse(const char *text, Config **ret, const char **ret_log)
{
	_cleanup_(config_freep) Config *c = NULL;
	int r;

	if (config_new(&c) < 0)
		return -ENOMEM;
	capture_begin();
	r = config_parse_string(c, "test.conf", text);
	*ret_log = capture_end();
	*ret = TAKE_PTR(c);
	return r;
}

static bool strv_equal(char **l, const char *const *expected)
{
	size_t i = 0;

	for (; expected[i]; i++)
		if (!l || !l[i] || strcmp(l[i], expected[i]) != 0)
			return false;
	return !l || !l[i];
}

static int write_text(const char *dir, const char *name, const char *text)
{
	_cleanup_free_ char *path = path_join(dir, name);
	FILE *f;

	if (!path)
		return -ENOMEM;
	f = fopen(path, "we");
	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -errno;
}

static int test_defaults(void)
{
	_cleanup_(config_freep) Config *c = NULL;

	CHECK(config_new(&c) == 0);
	CHECK(c->search_path == NULL);
	CHECK(c->optional_firmware == NULL);
	CHECK(c->optional_log_level == LOG_DEBUG);
	CHECK(c->max_size == 1ULL << 30);
	CHECK(c->unpack_memory_max == 256ULL << 20);
	CHECK(c->workers == 4);
	CHECK(c->event_source == EVENT_SOURCE_UDEV);
	CHECK(c->timeout_margin == USEC_PER_SEC);
	return 0;
}

static int test_every_key(void)
{
	_cleanup_(config_freep) Config *c = NULL;
	const char *log;

	CHECK(parse("[Firmware]\n"
		    "SearchPath=/srv/firmware /usr/local/lib/firmware\n"
		    "OptionalFirmware=iwlwifi-*-8[0-9].ucode regulatory.db.p7s\n"
		    "OptionalLogLevel=info\n"
		    "MaxSize=64M\n"
		    "UnpackMemoryMax=96M\n"
		    "[Service]\n"
		    "Workers=8\n"
		    "EventSource=kernel\n"
		    "TimeoutMarginSec=500ms\n"
		    "CustomFallback=dell_rbu /devices/platform/x*\n",
		    &c, &log) == 0);
	CHECK(log[0] == 0);
	CHECK(strv_equal(c->search_path,
			 (const char *const[]){ "/srv/firmware", "/usr/local/lib/firmware", NULL }));
	CHECK(strv_equal(c->optional_firmware,
			 (const char *const[]){ "iwlwifi-*-8[0-9].ucode", "regulatory.db.p7s", NULL }));
	CHECK(c->optional_log_level == LOG_INFO);
	CHECK(c->max_size == 64ULL << 20);
	CHECK(c->unpack_memory_max == 96ULL << 20);
	CHECK(c->workers == 8);
	CHECK(c->event_source == EVENT_SOURCE_KERNEL);
	CHECK(c->timeout_margin == 500 * USEC_PER_MSEC);
	CHECK(strv_equal(c->custom_fallback, (const char *const[]){ "dell_rbu", "/devices/platform/x*", NULL }));
	return 0;
}

static int test_lists(void)
{
	_cleanup_(config_freep) Config *c = NULL;
	const char *log;

	CHECK(parse("[Firmware]\n"
		    "SearchPath=/a\n"
		    "SearchPath=/b /c\n"
		    "OptionalFirmware=x*\n"
		    "SearchPath=\n"
		    "SearchPath=//d//e/./f/ /\n"
		    "  SearchPath=/g\n"	/* indented: its own line, not a continuation */
		    "OptionalFirmware=y*\n",
		    &c, &log) == 0);
	CHECK(strv_equal(c->search_path, (const char *const[]){ "/d/e/f", "/", "/g", NULL }));
	CHECK(strv_equal(c->optional_firmware, (const char *const[]){ "x*", "y*", NULL }));
	config_free(c);

	CHECK(parse("[Firmware]\nOptionalFirmware=a b\nOptionalFirmware=\n", &c, &log) == 0);
	CHECK(c->optional_firmware == NULL);
	return 0;
}

static int test_empty_restores_default(void)
{
	_cleanup_(config_freep) Config *c = NULL;
	const char *log;

	CHECK(parse("[Service]\nWorkers=9\nWorkers=\nTimeoutMarginSec=5\nTimeoutMarginSec=\n"
		    "[Firmware]\nMaxSize=1K\nMaxSize=\n",
		    &c, &log) == 0);
	CHECK(c->workers == 4);
	CHECK(c->timeout_margin == USEC_PER_SEC);
	CHECK(c->max_size == 1ULL << 30);
	return 0;
}

static int test_comments(void)
{
	_cleanup_(config_freep) Config *c = NULL;
	const char *log;

	CHECK(parse("# comment\n; comment\n\n[Service]\r\nWorkers=3 ; inline comment\r\n"
		    "  # indented comment\nEventSource = none\n",
		    &c, &log) == 0);
	CHECK(c->workers == 3);
	CHECK(c->event_source == EVENT_SOURCE_NONE);
	CHECK(log[0] == 0);
	return 0;
}

static int test_unknown(void)
{
	_cleanup_(config_freep) Config *c = NULL;
	const char *log;

	CHECK(parse("[Firmware]\n"
		    "Foo=1\n"
		    "[Sleep]\n"
		    "Prewarm=yes\n"
		    "[Service]\n"
		    "workers=2\n"	/* keys are case-sensitive */
		    "Workers=5\n",
		    &c, &log) == 0);
	CHECK(c->workers == 5);
	CHECK(strstr(log, "test.conf:2: Unknown key 'Foo' in section [Firmware], ignoring."));
	CHECK(strstr(log, "test.conf:4: Unknown key 'Prewarm' in section [Sleep], ignoring."));
	CHECK(strstr(log, "test.conf:6: Unknown key 'workers' in section [Service], ignoring."));
	config_free(c);

	CHECK(parse("Workers=2\n[Service]\nWorkers=6\n", &c, &log) == 0);
	CHECK(c->workers == 6);
	CHECK(strstr(log, "test.conf:1: Assignment to 'Workers' outside of any section, ignoring."));
	return 0;
}

static int expect_syntax_error(const char *text, const char *where)
{
	_cleanup_(config_freep) Config *c = NULL;
	const char *log;

	CHECK(parse(text, &c, &log) == -EINVAL);
	if (!strstr(log, where)) {
		printf("expected '%s' in: %s", where, log);
		return -1;
	}
	return 0;
}

static int test_syntax_errors(void)
{
	char long_line[400];

	CHECK(expect_syntax_error("[Service]\nWorkers=2\n\nthis is bad\n", "test.conf:4: ") == 0);
	CHECK(expect_syntax_error("[Service\nWorkers=2\n", "test.conf:1: Section header") == 0);
	CHECK(expect_syntax_error("[Service]\nWorkers: 2\n", "test.conf:2: ") == 0);
	/* inih would read this as key "Event", value "Source=udev" */
	CHECK(expect_syntax_error("[Service]\nEvent:Source=udev\n", "test.conf:2: Expected") == 0);
	CHECK(expect_syntax_error("[Service]\n=2\n", "test.conf:2: Assignment without a key") == 0);
	/* ";" after white space starts a comment, also where inih looks for "]" or "=" */
	CHECK(expect_syntax_error("[Service]\n[Ser ;vice]\n", "test.conf:2: Section header") == 0);
	CHECK(expect_syntax_error("[Service]\nWorkers ;=2\n", "test.conf:2: Expected") == 0);

	snprintf(long_line, sizeof(long_line), "[Firmware]\n# x\nSearchPath=/%0300d\nMaxSize=x\n", 0);
	CHECK(expect_syntax_error(long_line, "test.conf:3: Line too long") == 0);
	/* and the error after it is still reported, with its own line */
	CHECK(expect_syntax_error(long_line, "test.conf:4: Invalid MaxSize=") == 0);
	return 0;
}

static int expect_invalid(const char *text, const char *message)
{
	_cleanup_(config_freep) Config *c = NULL;
	const char *log;

	CHECK(parse(text, &c, &log) == -EINVAL);
	if (!strstr(log, message)) {
		printf("expected '%s' in: %s", message, log);
		return -1;
	}
	return 0;
}

static int test_invalid_values(void)
{
	CHECK(expect_invalid("[Service]\nWorkers=0\n", "test.conf:2: Invalid Workers= value '0'") == 0);
	CHECK(expect_invalid("[Service]\nWorkers=65\n", "test.conf:2: Invalid Workers=") == 0);
	CHECK(expect_invalid("[Service]\nWorkers=-1\n", "test.conf:2: Invalid Workers=") == 0);
	CHECK(expect_invalid("[Service]\nWorkers=4x\n", "test.conf:2: Invalid Workers=") == 0);
	CHECK(expect_invalid("[Firmware]\nSearchPath=/ok relative/dir\n",
			     "test.conf:2: Invalid SearchPath= value 'relative/dir'") == 0);
	CHECK(expect_invalid("[Firmware]\nSearchPath=/srv/../etc\n",
			     "test.conf:2: Invalid SearchPath= value '/srv/../etc'") == 0);
	CHECK(expect_invalid("[Firmware]\n\nMaxSize=abc\n", "test.conf:3: Invalid MaxSize= value 'abc'") == 0);
	CHECK(expect_invalid("[Firmware]\nMaxSize=0\n", "test.conf:2: Invalid MaxSize=") == 0);
	CHECK(expect_invalid("[Firmware]\nUnpackMemoryMax=0\n", "test.conf:2: Invalid UnpackMemoryMax=") == 0);
	CHECK(expect_invalid("[Firmware]\nOptionalLogLevel=loud\n",
			     "test.conf:2: Invalid OptionalLogLevel=") == 0);
	CHECK(expect_invalid("[Service]\nEventSource=netlink\n", "test.conf:2: Invalid EventSource=") == 0);
	CHECK(expect_invalid("[Service]\nTimeoutMarginSec=soon\n",
			     "test.conf:2: Invalid TimeoutMarginSec=") == 0);
	/* control bytes are shown escaped, never written raw to the log */
	CHECK(expect_invalid("[Service]\nWorkers=\x1b[31m\n", "value '\\x1b[31m'") == 0);
	return 0;
}

static int test_all_errors_reported(void)
{
	_cleanup_(config_freep) Config *c = NULL;
	const char *log;

	CHECK(parse("[Service]\nWorkers=0\nWorkers=2\nEventSource=x\n", &c, &log) == -EINVAL);
	CHECK(strstr(log, "test.conf:2: "));
	CHECK(strstr(log, "test.conf:4: "));
	return 0;
}

static int test_search_path_all_or_nothing(void)
{
	_cleanup_(config_freep) Config *c = NULL;
	const char *log;

	CHECK(parse("[Firmware]\nSearchPath=/a\nSearchPath=/b bad\n", &c, &log) == -EINVAL);
	CHECK(strv_equal(c->search_path, (const char *const[]){ "/a", NULL }));
	return 0;
}

static int test_load_dropins(void)
{
	_cleanup_(config_freep) Config *c = NULL;
	_cleanup_free_ char *main_path = path_join(tmpdir, "main.conf");
	_cleanup_free_ char *dropins = path_join(tmpdir, "main.conf.d");
	const char *log;
	int r;

	CHECK(main_path && dropins);
	CHECK(mkdir(dropins, 0755) == 0);
	CHECK(write_text(tmpdir, "main.conf",
			 "[Service]\nWorkers=2\nEventSource=kernel\n[Firmware]\nSearchPath=/main\n") == 0);
	CHECK(write_text(dropins, "20-b.conf", "[Service]\nWorkers=6\n") == 0);
	CHECK(write_text(dropins, "10-a.conf", "[Service]\nWorkers=3\n[Firmware]\nSearchPath=/a\n") == 0);
	CHECK(write_text(dropins, "05-first.conf", "[Firmware]\nSearchPath=/zero\n") == 0);
	CHECK(write_text(dropins, "99-later.conf.disabled", "[Service]\nWorkers=9\n") == 0);
	CHECK(write_text(dropins, ".hidden.conf", "[Service]\nWorkers=9\n") == 0);
	/* byte order, not locale order: "20-b" < "B" < "a", so a.conf comes last */
	CHECK(write_text(dropins, "a.conf", "[Service]\nWorkers=5\n") == 0);
	CHECK(write_text(dropins, "B.conf", "[Service]\nWorkers=7\n") == 0);

	capture_begin();
	r = config_load(main_path, STRV(dropins), &c);
	capture_end();
	CHECK(r == 0);
	CHECK(c->workers == 5);
	CHECK(c->event_source == EVENT_SOURCE_KERNEL);
	CHECK(strv_equal(c->search_path, (const char *const[]){ "/main", "/zero", "/a", NULL }));
	config_free(c);
	c = NULL;

	/* a broken drop-in fails the load and names itself; ret is left alone */
	CHECK(write_text(dropins, "30-broken.conf", "[Service]\n\nWorkers=100\n") == 0);
	capture_begin();
	r = config_load(main_path, STRV(dropins), &c);
	log = capture_end();
	CHECK(r == -EINVAL);
	CHECK(strstr(log, "main.conf.d/30-broken.conf:3: Invalid Workers="));
	CHECK(c == NULL);
	return 0;
}

/* dir/name, made under tmpdir */
static char *make_dir(const char *name)
{
	char *dir = path_join(tmpdir, name);

	if (dir && mkdir(dir, 0755) < 0)
		dir = mfree(dir);
	return dir;
}

/* /etc, /run, /usr/local/lib, /usr/lib as systemd orders them: the test stands in three. */
static int test_load_dropin_dirs(void)
{
	_cleanup_(config_freep) Config *c = NULL;
	_cleanup_free_ char *high = make_dir("etc.d"), *mid = make_dir("run.d"), *low = make_dir("usr.d");
	_cleanup_free_ char *masked = NULL;
	int r;

	CHECK(high && mid && low);
	/* the same name: only the highest directory's file is read */
	CHECK(write_text(high, "10-a.conf", "[Service]\nWorkers=3\n") == 0);
	CHECK(write_text(low, "10-a.conf", "[Service]\nWorkers=9\n[Firmware]\nSearchPath=/hidden\n") == 0);
	/* names ordered across all directories: 05 (low) before 10 (high) before 20 (mid) */
	CHECK(write_text(low, "05-low.conf", "[Firmware]\nSearchPath=/low\n[Service]\nWorkers=1\n") == 0);
	CHECK(write_text(mid, "20-mid.conf", "[Firmware]\nSearchPath=/mid\n") == 0);
	/* masked by a symlink to /dev/null, and by an empty file: even a broken one below */
	masked = path_join(high, "30-masked.conf");
	CHECK(masked && symlink("/dev/null", masked) == 0);
	CHECK(write_text(low, "30-masked.conf", "[Service]\nWorkers=zero\n") == 0);
	CHECK(write_text(mid, "40-empty.conf", "") == 0);
	CHECK(write_text(low, "40-empty.conf", "[Service]\nWorkers=8\n") == 0);

	capture_begin();
	r = config_load(NULL, (char *[]){ high, mid, low, NULL }, &c);
	capture_end();
	CHECK(r == 0);
	CHECK(c && c->workers == 3);
	CHECK(c && strv_equal(c->search_path, (const char *const[]){ "/low", "/mid", NULL }));
	config_free(c);
	c = NULL;

	/* a /dev/null drop-in with nothing beneath it: the daemon exited with 78 on it */
	capture_begin();
	r = config_load(NULL, STRV(high), &c);
	capture_end();
	CHECK(r == 0 && c && c->workers == 3);
	return 0;
}

static int test_load_missing(void)
{
	_cleanup_(config_freep) Config *c = NULL;
	_cleanup_free_ char *main_path = path_join(tmpdir, "nope.conf");
	_cleanup_free_ char *dropins = path_join(tmpdir, "nope.conf.d");
	int r;

	CHECK(config_load(main_path, STRV(dropins), &c) == 0);
	CHECK(c->workers == 4);
	config_free(c);
	c = NULL;

	/* a directory where the file should be is an error, not "missing" */
	capture_begin();
	r = config_load(tmpdir, NULL, &c);
	capture_end();
	CHECK(r < 0);
	CHECK(c == NULL);
	return 0;
}

static int test_event_source_strings(void)
{
	CHECK(event_source_from_string("udev") == EVENT_SOURCE_UDEV);
	CHECK(event_source_from_string("kernel") == EVENT_SOURCE_KERNEL);
	CHECK(event_source_from_string("none") == EVENT_SOURCE_NONE);
	CHECK(event_source_from_string("Udev") < 0);
	CHECK(event_source_from_string("") < 0);
	CHECK(strcmp(event_source_to_string(EVENT_SOURCE_KERNEL), "kernel") == 0);
	CHECK(event_source_to_string(_EVENT_SOURCE_MAX) == NULL);
	CHECK(event_source_to_string(_EVENT_SOURCE_INVALID) == NULL);
	return 0;
}

static const struct {
	const char *name;
	int (*func)(void);
} tests[] = {
	{ "defaults", test_defaults },
	{ "every key", test_every_key },
	{ "lists append and reset", test_lists },
	{ "empty assignment restores default", test_empty_restores_default },
	{ "comments", test_comments },
	{ "unknown keys warn", test_unknown },
	{ "syntax errors", test_syntax_errors },
	{ "invalid values", test_invalid_values },
	{ "all errors reported", test_all_errors_reported },
	{ "SearchPath all or nothing", test_search_path_all_or_nothing },
	{ "drop-ins", test_load_dropins },
	{ "drop-in directories, overrides, masks", test_load_dropin_dirs },
	{ "missing files", test_load_missing },
	{ "EventSource strings", test_event_source_strings },
};

int main(void)
{
	char cmd[PATH_MAX];
	unsigned failed = 0;

	if (!mkdtemp(tmpdir))
		return EXIT_FAILURE;
	log_set_target(LOG_TARGET_STDERR);
	log_set_max_level(LOG_DEBUG);
	for (size_t i = 0; i < ELEMENTSOF(tests); i++) {
		int r = tests[i].func();

		printf("%s: %s\n", r == 0 ? "ok" : "FAIL", tests[i].name);
		if (r != 0)
			failed++;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	(void)!system(cmd);
	printf("%zu tests, %u failed\n", ELEMENTSOF(tests), failed);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
