/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <linux/netlink.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fw-helperd-netlink.h"
#include "log.h"
#include "macro.h"
#include "util.h"

/* The kernel's own group; udev's (2) carries its processed copies. */
#define KERNEL_UEVENT_GROUP 1

static void take_field(KernelUevent *e, const char *field)
{
	static const struct {
		const char *key;
		size_t offset;
	} keys[] = {
		{ "ACTION=", offsetof(KernelUevent, action) },
		{ "DEVPATH=", offsetof(KernelUevent, devpath) },
		{ "SUBSYSTEM=", offsetof(KernelUevent, subsystem) },
		{ "FIRMWARE=", offsetof(KernelUevent, firmware) },
		{ "TIMEOUT=", offsetof(KernelUevent, timeout) },
	};

	for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
		size_t n = strlen(keys[i].key);

		if (strncmp(field, keys[i].key, n) == 0) {
			*(const char **)((char *)e + keys[i].offset) = field + n;
			return;
		}
	}
}

int kernel_uevent_parse(char *buf, size_t len, KernelUevent *ret)
{
	KernelUevent e = {};
	const char *seqnum = NULL, *at;
	size_t head_len;

	buf[len] = 0;
	head_len = strlen(buf);
	at = strchr(buf, '@');
	/* libudev's messages start "libudev\0"; the kernel's never without '@' */
	if (!at || head_len >= len)
		return -EBADMSG;
	for (char *p = buf + head_len + 1; p < buf + len; p += strlen(p) + 1) {
		if (strncmp(p, "SEQNUM=", 7) == 0)
			seqnum = p + 7;
		else
			take_field(&e, p);
	}
	if (!e.action || !e.devpath || !e.subsystem || !seqnum || safe_atou64(seqnum, &e.seqnum) < 0)
		return -EBADMSG;
	/* the head says the same as the fields, or the message was put together wrong */
	if ((size_t)(at - buf) != strlen(e.action) || strncmp(buf, e.action, at - buf) != 0 ||
	    strcmp(at + 1, e.devpath) != 0 || e.devpath[0] != '/')
		return -EBADMSG;
	*ret = e;
	return 0;
}

int kernel_uevents_open(size_t rcvbuf, int *ret_fd)
{
	struct sockaddr_nl addr = { .nl_family = AF_NETLINK, .nl_groups = KERNEL_UEVENT_GROUP };
	int fd, on = 1, size = (int)MIN(rcvbuf, (size_t)INT32_MAX);

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
	if (fd < 0)
		return -errno;
	/* FORCE needs CAP_NET_ADMIN, which the unit does not grant: then the system's max */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) < 0 ||
	    bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/* Sent by the kernel itself: port 0, and credentials of uid 0. */
static bool from_kernel(const struct msghdr *msg, const struct sockaddr_nl *sender)
{
	struct cmsghdr *c = CMSG_FIRSTHDR(msg);
	struct ucred cred;

	if (sender->nl_pid != 0 || !c || c->cmsg_level != SOL_SOCKET ||
	    c->cmsg_type != SCM_CREDENTIALS || c->cmsg_len != CMSG_LEN(sizeof(cred)))
		return false;
	memcpy(&cred, CMSG_DATA(c), sizeof(cred));
	return cred.uid == 0;
}

int kernel_uevent_receive(int fd, char *buf, KernelUevent *ret)
{
	for (;;) {
		char control[CMSG_SPACE(sizeof(struct ucred))];
		struct sockaddr_nl sender = {};
		struct iovec iov = { .iov_base = buf, .iov_len = KERNEL_UEVENT_MAX };
		struct msghdr msg = {
			.msg_name = &sender, .msg_namelen = sizeof(sender),
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = control, .msg_controllen = sizeof(control),
		};
		ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 0 : -errno;
		if (!from_kernel(&msg, &sender)) {
			log_debug("Passing over a uevent message not sent by the kernel.");
			continue;
		}
		if (msg.msg_flags & MSG_TRUNC) {
			log_debug("Passing over a uevent message of more than %d bytes.", KERNEL_UEVENT_MAX);
			continue;
		}
		if (kernel_uevent_parse(buf, (size_t)n, ret) < 0) {
			log_debug("Passing over a malformed uevent message.");
			continue;
		}
		return 1;
	}
}
