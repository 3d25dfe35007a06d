#!/usr/bin/env bash
# session_lapse.t: a session whose heartbeats failed for a safe period is
# abandoned, never beaten again, so every row it kept lapses after a lease,
# even one its mount cannot delete. Mount a (session leases, behind the
# fault proxy) holds k; the proxy stalls past the safe period (a's lock is
# lost) and then lets everything through except a's deletes. Beaten again,
# the old session kept k held for as long as a ran: mount b waited for
# ever. Now b gets k about a lease after a's heartbeats stopped, and a
# holds new keys in a new session.
# Then an acquire whose write is in flight while the session is abandoned:
# its PutItem lands but its answers (and those of its retries) are held
# while every session heartbeat fails past the safe period. The grant names a session no one keeps: the
# open fails with EIO (it returned 0, for a lock already lost) and the row
# goes, so b takes the key at once (not after the lease that fences a's
# session). The same for mount c (per-lock leases, behind the proxy): an
# acquire whose write is confirmed only after its safe period (its answers
# held) fails EIO, and b takes the key at once.
. "$(dirname "$0")/lib.sh"

plan 17

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
OPT=lease=3,heartbeat=0.5,safe_period=2,entry_timeout=0,attr_timeout=0,hold=unlink
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=lapse-a,session,$OPT" &&
	mount_start b "owner=lapse-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)

expect 0 open "$A/k" O_CREAT,O_EXCL,O_RDONLY 0644
proxy_ctl http500 1000000 DeleteItem >/dev/null
ok $? "(the proxy fails every delete of mount a from now on)"
proxy_ctl stall on >/dev/null
sleep 3
proxy_ctl stall off >/dev/null
t0=$(now_ms)
timeout 30 flock -w 20 "$B/k" true
ok $? "mount b gets the key a's lost session kept"
took=$(($(now_ms) - t0))
ok $((took > 10000)) "(within a few leases of a's heartbeats getting through: $took ms)"
wait_for 10 grep -q "abandoned" "$WORK/daemon-a.log"
ok $? "a's log says the session was abandoned"
# A heartbeat that failed after the safe period ended said "its locks are
# safe for -253 ms more"; and the abandon line "(0 locks lost now)" right
# after the lock's own "lost key=k".
log=$(cat "$WORK/daemon-a.log")
unlike "$log" "safe for -[0-9]" "a's log never says a lock is safe for a negative time"
like "$log" "(safe period ended [0-9]+ ms ago|lost with it)" \
	"... it says the safe period ended, or which locks were lost with the session"
wait_for 10 "$T" open "$A/fresh" O_CREAT,O_EXCL,O_RDONLY 0644
ok $? "a acquires a new key in a new session"
proxy_ctl clear >/dev/null
proxy_ctl hang-reply 100 PutItem >/dev/null &&
	proxy_ctl http500 1000000 UpdateItem >/dev/null
ok $? "(the proxy holds a's PutItem answers and fails every UpdateItem)"
timeout --foreground 20 "$T" open "$A/inflight" O_CREAT,O_EXCL,O_RDONLY 0644 \
	>"$WORK/inflight.out" 2>&1 &
pid=$!
abandoned_twice() { [ "$(grep -c abandoned "$WORK/daemon-a.log")" -ge 2 ]; }
wait_for 15 abandoned_twice
ok $? "a's second session is abandoned while the acquire waits for its answer"
sleep 0.5
proxy_ctl clear >/dev/null
wait $pid
is "$(head -n 1 "$WORK/inflight.out")" EIO \
	"an acquire whose session was abandoned while its write was in flight fails EIO"
t0=$(now_ms)
wait_for 10 timeout 5 flock -n "$B/inflight" true
ok $? "... and b takes the key"
took=$(($(now_ms) - t0))
ok $((took >= 2500)) "... at once, its row removed, not after a's session stood still for a lease ($took ms)"
ENDPOINT=$PROXY_ENDPOINT mount_start c "owner=lapse-c,$OPT"
ok $? "(mount c: per-lock leases, behind the proxy)"
C=$(mnt c)
puts=$(proxy_count PutItem)
proxy_ctl hang-reply 100 PutItem >/dev/null
timeout --foreground 20 "$T" open "$C/slow" O_CREAT,O_EXCL,O_RDONLY 0644 \
	>"$WORK/slow.out" 2>&1 &
pid=$!
# Its answer held for 2.5 s from when the write reached the proxy (c's
# safe period is 2 s): counted from the open's start, a daemon slow to
# send it (under TSan) had its answer back within the safe period.
put_seen() { [ "$(proxy_count PutItem)" -gt "$puts" ]; }
wait_for 10 put_seen
sleep 2.5
proxy_ctl clear >/dev/null
wait $pid
is "$(head -n 1 "$WORK/slow.out")" EIO \
	"c's acquire confirmed only after its safe period fails EIO"
t0=$(now_ms)
wait_for 10 "$T" open "$B/slow" O_CREAT,O_EXCL,O_RDONLY 0644
ok $? "... and b takes the key"
took=$(($(now_ms) - t0))
ok $((took >= 2500)) "... at once, c's row removed, not after a lease ($took ms)"
