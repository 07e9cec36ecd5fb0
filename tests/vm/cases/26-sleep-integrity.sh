#!/bin/sh
# [Integrity] across a real logind suspend cycle (pm_test=devices): held images are checked
# against their manifests at prewarm, before the sleep, and answered after resume from
# memory alone. Here, once prewarm is over, a plain and an xz image are replaced on disk
# with other bytes and their manifest is taken away: requests in the held window still get
# the original bytes (FW_SOURCE=cache, FW_VERIFY=match, FW_VERIFIED_AT=prewarm). Once
# CacheReleaseSec= is over, requests go to disk again and the changed files are refused
# (the manifest back, FW_VERIFY_STATUS=mismatch, FW_VERIFIED_AT=serve).
. /usr/lib/fwh-vmtest/sleep.sh

MSG_VERIFY_FAILED=f76db412c7db4e538baef2300f695c0f
PLAIN=sleep-integ-plain.bin
PACKED=sleep-integ-packed.bin

# The held window outlasts the kernel's own FW_CACHE (10 s after resume) and the steps below.
GRACE=40
sleep_setup "CacheReleaseSec=${GRACE}s" "[Integrity]" "RootPolicy=$FWH_FW_DIR:enforce"
# Replacing the files while our own lock holds the suspend may outlast logind's 5 s under TCG.
longer_sleep_delay 30
at_exit "rm -f $FWH_FW_DIR/$PLAIN $FWH_FW_DIR/$PACKED.xz $FWH_FW_DIR/SHA256SUMS $FWH_FW_DIR/SHA256SUMS.away"

command -v xz >/dev/null || skip "no xz(1)"
make_blob 300000 held-plain.ref 261
make_blob 400000 held-packed.ref 262
make_blob 300000 other-plain 263
make_blob 400000 other-packed-src 264
xz -C crc32 -c other-packed-src >other-packed.xz
cp held-plain.ref "$FWH_FW_DIR/$PLAIN"
xz -C crc32 -c held-packed.ref >"$FWH_FW_DIR/$PACKED.xz"
(cd "$FWH_FW_DIR" && sha256sum "$PLAIN" "$PACKED.xz" >SHA256SUMS)
sed 's/^/  sums| /' "$FWH_FW_DIR/SHA256SUMS"

# A device asks for both: served from disk, checked there, recorded for prewarm.
journal_mark
serve "$PLAIN" held-plain.ref
serve "$PACKED" held-packed.ref
for n in $PLAIN $PACKED; do
	v=$(entry_field FW_VERIFY MESSAGE_ID=$MSG_SERVED FIRMWARE=$n)
	at=$(entry_field FW_VERIFIED_AT MESSAGE_ID=$MSG_SERVED FIRMWARE=$n)
	check "$n from disk before the cycle: FW_VERIFY=match FW_VERIFIED_AT=serve (got '$v' '$at')" \
		test "$v/$at" = match/serve
done

# Prewarm, then, while our own lock holds the suspend, the files change and the
# manifest goes: nothing the daemon could check after resume is as it was.
journal_mark
hold_sleep
suspend_start
wait_state 10 sleeping || fail "daemon not 'sleeping' 10 s after systemctl suspend (state '$(sleep_state)')"
names=$(entry_field FW_PREWARM_NAMES MESSAGE_ID=$MSG_PREWARMED)
info "prewarmed: '$names', $(fwh_prop CacheEntries) entries, $(fwh_prop CacheBytes) bytes"
for n in $PLAIN $PACKED; do
	check "PREWARMED holds $n" sh -c "echo ' $names ' | grep -q ' $n '"
done
cp other-plain "$FWH_FW_DIR/$PLAIN"
cp other-packed.xz "$FWH_FW_DIR/$PACKED.xz"
mv "$FWH_FW_DIR/SHA256SUMS" "$FWH_FW_DIR/SHA256SUMS.away"
release_sleep
wait_resumed 90 || fail "the suspend cycle did not end within 90 s"
check "daemon is resuming (the cache held)" _fwh_state_is resuming

# The kernel's FW_CACHE answers test_firmware's names itself until 10 s after resume.
sleep 11
check "still resuming 11 s later (CacheReleaseSec=${GRACE}s)" _fwh_state_is resuming

# Held: the original bytes, checked at prewarm, though neither file nor manifest is as then.
journal_mark
for n in $PLAIN $PACKED; do
	ref=held-plain.ref
	[ "$n" = "$PACKED" ] && ref=held-packed.ref
	trigger "$n"
	check "$n answered in the held window" test $? = 0
	readback "got-$n"
	check "$n: the bytes held at prewarm ($ref)" cmp -s "got-$n" "$ref"
	wait_journal 5 MESSAGE_ID=$MSG_SERVED FIRMWARE=$n
	src=$(entry_field FW_SOURCE MESSAGE_ID=$MSG_SERVED FIRMWARE=$n)
	v=$(entry_field FW_VERIFY MESSAGE_ID=$MSG_SERVED FIRMWARE=$n)
	at=$(entry_field FW_VERIFIED_AT MESSAGE_ID=$MSG_SERVED FIRMWARE=$n)
	check "$n: FW_SOURCE=cache FW_VERIFY=match FW_VERIFIED_AT=prewarm (got '$src' '$v' '$at')" \
		test "$src/$v/$at" = cache/match/prewarm
done
check "no verify failure in the held window" \
	test -z "$(journal_since_mark MESSAGE_ID=$MSG_VERIFY_FAILED)"
show_journal _SYSTEMD_UNIT=$FWH_UNIT

# Released: back to disk and the manifest, which has the files as they were at prewarm.
wait_journal $((GRACE + 10)) MESSAGE_ID=$MSG_CACHE_RELEASED _SYSTEMD_UNIT=$FWH_UNIT
wait_at_rest 10 || check_fail "not back at rest: state '$(sleep_state)'"
mv "$FWH_FW_DIR/SHA256SUMS.away" "$FWH_FW_DIR/SHA256SUMS"
journal_mark
for n in $PLAIN $PACKED; do
	trigger "$n" && check_fail "$n changed on disk, served after the release"
	wait_journal 5 MESSAGE_ID=$MSG_VERIFY_FAILED FIRMWARE=$n
	st=$(entry_field FW_VERIFY_STATUS MESSAGE_ID=$MSG_VERIFY_FAILED FIRMWARE=$n)
	at=$(entry_field FW_VERIFIED_AT MESSAGE_ID=$MSG_VERIFY_FAILED FIRMWARE=$n)
	res=$(entry_field FW_RESULT MESSAGE_ID=$MSG_VERIFY_FAILED FIRMWARE=$n)
	check "$n after release: refused, mismatch, checked at serve (got '$res' '$st' '$at')" \
		test "$res/$st/$at" = unverified/mismatch/serve
done
show_journal _SYSTEMD_UNIT=$FWH_UNIT
checks_done
