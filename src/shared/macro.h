/* SPDX-License-Identifier: MIT */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _sentinel_ __attribute__((sentinel))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Hands ownership of *p to the caller and leaves NULL behind, so the cleanup does nothing. */
#define TAKE_PTR(p)                                    \
	({                                             \
		__typeof__(p) _p_ = (p);               \
		(p) = NULL;                            \
		_p_;                                   \
	})

#define TAKE_FD(fd)                                    \
	({                                             \
		int _fd_ = (fd);                       \
		(fd) = -EBADF;                         \
		_fd_;                                  \
	})

/* Defines name##p(type *p) that calls func(*p) when *p is set. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)        \
	static inline void func##p(type *p)            \
	{                                              \
		if (*p)                                \
			func(*p);                      \
	}

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline int safe_close(int fd)
{
	if (fd >= 0) {
		int saved = errno;
		close(fd);
		errno = saved;
	}
	return -EBADF;
}

static inline void closep(int *fd)
{
	safe_close(*fd);
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void strv_free(char **l)
{
	if (!l)
		return;
	for (char **i = l; *i; i++)
		free(*i);
	free(l);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* errno as a negative value, never 0, for calls that failed but may not have set it. */
static inline int negative_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

static inline void *mfree(void *p)
{
	free(p);
	return NULL;
}

/* Equal strings, or both NULL. */
static inline bool streq_ptr(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}
