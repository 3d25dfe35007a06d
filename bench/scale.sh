#!/usr/bin/env bash
# scale.sh: how many locks one lockfs mount keeps alive, at a region-like
# round trip, and what keeping them costs.
#
#   bench/scale.sh [--rtt MS] [--dirs D] [--threads T] [N] [SECONDS]
#                                        defaults: --rtt 4, 8, 8, 10000, 60
#
# It starts its own DynamoDB Local and lockfs-faultproxy (tests/tools) in
# front of it with MS/2 ms of latency each way (an odd MS is rounded down),
# creates a table and mounts lockfs with -o hold=unlink (a lock stays held
# after its creator closes it, until unlink or unmount) and the default
# lease, heartbeat and safe period. bench_scale (bench/scale.c) then
# acquires N locks spread over D directories with T threads and prints the
# acquire rate, waits one heartbeat period (5 s) for renewals to settle,
# and holds the locks for SECONDS while it samples the mount's
# .lockfs/metrics and the daemon's /proc/PID/{status,stat} once a second.
# Before the mount, the direct floor: the same N rows renewed with the
# UpdateItem a heartbeat sends, by lockfs's own client straight to the
# proxy, with as many in flight as the lease pool's default (64), for
# FLOOR_S seconds (default 20) after 5 s not counted: what this endpoint
# answers, whatever lockfs does (bench_cycle renew).
# It prints: renewals per second achieved against N / heartbeat period (the
# rate needed) and against the direct floor as ratios, the busiest and
# quietest second against the mean, heartbeat failures, locks lost, the
# daemon's max RSS (and the lease pool's largest size), its CPU time per
# renewal, DynamoDB requests per second by operation and their mean time,
# and the writes per second with their on-demand cost per month.
# The per-second samples go to OUT/scale-samples.txt, the daemon's log to
# OUT/scale-daemon.log and, with matplotlib
# (contrib/install-deps bench), bench/plot.py draws the renewals in each
# second of the hold (OUT/scale-heartbeats.png) and the cost a month against
# the locks held (OUT/scale-cost.png).
#
# Environment:
#   FLOOR_S           seconds of the direct floor (default 20; 0: none)
#   BENCH_BUILD_DIR   build directory (default build/; configured as a
#                     Release build and built if missing)
#   BENCH_OUT         OUT (default bench/out/, which git ignores)
#   RTT_MS            the same as --rtt
#   SCALE_OPTS        more mount options (lease_workers=64: a fixed pool)
#   SCALE_SAMPLES     keep the per-second samples in this file instead
#   SCALE_PRICE       USD per million write request units (default below)
#
# Not part of the test suite; run it by hand. Every wait is bounded and
# everything it starts is stopped on exit.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
RTT=${RTT_MS:-4}
DIRS=8
THREADS=8
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--rtt) RTT=${2:?--rtt needs MS}; shift 2 ;;
	--rtt=*) RTT=${1#--rtt=}; shift ;;
	--dirs) DIRS=${2:?--dirs needs a number}; shift 2 ;;
	--threads) THREADS=${2:?--threads needs a number}; shift 2 ;;
	-h|--help) sed -n '2,44p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "scale.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
	*) args+=("$1"); shift ;;
	esac
done
N=${args[0]:-10000}
HOLD_S=${args[1]:-60}
for v in "$RTT" "$DIRS" "$THREADS" "$N" "$HOLD_S" "${FLOOR_S:-20}"; do
	if ! [[ $v =~ ^[0-9]+$ ]]; then
		echo "scale.sh: '$v' is not a whole number" >&2
		exit 2
	fi
done
# The on-demand price of writes: $0.625 per million write request units,
# AWS's published on-demand rate for the Standard table class in us-east-1
# (https://aws.amazon.com/dynamodb/pricing/on-demand/), in force since the
# on-demand price cut of November 2024 (it was $1.25). Other regions and the
# Standard-IA table class cost more. A lock item is under 1 KB, so each
# write is one request unit.
PRICE=${SCALE_PRICE:-0.625}
SETTLE_S=5
FLOOR_S=${FLOOR_S:-20}
FLOOR_THREADS=64 # the lease pool's default size (src/lock/lease.c)
ACQUIRE_MAX_S=1200
BUILD=${BENCH_BUILD_DIR:-$ROOT/build}
OUT=${BENCH_OUT:-$ROOT/bench/out}
mkdir -p "$OUT"
SAMPLES=${SCALE_SAMPLES:-$OUT/scale-samples.txt}
rm -f "$SAMPLES" "$OUT/scale-heartbeats.png" "$OUT/scale-cost.png"
TMP=$(mktemp -d /tmp/lockfs-scale.XXXXXX)
chmod 0755 "$TMP"
MNT=$TMP/mnt
PROXY=$BUILD/tests/tools/lockfs-faultproxy
PROXY_PID=
DAEMON_PID=
# The fake credentials, bench_ctl, mounted, alive, wait_for, not,
# bench_unmount and bench_stop (its bench_build and bench_start are not
# used: this script builds a Release build and starts DynamoDB Local and
# the proxy itself).
. "$ROOT/bench/lib.sh"

cleanup() {
	trap - EXIT INT TERM HUP
	set +e
	# The daemon's log (the lease pool's sizes among it) outlives TMP.
	[ -f "$TMP/daemon.log" ] && cp "$TMP/daemon.log" "$OUT/scale-daemon.log"
	bench_teardown
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
	echo "configuring a Release build in $BUILD..."
	cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD" -j "$(nproc)" \
	--target lockfs lockfs-faultproxy bench_scale bench_cycle >/dev/null
BTYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
[ "$BTYPE" = Release ] ||
	echo "scale.sh: warning: $BUILD is a '${BTYPE:-no type}' build, not Release" >&2

read -r PORT _ < <(timeout 120 "$ROOT/contrib/dynamodb-local" \
	--state-dir "$TMP/ddb" start 2>/dev/null)
[ -n "${PORT:-}" ] || {
	echo "scale.sh: DynamoDB Local did not start (contrib/dynamodb-local)" >&2
	exit 1
}
"$PROXY" --target "127.0.0.1:$PORT" --control "$TMP/proxy.ctl" \
	>"$TMP/proxy.port" 2>"$TMP/proxy.log" &
PROXY_PID=$!
wait_for 10 test -s "$TMP/proxy.port" || {
	echo "scale.sh: lockfs-faultproxy did not start" >&2
	exit 1
}
read -r PPORT <"$TMP/proxy.port"
E=http://127.0.0.1:$PPORT
timeout 60 "$BUILD/lockfs" --create-table -o "endpoint=$E,table=bench" >/dev/null
# DynamoDB Local's JIT makes its first few thousand requests slow: warm it
# up on loopback before adding the round trip.
timeout 120 "$BUILD/bench/bench_cycle" direct "$E" bench 2000 2 >/dev/null
bench_ctl latency $((RTT / 2))

# The direct floor, before the mount so that nothing else loads the
# endpoint; its rows stay in the table (as many as the mount's).
FLOOR=
if [ "$FLOOR_S" -gt 0 ]; then
	FLOOR=$(timeout $((FLOOR_S + 600)) "$BUILD/bench/bench_cycle" renew "$E" \
		bench "$N" "$FLOOR_THREADS" "$FLOOR_S") || {
		echo "scale.sh: the direct floor failed: $FLOOR" >&2
		exit 1
	}
fi

mkdir -p "$MNT"
"$BUILD/lockfs" -f -o "endpoint=$E,table=bench,hold=unlink${SCALE_OPTS:+,$SCALE_OPTS}" "$MNT" \
	</dev/null >"$TMP/daemon.log" 2>&1 &
DAEMON_PID=$!
wait_for 30 mounted || {
	echo "scale.sh: the mount did not come up; its log:" >&2
	cat "$TMP/daemon.log" >&2
	exit 1
}

echo "lockfs scale: $N locks held on one mount for $HOLD_S s"
echo "  $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -n): $(nproc) cores," \
	"load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
echo "  added round trip: $((RTT / 2 * 2)) ms (lockfs-faultproxy, $((RTT / 2)) ms each way)"
echo "  build: $BUILD ($BTYPE); options: hold=unlink${SCALE_OPTS:+,$SCALE_OPTS}, default lease/heartbeat/safe_period"
floor_args=()
if [ -n "$FLOOR" ]; then
	FLOOR_RATE=$(sed -n 's/.* per_s=\([0-9.]*\).*/\1/p' <<<"$FLOOR")
	echo "direct floor: $N rows renewed straight by lockfs's client, $FLOOR_THREADS in flight, for $FLOOR_S s (after 5 s not counted):"
	echo "  ${FLOOR_RATE} a second, $(sed -n 's/.* mean_ms=\([0-9.]*\).*/\1/p' <<<"$FLOOR") ms each," \
		"$(sed -n 's/.* cpu_us=\([0-9]*\).*/\1/p' <<<"$FLOOR") us of the client's CPU per renewal"
	floor_args=(--floor "$FLOOR_RATE")
fi
rc=0
timeout $((ACQUIRE_MAX_S + SETTLE_S + HOLD_S + 120)) "$BUILD/bench/bench_scale" \
	--mnt "$MNT" --pid "$DAEMON_PID" --locks "$N" --dirs "$DIRS" \
	--threads "$THREADS" --hold "$HOLD_S" --settle "$SETTLE_S" \
	--acquire-max "$ACQUIRE_MAX_S" --price "$PRICE" --samples "$SAMPLES" \
	"${floor_args[@]}" || rc=$?
echo "samples: $SAMPLES"
# The heartbeat period: lockfs's default (5 s), which this mount uses.
if [ -x /usr/bin/python3 ] && /usr/bin/python3 "$ROOT/bench/plot.py" scale \
	"$OUT" "$SAMPLES" "$N" 5 "$PRICE" >/dev/null; then
	echo "plots: $OUT/scale-heartbeats.png $OUT/scale-cost.png"
fi
echo "  load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
if ! alive "$DAEMON_PID"; then
	echo "scale.sh: the daemon died; its log:" >&2
	tail -n 30 "$TMP/daemon.log" >&2
	rc=1
fi
exit "$rc"
