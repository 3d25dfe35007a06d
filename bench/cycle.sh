#!/usr/bin/env bash
# cycle.sh: how much a lock cycle through lockfs costs compared with the
# same two DynamoDB requests sent directly, measured in the same run against
# the same private DynamoDB Local on 127.0.0.1.
#
#   bench/cycle.sh [N] [THREADS] [ROUNDS]     defaults 2000 1 3
#
# It builds the release binaries, starts its own DynamoDB Local, creates a
# table, mounts lockfs, warms the server up (its JIT makes the
# first few thousand requests slower), then runs ROUNDS rounds of: N
# direct cycles, N mount cycles on one key, N mount cycles on fresh keys,
# alternating so that drift hits both alike. It prints every round and the
# median ratio mount/direct. A mount cycle on one key costs a PutItem and a
# DeleteItem, like the direct one (the lookup after our own release is
# answered from memory); on fresh keys the kernel's lookup costs a GetItem
# as well.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
N=${1:-2000}
THREADS=${2:-1}
ROUNDS=${3:-3}
TMP=$(mktemp -d /tmp/lockfs-bench.XXXXXX)
MNT=$TMP/mnt
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench
export AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true

cleanup() {
	fusermount3 -u "$MNT" 2>/dev/null || true
	"$ROOT/contrib/dynamodb-local" --state-dir "$TMP/ddb" stop >/dev/null 2>&1 || true
	rm -rf "$TMP"
}
trap cleanup EXIT

cmake -S "$ROOT" -B "$ROOT/build" >/dev/null
cmake --build "$ROOT/build" -j "$(nproc)" --target lockfs bench_cycle >/dev/null
read -r PORT _ < <("$ROOT/contrib/dynamodb-local" --state-dir "$TMP/ddb" start 2>/dev/null)
E=http://127.0.0.1:$PORT
"$ROOT/build/lockfs" --create-table -o "endpoint=$E,table=bench" >/dev/null
mkdir -p "$MNT"
"$ROOT/build/lockfs" -o "endpoint=$E,table=bench" "$MNT"
CYCLE=$ROOT/build/bench/bench_cycle

echo "warming up DynamoDB Local..."
"$CYCLE" direct "$E" bench 3000 2 >/dev/null
"$CYCLE" mount "$MNT" 1500 2 >/dev/null

ratios=()
fresh_ratios=()
for r in $(seq 1 "$ROUNDS"); do
	d=$("$CYCLE" direct "$E" bench "$N" "$THREADS")
	m=$("$CYCLE" mount "$MNT" "$N" "$THREADS")
	f=$("$CYCLE" mount "$MNT" "$N" "$THREADS" fresh)
	echo "round $r: $d"
	echo "round $r: $m"
	echo "round $r: $f"
	dp=$(sed -n 's/.* per_s=\([0-9.]*\).*/\1/p' <<<"$d")
	mp=$(sed -n 's/.* per_s=\([0-9.]*\).*/\1/p' <<<"$m")
	fp=$(sed -n 's/.* per_s=\([0-9.]*\).*/\1/p' <<<"$f")
	ratios+=("$(awk -v a="$dp" -v b="$mp" 'BEGIN { printf "%.3f", a / b }')")
	fresh_ratios+=("$(awk -v a="$dp" -v b="$fp" 'BEGIN { printf "%.3f", a / b }')")
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
echo "time per cycle, mount / direct (median of $ROUNDS rounds, $THREADS thread(s)):"
echo "  same key:   $(median "${ratios[@]}")x   (goal <= 1.25x)"
echo "  fresh keys: $(median "${fresh_ratios[@]}")x   (includes the kernel's lookup: one GetItem more)"
