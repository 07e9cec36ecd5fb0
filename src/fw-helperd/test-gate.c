/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fw-helperd-gate.h"
#include "macro.h"
#include "util.h"

static unsigned n_failed;

static void check(bool ok, const char *what)
{
	printf("%s - %s\n", ok ? "ok" : "FAIL", what);
	if (!ok)
		n_failed++;
}

/* A root mounted rw, but seen through a read-only bind as ProtectSystem=strict makes it. */
static const char *const MOUNTINFO_STRICT =
	"22 1 8:1 / / ro,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
	"23 22 0:21 / /proc rw,nosuid - proc proc rw\n"
	"30 22 0:40 / /run rw,nosuid,nodev shared:5 - tmpfs tmpfs rw,mode=755\n"
	"31 22 8:2 / /usr ro,relatime shared:6 - ext4 /dev/sda2 ro\n"
	"32 22 0:41 / /mnt/with\\040space rw - tmpfs none ro\n"
	"33 31 0:42 / /usr/lib/firmware rw - tmpfs fw rw\n";

static void test_parse(void)
{
	check(gate_parse_writable(MOUNTINFO_STRICT, "/") == 1, "root: super options say rw");
	check(gate_parse_writable(MOUNTINFO_STRICT, "/etc/x") == 1, "/etc is on the root");
	check(gate_parse_writable(MOUNTINFO_STRICT, "/usr") == 0, "/usr read-only");
	check(gate_parse_writable(MOUNTINFO_STRICT, "/usr/share") == 0, "/usr/share on /usr");
	check(gate_parse_writable(MOUNTINFO_STRICT, "/usrx") == 1, "/usrx is not under /usr");
	check(gate_parse_writable(MOUNTINFO_STRICT, "/usr/lib/firmware/a") == 1, "longest mount wins");
	check(gate_parse_writable(MOUNTINFO_STRICT, "/mnt/with space/f") == 0, "escaped mount point");
	check(gate_parse_writable("", "/") == -ENOENT, "no mounts: -ENOENT");
	check(gate_parse_writable("garbage\n", "/") == -EBADMSG, "garbage: -EBADMSG");
	check(gate_parse_writable("1 0 0:1 / / rw - ext4 sda\n", "/") == -EBADMSG,
	      "missing super options: -EBADMSG");
	/* stacked on the same mount point: the later (upper) one counts */
	check(gate_parse_writable("1 0 8:1 / / rw - ext4 a rw\n2 1 8:1 / / ro - ext4 a ro\n", "/") == 0,
	      "remounted root: the later line counts");
	check(gate_parse_writable("1 0 8:1 / / rw shared:1 master:2 - ext4 a ro,x\n", "/") == 0,
	      "several optional fields");
}

static char *temp_dir(void)
{
	char tmpl[] = "/tmp/test-gate-XXXXXX";

	return mkdtemp(tmpl) ? strdup(tmpl) : NULL;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_gate(void)
{
	_cleanup_free_ char *dir = temp_dir(), *mi = NULL, *fw = NULL, *file = NULL, *missing = NULL;
	_cleanup_(gate_freep) Gate *g = NULL;
	char *roots[4] = {};

	mi = path_join(dir, "mountinfo");
	fw = path_join(dir, "firmware");
	file = path_join(dir, "file");
	missing = path_join(dir, "missing");
	check(mi && fw && file && missing && mkdir(fw, 0755) == 0, "fixture");
	write_file(file, "x");
	roots[0] = missing;
	roots[1] = fw;
	roots[2] = file;
	check(gate_roots_readable(roots) == 1, "existing, absent and not-a-directory roots: readable");
	{
		_cleanup_free_ char *xz = path_join(fw, "vendor.bin.xz");
		char *fw_roots[] = { missing, fw, NULL };

		write_file(xz, "x");
		check(gate_name_present(fw_roots, "vendor.bin"), "name present as .xz in the second root");
		check(!gate_name_present(fw_roots, "other.bin"), "absent name");
		unlink(xz);
	}
	roots[0] = NULL;
	check(gate_roots_readable(roots) == 1, "no roots: readable");
	roots[0] = fw;
	roots[1] = NULL;

	check(gate_new("/", mi, &g) == 0, "gate");
	write_file(mi, "1 0 8:1 / / rw - ext4 a ro\n");
	check(!gate_root_writable(g), "read-only root");
	gate_arm(g);
	check(g->root_ro_before, "armed: read-only before");
	check(gate_is_open(g, roots), "read-only before: readable roots are enough");

	write_file(mi, "1 0 8:1 / / rw - ext4 a rw\n");
	gate_arm(g);
	check(!g->root_ro_before, "armed: writable before");
	write_file(mi, "1 0 8:1 / / rw - ext4 a ro\n");
	check(!gate_is_open(g, roots), "writable before, read-only now: closed");
	write_file(mi, "1 0 8:1 / / ro - ext4 a rw\n");
	check(gate_is_open(g, roots), "superblock writable again: open");

	unlink(mi);
	check(gate_root_writable(g), "unreadable mountinfo: fail open");
	unlink(file);
	rmdir(fw);
	check(rmdir(dir) == 0, "cleaned up");
}

int main(void)
{
	test_parse();
	test_gate();
	printf("%u failed\n", n_failed);
	return n_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
