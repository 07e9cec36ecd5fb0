/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw-helperd-name.h"
#include "macro.h"
#include "util.h"

static unsigned n_failed;

/* One line per check; a failure does not stop the run, so one report shows them all. */
static void check(bool ok, const char *what, const char *detail)
{
	printf("%s - %s%s%s\n", ok ? "ok" : "FAIL", what, detail ? ": " : "", detail ?: "");
	if (!ok)
		n_failed++;
}

static void expect_accepted(const char *name)
{
	_cleanup_free_ char *shown = cescape(name);
	const char *reason = NULL;
	int r;

	r = fw_name_check(name, &reason);
	check(r == 0, shown, r == 0 ? "accepted" : reason);
}

static void expect_refused(const char *name, int error)
{
	_cleanup_free_ char *shown = name ? cescape(name) : strdup("(null)");
	char detail[256];
	const char *reason = NULL;
	int r;

	r = fw_name_check(name, &reason);
	snprintf(detail, sizeof(detail), "refused with %s, wanted %s (%s)", r < 0 ? strerror(-r) : "nothing",
		 strerror(-error), reason ?: "no reason given");
	check(r == error && reason && *reason, shown, detail);
}

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		abort();
	memset(s, c, n);
	s[n] = 0;
	return s;
}

/* Names linux-firmware really ships (WHENCE), and the characters the kernel lets through. */
static void test_accepted(void)
{
	static const char *const names[] = {
		"iwlwifi-cc-a0-77.ucode",
		"intel/ibt-0040-0041.sfi",
		"brcm/brcmfmac43455-sdio.raspberrypi,4-model-b.txt",
		"ath10k/QCA6174/hw3.0/board-2.bin",
		"qcom/sm8250/adsp.mbn",
		"mediatek/mt7921/WIFI_RAM_CODE_MT7961_1.bin",
		"cxgb4/t6fw-1.27.5.0.bin",
		"amd-ucode/microcode_amd_fam19h.bin",
		"brcm/brcmfmac4356-pcie.Intel Corporation-CHERRYVIEW D1 PLATFORM.txt",
		"lib+firmware@vendor~1.bin",
		"..hidden",
		"...",
		"a/.b",
		"dir.d/file..bin",
		"caf\xc3\xa9.bin",
		"back\\slash",
		"bang!name",
	};

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		expect_accepted(names[i]);
}

static void test_refused(void)
{
	static const char *const names[] = {
		"", "/lib/firmware/foo.bin", "/", ".", "..", "../foo", "foo/..", "a/../b",
		"./foo", "a/./b", "a/.", "a//b", "a/", "//", "line\nbreak", "tab\tname",
		"del\x7f", "\x01start", "esc\x1b[31m", "cr\r",
	};

	expect_refused(NULL, -EINVAL);
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		expect_refused(names[i], -EINVAL);
}

static void expect_result(const char *name, int want, const char *what)
{
	const char *reason = NULL;
	int r;

	r = fw_name_check(name, &reason);
	check(r == want, what, r == 0 ? "accepted" : reason);
}

static void test_lengths(void)
{
	_cleanup_free_ char *component_ok = repeat('c', FW_NAME_COMPONENT_MAX);
	_cleanup_free_ char *component_long = repeat('c', FW_NAME_COMPONENT_MAX + 1);
	_cleanup_free_ char *total_ok = repeat('a', FW_NAME_MAX);
	_cleanup_free_ char *total_long = repeat('a', FW_NAME_MAX + 1);

	/* short components, so that only the total limit can trip */
	for (size_t i = 1; i + 1 < FW_NAME_MAX; i += 2) {
		total_ok[i] = '/';
		total_long[i] = '/';
	}
	expect_result(component_ok, 0, "component of exactly 255 bytes accepted");
	expect_result(component_long, -ENAMETOOLONG, "component of 256 bytes refused");
	expect_result(total_ok, 0, "name of exactly FW_NAME_MAX bytes accepted");
	expect_result(total_long, -ENAMETOOLONG, "name of FW_NAME_MAX + 1 bytes refused");
	check(fw_name_check("ok", NULL) == 0 && fw_name_check("..", NULL) == -EINVAL,
	      "ret_reason may be NULL", NULL);
}

static void expect_sysfs(const char *dirname, const char *want)
{
	_cleanup_free_ char *name = NULL;
	char what[256];
	int r;

	snprintf(what, sizeof(what), "sysfs '%s' -> '%s'", dirname, want);
	r = fw_name_from_sysfs(dirname, &name);
	check(r == 0 && name && strcmp(name, want) == 0, what, name ?: "no result");
}

static void test_from_sysfs(void)
{
	_cleanup_free_ char *name = NULL;

	expect_sysfs("iwlwifi-cc-a0-77.ucode", "iwlwifi-cc-a0-77.ucode");
	expect_sysfs("intel!ibt-0040-0041.sfi", "intel/ibt-0040-0041.sfi");
	expect_sysfs("ath10k!QCA6174!hw3.0!board-2.bin", "ath10k/QCA6174/hw3.0/board-2.bin");
	expect_sysfs("!!..!x", "//../x");
	/* the translation does not vouch for the result: the check still has to refuse it */
	check(fw_name_from_sysfs("..!..!etc!shadow", &name) == 0 && fw_name_check(name, NULL) == -EINVAL,
	      "sysfs name with '..' comes back and is refused by the check", name);
}

int main(void)
{
	test_accepted();
	test_refused();
	test_lengths();
	test_from_sysfs();

	if (n_failed > 0) {
		printf("%u check(s) failed\n", n_failed);
		return EXIT_FAILURE;
	}
	printf("all checks passed\n");
	return EXIT_SUCCESS;
}
