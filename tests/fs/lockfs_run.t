#!/usr/bin/env bash
# lockfs_run.t: lockfs-run, flock(1) for lockfs. Two mounts A and B of one
# table (entry_timeout=0,attr_timeout=0): the command's exit status passes
# through (0, 3, 128+signal); LOCKFS_KEY/FENCE/OWNER are right and the fence
# grows from run to run; the lock is visible on B while the command runs and
# gone right after; -n and -w on a lock held on B exit 75 (or -E) and leave
# nothing behind, and never run the command, not even with -E 0; a waiter gets the lock within a poll interval of its
# release; signals reach the command's process group, and SIGTERM during a
# wait leaves no lock; usage errors exit 64, unusable lock files 69. Then
# mount L on a private DynamoDB Local (lease=3,heartbeat=0.5,safe_period=1.5)
# that is paused (SIGSTOP): the commands get --signal (TERM, or KILL) within
# safe_period and a margin, SIGKILL after --grace, and lockfs-run exits 76.
# Then mount S's daemon is frozen (SIGSTOP): lockfs-run ends the lock's
# trust by its own clock and stops the command before another mount can
# take the key.
. "$(dirname "$0")/lib.sh"

: "${LOCKFS_RUN_BIN:=$(dirname "$LOCKFS_BIN")/lockfs-run}"
R=$LOCKFS_RUN_BIN
[ -x "$R" ] || { echo "Bail out! $R is missing (build lockfs-run)"; exit 1; }

plan 130

# ---- helpers (local to this file) ------------------------------------------

# run_r ARGS...: lockfs-run ARGS (at most 30 s); RC, OUT, ERR, MS (elapsed).
run_r() {
	local t0
	t0=$(now_ms)
	timeout -k 5 30 "$R" "$@" </dev/null >"$WORK/r.out" 2>"$WORK/r.err"
	RC=$?
	MS=$(($(now_ms) - t0))
	OUT=$(cat "$WORK/r.out")
	ERR=$(cat "$WORK/r.err")
}

# spawn TAG ARGS...: lockfs-run ARGS in the background. PID is its pid;
# $WORK/TAG.rc gets "STATUS END_MS" when it ends, TAG.out/TAG.err its output.
spawn() {
	local tag=$1 w
	shift
	rm -f "$WORK/$tag".*
	(
		"$R" "$@" </dev/null >"$WORK/$tag.out" 2>"$WORK/$tag.err" &
		p=$!
		echo "$p" >"$WORK/$tag.pid"
		wait "$p"
		echo "$? $(now_ms)" >"$WORK/$tag.rc.new"
		mv "$WORK/$tag.rc.new" "$WORK/$tag.rc"
	) &
	w=$!
	track_pid "$w"
	wait_for 5 test -s "$WORK/$tag.pid"
	PID=$(cat "$WORK/$tag.pid")
	track_pid "$PID"
}

# finish TAG [SECS]: waits (default 20 s) for TAG to end; RC and END (ms),
# RC 124 if it did not end in time.
finish() {
	local tag=$1 secs=${2:-20}
	if wait_for "$secs" test -s "$WORK/$tag.rc"; then
		read -r RC END <"$WORK/$tag.rc"
	else
		RC=124 END=$(now_ms)
	fi
}

# A command that records its environment in TAG.env, says TAG.ready and
# waits (at most 20 s) for TAG.go; then exits with STATUS (default 0).
cat >"$WORK/hold.sh" <<'EOF'
#!/bin/sh
printf '%s\n' "$LOCKFS_KEY" "$LOCKFS_FENCE" "$LOCKFS_OWNER" >"$1.env"
echo "$$ $(ps -o pgid= -p $$ | tr -d ' ')" >"$1.ids"
touch "$1.ready"
i=0
while [ ! -e "$1.go" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
exit "${2:-0}"
EOF
# A command for the loss tests, with a child (sleep, pid in TAG.grandchild):
# "term": on SIGTERM records the time in TAG.term and exits 0 (the child
# dies of SIGTERM); "ignore": records the time of SIGTERM and goes on, its
# child ignores SIGTERM. Either ends by itself after about 30 s.
cat >"$WORK/victim.sh" <<'EOF'
#!/bin/sh
case $2 in
term)
	trap 'date +%s%3N >"$1.term"; exit 0' TERM
	sleep 30 &
	;;
ignore)
	trap 'date +%s%3N >"$1.term"' TERM
	(trap '' TERM; exec sleep 30) &
	;;
esac
echo $! >"$1.grandchild"
touch "$1.ready"
i=0
while [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
EOF
chmod +x "$WORK/hold.sh" "$WORK/victim.sh"
H=$WORK/hold.sh

ready() { wait_for 10 test -e "$WORK/$1.ready"; }
go() { touch "$WORK/$1.go"; }
alive() { kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1" 2>/dev/null)" != Z ]; }
in_status() { grep -q "^lock: key=$2 " "$1/.lockfs/status"; }
between() { [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }

new_table || { echo "Bail out! cannot create a table"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0
mount_start a "owner=run-a,$OPT" &&
	mount_start b "owner=run-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
mkdir "$A/jobs" || { echo "Bail out! mkdir on A"; exit 1; }

# ---- exit status of the command ----------------------------------------------
run_r "$A/st" -- true
is "$RC" 0 "true: exit 0"
run_r "$A/st" -- sh -c 'exit 3'
is "$RC" 3 "exit 3 passes through"
run_r "$A/st" -- sh -c 'kill -TERM $$'
is "$RC" 143 "a command killed by SIGTERM: 128+15"
run_r "$A/st" -- sh -c 'kill -KILL $$'
is "$RC" 137 "a command killed by SIGKILL: 128+9"
is "$ERR" "" "... and lockfs-run says nothing"
touch "$WORK/plain.go"
run_r "$A/st" "$H" "$WORK/plain" 5
is "$RC" 5 "-- may be left out before a command that is no option"
run_r "$A/st" -- sh -c 'echo out; echo err >&2'
is "$OUT|$ERR" "out|err" "the command's stdout and stderr are lockfs-run's"
run_r "$A/st" -- no-such-command-lockfs
is "$RC" 127 "a command not found: 127"
is "$ERR" "lockfs-run: cannot run no-such-command-lockfs: No such file or directory" \
	"... with one line naming it"
run_r "$A/st" -- "$WORK"
is "$RC" 126 "a command that cannot be run: 126"
run_r -n "$B/st" -- true
is "$RC" 0 "after all that the key is free on B"

# ---- environment ---------------------------------------------------------------
run_r "$A/jobs/env" -- sh -c 'printf "%s|" "$LOCKFS_KEY" "$LOCKFS_FENCE" "$LOCKFS_OWNER"'
IFS='|' read -r k f1 o <<<"$OUT"
is "$k" jobs/env "LOCKFS_KEY is the key (jobs/env)"
like "$f1" '^[1-9][0-9]*$' "LOCKFS_FENCE is a positive integer ($f1)"
is "$o" run-a "LOCKFS_OWNER is A's owner name"
run_r "$A/jobs/env" -- sh -c 'printf "%s" "$LOCKFS_FENCE"'
f2=$OUT
ok "$([ "${f2:-0}" -gt "${f1:-0}" ] 2>/dev/null && echo 0)" \
	"the next run on A gets a larger fence ($f1 < $f2)"
run_r "$B/jobs/env" -- sh -c 'printf "%s|%s" "$LOCKFS_FENCE" "$LOCKFS_OWNER"'
IFS='|' read -r f3 o <<<"$OUT"
ok "$([ "${f3:-0}" -gt "${f2:-0}" ] 2>/dev/null && echo 0)" \
	"the next run, on B, gets a larger one still ($f2 < $f3)"
is "$o" run-b "... and B's owner name"
run_r "$A/st" -- sh -c 'for f in /proc/$$/fd/*; do readlink "$f"; done'
unlike "$OUT" "mnt-a/st" "the command does not inherit the lock file"
run_r "$A/st" -- sh -c 'echo "$$ $(ps -o pgid= -p $$ | tr -d " ")"'
read -r cpid cpgid <<<"$OUT"
is "$cpgid" "$cpid" "the command leads a process group of its own"
mkdir -p "$WORK/plainfs"
run_r "$WORK/plainfs/lk" -- sh -c 'printf "%s|%s|%s" "$LOCKFS_KEY" "$LOCKFS_FENCE" "$LOCKFS_OWNER"'
is "$RC|$OUT" "0|$WORK/plainfs/lk||" "on another file system: LOCKFS_KEY is the path, no fence or owner"
flock "$WORK/plainfs/busy" sleep 10 &
fl=$!
track_pid "$fl"
wait_for 5 eval 'flock -n "$WORK/plainfs/busy" true; [ $? = 1 ]'
run_r -n -E 0 "$WORK/plainfs/busy" -- touch "$WORK/ran-plain"
is "$RC|$(test -e "$WORK/ran-plain" && echo ran)" "0|" \
	"on another file system, -n -E 0 on a held lock: 0, and the command did not run"
kill "$(ps -o pid= --ppid "$fl")" "$fl" 2>/dev/null

# ---- the lock is held while the command runs, and only then --------------------
spawn x1 "$A/x" -- "$H" "$WORK/x1"
ready x1
ok $? "the command runs"
txt=$(cat "$B/x" 2>&1)
is "$(field "$txt" state)" held "while it runs, B sees x held"
is "$(field "$txt" owner)" run-a "... by A"
like "$(field "$txt" holder)" 'cmd=lockfs-run$' "... by lockfs-run"
is "$(field "$txt" fence)" "$(sed -n 2p "$WORK/x1.env")" "... with the fence the command got"
go x1
finish x1
is "$RC" 0 "lockfs-run exits 0 with its command"
ok "$([ ! -e "$B/x" ] && [ ! -e "$A/x" ] && echo 0)" "right after, x is gone on both mounts"
ok "$(in_status "$A" x || echo 0)" "... and A holds nothing for it (no ghost lock)"
run_r -n "$B/x" -- true
is "$RC" 0 "B takes x at once"

# ---- -n and -w on a lock held on B --------------------------------------------
spawn hb "$B/busy" -- "$H" "$WORK/hb"
ready hb
ok $? "B's lockfs-run holds busy"
run_r -n "$A/busy" -- touch "$WORK/ran-n"
is "$RC" 75 "-n on a held lock: 75"
ok "$([ "$MS" -lt 1500 ] && echo 0)" "... at once ($MS ms)"
is "$ERR" "lockfs-run: $A/busy is locked by another holder (busy; -n)" "... with one line"
ok "$([ ! -e "$WORK/ran-n" ] && echo 0)" "... and the command did not run"
run_r -n -E 9 "$A/busy" -- true
is "$RC" 9 "-n -E 9: 9"
run_r -w 1 "$A/busy" -- touch "$WORK/ran-w"
is "$RC" 75 "-w 1 on a held lock: 75"
ok "$(between "$MS" 800 3000 && echo 0)" "... after about 1 s ($MS ms)"
is "$ERR" "lockfs-run: $A/busy is still locked after 1 s (timed out; -w 1)" "... with one line"
ok "$([ ! -e "$WORK/ran-w" ] && echo 0)" "... and the command did not run"
ok "$(in_status "$A" busy || echo 0)" "... and A holds nothing for busy (no lock left behind)"
run_r -w 0.3 -E 0 "$A/busy" -- true
is "$RC" 0 "-w 0.3 -E 0: 0"
# -E 0 makes "busy" look like success to cron; it must still not run the
# command (flock -n -E 0 does not): the marker it would create stays absent.
run_r -n -E 0 "$A/busy" -- touch "$WORK/ran-n0"
is "$RC" 0 "-n -E 0 on a held lock: 0"
ok "$([ ! -e "$WORK/ran-n0" ] && echo 0)" "... and the command did not run"
is "$ERR" "lockfs-run: $A/busy is locked by another holder (busy; -n)" "... with the busy line only"
run_r -w 1 -E 0 "$A/busy" -- touch "$WORK/ran-w0"
is "$RC" 0 "-w 1 -E 0 on a held lock: 0"
ok "$([ ! -e "$WORK/ran-w0" ] && echo 0)" "... and the command did not run"
is "$ERR" "lockfs-run: $A/busy is still locked after 1 s (timed out; -w 1)" "... with the timeout line only"
run_r -w 0 -E 0 "$A/busy" -- touch "$WORK/ran-w00"
is "$RC|$(test -e "$WORK/ran-w00" && echo ran)" "0|" "-w 0 -E 0: 0, and the command did not run"
ok "$(in_status "$A" busy || echo 0)" "... and A holds nothing for busy"
is "$(field "$(cat "$B/busy")" owner)" run-b "B still holds busy"

# SIGTERM while waiting ends the wait; nothing is left behind.
spawn wt "$A/busy" -- touch "$WORK/ran-t"
sleep 0.5
ok "$(alive "$PID" && echo 0)" "a lockfs-run without -w waits"
kill -TERM "$PID"
finish wt 5
is "$RC" 143 "SIGTERM while waiting: lockfs-run dies of it"
ok "$([ ! -e "$WORK/ran-t" ] && ! in_status "$A" busy && echo 0)" \
	"... without running the command or holding busy"

# A waiter gets the lock within a poll interval after the holder exits.
spawn wa "$A/busy" -- "$H" "$WORK/wa" 4
sleep 0.5
ok "$([ ! -e "$WORK/wa.ready" ] && echo 0)" "another waiter waits"
go hb
finish hb
is "$RC" 0 "B's lockfs-run exits 0 when its command is done"
t_rel=$END
ready wa
ok $? "the waiter runs its command"
t_got=$(now_ms)
ok "$([ $((t_got - t_rel)) -lt 1500 ] && echo 0)" \
	"... within a poll interval of the release ($((t_got - t_rel)) ms)"
fb=$(sed -n 2p "$WORK/hb.env") fw=$(sed -n 2p "$WORK/wa.env")
ok "$([ "${fw:-0}" -gt "${fb:-0}" ] 2>/dev/null && echo 0)" \
	"... with a larger fence than B's holder ($fb < $fw)"
is "$(field "$(cat "$B/busy")" owner)" run-a "B sees A holding busy"
txt=$(cat "$A/busy")
is "$(field "$txt" fence)" "$fw" "the lock's fence is the waiter's LOCKFS_FENCE"
go wa
finish wa
is "$RC" 4 "the waiter exits with its command's status (4)"
ok "$([ ! -e "$B/busy" ] && echo 0)" "busy is gone on B right after"

# ---- signals reach the command's process group -------------------------------
for sig in TERM HUP; do
	spawn s "$A/sig" -- sh -c 'trap "exit 42" '"$sig"'; touch "$0.ready"; while :; do sleep 0.1; done' "$WORK/s"
	ready s
	kill -"$sig" "$PID"
	finish s 5
	is "$RC" 42 "SIG$sig to lockfs-run reaches the command (its trap exits 42)"
done
spawn s "$A/sig" -- sh -c 'sleep 20 & echo $! >"$0.gc"; touch "$0.ready"; wait' "$WORK/s"
ready s
gc=$(cat "$WORK/s.gc")
kill -TERM "$PID"
finish s 5
is "$RC" 143 "SIGTERM to lockfs-run: the command dies of it (143)"
ok "$(wait_for 3 eval '! alive '"$gc" && echo 0)" "... and so does its background child"
ok "$(in_status "$A" sig || echo 0)" "... and the lock is released"
# lockfs-run killed outright (SIGKILL, the OOM killer): its lock goes with
# its open file, so the command must not run on without it. It ran on
# (and B took the key at once) before the parent-death signal.
spawn s "$A/sig" -- sh -c 'echo $$ >"$0.cmd"; touch "$0.ready"; exec sleep 60' "$WORK/s"
ready s
cmd=$(cat "$WORK/s.cmd")
track_pid "$cmd"
kill -KILL "$PID"
finish s 5
ok "$(wait_for 3 eval '! alive '"$cmd" && echo 0)" "lockfs-run SIGKILLed: its command is killed with it"
ok "$(wait_for 3 eval '! in_status "$A" sig' && echo 0)" "... and the lock is released"

# ---- usage errors and unusable lock files ---------------------------------------
for args in "" "-n" "$A/u" "$A/u --" "-w abc $A/u -- true" "-w -1 $A/u -- true" \
	"-w 1.2345 $A/u -- true" "-n -w 1 $A/u -- true" "-E 256 $A/u -- true" \
	"--signal NOPE $A/u -- true" "--grace x $A/u -- true" "--bogus $A/u -- true" \
	"$A/u -n -- true" "--signal STOP $A/u -- true" "--signal SIGCHLD $A/u -- true" \
	"--signal cont $A/u -- true" "--signal 32 $A/u -- true" "-E +5 $A/u -- true" \
	"-E 0x5 $A/u -- true"; do
	# shellcheck disable=SC2086
	run_r $args
	if [ "$RC" = 64 ] && [ "$(wc -l <"$WORK/r.err")" = 1 ] &&
		[[ $ERR == "lockfs-run: "*"see --help)" ]]; then
		pass "usage error '${args//$WORK/W}': 64, one line"
	else
		flunk "usage error '${args//$WORK/W}': 64, one line"
		diag "status $RC, stderr: $ERR"
	fi
done
run_r -E ' 5' "$A/u" -- true
is "$RC" 64 "-E ' 5' (a blank before the number): 64, as -w ' 1' is"
run_r "$A/nodir/x" -- true
is "$RC|$ERR" "69|lockfs-run: cannot open $A/nodir/x: No such file or directory" \
	"a lock file in a missing directory: 69, one line"
run_r "$WORK/nodir/x" -- true
is "$RC|$ERR" "69|lockfs-run: cannot open $WORK/nodir/x: No such file or directory" \
	"... on another file system too"
: >"$WORK/afile"
run_r "$WORK/afile/x" -- true
is "$RC|$ERR" "69|lockfs-run: cannot open $WORK/afile/x: Not a directory" \
	"a path through a file: 69 (Not a directory)"
run_r --version
is "$RC|$OUT" "0|lockfs-run $("$L" --version | sed -n '1s/^lockfs \([^ ]*\).*/\1/p')" \
	"--version: lockfs-run and the version of lockfs"
run_r --help
miss=
for w in -n --nonblock -s --shared -w --wait -E --conflict-exit-code --signal --grace --help \
	--version LOCKFS_KEY LOCKFS_FENCE LOCKFS_OWNER ' 64 ' ' 69 ' ' 75 ' ' 76 '; do
	[[ $OUT == *"$w"* ]] || miss+="$w "
done
is "$RC|$miss" "0|" "--help: every option, the environment and the exit codes"

# ---- losing the lock --------------------------------------------------------------
# On a DynamoDB Local of this file alone, paused past the safe period.
if ! start_ddb_private || ! new_table; then
	echo "Bail out! cannot start a private DynamoDB Local"
	exit 1
fi
mount_start l "owner=run-l,lease=3,heartbeat=0.5,safe_period=1.5,$OPT" ||
	{ echo "Bail out! cannot mount L"; exit 1; }
M=$(mnt l)
spawn l1 "$M/l1" -- sleep 60
spawn l2 "$M/l2" -- "$WORK/victim.sh" "$WORK/l2" term
spawn l3 --grace 1 "$M/l3" -- "$WORK/victim.sh" "$WORK/l3" ignore
spawn l4 --signal KILL "$M/l4" -- "$WORK/victim.sh" "$WORK/l4" ignore
ready l2 && ready l3 && ready l4 && wait_for 10 in_status "$M" l1
ok $? "four commands run under locks on L"
# flock(1) holds pq on L; a lockfs-run on L waits for it. flock(1) does not
# notice the loss and keeps its file open (bound to its lost lock).
flock "$M/pq" sleep 25 &
fpid=$!
track_pid "$fpid"
wait_for 10 in_status "$M" pq
ok $? "flock(1) holds pq on L"
spawn q -w 25 "$M/pq" -- "$H" "$WORK/q"
sleep 1 # a few good heartbeats
kill -STOP "$PRIV_PID"
t_stop=$(now_ms)
finish l1 10
is "$RC" 76 "DynamoDB paused: lockfs-run -- sleep 60 exits 76"
ok "$(between $((END - t_stop)) 500 4500 && echo 0)" \
	"... about a safe period after the pause ($((END - t_stop)) ms)"
# The daemon reports the loss at the end of the safe period, and at that
# moment lockfs-run's own clock ends its trust too: either may say it.
like "$(cat "$WORK/l1.err")" "^lockfs-run: lost the lock on $M/l1 \(key l1\) while the command ran( \(no renewal confirmed within its safe period: DynamoDB out of reach, or the daemon stopped or hung\))?; sending SIGTERM to process group [0-9]+" \
	"... saying it lost the lock, in one line"
finish l2 10
is "$RC" 76 "a command that exits 0 on SIGTERM: still 76"
tt=$(cat "$WORK/l2.term" 2>/dev/null)
ok "$(between $((${tt:-0} - t_stop)) 500 4500 && echo 0)" \
	"... it got SIGTERM within safe_period + margin ($((${tt:-0} - t_stop)) ms)"
ok "$(wait_for 3 eval '! alive '"$(cat "$WORK/l2.grandchild")" && echo 0)" \
	"... and so did its own child (the whole process group)"
finish l4 10
is "$RC" 76 "--signal KILL: 76"
ok "$(between $((END - t_stop)) 500 4500 && echo 0)" \
	"... at once, though the command ignores SIGTERM ($((END - t_stop)) ms)"
like "$(cat "$WORK/l4.err")" "sending SIGKILL to process group [0-9]+$" "... saying SIGKILL"
ok "$([ ! -e "$WORK/l4.term" ] && echo 0)" "... and no SIGTERM was sent"
ok "$(wait_for 3 eval '! alive '"$(cat "$WORK/l4.grandchild")" && echo 0)" \
	"... its child got SIGKILL too"
finish l3 10
is "$RC" 76 "--grace 1, a command that ignores SIGTERM: 76"
tt=$(cat "$WORK/l3.term" 2>/dev/null)
ok "$(between $((END - ${tt:-0})) 800 3000 && echo 0)" \
	"... killed about 1 s after its SIGTERM ($((END - ${tt:-0})) ms)"
like "$(grep -v '^lockfs-run: lost' "$WORK/l3.err" | grep '^lockfs-run')" "^lockfs-run: the command still runs 1 s after losing the lock; sending SIGKILL to process group [0-9]+$" \
	"... saying so in a second line"
ok "$(wait_for 3 eval '! alive '"$(cat "$WORK/l3.grandchild")" && echo 0)" \
	"... and its child, which ignored SIGTERM too, got SIGKILL"
kill -CONT "$PRIV_PID"
t_cont=$(now_ms)
# The waiter gets pq once the lost holder's row is gone; the loss of that
# other holder (whose lock its file may have been opened on) is not its own.
ready q
ok $? "after the outage the lockfs-run waiting behind the lost flock(1) runs ($(($(now_ms) - t_cont)) ms)"
is "$(field "$(cat "$M/pq")" state)|$(sed -n 2p "$WORK/q.env")" "held|$(field "$(cat "$M/pq")" fence)" \
	"... holding pq, with its fence in LOCKFS_FENCE"
go q
finish q
is "$RC|$(cat "$WORK/q.err")" "0|" "... and exits 0: another holder's loss is not its loss"
kill "$(ps -o pid= --ppid "$fpid")" "$fpid" 2>/dev/null
run_r -w 20 "$M/l1" -- sh -c 'printf %s "$LOCKFS_FENCE"'
is "$RC" 0 "after the outage lockfs-run takes l1 again"
mount_stop l

# ---- a stopped daemon ---------------------------------------------------------
# Mount S (through the proxy, 2 ms each way; lease=3, safe_period=1.5) is
# frozen (SIGSTOP) while lockfs-run runs a command under its lock: the
# daemon can report nothing, so lockfs-run ends the lock's trust by its own
# clock (LOCKFS_IOC_TRUST_MS, counted from when it asked) and stops the
# command within the safe period and a margin, before mount U can take the
# key (a lease of U's clock after the last heartbeat). Thawed, S lets go.
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start s "owner=run-s,lease=3,heartbeat=0.5,safe_period=1.5,$OPT" &&
	mount_start u "owner=run-u,lease=3,heartbeat=0.5,safe_period=1.5,$OPT" ||
	{ echo "Bail out! cannot mount S and U"; exit 1; }
S=$(mnt s) U=$(mnt u)
proxy_ctl latency 2 >/dev/null
spawn s1 "$S/s1" -- "$WORK/victim.sh" "$WORK/s1" term
ready s1
ok $? "a command runs under s1 on S"
tm=$("$T" trust "$S/s1")
ok "$([[ $tm =~ ^[0-9]+$ ]] && between "$tm" 1 1500 && echo 0)" \
	"S: LOCKFS_IOC_TRUST_MS on its lock file is the trust left, at most the safe period ($tm)"
is "$("$T" trust "$U/s1")" ENODATA "... ENODATA on U, which does not hold it"
is "$("$T" trust "$WORK/victim.sh")" ENOTTY "... ENOTTY on another file system"
sleep 1 # a few good heartbeats
kill -STOP "$(daemon_pid s)"
t_stop=$(now_ms)
t_taken=
while [ $(($(now_ms) - t_stop)) -lt 10000 ]; do
	if [ "$("$T" open "$U/s1" O_CREAT,O_EXCL,O_RDONLY 0644)" = 0 ]; then
		t_taken=$(now_ms)
		break
	fi
	sleep 0.1
done
tt=$(cat "$WORK/s1.term" 2>/dev/null)
ok "$([ -n "$tt" ] && between $((tt - t_stop)) 0 2500 && echo 0)" \
	"S frozen: the command gets SIGTERM within the safe period and a margin ($((${tt:-0} - t_stop)) ms)"
ok "$([ -n "$tt" ] && [ -n "$t_taken" ] && [ "$tt" -lt "$t_taken" ] && echo 0)" \
	"... before U takes s1 ($((${t_taken:-0} - t_stop)) ms after the freeze)"
like "$(cat "$WORK/s1.err")" "^lockfs-run: lost the lock on $S/s1 \(key s1\) while the command ran \(no renewal confirmed within its safe period: DynamoDB out of reach, or the daemon stopped or hung\); sending SIGTERM to process group [0-9]+" \
	"... saying so, in one line"
kill -CONT "$(daemon_pid s)"
finish s1 15
is "$RC" 76 "S thawed: lockfs-run exits 76"
is "$(field "$(cat "$U/s1")" owner)" run-u "s1 stays U's"
mount_stop s
mount_stop u
mount_stop a
mount_stop b
