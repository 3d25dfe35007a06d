#!/usr/bin/env bash
# lostgroup.t: a process group whose lock was lost (hold=pgrp: a script
# that ran `: > k`, and DynamoDB stopped answering past the safe period)
# asks a file lock on that key once DynamoDB answers again. The group may
# not take the key again until it unlinks the file (a lost lock is never
# replaced silently), so: flock -n and F_SETLK say "held" (EWOULDBLOCK /
# EAGAIN, flock(1) exits 1), and a blocking flock or F_SETLKW, whose wait
# only the group's own unlink could end, fails at once with EDEADLK,
# without a request or a log line per poll. Before, flock -n said "No
# locks available" (ENOLCK, exit 71: what lockfs reserves for DynamoDB out
# of reach) and a blocking flock waited forever, logging five lines a
# second. After the unlink the group takes the key as anyone does. Mount c
# goes through the fault proxy (2 ms each way), which stalls to lose the
# locks; a second process of the group waits in flock on one of them
# meanwhile (a lock held by an open file's flock is that file's: another
# open file of the group may take it once it is lost).
. "$(dirname "$0")/lib.sh"

plan 18

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0,lease=3,heartbeat=0.5,safe_period=1.5
ENDPOINT=$PROXY_ENDPOINT mount_start c "owner=lg-c,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
C=$(mnt c)
proxy_ctl latency 2 >/dev/null

# The group: takes k by noclobber, then (told by files) a flock waiter of
# its own on j (held by the group's other process), and the asks.
timeout 90 setsid -w bash -c '
C=$1 W=$2
set -C; : >"$C/k" || exit 1; set +C
exec 3>"$C/j" || exit 1           # the group holds j by this open file,
# so a file lock by another open file of the group waits (only one on
# the creating file would take it)
(flock -x "$C/j" true 2>"$W/jwait.err"; echo $? >"$W/jwait.rc") &
: >"$W/ready"
for i in $(seq 300); do [ -e "$W/go" ] && break; sleep 0.1; done
timeout --foreground 10 flock -n "$C/k" true 2>"$W/nb.err"; echo $? >"$W/nb.rc"
s=$(date +%s%N)
timeout --foreground 10 flock "$C/k" true 2>"$W/bl.err"
echo "$? $((($(date +%s%N) - s) / 1000000))" >"$W/bl.rc"
python3 -c "
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
for cmd in (fcntl.F_SETLK, fcntl.F_SETLKW):
    try:
        fcntl.fcntl(fd, cmd, struct.pack(\"hhqqi\", fcntl.F_WRLCK, 0, 0, 0, 0))
        print(\"granted\")
    except OSError as e:
        print(os.strerror(e.errno))
" "$C/k" >"$W/setlk.out" 2>&1
rm "$C/k"; echo $? >"$W/rm.rc"
timeout --foreground 10 flock -n "$C/k" true; echo $? >"$W/after.rc"
wait
' _ "$C" "$WORK" &
g=$!
wait_for 20 test -e "$WORK/ready"
ok $? "the group holds k (noclobber) and j (an open file), and waits in flock on j"
proxy_ctl stall on >/dev/null
lost() { grep -aq "key=k state=lost" "$C/.lockfs/status" && grep -aq "key=j state=lost" "$C/.lockfs/status"; }
wait_for 15 lost
ok $? "DynamoDB out of reach past the safe period: c loses k and j"
proxy_ctl stall off >/dev/null
sleep 1.5 # DynamoDB answers again
wait_for 10 test -s "$WORK/jwait.rc"
is "$(cat "$WORK/jwait.rc" 2>/dev/null)" 65 "the group's flock waiter on j ends (EDEADLK: flock(1) exits 65)"
like "$(cat "$WORK/jwait.err" 2>/dev/null)" 'Resource deadlock avoided' "and says why"
lines0=$(grep -ac 'refused' "$WORK/daemon-c.log")
: >"$WORK/go"
_reap "$g" 60 >/dev/null
is "$(cat "$WORK/nb.rc")" 1 "flock -n by the group that lost k: 1 (held), not 71 (DynamoDB out of reach)"
read -r blrc blms <"$WORK/bl.rc"
is "$blrc" 65 "a blocking flock by that group fails (flock(1) 65) ..."
ok "$([ "$blms" -lt 2000 ] && echo 0)" "... at once ($blms ms), not after a wait that only its own unlink could end"
like "$(cat "$WORK/bl.err")" 'Resource deadlock avoided' "flock(1) prints EDEADLK's message"
is "$(tr '\n' ' ' <"$WORK/setlk.out")" "Resource temporarily unavailable Resource deadlock avoided " \
	"F_SETLK: EAGAIN; F_SETLKW: EDEADLK"
lines=$(($(grep -ac 'refused' "$WORK/daemon-c.log") - lines0))
ok "$([ "$lines" -le 6 ] && echo 0)" "one log line per refused ask, none per poll ($lines)"
is "$(cat "$WORK/rm.rc")" 0 "the group unlinks k"
is "$(cat "$WORK/after.rc")" 0 "then flock -n by the group takes k"

# Two process groups of one session (two jobs of one script): the first
# loses k2, the second takes k2 again on this mount, and the first's rm
# lets go of its own lost lock only. It released the second group's live
# lock instead (the lock this mount holds was found first, and the
# session rule lets a session remove its own), leaving the lost one.
timeout 120 setsid -w bash -c '
set -m
C=$1 W=$2
wait_file() { for i in $(seq 900); do [ -e "$1" ] && return; sleep 0.1; done; }
( set -C; : >"$C/k2" && : >"$W/g1.ready"; wait_file "$W/g1.go"
  rm "$C/k2"; echo $? >"$W/g1.rm"; wait_file "$W/end" ) &
( wait_file "$W/g2.go"; set -C
  for i in $(seq 200); do : >"$C/k2" 2>/dev/null && break; sleep 0.1; done
  : >"$W/g2.took"; wait_file "$W/end" ) &
wait' _ "$C" "$WORK" >/dev/null 2>&1 &
g=$!
wait_for 20 test -e "$WORK/g1.ready"
ok $? "group 1 of a session holds k2 (noclobber)"
proxy_ctl stall on >/dev/null
lost2() { grep -aq "key=k2 state=lost" "$C/.lockfs/status"; }
wait_for 15 lost2
ok $? "DynamoDB out of reach: group 1 loses k2"
proxy_ctl stall off >/dev/null
: >"$WORK/g2.go"
wait_for 30 test -e "$WORK/g2.took"
ok $? "group 2 of that session takes k2 on this mount"
: >"$WORK/g1.go"
wait_for 20 test -s "$WORK/g1.rm"
is "$(cat "$WORK/g1.rm" 2>/dev/null)" 0 "group 1's rm of k2 answers 0"
held2() { grep -aq "key=k2 state=held" "$C/.lockfs/status"; }
held2
ok $? "... and group 2 still holds k2"
lost2
ok $((!$?)) "... and group 1's lost lock is let go of"
: >"$WORK/end"
_reap "$g" 30 >/dev/null
