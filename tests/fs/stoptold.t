#!/usr/bin/env bash
# stoptold.t: a mount stopped while DynamoDB does not answer tells its
# holders that their locks are gone before another mount can take them.
#
# Mount a (through the fault proxy; lease 6 s, safe period 4 s) holds p;
# its holder waits in poll(2) for POLLPRI, as the README offers. Mount b
# waits in flock for p. A flock waiter on a makes a's stop slow (its wait
# worker's request, stalled, takes an operation timeout). The proxy stalls
# and a's daemon gets SIGTERM. Once the FUSE loop has ended, a answers no
# request: the holder's poll, woken by the loss, asked again and waited
# until the unmount, 5 to 6 s after b had taken p. Now the daemon cuts the
# mount off (its connection aborted) when p's safe period ends during the
# stop, and before any row is deleted at an ordinary stop. And (last
# section) a daemon stopped after a lazy unmount leaves alone the mount
# made on its path since: it used to unmount it.
. "$(dirname "$0")/lib.sh"

plan 9

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
proxy_ctl latency 2 >/dev/null
mount_start b "owner=st-b,entry_timeout=0,attr_timeout=0" &&
	ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=st-a,entry_timeout=0,attr_timeout=0,lease=6,heartbeat=1,safe_period=4" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
DPID=$(daemon_pid a)

hold_start p --pgrp "$A/p" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "a's holder takes p"
hold_start bw --pgrp "$B/p" O_RDWR
hold_send bw "flock ex"
try_acquire "$B/w" || diag "b cannot take w"
(exec timeout --foreground 60 flock -x "$A/w" true) 2>/dev/null &
track_pid $!
sleep 1
proxy_ctl stall on >/dev/null
sleep 0.3
hold_send p "poll 60000 pri"
sleep 0.3
t0=$(now_ms)
kill -TERM "$DPID"
told= took= dexit=
while [ $(($(now_ms) - t0)) -lt 60000 ]; do
	now=$(($(now_ms) - t0))
	[ -z "$told" ] && [ -n "$(tail -n +3 "$WORK/hold-p.out" | head -n 1)" ] && told=$now
	[ -z "$took" ] && [ -n "$(tail -n +2 "$WORK/hold-bw.out" | head -n 1)" ] && took=$now
	[ -z "$dexit" ] && _gone "$DPID" && dexit=$now
	[ -n "$dexit" ] && [ -n "$took" ] && [ -n "$told" ] && break
	sleep 0.1
done
proxy_ctl stall off >/dev/null
unset "_daemon[a]"
diag "ms after SIGTERM: a's holder told at ${told:-never} ($(tail -n +3 "$WORK/hold-p.out" | head -n 1)), b took p at ${took:-never}, a's daemon ended at ${dexit:-never}"
ok $((!(${told:-99999} <= ${took:-0}))) "a's holder learns before b takes p (told ${told:-never}, taken ${took:-never} ms after SIGTERM)"
ok $((!(${told:-99999} < 6000))) "... by the end of p's safe period, give or take ($told ms)"
is "$(tail -n +2 "$WORK/hold-bw.out" | head -n 1)" 0 "b's flock of p is granted, once p's lease has passed"
like "$(cat "$WORK/daemon-a.log")" "a lock was lost, or its safe period ended, before the stop did: the mount is cut off" "a's log says why it cut the mount off"
ok $((!(${dexit:-99999} < 45000))) "a's daemon ends ($dexit ms)"

# ---- a stopped daemon leaves a later mount on its path alone -----------------
# Mount c is lazily unmounted (umount -l) while its holder's file is open,
# so its daemon runs on; mount d is made on the same path. SIGTERM to c's
# daemon then unmounted d (libfuse unmounts the path while the connection
# lives), and d's next create met the bare mountpoint: EPERM. The stop
# guard knows its mount by its device number, and neither cuts nor
# unmounts another.
mount_start c "owner=st-c" || { echo "Bail out! cannot mount c"; exit 1; }
C=$(mnt c) OLD=$(daemon_pid c)
hold_start hc --pgrp "$C/k" O_CREAT,O_EXCL,O_RDWR 0644
umount -l "$C" || diag "umount -l failed"
unset "_daemon[c]"
track_pid "$OLD"
mount_start c "owner=st-d" || { echo "Bail out! cannot mount d"; exit 1; }
( set -C; : >"$C/n" ) 2>/dev/null
ok $? "d, mounted on c's path, takes n"
kill -TERM "$OLD"
_reap "$OLD" 30 >/dev/null
( set -C; : >"$C/n2" ) 2>/dev/null
ok $? "after c's daemon stopped, d still takes n2 (it was unmounted: EPERM)"
hold_cmd hc read
like "$HOUT" 'ENOTCONN|ECONNABORTED' "c's holder's file fails once c's daemon is gone ($(head -c 40 <<<"$HOUT"))"
hold_stop hc
