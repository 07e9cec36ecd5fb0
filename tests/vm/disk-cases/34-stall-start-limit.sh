#!/bin/sh
# SPDX-License-Identifier: MIT
# Never a stall (e): the daemon failing to start until systemd gives up on it
# (start-limit-hit): a request is then answered -1 promptly (FWH_PROMPT_MS).
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/pkg.sh
need_installed
setup_test_firmware_stock

# Every start fails at once (its ExecStartPre= fails), and the limit is 3 starts in 10 min:
# systemd's default (5 in 10 s) is out of reach when a start takes seconds, as under TCG.
# How the unit got there is incidental; the state is what the case judges.
limit=/run/systemd/system/fw-helperd.service.d/50-fwh-vmtest-limit.conf
mkdir -p "${limit%/*}"
printf '[Unit]\nStartLimitIntervalSec=600\nStartLimitBurst=3\n[Service]\nExecStartPre=\nExecStartPre=/bin/false\n' >"$limit"
systemctl daemon-reload
at_exit "rm -f $limit; systemctl daemon-reload; systemctl reset-failed fw-helperd.service; systemctl start fw-helperd.service"
# systemd 252 keeps Result=exit-code when the limit stops a unit that had failed already:
# its own word for it is in the journal.
limit_hit() { journalctl -q -b -u fw-helperd.service | grep -q 'Start request repeated too quickly'; }
i=0
until limit_hit; do
	i=$((i + 1))
	[ $i -le 10 ] || fail "no start limit hit after 10 starts (Result=$(systemctl show -P Result fw-helperd.service))"
	systemctl restart fw-helperd.service 2>/dev/null || true
	sleep 0.5
done
info "start-limit-hit after $i start(s): $(systemctl is-active fw-helperd.service)"
assert_answered fwh-missing-limit.bin failed "request after start-limit-hit"
