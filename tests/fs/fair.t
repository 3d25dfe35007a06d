#!/usr/bin/env bash
# fair.t: the fair handoff across mounts (doc/fair-handoff.md). Two mounts
# run `flock` in loops on one key (two loops each), taking it again as soon
# as it is free, while a third runs `flock -x -w 15`: every mount behind
# the fault proxy with added latency (tests/fs/proxy.t), as at a real
# region. The
# waiter marks the row; the holder's release becomes a reservation for it,
# which only it takes over; of several waiting mounts, the one that has
# waited longest (since its last turn) goes next. Its wait is measured and
# must stay within the stated bound (README, Handoffs): H + (M - 1) * (H +
# P + 2 RTT) + 2 P, for M mounts contending, holds of at most H and a
# wait_poll P: here M = 3, H = 0.3 s of hold plus up to 0.2 s to start the
# processes, P = 0.25 s, RTT 10 ms: 0.5 + 2 * 0.77 + 0.5 = 2.54, checked
# as 2.6 s (the figures are printed). Before the fair handoff the waiter
# found the key free only in the instant between two turns: in the same
# setting its waits were 0.4, 8, 6.8, 5.3 and 15 s (timed out). The loops
# go on throughout: neither mount loses its turns for good either.
. "$(dirname "$0")/lib.sh"

ROUNDS=5
plan $((ROUNDS + 4))

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start lockfs-faultproxy"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=fair-a,$OPT" &&
	ENDPOINT=$PROXY_ENDPOINT mount_start b "owner=fair-b,$OPT" &&
	ENDPOINT=$PROXY_ENDPOINT mount_start c "owner=fair-c,$OPT" ||
	{ echo "Bail out! cannot mount through the proxy"; exit 1; }
A=$(mnt a) B=$(mnt b) C=$(mnt c)
proxy_ctl latency 5 >/dev/null
is "$?" 0 "the proxy adds 5 ms each way"

# loop M NAME: takes key hot on mount M again and again, holding it 0.3 s,
# until $WORK/stop exists, counting its turns in $WORK/turns-NAME. Two
# loops per mount: when one lets go, the other is already waiting there,
# polled at once (flk_unlock), so the key is free for about one round trip
# between turns: a waiter elsewhere that only polls (as before the fair
# handoff) almost never finds it free.
STOP=$WORK/stop
loop() {
	: >"$WORK/turns-$2"
	while [ ! -e "$STOP" ]; do
		flock "$1/hot" sh -c "echo >> '$WORK/turns-$2'; sleep 0.3" \
			2>/dev/null
	done
}
for m in a b; do
	for n in 1 2; do
		loop "$(mnt $m)" "$m$n" &
		track_pid $!
		loops+=($!)
	done
done
wait_for 10 test -s "$WORK/turns-a1" && wait_for 10 test -s "$WORK/turns-b1"
ok $? "the loops take the key"

waits=()
for i in $(seq 1 "$ROUNDS"); do
	sleep 0.5
	# A plain open (no O_CREAT: creating would acquire the key): between
	# two turns the key is free and the file is rightly not there
	# (ENOENT), so it is tried again until a turn shows it.
	for _ in $(seq 1 100); do
		exec 3<"$C/hot" && break
		sleep 0.01
	done 2>/dev/null
	t0=$(now_ms)
	flock -x -w 15 3
	rc=$?
	w=$(($(now_ms) - t0))
	flock -u 3
	exec 3<&-
	waits+=("$w")
	is "$rc:$((w <= 2600))" "0:1" "round $i: flock -x -w 15 on the third mount gets the key within the bound, 2.6 s ($w ms)"
done
diag "the third mount's waits: ${waits[*]} ms"

turns() { cat "$WORK"/turns-"$1"? | wc -l; }
before_a=$(turns a) before_b=$(turns b)
sleep 2
ok $((!($(turns a) > before_a && $(turns b) > before_b))) \
	"both mounts' loops still get turns ($(turns a) and $(turns b) in all)"
touch "$STOP"
wait "${loops[@]}"
wait_for 10 sh -c "! test -e '$A/hot'"
ok $? "nothing is left once the loops stop"
