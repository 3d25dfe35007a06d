#!/usr/bin/env bash
# wait.t: how flock waiters are served. On one mount, waiters are granted
# in the order they started waiting (FIFO), each as soon as the one before
# it lets go; across mounts, a waiter sees the holder's release within one
# poll interval (jittered backoff capped at 1 s here): the latency is
# measured and printed. Waiting never occupies a request thread: with
# max_threads=2 and more waiters than threads, the mount still answers.
. "$(dirname "$0")/lib.sh"

plan 13

new_table || { echo "Bail out! cannot create a table"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0
mount_start a "owner=wait-a,$OPT,max_threads=2" &&
	mount_start b "owner=wait-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
ORDER=$WORK/order

# ---- FIFO on one mount -------------------------------------------------------
# The holder keeps the lock while four waiters line up one after another
# (more waiters than request threads); each appends its number when granted.
flock "$A/q" sleep 2 &
holder=$!
wait_for 5 test -e "$A/q"
: >"$ORDER"
waiters=()
for i in 1 2 3 4; do
	flock "$A/q" sh -c "echo $i >> '$ORDER'; sleep 0.3" &
	waiters+=($!)
	sleep 0.3  # a definite order of arrival
done
# Four waiters are parked and only two threads serve requests: the mount
# must still answer.
t0=$(now_ms)
ls "$A" >/dev/null
ok $? "the mount answers while more waiters than threads are parked"
ok $((!($(now_ms) - t0 < 2000))) "... at once ($(($(now_ms) - t0)) ms)"
wait "$holder"
for p in "${waiters[@]}"; do wait "$p"; done
is "$(tr '\n' ' ' <"$ORDER")" "1 2 3 4 " "waiters on one mount are granted in FIFO order"
wait_for 5 sh -c "! test -e '$A/q'"
ok $? "nothing is left once the last waiter is done"

# ---- across mounts: wake-up latency ----------------------------------------------
lat=()
for i in 1 2 3; do
	flock "$A/x" sleep 1.5 &
	h=$!
	wait_for 5 test -e "$B/x"
	flock "$B/x" sh -c "date +%s%3N > '$WORK/got'" &
	w=$!
	wait "$h"
	released=$(now_ms)
	wait "$w"
	got=$(cat "$WORK/got")
	lat+=($((got - released)))
done
diag "release seen across mounts after: ${lat[*]} ms"
for l in "${lat[@]}"; do
	ok $((!(l < 1500))) "a waiter on another mount sees the release within one poll interval ($l ms)"
done

# ---- F_GETLK reports the holder ---------------------------------------------------
hold_start g1 "$A/g" O_RDWR,O_CREAT 0644
hold_cmd g1 "setlk wr"
is "$HOUT" 0 "fcntl F_SETLK write lock on A"
hold_cmd g1 pid
pid1=$(sed -n 's/^pid=\([0-9]*\).*/\1/p' <<<"$HOUT")
hold_start g2 "$A/g" O_RDWR
hold_cmd g2 getlk
is "$HOUT" "locked type=wr pid=$pid1" "F_GETLK on the same host reports the holder's pid"
hold_start g3 "$B/g" O_RDWR
hold_cmd g3 getlk
is "$HOUT" "locked type=wr pid=0" "F_GETLK on another host reports the lock, pid 0"
hold_cmd g1 "setlk un"
hold_cmd g3 getlk
is "$HOUT" "unlocked" "F_GETLK after F_UNLCK: unlocked"
hold_stop g1
hold_stop g2
hold_stop g3

# ---- an interrupted waiter leaves the queue ---------------------------------------
flock "$A/i" sleep 2 &
h=$!
wait_for 5 test -e "$A/i"
timeout --foreground -s INT 0.5 flock "$A/i" true
is "$?" 124 "a waiter interrupted by a signal gives up"
flock "$A/i" sh -c "grep -q 'owner: wait-a' '$A/i'"
is "$?" 0 "the next waiter still gets the lock after the holder"
wait "$h"
