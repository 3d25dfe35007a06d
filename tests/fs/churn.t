#!/usr/bin/env bash
# churn.t: an open with O_CREAT never fails with ENOENT while the file comes
# and goes. flock(1) opens its file O_RDONLY|O_CREAT: on a lockfs mount that
# creates the lock file (an acquire) when the key is free, else opens the
# existing one. Two mounts run flock(1) in loops on one key (two loops each;
# b through the fault proxy at a 4 ms round trip, a region's), so the file
# is created and released on both all the time, and on each the two loops'
# creates and waits race (a create that landed after the release of a lock
# its own mount took meanwhile once left its lock unfindable: held until the
# script ended), while a third mount's two loops open it O_RDONLY|O_CREAT
# (hold=fd: a create is released on close). With attr_timeout=0 the kernel
# checks an open's permission by a getattr right after its lookup found the
# file: a release in between made that getattr, and so the open, fail with
# ENOENT (about one open in ten here). A fourth mount (hold=fd) runs two
# loops of opens as c's through a second fault proxy at a 600 ms round trip,
# longer than the moment (500 ms) a file the lookup found is still answered
# once its key is gone: counted from the end of the getattr's own read, that
# moment had passed by the time it was checked, and those opens failed with
# ENOENT. Bounded: each loop stops after $ITER turns or $SECS seconds
# ($SLOW_SECS on the slow mount).
. "$(dirname "$0")/lib.sh"

ITER=${CHURN_ITER:-150} SECS=${CHURN_SECS:-25} SLOW_SECS=${CHURN_SLOW_SECS:-8}
plan 8

new_table || { echo "Bail out! cannot create a table"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0
mount_start a "owner=churn-a,$OPT" &&
	mount_start c "owner=churn-c,hold=fd,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
proxy_start && proxy_ctl latency 2 >/dev/null &&
	ENDPOINT=$PROXY_ENDPOINT mount_start b "owner=churn-b" ||
	{ echo "Bail out! cannot mount b behind the proxy"; exit 1; }
proxy_start && proxy_ctl latency 300 >/dev/null &&
	ENDPOINT=$PROXY_ENDPOINT mount_start d "owner=churn-d,hold=fd,$OPT" ||
	{ echo "Bail out! cannot mount d behind the proxy"; exit 1; }

# loop M NAME [END]: $ITER turns of flock(1) on key hot of mount M (a short
# hold) until END (ms), counting turns and the opens that failed with ENOENT.
END=$(($(now_ms) + SECS * 1000))
loop() {
	local i err end=${3:-$END}
	: >"$WORK/turns-$2"
	: >"$WORK/enoent-$2"
	for ((i = 0; i < ITER; i++)); do
		[ "$(now_ms)" -lt "$end" ] || break
		err=$(flock -x -w 10 "$1/hot" true 2>&1)
		echo >>"$WORK/turns-$2"
		case $err in
		*"No such file"*) echo "$err" >>"$WORK/enoent-$2" ;;
		esac
	done
}
# opens M NAME [END]: the same with open(O_RDONLY|O_CREAT) alone.
opens() {
	local i err end=${3:-$END}
	: >"$WORK/turns-$2"
	: >"$WORK/enoent-$2"
	for ((i = 0; i < ITER; i++)); do
		[ "$(now_ms)" -lt "$end" ] || break
		err=$("$T" open "$1/hot" O_CREAT,O_RDONLY 0644 2>&1)
		echo >>"$WORK/turns-$2"
		[ "$err" != ENOENT ] || echo "$err" >>"$WORK/enoent-$2"
	done
}
pids=()
for m in a b; do
	for n in 1 2; do
		loop "$(mnt $m)" "$m$n" &
		track_pid $!
		pids+=($!)
	done
done
for n in 1 2; do
	opens "$(mnt c)" "c$n" &
	track_pid $!
	pids+=($!)
	opens "$(mnt d)" "d$n" $(($(now_ms) + SLOW_SECS * 1000)) &
	track_pid $!
	pids+=($!)
done
wait "${pids[@]}"

count() { cat "$WORK"/"$1"-"$2"? | wc -l; }
for m in a b c d; do
	is "$(count enoent $m)" 0 \
		"mount $m: no open O_CREAT fails with ENOENT ($(count turns $m) opens)"
done
ok $(($(count turns a) < 20 || $(count turns b) < 20 || $(count turns c) < 20)) \
	"every mount's loops turn (a $(count turns a), b $(count turns b), c $(count turns c))"
ok $(($(count turns d) < 6)) "the slow mount's loops turn ($(count turns d))"
wait_for 10 sh -c "! test -e '$(mnt a)/hot'"
ok $? "nothing is left once the loops stop"
is "$("$T" open "$(mnt c)/hot" O_CREAT,O_RDONLY 0644)" 0 \
	"an open O_CREAT of the free key still succeeds"
