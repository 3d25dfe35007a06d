#!/usr/bin/env bash
# loss.t: losing a lock when DynamoDB stops answering (doc/semantics.md "Lost
# locks"). A private DynamoDB Local is paused (SIGSTOP) past the safe period
# (lease=3,heartbeat=0.5,safe_period=1.5). Mount A has lost_signal=USR1,
# mount A2 has none. Then: the holder's fd reads state: lost, write/fsync
# give EIO, poll gives POLLERR|POLLPRI (and wakes a poll already waiting),
# A's holder gets USR1 (A2's gets nothing), status says state=lost. After
# SIGCONT nobody holds two copies: B takes the key once the row is gone or
# expired, the old holder never gets it back, exactly one mount holds it.
. "$(dirname "$0")/lib.sh"

plan 35

start_ddb_private || { echo "Bail out! cannot start a private DynamoDB Local"; exit 1; }
new_table || { echo "Bail out! cannot create a table"; exit 1; }
OPT=lease=3,heartbeat=0.5,safe_period=1.5,entry_timeout=0,attr_timeout=0
mount_start a "owner=loss-a,lost_signal=USR1,$OPT" &&
	mount_start a2 "owner=loss-a2,$OPT" &&
	mount_start b "owner=loss-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) A2=$(mnt a2) B=$(mnt b)

hold_start h --pgrp "$A/x" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "A acquires x (holder in its own process group)"
hold_start h2 --pgrp "$A2/y" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "A2 acquires y"
hold_cmd h read
before=$HOUT
is "$(field "$before" state)" held "x is held"
hold_cmd h "poll 0"
is "$HOUT" POLLIN "poll before the outage: no POLLERR/POLLPRI"
sleep 1   # a few good heartbeats

# A2's holder waits in poll(2) for POLLPRI through the outage.
hold_cmd h2 "poll 200 pri"
is "$HOUT" 0 "poll for POLLPRI on a held lock times out (nothing to report)"
hold_send h2 "poll 20000 pri"

kill -STOP "$PRIV_PID"
t_stop=$(now_ms)
lost_in() { grep -q "^lock: key=$2 state=lost " "$1/.lockfs/status"; }
wait_for 8 lost_in "$A" x
ok $? "A's status says x is lost"
t_lost=$(($(now_ms) - t_stop))
ok "$([ "$t_lost" -ge 1000 ] && [ "$t_lost" -le 4000 ] && echo 0)" \
	"A gives x up about a safe period after the last heartbeat ($t_lost ms)"
like "$(grep '^lock: key=x ' "$A/.lockfs/status")" 'reason="[^"]+"' "status gives the reason"
wait_for 8 lost_in "$A2" y
ok $? "A2's status says y is lost"
hold_wait h2 5
like "$HOUT" 'POLLERR' "a poll waiting on y's holding fd wakes up with POLLERR"
like "$HOUT" 'POLLPRI' "... and POLLPRI"

hold_cmd h "poll 0"
like "$HOUT" '^POLLIN\|POLLPRI(\|POLLOUT)?\|POLLERR$' "poll on the lost fd: POLLERR|POLLPRI"
hold_cmd h fsync
is "$HOUT" EIO "fsync on the lost fd: EIO"
hold_cmd h "write late"
is "$HOUT" EIO "write on the lost fd: EIO"
hold_cmd h signals
is "$HOUT" "USR1=1 USR2=0 HUP=0 ALRM=0" "lost_signal=USR1: the holder's process group got USR1 once"
hold_cmd h2 signals
is "$HOUT" "USR1=0 USR2=0 HUP=0 ALRM=0" "without lost_signal no signal is sent"
is "$("$T" read "$A/.lockfs/metrics" | sed -n 's/^lockfs_lost_total //p')" 1 "A counts one lost lock"
like "$(cat "$WORK/daemon-a.log")" 'warn.*lost key=x' "A logs a warning"
# Still inside the outage: reading the holder's fd must say lost; it must
# not need DynamoDB to know that (bounded: 20 s).
t0=$(now_ms)
hold_cmd h read 20
like "$HOUT" $'(^|\n)state: lost(\n|$)' "read on the lost fd during the outage: state: lost"
ok "$([ $(($(now_ms) - t0)) -lt 3000 ] && echo 0)" "... answered at once ($(($(now_ms) - t0)) ms)"

# ---- DynamoDB is back ------------------------------------------------------
kill -CONT "$PRIV_PID"
t_cont=$(now_ms)
hold_cmd h read
is "$(field "$HOUT" state)" lost "after the outage the holder's fd still reads state: lost"
hold_cmd h fsync
is "$HOUT" EIO "... and fsync still gives EIO (never silently re-acquired)"
# B takes x once the row is gone (A removes its stale row) or expired
# (a lease after B first sees it): at most 3 s + margins.
got=
while [ $(($(now_ms) - t_cont)) -lt 10000 ]; do
	got=$("$T" open "$B/x" O_CREAT,O_EXCL,O_RDONLY 0644)
	[ "$got" = 0 ] && break
	sleep 0.1
done
is "$got" 0 "B acquires x after the outage ($(($(now_ms) - t_cont)) ms)"
tb=$("$T" read "$B/x")
is "$(field "$tb" owner)" loss-b "x is B's now"
ok "$([ "$(field "$tb" fence)" -gt "$(field "$before" fence)" ] && echo 0)" \
	"B's fence is greater than A's ($(field "$tb" fence) > $(field "$before" fence))"
expect EEXIST open "$A/x" O_CREAT,O_EXCL,O_RDONLY 0644
is "$(field "$("$T" read "$A/x")" owner)" loss-b "A sees B as the owner"
is "$(field "$("$T" read "$A/.lockfs/status")" locks_held)" 0 "A holds nothing"
is "$(field "$("$T" read "$B/.lockfs/status")" locks_held)" 1 "B holds x: exactly one holder"
expect 0 unlink "$B/x"
hold_cmd h fsync
is "$HOUT" EIO "after B released x, A's old fd still gives EIO"
is "$(field "$("$T" read "$A/.lockfs/status")" locks_held)" 0 "... and A did not take x back"
hold_kill h KILL
hold_kill h2 KILL

mount_stop a
mount_stop a2
mount_stop b
