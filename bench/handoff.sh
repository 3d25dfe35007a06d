#!/usr/bin/env bash
# handoff.sh: how soon a lock passes to the next holder, beside the direct
# floor (the same DynamoDB requests sent straight), in one run against a
# private DynamoDB Local on 127.0.0.1.
#
#   bench/handoff.sh [--rtt MS] [N]        default N 30
#
# Measures (bench/handoff.c):
#   death, same mount   a holder process (hold=pgrp) is killed; the next
#                       O_CREAT|O_EXCL on the same mount succeeds after the
#                       daemon's DeleteItem and the new PutItem
#   death, other mount  the same, the next holder on a second mount
#   flock, other mount  a flock(1)-style waiter on a second mount, with
#                       wait_poll 0.25 (default), 0.1 and 1 s
# and the direct floor: one PutItem + DeleteItem cycle (bench_cycle direct).
# --rtt MS puts lockfs-faultproxy in front of DynamoDB Local with MS/2 ms
# each way, for the mounts and the floor alike.
#
# Environment: BENCH_BUILD_DIR (default build/, a release build).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
RTT=${RTT_MS:-}
N=30
while [ $# -gt 0 ]; do
	case "$1" in
	--rtt) RTT=${2:?--rtt needs MS}; shift 2 ;;
	--rtt=*) RTT=${1#--rtt=}; shift ;;
	*) N=$1; shift ;;
	esac
done
if { [ -n "$RTT" ] && ! [[ $RTT =~ ^[0-9]+$ ]]; } || ! [[ $N =~ ^[0-9]+$ ]]; then
	echo "handoff.sh: --rtt and N take whole numbers" >&2
	exit 2
fi
BUILD=${BENCH_BUILD_DIR:-$ROOT/build}
TMP=$(mktemp -d /tmp/lockfs-bench.XXXXXX)
PROXY_PID=
MOUNTS=()
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench
export AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true

cleanup() {
	for m in "${MOUNTS[@]}"; do
		fusermount3 -u "$m" 2>/dev/null || true
	done
	if [ -n "$PROXY_PID" ]; then
		kill "$PROXY_PID" 2>/dev/null || true
		wait "$PROXY_PID" 2>/dev/null || true
	fi
	"$ROOT/contrib/dynamodb-local" --state-dir "$TMP/ddb" stop >/dev/null 2>&1 || true
	find "$TMP" -maxdepth 1 -type d -exec chattr -i {} + 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

targets=(lockfs bench_cycle bench_handoff)
[ -n "$RTT" ] && targets+=(lockfs-faultproxy)
cmake -S "$ROOT" -B "$BUILD" >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}" >/dev/null
read -r PORT _ < <("$ROOT/contrib/dynamodb-local" --state-dir "$TMP/ddb" start 2>/dev/null)
E=http://127.0.0.1:$PORT
PROXY=$BUILD/tests/tools/lockfs-faultproxy
if [ -n "$RTT" ]; then
	"$PROXY" --target "127.0.0.1:$PORT" --control "$TMP/proxy.ctl" \
		>"$TMP/proxy.port" 2>"$TMP/proxy.log" &
	PROXY_PID=$!
	for _ in $(seq 100); do
		[ -s "$TMP/proxy.port" ] && break
		sleep 0.1
	done
	read -r PPORT <"$TMP/proxy.port"
	E=http://127.0.0.1:$PPORT
fi
"$BUILD/lockfs" --create-table -o "endpoint=$E,table=bench" >/dev/null
mount_one() {  # NAME OPTIONS
	mkdir -p "$TMP/$1"
	"$BUILD/lockfs" -o "endpoint=$E,table=bench,entry_timeout=0,attr_timeout=0${2:+,$2}" "$TMP/$1"
	MOUNTS+=("$TMP/$1")
}
mount_one a ""
mount_one b ""
mount_one b01 "wait_poll=0.1"
mount_one b1 "wait_poll=1"
H=$BUILD/bench/bench_handoff

echo "warming up DynamoDB Local..."
"$BUILD/bench/bench_cycle" direct "$E" bench 3000 2 >/dev/null
"$H" death "$TMP/a" "$TMP/a" 5 >/dev/null || true
if [ -n "$RTT" ]; then
	timeout 10 "$PROXY" --control "$TMP/proxy.ctl" latency $((RTT / 2)) >/dev/null
	echo "added round trip: $((RTT / 2 * 2)) ms (lockfs-faultproxy, mounts and floor alike)"
fi

floor=$("$BUILD/bench/bench_cycle" direct "$E" bench 200 1)
floor_ms=$(sed -n 's/.* p50_us=\([0-9]*\).*/\1/p' <<<"$floor" | awk '{ printf "%.1f", $1 / 1000 }')
echo "direct floor, one PutItem + DeleteItem: p50 $floor_ms ms"
row() {  # LABEL OUTPUT
	local p50 p90
	p50=$(sed -n 's/.* p50_ms=\([0-9.]*\).*/\1/p' <<<"$2")
	p90=$(sed -n 's/.* p90_ms=\([0-9.]*\).*/\1/p' <<<"$2")
	printf '  %-34s p50 %7s ms  p90 %7s ms  %6sx the floor\n' "$1" "$p50" "$p90" \
		"$(awk -v a="$p50" -v b="$floor_ms" 'BEGIN { printf "%.1f", a / b }')"
}
echo
echo "handoff ($N samples each):"
row "holder killed, same mount" "$("$H" death "$TMP/a" "$TMP/a" "$N")"
row "holder killed, other mount" "$("$H" death "$TMP/a" "$TMP/b" "$N")"
row "flock waiter, wait_poll=0.25" "$("$H" flock "$TMP/a" "$TMP/b" "$N")"
row "flock waiter, wait_poll=0.1" "$("$H" flock "$TMP/a" "$TMP/b01" "$N")"
row "flock waiter, wait_poll=1" "$("$H" flock "$TMP/a" "$TMP/b1" "$N")"
echo
echo "reads per waiting key and mount: at most 2 per wait_poll (8/s at the default)"
