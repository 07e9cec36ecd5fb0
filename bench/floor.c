// SPDX-License-Identifier: MIT
/*
 * floor DIR...: the least a user-space firmware helper can do, as a bench peer.
 *
 * Reads the kernel's uevents itself (NETLINK_KOBJECT_UEVENT, group 1) and answers each
 * firmware "add" in turn: "1" to loading, the file sendfile()d into data, "0" to loading;
 * "-1" when no DIR holds the file or the copy fails. No logging, no threads, no udev, no
 * configuration: what is left of a request's time with it is the kernel's and the
 * scheduler's. Built static on the host by bench/run.sh (gcc -static -O2); never shipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* A burst of requests queues its events here while one is being answered. */
#define RCVBUF (16 * 1024 * 1024)

static int write_str(int dirfd, const char *file, const char *s)
{
	int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n < 0 ? -errno : 0;
}

static int open_firmware(char **dirs, const char *name)
{
	int fd;

	if (strstr(name, ".."))
		return -EINVAL;
	for (; *dirs; dirs++) {
		char path[4096];

		if (snprintf(path, sizeof(path), "%s/%s", *dirs, name) >= (int)sizeof(path))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			return fd;
	}
	return -ENOENT;
}

/* The whole file into data: sendfile() where the kernel allows it, else read/write. */
static int copy_all(int in, int out, off_t size)
{
	off_t off = 0;
	char buf[65536];

	while (off < size) {
		ssize_t n = sendfile(out, in, &off, size - off);

		if (n > 0)
			continue;
		if (n == 0)
			return -EIO;
		if (errno != EINVAL && errno != ENOSYS)
			return -errno;
		n = pread(in, buf, sizeof(buf), off);
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(out, buf + done, n - done);

			if (w <= 0)
				return w < 0 ? -errno : -EIO;
			done += w;
		}
		off += n;
	}
	return 0;
}

static void answer(char **dirs, const char *devpath, const char *name)
{
	char sys[4096];
	int dirfd, fw, data, r = -ENOENT;
	struct stat st;

	if (snprintf(sys, sizeof(sys), "/sys%s", devpath) >= (int)sizeof(sys))
		return;
	dirfd = open(sys, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return;
	fw = open_firmware(dirs, name);
	if (fw >= 0 && fstat(fw, &st) == 0 && write_str(dirfd, "loading", "1") == 0) {
		data = openat(dirfd, "data", O_WRONLY | O_CLOEXEC);
		r = data < 0 ? -errno : copy_all(fw, data, st.st_size);
		if (data >= 0)
			close(data);
	}
	if (fw >= 0)
		close(fw);
	write_str(dirfd, "loading", r == 0 ? "0" : "-1");
	close(dirfd);
}

/* One uevent: "ACTION@DEVPATH\0KEY=VALUE\0...". */
static void handle(char **dirs, const char *msg, size_t len)
{
	const char *action = NULL, *devpath = NULL, *subsystem = NULL, *firmware = NULL;

	for (const char *p = msg + strlen(msg) + 1; p < msg + len; p += strlen(p) + 1) {
		if (!strncmp(p, "ACTION=", 7))
			action = p + 7;
		else if (!strncmp(p, "DEVPATH=", 8))
			devpath = p + 8;
		else if (!strncmp(p, "SUBSYSTEM=", 10))
			subsystem = p + 10;
		else if (!strncmp(p, "FIRMWARE=", 9))
			firmware = p + 9;
	}
	if (action && devpath && subsystem && firmware && !strcmp(action, "add") &&
	    !strcmp(subsystem, "firmware"))
		answer(dirs, devpath, firmware);
}

int main(int argc, char **argv)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	int sock, size = RCVBUF;
	char msg[8192];

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR...\n", argv[0]);
		return 2;
	}
	sock = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
	if (sock < 0 || bind(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("uevent socket");
		return 1;
	}
	if (setsockopt(sock, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		setsockopt(sock, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	for (;;) {
		ssize_t n = recv(sock, msg, sizeof(msg) - 1, 0);

		if (n < 0) {
			/* ENOBUFS: events were lost; go on with the next ones. */
			if (errno == EINTR || errno == ENOBUFS)
				continue;
			perror("recv");
			return 1;
		}
		msg[n] = '\0';
		handle(argv + 1, msg, n);
	}
}
