#!/usr/bin/env bash
# cycle.sh: how much a lock cycle through lockfs costs compared with the
# same two DynamoDB requests sent directly, measured in the same run against
# the same private DynamoDB Local on 127.0.0.1.
#
#   bench/cycle.sh [--rtt MS] [--peers[=node,python]] [--opts MOUNT_OPTIONS]
#                  [N] [THREADS] [ROUNDS]
#                                                    defaults 2000 1 3
#
# It builds the release binaries, starts its own DynamoDB Local, creates a
# table, mounts lockfs, warms the server up (its JIT makes the
# first few thousand requests slower), then runs ROUNDS rounds of: N
# direct cycles, N mount cycles on one key, N mount cycles on fresh keys,
# N mount cycles with each thread in a directory of its own (the kernel
# serializes creates and unlinks within one directory, so with one
# directory at most one acquire or release is in flight there), alternating
# so that drift hits both alike. It prints every round, the median ratio
# mount/direct, the daemon's CPU time and context switches per cycle, and
# beside them the CPU time the direct floor's process spent per cycle
# (lockfs's own DynamoDB client sending the same two requests: what the
# daemon spends on DynamoDB alone), and the kernel's requests per cycle by
# operation (lockfs_fuse_requests_total), and what one kernel request costs
# a daemon with nothing to do (a second mount, attr_timeout=0, whose root
# is stat'ed 20,000 times: each stat is one getattr answered from memory),
# which prices the cycle's requests before any network. A mount cycle on
# one key costs a PutItem and a DeleteItem, like the direct one (the lookup
# after our own release is answered from memory); on fresh keys the
# kernel's lookup costs a GetItem as well.
#
# --rtt MS (or RTT_MS=MS): puts lockfs-faultproxy (tests/tools) in front of
# DynamoDB Local with MS/2 ms of latency each way, for the mount and the
# direct baseline alike, so that both pay a region-like round trip (about
# 4 ms for a client in the same region) on top of loopback's; the warm-up
# runs without it. The added round trip is printed with the results. An odd
# MS is rounded down to an even one. Default: no proxy, plain loopback.
#
# --peers (or --peers=node / --peers=python): in every round, after lockfs,
# the same N cycles on THREADS workers with npm dynamodb-lock-client
# (FailClosed) and python_dynamodb_lock (bench/peers/), through the same
# endpoint (and proxy), and their time per cycle against the direct floor's.
# They are installed once, at pinned versions, into a cache
# (bench/peers/peers.sh: ~/.cache/lockfs/bench-peers); exit 2 if a registry
# cannot be reached. dynamodb-lock-client gets a table of its own (HASH
# lock_key only) in the same DynamoDB Local: its FailClosed client cannot
# take lockfs's sort key.
#
# --opts OPTIONS: more -o options for the mount, e.g. --opts release=async
# (unlink answers before its delete: what one directory's lane gains).
#
# Every cycle's time goes to OUT/cycle-NAME.us and, with matplotlib
# (contrib/install-deps bench), their distributions to
# OUT/cycle-latency.png (bench/plot.py); OUT is printed at the end.
#
# Environment: BENCH_BUILD_DIR (default build/, a release build), BENCH_OUT
# (default bench/out/, which git ignores).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
RTT=${RTT_MS:-}
PEER_SPEC=-
MOPTS=
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--rtt) RTT=${2:?--rtt needs MS}; shift 2 ;;
	--rtt=*) RTT=${1#--rtt=}; shift ;;
	--peers) PEER_SPEC=; shift ;;
	--peers=*) PEER_SPEC=${1#--peers=}; shift ;;
	--opts) MOPTS=${2:?--opts needs OPTIONS}; shift 2 ;;
	--opts=*) MOPTS=${1#--opts=}; shift ;;
	*) args+=("$1"); shift ;;
	esac
done
if [ -n "$RTT" ] && ! [[ $RTT =~ ^[0-9]+$ ]]; then
	echo "cycle.sh: --rtt takes whole milliseconds" >&2
	exit 2
fi
N=${args[0]:-2000}
THREADS=${args[1]:-1}
ROUNDS=${args[2]:-3}
BUILD=${BENCH_BUILD_DIR:-$ROOT/build}
OUT=${BENCH_OUT:-$ROOT/bench/out}
if [ "$PEER_SPEC" != - ]; then
	. "$ROOT/bench/peers/peers.sh"
	peers_parse "$PEER_SPEC"
	peers_install
fi
mkdir -p "$OUT"
rm -f "$OUT"/cycle-*.us "$OUT/cycle-latency.png" "$OUT/cycle.order"
TMP=$(mktemp -d /tmp/lockfs-bench.XXXXXX)
MNT=$TMP/mnt
. "$ROOT/bench/lib.sh"

cleanup() {
	fusermount3 -u "$MNT" 2>/dev/null || true
	fusermount3 -u "$TMP/mnt0" 2>/dev/null || true
	bench_stop
	chattr -i "$MNT" "$TMP/mnt0" 2>/dev/null || true # lockfs makes them immutable
	rm -rf "$TMP"
}
trap cleanup EXIT

targets=(lockfs bench_cycle)
[ -n "$RTT" ] && targets+=(lockfs-faultproxy)
bench_build "${targets[@]}"
bench_start "$RTT" # both the mount and the direct baseline use E
"$BUILD/lockfs" --create-table -o "endpoint=$E,table=bench" >/dev/null
mkdir -p "$MNT"
"$BUILD/lockfs" -o "endpoint=$E,table=bench${MOPTS:+,$MOPTS}" "$MNT"
CYCLE=$BUILD/bench/bench_cycle

echo "warming up DynamoDB Local..."
"$CYCLE" direct "$E" bench 3000 2 >/dev/null
"$CYCLE" mount "$MNT" 1500 2 >/dev/null
PEER_NAMES=()
if [ -n "${PEERS:-}" ]; then
	echo "peers: $(peers_versions)"
	if peers_has node; then
		peer_node create-table "$E" bench_node
		peer_node cycle "$E" bench_node 500 2 >/dev/null
		PEER_NAMES+=(dynamodb-lock-client)
	fi
	if peers_has python; then
		peer_py cycle "$E" bench 300 2 >/dev/null
		PEER_NAMES+=(python_dynamodb_lock)
	fi
fi
printf '%s\n' direct lockfs lockfs-fresh lockfs-dirs "${PEER_NAMES[@]}" >"$OUT/cycle.order"
RTT_LINE=
if [ -n "$RTT" ]; then
	bench_ctl latency $((RTT / 2))
	RTT_LINE="added round trip: $((RTT / 2 * 2)) ms (lockfs-faultproxy, $((RTT / 2)) ms each way, mount and direct alike)"
	echo "$RTT_LINE"
fi

# The daemon's CPU time (user + system) in clock ticks.
DAEMON=$(pgrep -n -f "lockfs -o endpoint=$E,table=bench${MOPTS:+,$MOPTS} $MNT" || true)
TICKS=$(getconf CLK_TCK)
cpu_ticks() {
	[ -n "$DAEMON" ] && awk '{ print $14 + $15 }' "/proc/$DAEMON/stat" 2>/dev/null || echo 0
}
# The daemon's context switches (voluntary and not) over its threads now.
switches() {
	[ -n "$DAEMON" ] && cat /proc/"$DAEMON"/task/*/status 2>/dev/null |
		awk '/ctxt_switches/ { s += $2 } END { print s + 0 }' || echo 0
}
mount_switches=0
direct_cpu=()
# The daemon's count of the kernel's requests, by operation: "op n" lines.
fuse_counts() {
	sed -n 's/^lockfs_fuse_requests_total{op="\([a-z_]*\)"} \([0-9]*\)$/\1 \2/p' \
		"$MNT/.lockfs/metrics" 2>/dev/null
}
declare -A FUSE_OPS
ratios=()
fresh_ratios=()
dirs_ratios=()
mount_ticks=0
mount_cycles=0
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }
# Per-round figures for the summary, by name: cycles/s, time per cycle /
# the floor's, p50 and p50 / the floor's p50 (less swayed by the stalls of
# a loaded machine than the totals are).
declare -A R_RATIO R_P50 R_PS R_P50R
note() { # NAME LINE FLOOR_LINE
	local ps p50
	ps=$(field per_s "$2")
	p50=$(field p50_us "$2")
	R_PS[$1]+="$ps "
	R_P50[$1]+="$p50 "
	R_RATIO[$1]+="$(awk -v a="$(field per_s "$3")" -v b="$ps" 'BEGIN { printf "%.3f", a / b }') "
	R_P50R[$1]+="$(awk -v a="$p50" -v b="$(field p50_us "$3")" 'BEGIN { printf "%.3f", a / b }') "
}
samples() { CYCLE_SAMPLES=$OUT/cycle-$1.us; export CYCLE_SAMPLES; }
for r in $(seq 1 "$ROUNDS"); do
	d=$(samples direct; "$CYCLE" direct "$E" bench "$N" "$THREADS")
	fuse0=$(fuse_counts)
	c0=$(cpu_ticks) s0=$(switches)
	m=$(samples lockfs; "$CYCLE" mount "$MNT" "$N" "$THREADS")
	c1=$(cpu_ticks) s1=$(switches)
	while read -r op v; do
		b=$(awk -v o="$op" '$1 == o { print $2 }' <<<"$fuse0")
		FUSE_OPS[$op]=$((${FUSE_OPS[$op]:-0} + v - ${b:-0}))
	done < <(fuse_counts)
	mount_switches=$((mount_switches + s1 - s0))
	direct_cpu+=("$(field cpu_us "$d")")
	f=$(samples lockfs-fresh; "$CYCLE" mount "$MNT" "$N" "$THREADS" fresh)
	x=$(samples lockfs-dirs; "$CYCLE" mount "$MNT" "$N" "$THREADS" dirs)
	mount_ticks=$((mount_ticks + c1 - c0))
	mount_cycles=$((mount_cycles + N * THREADS))
	echo "round $r: $d"
	echo "round $r: $m"
	echo "round $r: $f"
	echo "round $r: $x"
	note direct "$d" "$d"
	note lockfs "$m" "$d"
	note lockfs-fresh "$f" "$d"
	note lockfs-dirs "$x" "$d"
	for p in "${PEER_NAMES[@]}"; do
		case "$p" in
		dynamodb-lock-client)
			y=$(peer_node cycle "$E" bench_node "$N" "$THREADS" \
				--samples "$OUT/cycle-$p.us") ;;
		python_dynamodb_lock)
			y=$(peer_py cycle "$E" bench "$N" "$THREADS" \
				--samples "$OUT/cycle-$p.us") ;;
		esac
		echo "round $r: $y"
		note "$p" "$y" "$d"
	done
	dp=$(sed -n 's/.* per_s=\([0-9.]*\).*/\1/p' <<<"$d")
	mp=$(sed -n 's/.* per_s=\([0-9.]*\).*/\1/p' <<<"$m")
	fp=$(sed -n 's/.* per_s=\([0-9.]*\).*/\1/p' <<<"$f")
	xp=$(sed -n 's/.* per_s=\([0-9.]*\).*/\1/p' <<<"$x")
	ratios+=("$(awk -v a="$dp" -v b="$mp" 'BEGIN { printf "%.3f", a / b }')")
	fresh_ratios+=("$(awk -v a="$dp" -v b="$fp" 'BEGIN { printf "%.3f", a / b }')")
	dirs_ratios+=("$(awk -v a="$dp" -v b="$xp" 'BEGIN { printf "%.3f", a / b }')")
done
# What one kernel request costs a daemon with nothing to do: a second mount,
# with attr_timeout=0, whose root each stat asks the daemon for (answered
# from memory, no network). Its figures: "CPU_US SWITCHES".
request_floor() {
	local m0=$TMP/mnt0 pid0 c0 c1 s0 s1 r0 r1 n=20000
	local o="endpoint=$E,table=bench,attr_timeout=0,entry_timeout=0"
	mkdir -p "$m0"
	"$BUILD/lockfs" -o "$o" "$m0" >/dev/null 2>&1 || return 0
	pid0=$(pgrep -n -f "lockfs -o $o $m0" || true)
	reqs0() {
		sed -n 's/^lockfs_fuse_requests_total{op="[a-z_]*"} \([0-9]*\)$/\1/p' \
			"$m0/.lockfs/metrics" | awk '{ s += $1 } END { print s + 0 }'
	}
	if [ -n "$pid0" ]; then
		"$CYCLE" stat "$m0" 2000 1 >/dev/null # warm up
		r0=$(reqs0) c0=$(awk '{ print $14 + $15 }' "/proc/$pid0/stat")
		s0=$(cat /proc/"$pid0"/task/*/status | awk '/ctxt_switches/ { s += $2 } END { print s + 0 }')
		"$CYCLE" stat "$m0" "$n" 1 >/dev/null
		c1=$(awk '{ print $14 + $15 }' "/proc/$pid0/stat")
		s1=$(cat /proc/"$pid0"/task/*/status | awk '/ctxt_switches/ { s += $2 } END { print s + 0 }')
		r1=$(reqs0)
		# the metrics reads themselves are requests too: a few, left in
		awk -v t=$((c1 - c0)) -v hz="$TICKS" -v s=$((s1 - s0)) -v r=$((r1 - r0)) \
			'BEGIN { if (r > 0) printf "%.1f %.2f\n", t / hz * 1e6 / r, s / r }'
	fi
	fusermount3 -u "$m0" 2>/dev/null || true
}
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
echo "time per cycle, mount / direct (median of $ROUNDS rounds, $THREADS thread(s)):"
[ -n "$RTT_LINE" ] && echo "  $RTT_LINE"
[ -n "$MOPTS" ] && echo "  mount options: $MOPTS"
echo "  same key:   $(median "${ratios[@]}")x   (goal <= 1.25x)"
echo "  fresh keys: $(median "${fresh_ratios[@]}")x   (includes the kernel's lookup: one GetItem more)"
echo "  one directory per thread: $(median "${dirs_ratios[@]}")x   (same key; with one directory, creates and unlinks wait for each other in the kernel)"
echo "throughput, mount / direct: same key $(awk -v r="$(median "${ratios[@]}")" 'BEGIN { printf "%.2f", 1 / r }')x, one directory per thread $(awk -v r="$(median "${dirs_ratios[@]}")" 'BEGIN { printf "%.2f", 1 / r }')x"
if [ "$mount_cycles" -gt 0 ] && [ -n "$DAEMON" ]; then
	echo "daemon CPU per cycle (same key): $(awk -v t="$mount_ticks" -v hz="$TICKS" -v n="$mount_cycles" 'BEGIN { printf "%.0f", t / hz * 1e6 / n }') us," \
		"$(awk -v s="$mount_switches" -v n="$mount_cycles" 'BEGIN { printf "%.1f", s / n }') context switches"
	echo "  beside it, lockfs's own client sending the same two requests directly: $(median "${direct_cpu[@]}") us per cycle"
	fuse_line= fuse_total=0
	for op in "${!FUSE_OPS[@]}"; do
		v=${FUSE_OPS[$op]}
		[ "$v" -ge $((mount_cycles / 20)) ] || continue # 0.05 a cycle or more
		fuse_total=$((fuse_total + v))
		fuse_line+=" $op $(awk -v v="$v" -v n="$mount_cycles" 'BEGIN { printf "%.1f", v / n }')"
	done
	[ -n "$fuse_line" ] &&
		echo "  the kernel's requests per cycle: $(awk -v v="$fuse_total" -v n="$mount_cycles" 'BEGIN { printf "%.1f", v / n }') (${fuse_line# })"
	read -r floor_us floor_sw < <(request_floor) || true
	if [ -n "${floor_us:-}" ]; then
		echo "  one kernel request with nothing to do (stat of a second mount's root, attr_timeout=0): $floor_us us of its daemon's CPU, $floor_sw context switches;" \
			"the cycle's $(awk -v v="$fuse_total" -v n="$mount_cycles" 'BEGIN { printf "%.1f", v / n }') requests at that price: $(awk -v f="$floor_us" -v v="$fuse_total" -v n="$mount_cycles" 'BEGIN { printf "%.0f", f * v / n }') us"
	fi
fi
echo
echo "summary, medians of $ROUNDS rounds of $N cycles x $THREADS worker(s), against the direct floor of the same round:"
[ -n "$RTT_LINE" ] && echo "  $RTT_LINE"
[ -n "$MOPTS" ] && echo "  mount options: $MOPTS"
label() {
	case "$1" in
	direct) echo "direct floor (PutItem + DeleteItem)" ;;
	lockfs) echo "lockfs, same key" ;;
	lockfs-fresh) echo "lockfs, fresh keys" ;;
	lockfs-dirs) echo "lockfs, one directory per thread" ;;
	dynamodb-lock-client) echo "dynamodb-lock-client (FailClosed)" ;;
	*) echo "$1" ;;
	esac
}
# shellcheck disable=SC2086 # the per-round lists split on purpose
printf '  %-36s %9s %13s %8s %9s\n' "" cycles/s "time/cycle" "p50 us" "p50"
for k in direct lockfs lockfs-fresh lockfs-dirs "${PEER_NAMES[@]}"; do
	printf '  %-36s %9s %12sx %8s %8sx\n' "$(label "$k")" \
		"$(median ${R_PS[$k]})" "$(median ${R_RATIO[$k]})" \
		"$(median ${R_P50[$k]})" "$(median ${R_P50R[$k]})"
done
if [ ${#PEER_NAMES[@]} -gt 0 ]; then
	echo "  (peers: $(peers_versions); each times $N cycles after 100 untimed" \
		"ones of its own; dynamodb-lock-client on a table of its own, HASH key only)"
fi
echo "samples: $OUT/cycle-*.us"
if [ -x /usr/bin/python3 ] && /usr/bin/python3 "$ROOT/bench/plot.py" cycle "$OUT" >/dev/null; then
	echo "plot: $OUT/cycle-latency.png"
fi
