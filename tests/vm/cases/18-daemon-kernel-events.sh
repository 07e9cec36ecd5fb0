#!/bin/sh
# EventSource=kernel, on a system without udevd: the daemon reads the kernel's uevents
# from netlink itself (fw-helperd-netlink.c). Requests are served and refused from them,
# the companion module's return comes through them, and a message on the kernel's group
# that the kernel did not send is passed over. The daemon's own scans still leave another
# program's no-uevent request alone; events lost to a full socket are looked for in sysfs.
. "$(dirname "$0")/../daemon.sh"
MSG_MODULE=db8b506e751c473b8ee4036c7c046eb7
fwh_setup
conf=/etc/fw-helperd/fw-helperd.conf.d/60-vmtest-kernel.conf
dropin=/run/systemd/system/fw-helperd.service.d/90-vmtest-debug.conf
exe=$(systemctl show -p ExecStart --value fw-helperd | sed -n 's/^{ path=\([^ ;]*\) .*/\1/p')
[ -x "$exe" ] || fail "no fw-helperd executable in ExecStart: '$exe'"
# shellcheck disable=SC2064 # now: the paths
trap "rm -f '$conf' '$dropin'; systemctl daemon-reload; modprobe fwh_cache 2>/dev/null;
	systemctl start systemd-udevd-kernel.socket systemd-udevd-control.socket systemd-udevd;
	udevadm settle -t 10; fwh_restart" EXIT
systemctl stop systemd-udevd systemd-udevd-kernel.socket systemd-udevd-control.socket
printf '[Service]\nEventSource=kernel\n' >"$conf"
mkdir -p "${dropin%/*}"
printf '[Service]\nExecStart=\nExecStart=%s --log-level=debug\n' "$exe" >"$dropin"
systemctl daemon-reload
fwh_restart

blob "$SRV/kernel-events.bin" 5000
expect_served kernel-events.bin "$SRV/kernel-events.bin"
journal_has FIRMWARE=kernel-events.bin FW_RESULT=served FW_EVENT=kernel \
	|| fail "no served entry from the kernel's event"
request no/kernel-events-missing.bin && fail "a missing name was reported loaded"
journal_has FIRMWARE=no/kernel-events-missing.bin FW_RESULT=missing FW_EVENT=kernel \
	|| fail "no missing entry from the kernel's event"

# Another program's no-uevent request (as dell_rbu's): the start scan leaves it to its
# event, which never comes; fwctl rescan takes it.
blob "$SRV/kernel-silent.bin" 4000
custom_request kernel-silent.bin /tmp/kernel-silent.status
fwh_restart
sleep 2
[ -e /sys/class/firmware/kernel-silent.bin/loading ] || fail "the start scan took another program's request"
fwctl rescan || fail "fwctl rescan failed"
wait_status /tmp/kernel-silent.status
[ "$(cat /tmp/kernel-silent.status)" = 0 ] || fail "fwctl rescan did not answer the no-uevent request"
rm -f /tmp/kernel-silent.status

# The socket overflows while the daemon is stopped: the request's event is among those
# lost. The daemon says so and finds the request in sysfs (the kernel's timeout is 10 s).
pid=$(systemctl show -P MainPID fw-helperd)
blob "$SRV/kernel-lost.bin" 3000
kill -STOP "$pid"
i=0
while [ "$i" -lt 3000 ]; do echo change > "$TF/uevent"; i=$((i + 1)); done
( request kernel-lost.bin; echo $? > /tmp/kernel-lost.status ) &
sleep 1
kill -CONT "$pid"
for _ in $(seq 90); do [ -s /tmp/kernel-lost.status ] && break; sleep 0.1; done
[ "$(cat /tmp/kernel-lost.status 2>/dev/null)" = 0 ] || fail "the request whose event was lost was not answered"
cmp -s /dev/test_firmware "$SRV/kernel-lost.bin" || fail "kernel-lost.bin: wrong bytes"
journalctl -q -o cat _PID="$pid" | grep -q "Kernel uevents were lost" || fail "the lost events were not told"
rm -f /tmp/kernel-lost.status

# A message on the kernel's group from a process (root may send there): passed over. It
# names a request that does not exist, which the kernel's copy of a vanished request
# would have the daemon log (FW_RESULT=gone).
since=$(date '+%Y-%m-%d %H:%M:%S')
perl -e '
	socket(my $s, 16, 3, 15) or die "socket: $!";            # AF_NETLINK, RAW, KOBJECT_UEVENT
	bind($s, pack("S x2 L L", 16, 0, 0)) or die "bind: $!";
	my $d = "/devices/virtual/misc/test_firmware/forged.bin";
	my $m = join("\0", "add\@$d", "ACTION=add", "DEVPATH=$d", "SUBSYSTEM=firmware",
		"FIRMWARE=forged.bin", "SEQNUM=4000000000", "");
	send($s, $m, 0, pack("S x2 L L", 16, 0, 1)) or die "send: $!";   # to group 1
' || fail "could not send the forged message"
for _ in $(seq 50); do
	journalctl -q -o cat -u fw-helperd --since "$since" | grep -q "not sent by the kernel" && break
	sleep 0.1
done
journalctl -q -o cat -u fw-helperd --since "$since" | grep -q "not sent by the kernel" \
	|| fail "the forged message was not passed over as not the kernel's"
[ -z "$(journalctl -q -o cat -u fw-helperd FIRMWARE=forged.bin)" ] \
	|| fail "the daemon took the forged message: $(journalctl -q -o cat -u fw-helperd FIRMWARE=forged.bin)"

# The companion module's unload is noticed (from its event or its files), and its load
# again only from its kernel uevent (subsystem "module"): the daemon has systemd restart
# it to use the module.
if [ -d /sys/kernel/fwh_cache ]; then
	pid=$(systemctl show -P MainPID fw-helperd)
	rmmod fwh_cache || fail "rmmod fwh_cache"
	journal_has MESSAGE_ID=$MSG_MODULE FW_MODULE_STATUS="not used" _PID="$pid" \
		|| fail "the module's unload was not noticed"
	modprobe fwh_cache || fail "modprobe fwh_cache"
	for _ in $(seq 100); do
		journalctl -q -o cat _PID="$pid" | grep -q "Companion module fwh_cache loaded; restarting" && break
		sleep 0.1
	done
	journalctl -q -o cat _PID="$pid" | grep -q "Companion module fwh_cache loaded; restarting" \
		|| fail "the module's load was not seen in the kernel's events"
	fwh_wait_active
else
	note "fwh_cache not in use: its unload and load not tried"
fi
