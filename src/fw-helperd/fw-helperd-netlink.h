/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * The kernel's uevents, read from its netlink multicast group without libudev: a message
 * is "ACTION@DEVPATH" and KEY=VALUE strings, each NUL-terminated. libudev would build a
 * device object (hash tables, a copy of every property, a random seed) and peek at each
 * datagram's size first; a request needs five of the fields (see README.md).
 */

/* Room for one message: the kernel's environment is at most 2 KiB (UEVENT_BUFFER_SIZE),
 * after "ACTION@DEVPATH". A longer one is cut short and passed over. */
#define KERNEL_UEVENT_MAX 8192

typedef struct KernelUevent {
	/* Point into the message; NULL when the message has no such key. */
	const char *action;
	const char *devpath;	/* "/devices/..." */
	const char *subsystem;
	const char *firmware;	/* FIRMWARE= */
	const char *timeout;	/* TIMEOUT= */
	uint64_t seqnum;
} KernelUevent;

/*
 * Takes buf[0..len) apart into *ret; the strings point into buf, which gets a NUL at
 * buf[len] (buf must have room for it). -EBADMSG unless it is a kernel message with
 * ACTION, DEVPATH, SUBSYSTEM and SEQNUM matching its "ACTION@DEVPATH" head.
 */
int kernel_uevent_parse(char *buf, size_t len, KernelUevent *ret);

/* A non-blocking socket on the kernel's uevent group, with a receive buffer of
 * rcvbuf bytes if allowed (the system's maximum otherwise). */
int kernel_uevents_open(size_t rcvbuf, int *ret_fd);

/*
 * Reads one message into buf (KERNEL_UEVENT_MAX + 1 bytes) and takes it apart into *ret:
 * 1 when one was read, 0 when none is left, -ENOBUFS when the socket overflowed and
 * messages were lost, another -errno on failure. Passed over and not returned: messages
 * from anything but the kernel, cut short or malformed.
 */
int kernel_uevent_receive(int fd, char *buf, KernelUevent *ret);
