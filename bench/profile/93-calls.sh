#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/calls.sh's case: what a system call costs in the guest, from the test's shell, in
# a unit with no sandbox and in a unit with fw-helperd's own (the [Service] lines of the
# installed fw-helperd.service that confine it), ROUNDS times in turn; medians in ns.
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/bench.sh
need_fw_helperd
CALLS=/usr/lib/fwh-vmtest/peers/calls
[ -x "$CALLS" ] || skip "no calls program (run bench/calls.sh)"
ROUNDS=7
N=20000

unit=$(systemctl show -P FragmentPath fw-helperd.service)
[ -f "$unit" ] || fail "fw-helperd.service has no unit file"
sandboxed=/run/systemd/system/fwh-calls-sandbox.service
plain=/run/systemd/system/fwh-calls-plain.service
at_exit "rm -f '$sandboxed' '$plain'; systemctl daemon-reload"
printf '[Service]\nType=oneshot\nExecStart=%s %s\n' "$CALLS" "$N" >"$plain"
{
	cat "$plain"
	awk '/^\[Service\]/ { s = 1; next } /^\[/ { s = 0 }
		s && /^(CapabilityBoundingSet|NoNewPrivileges|Protect[A-Za-z]*|DevicePolicy|ReadWritePaths|Restrict[A-Za-z]*|IPAddressDeny|LockPersonality|MemoryDenyWriteExecute|RemoveIPC|SystemCall[A-Za-z]*|UMask|MemoryMax)=/' "$unit"
} >"$sandboxed"
systemctl daemon-reload
info "# the sandbox, from $unit:"
sed -n '4,$p' "$sandboxed" | sed 's/^/#   /'

# run_unit WHERE UNIT: starts the unit and adds what this run of it printed to $out,
# after WHERE; only entries since a fresh journal mark count, so that a run that
# printed nothing is not given the line of the run before.
run_unit() {
	journal_mark
	systemctl start "$2" || fail "$2"
	wait_until 10 _printed "$2" || fail "$2 printed nothing"
	echo "$1 $line" >>"$out"
}
_printed() { line=$(journal_since_mark -u "$1" -o cat | grep '^getppid '); [ -n "$line" ]; }

out=$FWH_CASE_TMP/calls
: >"$out"
for r in $(seq "$ROUNDS"); do
	echo "shell $("$CALLS" "$N")" >>"$out"
	run_unit unit fwh-calls-plain.service
	run_unit sandbox fwh-calls-sandbox.service
done
systemctl start fw-helperd.service
pid=$(systemctl show -P MainPID fw-helperd.service)
want=$(awk '/^Seccomp_filters:/ { print $2 }' "/proc/$pid/status")
got=$(awk '$1 == "sandbox" { print $9; exit }' "$out")
info "seccomp filters: fw-helperd $want, the sandboxed runs $got, the others $(awk '$1 == "unit" { print $9; exit }' "$out")"
[ "$got" = "$want" ] || fail "the sandboxed unit ran under $got seccomp filters, fw-helperd under $want"
info "# ns per call, median of $ROUNDS runs of $N each:"
printf '%-8s %10s %10s %10s\n' where getppid stat-miss open-close
for w in shell unit sandbox; do
	for k in 3 5 7; do
		awk -v w="$w" -v k="$k" '$1 == w { print $k }' "$out" | stats | cut -d' ' -f1
	done | xargs printf "%-8s %10s %10s %10s\n" "$w"
done
