#!/usr/bin/env bash
# run_faults.t: lockfs-run when the lock or DynamoDB misbehaves, default
# lease options (safe period 20 s). Mount a sits behind the fault proxy,
# mount b does not.
# - An rm of the lock file (its release) while lockfs-run's command runs:
#   the command gets --signal at once and lockfs-run exits 76, before
#   another mount's command starts. It ran on for about a safe period
#   (19 s), beside the next holder.
# - DynamoDB fails the holder's first reads and writes after the grant
#   (where the fencing token is made): the command runs with a token or
#   not at all. It ran with LOCKFS_FENCE empty.
# - A signal while the open is stalled: lockfs-run dies of it, at once. It
#   exited 69 (then, once the open's request ended, 143).
# - -w while DynamoDB answers slowly: the wait counts from the open, and
#   ends it (75 at the deadline, the command not run). It counted after
#   the open, then the open ran to its end (lockfs ends a request early
#   only for a caller being killed: the open is made by a child, killed).
# - Every PutItem held by the network while the key is held elsewhere:
#   -w 3 ends at its deadline. It took 40 s (the answer of a lost write
#   was looked for with 10 s for each try).
# - Mounts c (behind the proxy) and d, lease=3,safe_period=1.5: c's
#   heartbeats fail (deletes still work) while lockfs-run's command there
#   needs 1 s to stop after its SIGTERM, and d waits for the key. d gets it
#   only once that command stopped: c keeps its lost row until a lease
#   after its last renewal (or until the holder lets go). c deleted it
#   ~100 ms after the loss, and d's command ran beside c's.
. "$(dirname "$0")/lib.sh"

: "${LOCKFS_RUN_BIN:=$(dirname "$LOCKFS_BIN")/lockfs-run}"
R=$LOCKFS_RUN_BIN
[ -x "$R" ] || { echo "Bail out! $R is missing (build lockfs-run)"; exit 1; }

plan 20

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=rf-a,$OPT" &&
	mount_start b "owner=rf-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)

# ---- rm under a running command ---------------------------------------------
cat >"$WORK/tick.sh" <<'EOF'
#!/bin/bash
trap 'echo "TERM $(date +%s%N)" >>"$1"; exit 0' TERM
echo "START $(date +%s%N) $LOCKFS_FENCE" >>"$1"
while :; do sleep 0.05; done
EOF
chmod +x "$WORK/tick.sh"
"$R" "$B/k" -- "$WORK/tick.sh" "$WORK/h" 2>"$WORK/h.err" &
rp=$!
track_pid $rp
wait_for 10 test -s "$WORK/h"
ok $? "(lockfs-run's command runs under k on b)"
rm "$B/k"
t_rm=$(date +%s%N)
timeout 30 "$R" -w 20 "$A/k" -- sh -c "echo START \$(date +%s%N) \$LOCKFS_FENCE >$WORK/o" \
	2>"$WORK/o.err"
orc=$?
wait_for 30 _gone $rp
wait $rp
hrc=$?
t_term=$(awk '/^TERM/{print $2}' "$WORK/h")
t_other=$(awk '/START/{print $2}' "$WORK/o")
diag "after the rm: holder's TERM at $(((${t_term:-0} - t_rm) / 1000000)) ms, the next holder's start at $(((${t_other:-0} - t_rm) / 1000000)) ms"
ok $((${t_term:-0} == 0 || t_term - t_rm > 2000000000)) \
	"an rm of the lock file stops lockfs-run's command at once (not a safe period later)"
ok $((${t_term:-0} == 0 || ${t_other:-0} == 0 || t_term > t_other)) \
	"... before another mount's command starts (it ran $orc)"
is "$hrc" 76 "... and lockfs-run exits 76"

# ---- the fencing token under DynamoDB errors --------------------------------
for op in UpdateItem GetItem; do
	proxy_ctl http500 40 $op >/dev/null
	timeout -k 2 60 "$R" -n "$A/f-$op" -- sh -c 'echo "fence=[$LOCKFS_FENCE]"' \
		>"$WORK/f-$op" 2>"$WORK/f-$op.err"
	rc=$?
	proxy_ctl clear >/dev/null
	out=$(cat "$WORK/f-$op")
	diag "$op failing after the grant: exit $rc, $out $(cat "$WORK/f-$op.err")"
	ok $(((rc == 0 && ${#out} > 8) || (rc == 69 && ${#out} == 0) ? 0 : 1)) \
		"$op failing: the command runs with a fencing token ($out), or not at all (69)"
	unlike "$out" 'fence=\[\]' "... never with LOCKFS_FENCE empty"
done

# ---- a signal while the open is stalled ---------------------------------------
proxy_ctl stall on >/dev/null
(exec "$R" -w 30 "$A/s" -- true </dev/null >/dev/null 2>"$WORK/s.err") &
p=$!
sleep 0.5
t0=$(now_ms)
kill -TERM $p
wait_for 40 _gone $p
took_s=$(($(now_ms) - t0))
wait $p
rc=$?
proxy_ctl stall off >/dev/null
is "$rc" 143 "SIGTERM while the open is stalled: lockfs-run dies of it ($(cat "$WORK/s.err"))"
ok $((!(took_s < 2000))) "... at once ($took_s ms)"

# ---- -w counts from the open ---------------------------------------------------
# DynamoDB answers after 3 s (the proxy's latency): with -w 1 the command
# does not run, and lockfs-run ends at its second, the open cut short
# (the timer was armed after the open: the command ran, exit 0; then the
# open ran on to its end, 75 after 3 s or more).
proxy_ctl latency 1500 >/dev/null
t0=$(now_ms)
timeout -k 2 60 "$R" -w 1 "$A/ow" -- touch "$WORK/ow.ran" </dev/null >/dev/null 2>"$WORK/ow.err"
rc=$?
took=$(($(now_ms) - t0))
proxy_ctl latency 0 >/dev/null
is "$rc" 75 "-w 1 while the open waits on DynamoDB: 75 ($(cat "$WORK/ow.err"))"
ok $((!(took >= 900 && took < 2000))) "... at its second ($took ms)"
[ ! -e "$WORK/ow.ran" ]
ok $? "... and the command did not run"
wait_for 20 try_acquire "$B/ow"
ok $? "... leaving no lock behind: b takes ow"
rm -f "$B/ow"

# ---- an acquire whose writes never arrive -----------------------------------
"$R" "$B/w" -- sleep 300 &
bp=$!
track_pid $bp
wait_for 10 test -e "$A/w"
proxy_ctl late-request 100 PutItem >/dev/null
t0=$(now_ms)
timeout -k 2 120 "$R" -w 3 "$A/w" -- true </dev/null >/dev/null 2>"$WORK/w.err"
rc=$?
took=$(($(now_ms) - t0))
proxy_ctl clear >/dev/null
is "$rc" 75 "-w 3 while every PutItem is held: 75 ($(cat "$WORK/w.err"))"
ok $((!(took >= 2900 && took < 4500))) \
	"... at its third second ($took ms)"
kill $bp
wait $bp
wait_for 15 eval '[ -z "$(ls "$A")" ]'
ok $? "nothing is left held"

# ---- a lost lock's row is not given away before its lease -------------------
OPT2=lease=3,heartbeat=0.75,safe_period=1.5,entry_timeout=0,attr_timeout=0
ENDPOINT=$PROXY_ENDPOINT mount_start c "owner=rf-c,$OPT2" &&
	mount_start d "owner=rf-d,$OPT2"
ok $? "(mounts c, behind the proxy, and d: lease 3 s, safe period 1.5 s)"
C=$(mnt c) D=$(mnt d)
: >"$WORK/g.log"
"$R" -w 5 "$C/g" -- bash -c 'trap "echo T \$(date +%s%N) >>$1; sleep 1; echo E \$(date +%s%N) >>$1; exit 9" TERM
	echo S $(date +%s%N) >>$1; sleep 30 & wait' _ "$WORK/g.log" </dev/null >/dev/null 2>"$WORK/g.err" &
cp=$!
track_pid $cp
wait_for 10 grep -q "^S" "$WORK/g.log"
timeout 30 "$R" -w 20 "$D/g" -- sh -c 'echo D $(date +%s%N) >>"$1"' _ "$WORK/g.log" \
	</dev/null >/dev/null 2>"$WORK/gd.err" &
dp=$!
sleep 1
proxy_ctl http500 100000 UpdateItem >/dev/null
wait $dp
wait $cp
crc=$?
proxy_ctl clear >/dev/null
t_T=$(awk '$1=="T"{print $2}' "$WORK/g.log")
t_E=$(awk '$1=="E"{print $2}' "$WORK/g.log")
t_D=$(awk '$1=="D"{print $2}' "$WORK/g.log")
diag "c's holder told at 0, its command ended at $(((${t_E:-0} - ${t_T:-0}) / 1000000)) ms, d's command started at $(((${t_D:-0} - ${t_T:-0}) / 1000000)) ms; c's lockfs-run exited $crc"
ok $((${t_T:-0} == 0 || ${t_E:-0} == 0 || ${t_D:-0} == 0 || t_D < t_E)) \
	"d's command starts only after c's lost holder stopped (1 s after it was told)"
is "$crc" 76 "... and c's lockfs-run exits 76"
