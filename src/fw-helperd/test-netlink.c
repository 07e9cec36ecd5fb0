/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "fw-helperd-netlink.h"
#include "macro.h"
#include "tests.h"

/* A message as the kernel sends it: "ACTION@DEVPATH", then KEY=VALUE, each NUL-ended. */
static char buf[KERNEL_UEVENT_MAX + 1];

static int parse(const char *const *parts, KernelUevent *ret)
{
	size_t len = 0;

	for (const char *const *p = parts; *p; p++) {
		size_t n = strlen(*p) + 1;

		memcpy(buf + len, *p, n);
		len += n;
	}
	return kernel_uevent_parse(buf, len, ret);
}

static void test_request(void)
{
	KernelUevent e;

	CHECK(parse((const char *[]){ "add@/devices/virtual/misc/test_firmware/a.bin", "ACTION=add",
				      "DEVPATH=/devices/virtual/misc/test_firmware/a.bin",
				      "SUBSYSTEM=firmware", "FIRMWARE=vendor/a.bin", "TIMEOUT=60",
				      "ASYNC=0", "SEQNUM=4711", NULL }, &e) == 0);
	CHECK(strcmp(e.action, "add") == 0);
	CHECK(strcmp(e.devpath, "/devices/virtual/misc/test_firmware/a.bin") == 0);
	CHECK(strcmp(e.subsystem, "firmware") == 0);
	CHECK(strcmp(e.firmware, "vendor/a.bin") == 0);
	CHECK(strcmp(e.timeout, "60") == 0);
	CHECK(e.seqnum == 4711);
}

static void test_other_device(void)
{
	KernelUevent e;

	CHECK(parse((const char *[]){ "remove@/module/fwh_cache", "ACTION=remove",
				      "DEVPATH=/module/fwh_cache", "SUBSYSTEM=module", "SEQNUM=5", NULL },
		    &e) == 0);
	CHECK(strcmp(e.subsystem, "module") == 0);
	CHECK(!e.firmware && !e.timeout);
}

static void test_refused(void)
{
	KernelUevent e;

	/* udev's copies, on its own group, start with "libudev" and a binary header */
	CHECK(parse((const char *[]){ "libudev", "ACTION=add", NULL }, &e) == -EBADMSG);
	/* each of the four it cannot do without */
	CHECK(parse((const char *[]){ "add@/devices/x", "DEVPATH=/devices/x", "SUBSYSTEM=s",
				      "SEQNUM=1", NULL }, &e) == -EBADMSG);
	CHECK(parse((const char *[]){ "add@/devices/x", "ACTION=add", "SUBSYSTEM=s", "SEQNUM=1",
				      NULL }, &e) == -EBADMSG);
	CHECK(parse((const char *[]){ "add@/devices/x", "ACTION=add", "DEVPATH=/devices/x",
				      "SEQNUM=1", NULL }, &e) == -EBADMSG);
	CHECK(parse((const char *[]){ "add@/devices/x", "ACTION=add", "DEVPATH=/devices/x",
				      "SUBSYSTEM=s", NULL }, &e) == -EBADMSG);
	CHECK(parse((const char *[]){ "add@/devices/x", "ACTION=add", "DEVPATH=/devices/x",
				      "SUBSYSTEM=s", "SEQNUM=1x", NULL }, &e) == -EBADMSG);
	/* a head that says otherwise than the fields */
	CHECK(parse((const char *[]){ "add@/devices/y", "ACTION=add", "DEVPATH=/devices/x",
				      "SUBSYSTEM=s", "SEQNUM=1", NULL }, &e) == -EBADMSG);
	CHECK(parse((const char *[]){ "remove@/devices/x", "ACTION=add", "DEVPATH=/devices/x",
				      "SUBSYSTEM=s", "SEQNUM=1", NULL }, &e) == -EBADMSG);
	CHECK(parse((const char *[]){ "add@devices/x", "ACTION=add", "DEVPATH=devices/x",
				      "SUBSYSTEM=s", "SEQNUM=1", NULL }, &e) == -EBADMSG);
	/* a head alone, or one with no end */
	CHECK(parse((const char *[]){ "add@/devices/x", NULL }, &e) == -EBADMSG);
	memcpy(buf, "add@/devices/x", 14);
	CHECK(kernel_uevent_parse(buf, 14, &e) == -EBADMSG);
}

/* A last field cut off without its NUL still ends inside the buffer. */
static void test_unterminated(void)
{
	static const char msg[] = "add@/d\0ACTION=add\0DEVPATH=/d\0SUBSYSTEM=firmware\0SEQNUM=9\0FIRMWARE=ab";
	KernelUevent e;

	memset(buf, 'x', sizeof(buf));
	memcpy(buf, msg, sizeof(msg) - 1);
	CHECK(kernel_uevent_parse(buf, sizeof(msg) - 1, &e) == 0);
	CHECK(e.firmware && strcmp(e.firmware, "ab") == 0);
}

int main(void)
{
	test_request();
	test_other_device();
	test_refused();
	test_unterminated();
	return test_failures ? 1 : 0;
}
