#!/usr/bin/env bash
# trouble.t: what README's "When things go wrong" says of a full log disk,
# where it is not shown by another suite. The log file lives on a tmpfs of
# 64 KiB that is full: the mount comes up and locks work while no line can
# be written, .lockfs/metrics counts the lines lost, and once there is room
# the next line written is preceded by one that says how many were lost
# and why.
. "$(dirname "$0")/lib.sh"

plan 8

new_table || { echo "Bail out! cannot create a table"; exit 1; }
LOGFS=$WORK/logfs
mkdir -p "$LOGFS"
mount -t tmpfs -o size=64k,mode=0755 lockfs-test-logs "$LOGFS" ||
	{ echo "Bail out! cannot mount a tmpfs"; exit 1; }
trap 'rc_=$?; umount -l "$LOGFS" 2>/dev/null; (exit $rc_); _cleanup' EXIT
LOG=$LOGFS/lockfs.log
: >"$LOG"
head -c 1048576 /dev/zero >"$LOGFS/fill" 2>/dev/null
avail=$(df --output=avail -k "$LOGFS" | tail -1 | tr -d ' ')
is "$avail" 0 "the log's filesystem is full"

mount_start a "owner=trouble-a,debug,log_file=$LOG" ||
	{ echo "Bail out! cannot mount with a full log disk"; exit 1; }
A=$(mnt a)
lost() { "$T" read "$A/.lockfs/metrics" | sed -n 's/^lockfs_log_lines_lost //p'; }
try_acquire "$A/full1"
ok $? "locks are taken while no log line can be written"
rm "$A/full1"
ok $? "... and released"
is "$(stat -c %s "$LOG")" 0 "nothing reached the log file"
like "$(lost)" '^[1-9][0-9]*$' "metrics count the lines lost ($(lost))"

rm -f "$LOGFS/fill"
try_acquire "$A/room"
rm -f "$A/room"
wait_for 5 grep -q 'could not be written' "$LOG"
like "$(head -n 1 "$LOG")" \
	'warning log: [1-9][0-9]* log line\(s\) could not be written: No space left on device \(ENOSPC\)$' \
	"with room again, the first line says how many were lost, and why"
like "$(cat "$LOG")" 'PutItem key=room' "then the log goes on"
is "$(lost)" 0 "the count of lines lost starts again from 0"
