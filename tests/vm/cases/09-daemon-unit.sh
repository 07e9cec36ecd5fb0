#!/bin/sh
# The shipped unit is hardened (the exposure score stays low) and still does its job;
# --help, --version and --check-config behave.
. "$(dirname "$0")/../daemon.sh"
fwh_setup

systemd-analyze security --no-pager fw-helperd.service > /tmp/security.txt 2>&1
score=$(sed -n 's/.*Overall exposure level for fw-helperd.service: \([0-9.]*\).*/\1/p' /tmp/security.txt)
note "systemd-analyze security: exposure $score; what remains open:"
grep '✗' /tmp/security.txt | sed 's/^/#   /' || true
[ -n "$score" ] || { cat /tmp/security.txt; fail "no exposure score"; }
awk -v s="$score" 'BEGIN { exit !(s < 3.0) }' || { cat /tmp/security.txt; fail "exposure $score is not below 3.0"; }

# The sandbox still lets it answer (every other case depends on it too).
blob "$SRV/unit.bin" 4097
expect_served unit.bin "$SRV/unit.bin"
pid=$(systemctl show -P MainPID fw-helperd)
grep -q '^CapBnd:.*' /proc/"$pid"/status || fail "no status for $pid"
caps=$(sed -n 's/^CapEff:\t//p' /proc/"$pid"/status)
note "effective capabilities: $caps"
# CAP_SYS_RAWIO (17) only, 0x20000: the module is loaded by ExecStartPre=+, outside it
[ "$caps" = 0000000000020000 ] || fail "effective capabilities $caps, expected only SYS_RAWIO"
grep -q '^Seccomp:.*2' /proc/"$pid"/status || fail "no seccomp filter"
# module loading is outside the daemon's system call filter (@module dropped)
systemctl show -P SystemCallFilter fw-helperd | grep -qw finit_module \
	&& fail "finit_module is allowed to the daemon"
note "module loaded by ExecStartPre=+: $(journalctl -q -o cat -u fw-helperd -b MESSAGE_ID=db8b506e751c473b8ee4036c7c046eb7 | tail -n 1)"
systemctl show -P BusName fw-helperd | grep -qx org.fwhelperd1 || fail "no BusName="
systemctl show -P Names fw-helperd | grep -qw dbus-org.fwhelperd1.service \
	|| fail "dbus-org.fwhelperd1.service is not an alias: $(systemctl show -P Names fw-helperd)"

/usr/lib/fw-helperd/fw-helperd --version | grep -q '^fw-helperd ' || fail "--version"
/usr/lib/fw-helperd/fw-helperd --help | grep -q -- '--check-config' || fail "--help"
/usr/lib/fw-helperd/fw-helperd --check-config || fail "shipped configuration does not check"
printf '[Service]\nWorkers=0\n' > /etc/fw-helperd/fw-helperd.conf.d/99-broken.conf
/usr/lib/fw-helperd/fw-helperd --check-config 2>/tmp/check.txt; rc=$?
rm -f /etc/fw-helperd/fw-helperd.conf.d/99-broken.conf
[ "$rc" = 78 ] || fail "--check-config on a broken drop-in: exit $rc, expected 78"
grep -q '99-broken.conf:2' /tmp/check.txt || fail "no file:line in: $(cat /tmp/check.txt)"
rm -f "$SRV/unit.bin" /tmp/security.txt /tmp/check.txt
