# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Request timing for the bash benchmark cases (no fork per sample); source lib.sh first.

# timed NAME: request_firmware(NAME) through test_firmware; sets US (elapsed) and RC.
timed() {
	local t0=$EPOCHREALTIME t1
	printf '%s' "$1" >"$FWH_TF/trigger_request" 2>/dev/null
	RC=$?
	t1=$EPOCHREALTIME
	US=$(( ${t1/./} - ${t0/./} ))
}
