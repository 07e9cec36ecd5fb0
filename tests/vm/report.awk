# SPDX-License-Identifier: MIT
# The host's report of a VM run (run.sh, run-disk.sh): reads what the guest
# runner wrote to the second serial port (result.txt, all boots in order),
# prints the ok/not ok lines, the header lines and the details of failed
# cases, then "vm: N passed, N failed[, N skipped]"; exits 1 if anything
# failed. Variables: console (console log, its tail is shown if the guest
# never said "# done"), qemu_rc, vm_ms.
BEGIN {
	kernel_trouble = "Kernel panic|BUG:|WARNING:|Oops|soft lockup|rcu_.*stall|refusing to freeze|hung_task|blocked for more than|Out of memory"
}
/^1\.\./ { planned = substr($0, 4) + 0; next }
/^# done$/ { done = 1; next }
/^# time / { next }
# Later boots of the disk bed: shown like the header, not as a failure's details.
/^# boot [0-9]+:/ { print; infail = 0; next }
/^ok / {
	print; started = 1; infail = 0
	if ($0 ~ /# SKIP/) skipped++; else passed++
	next
}
/^not ok / { print; started = 1; infail = 1; failed++; next }
# Header lines, then the details of failed cases only.
!started { print; next }
infail { print "    " $0 }
END {
	reported = passed + failed + skipped
	if (!done) {
		missing = planned - reported
		if (missing < 1) missing = 1
		failed += missing
		printf "not ok - guest never reported done (qemu exit %d after %d ms); %d case(s) unreported; console tail:\n", qemu_rc, vm_ms, missing
		while ((getline line < console) > 0) {
			gsub(/\033\[[0-9;]*m/, "", line)     # systemd status colours
			tail[n++ % 40] = line
			# What a truncated tail would hide: the case that was running and
			# the kernel's first and last word on what went wrong.
			if (line ~ /fwh-vmtest: starting /) running = line
			if (line ~ kernel_trouble) { if (!first_trouble) first_trouble = line; last_trouble = line }
		}
		if (running) print "    # last case started: " running
		if (first_trouble) print "    # first kernel trouble: " first_trouble
		if (last_trouble != first_trouble) print "    # last kernel trouble: " last_trouble
		for (i = (n > 40 ? n - 40 : 0); i < n; i++) print "    " tail[i % 40]
	}
	if (done && planned == 0) {
		print "not ok - no case matched the selection"
		failed++
	}
	summary = sprintf("vm: %d passed, %d failed", passed, failed)
	if (skipped) summary = summary sprintf(", %d skipped", skipped)
	print summary
	exit failed ? 1 : 0
}
