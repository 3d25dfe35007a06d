#!/usr/bin/env bash
# session.sh: what holding locks costs in writes, per-lock leases against
# session leases (-o session; doc/session-leases.md).
#
#   bench/session.sh [N] [SECONDS]        defaults: 1000, 20
#
# It starts its own DynamoDB Local with lockfs-faultproxy (tests/tools) in
# front of it (no latency: the proxy only counts requests by operation),
# creates a table, and for each mode mounts lockfs with -o hold=unlink (a
# lock stays held after its creator closes it) and the default lease,
# heartbeat (5 s) and safe period, acquires N locks, lets a period pass,
# then counts the writes (PutItem, UpdateItem, DeleteItem) the daemon sends
# while it holds them for SECONDS. It prints writes per second in both
# modes, their ratio, and the on-demand cost a month of that rate at
# $0.625 per million write request units.
#
# Environment: BENCH_BUILD_DIR (default build/; built if missing). Not
# part of the test suite; every wait is bounded and everything it starts
# is stopped on exit.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
N=${1:-1000}
HOLD_S=${2:-20}
for v in "$N" "$HOLD_S"; do
	[[ $v =~ ^[0-9]+$ ]] || { echo "session.sh: '$v' is not a whole number" >&2; exit 2; }
done
BUILD=${BENCH_BUILD_DIR:-$ROOT/build}
TMP=$(mktemp -d /tmp/lockfs-session-bench.XXXXXX)
chmod 0755 "$TMP"
MNT=$TMP/mnt
DAEMON_PID=
. "$ROOT/bench/lib.sh"

unmount() {
	[ -n "$DAEMON_PID" ] || return 0
	mounted && timeout 30 fusermount3 -u "$MNT" 2>/dev/null
	for _ in $(seq 300); do
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$DAEMON_PID" 2>/dev/null || true
	wait "$DAEMON_PID" 2>/dev/null || true
	mounted && timeout 10 fusermount3 -u -z "$MNT" 2>/dev/null
	DAEMON_PID=
}

cleanup() {
	trap - EXIT INT TERM HUP
	set +e
	unmount
	bench_stop
	chattr -i "$MNT" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

[ -x "$BUILD/lockfs" ] && [ -x "$PROXY" ] || bench_build lockfs lockfs-faultproxy
bench_start proxy
TABLE=bench-session-$$
"$BUILD/lockfs" --create-table -o "endpoint=$E,table=$TABLE" >/dev/null

writes() {
	timeout 10 "$PROXY" --control "$TMP/proxy.ctl" stats | tr ' ' '\n' |
		awk -F= '$1 == "PutItem" || $1 == "UpdateItem" || $1 == "DeleteItem" { n += $2 } END { print n + 0 }'
}

# run MODE_OPTS: prints the writes per second while holding N locks.
run() {
	local w0 w1 i
	mkdir -p "$MNT"
	"$BUILD/lockfs" -f -o "endpoint=$E,table=$TABLE,hold=unlink${1:+,$1}" "$MNT" \
		</dev/null >>"$TMP/daemon.log" 2>&1 &
	DAEMON_PID=$!
	for _ in $(seq 100); do mounted && break; sleep 0.1; done
	mounted || { echo "session.sh: the mount did not come up" >&2; cat "$TMP/daemon.log" >&2; exit 1; }
	for ((i = 0; i < N; i++)); do : >"$MNT/k$i"; done
	sleep 5
	w0=$(writes)
	sleep "$HOLD_S"
	w1=$(writes)
	unmount
	awk -v w=$((w1 - w0)) -v s="$HOLD_S" 'BEGIN { printf "%.1f\n", w / s }'
}

per_lock=$(run "")
session=$(run session)
cost() { awk -v r="$1" 'BEGIN { printf "%.2f", r * 2592000 * 0.625 / 1e6 }'; }
echo "one mount holding $N locks, heartbeat 5 s, $HOLD_S s measured:"
echo "  per-lock leases: $per_lock writes/s (\$$(cost "$per_lock") a month)"
echo "  session leases:  $session writes/s (\$$(cost "$session") a month)"
awk -v a="$per_lock" -v b="$session" 'BEGIN { if (b > 0) printf "  ratio: %.0fx fewer writes\n", a / b }'
