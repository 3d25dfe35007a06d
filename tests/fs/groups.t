#!/usr/bin/env bash
# groups.t: hold=pgrp with many process groups holding locks at once,
# through lockfs-faultproxy (2 ms each way). GROUPS process groups
# (setsid), started together, each take a lock with noclobber (O_EXCL),
# close it (the group holds it) and stay: all are held, and while they
# stay the daemon asks /proc about almost none of them
# (lockfs_group_checks_total: a group whose leader it watches by pidfd is
# asked every 10 s; before, every group every 100 ms, with the engine's
# mutex held); cycles on other keys, from four callers at once, all
# succeed meanwhile. A group whose leader exits while another of its
# processes lives keeps its lock, and is polled; once that process dies,
# another mount takes the lock within a second. All the groups killed at
# once: every lock is let go of within 3 s (before, a group found gone
# while its lock's heartbeat was in flight kept it until the next
# heartbeat, 5 s), and the other mount takes one.
. "$(dirname "$0")/lib.sh"

plan 11

GROUPS_N=200
new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=groups-a,hold=pgrp,max_locks_per_user=0,max_opens_per_user=0" &&
	ENDPOINT=$PROXY_ENDPOINT mount_start b "owner=groups-b,entry_timeout=0,attr_timeout=0" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
proxy_ctl latency 2 >/dev/null

count() { find "$1" -mindepth 1 -maxdepth 1 -name 'k*' | wc -l; }

[ "$("$T" mkdir "$A/g" 0755)" = 0 ] || { echo "Bail out! mkdir"; exit 1; }

# ---- many groups, each holding one lock ----------------------------------
pids=()
for i in $(seq "$GROUPS_N"); do
	group_hold "$A/g/k$i"
	pids+=("$HPID")
done
all_held() { [ "$(count "$A/g")" -eq "$GROUPS_N" ]; }
wait_for 30 all_held
is "$(count "$A/g")" "$GROUPS_N" "$GROUPS_N process groups, started at once, each hold a lock"
is "$(count_alive "${pids[@]}")" "$GROUPS_N" "... and every group is still there (none failed its acquire)"

# ---- idle: the groups are not polled -------------------------------------
sleep 1
c0=$(metric lockfs_group_checks_total)
# Four callers cycle on keys of their own meanwhile.
for c in 1 2 3 4; do
	(
		_close_hold_fds
		fails=0
		for r in $(seq 10); do
			if [ "$("$T" open "$A/c$c" O_CREAT,O_EXCL,O_RDONLY 0644)" = 0 ]; then
				[ "$("$T" unlink "$A/c$c")" = 0 ] || fails=$((fails + 1))
			else
				fails=$((fails + 1))
			fi
		done
		echo "$fails" >"$WORK/cycles-$c"
	) &
	track_pid "$!"
done
sleep 3
c1=$(metric lockfs_group_checks_total)
checks=$((c1 - c0))
ok "$([ -n "$c0" ] && [ -n "$c1" ] && [ "$checks" -lt "$GROUPS_N" ] && echo 0)" \
	"$GROUPS_N groups held for 3 s: $checks checks of /proc (each group every 100 ms would be $((GROUPS_N * 30)))"
# The counts are the 3 s above; the callers' 40 cycles may take longer
# on a loaded machine (bounded).
all_done() { [ -s "$WORK/cycles-1" ] && [ -s "$WORK/cycles-2" ] &&
	[ -s "$WORK/cycles-3" ] && [ -s "$WORK/cycles-4" ]; }
wait_for 30 all_done
fails=0 done_n=0
for c in 1 2 3 4; do
	[ -s "$WORK/cycles-$c" ] && done_n=$((done_n + 1)) &&
		fails=$((fails + $(cat "$WORK/cycles-$c")))
done
is "$done_n/$fails" "4/0" "four callers' 40 cycles on other keys all succeeded meanwhile"

# ---- a leader exits, another process of its group lives ------------------
(
	_close_hold_fds
	exec setsid bash -c 'set -C; : >"$1" || exit 1; sleep 300 & echo $! >"$2"; exec sleep 0.3' \
		_ "$A/m" "$WORK/member.pid" </dev/null >/dev/null 2>&1
) &
leader=$!
track_pid "$leader"
wait_for 10 test -s "$WORK/member.pid"
member=$(cat "$WORK/member.pid")
track_pid "$member"
wait_for 10 _gone "$leader"
c2=$(metric lockfs_group_checks_total)
sleep 2
c3=$(metric lockfs_group_checks_total)
expect EEXIST open "$B/m" O_CREAT,O_EXCL,O_RDONLY 0644
ok "$([ $((c3 - c2)) -ge 5 ] && echo 0)" \
	"... its leader gone, the group is polled: $((c3 - c2)) checks in 2 s"
kill -9 "$member"
# The group ends when its last process is reaped (by init here, which may
# take a second), not at its kill: timed from the reap.
reaped() { [ ! -e "/proc/$member" ]; }
wait_for 10 reaped
t0=$(now_ms)
got=1
for _ in $(seq 40); do
	if try_acquire "$B/m"; then got=0; break; fi
	sleep 0.05
done
took=$(($(now_ms) - t0))
ok "$got" "its last process killed and reaped, mount b takes the lock ($took ms)"
ok "$([ "$took" -lt 1000 ] && echo 0)" "... within a second"
"$T" unlink "$B/m" >/dev/null

# ---- every group killed at once ------------------------------------------
t0=$(now_ms)
kill -9 "${pids[@]}" 2>/dev/null
none_held() { [ "$(count "$A/g")" -eq 0 ]; }
wait_for 20 none_held
left=$(count "$A/g")
took=$(($(now_ms) - t0))
is "$left" 0 "$GROUPS_N groups killed at once: every lock let go of ($took ms)"
ok "$([ "$took" -lt 3000 ] && echo 0)" "... within 3 s (a group found gone during its lock's heartbeat waited for the next one: 5 s)"
try_acquire "$B/g/k1"
ok $? "mount b takes one of them"
