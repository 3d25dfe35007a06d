#!/usr/bin/env bash
# stop.t: a mount that holds many locks stops in a bounded time. Its locks
# are given back many at a time, so that at a 50 ms round trip (through
# the fault proxy) 300 locks go in about a second, not 300 round trips
# (15 s) one after another; and when DynamoDB stops answering, the daemon
# gives up after an operation timeout (10 s) instead of one per lock, and
# the rows it could not delete lapse after their lease: another mount takes
# one only then, never before.
. "$(dirname "$0")/lib.sh"

plan 14

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start lockfs-faultproxy"; exit 1; }
OPT=lease=3,heartbeat=0.5,safe_period=1.5,entry_timeout=0,attr_timeout=0
# A's 300 locks only have to last until its stop: a longer lease keeps a
# loaded machine's slow renewals from losing one first (600 renewals a
# second with OPT; a heartbeat late by 1.5 s lost a lock once).
OPT_A=lease=12,heartbeat=2,safe_period=8,entry_timeout=0,attr_timeout=0
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=stop-a,$OPT_A,hold=unlink" &&
	mount_start b "owner=stop-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)

# stop_timed NAME SECS: unmounts NAME; STOP_MS is how long its daemon took
# to exit after the unmount (empty: not within SECS).
stop_timed() {
	local m pid t0
	m=$(mnt "$1") pid=$(daemon_pid "$1") t0=$(now_ms)
	timeout 10 fusermount3 -u "$m"
	STOP_MS=
	_reap "$pid" "$2" && STOP_MS=$(($(now_ms) - t0))
	unset "_daemon[$1]"
}

# ---- 300 locks at a 50 ms round trip ---------------------------------------
N=300
for i in $(seq $N); do try_acquire "$A/s$i" || break; done
is "$(ls "$B" | grep -c '^s[0-9]')" $N "A holds $N locks"
proxy_ctl latency 25 >/dev/null
stop_timed a 30
diag "A stopped $STOP_MS ms after its unmount, releasing $N locks at a 50 ms round trip"
ok $((!(${STOP_MS:-99999} < 5000))) "A gives its $N locks back within 5 s (${STOP_MS:-not within 30 s} ms; one at a time took 15 s)"
is "$(ls "$B" | grep -c '^s[0-9]')" 0 "every row is gone"
grep -q "all locks released" "$WORK/daemon-a.log"
ok $? "A's log says all locks were released"

# ---- DynamoDB stops answering --------------------------------------------------
proxy_ctl latency 0 >/dev/null
ENDPOINT=$PROXY_ENDPOINT mount_start c "owner=stop-c,$OPT,hold=unlink" ||
	{ echo "Bail out! cannot mount c"; exit 1; }
C=$(mnt c)
M=60
for i in $(seq $M); do try_acquire "$C/t$i" || break; done
# (Counted on C: B must not see these rows before C stops, so that its
# watch of them starts after that.)
is "$(ls "$C" | grep -c '^t[0-9]')" $M "C holds $M locks"
proxy_ctl stall on >/dev/null
stop_timed c 40
stopped=$(now_ms)
proxy_ctl clear >/dev/null
diag "C stopped $STOP_MS ms after its unmount with DynamoDB not answering"
ok $((!(${STOP_MS:-99999} < 25000))) "C stops within 25 s, not an operation timeout per lock (${STOP_MS:-not within 40 s} ms)"
grep -q "locks could not be released; they lapse" "$WORK/daemon-c.log"
ok $? "C's log says which locks lapse"
# Its rows are still there; B may take one only once it has seen it
# unchanged for a whole lease (3 s) of its own clock.
took=
try_acquire "$B/t1" && took=$(($(now_ms) - stopped))
ok $((!(${#took} == 0))) "B cannot take t1 at once (${took:-refused})"
wait_for 15 try_acquire "$B/t2"
got=$(($(now_ms) - stopped))
diag "B took t2 $got ms after C stopped"
ok $((!(got >= 3000 && got < 15000))) "B takes t2 once it lapses, a lease after its first sighting ($got ms)"

# ---- waiters of a stopping mount get a real errno ---------------------------
# d waits in flock(1) and F_SETLKW for a key b holds, then d's daemon is
# stopped: each wait ends with ENOLCK (flock(1): "No locks available",
# exit 71, as when DynamoDB is out of reach), never errno 512 (EINTR
# answered without a signal pending: the kernel restarts the call).
ENDPOINT=$PROXY_ENDPOINT mount_start d "owner=stop-d,$OPT" ||
	{ echo "Bail out! cannot mount d"; exit 1; }
D=$(mnt d)
try_acquire "$B/w" || diag "b cannot take w"
w0=$("$T" read "$D/.lockfs/metrics" | sed -n 's/^lockfs_waits_total //p')
(exec timeout --foreground 30 flock -x "$D/w" true) 2>"$WORK/w-flock.err" &
fw=$!
(exec timeout --foreground 30 python3 -c '
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDONLY, 0o644)
try:
    fcntl.lockf(fd, fcntl.LOCK_SH)
    print("granted")
except OSError as e:
    print(os.strerror(e.errno))' "$D/w") >"$WORK/w-setlkw.out" 2>&1 &
pw=$!
# both parked (a sleep was not enough on a loaded machine: python3 had
# not yet opened w when the daemon stopped, and its open met the bare
# mountpoint: EPERM)
wait_for 20 sh -c "[ \"\$(\"$T\" read \"$D/.lockfs/metrics\" | sed -n 's/^lockfs_waits_total //p')\" -ge $((${w0:-0} + 2)) ]" ||
	diag "the two waiters were not both parked within 20 s"
sleep 0.2 # the second has sent its first poll
kill -TERM "$(daemon_pid d)"
_reap "$fw" 20
is "$?" 71 "d stopped: flock(1) waiting on it exits 71 (ENOLCK), not 65"
like "$(cat "$WORK/w-flock.err")" 'No locks available' "and says No locks available"
_reap "$pw" 20 >/dev/null
is "$(cat "$WORK/w-setlkw.out")" "No locks available" "an F_SETLKW waiter gets ENOLCK too"
_reap "$(daemon_pid d)" 20 >/dev/null
unset "_daemon[d]"

# ---- waiters on many keys, DynamoDB not answering -----------------------------
# e (the default lease and timeouts) parks a flock(1) waiter on each of
# ten keys b holds, DynamoDB stops answering (the proxy stalls), and e's
# daemon is stopped. The waiters are
# told (ENOLCK), and the daemon ends, in a time that does not grow with the
# keys: it removed its ten waiting marks one after another, an operation
# timeout each (80 s for ten keys, and more than 180 s for twenty); marks
# not removed lapse after a lease, as a dead waiter's do.
ENDPOINT=$PROXY_ENDPOINT mount_start e "owner=stop-e,entry_timeout=0,attr_timeout=0" ||
	{ echo "Bail out! cannot mount e"; exit 1; }
E=$(mnt e)
w0=$("$T" read "$E/.lockfs/metrics" | sed -n 's/^lockfs_waits_total //p')
ews=()
for i in $(seq 10); do
	try_acquire "$B/m$i" || diag "b cannot take m$i"
	(exec timeout --foreground 120 flock -x "$E/m$i" true) 2>/dev/null &
	ews+=($!)
done
wait_for 20 sh -c "[ \"\$(\"$T\" read \"$E/.lockfs/metrics\" | sed -n 's/^lockfs_waits_total //p')\" -ge $((${w0:-0} + 10)) ]" ||
	diag "the ten waiters were not all parked within 20 s"
sleep 1 # each has sent a poll, and marked its key
proxy_ctl stall on >/dev/null
t0=$(now_ms)
kill -TERM "$(daemon_pid e)"
_reap "$(daemon_pid e)" 90 >/dev/null
took=$(($(now_ms) - t0))
unset "_daemon[e]"
proxy_ctl stall off >/dev/null
ok $((!(took < 50000))) "e stops within 50 s with ten waiting keys and DynamoDB not answering ($took ms; it took 80 s)"
codes=
for p in "${ews[@]}"; do _reap "$p" 20; codes+="$? "; done
is "$codes" "71 71 71 71 71 71 71 71 71 71 " "every waiter of e is told ENOLCK"
