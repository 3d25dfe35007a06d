#!/usr/bin/env bash
# list.sh: what `ls -l` of a big directory costs through lockfs, against
# the same rows read directly, in a table that also holds other rows.
#
#   bench/list.sh [--rtt MS] [N] [OTHER] [ROUNDS]     defaults: no proxy,
#                                                     10000, 20000, 5
#
# It builds the release binaries, starts its own DynamoDB Local (with
# --rtt, lockfs-faultproxy in front of it with MS/2 ms of latency each way,
# for the mounts and the direct reads alike), creates a table (with the
# index lockfs_parent), writes N live locks of another owner in big/ and
# OTHER in other/ directly (bench_list populate: the rows another mount
# would write), warms the server up, mounts lockfs twice (-o list=index and
# -o list=scan), then runs ROUNDS rounds of, each timed in full:
#   query   a raw paginated Query of the index for big/ (every attribute,
#           eventually consistent): the floor
#   ls      opendir + readdir + lstat of every entry (what `ls -l` asks)
#           on the list=index mount
#   scan    a raw paginated consistent Scan of the whole table filtered by
#           the prefix big/: what a listing cost before the index
#   ls-scan the same `ls -l` on the list=scan mount
# and prints the medians as a table, with each against the floor.
#
# Environment: BENCH_BUILD_DIR (default build/, a release build), RTT_MS
# (the same as --rtt). Not part of the test suite; every wait is bounded
# and everything it starts is stopped on exit.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
RTT=${RTT_MS:-}
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--rtt) RTT=${2:?--rtt needs MS}; shift 2 ;;
	--rtt=*) RTT=${1#--rtt=}; shift ;;
	-h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "list.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
	*) args+=("$1"); shift ;;
	esac
done
N=${args[0]:-10000}
OTHER=${args[1]:-20000}
ROUNDS=${args[2]:-5}
for v in $RTT "$N" "$OTHER" "$ROUNDS"; do
	if ! [[ $v =~ ^[0-9]+$ ]]; then
		echo "list.sh: '$v' is not a whole number" >&2
		exit 2
	fi
done
BUILD=${BENCH_BUILD_DIR:-$ROOT/build}
TMP=$(mktemp -d /tmp/lockfs-list.XXXXXX)
chmod 0755 "$TMP"
. "$ROOT/bench/lib.sh"
B=$BUILD/bench/bench_list
declare -A DAEMON=()

cleanup() {
	trap - EXIT INT TERM HUP
	set +e
	[ -n "$PROXY_PID" ] && bench_ctl latency 0
	for m in "${!DAEMON[@]}"; do
		mounted "$TMP/$m" && timeout 10 fusermount3 -u "$TMP/$m" 2>/dev/null
		wait_for 30 not alive "${DAEMON[$m]}" || kill -KILL "${DAEMON[$m]}" 2>/dev/null
		mounted "$TMP/$m" && timeout 10 fusermount3 -u -z "$TMP/$m" 2>/dev/null
		wait "${DAEMON[$m]}" 2>/dev/null
		chattr -i "$TMP/$m" 2>/dev/null
	done
	bench_stop
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
	echo "configuring a Release build in $BUILD..."
	cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD" -j 2 --target lockfs lockfs-faultproxy bench_list >/dev/null
BTYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
[ -n "$BTYPE" ] || BTYPE="RelWithDebInfo, the default"
[ "$BTYPE" = Release ] ||
	echo "list.sh: warning: $BUILD is a '${BTYPE:-no type}' build, not Release" >&2

bench_start "$RTT"
[ -n "${PORT:-}" ] || { echo "list.sh: DynamoDB Local did not start" >&2; exit 1; }
DIRECT=http://127.0.0.1:$PORT
timeout 60 "$BUILD/lockfs" --create-table -o "endpoint=$DIRECT,table=bench" >/dev/null
timeout 600 "$B" populate "$DIRECT" bench big "$N" 8 >/dev/null
timeout 1200 "$B" populate "$DIRECT" bench other "$OTHER" 8 >/dev/null
# DynamoDB Local's JIT: warm both reads up on loopback first.
timeout 600 "$B" query "$DIRECT" bench big 3 >/dev/null
timeout 600 "$B" scan "$DIRECT" bench big 2 >/dev/null
[ -n "$RTT" ] && bench_ctl latency $((RTT / 2))

for m in index scan; do
	mkdir -p "$TMP/$m"
	"$BUILD/lockfs" -f -o "endpoint=$E,table=bench,list=$m" "$TMP/$m" \
		</dev/null >"$TMP/daemon-$m.log" 2>&1 &
	DAEMON[$m]=$!
	wait_for 30 mounted "$TMP/$m" || {
		echo "list.sh: the $m mount did not come up; its log:" >&2
		cat "$TMP/daemon-$m.log" >&2
		exit 1
	}
done

echo "lockfs list: ls -l of a directory of $N locks, in a table of $((N + OTHER)) rows"
echo "  $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -n): $(nproc) cores," \
	"load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
if [ -n "$RTT" ]; then
	echo "  added round trip: $((RTT / 2 * 2)) ms (lockfs-faultproxy, $((RTT / 2)) ms each way)"
else
	echo "  loopback (no proxy)"
fi
echo "  build: $BUILD ($BTYPE); $ROUNDS rounds, medians"
declare -A MS=() ITEMS=() PAGES=()
measure() {  # NAME CMD...: runs CMD (one round), adds its time
	local name=$1 out
	shift
	out=$(timeout 900 "$@" 2>&1) || { echo "list.sh: $name failed: $out" >&2; exit 1; }
	MS[$name]+="$(sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' <<<"$out") "
	ITEMS[$name]=$(sed -n 's/.*items=\([0-9]*\).*/\1/p' <<<"$out")
	PAGES[$name]=$(sed -n 's/.*pages=\([0-9]*\).*/\1/p' <<<"$out")
}
for _ in $(seq "$ROUNDS"); do
	measure query "$B" query "$E" bench big 1
	measure ls "$B" ls "$TMP/index/big" 1
	measure scan "$B" scan "$E" bench big 1
	measure ls-scan "$B" ls "$TMP/scan/big" 1
done
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
floor=$(median "${MS[query]}")
printf '\n| %-44s | %10s | %8s | %8s | %9s |\n' "what" "median ms" "entries" "requests" "vs floor"
printf '|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..46})" "------------" "----------" "----------" "-----------"
row() {  # NAME LABEL
	local m
	m=$(median "${MS[$1]}")
	printf '| %-44s | %10.1f | %8s | %8s | %8.2fx |\n' "$2" "$m" "${ITEMS[$1]}" \
		"${PAGES[$1]:-}" "$(awk -v a="$m" -v b="$floor" 'BEGIN { print a / b }')"
}
row query "raw Query of the index, paginated (floor)"
row ls "ls -l through lockfs, by the index"
row scan "raw Scan of the table, filtered (before)"
row ls-scan "ls -l through lockfs, -o list=scan (before)"
echo
echo "  (requests: pages read directly; ls -l through a mount shows no count)"
echo "  load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
