/* SPDX-License-Identifier: MIT */
/*
 * fw-helperd.conf: systemd-style INI read with inih.
 *
 * The rules (for fw-helperd.conf(5)):
 * - Sections [Firmware] and [Service]; keys are case-sensitive. Leading white space on
 *   a line is ignored (it never continues the previous line), "#" and ";" start a comment
 *   line, and " ;" (white space, then ";") starts a comment at the end of a value.
 * - A line holds at most 198 bytes (inih's fixed line buffer); list settings can be
 *   split over several assignments since they append.
 * - Later assignments override earlier ones, the main file first, then the drop-ins in
 *   lexical order. List settings (SearchPath=, OptionalFirmware=) take space-separated
 *   values and append; an empty assignment empties the list. An empty assignment to any
 *   other key restores its default.
 * - Syntax errors and invalid values are logged as "file:line: ..." at error level and
 *   make the whole load fail with -EINVAL: the daemon refuses to start, and a reload
 *   keeps the configuration it had. Every error in a file is reported, not just the first.
 * - Unknown sections and keys are logged as warnings with file:line and ignored, so a
 *   newer configuration still starts an older daemon.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/*
 * Debian's libinih is built with INI_HANDLER_LINENO=1 (its ini_parse_stream() passes the
 * line number as a fifth argument; checked in the disassembly of libinih.so.1, 55-1),
 * while ini.h defaults the macro to 0. The handler type must match the library. We do not
 * rely on the value though: the line reader below counts lines itself, so builds of inih
 * without it would still report the right lines.
 */
#define INI_HANDLER_LINENO 1
#include <ini.h>

#include "fw-helperd-conf.h"
#include "fw-helperd-messages.h"
#include "log.h"
#include "macro.h"
#include "util.h"

#define WORKERS_MAX 64U
#define CONFIG_FILE_MAX (1024U * 1024U)

static const char *const event_source_table[_EVENT_SOURCE_MAX] = {
	[EVENT_SOURCE_UDEV] = "udev",
	[EVENT_SOURCE_KERNEL] = "kernel",
	[EVENT_SOURCE_NONE] = "none",
};

const char *event_source_to_string(EventSource s)
{
	if (s < 0 || s >= _EVENT_SOURCE_MAX)
		return NULL;
	return event_source_table[s];
}

EventSource event_source_from_string(const char *s)
{
	for (int i = 0; i < _EVENT_SOURCE_MAX; i++)
		if (s && strcmp(s, event_source_table[i]) == 0)
			return (EventSource)i;
	return _EVENT_SOURCE_INVALID;
}

static const Config config_defaults = {
	.optional_log_level = LOG_DEBUG,
	.max_size = 1ULL << 30,
	.unpack_memory_max = 256ULL << 20,
	.workers = 4,
	.event_source = EVENT_SOURCE_UDEV,
	.timeout_margin = USEC_PER_SEC,
	.prewarm_memory_max = 128ULL << 20,
	.prewarm_timeout = 3 * USEC_PER_SEC,
	.resume_firmware_timeout = 120 * USEC_PER_SEC,
	.cache_release = 30 * USEC_PER_SEC,
	.defer_max = 30 * USEC_PER_SEC,
	.companion_mode = COMPANION_IF_AVAILABLE,
	.integrity_policy = VERIFY_POLICY_OFF,
};

typedef struct ConfigItem ConfigItem;

/* Where an assignment came from, for messages. */
typedef struct ConfigContext {
	const char *filename;
	unsigned line;
	const char *section;
	const ConfigItem *item;
} ConfigContext;

/* Parses value into data (a field of Config); logs and returns -EINVAL when invalid. */
typedef int (*ConfigParser)(const ConfigContext *ctx, const char *value, void *data);

struct ConfigItem {
	const char *section;
	const char *key;
	ConfigParser parse;
	size_t offset;
};

/*
 * Logs "file:line: message" as a journal entry with FW_MESSAGE_CONFIG, so that
 * `journalctl MESSAGE_ID=...` finds every configuration problem with its place
 * (line 0: the file as a whole). Returns -EINVAL, the error every problem becomes.
 */
static int config_log(int level, const char *filename, unsigned line, const char *format, ...)
	_printf_(4, 5);
static int config_log(int level, const char *filename, unsigned line, const char *format, ...)
{
	_cleanup_free_ char *message = NULL;
	LogEntry e = {};
	va_list ap;
	int r;

	va_start(ap, format);
	r = vasprintf(&message, format, ap);
	va_end(ap);
	if (r < 0)
		return log_oom();
	log_entry_add(&e, "FW_CONFIG_FILE=%s", filename);
	if (line > 0) {
		log_entry_add(&e, "FW_CONFIG_LINE=%u", line);
		log_entry_send(&e, level, 0, FW_MESSAGE_CONFIG, "%s:%u: %s", filename, line, message);
	} else
		log_entry_send(&e, level, 0, FW_MESSAGE_CONFIG, "%s: %s", filename, message);
	return -EINVAL;
}

/* Logs "file:line: Invalid Key= value 'v': why." with the value escaped. */
static int config_log_invalid(const ConfigContext *ctx, const char *value, const char *why)
{
	_cleanup_free_ char *escaped = cescape(value);

	return config_log(LOG_ERR, ctx->filename, ctx->line, "Invalid %s= value '%s': %s.",
			  ctx->item->key, escaped ?: "", why);
}

static const void *config_default_of(const ConfigContext *ctx)
{
	return (const uint8_t *)&config_defaults + ctx->item->offset;
}

/*
 * Makes an absolute path canonical without touching the file system: "//" and "/./"
 * collapse, a trailing "/" goes. ".." is refused rather than resolved: with symlinks it
 * need not mean the parent, and a search root should say what it means.
 */
static int path_normalize_absolute(const char *path, char **ret)
{
	_cleanup_free_ char *out = NULL;
	const char *p = path;
	char *o;

	if (path[0] != '/')
		return -EINVAL;
	out = malloc(strlen(path) + 1);
	if (!out)
		return -ENOMEM;
	o = out;
	while (*p) {
		size_t n;

		p += strspn(p, "/");
		n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return -EINVAL;
		if (!(n == 1 && p[0] == '.')) {
			*o++ = '/';
			memcpy(o, p, n);
			o += n;
		}
		p += n;
	}
	if (o == out)
		*o++ = '/';
	*o = 0;
	*ret = TAKE_PTR(out);
	return 0;
}

static int config_parse_strv(const ConfigContext *ctx, const char *value, void *data)
{
	char ***list = data;
	_cleanup_strv_free_ char **words = NULL;

	if (!*value) {
		strv_free(*list);
		*list = NULL;
		return 0;
	}
	if (strv_split(value, &words) < 0)
		return log_oom();
	for (char **w = words; *w; w++)
		if (strv_extend(list, *w) < 0)
			return log_oom();
	return 0;
}

static int config_parse_search_path(const ConfigContext *ctx, const char *value, void *data)
{
	char ***list = data;
	_cleanup_strv_free_ char **words = NULL, **paths = NULL;

	if (!*value)
		return config_parse_strv(ctx, value, data);
	if (strv_split(value, &words) < 0)
		return log_oom();
	/* all or nothing: a bad entry leaves the list as it was */
	for (char **w = words; *w; w++) {
		_cleanup_free_ char *path = NULL;
		int r;

		r = path_normalize_absolute(*w, &path);
		if (r == -ENOMEM)
			return log_oom();
		if (r < 0)
			return config_log_invalid(ctx, *w, "paths must be absolute, without \"..\"");
		if (strv_extend(&paths, path) < 0)
			return log_oom();
	}
	for (char **p = paths; p && *p; p++)
		if (strv_extend(list, *p) < 0)
			return log_oom();
	return 0;
}

static int config_parse_log_level(const ConfigContext *ctx, const char *value, void *data)
{
	int *level = data;
	int r;

	if (!*value) {
		*level = *(const int *)config_default_of(ctx);
		return 0;
	}
	r = log_level_from_string(value);
	if (r < 0)
		return config_log_invalid(ctx, value, "expected emerg, alert, crit, err, warning, "
						      "notice, info or debug");
	*level = r;
	return 0;
}

static int config_parse_size(const ConfigContext *ctx, const char *value, void *data)
{
	uint64_t *size = data;
	uint64_t v;

	if (!*value) {
		*size = *(const uint64_t *)config_default_of(ctx);
		return 0;
	}
	if (parse_size(value, &v) < 0)
		return config_log_invalid(ctx, value, "expected a size like 512K, 64M or 1G");
	if (v == 0)
		return config_log_invalid(ctx, value, "must be larger than 0");
	*size = v;
	return 0;
}

static int config_parse_workers(const ConfigContext *ctx, const char *value, void *data)
{
	unsigned *workers = data;
	uint64_t v;

	if (!*value) {
		*workers = *(const unsigned *)config_default_of(ctx);
		return 0;
	}
	if (safe_atou64(value, &v) < 0 || v < 1 || v > WORKERS_MAX)
		return config_log_invalid(ctx, value, "expected a number from 1 to 64");
	*workers = (unsigned)v;
	return 0;
}

static int config_parse_event_source(const ConfigContext *ctx, const char *value, void *data)
{
	EventSource *source = data;
	EventSource s;

	if (!*value) {
		*source = *(const EventSource *)config_default_of(ctx);
		return 0;
	}
	s = event_source_from_string(value);
	if (s < 0)
		return config_log_invalid(ctx, value, "expected udev, kernel or none");
	*source = s;
	return 0;
}

static int config_parse_companion_mode(const ConfigContext *ctx, const char *value, void *data)
{
	CompanionMode *mode = data;
	CompanionMode m;

	if (!*value) {
		*mode = *(const CompanionMode *)config_default_of(ctx);
		return 0;
	}
	m = companion_mode_from_string(value);
	if (m < 0)
		return config_log_invalid(ctx, value, "expected off, if-available or required");
	*mode = m;
	return 0;
}

static int config_parse_timespan(const ConfigContext *ctx, const char *value, void *data)
{
	usec_t *t = data;
	usec_t v;

	if (!*value) {
		*t = *(const usec_t *)config_default_of(ctx);
		return 0;
	}
	if (parse_timespan(value, &v) < 0 || v == USEC_INFINITY)
		return config_log_invalid(ctx, value, "expected a time like 1, 500ms or 2s");
	*t = v;
	return 0;
}

static int config_parse_verify_policy(const ConfigContext *ctx, const char *value, void *data)
{
	VerifyPolicy *policy = data;
	VerifyPolicy p;

	if (!*value) {
		*policy = *(const VerifyPolicy *)config_default_of(ctx);
		return 0;
	}
	p = verify_policy_from_string(value);
	if (p < 0)
		return config_log_invalid(ctx, value, "expected off, warn or enforce");
	*policy = p;
	return 0;
}

/* "<root>:<policy> ...", stored normalised; all or nothing like SearchPath=. */
static int config_parse_root_policy(const ConfigContext *ctx, const char *value, void *data)
{
	char ***list = data;
	_cleanup_strv_free_ char **words = NULL, **parsed = NULL;

	if (!*value)
		return config_parse_strv(ctx, value, data);
	if (strv_split(value, &words) < 0)
		return log_oom();
	for (char **w = words; *w; w++) {
		_cleanup_free_ char *root = NULL, *item = NULL;
		VerifyPolicy p;
		int r;

		r = verify_root_policy_parse(*w, &root, &p);
		if (r == -ENOMEM)
			return log_oom();
		if (r < 0)
			return config_log_invalid(ctx, *w, "expected <absolute root>:off|warn|enforce");
		if (asprintf(&item, "%s:%s", root, verify_policy_to_string(p)) < 0 ||
		    strv_extend(&parsed, item) < 0)
			return log_oom();
	}
	for (char **p = parsed; p && *p; p++)
		if (strv_extend(list, *p) < 0)
			return log_oom();
	return 0;
}

/* Every setting. New keys (and sections) need one line here and a parser. */
static const ConfigItem config_items[] = {
	{ "Firmware", "SearchPath",       config_parse_search_path,  offsetof(Config, search_path) },
	{ "Firmware", "OptionalFirmware", config_parse_strv,         offsetof(Config, optional_firmware) },
	{ "Firmware", "OptionalLogLevel", config_parse_log_level,    offsetof(Config, optional_log_level) },
	{ "Firmware", "MaxSize",          config_parse_size,         offsetof(Config, max_size) },
	{ "Firmware", "UnpackMemoryMax",  config_parse_size,         offsetof(Config, unpack_memory_max) },
	{ "Service",  "Workers",          config_parse_workers,      offsetof(Config, workers) },
	{ "Service",  "EventSource",      config_parse_event_source, offsetof(Config, event_source) },
	{ "Service",  "TimeoutMarginSec", config_parse_timespan,     offsetof(Config, timeout_margin) },
	{ "Service",  "CustomFallback",   config_parse_strv,         offsetof(Config, custom_fallback) },
	{ "Sleep",    "PrewarmFirmware",  config_parse_strv,         offsetof(Config, prewarm_firmware) },
	{ "Sleep",    "PrewarmMemoryMax", config_parse_size,         offsetof(Config, prewarm_memory_max) },
	{ "Sleep",    "PrewarmTimeoutSec", config_parse_timespan,    offsetof(Config, prewarm_timeout) },
	{ "Sleep",    "ResumeFirmwareTimeoutSec", config_parse_timespan, offsetof(Config, resume_firmware_timeout) },
	{ "Sleep",    "CacheReleaseSec",  config_parse_timespan,     offsetof(Config, cache_release) },
	{ "Sleep",    "DeferMaxSec",      config_parse_timespan,     offsetof(Config, defer_max) },
	{ "Module",   "Mode",             config_parse_companion_mode, offsetof(Config, companion_mode) },
	{ "Integrity", "Policy",          config_parse_verify_policy, offsetof(Config, integrity_policy) },
	{ "Integrity", "RootPolicy",      config_parse_root_policy,  offsetof(Config, integrity_root_policy) },
	{ "Integrity", "Manifest",        config_parse_search_path,  offsetof(Config, integrity_manifests) },
};

static const ConfigItem *config_item_find(const char *section, const char *key)
{
	for (size_t i = 0; i < ELEMENTSOF(config_items); i++)
		if (strcmp(config_items[i].section, section) == 0 &&
		    strcmp(config_items[i].key, key) == 0)
			return &config_items[i];
	return NULL;
}

int config_new(Config **ret)
{
	Config *c;

	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = config_defaults;
	*ret = c;
	return 0;
}

Config *config_free(Config *c)
{
	if (!c)
		return NULL;
	strv_free(c->search_path);
	strv_free(c->optional_firmware);
	strv_free(c->custom_fallback);
	strv_free(c->prewarm_firmware);
	strv_free(c->integrity_root_policy);
	strv_free(c->integrity_manifests);
	return mfree(c);
}

typedef struct ConfigParseState {
	Config *config;
	const char *filename;
	const char *cursor;	/* the text not yet handed to inih */
	unsigned line;		/* of the line last handed to inih */
	unsigned handler_error_line;	/* first line the handler refused (logged), or 0 */
	int error;		/* the first error, or 0 */
} ConfigParseState;

static void config_state_error(ConfigParseState *s, int r)
{
	if (s->error == 0)
		s->error = r;
}

/*
 * Syntax inih would accept but we do not: "[Section" without "]", a line with no "=",
 * "Key: value" (inih's configparser concession), an empty key. Returns the reason or NULL.
 */
/* inih stops looking for "]" or "=" at an inline comment: ";" after white space. */
static size_t length_before_comment(const char *line, size_t len)
{
	for (size_t i = 1; i < len; i++)
		if (line[i] == ';' && isspace((unsigned char)line[i - 1]))
			return i;
	return len;
}

static const char *config_line_invalid(const char *line, size_t len)
{
	const char *eq, *colon;
	size_t key_len;

	if (len == 0 || line[0] == '#' || line[0] == ';' || line[0] == '\r')
		return NULL;
	len = length_before_comment(line, len);
	if (line[0] == '[')
		return memchr(line, ']', len) ? NULL : "Section header without ']'";
	eq = memchr(line, '=', len);
	if (!eq)
		return "Expected 'Key=Value', '[Section]' or a comment";
	colon = memchr(line, ':', (size_t)(eq - line));
	if (colon)
		return "Expected 'Key=Value', found ':' before '='";
	for (key_len = (size_t)(eq - line); key_len > 0; key_len--)
		if (line[key_len - 1] != ' ' && line[key_len - 1] != '\t')
			break;
	if (key_len == 0)
		return "Assignment without a key";
	return NULL;
}

/*
 * Hands inih one line at a time (an fgets() look-alike). Leading white space is dropped,
 * so an indented line never becomes inih's multi-line continuation; lines inih would
 * split (too long) or misread are reported here and replaced by an empty line.
 */
static char *config_read_line(char *str, int num, void *stream)
{
	ConfigParseState *s = stream;
	const char *start = s->cursor, *eol;
	const char *why;
	size_t len;

	if (!*start)
		return NULL;
	eol = strchrnul(start, '\n');
	s->cursor = *eol ? eol + 1 : eol;
	s->line++;

	start += strspn(start, " \t");
	len = (size_t)(eol - start);
	if (len + 2 > (size_t)num) {
		config_state_error(s, config_log(LOG_ERR, s->filename, s->line,
						 "Line too long (%zu bytes, at most %d).", len, num - 2));
		len = 0;
	} else if ((why = config_line_invalid(start, len))) {
		config_state_error(s, config_log(LOG_ERR, s->filename, s->line, "%s.", why));
		len = 0;
	}
	memcpy(str, start, len);
	str[len] = '\n';
	str[len + 1] = 0;
	return str;
}

static int config_handler(void *user, const char *section, const char *key, const char *value,
			  int lineno)
{
	ConfigParseState *s = user;
	ConfigContext ctx = { .filename = s->filename, .line = s->line, .section = section };
	_cleanup_free_ char *k = NULL, *sec = NULL;
	int r;

	if (!section[0]) {
		k = cescape(key);
		(void)config_log(LOG_WARNING, s->filename, s->line,
				 "Assignment to '%s' outside of any section, ignoring.", k ?: "");
		return 1;
	}
	ctx.item = config_item_find(section, key);
	if (!ctx.item) {
		k = cescape(key);
		sec = cescape(section);
		(void)config_log(LOG_WARNING, s->filename, s->line,
				 "Unknown key '%s' in section [%s], ignoring.", k ?: "", sec ?: "");
		return 1;
	}
	r = ctx.item->parse(&ctx, value, (uint8_t *)s->config + ctx.item->offset);
	if (r < 0) {
		config_state_error(s, r);
		if (s->handler_error_line == 0)
			s->handler_error_line = s->line;
		return 0;
	}
	return 1;
}

int config_parse_string(Config *c, const char *filename, const char *text)
{
	ConfigParseState s = { .config = c, .filename = filename, .cursor = text };
	int r;

	r = ini_parse_stream(config_read_line, &s, config_handler, &s);
	if (r == -2)
		return log_oom();
	/*
	 * inih returns the first line it found wrong: a line the handler refused (logged
	 * there), or one of inih's own syntax checks that config_line_invalid() does not
	 * mirror exactly (e.g. " ;" inside a section header), logged here.
	 */
	if (r > 0 && (unsigned)r != s.handler_error_line)
		config_state_error(&s, config_log(LOG_ERR, filename, (unsigned)r, "Syntax error."));
	else if (r < 0)
		config_state_error(&s, config_log(LOG_ERR, filename, 0, "Failed to parse (%i).", r));
	return s.error;
}

static int config_read_file(const char *path, char **ret)
{
	_cleanup_close_ int fd = -EBADF;
	_cleanup_free_ char *buf = NULL;
	size_t size = 0;
	struct stat st;

	/* O_NONBLOCK: a FIFO in place of the file must not hang the daemon */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	buf = malloc(CONFIG_FILE_MAX + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf + size, CONFIG_FILE_MAX + 1 - size);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		size += (size_t)n;
		if (size > CONFIG_FILE_MAX)
			return -EFBIG;
	}
	if (memchr(buf, 0, size))
		return -EBADMSG;
	buf[size] = 0;
	*ret = TAKE_PTR(buf);
	return 0;
}

static bool is_dev_null(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

/*
 * A missing file is fine (nothing to configure), and so is /dev/null (a drop-in masked
 * with a symlink, as systemd does it); an unreadable one is an error.
 */
static int config_load_file(Config *c, const char *path)
{
	_cleanup_free_ char *text = NULL;
	int r;

	if (is_dev_null(path)) {
		log_debug("Configuration file %s is masked (/dev/null).", path);
		return 0;
	}
	r = config_read_file(path, &text);
	if (r == -ENOENT)
		return 0;
	if (r == -EBADMSG)
		return config_log(LOG_ERR, path, 0, "Contains a NUL byte, refusing.");
	if (r == -EINVAL)
		return config_log(LOG_ERR, path, 0, "Not a regular file, refusing.");
	if (r == -EFBIG)
		return config_log(LOG_ERR, path, 0, "Larger than %u bytes, refusing.", CONFIG_FILE_MAX);
	if (r < 0)
		return log_error_errno(r, "Failed to read configuration file %s: %m", path);
	log_debug("Reading configuration file %s.", path);
	return config_parse_string(c, path, text);
}

static int dropin_filter(const struct dirent *de)
{
	return de->d_name[0] != '.' && endswith(de->d_name, ".conf");
}

static const char *file_name(const char *path)
{
	return strrchr(path, '/') + 1;
}

/* Byte order, not the locale's: the order drop-ins apply must not depend on $LANG. */
static int dropin_compare(const void *a, const void *b)
{
	return strcmp(file_name(*(char * const *)a), file_name(*(char * const *)b));
}

static bool dropin_seen(char * const *paths, const char *name)
{
	for (; paths && *paths; paths++)
		if (strcmp(file_name(*paths), name) == 0)
			return true;
	return false;
}

/* Adds dir's drop-ins to *paths, but for names a higher-priority directory already had. */
static int dropins_add_dir(const char *dir, char ***paths)
{
	struct dirent **entries = NULL;
	int n, r = 0;

	n = scandir(dir, &entries, dropin_filter, NULL);
	if (n < 0) {
		if (errno == ENOENT)
			return 0;
		return log_error_errno(-errno, "Failed to read drop-in directory %s: %m", dir);
	}
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *path = NULL;

		if (r < 0 || dropin_seen(*paths, entries[i]->d_name))
			continue;
		path = path_join(dir, entries[i]->d_name);
		r = path ? strv_extend(paths, path) : -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		free(entries[i]);
	free(entries);
	return r < 0 ? log_oom() : 0;
}

static int config_load_dropins(Config *c, char * const *dirs)
{
	_cleanup_strv_free_ char **paths = NULL;
	int r = 0;

	for (char * const *d = dirs; d && *d; d++) {
		int q = dropins_add_dir(*d, &paths);

		if (q < 0 && r == 0)
			r = q;
	}
	if (paths)
		qsort(paths, strv_length(paths), sizeof(char *), dropin_compare);
	for (char **p = paths; p && *p; p++) {
		int q = config_load_file(c, *p);

		/* go on: every broken drop-in is reported in one go */
		if (q < 0 && r == 0)
			r = q;
	}
	return r;
}

int config_load(const char *main_path, char * const *dropin_dirs, Config **ret)
{
	_cleanup_(config_freep) Config *c = NULL;
	int r, q;

	r = config_new(&c);
	if (r < 0)
		return log_oom();
	r = main_path ? config_load_file(c, main_path) : 0;
	q = config_load_dropins(c, dropin_dirs);
	if (r < 0)
		return r;
	if (q < 0)
		return q;
	*ret = TAKE_PTR(c);
	return 0;
}
