/* SPDX-License-Identifier: MIT */
/*
 * request_device_gone() against a fixture "sysfs" tree laid out as the kernel lays out
 * fallback requests: under a "firmware" glue directory of a device without a class, right
 * under a device with one. Each step removes what the kernel would remove.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw-helperd-request.h"

static unsigned n_failed;

static void check(bool ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "FAIL", what);
	if (!ok)
		n_failed++;
}

/* A shell command on the fixture, which is $R there. */
static void run(const char *cmd)
{
	if (system(cmd) != 0)
		check(false, cmd);
}

/* .../dev/firmware/x.bin: the glue directory goes with its last request, the device stays */
static void test_glue(const char *root)
{
	char req[256];

	snprintf(req, sizeof(req), "%s/dev/firmware/x.bin", root);
	run("mkdir -p $R/dev/firmware/x.bin $R/dev/firmware/y.bin");
	check(!request_device_gone(req), "glue: request pending");
	run("rmdir $R/dev/firmware/x.bin");
	check(!request_device_gone(req), "glue: request ended, another one left");
	run("rmdir $R/dev/firmware/y.bin $R/dev/firmware");
	check(!request_device_gone(req), "glue: last request ended, glue directory gone with it");
	run("mkdir -p $R/dev/firmware/x.bin && rm -r $R/dev");
	check(request_device_gone(req), "glue: device removed with its request");
}

/* .../misc/cls/x.bin: a device with a class holds its requests itself */
static void test_class_parent(const char *root)
{
	char req[256];

	snprintf(req, sizeof(req), "%s/misc/cls/x.bin", root);
	run("mkdir -p $R/misc/cls/x.bin");
	check(!request_device_gone(req), "class: request pending");
	run("rmdir $R/misc/cls/x.bin");
	check(!request_device_gone(req), "class: request ended");
	run("mkdir -p $R/misc/cls/x.bin && rm -r $R/misc/cls");
	check(request_device_gone(req), "class: device removed with its request");
}

/* The journal's FW_REASON= and message for each way a request ends unserved. */
static void test_outcome(void)
{
	Request r = { .result = REQUEST_GONE };

	check(!request_reason_to_string(REASON_NONE), "reason: none has no FW_REASON=");
	check(strcmp(request_outcome(&r), "request went away") == 0, "outcome: gone");
	r.reason = REASON_DEVICE_REMOVED;
	check(strcmp(request_reason_to_string(r.reason), "device-removed") == 0, "reason: device-removed");
	check(strcmp(request_outcome(&r), "request went away with its device") == 0,
	      "outcome: gone with its device");
	r = (Request){ .result = REQUEST_FAILED, .reason = REASON_KERNEL_REFUSED_SIZE };
	check(strcmp(request_reason_to_string(r.reason), "kernel-refused-size") == 0,
	      "reason: kernel-refused-size");
	check(strstr(request_outcome(&r), "refused by the kernel") != NULL, "outcome: refused size");
	r.reason = REASON_NONE;
	check(strcmp(request_outcome(&r), "could not be served, answered -1") == 0, "outcome: failed");
	check(!request_reason_to_string(_REQUEST_REASON_MAX), "reason: out of range");
}

/* Runs a request for fw.bin (in $R/fw) against the fixture directory $R/<dir>. */
static Request *run_request(const char *root, const char *dir)
{
	char sysfs_dir[256], fw_root[256];
	char *roots[] = { fw_root, NULL };
	Request *r = NULL;

	snprintf(sysfs_dir, sizeof(sysfs_dir), "%s/%s", root, dir);
	snprintf(fw_root, sizeof(fw_root), "%s/fw", root);
	if (request_new("fw.bin", dir, sysfs_dir, NULL, now_usec(CLOCK_MONOTONIC), &r) < 0)
		return NULL;
	r->roots = strv_copy(roots);
	r->max_size = 1 << 20;
	r->deadline = USEC_INFINITY;
	request_run(r);
	return r;
}

/*
 * A request that went "gone" because a file of it was missing may be one the kernel is
 * still setting up (the directory comes before its attributes): the manager must be free
 * to take it again on the rescan that follows, so it is not settled. One the kernel was
 * done with (-ENODEV) or that was answered is.
 */
static void test_settled(const char *root)
{
	Request *r;

	run("mkdir -p $R/fw $R/early $R/served && head -c 5000 /dev/urandom >$R/fw/fw.bin");
	run(": >$R/early/loading"); /* data not there yet */
	run(": >$R/served/loading && : >$R/served/data");

	r = run_request(root, "early");
	check(r && r->result == REQUEST_GONE && r->error == -ENOENT, "early: gone, no data file");
	check(r && !request_settled(r), "early: not settled, a rescan may take it");
	request_free(r);

	run("rm $R/fw/fw.bin && rm $R/early/loading");
	r = run_request(root, "early");
	check(r && r->result == REQUEST_GONE && r->error == -ENOENT, "missing, abort found no loading: gone");
	check(r && !request_settled(r), "missing and no loading: not settled");
	request_free(r);

	run("head -c 5000 /dev/urandom >$R/fw/fw.bin");
	r = run_request(root, "served");
	check(r && r->result == REQUEST_SERVED, "served");
	check(r && request_settled(r), "served: settled");
	request_free(r);

	r = &(Request){ .result = REQUEST_GONE, .error = -ENODEV };
	check(request_settled(r), "gone with -ENODEV (the kernel ended it): settled");
	r = &(Request){ .result = REQUEST_MISSING, .error = -ENOENT };
	check(request_settled(r), "missing, answered -1: settled");
}

int main(void)
{
	char root[] = "/tmp/test-request-XXXXXX";

	if (!mkdtemp(root) || setenv("R", root, 1) < 0)
		return EXIT_FAILURE;
	test_glue(root);
	test_class_parent(root);
	test_outcome();
	test_settled(root);
	run("rm -rf $R");
	return n_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
