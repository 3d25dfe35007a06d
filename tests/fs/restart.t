#!/usr/bin/env bash
# restart.t: a blocking flock whose process a timer ticks every 100 ms
# (SIGALRM with a handler that returns: the kernel restarts the call, as
# Python retries it on EINTR) keeps its place. On one mount the first
# waiter is still served first; across mounts, in fair.t's setting (two
# mounts looping on the key, 5 ms each way through the fault proxy), it
# still gets the key within fair.t's bound, 2.6 s. Each restart queued it
# anew at the tail, its wait starting over, and its mark was removed at
# once (a reservation it had brought given back): a later waiter on its
# mount went first, and across mounts it waited 7 to 19 s or more than
# 30 s (timed out) in 8 of 9 rounds.
. "$(dirname "$0")/lib.sh"

plan 3

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start lockfs-faultproxy"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0
for m in a b c; do
	ENDPOINT=$PROXY_ENDPOINT mount_start $m "owner=rs-$m,$OPT" ||
		{ echo "Bail out! cannot mount through the proxy"; exit 1; }
done
proxy_ctl latency 5 >/dev/null
A=$(mnt a) B=$(mnt b) C=$(mnt c)
ORDER=$WORK/order

# ticker PATH TAG: flock(PATH) with SIGALRM (SA_RESTART) every 100 ms;
# appends TAG and its wait in ms to $ORDER when granted, holds 0.2 s.
ticker() {
	python3 -c '
import fcntl, os, signal, sys, time
signal.signal(signal.SIGALRM, lambda s, f: None)
signal.siginterrupt(signal.SIGALRM, False)
fd = os.open(sys.argv[1], os.O_RDWR)
signal.setitimer(signal.ITIMER_REAL, 0.1, 0.1)
t0 = time.monotonic()
fcntl.flock(fd, fcntl.LOCK_EX)
w = int((time.monotonic() - t0) * 1000)
signal.setitimer(signal.ITIMER_REAL, 0)
with open(sys.argv[3], "a") as f:
    f.write("%s %d\n" % (sys.argv[2], w))
time.sleep(0.2)
' "$1" "$2" "$ORDER"
}

# ---- FIFO on one mount -----------------------------------------------------
: >"$ORDER"
flock "$A/q" sleep 2 &
holder=$!
wait_for 5 test -e "$A/q"
ticker "$A/q" first &
t1=$!
sleep 0.5
flock "$A/q" sh -c "echo second >> '$ORDER'; sleep 0.2" &
t2=$!
_reap $holder 10; _reap $t1 10; _reap $t2 10
is "$(cut -d' ' -f1 "$ORDER" | tr '\n' ' ')" "first second " \
	"one mount: the first waiter (a timer ticking) is served first"

# ---- across mounts (fair.t's setting) --------------------------------------
STOP=$WORK/stop
loop() {
	while [ ! -e "$STOP" ]; do
		flock "$1/hot" sleep 0.3 2>/dev/null
	done
}
for m in a c; do
	for n in 1 2; do
		loop "$(mnt $m)" &
		track_pid $!
		loops+=($!)
	done
done
wait_for 10 test -e "$A/hot"
: >"$ORDER"
for i in 1 2 3; do
	sleep 0.5
	for _ in $(seq 1 100); do test -e "$B/hot" && break; sleep 0.01; done
	timeout 30 bash -c "$(declare -f ticker); ORDER=$ORDER; ticker '$B/hot' round$i"
done
touch "$STOP"
wait "${loops[@]}"
diag "waits of the ticking waiter on the third mount: $(tr '\n' ' ' <"$ORDER")"
is "$(wc -l <"$ORDER")" 3 "it got the key each round"
is "$(awk '$2 > 2600' "$ORDER" | wc -l)" 0 "each within the bound (2.6 s)"
