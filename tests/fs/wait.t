#!/usr/bin/env bash
# wait.t: how flock waiters are served. On one mount, waiters are granted
# in the order they started waiting (FIFO), each as soon as the one before
# it lets go; across mounts, a waiter sees the holder's release within one
# poll interval (jittered backoff capped at wait_poll, 0.25 s by default):
# the latency is measured and printed, and the reads a waiter makes stay
# within what wait_poll allows (at most 2 per wait_poll). Waiting never occupies a request thread: with
# max_threads=2 and more waiters than threads, the mount still answers. A
# waiter's poll that hangs (through the fault proxy) holds up no waiter of
# another key. Many keys waited on at once at a 50 ms round trip are each
# still polled several times a second: their due polls share BatchGetItem
# requests instead of queueing for one request each.
. "$(dirname "$0")/lib.sh"

plan 47

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

# ---- wait_poll: handoff latency against reads ---------------------------------------
mount_start c "owner=wait-c,$OPT,wait_poll=0.1" &&
	mount_start d "owner=wait-d,$OPT,wait_poll=1" ||
	{ echo "Bail out! cannot mount c and d"; exit 1; }
C=$(mnt c) D=$(mnt d)
gets() { "$T" read "$1/.lockfs/metrics" | sed -n 's/^lockfs_dynamodb_requests_total{operation="GetItem"} //p'; }
# Reads a waiter on mount $1 makes while A holds key $2 for 3 s, then
# the time from A's release to the waiter's grant.
waited() {
	local m=$1 k=$2 h w before after released got
	flock "$A/$k" sleep 3 &
	h=$!
	wait_for 5 test -e "$m/$k"
	before=$(gets "$m")
	flock "$m/$k" sh -c "date +%s%3N > '$WORK/got-$k'" &
	w=$!
	wait "$h"
	released=$(now_ms)
	wait "$w"
	after=$(gets "$m")
	got=$(cat "$WORK/got-$k")
	echo "$((after - before)) $((got - released))"
}
read -r reads_c lat_c < <(waited "$C" wp1)
read -r reads_d lat_d < <(waited "$D" wp2)
diag "waiting 3 s: wait_poll=0.1 made $reads_c reads, release seen after $lat_c ms; wait_poll=1: $reads_d reads, $lat_d ms"
ok $((!(reads_c >= 10 && reads_c <= 66))) "wait_poll=0.1: 10 to 66 reads in 3 s of waiting ($reads_c)"
ok $((!(reads_d >= 2 && reads_d <= 14))) "wait_poll=1: 2 to 14 reads in 3 s ($reads_d: the backoff from 50 ms, then at most 2 a second)"
ok $((!(reads_c > 2 * reads_d))) "the shorter wait_poll reads more often"
ok $((!(lat_c < 700))) "wait_poll=0.1: the release is seen within 0.7 s ($lat_c ms)"
out=$(timeout 10 "$LOCKFS_BIN" -f -o wait_poll=0.001 "$WORK/nowhere" 2>&1 </dev/null)
like "$out" 'wait_poll=0.001: want seconds from 0.025' "wait_poll below 25 ms is refused with its range"

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

# ---- a hanging poll of one key holds up no other key's waiters ---------------------
# Mount e, behind the fault proxy, waits for three keys that B holds. The
# proxy then keeps the reply of the next GetItem (one waiter's poll) until
# it is cleared; B lets go of all three. The other two waiters get their
# keys within a poll interval or so, not when the hung poll times out (with
# one wait thread, every waiter of the mount waited for it: seconds).
proxy_start || { echo "Bail out! cannot start lockfs-faultproxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start e "owner=wait-e,$OPT,wait_poll=0.1" ||
	{ echo "Bail out! cannot mount e"; exit 1; }
E=$(mnt e)
holders=() hwaiters=()
for k in h1 h2 h3; do
	timeout 30 flock "$B/$k" sh -c "while [ ! -e '$WORK/go' ]; do sleep 0.02; done" &
	holders+=($!)
done
wait_for 5 sh -c "test -e '$B/h1' && test -e '$B/h2' && test -e '$B/h3'"
for k in h1 h2 h3; do
	timeout 30 flock "$E/$k" sh -c "date +%s%3N > '$WORK/got-$k'" &
	hwaiters+=($!)
done
sleep 0.5 # all three parked, polling
before=$(proxy_injected)
proxy_ctl hang-reply 1 GetItem >/dev/null
hung() { [ "$(proxy_injected)" -gt "$before" ]; }
wait_for 5 hung
ok $? "the proxy holds the reply of one waiter's poll"
touch "$WORK/go"
released=$(now_ms)
for p in "${holders[@]}"; do wait "$p"; done
granted() { ls "$WORK" | grep -c '^got-h'; }
two_granted() { [ "$(granted)" -ge 2 ]; }
wait_for 5 two_granted
got=()
for k in h1 h2 h3; do
	[ -s "$WORK/got-$k" ] && got+=($(($(cat "$WORK/got-$k") - released)))
done
diag "with one poll hung, the other keys' waiters got them after: ${got[*]} ms"
ok $((!(${#got[@]} == 2 && got[0] < 1500 && got[1] < 1500))) \
	"the other two keys' waiters get them within 1.5 s (${got[*]} ms)"
proxy_ctl clear >/dev/null
for p in "${hwaiters[@]}"; do wait "$p"; done
ok $((!($(granted) == 3))) "once the reply comes, the third gets its key too"

# ---- many keys waited on at once: polls share requests ----------------------------
# B holds 40 keys; on e (behind the proxy, now adding a 50 ms round trip,
# wait_poll=0.1) a flock waits for each. One request per poll would let
# e's 4 wait workers poll each key about twice a second (80 requests a
# second); their due polls are read together instead, so each key is
# still polled at its own pace, several times a second, and faults on
# those shared reads lose no waiter.
N=40
proxy_ctl latency 25 >/dev/null
for i in $(seq $N); do try_acquire "$B/m$i" || break; done
is "$(ls "$B" | grep -c '^m[0-9]')" $N "B holds $N keys"
mwaiters=()
for i in $(seq $N); do
	timeout 60 flock "$E/m$i" true &
	mwaiters+=($!)
done
emetric() { "$T" read "$E/.lockfs/metrics" | sed -n "s/^$1 //p" | head -n 1; }
ereqs() {
	local g b
	g=$(emetric 'lockfs_dynamodb_requests_total{operation="GetItem"}')
	b=$(emetric 'lockfs_dynamodb_requests_total{operation="BatchGetItem"}')
	echo $((${g:-0} + ${b:-0}))
}
sleep 1 # all parked, polling
p0=$(emetric lockfs_wait_polls_total) r0=$(ereqs) t0=$(now_ms)
sleep 2
p1=$(emetric lockfs_wait_polls_total) r1=$(ereqs) t1=$(now_ms)
polls=$((p1 - p0)) reqs=$((r1 - r0)) span=$((t1 - t0))
per_key=$((polls * 1000 * 10 / (N * span))) # tenths of a poll a second
diag "$N keys waited for $span ms at a 50 ms round trip: $polls polls in $reqs reads ($((per_key / 10)).$((per_key % 10)) polls a second per key)"
ok $((!(per_key >= 40))) "each key is polled at least 4 times a second ($((per_key / 10)).$((per_key % 10)))"
ok $((!(reqs > 0 && polls >= 3 * reqs))) "the polls share requests: at least 3 rows per read ($polls rows, $reqs reads)"
# Faults on those reads (throttled, HTTP 500, replies lost) only delay
# the polls: every waiter still waits, and gets its key below.
before=$(proxy_injected)
proxy_ctl throttle 20 BatchGetItem >/dev/null &&
	proxy_ctl http500 20 BatchGetItem >/dev/null &&
	proxy_ctl lose-reply 5 BatchGetItem >/dev/null
faulted() { [ "$(proxy_injected)" -ge $((before + 45)) ]; }
wait_for 20 faulted
ok $? "the proxy throttled, failed and lost 45 batched reads ($(($(proxy_injected) - before)))"
proxy_ctl clear >/dev/null
for i in $(seq $N); do rm -f "$B/m$i"; done
released=$(now_ms)
left=0
for p in "${mwaiters[@]}"; do wait "$p" || left=$((left + 1)); done
diag "all $N waiters granted $(($(now_ms) - released)) ms after the releases began"
is "$left" 0 "every waiter gets its key once B lets go"
proxy_ctl latency 0 >/dev/null

# ---- a wait that ends while its take is in flight ends then -------------------------
# B holds t; e waits for it with flock -w 3 (and a second waiter, killed
# by SIGTERM, without a timer). The proxy keeps the answers of e's writes,
# so when B lets go, e's take is in flight when the waits end: each gets
# its answer then (flock -w: 1, timed out), not when the take's operation
# timeout ends (up to 10 s later). The take that landed meanwhile is let
# go of, so the key is free again once the answers come.
#
# b_holds KEY: B holds KEY (a flock) until b_lets_go_with KEY; its pid in
# BH. b_lets_go_with KEY FAULT...: the proxy applies FAULT (such as
# hang-reply 100) to every PutItem from now on, and B lets go of KEY;
# true once a waiter's take of it has reached the proxy (took_put).
b_holds() {
	timeout 60 flock "$B/$1" sh -c "while [ ! -e '$WORK/go-$1' ]; do sleep 0.02; done" &
	BH=$!
	wait_for 5 test -e "$B/$1"
}
took_put() { [ "$(proxy_count PutItem)" -gt "$puts" ]; }
b_lets_go_with() {
	local key=$1
	shift
	puts=$(proxy_count PutItem)
	proxy_ctl "$@" PutItem >/dev/null
	touch "$WORK/go-$key"
	wait "$BH"
	wait_for 5 took_put
}
b_holds t
t0=$(now_ms)
timeout 30 flock -w 3 "$E/t" true &
w1=$!
timeout 30 flock "$E/t" true &
w2=$!
sleep 0.5 # both parked, polling
proxy_ctl hang-reply 100 UpdateItem >/dev/null
b_lets_go_with t hang-reply 100
ok $? "B lets go; e's take is sent, and its answer held"
t1=$(now_ms)
kill -TERM "$w2"
wait "$w2"
rc2=$? took2=$(($(now_ms) - t1))
wait "$w1"
rc1=$? took1=$(($(now_ms) - t0))
# A third flock comes while that take is still in flight: it waits for
# the take's outcome before it tries, and a SIGTERM ends that wait too.
timeout 30 flock "$E/t" true &
w3=$!
sleep 0.5
t1=$(now_ms)
kill -TERM "$w3"
wait "$w3"
rc3=$? took3=$(($(now_ms) - t1))
is "$rc1" 1 "flock -w 3 on e times out (1) while its take is in flight"
ok $((!(took1 < 4500))) "... within its 3 s, not the take's timeout later ($took1 ms)"
ok $((!(rc2 == 143 && took2 < 1500))) "a waiter killed by SIGTERM meanwhile ends at once ($rc2, $took2 ms)"
ok $((!(rc3 == 143 && took3 < 1500))) "... and one that came later, waiting for the take's outcome ($rc3, $took3 ms)"
proxy_ctl clear >/dev/null
wait_for 10 try_acquire "$B/t"
ok $? "once the answers come, the take that landed is let go: B takes t"
rm -f "$B/t"

# A wait's very first try, made before it is parked, in flight when a
# signal comes: e opened u while B held it; B lets go, and e's flock takes
# the free key, its answer held by the proxy. The signal (USR2, handled,
# so flock returns EINTR) is answered at once, not when the try's
# operation timeout ends; the key e's try took is let go of when its
# answer comes, so B takes u again.
try_acquire "$B/u"
hold_start eu "$E/u" O_RDONLY
is "$HOUT" ready "(e opens u, which B holds)"
rm -f "$B/u"
wait_for 5 sh -c "! test -e '$E/u'"
puts=$(proxy_count PutItem)
proxy_ctl hang-reply 100 PutItem >/dev/null
hold_send eu "flock ex"
wait_for 5 took_put
ok $? "e's flock tries the free key, its answer held"
t1=$(now_ms)
kill -USR2 "$(hold_pid eu)"
hold_wait eu 30
took=$(($(now_ms) - t1))
is "$HOUT" EINTR "a signal ends the flock whose first try is in flight: EINTR"
ok $((!(took < 1500))) "... at once ($took ms)"
proxy_ctl clear >/dev/null
wait_for 10 try_acquire "$B/u"
ok $? "the key its try took is let go of once the answer comes: B takes u"
hold_stop eu
rm -f "$B/u"


# ---- waits behind a take in flight hold no request thread ---------------------------
# Mount f (behind the proxy, max_threads=2): a waiter's take of t2 is in
# flight, its answer held; four flock -w 1 (on files opened before) come
# meanwhile. Each parks
# behind that take instead of holding a request thread for its outcome, so
# each times out after its second and ls answers meanwhile. (With both
# threads held so, neither the interrupts nor any other request of the
# mount were read until the take timed out, 10 s later.)
ENDPOINT=$PROXY_ENDPOINT mount_start f "owner=wait-f,$OPT,wait_poll=0.1,max_threads=2" ||
	{ echo "Bail out! cannot mount f"; exit 1; }
F=$(mnt f)
b_holds t2
timeout 60 flock "$F/t2" true &
w0=$!
# Four more files of t2, opened now (B holds it: no create, whose write
# the proxy would hold too, taking a request thread for it).
fds=()
for i in 1 2 3 4; do
	exec {fd}<"$F/t2"
	fds+=("$fd")
done
sleep 0.5 # parked, polling
b_lets_go_with t2 hang-reply 100
ok $? "(f's take of t2 is in flight, its answer held)"
ws=()
for i in 1 2 3 4; do
	(
		s=$(now_ms)
		timeout 40 flock -w 1 "${fds[i - 1]}"
		echo "$? $(($(now_ms) - s))" >"$WORK/f$i"
	) &
	ws+=($!)
done
sleep 0.3
s=$(now_ms)
timeout 30 ls "$F" >/dev/null
lst=$(($(now_ms) - s))
for p in "${ws[@]}"; do wait "$p"; done
res=$(cat "$WORK"/f[1-4] | tr '\n' ';')
is "$(cat "$WORK"/f[1-4] | awk '$1 != 1 || $2 >= 2500' | wc -l)" 0 \
	"four flock -w 1 behind it each time out (1) within 2.5 s (rc ms: $res)"
ok $((!(lst < 2000))) "... and ls answers meanwhile ($lst ms)"
# Four flock -n behind that take, still in flight: each waits for its
# outcome a second at most, then fails "No locks available" (exit 71:
# undecided, as when DynamoDB does not answer). They waited up to the
# take's operation timeout, holding both request threads meanwhile.
ns=()
for i in 1 2 3 4; do
	(
		s=$(now_ms)
		timeout 40 flock -n "${fds[i - 1]}"
		echo "$? $(($(now_ms) - s))" >"$WORK/n$i"
	) &
	ns+=($!)
done
for p in "${ns[@]}"; do wait "$p"; done
res=$(cat "$WORK"/n[1-4] | tr '\n' ';')
is "$(cat "$WORK"/n[1-4] | awk '$1 != 71 || $2 >= 3500' | wc -l)" 0 \
	"four flock -n behind it each fail (71) within 3.5 s (rc ms: $res)"
kill -0 "$w0" 2>/dev/null
ok $? "(f's first waiter still waits: its take's answer is held)"
proxy_ctl clear >/dev/null
for fd in "${fds[@]}"; do exec {fd}<&-; done
wait "$w0"
ok $? "once the answers come, f's first waiter gets t2"

# An open file that took the key itself (open with O_CREAT while it was
# free, as flock(1) opens) and then flocks it, while a waiter's take of
# that key is in flight, is granted once that take's outcome is known: it
# does not park behind a waiter that waits for its very lock (fair.t's
# loops hung so under the TSan daemon). The proxy holds the waiter's
# PutItem unsent while the open's create goes through.
b_holds k3
timeout 60 flock "$F/k3" true &
w0=$!
sleep 0.5 # parked, polling
b_lets_go_with k3 late-request 1
ok $? "(f's waiter's take of k3 is held unsent by the proxy)"
hold_start fa "$F/k3" O_CREAT,O_RDWR 0644
is "$HOUT" ready "an open with O_CREAT on f takes k3 meanwhile"
hold_cmd fa "flock ex" 30
is "$HOUT" 0 "... and its flock is granted (its own lock), not parked behind the waiter"
hold_stop fa
proxy_ctl clear >/dev/null
wait "$w0"
ok $? "then the waiter gets k3"
