#!/usr/bin/env bash
# run.sh: runs every tests/fs/*.t (bash TAP scripts mounting lockfs against
# DynamoDB Local) and prints "fs: P passed, F failed, S skipped".
# Exit status non-zero if any test failed or a script broke its plan.
#
#   tests/fs/run.sh [FILE.t...]        (default: every *.t here)
#
# Environment: LOCKFS_BIN (lockfs), LOCKFS_T (lockfs-t), LOCKFS_DDB_SCRIPT
# (contrib/dynamodb-local), LOCKFS_FAULTPROXY (lockfs-faultproxy; default
# tools/ beside lockfs-t's directory), LOCKFS_DDB_ENDPOINT (a running
# DynamoDB Local; when unset one is started here and stopped at the end),
# LOCKFS_TMP (scratch directory; default mktemp -d), LOCKFS_KEEP=1 keeps
# work dirs, LOCKFS_FS_TIMEOUT (seconds per file, default 300),
# LOCKFS_FS_JOBS (files run at once, default 1). With more than one job,
# a file whose header has the line "# fs-run: alone" (it loads the CPU,
# or changes what the whole machine shares, such as the next PID) still
# runs with no other file beside it: those run first, one at a time, then
# the rest, JOBS at a time. Most files spend their time waiting for
# leases to lapse, not on the CPU. Each file's line is printed when it
# ends.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export LOCKFS_BIN=${LOCKFS_BIN:-$root/build/lockfs}
export LOCKFS_T=${LOCKFS_T:-$root/build/tests/lib/lockfs-t}
export LOCKFS_DDB_SCRIPT=${LOCKFS_DDB_SCRIPT:-$root/contrib/dynamodb-local}
export LOCKFS_FAULTPROXY=${LOCKFS_FAULTPROXY:-$(dirname "$LOCKFS_T")/../tools/lockfs-faultproxy}
per_file_timeout=${LOCKFS_FS_TIMEOUT:-300}

for f in "$LOCKFS_BIN" "$LOCKFS_T" "$LOCKFS_DDB_SCRIPT"; do
	if [ ! -x "$f" ]; then
		echo "fs: $f is missing or not executable (build first)" >&2
		echo "fs: 0 passed, 1 failed, 0 skipped"
		exit 1
	fi
done
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	echo "fs: no /dev/fuse or fusermount3: every test skipped"
	echo "fs: 0 passed, 0 failed, 1 skipped"
	exit 0
fi

made_tmp=
if [ -z "${LOCKFS_TMP:-}" ]; then
	LOCKFS_TMP=$(mktemp -d /tmp/lockfs-fs.XXXXXX)
	made_tmp=1
fi
export LOCKFS_TMP
mkdir -p "$LOCKFS_TMP"
chmod 0711 "$LOCKFS_TMP"  # other uids must reach the mountpoints

ddb_state=
cleanup() {
	if [ -n "$ddb_state" ]; then
		timeout 30 "$LOCKFS_DDB_SCRIPT" --state-dir "$ddb_state" stop \
			>/dev/null 2>&1
	fi
	if [ -n "$made_tmp" ] && [ -z "${LOCKFS_KEEP:-}" ] && [ "${failed:-1}" = 0 ]; then
		# lockfs makes its mountpoints immutable (chattr +i)
		timeout 20 find "$LOCKFS_TMP" -xdev -type d -exec chattr -i {} + 2>/dev/null
		rm -rf "$LOCKFS_TMP"
	fi
}
declare -A running=()  # pid of a running file's session -> the file
stop_running() {
	local pid
	for pid in "${!running[@]}"; do
		kill -TERM -- "-$pid" 2>/dev/null
	done
}
trap cleanup EXIT
trap 'stop_running; exit 130' INT TERM

export AWS_ACCESS_KEY_ID=fake AWS_SECRET_ACCESS_KEY=fake
export AWS_EC2_METADATA_DISABLED=true
if [ -z "${LOCKFS_DDB_ENDPOINT:-}" ]; then
	ddb_state=$LOCKFS_TMP/ddb-shared
	mkdir -p "$ddb_state"
	if ! out=$(timeout 120 "$LOCKFS_DDB_SCRIPT" --state-dir "$ddb_state" start \
		2>"$ddb_state.log"); then
		cat "$ddb_state.log" >&2
		echo "fs: cannot start DynamoDB Local" >&2
		echo "fs: 0 passed, 1 failed, 0 skipped"
		exit 1
	fi
	read -r port _ <<<"$out"
	export LOCKFS_DDB_ENDPOINT=http://127.0.0.1:$port
fi

if [ $# -gt 0 ]; then
	files=("$@")
else
	files=("$here"/*.t)
fi

passed=0 failed=0 skipped=0
jobs_max=${LOCKFS_FS_JOBS:-1}
[[ $jobs_max =~ ^[1-9][0-9]*$ ]] || jobs_max=1
declare -A started_at=()

# launch FILE: runs it in a session (and process group) of its own, so that
# locks held by the process group of one file (hold=pgrp) end with it and
# an interrupt can stop all of it.
launch() {
	local pid
	setsid timeout -k 10 "$per_file_timeout" bash "$1" \
		>"$LOCKFS_TMP/$(basename "$1").tap" 2>&1 &
	pid=$!
	running[$pid]=$1
	started_at[$pid]=$SECONDS
}

# finish: waits for any running file to end, then counts and prints it.
finish() {
	local pid rc t name log p s f planned ran status
	wait -n -p pid "${!running[@]}"
	rc=$?
	t=${running[$pid]}
	unset "running[$pid]"
	name=$(basename "$t")
	log=$LOCKFS_TMP/$name.tap
	p=$(grep -cE '^ok [0-9]+' "$log" | head -n 1)
	s=$(grep -cE '^ok [0-9]+.*# SKIP' "$log" | head -n 1)
	f=$(grep -cE '^not ok [0-9]+' "$log" | head -n 1)
	p=$((p - s))
	if grep -qE '^1\.\.0 # SKIP' "$log"; then
		s=$((s + 1))
	fi
	planned=$(sed -n 's/^1\.\.\([0-9]*\).*/\1/p' "$log" | head -n 1)
	ran=$((p + s + f))
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1  # died, timed out or broke its plan
	fi
	if [ -n "$planned" ] && [ "$planned" -gt 0 ] && [ "$ran" -ne "$planned" ] && [ "$f" -eq 0 ]; then
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	status=ok
	[ "$f" -gt 0 ] && status=FAIL
	[ "$rc" -eq 124 ] && status="FAIL (timed out after ${per_file_timeout}s)"
	printf 'fs: %-12s %s  (%d passed, %d failed, %d skipped, %ds)\n' \
		"$name" "$status" "$p" "$f" "$s" $((SECONDS - started_at[$pid]))
	if [ "$f" -gt 0 ]; then
		grep -E '^not ok|^#' "$log" | sed 's/^/    /'
		echo "    (full output: $log)"
	fi
}

alone=() together=()
for t in "${files[@]}"; do
	if [ "$jobs_max" -gt 1 ] && grep -q '^# fs-run: alone' "$t"; then
		alone+=("$t")
	else
		together+=("$t")
	fi
done
start=$SECONDS
for t in "${alone[@]}"; do
	launch "$t"
	finish
done
for t in "${together[@]}"; do
	[ "${#running[@]}" -lt "$jobs_max" ] || finish
	launch "$t"
done
while [ "${#running[@]}" -gt 0 ]; do
	finish
done
echo "fs: took $((SECONDS - start)) s"
echo "fs: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
