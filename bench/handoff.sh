#!/usr/bin/env bash
# handoff.sh: how soon a lock passes to the next holder, beside the direct
# floor (the same DynamoDB requests sent straight), in one run against a
# private DynamoDB Local on 127.0.0.1.
#
#   bench/handoff.sh [--rtt MS] [--peers[=node,python]] [N]   default N 30
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
# each way, for the mounts, the floor and the peers alike.
#
# --peers (or --peers=node / --peers=python): the same handoffs with the
# peers (bench/peers/, installed once at pinned versions into a cache by
# bench/peers/peers.sh; exit 2 if a registry cannot be reached):
#   release, waiter polls   a holder process releases after a random 200..700
#                       ms; a waiter in another process retries every 0.25,
#                       0.1 and 1 s (the wait_poll values above): npm
#                       dynamodb-lock-client FailClosed (acquirePeriodMs,
#                       retryCount; a table of its own, HASH key only: it
#                       cannot take lockfs's sort key) and python_dynamodb_lock
#                       (acquire_lock retry_period)
#   holder killed       python_dynamodb_lock with a 1 s lease (heartbeat
#                       0.25 s): the waiter takes over once the version
#                       stood still for the lease. A FailClosed lock of a
#                       dead holder is never freed: nothing to time.
#
# Every handoff's time goes to OUT/handoff-NAME.ms and, with matplotlib
# (contrib/install-deps bench), their distributions to OUT/handoff.png
# (bench/plot.py); OUT is printed at the end.
#
# Environment: BENCH_BUILD_DIR (default build/, a release build), BENCH_OUT
# (default bench/out/, which git ignores).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
RTT=${RTT_MS:-}
N=30
PEER_SPEC=-
while [ $# -gt 0 ]; do
	case "$1" in
	--rtt) RTT=${2:?--rtt needs MS}; shift 2 ;;
	--rtt=*) RTT=${1#--rtt=}; shift ;;
	--peers) PEER_SPEC=; shift ;;
	--peers=*) PEER_SPEC=${1#--peers=}; shift ;;
	*) N=$1; shift ;;
	esac
done
if { [ -n "$RTT" ] && ! [[ $RTT =~ ^[0-9]+$ ]]; } || ! [[ $N =~ ^[0-9]+$ ]]; then
	echo "handoff.sh: --rtt and N take whole numbers" >&2
	exit 2
fi
BUILD=${BENCH_BUILD_DIR:-$ROOT/build}
OUT=${BENCH_OUT:-$ROOT/bench/out}
if [ "$PEER_SPEC" != - ]; then
	. "$ROOT/bench/peers/peers.sh"
	peers_parse "$PEER_SPEC"
	peers_install
fi
mkdir -p "$OUT"
rm -f "$OUT"/handoff-*.ms "$OUT/handoff.png" "$OUT/handoff.order"
TMP=$(mktemp -d /tmp/lockfs-bench.XXXXXX)
MOUNTS=()
. "$ROOT/bench/lib.sh"

cleanup() {
	for m in "${MOUNTS[@]}"; do
		fusermount3 -u "$m" 2>/dev/null || true
	done
	bench_stop
	find "$TMP" -maxdepth 1 -type d -exec chattr -i {} + 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

targets=(lockfs bench_cycle bench_handoff)
[ -n "$RTT" ] && targets+=(lockfs-faultproxy)
bench_build "${targets[@]}"
bench_start "$RTT"
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
	bench_ctl latency $((RTT / 2))
	echo "added round trip: $((RTT / 2 * 2)) ms (lockfs-faultproxy, mounts and floor alike)"
fi

floor=$("$BUILD/bench/bench_cycle" direct "$E" bench 200 1)
floor_ms=$(sed -n 's/.* p50_us=\([0-9]*\).*/\1/p' <<<"$floor" | awk '{ printf "%.1f", $1 / 1000 }')
echo "direct floor, one PutItem + DeleteItem: p50 $floor_ms ms"
row() {  # LABEL OUTPUT
	local p50 p90
	p50=$(sed -n 's/.* p50_ms=\([0-9.]*\).*/\1/p' <<<"$2")
	p90=$(sed -n 's/.* p90_ms=\([0-9.]*\).*/\1/p' <<<"$2")
	if [ -z "$p50" ]; then
		printf '  %-44s failed: %s\n' "$1" "$(tail -n 1 <<<"$2")"
		return
	fi
	printf '  %-44s p50 %7s ms  p90 %7s ms  %6sx the floor\n' "$1" "$p50" "$p90" \
		"$(awk -v a="$p50" -v b="$floor_ms" 'BEGIN { printf "%.1f", a / b }')"
}
# lockfs_row NAME LABEL MODE DIR_A DIR_B: one bench_handoff row, its samples kept.
lockfs_row() {
	local out
	out=$("$H" "$3" "$4" "$5" "$N" -v 2>&1 || true)
	sed -n 's/^sample //p' <<<"$out" >"$OUT/handoff-$1.ms"
	echo "$1" >>"$OUT/handoff.order"
	row "$2" "$(grep -v '^sample ' <<<"$out")"
}
# peer_row NAME LABEL DRIVER ARGS...: one peer row (the driver appends samples).
peer_row() {
	local name=$1 label=$2 drv=$3 out
	shift 3
	out=$("$drv" "$@" --samples "$OUT/handoff-$name.ms" 2>&1 || true)
	echo "$name" >>"$OUT/handoff.order"
	row "$label" "$out"
}
echo
echo "handoff ($N samples each):"
lockfs_row lockfs-death-same "holder killed, same mount" death "$TMP/a" "$TMP/a"
lockfs_row lockfs-death-other "holder killed, other mount" death "$TMP/a" "$TMP/b"
lockfs_row lockfs-flock-0.25 "flock waiter, wait_poll=0.25" flock "$TMP/a" "$TMP/b"
lockfs_row lockfs-flock-0.1 "flock waiter, wait_poll=0.1" flock "$TMP/a" "$TMP/b01"
lockfs_row lockfs-flock-1 "flock waiter, wait_poll=1" flock "$TMP/a" "$TMP/b1"
if [ -n "${PEERS:-}" ]; then
	echo "peers ($(peers_versions)):"
	if peers_has node; then
		peer_node create-table "$E" bench_node
		for ms in 250 100 1000; do
			s=$(awk -v m="$ms" 'BEGIN { print m / 1000 }')
			peer_row "dynamodb-lock-client-$s" \
				"dynamodb-lock-client released, poll $s s" \
				peer_node handoff "$E" bench_node "$N" "$ms"
		done
		printf '  %-44s never freed (FailClosed)\n' "dynamodb-lock-client holder killed"
	fi
	if peers_has python; then
		for ms in 250 100 1000; do
			s=$(awk -v m="$ms" 'BEGIN { print m / 1000 }')
			peer_row "python_dynamodb_lock-$s" \
				"python_dynamodb_lock released, poll $s s" \
				peer_py handoff "$E" bench "$N" "$ms" release
		done
		peer_row python_dynamodb_lock-death-lease1 \
			"python_dynamodb_lock killed, lease 1 s" \
			peer_py handoff "$E" bench "$N" 250 death --lease 1
	fi
fi
echo
echo "reads per waiting key and mount: at most 2 per wait_poll (8/s at the default)"
if [ -n "${PEERS:-}" ]; then
	peers_has python &&
		echo "python_dynamodb_lock's waiter: one consistent read (GetItem) per poll"
	peers_has node &&
		echo "dynamodb-lock-client's waiter: one conditional write (PutItem) per poll"
fi
echo "samples: $OUT/handoff-*.ms"
if [ -x /usr/bin/python3 ] && /usr/bin/python3 "$ROOT/bench/plot.py" handoff "$OUT" >/dev/null; then
	echo "plot: $OUT/handoff.png"
fi
