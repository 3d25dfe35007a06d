#!/usr/bin/env bash
# death.t: what happens when holders and daemons die, with short leases
# (lease=2,heartbeat=0.5,safe_period=1.5). hold=fd: killing or closing the
# holder releases at once, a forked copy of the fd keeps it; hold=pgrp: the
# lock lives while any process of the acquiring group lives; hold=unlink:
# only unlink or unmount releases. kill -9 of a daemon: another mount takes
# the lock only after a whole lease from its first sighting (never earlier)
# and soon after; an expired lock is invisible, and an fd opened before
# reads state: expired. SIGTERM of a daemon releases its locks at once and
# it exits 0.
. "$(dirname "$0")/lib.sh"

plan 46

SHORT=lease=2,heartbeat=0.5,safe_period=1.5,entry_timeout=0,attr_timeout=0
new_table || { echo "Bail out! cannot create a table"; exit 1; }
mount_start a "owner=death-a,hold=fd,$SHORT" &&
	mount_start p "owner=death-p,hold=pgrp,$SHORT" &&
	mount_start u "owner=death-u,hold=unlink,$SHORT" &&
	mount_start b "owner=death-b,$SHORT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) P=$(mnt p) U=$(mnt u) B=$(mnt b)

# poll_acquire PATH SECS: O_EXCL attempts every 50 ms; ACQ_MS is the time
# from the call to the success. 1 if still refused after SECS.
poll_acquire() {
	local t0 deadline
	t0=$(now_ms)
	deadline=$((t0 + $2 * 1000))
	while :; do
		if try_acquire "$1"; then
			ACQ_MS=$(($(now_ms) - t0))
			return 0
		fi
		if [ "$(now_ms)" -ge "$deadline" ]; then
			ACQ_MS=$(($(now_ms) - t0))
			return 1
		fi
		sleep 0.05
	done
}

# still_refused PATH SECS: B is refused for SECS (checked every 250 ms).
still_refused() {
	local deadline=$(($(now_ms) + $2 * 1000))
	while [ "$(now_ms)" -lt "$deadline" ]; do
		[ "$("$T" open "$1" O_CREAT,O_EXCL,O_RDONLY 0644)" = EEXIST ] || return 1
		sleep 0.25
	done
}

# ---- hold=fd -------------------------------------------------------------
hold_start f1 --pgrp "$A/f1" O_CREAT,O_EXCL,O_RDONLY 0644
is "$HOUT" ready "hold=fd: the holder acquires f1"
expect EEXIST open "$B/f1" O_CREAT,O_EXCL,O_RDONLY 0644
hold_kill f1 KILL
poll_acquire "$B/f1" 5
ok $? "hold=fd: after kill -9 of the holder, B acquires f1"
ok "$([ "$ACQ_MS" -lt 1000 ] && echo 0)" "... within a second ($ACQ_MS ms)"

hold_start f2 --pgrp "$A/f2" O_CREAT,O_EXCL,O_RDONLY 0644
hold_cmd f2 "child keep"
child=$HOUT
track_pid "$child"
hold_kill f2 KILL
still_refused "$B/f2" 3
ok $? "hold=fd: a forked copy of the holding fd keeps f2 held past the lease"
kill -9 "$child"
poll_acquire "$B/f2" 5
ok $? "hold=fd: when the last copy closes, B acquires f2"
ok "$([ "$ACQ_MS" -lt 1000 ] && echo 0)" "... within a second ($ACQ_MS ms)"

hold_start f3 --pgrp "$A/f3" O_CREAT,O_EXCL,O_RDONLY 0644
hold_cmd f3 close
is "$HOUT" 0 "hold=fd: the holder closes its fd"
poll_acquire "$B/f3" 5
ok "$([ $? = 0 ] && [ "$ACQ_MS" -lt 1000 ] && echo 0)" "... and B acquires f3 within a second ($ACQ_MS ms)"
hold_stop f3

# ---- hold=pgrp -----------------------------------------------------------
hold_start p1 --pgrp "$P/p1" O_CREAT,O_EXCL,O_RDONLY 0644
is "$HOUT" ready "hold=pgrp: the holder (own process group) acquires p1"
hold_kill p1 KILL
poll_acquire "$B/p1" 5
ok $? "hold=pgrp: after kill -9 of the holder (its group now empty), B acquires p1"
ok "$([ "$ACQ_MS" -lt 1000 ] && echo 0)" "... within a second ($ACQ_MS ms)"

hold_start p2 --pgrp "$P/p2" O_CREAT,O_EXCL,O_RDONLY 0644
hold_cmd p2 "child close"
child=$HOUT
track_pid "$child"
hold_cmd p2 close
still_refused "$B/p2" 3
ok $? "hold=pgrp: fd closed, but the group lives: p2 stays held past the lease"
kill -9 "$child"
still_refused "$B/p2" 1
ok $? "hold=pgrp: one process of the group died, another lives: p2 stays held"
hold_kill p2 KILL
poll_acquire "$B/p2" 5
ok $? "hold=pgrp: once the whole group is gone, B acquires p2"
ok "$([ "$ACQ_MS" -lt 1000 ] && echo 0)" "... within a second ($ACQ_MS ms)"

# ---- hold=unlink ----------------------------------------------------------
hold_start u1 --pgrp "$U/u1" O_CREAT,O_EXCL,O_RDONLY 0644
is "$HOUT" ready "hold=unlink: the holder acquires u1"
hold_kill u1 KILL
still_refused "$B/u1" 3
ok $? "hold=unlink: u1 stays held after its holder died, past the lease"
is "$(field "$("$T" read "$U/u1")" state)" held "hold=unlink: u1 is still held"
expect 0 unlink "$U/u1"
expect 0 open "$B/u1" O_CREAT,O_EXCL,O_RDONLY 0644
hold_start u2 --pgrp "$U/u2" O_CREAT,O_EXCL,O_RDONLY 0644
hold_kill u2 KILL
expect EEXIST open "$B/u2" O_CREAT,O_EXCL,O_RDONLY 0644
mount_stop u
expect 0 open "$B/u2" O_CREAT,O_EXCL,O_RDONLY 0644

# ---- kill -9 of a daemon: the lease must pass ---------------------------------
mount_start k "owner=death-k,$SHORT" || { echo "Bail out! cannot mount k"; exit 1; }
K=$(mnt k)
expect 0 open "$K/kd1" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 open "$K/kd2" O_CREAT,O_EXCL,O_RDONLY 0644
hold_start view "$B/kd2" O_RDONLY
is "$HOUT" ready "B opens kd2 (not an acquire) and keeps the fd"
sleep 1   # a few heartbeats
mount_kill k KILL
is "$DAEMON_RC" 137 "the daemon was killed (status 137)"
t0=$(now_ms)
first=$("$T" open "$B/kd1" O_CREAT,O_EXCL,O_RDONLY 0644)
"$T" stat "$B/kd2" >/dev/null   # B's first sighting of kd2 too
is "$first" EEXIST "just after the kill B is refused (B first sees the lock now)"
is "$(field "$("$T" read "$B/kd1")" state)" held "B shows kd1 held"
poll_acquire "$B/kd1" 8
rc=$?
total=$(($(now_ms) - t0))
ok "$rc" "B takes kd1 over after the lease"
ok "$([ "$total" -ge 1900 ] && echo 0)" "B was refused for a whole lease from its first sighting ($total ms >= 2000)"
ok "$([ "$total" -le 3500 ] && echo 0)" "... and takes over soon after the lease ($total ms <= 3500)"
is "$(field "$("$T" read "$B/kd1")" owner)" death-b "B owns kd1 now"
like "$("$T" read "$B/.lockfs/metrics" | sed -n 's/^lockfs_takeovers_total //p')" '^[1-9]' "B counts the takeover"
expect ENOENT stat "$B/kd2"
hold_cmd view read
is "$(field "$HOUT" state)/$(field "$HOUT" owner)" expired/death-k "an fd opened before shows the lapsed lock as state: expired"
hold_stop view
unlike "$("$T" readdir "$B")" $'\nkd2($|\n)' "an expired lock is not listed"
expect 0 open "$B/kd2" O_CREAT,O_EXCL,O_RDONLY 0644

# ---- SIGTERM of a daemon releases at once ------------------------------------
mount_start t "owner=death-t,$SHORT" || { echo "Bail out! cannot mount t"; exit 1; }
TM=$(mnt t)
expect 0 open "$TM/tk" O_CREAT,O_EXCL,O_RDONLY 0644
hold_start th --pgrp "$TM/th" O_CREAT,O_EXCL,O_RDONLY 0644
# B tries while the daemon is still exiting: the release comes first (a
# sanitizer build's exit, and a loaded machine's, can take seconds more).
t0=$(now_ms)
kill -TERM "$(daemon_pid t)"
poll_acquire "$B/tk" 3
rc=$? t1=$(now_ms)
ok "$([ $rc = 0 ] && [ $((t1 - t0)) -lt 1500 ] && echo 0)" \
	"SIGTERM: B acquires tk at once ($((t1 - t0)) ms after the signal)"
_reap "$(daemon_pid t)" 15 # no second signal: it may already be exiting
is "$?" 0 "SIGTERM: the daemon exits 0 (every lock released)"
unset "_daemon[t]"
expect 0 open "$B/th" O_CREAT,O_EXCL,O_RDONLY 0644
hold_kill th KILL

mount_stop a
mount_stop p
mount_stop b
