#!/usr/bin/env bash
# groups.sh: what many process groups holding locks (hold=pgrp, the
# default) cost the daemon and the other users of the mount.
#
#   bench/groups.sh [--opts MOUNT_OPTIONS] [--nofile FILES] [N] [CYCLES]
#                                       defaults: session, 2000, 200
#
# It starts its own DynamoDB Local, creates a table and mounts lockfs
# (-o session by default: per-lock heartbeats of thousands of locks would
# measure the heartbeats instead; --opts '' for per-lock leases). Then it
# times CYCLES lock cycles by short-lived processes (a shell's noclobber
# create, then rm) in three states: nothing held; N sleeping processes,
# each in a session of its own, holding nothing (the control: a machine
# with that many processes forks more slowly); N such process groups each
# holding a lock it took with noclobber and closed (the group holds it).
# With the N locks held it also reads the daemon's CPU and
# lockfs_group_checks_total over 10 idle seconds and the locks lost
# (lockfs_lost_total), and at the end kills
# every holder at once and times until the mount lists no lock.
# --nofile FILES runs the daemon under prlimit --nofile=FILES:FILES (a
# service's LimitNOFILE): groups past what its open files allow to be
# watched are checked every 100 ms instead; it then prints the daemon's
# open files and its failed renewals too.
#
# Environment: BENCH_BUILD_DIR (default build/; built if missing). Not
# part of the test suite; every wait is bounded and everything it starts
# is stopped on exit.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
MOPTS=session
NOFILE=
while [ $# -gt 0 ]; do
	case "$1" in
	--opts) MOPTS=${2-}; shift 2 ;;
	--nofile) NOFILE=${2:?--nofile needs FILES}; shift 2 ;;
	*) break ;;
	esac
done
N=${1:-2000}
CYCLES=${2:-200}
for v in "$N" "$CYCLES" ${NOFILE:+"$NOFILE"}; do
	[[ $v =~ ^[0-9]+$ ]] && [ "$v" -gt 0 ] ||
		{ echo "groups.sh: '$v' is not a positive whole number" >&2; exit 2; }
done
BUILD=${BENCH_BUILD_DIR:-$ROOT/build}
TMP=$(mktemp -d /tmp/lockfs-groups-bench.XXXXXX)
chmod 0755 "$TMP"
MNT=$TMP/mnt
DAEMON_PID=
SPAWNED=()
. "$ROOT/bench/lib.sh"

kill_spawned() {
	[ ${#SPAWNED[@]} -gt 0 ] && kill -KILL "${SPAWNED[@]}" 2>/dev/null
	SPAWNED=()
	return 0
}

cleanup() {
	trap - EXIT INT TERM HUP
	set +e
	kill_spawned
	bench_teardown
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

[ -x "$BUILD/lockfs" ] || bench_build lockfs
bench_start ""
TABLE=bench-groups-$$
"$BUILD/lockfs" --create-table -o "endpoint=$E,table=$TABLE" >/dev/null
mkdir -p "$MNT"
${NOFILE:+prlimit --nofile="$NOFILE:$NOFILE" --} \
	"$BUILD/lockfs" -f -o "endpoint=$E,table=$TABLE,max_locks_per_user=0,max_opens_per_user=0${MOPTS:+,$MOPTS}" \
	"$MNT" </dev/null >>"$TMP/daemon.log" 2>&1 &
DAEMON_PID=$!
wait_for 10 mounted || { echo "groups.sh: the mount did not come up" >&2; cat "$TMP/daemon.log" >&2; exit 1; }
mkdir "$MNT/g"

metric() { sed -n "s/^$1 //p" "$MNT/.lockfs/metrics"; }
ticks() { awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat"; }
count() { find "$MNT/g" -mindepth 1 -maxdepth 1 -name 'k*' | wc -l; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# cycles: CYCLES create+rm cycles by short-lived processes; prints the
# milliseconds they took.
cycles() {
	local t0 i
	t0=$(now_ms)
	for ((i = 0; i < CYCLES; i++)); do
		(set -C; : >"$MNT/x") && rm -f "$MNT/x" ||
			{ echo "groups.sh: a cycle failed" >&2; exit 1; }
	done
	echo $(($(now_ms) - t0))
}

# spawn CMD: N processes, each leading a session of its own, running CMD
# (bash -c; $1 is the lock's path).
spawn() {
	local i
	for ((i = 0; i < N; i++)); do
		setsid bash -c "$1" _ "$MNT/g/k$i" </dev/null >/dev/null 2>&1 &
		SPAWNED+=("$!")
		disown
	done
}

echo "N=$N process groups, $CYCLES cycles per state, mount options: ${MOPTS:-(none)}${NOFILE:+, the daemon allowed $NOFILE open files}"
# Warm-up: DynamoDB Local's JIT makes its first thousand or so requests
# slower, which would flatter the states measured later.
for _ in 1 2 3 4 5; do cycles >/dev/null; done
none_ms=$(cycles)
echo "nothing held: $CYCLES cycles in $none_ms ms"

spawn 'exec sleep 600'
sleep $((N / 500 + 3))
control_ms=$(cycles)
echo "$N sleeping processes holding nothing: $CYCLES cycles in $control_ms ms"
kill_spawned
sleep 2

spawn 'set -C; : >"$1" || exit 1; exec sleep 600'
all_held() { [ "$(count)" -ge "$N" ]; }
wait_for $((N / 50 + 60)) all_held ||
	{ echo "groups.sh: only $(count) of $N locks taken" >&2; exit 1; }
sleep 2
t0=$(ticks) g0=$(metric lockfs_group_checks_total) p0=$(metric lockfs_lease_passes_total)
sleep 10
t1=$(ticks) g1=$(metric lockfs_group_checks_total) p1=$(metric lockfs_lease_passes_total)
held_ms=$(cycles)
echo "$N groups each holding a lock: $CYCLES cycles in $held_ms ms"
echo "  locks lost while their holders lived: $(metric lockfs_lost_total)"
[ -z "$NOFILE" ] ||
	echo "  the daemon's open files: $(find "/proc/$DAEMON_PID/fd" -mindepth 1 -maxdepth 1 | wc -l) of $NOFILE; renewals failed: $(metric lockfs_heartbeats_failed_total)"
echo "  idle 10 s: daemon CPU $(awk -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", t / 10 }')% of a core, $(((g1 - g0) / 10)) groups asked of /proc a second, $(((p1 - p0) / 10)) scheduler passes a second"

t0=$(now_ms)
kill_spawned
none_held() { [ "$(count)" -eq 0 ]; }
wait_for 120 none_held || { echo "groups.sh: $(count) locks still listed 120 s after their holders died" >&2; exit 1; }
echo "every holder killed at once: all $N locks let go of in $(($(now_ms) - t0)) ms"

echo
echo "summary: cycles with $N groups holding locks / with $N processes holding nothing: $(awk -v a="$held_ms" -v b="$control_ms" 'BEGIN { printf "%.2fx", a / b }')"
echo "  (nothing at all: $none_ms ms; holding: $held_ms ms; processes only: $control_ms ms)"
