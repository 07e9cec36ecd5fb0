/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef uint64_t usec_t;
#define USEC_INFINITY ((usec_t)UINT64_MAX)
#define USEC_PER_SEC ((usec_t)1000000ULL)
#define USEC_PER_MSEC ((usec_t)1000ULL)

usec_t now_usec(clockid_t clock);

/* Writes all of s to dirfd/path (dirfd may be AT_FDCWD), one write() as sysfs attributes want. */
int write_string_at(int dirfd, const char *path, const char *s);
/* Reads a small file (< 64 KiB), strips the trailing newline. */
int read_string_at(int dirfd, const char *path, char **ret);
/* The same from an open fd, from its start: a sysfs attribute is formatted anew each time. */
int pread_string(int fd, char **ret);

/* Reads a file to its end, however the kernel splits it (sysfs: a page per read(); /proc:
 * st_size 0), into a NUL-terminated string; -EFBIG past max bytes. */
int read_full_file(const char *path, size_t max, char **ret);

int safe_atou64(const char *s, uint64_t *ret);
/* Parses a size with an optional K/M/G suffix (1024-based). */
int parse_size(const char *s, uint64_t *ret);
/* Parses seconds with an optional "ms", "s", "min" suffix; bare numbers are seconds. */
int parse_timespan(const char *s, usec_t *ret);
int parse_boolean(const char *s);

char *path_join(const char *a, const char *b);
/* a then b, as asprintf("%s%s") makes it without parsing a format; NULL when out of memory. */
char *strjoin(const char *a, const char *b);
/* Whether path is what path_join(a, b) makes, without making it. */
bool path_is_join(const char *path, const char *a, const char *b);
bool startswith(const char *s, const char *prefix);
bool endswith(const char *s, const char *suffix);

size_t strv_length(char * const *l);
bool strv_contains(char * const *l, const char *s);
/* Appends a copy of s; returns 0 or -ENOMEM. *l may be NULL. */
int strv_extend(char ***l, const char *s);
/* Splits on white space; returns 0 or -ENOMEM. */
int strv_split(const char *s, char ***ret);
char **strv_copy(char * const *l);

/* A copy with control bytes, DEL, backslash and non-ASCII shown as \xNN, for messages. */
char *cescape(const char *s);
/* Joins with sep; returns NULL on allocation failure. */
char *strv_join(char * const *l, const char *sep);
