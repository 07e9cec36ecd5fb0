/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <syslog.h>

#include "macro.h"

/*
 * Logging: to the journal (structured, via sd_journal_send) when stderr is connected to
 * journald ($JOURNAL_STREAM) or when forced, else plain lines on stderr.
 * src/shared/ itself never logs above LOG_DEBUG: the caller decides what matters.
 */

typedef enum LogTarget {
	LOG_TARGET_AUTO,
	LOG_TARGET_JOURNAL,
	LOG_TARGET_STDERR,
} LogTarget;

void log_set_max_level(int level);
int log_get_max_level(void);
void log_set_target(LogTarget target);
int log_level_from_string(const char *s);
LogTarget log_target_from_string(const char *s);

/* Logs and returns error (a negative errno, its sign ignored for %m). */
int log_internal(int level, int error, const char *format, ...) _printf_(3, 4);

#define log_full_errno(level, error, ...) log_internal((level), (error), __VA_ARGS__)
#define log_debug(...) log_internal(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_internal(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_internal(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) log_internal(LOG_DEBUG, (e), __VA_ARGS__)
#define log_notice_errno(e, ...) log_internal(LOG_NOTICE, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_internal(LOG_ERR, (e), __VA_ARGS__)
#define log_oom() log_internal(LOG_ERR, -ENOMEM, "Out of memory.")

/*
 * A structured journal entry: fields added one by one ("KEY=value"), then sent with a
 * MESSAGE_ID and a human MESSAGE. On stderr only the MESSAGE is printed.
 */
#define LOG_ENTRY_MAX_FIELDS 64
/* Fields are formatted into the entry itself, on the caller's stack; one that does not fit
 * into what is left of it is allocated. A served request's entry takes some 600 bytes. */
#define LOG_ENTRY_ARENA 4096

typedef struct LogEntry {
	char *fields[LOG_ENTRY_MAX_FIELDS];
	size_t n_fields;
	uint64_t allocated;	/* bit i: fields[i] is on the heap, not in the arena */
	size_t arena_used;
	char arena[LOG_ENTRY_ARENA];
} LogEntry;

/* Adds "KEY=value"; silently drops fields past the maximum or on allocation failure. */
void log_entry_add(LogEntry *e, const char *format, ...) _printf_(2, 3);
/* The same for a string or a number as it is, without printf()'s cost: key "FW_PATH", the
 * field "FW_PATH=<value>". */
void log_entry_add_string(LogEntry *e, const char *key, const char *value);
void log_entry_add_uint(LogEntry *e, const char *key, uint64_t value);
/* Sends the entry and frees its fields; returns error like log_internal(). */
int log_entry_send(LogEntry *e, int level, int error, const char *message_id, const char *format, ...)
	_printf_(5, 6);
void log_entry_done(LogEntry *e);
