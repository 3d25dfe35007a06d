#!/usr/bin/env bash
# session_stray.t: a row naming a mount's own live session for a key no
# lock of that mount holds is removed by that mount (doc/session-leases.md,
# "Rows of our own session that nobody holds"). Other owners respect it
# while the session is beaten, so it used to keep the key held by nobody
# for as long as the mount ran. Mount a (session leases, behind the fault
# proxy, whose DeleteItem requests fail at will) and mount b (session
# leases, straight to DynamoDB Local).
#   1. a's release of k is not confirmed and its deletes fail for longer
#      than 20 cleanups: the cleanup went on, so b takes k soon after the
#      deletes get through again (it gave up after 20 and b waited for
#      ever).
#   2. The same for k2, then callers on both mounts at once while a's
#      deletes still fail: a's callers take k2 over one after another
#      (each finds the row of a lock of its own mount that nobody holds),
#      b's get it once the deletes get through; never two at once.
#   3. a's acquire of k3 gets no answer, nor do the writes that resolve
#      it (the proxy holds every PutItem of a's, unforwarded): a answers
#      EIO, and the cleanup finds no row. Then the held writes land after
#      all, naming a's live session while no lock of a holds k3. Two
#      waiters on b (flock -w) get k3 one after the other once a, which
#      now looks at the key again for a while after such an acquire,
#      removes that row (before, it stopped at "no row": they waited for
#      as long as a ran).
#   4. a's acquire of k4: its first write is held (unforwarded), the
#      request layer's retry of it gets through, so a holds k4, and
#      releases it.
#      Only then does the held write land. Two waiters on b get k4 once
#      a, which looks at the key for a while after releasing a lock taken
#      so, removes that row (before, nothing on a knew of that write).
#   5. The same for k5, taken by an open(O_CREAT) and flock(2) LOCK_EX,
#      and downgraded to LOCK_SH before its release: the held write
#      cannot land on the shared row, but lands after the release. a
#      removes that row too (before, a shared lock's release watched for
#      nothing).
#   6. The same for k6, held by a. Root on b may not break it (allow_break
#      refuses a row a session keeps: its holder would never be told).
#      a's session is cut off (the proxy stalls) until a's lock is lost
#      and b takes k6 over; a lets go of its lost lock; b releases k6. Only then does the held write land: b's waiters
#      get k6 once a removes the row (before, a lost lock let go of
#      watched for nothing).
. "$(dirname "$0")/lib.sh"

plan 43

bail() { echo "Bail out! $*"; exit 1; }
new_table || bail "cannot create a table"
proxy_start || bail "cannot start the proxy"
OPT=lease=3,heartbeat=0.5,safe_period=2,entry_timeout=0,attr_timeout=0,hold=unlink
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=stray-a,session,$OPT" &&
	mount_start b "owner=stray-b,session,allow_break,$OPT" || bail "cannot mount"
A=$(mnt a) B=$(mnt b)

# ---- 1. a cleanup that outlasts 20 failed deletes -------------------------

expect 0 open "$A/k" O_CREAT,O_EXCL,O_RDONLY 0644
proxy_ctl http500 1000000 DeleteItem >/dev/null
ok $? "(the proxy fails every delete of mount a from now on)"
timeout 30 rm "$A/k" 2>/dev/null
ok $((! $?)) "a's release of k is not confirmed"
sleep 24 # more than 20 cleanups (each up to 0.5 s, then 0.5 s apart)
try_acquire "$B/k"
ok $((! $?)) "(b cannot take k while a's row is there)"
proxy_ctl clear >/dev/null
t0=$(now_ms)
wait_for 15 try_acquire "$B/k"
ok $? "b takes k once a's deletes get through"
diag "b took k $(($(now_ms) - t0)) ms after the proxy cleared"
timeout 30 rm "$B/k"
ok $? "(b releases k)"

# ---- 2. callers on both mounts, a's deletes failing -----------------------

# caller MNT TAG: flock(1) on MNT/k2 for a short critical section; an
# overlap (the mkdir fails) is recorded in $WORK/errs, each entry in
# $WORK/done as TAG.
caller() {
	timeout 90 flock -w 80 "$1/k2" sh -c '
		mkdir "$0/in" 2>/dev/null || echo overlap >>"$0/errs"
		sleep 0.2
		rmdir "$0/in"
		echo "$1" >>"$0/done"' "$WORK" "$2"
}
count() {
	local n=0
	[ -f "$WORK/done" ] && n=$(grep -c "^$1\$" "$WORK/done")
	echo "$n"
}

expect 0 open "$A/k2" O_CREAT,O_EXCL,O_RDONLY 0644
proxy_ctl http500 1000000 DeleteItem >/dev/null
timeout 30 rm "$A/k2" 2>/dev/null
ok $((! $?)) "a's release of k2 is not confirmed"
pids=()
for i in 1 2; do
	caller "$A" a &
	pids+=($!)
	track_pid $!
	caller "$B" b &
	pids+=($!)
	track_pid $!
done
a_done() { [ "$(count a)" = 2 ]; }
wait_for 40 a_done
ok $? "a's two callers take k2 over, one after the other"
is "$(count b)" 0 "(b's callers still wait: a's rows are not deleted yet)"
proxy_ctl clear >/dev/null
failed=0
for p in "${pids[@]}"; do
	wait "$p" || failed=$((failed + 1))
done
is "$failed" 0 "every caller got the key"
is "$(count b)" 2 "b's two callers took it once a's deletes got through"
[ ! -s "$WORK/errs" ]
ok $? "never two holders at once"

# ---- 3. an acquire's writes that land after it gave up ---------------------

proxy_ctl late-request 1000 PutItem >/dev/null
ok $? "(the proxy holds every PutItem of mount a, unforwarded, from now on)"
t0=$(now_ms)
got=$(timeout 120 "$T" open "$A/k3" O_CREAT,O_EXCL,O_RDONLY 0644)
is "$got" EIO "a's acquire of k3 answers EIO: neither it nor its resolution got an answer ($(($(now_ms) - t0)) ms)"
sleep 1.5 # the cleanup's first look: no row
proxy_ctl clear >/dev/null # the held PutItems land now
seen() { test -e "$B/$1" || grep -q "lost key=$1: removed our stale row" "$WORK/daemon-a.log"; }
wait_for 10 seen k3
ok $? "a's held writes landed after all: b sees k3 held (or a has removed it already)"
: >"$WORK/done"
# two_waiters KEY: two flock(1) waiters on b's KEY; prints how many
# failed and how many got it.
two_waiters() {
	local pids=() p failed=0
	for i in 1 2; do
		timeout 90 flock -w 60 "$B/$1" sh -c 'echo "$1" >>"$0/done"; sleep 0.2' \
			"$WORK" "$1" &
		pids+=($!)
		track_pid $!
	done
	for p in "${pids[@]}"; do
		wait "$p" || failed=$((failed + 1))
	done
	echo "$failed $(count "$1")"
}
is "$(two_waiters k3)" "0 2" "b's two waiters get k3, one after the other"
like "$(grep -c 'lost key=k3: removed our stale row' "$WORK/daemon-a.log")" '^[1-9]' \
	"a removed the row its late writes left"

# ---- 4. a write that lands after the lock it took was released ------------

# held_acquire KEY: the proxy holds a's next PutItem; a's acquire of KEY
# succeeds all the same, by the retry of its write (2 checks).
held_acquire() {
	proxy_ctl late-request 1 PutItem >/dev/null
	ok $? "(the proxy holds a's next PutItem, unforwarded)"
	is "$(timeout 120 "$T" open "$A/$1" O_CREAT,O_EXCL,O_RDONLY 0644)" 0 \
		"a's acquire of $1 succeeds: the retry of its write got an answer"
}
held_acquire k4
timeout 30 rm "$A/k4"
ok $? "a releases k4"
# lands_then_goes KEY: the held PutItem lands now, after a released KEY;
# b sees it held (or a has removed it already), b's two waiters get it,
# and a removed the row (3 checks).
lands_then_goes() {
	proxy_ctl clear >/dev/null
	wait_for 10 seen "$1"
	ok $? "a's held write landed after the release: b sees $1 held (or a has removed it already)"
	is "$(two_waiters "$1")" "0 2" "b's two waiters get $1, one after the other"
	like "$(grep -c "lost key=$1: removed our stale row" "$WORK/daemon-a.log")" '^[1-9]' \
		"a removed the row its late write left"
}
lands_then_goes k4

# ---- 5. the same, after a downgrade to shared --------------------------------

proxy_ctl late-request 1 PutItem >/dev/null
ok $? "(the proxy holds a's next PutItem, unforwarded)"
hold_start f5 "$A/k5" O_CREAT,O_RDONLY 0644
is "$HOUT" ready "a's flock(1)-style open of k5 takes it: the retry of its write got an answer"
hold_cmd f5 "flock ex" 60
is "$HOUT" 0 "a's LOCK_EX of k5"
hold_cmd f5 "flock sh"
is "$HOUT" 0 "a downgrades k5 to LOCK_SH"
hold_cmd f5 "flock un"
is "$HOUT" 0 "a's LOCK_UN releases k5"
hold_stop f5
lands_then_goes k5

# ---- 6. the same, the lock lost before it was let go of -------------------

held_acquire k6
timeout 30 rm "$B/k6" 2>"$WORK/k6-break.err"
rc=$?
ok $((rc == 0)) "root on b may not break a's k6, kept by a's session (allow_break)"
like "$(cat "$WORK/k6-break.err")" "busy" "... EBUSY"
proxy_ctl stall on >/dev/null
k6_lost() { grep -q "key=k6 state=lost" "$A/.lockfs/status"; }
wait_for 15 k6_lost
ok $? "a's session cut off: a's k6 is lost"
wait_for 20 try_acquire "$B/k6"
ok $? "b takes k6 over once a's session stood still for a lease"
proxy_ctl stall off >/dev/null
expect 0 unlink "$A/k6" # let go of (the lost file this group saw); b's lock stays
timeout 30 rm "$B/k6"
ok $? "b releases k6"
lands_then_goes k6
