/* SPDX-License-Identifier: MIT */
/*
 * calls [N]: what one system call costs where this runs, the mean of N (default 20000)
 * of each kind, in ns:
 *   getppid     entering and leaving the kernel, nothing more: what seccomp filters add
 *               to every call shows here
 *   stat-miss   a path lookup that fails at its first component
 *   open-close  a directory of three components opened (O_PATH) and closed again
 * and then how many seccomp filters it ran under (/proc/self/status; -1 when not told).
 * bench/calls.sh runs it in the guest, from a shell and in units with and without
 * fw-helperd's sandbox. Built static on the host; never shipped.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int seccomp_filters(void)
{
	char line[256];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp_filters: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	long long t0, t1, t2, t3;
	struct stat st;

	if (n <= 0) {
		fprintf(stderr, "usage: calls [N > 0]\n");
		return 2;
	}
	t0 = now_ns();
	for (int i = 0; i < n; i++)
		(void)getppid();
	t1 = now_ns();
	for (int i = 0; i < n; i++)
		(void)fstatat(AT_FDCWD, "/nonexistent/x.bin", &st, AT_SYMLINK_NOFOLLOW);
	t2 = now_ns();
	for (int i = 0; i < n; i++) {
		int fd = openat(AT_FDCWD, "/usr/lib/firmware", O_PATH | O_DIRECTORY | O_CLOEXEC);

		if (fd >= 0)
			close(fd);
	}
	t3 = now_ns();
	printf("getppid %lld stat-miss %lld open-close %lld filters %d\n", (t1 - t0) / n,
	       (t2 - t1) / n, (t3 - t2) / n, seccomp_filters());
	return 0;
}
