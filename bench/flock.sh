#!/usr/bin/env bash
# flock.sh: what flock(2) cycles cost on a mount whose file locks hold many
# keys, against the same cycles with none held.
#
#   bench/flock.sh [--rtt MS] [--opts OPTIONS] [H] [N] [THREADS] [ROUNDS]
#                                              defaults 10000 500 4 3
#
# It builds the release binaries, starts its own DynamoDB Local (and, with
# --rtt, lockfs-faultproxy in front of it), creates a table and mounts
# lockfs with -o session,max_locks_per_user=0,max_opens_per_user=0 (plus
# --opts). Session mode because with per-lock leases the H held keys cost
# H heartbeats per 5 s, which on a 2-core machine would saturate the
# daemon and DynamoDB Local and measure that instead; the per-uid limits
# are lifted so that one user may hold H keys. It warms DynamoDB Local up
# (its JIT makes the first few thousand requests slow), starts
# `bench_cycle hold` (bench/cycle.c), which takes H keys with flock in
# MNT/held/, and then runs ROUNDS rounds of: THREADS threads each cycling
# flock(LOCK_EX) + flock(LOCK_UN) N times on a file of its own with no key
# held (the holder lets go of its keys: LOCK_UN, close), then the same with
# the holder holding its H keys again. The holder is one process, started
# once; rounds alternate so that drift hits both alike. It prints every
# round with the mount's lockfs_locks_held before it, the medians, the
# ratio held / none of the throughput (target about 1.0x: a cycle's cost
# should not depend on how many keys other file locks hold) and the
# daemon's CPU time per cycle in both (/proc/PID/stat, user + system).
# After each flock run it times the direct floor in the same state (N
# PutItem + DeleteItem cycles x THREADS sent by lockfs's own client, as in
# bench/cycle.sh): on a shared machine the load moves both, and the ratio
# held / none of flock against its floor is the steadier figure.
#
# --rtt MS (or RTT_MS=MS): lockfs-faultproxy with MS/2 ms of latency each
# way (an odd MS is rounded down), added after the warm-up.
# --opts OPTIONS: more -o options for the mount.
#
# Environment: BENCH_BUILD_DIR (default build/; configured as a Release
# build if it has no CMakeCache.txt), BENCH_LOCKFS (the lockfs binary to
# mount with, default BUILD/lockfs: e.g. an older build's, to compare; the
# rest comes from BUILD).
#
# Not part of the test suite; run it by hand. Every wait is bounded and
# everything it starts is stopped on exit.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
RTT=${RTT_MS:-}
MOPTS=
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--rtt) RTT=${2:?--rtt needs MS}; shift 2 ;;
	--rtt=*) RTT=${1#--rtt=}; shift ;;
	--opts) MOPTS=${2:?--opts needs OPTIONS}; shift 2 ;;
	--opts=*) MOPTS=${1#--opts=}; shift ;;
	-h|--help) sed -n '2,41p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "flock.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
	*) args+=("$1"); shift ;;
	esac
done
H=${args[0]:-10000}
N=${args[1]:-500}
THREADS=${args[2]:-4}
ROUNDS=${args[3]:-3}
for v in ${RTT:+"$RTT"} "$H" "$N" "$THREADS" "$ROUNDS"; do
	if ! [[ $v =~ ^[0-9]+$ ]] || [ "$v" -gt 10000000 ]; then
		echo "flock.sh: '$v' is not a whole number" >&2
		exit 2
	fi
done
if [ "$H" -lt 1 ] || [ "$N" -lt 1 ] || [ "$THREADS" -lt 1 ] ||
	[ "$THREADS" -gt 256 ] || [ "$ROUNDS" -lt 1 ]; then
	echo "flock.sh: H, N and ROUNDS at least 1, THREADS 1 to 256" >&2
	exit 2
fi
BUILD=${BENCH_BUILD_DIR:-$ROOT/build}
LOCKFS=${BENCH_LOCKFS:-$BUILD/lockfs}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/lockfs-flock.XXXXXX")
chmod 0755 "$TMP"
MNT=$TMP/mnt
DAEMON_PID=
HOLD_PID=
HOLD_FD=
. "$ROOT/bench/lib.sh"

# holder_says WORD: the holder's last line starts with WORD.
holder_says() { [ "$(tail -n 1 "$TMP/hold.out" 2>/dev/null | cut -d' ' -f1)" = "$1" ]; }
# holder WORD SECS: tells the holder WORD (hold, free) and waits at most
# SECS for its answer.
holder() {
	echo "$1" >&"$HOLD_FD"
	local want=held
	[ "$1" = free ] && want=free
	wait_for "$2" holder_says "$want" && return 0
	echo "flock.sh: the holder did not answer '$1' within $2 s:" >&2
	tail -n 5 "$TMP/hold.out" "$TMP/hold.err" >&2
	exit 1
}

cleanup() {
	trap - EXIT INT TERM HUP
	set +e
	[ -n "$PROXY_PID" ] && bench_ctl latency 0 2>/dev/null
	if [ -n "$HOLD_PID" ]; then
		# EOF on its stdin ends it; its keys go with its files.
		[ -n "$HOLD_FD" ] && exec {HOLD_FD}>&-
		wait_for 60 not alive "$HOLD_PID" || bench_kill "$HOLD_PID"
		wait "$HOLD_PID" 2>/dev/null
	fi
	bench_teardown
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
	echo "configuring a Release build in $BUILD..."
	cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
targets=(lockfs bench_cycle)
[ -n "$RTT" ] && targets+=(lockfs-faultproxy)
bench_build "${targets[@]}"
BTYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
case "$BTYPE" in
Release | RelWithDebInfo) ;;
*) echo "flock.sh: warning: $BUILD is a '${BTYPE:-no type}' build, not a release one" >&2 ;;
esac
[ -x "$LOCKFS" ] || { echo "flock.sh: no lockfs binary at $LOCKFS" >&2; exit 1; }
CYCLE=$BUILD/bench/bench_cycle

bench_start "$RTT"
[ -n "${PORT:-}" ] || { echo "flock.sh: DynamoDB Local did not start" >&2; exit 1; }
timeout 60 "$LOCKFS" --create-table -o "endpoint=$E,table=bench" >/dev/null
mkdir -p "$MNT"
OPTS="endpoint=$E,table=bench,session,max_locks_per_user=0,max_opens_per_user=0${MOPTS:+,$MOPTS}"
"$LOCKFS" -f -o "$OPTS" "$MNT" </dev/null >"$TMP/daemon.log" 2>&1 &
DAEMON_PID=$!
wait_for 30 mounted || {
	echo "flock.sh: the mount did not come up; its log:" >&2
	cat "$TMP/daemon.log" >&2
	exit 1
}

echo "lockfs flock cycles with $H keys held by other file locks, and none"
echo "  $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -n): $(nproc) cores," \
	"load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
echo "  lockfs: $LOCKFS ($("$LOCKFS" --version 2>/dev/null | head -n 1 | cut -d" " -f1-2 || true)); build $BUILD ($BTYPE)"
echo "  mount options: $OPTS"
echo "  (session mode: with per-lock leases $H held keys would cost $H heartbeats per period," \
	"which would saturate this machine rather than measure a cycle)"
echo "warming up DynamoDB Local..."
timeout 300 "$CYCLE" direct "$E" bench 3000 2 >/dev/null
timeout 300 "$CYCLE" flock "$MNT" 500 "$THREADS" >/dev/null
RTT_LINE=
if [ -n "$RTT" ]; then
	bench_ctl latency $((RTT / 2))
	RTT_LINE="added round trip: $((RTT / 2 * 2)) ms (lockfs-faultproxy, $((RTT / 2)) ms each way)"
	echo "$RTT_LINE"
fi

# The holder: commands on a FIFO held open here (read-write, so that
# opening it never blocks); its EOF when this script ends ends the holder.
mkdir -p "$MNT/held"
mkfifo "$TMP/hold.in"
exec {HOLD_FD}<>"$TMP/hold.in"
"$CYCLE" hold "$MNT/held" "$H" <"$TMP/hold.in" >"$TMP/hold.out" \
	2>"$TMP/hold.err" {HOLD_FD}>&- &
HOLD_PID=$!
HOLD_MAX_S=$((120 + H / 20)) # 20 keys a second at the least
wait_for "$HOLD_MAX_S" holder_says held || {
	echo "flock.sh: the holder did not take $H keys within $HOLD_MAX_S s:" >&2
	tail -n 5 "$TMP/hold.out" "$TMP/hold.err" >&2
	exit 1
}
echo "holder: $(tail -n 1 "$TMP/hold.out")"

TICKS=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$DAEMON_PID/stat"; }
locks_held() {
	sed -n 's/^lockfs_locks_held \([0-9]*\)$/\1/p' "$MNT/.lockfs/metrics" 2>/dev/null
}
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
declare -A PS P50 P90 P99 CPU DPS
CYCLE_MAX_S=$((60 + N * THREADS / 10)) # 10 cycles a second at the least
# measure KIND: one run of N cycles x THREADS; its line and the daemon's
# CPU per cycle.
measure() {
	local held c0 c1 line cpu d
	held=$(locks_held)
	c0=$(cpu_ticks)
	line=$(timeout "$CYCLE_MAX_S" "$CYCLE" flock "$MNT" "$N" "$THREADS" {HOLD_FD}>&-) || {
		echo "flock.sh: $1 cycles failed: $line" >&2
		exit 1
	}
	c1=$(cpu_ticks)
	cpu=$(awk -v t=$((c1 - c0)) -v hz="$TICKS" -v n=$((N * THREADS)) \
		'BEGIN { printf "%.0f", t / hz * 1e6 / n }')
	echo "round $r, $1 (locks held ${held:-?}): $line daemon_cpu_us=$cpu"
	# The direct floor in the same state: DynamoDB Local's share of any
	# difference (the held keys are rows in its table too).
	d=$(timeout "$CYCLE_MAX_S" "$CYCLE" direct "$E" bench "$N" "$THREADS" {HOLD_FD}>&-) || {
		echo "flock.sh: direct cycles failed: $d" >&2
		exit 1
	}
	echo "round $r, $1, direct floor: $d"
	DPS[$1]+="$(field per_s "$d") "
	PS[$1]+="$(field per_s "$line") "
	P50[$1]+="$(field p50_us "$line") "
	P90[$1]+="$(field p90_us "$line") "
	P99[$1]+="$(field p99_us "$line") "
	CPU[$1]+="$cpu "
}
# Odd rounds measure with the keys held first, even ones with none first
# (the holder starts holding): one change of the holder's a round, and
# drift over the run hits both alike.
ratios=()
dratios=()
nratios=()
held_now=1
for r in $(seq 1 "$ROUNDS"); do
	order="held none"
	[ $((r % 2)) -eq 0 ] && order="none held"
	for kind in $order; do
		if [ "$kind" = held ] && [ "$held_now" = 0 ]; then
			holder hold "$HOLD_MAX_S"
			held_now=1
		elif [ "$kind" = none ] && [ "$held_now" = 1 ]; then
			holder free "$HOLD_MAX_S"
			held_now=0
		fi
		measure "$kind"
	done
	# shellcheck disable=SC2086 # the per-round lists split on purpose
	set -- ${PS[none]}
	a=${!#}
	# shellcheck disable=SC2086
	set -- ${PS[held]}
	ratios+=("$(awk -v a="$a" -v b="${!#}" 'BEGIN { printf "%.3f", b / a }')")
	# shellcheck disable=SC2086
	set -- ${DPS[none]}
	a=${!#}
	# shellcheck disable=SC2086
	set -- ${DPS[held]}
	dratios+=("$(awk -v a="$a" -v b="${!#}" 'BEGIN { printf "%.3f", b / a }')")
	nratios+=("$(awk -v a="${ratios[-1]}" -v b="${dratios[-1]}" 'BEGIN { printf "%.3f", a / b }')")
	echo "round $r: throughput held / none ${ratios[-1]}x, direct floor ${dratios[-1]}x;" \
		"each against its floor ${nratios[-1]}x"
done
# Let go before the holder ends, so that the unmount finds nothing open.
[ "$held_now" = 1 ] && holder free "$HOLD_MAX_S"

echo
echo "summary, medians of $ROUNDS rounds of $N flock cycles x $THREADS thread(s), each on its own key:"
[ -n "$RTT_LINE" ] && echo "  $RTT_LINE"
echo "  mount options: $OPTS"
# shellcheck disable=SC2086 # the per-round lists split on purpose
printf '  %-30s %9s %8s %8s %8s %16s\n' "" cycles/s "p50 us" "p90 us" "p99 us" "daemon CPU/cycle"
for k in none held; do
	label="no other key held"
	[ "$k" = held ] && label="$H keys held by the holder"
	# shellcheck disable=SC2086
	printf '  %-30s %9s %8s %8s %8s %13s us\n' "$label" \
		"$(median ${PS[$k]})" "$(median ${P50[$k]})" "$(median ${P90[$k]})" \
		"$(median ${P99[$k]})" "$(median ${CPU[$k]})"
done
echo "  throughput, held / none: $(median "${ratios[@]}")x (target about 1.0x; per round: ${ratios[*]})"
# shellcheck disable=SC2086
echo "  direct floor (PutItem + DeleteItem, lockfs's client): $(median ${DPS[none]}) cycles/s with none held," \
	"$(median ${DPS[held]}) with the $H rows; held / none $(median "${dratios[@]}")x (per round: ${dratios[*]})"
echo "  throughput held / none, each against the direct floor of its round and state:" \
	"$(median "${nratios[@]}")x (per round: ${nratios[*]}; less swayed by the machine's load)"
# shellcheck disable=SC2086
echo "  daemon CPU per cycle, held / none: $(awk -v a="$(median ${CPU[none]})" \
	-v b="$(median ${CPU[held]})" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "-" }')x"
echo "  load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
if ! alive "$DAEMON_PID"; then
	echo "flock.sh: the daemon died; its log:" >&2
	tail -n 30 "$TMP/daemon.log" >&2
	exit 1
fi
