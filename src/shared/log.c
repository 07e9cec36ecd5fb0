/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "log.h"

static int max_level = LOG_INFO;
static LogTarget target = LOG_TARGET_AUTO;

void log_set_max_level(int level)
{
	max_level = level;
}

int log_get_max_level(void)
{
	return max_level;
}

void log_set_target(LogTarget t)
{
	target = t;
}

int log_level_from_string(const char *s)
{
	static const char *const names[] = { "emerg", "alert", "crit", "err",
					     "warning", "notice", "info", "debug" };

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (strcmp(s, names[i]) == 0)
			return (int)i;
	return -EINVAL;
}

LogTarget log_target_from_string(const char *s)
{
	if (strcmp(s, "journal") == 0)
		return LOG_TARGET_JOURNAL;
	if (strcmp(s, "stderr") == 0 || strcmp(s, "console") == 0)
		return LOG_TARGET_STDERR;
	if (strcmp(s, "auto") == 0)
		return LOG_TARGET_AUTO;
	return -EINVAL;
}

/* True when stderr is the stream journald gave us (see systemd.exec(5), $JOURNAL_STREAM). */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return st.st_dev == dev && st.st_ino == ino;
}

static bool use_journal(void)
{
	static int cached = -1;

	if (target != LOG_TARGET_AUTO)
		return target == LOG_TARGET_JOURNAL;
	if (cached < 0)
		cached = stderr_is_journal();
	return cached;
}

static int send_entry(int level, int error, const char *message_id, char **fields, size_t n_fields,
		      const char *format, va_list ap)
{
	/* the journal's field, the text people read after its name */
	static const char prefix[] = "MESSAGE=";
	char message[sizeof(prefix) - 1 + 2048], *msg = message + sizeof(prefix) - 1;
	int saved = errno;

	memcpy(message, prefix, sizeof(prefix) - 1);
	errno = error < 0 ? -error : error;
	vsnprintf(msg, sizeof(message) - (sizeof(prefix) - 1), format, ap);
	errno = saved;

	if (!use_journal()) {
		fprintf(stderr, "%s\n", msg);
		return error < 0 ? error : -error;
	}

	struct iovec iov[LOG_ENTRY_MAX_FIELDS + 5];
	char priority[32], errno_field[32], mid[64];
	size_t n = 0;

	iov[n++] = (struct iovec){ message, strlen(message) };
	snprintf(priority, sizeof(priority), "PRIORITY=%i", level);
	iov[n++] = (struct iovec){ priority, strlen(priority) };
	if (error != 0) {
		snprintf(errno_field, sizeof(errno_field), "ERRNO=%i", error < 0 ? -error : error);
		iov[n++] = (struct iovec){ errno_field, strlen(errno_field) };
	}
	if (message_id) {
		snprintf(mid, sizeof(mid), "MESSAGE_ID=%s", message_id);
		iov[n++] = (struct iovec){ mid, strlen(mid) };
	}
	for (size_t i = 0; i < n_fields; i++)
		iov[n++] = (struct iovec){ fields[i], strlen(fields[i]) };

	sd_journal_sendv(iov, (int)n);
	return error < 0 ? error : -error;
}

int log_internal(int level, int error, const char *format, ...)
{
	va_list ap;
	int r;

	if (level > max_level)
		return error < 0 ? error : -error;
	va_start(ap, format);
	r = send_entry(level, error, NULL, NULL, 0, format, ap);
	va_end(ap);
	return r;
}

_Static_assert(LOG_ENTRY_MAX_FIELDS <= 64, "LogEntry.allocated has a bit per field");

/* Appends field f, laid out already (in the arena, or on the heap when allocated). */
static void entry_push(LogEntry *e, char *f, bool allocated)
{
	if (allocated)
		e->allocated |= UINT64_C(1) << e->n_fields;
	e->fields[e->n_fields++] = f;
}

void log_entry_add(LogEntry *e, const char *format, ...)
{
	size_t left = sizeof(e->arena) - e->arena_used;
	char *f = e->arena + e->arena_used;
	va_list ap, again;
	int n;

	if (e->n_fields >= LOG_ENTRY_MAX_FIELDS)
		return;
	va_start(ap, format);
	va_copy(again, ap);
	n = vsnprintf(f, left, format, ap);
	if (n >= 0 && (size_t)n < left) {
		e->arena_used += (size_t)n + 1;
		entry_push(e, f, false);
	} else if (n >= 0 && vasprintf(&f, format, again) >= 0)
		entry_push(e, f, true);
	va_end(again);
	va_end(ap);
}

void log_entry_add_string(LogEntry *e, const char *key, const char *value)
{
	size_t k = strlen(key), v = strlen(value), n = k + 1 + v + 1;
	bool on_heap = n > sizeof(e->arena) - e->arena_used;
	char *f;

	if (e->n_fields >= LOG_ENTRY_MAX_FIELDS)
		return;
	f = on_heap ? malloc(n) : e->arena + e->arena_used;
	if (!f)
		return;
	memcpy(f, key, k);
	f[k] = '=';
	memcpy(f + k + 1, value, v + 1);
	if (!on_heap)
		e->arena_used += n;
	entry_push(e, f, on_heap);
}

void log_entry_add_uint(LogEntry *e, const char *key, uint64_t value)
{
	char digits[21], *p = digits + sizeof(digits); /* 2^64 - 1 has 20 */

	*--p = 0;
	do
		*--p = (char)('0' + value % 10);
	while ((value /= 10) > 0);
	log_entry_add_string(e, key, p);
}

void log_entry_done(LogEntry *e)
{
	for (size_t i = 0; i < e->n_fields; i++)
		if (e->allocated & (UINT64_C(1) << i))
			free(e->fields[i]);
	e->n_fields = 0;
	e->allocated = 0;
	e->arena_used = 0;
}

int log_entry_send(LogEntry *e, int level, int error, const char *message_id, const char *format, ...)
{
	va_list ap;
	int r = error < 0 ? error : -error;

	if (level <= max_level) {
		va_start(ap, format);
		r = send_entry(level, error, message_id, e->fields, e->n_fields, format, ap);
		va_end(ap);
	}
	log_entry_done(e);
	return r;
}
