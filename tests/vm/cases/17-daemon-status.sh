#!/bin/sh
# fwctl's counters follow what happened; anyone may read them, only root may act.
. "$(dirname "$0")/../daemon.sh"
fwh_setup
served0=$(fwctl_counter served)
missing0=$(fwctl_counter missing)
bytes0=$(fwctl_counter bytes_served)
blob "$SRV/count.bin" 1000
expect_served count.bin "$SRV/count.bin"
expect_served count.bin "$SRV/count.bin"
request count-missing.bin && fail "missing name served"
sleep 0.2
[ "$(fwctl_counter served)" = $((served0 + 2)) ] || fail "served counter: $(fwctl status --json)"
[ "$(fwctl_counter missing)" = $((missing0 + 1)) ] || fail "missing counter: $(fwctl status --json)"
[ "$(fwctl_counter bytes_served)" = $((bytes0 + 2000)) ] || fail "bytes counter"
[ "$(fwctl_counter in_flight)" = 0 ] || fail "in flight after all answered"

# An unprivileged user reads status through the real bus and policy, and is refused Rescan.
runuser -u fwuser -- fwctl status > /tmp/st.txt || fail "fwuser cannot read status"
grep -q Served /tmp/st.txt || fail "status for fwuser lacks counters"
runuser -u fwuser -- fwctl rescan; rc=$?
[ "$rc" = 4 ] || fail "fwuser rescan: exit $rc, expected 4 (permission denied)"
runuser -u fwuser -- fwctl reload; rc=$?
[ "$rc" = 4 ] || fail "fwuser reload: exit $rc, expected 4"

# Not running: a clear message and exit 3.
systemctl stop fw-helperd
fwctl status; rc=$?
[ "$rc" = 3 ] || fail "fwctl with the daemon stopped: exit $rc, expected 3"
fwh_restart start
rm -f "$SRV/count.bin" /tmp/st.txt
