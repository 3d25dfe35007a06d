#!/usr/bin/env bash
# quickstart.t: contrib/quickstart as a tool people keep using. Run twice
# with two mountpoints, it reuses one DynamoDB Local (one endpoint), says
# "created" the first time and "exists" the second, and shows its steps
# (the build among them); --status lists DynamoDB Local and both mounts;
# --stop unmounts both (their locks released, not left to lapse) and then
# stops DynamoDB Local; a restart gets the same port, so the endpoint is
# stable; a dead mount (daemon killed) shows in --status, is replaced by a
# rerun and removed by --stop; a lockfs mount it did not make is refused and
# left alone; --help is text, not shell code.
#
# The quickstart runs with its state in this test's work directory
# (LOCKFS_QUICKSTART_STATE) and builds lockfs in the directory of LOCKFS_BIN
# (LOCKFS_BUILD_DIR: a no-op when it is up to date). It needs DynamoDB Local
# already downloaded (as run.sh's) and root (allow_other, chattr +i). Every
# run is bounded; the EXIT trap runs --stop and kills what is left.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip_all "the quickstart mounts with allow_other and chattr +i: needs root"
QS=$_root/contrib/quickstart
BUILD_DIR=$(cd "$(dirname "$LOCKFS_BIN")" && pwd)
[ -f "$BUILD_DIR/CMakeCache.txt" ] || skip_all "$BUILD_DIR is not a build directory of lockfs"
CACHE=${LOCKFS_CACHE:-${HOME:-/root}/.cache/lockfs}
[ -f "$CACHE/amplify-dynamodb-simulator-2.9.30/emulator/DynamoDBLocal.jar" ] ||
	skip_all "DynamoDB Local is not downloaded in $CACHE (contrib/dynamodb-local fetch)"

export LOCKFS_QUICKSTART_STATE=$WORK/qs-state LOCKFS_BUILD_DIR=$BUILD_DIR
unset LOCKFS_QUICKSTART_PORT
STATE=$LOCKFS_QUICKSTART_STATE

plan 47

# qs ARGS...: the quickstart, at most 240 s; OUT (stdout and stderr), RC.
qs() {
	OUT=$(timeout -k 10 240 "$QS" "$@" 2>&1 </dev/null)
	RC=$?
}
ddb_pid() { cat "$STATE/pid" 2>/dev/null; }
# Whatever the quickstart started is stopped at the end, even on failure.
_qs_cleanup() {
	local pid
	pid=$(ddb_pid)
	timeout -k 5 90 "$QS" --stop >/dev/null 2>&1
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
}
trap 'rc=$?; _qs_cleanup; (exit $rc); _cleanup' EXIT

A=$WORK/qa B=$WORK/qb
track_mount "$A"
track_mount "$B"
live() { _mounted "$1" && stat -f "$1" >/dev/null 2>&1; }
endpoint_of() { sed -n 's/^endpoint: //p' "$1/.lockfs/status" 2>/dev/null; }
daemon_on() {  # MOUNTPOINT: pid of the lockfs serving it
	local p
	for p in $(pgrep -x lockfs); do
		[ "$(tr '\0' '\n' <"/proc/$p/cmdline" | tail -n 1)" = "$1" ] &&
			{ echo "$p"; return 0; }
	done
	return 1
}
gone() { ! kill -0 "$1" 2>/dev/null; }
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ---- --help ------------------------------------------------------------------
qs --help
is "$RC" 0 "--help: exit 0"
like "$OUT" "^usage: contrib/quickstart \\[MOUNTPOINT\\]" "--help: starts with the usage"
like "$OUT" "--status" "... tells of --status"
unlike "$OUT" "set -|pipefail|^#" "... and holds no shell code"

# ---- two mounts ------------------------------------------------------------------
t0=$(now_ms)
qs "$A"
is "$RC" 0 "quickstart A: exit 0 ($(($(now_ms) - t0)) ms)" || diag "$OUT"
like "$OUT" "quickstart: \\[2/5\\] building lockfs in $BUILD_DIR \\(1-2 min on a fresh machine" \
	"... shows its progress, the build among it"
like "$OUT" "table lockfs created" "... the table is created"
ok "$(live "$A" && echo 0)" "... A is mounted"
E1=$(endpoint_of "$A")
like "$E1" '^http://127\.0\.0\.1:[0-9]+$' "... on DynamoDB Local on loopback ($E1)"
P1=${E1##*:}
track_pid "$(ddb_pid)"

t0=$(now_ms)
qs "$B"
is "$RC" 0 "quickstart B: exit 0 ($(($(now_ms) - t0)) ms)" || diag "$OUT"
like "$OUT" "table lockfs exists" "... the table exists: says so"
unlike "$OUT" "created" "... and not that it was created"
ok "$(live "$B" && echo 0)" "... B is mounted"
is "$(endpoint_of "$B")" "$E1" "... on the same DynamoDB Local"
ok "$(live "$A" && echo 0)" "... and A is still mounted"
ok "$( (set -C; : >"$A/k") 2>/dev/null && echo 0)" "a lock taken on A (held by this test)"
is "$(field "$(cat "$B/k" 2>&1)" state)" held "... shows held on B: both reach DynamoDB Local"

qs --status
is "$RC" 0 "--status: exit 0 when all is up"
like "$OUT" "DynamoDB Local up at $E1 \\(pid [0-9]+\\)" "... DynamoDB Local and its endpoint"
like "$OUT" "$A: mounted \\(endpoint $E1, 1 locks held\\)" "... A mounted, with its lock"
like "$OUT" "$B: mounted \\(endpoint $E1, 0 locks held\\)" "... B mounted"

# ---- --stop covers both --------------------------------------------------------
pid=$(ddb_pid)
qs --stop
is "$RC" 0 "--stop: exit 0" || diag "$OUT"
like "$OUT" "unmounted $A \\(locks released\\)" "... unmounts A"
like "$OUT" "unmounted $B \\(locks released\\)" "... unmounts B"
ok "$(! _mounted "$A" && ! _mounted "$B" && echo 0)" "... neither is mounted afterwards"
wait_for 10 gone "${pid:-0}"
ok $? "... DynamoDB Local (pid $pid) is stopped"
ok "$(! answers "$P1" && echo 0)" "... and its port answers no more"
qs --status
ok "$([ "$RC" -ne 0 ] && echo 0)" "--status after --stop: non-zero (status $RC)"
like "$OUT" "DynamoDB Local not running" "... DynamoDB Local not running"
like "$OUT" "no mounts made" "... no mounts"

# ---- a restart: the same endpoint, the lock was released -----------------------
qs "$A"
is "$RC" 0 "quickstart A again: exit 0" || diag "$OUT"
is "$(endpoint_of "$A")" "$E1" "... the same endpoint as before the restart (port kept)"
track_pid "$(ddb_pid)"
ok "$( (set -C; : >"$A/k") 2>/dev/null && echo 0)" \
	"... the lock taken before --stop was released (taken again at once)"
rm -f "$A/k"

# ---- a dead mount --------------------------------------------------------------
dpid=$(daemon_on "$A")
[ -n "$dpid" ] && kill -9 "$dpid"
wait_for 10 gone "${dpid:-0}"
qs --status
ok "$([ "$RC" -ne 0 ] && echo 0)" "--status with A's daemon killed: non-zero (status $RC)"
like "$OUT" "$A: dead \\(its daemon is gone\\): contrib/quickstart $A mounts it again" \
	"... A is dead, and how to mount it again"
qs "$A"
is "$RC" 0 "quickstart on the dead A: exit 0" || diag "$OUT"
like "$OUT" "$A: the lockfs mount there is dead" "... says A was dead"
ok "$(live "$A" && echo 0)" "... and A is mounted afresh"
is "$(endpoint_of "$A")" "$E1" "... on the same endpoint"

# ---- a lockfs mount it did not make ---------------------------------------------
new_table || { echo "Bail out! cannot create a table"; exit 1; }
mount_start foreign "owner=foreign-$$" || { echo "Bail out! cannot mount"; exit 1; }
F=$(mnt foreign)
qs "$F"
is "$RC" 1 "quickstart on a lockfs mount it did not make: exit 1"
like "$OUT" "$F: a lockfs mount the quickstart did not make is there" "... says so"
is "$(endpoint_of "$F")" "$ENDPOINT" "... and leaves that mount as it was"
mount_stop foreign

# ---- --stop with a dead mount ----------------------------------------------------
dpid=$(daemon_on "$A")
[ -n "$dpid" ] && kill -9 "$dpid"
wait_for 10 gone "${dpid:-0}"
pid=$(ddb_pid)
qs --stop
is "$RC" 0 "--stop with A dead: exit 0" || diag "$OUT"
like "$OUT" "removed the dead mount on $A" "... removes the dead mount"
ok "$(! _mounted "$A" && echo 0)" "... A is not mounted afterwards"
wait_for 10 gone "${pid:-0}"
ok $? "... and DynamoDB Local is stopped"
