#!/bin/sh
# Reload, Rescan and Prewarm are authorised through polkit: root passes without asking
# (even with polkit gone), another user is refused unless a polkit rule grants the action,
# and --no-ask-password asks for no password. Status stays open to anyone.
. "$(dirname "$0")/../daemon.sh"
fwh_setup
RULE=/etc/polkit-1/rules.d/50-fwh-vmtest.rules
command -v /usr/lib/polkit-1/polkitd >/dev/null || fail "polkitd is not installed in the guest"
[ -f /usr/share/polkit-1/actions/org.fwhelperd1.policy ] || fail "polkit action file not installed"

cleanup() {
	rm -f "$RULE"
	systemctl unmask --runtime polkit.service 2>/dev/null
}
trap cleanup EXIT

as_fwuser() { runuser -u fwuser -- "$@"; }

as_fwuser fwctl status >/dev/null || fail "fwuser cannot read the status"
as_fwuser fwctl --no-ask-password rescan 2>/tmp/err.txt; rc=$?
note "fwuser rescan, no rule: exit $rc: $(cat /tmp/err.txt)"
[ "$rc" = 4 ] || fail "fwuser rescan without a rule: exit $rc, expected 4"
for verb in reload prewarm; do
	as_fwuser fwctl "$verb" 2>/dev/null; rc=$?
	[ "$rc" = 4 ] || fail "fwuser $verb without a rule: exit $rc, expected 4"
done

# A rule for the actions: the same user is let through.
cat >"$RULE" <<'RULES'
polkit.addRule(function(action, subject) {
	if (action.id.indexOf("org.fwhelperd1.") == 0 && subject.user == "fwuser")
		return polkit.Result.YES;
});
RULES
ok=
for _ in $(seq 50); do
	as_fwuser fwctl --no-ask-password rescan >/tmp/out.txt 2>&1 && { ok=1; break; }
	sleep 0.1
done
[ -n "$ok" ] || fail "fwuser rescan with a granting rule: $(cat /tmp/out.txt)"
note "fwuser rescan with the rule: $(cat /tmp/out.txt)"
as_fwuser fwctl --no-ask-password reload || fail "fwuser reload with the rule"
as_fwuser fwctl --no-ask-password prewarm >/dev/null || fail "fwuser prewarm with the rule"
rm -f "$RULE"

# Root needs no polkit at all.
systemctl mask --runtime polkit.service
systemctl stop polkit.service
fwctl --no-ask-password rescan >/dev/null || fail "root rescan without polkit"
fwctl reload || fail "root reload without polkit"
as_fwuser fwctl --no-ask-password rescan 2>/tmp/err.txt; rc=$?
note "fwuser rescan, polkit stopped: exit $rc: $(cat /tmp/err.txt)"
[ "$rc" = 4 ] || fail "fwuser rescan with polkit gone: exit $rc, expected 4"
rm -f /tmp/err.txt /tmp/out.txt
