#!/usr/bin/env bash
# fdshare.t: one open file used by several threads at once (lockfs-t
# hold's "threads" command: N threads make one blocking call on the same
# fd). Mount A talks to DynamoDB Local directly; mount B through the fault
# proxy with 2 ms added each way. While A holds a key, threads on B wait:
#   1  two LOCK_EX on one fd: both granted when A lets go (flock(2) grants
#      every call of one open file), the key held once: one LOCK_UN frees it
#   2  two F_SETLKW write locks of one process: the same (one lock owner)
#   3  two LOCK_SH on one fd: both granted, one LOCK_UN frees the key
#   4  a LOCK_UN from another thread while one waits: 0 at once, and the
#      waiter still waits, then is granted
#   5  the fd closed by another thread while one waits: the waiter is
#      granted when A lets go, and the lock goes with that last reference
#      (A takes the key again, no lock left behind)
#   6  five threads LOCK_EX on one fd, A's holder cycling the key meanwhile
#      (two takes and releases): every thread is granted, the key is free
#      after one LOCK_UN
#   7  LOCK_EX and LOCK_SH on one fd at once, and F_SETLKW write and read
#      locks of one process: both return when A lets go (the second
#      converts the lock, as flock(2) does), and one unlock frees the key
# Against 75085fd 11 checks fail (sections 1, 2, 3, 6 and 7): the second
# waiter of one lock owner waited for the first's unlock, and a second
# reader of one open file became a second holder, so that its LOCK_UN left
# the key held.
. "$(dirname "$0")/lib.sh"

plan 51

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start lockfs-faultproxy"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0
mount_start a "owner=share-a,$OPT" &&
	ENDPOINT=$PROXY_ENDPOINT mount_start b "owner=share-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
proxy_ctl latency 2 >/dev/null
is "$?" 0 "the proxy adds 2 ms each way to B's requests"

held_by() { field "$("$T" read "$1")" owner; }
# free_on_a KEY: A can take KEY with flock -n (then lets it go), within 5 s.
free_on_a() {
	wait_for 5 bash -c '[ "$("$0" flock "$1" O_CREAT,O_RDONLY ex,nb)" = 0 ]' \
		"$T" "$A/$1"
}

# ---- 1: two LOCK_EX on one fd --------------------------------------------
expect 0 open "$A/k1" O_CREAT,O_EXCL,O_RDONLY 0644
hold_start t1 "$B/k1" O_RDONLY
hold_cmd t1 "threads 2 flock ex"
is "$HOUT" "started 2" "1: two threads LOCK_EX on one fd of B"
hold_cmd t1 "joined 500"
is "$HOUT" "- -" "1: both wait while A holds k1"
expect 0 unlink "$A/k1"
hold_cmd t1 "joined 5000"
is "$HOUT" "0 0" "1: both granted once A released k1"
is "$(held_by "$A/k1")" share-b "1: B holds k1"
hold_cmd t1 "flock un"
is "$HOUT" 0 "1: one LOCK_UN"
free_on_a k1
ok $? "1: ... frees k1 (A takes it with flock -n)"
hold_stop t1

# ---- 2: two F_SETLKW of one process ----------------------------------------
expect 0 open "$A/k2" O_CREAT,O_EXCL,O_RDONLY 0644
hold_start t2 "$B/k2" O_RDWR
hold_cmd t2 "threads 2 setlk wr,wait"
hold_cmd t2 "joined 500"
is "$HOUT" "- -" "2: two F_SETLKW of one process wait while A holds k2"
expect 0 unlink "$A/k2"
hold_cmd t2 "joined 5000"
is "$HOUT" "0 0" "2: both granted once A released k2"
hold_cmd t2 "setlk un"
is "$HOUT" 0 "2: one F_UNLCK"
free_on_a k2
ok $? "2: ... frees k2"
hold_stop t2

# ---- 3: two LOCK_SH on one fd ----------------------------------------------
expect 0 open "$A/k3" O_CREAT,O_EXCL,O_RDONLY 0644
hold_start t3 "$B/k3" O_RDONLY
hold_cmd t3 "threads 2 flock sh"
hold_cmd t3 "joined 500"
is "$HOUT" "- -" "3: two LOCK_SH on one fd wait while A holds k3"
expect 0 unlink "$A/k3"
hold_cmd t3 "joined 5000"
is "$HOUT" "0 0" "3: both granted once A released k3"
txt=$("$T" read "$A/k3")
is "$(field "$txt" mode)/$(field "$txt" readers)" shared/1 "3: k3 is held shared, by one reader (B's one entry)"
hold_cmd t3 "flock un"
is "$HOUT" 0 "3: one LOCK_UN"
free_on_a k3
ok $? "3: ... frees k3"
hold_stop t3

# ---- 4: LOCK_UN from another thread while one waits ------------------------
expect 0 open "$A/k4" O_CREAT,O_EXCL,O_RDONLY 0644
hold_start t4 "$B/k4" O_RDONLY
hold_cmd t4 "threads 1 flock ex"
hold_cmd t4 "flock un"
is "$HOUT" 0 "4: LOCK_UN from another thread returns 0 at once"
hold_cmd t4 "joined 500"
is "$HOUT" "-" "4: ... and the waiter still waits"
expect 0 unlink "$A/k4"
hold_cmd t4 "joined 5000"
is "$HOUT" 0 "4: the waiter is granted once A released k4"
is "$(held_by "$A/k4")" share-b "4: B holds k4"
hold_stop t4
free_on_a k4
ok $? "4: the holder's exit frees k4"

# ---- 5: the fd closed by another thread while one waits --------------------
expect 0 open "$A/k5" O_CREAT,O_EXCL,O_RDONLY 0644
hold_start t5 "$B/k5" O_RDONLY
hold_cmd t5 "threads 1 flock ex"
hold_cmd t5 "close"
is "$HOUT" 0 "5: another thread closes the fd while one waits"
hold_cmd t5 "joined 500"
is "$HOUT" "-" "5: ... and the waiter still waits"
expect 0 unlink "$A/k5"
hold_cmd t5 "joined 5000"
is "$HOUT" 0 "5: the waiter is granted once A released k5"
free_on_a k5
ok $? "5: the lock goes with the last reference to the closed file"
hold_stop t5

# ---- 6: five threads on one fd while A cycles the key ----------------------
expect 0 open "$A/k6" O_CREAT,O_EXCL,O_RDONLY 0644
hold_start t6 "$B/k6" O_RDONLY
hold_cmd t6 "threads 5 flock ex"
hold_cmd t6 "joined 300"
is "$HOUT" "- - - - -" "6: five threads LOCK_EX on one fd wait while A holds k6"
# A lets go and takes k6 back at once, twice: B's waiters may or may not
# get their turn in between; either way they get it when A stops.
for i in 1 2; do
	"$T" unlink "$A/k6" >/dev/null
	"$T" open "$A/k6" O_CREAT,O_EXCL,O_RDONLY 0644 >/dev/null
done
"$T" unlink "$A/k6" >/dev/null
hold_cmd t6 "joined 8000"
is "$HOUT" "0 0 0 0 0" "6: every thread granted"
is "$(held_by "$A/k6")" share-b "6: B holds k6"
hold_cmd t6 "flock un"
free_on_a k6
ok $? "6: one LOCK_UN frees k6"
hold_stop t6

# ---- 7: both modes on one fd -----------------------------------------------
for m in "flock ex/sh:flock un" "setlk wr,wait/rd,wait:setlk un"; do
	call=${m%%:*} un=${m#*:}
	expect 0 open "$A/k7" O_CREAT,O_EXCL,O_RDONLY 0644
	hold_start t7 "$B/k7" O_RDWR
	hold_cmd t7 "threads 2 $call"
	hold_cmd t7 "joined 300"
	is "$HOUT" "- -" "7: ${call/\// and } on one fd wait while A holds k7"
	expect 0 unlink "$A/k7"
	hold_cmd t7 "joined 5000"
	is "$HOUT" "0 0" "7: both return once A released k7"
	hold_cmd t7 "$un"
	free_on_a k7
	ok $? "7: one \"$un\" frees k7"
	hold_stop t7
done

# Nothing of B's is left held.
is "$(field "$("$T" read "$B/.lockfs/status")" locks_held)" 0 "B holds no lock at the end"
