#!/usr/bin/env bash
# flock.t: the flock(2)/fcntl row of the Operations table across two mounts
# (entry_timeout=0,attr_timeout=0): while A holds a key, LOCK_EX|LOCK_NB and
# F_SETLK on B fail with EWOULDBLOCK/EAGAIN (flock(1) -n fails too);
# LOCK_EX on B blocks until A releases, then B holds the key until LOCK_UN
# or the last close; a blocked LOCK_EX is interrupted by a signal (EINTR);
# F_SETLKW behaves like LOCK_EX.
. "$(dirname "$0")/lib.sh"

plan 22

new_table || { echo "Bail out! cannot create a table"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0
mount_start a "owner=flock-a,$OPT" &&
	mount_start b "owner=flock-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
held_by() { field "$("$T" read "$1")" owner; }

# ---- non-blocking forms fail while another mount holds the key -------------
expect 0 open "$A/f" O_CREAT,O_EXCL,O_RDONLY 0644
expect EAGAIN flock "$B/f" O_RDONLY ex,nb
expect EAGAIN setlk "$B/f" O_RDWR wr
timeout 10 flock -n -E 42 "$B/f" true
is "$?" 42 "flock(1) -n on B: the lock is busy (exit 42)"
is "$(held_by "$A/f")" flock-a "A still holds f"

# ---- LOCK_EX blocks until A releases, then B holds it ------------------------
hold_start hb "$B/f" O_RDONLY
is "$HOUT" ready "B opens A's lock read-only"
hold_send hb "flock ex"
sleep 1
if hold_wait hb 0; then
	flunk "LOCK_EX on B blocks while A holds f (it returned $HOUT at once)"
else
	pass "LOCK_EX on B blocks while A holds f"
fi
expect 0 unlink "$A/f"
hold_wait hb 5
is "$HOUT" 0 "LOCK_EX on B returns 0 once A released f"
is "$(held_by "$B/f")" flock-b "B holds f now"
expect EEXIST open "$A/f" O_CREAT,O_EXCL,O_RDONLY 0644
expect EAGAIN flock "$A/f" O_RDONLY ex,nb
hold_cmd hb "flock un"
is "$HOUT" 0 "LOCK_UN on B"
wait_for 3 bash -c '[ "$("$0" open "$1" O_CREAT,O_EXCL,O_RDONLY 0644)" = 0 ]' "$T" "$A/f"
ok $? "after LOCK_UN A acquires f again"

# ---- a blocked LOCK_EX is interrupted by a signal -------------------------------
hold_send hb "flock ex"
sleep 0.5
kill -USR2 "$(hold_pid hb)"
hold_wait hb 5
is "$HOUT" EINTR "a signal interrupts a blocked LOCK_EX (EINTR)"
is "$(held_by "$B/f")" flock-a "... and A keeps f"

# ---- F_SETLKW waits like LOCK_EX; the last close releases ------------------------
hold_stop hb
hold_start hw "$B/f" O_RDWR
hold_send hw "setlk wr,wait"
sleep 0.5
expect 0 unlink "$A/f"
hold_wait hw 5
is "$HOUT" 0 "F_SETLKW on B returns 0 once A released f"
is "$(held_by "$B/f")" flock-b "B holds f through fcntl"
hold_stop hw
wait_for 3 bash -c '[ "$("$0" open "$1" O_CREAT,O_EXCL,O_RDONLY 0644)" = 0 ]' "$T" "$A/f"
ok $? "the last close on B released f: A acquires it"

mount_stop a
mount_stop b
