#!/usr/bin/env bash
# flock_group.t: a file lock asked for by a process whose group holds the
# key (a create under hold=pgrp, the default) whose file is closed is
# granted at once, and the key stays the group's after it: a script that took a lock with `: > f`
# and then runs `flock f cmd` waited on its own lock until the timeout.
# Processes of the group still exclude each other by their file locks; an
# outsider, on this mount or another, still waits for the group. Mount a
# is behind the fault proxy (a 20 ms round trip).
. "$(dirname "$0")/lib.sh"

plan 10

new_table || { echo "Bail out! cannot create a table"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0
proxy_start && proxy_ctl latency 10 >/dev/null &&
	ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=group-a,$OPT" &&
	mount_start b "owner=group-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)

# A script in a group of its own (setsid), as cron starts a job.
script() { timeout 60 setsid -w bash -c "$1" 2>&1; }

out=$(script ": > '$A/k1'
	flock -w 5 '$A/k1' true; echo flock=\$?
	flock -n '$B/k1' true; echo other=\$?
	test -e '$A/k1' && echo still
	rm '$A/k1'; echo rm=\$?")
is "$(echo $out)" "flock=0 other=1 still rm=0" \
	"a script's flock of the lock it created is granted; the lock stays its own"

out=$(script ": > '$A/k2'
	flock -s -w 5 '$A/k2' true; echo shared=\$?
	flock -s -n '$B/k2' true; echo reader=\$?")
is "$(echo $out)" "shared=0 reader=1" \
	"a shared request of the group is granted; no other mount's reader joins"
wait_for 10 sh -c "! test -e '$A/k2'"
ok $? "the group's end releases its lock"

# While the creating file is open, its own file lock takes the key over
# (flock(1) does): another process of the group waits for it. Lent then,
# a flock(1) loop of one script could leave its group's lock behind
# (churn.t).
out=$(script "exec 3>'$A/k6'
	flock -w 1 '$A/k6' true; echo other=\$?
	flock -w 1 3; echo own=\$?")
is "$(echo $out)" "other=1 own=0" \
	"while the creating file is open, only its own file lock gets the key"

# An outsider on the same mount waits for the group.
script ": > '$A/k3'; touch '$WORK/k3-held'; sleep 3" >/dev/null &
track_pid $!
wait_for 10 test -e "$WORK/k3-held"
timeout 10 setsid -w flock -n -E 42 "$A/k3" true
is "$?" 42 "a process outside the group does not get the group's lock"
wait_for 10 sh -c "! test -e '$A/k3'"
ok $? "(the group ends and its lock goes)"

# Four processes of the group at once: each gets the lock in turn, never
# two together (mkdir fails for a second one inside).
out=$(script ": > '$A/k4'
	for i in 1 2 3 4; do
		flock -w 20 '$A/k4' sh -c \"mkdir '$WORK/in' || exit 9
			sleep 0.2; rmdir '$WORK/in'\" &
	done
	rc=0; for j in 1 2 3 4; do wait -n || rc=\$?; done; echo all=\$rc
	flock -n '$B/k4' true; echo other=\$?")
is "$(echo $out)" "all=0 other=1" \
	"four processes of the group take its lock in turn, one at a time"

# A waiter of another mount gets the key once the group is done.
script ": > '$A/k5'; flock '$A/k5' sleep 1" >/dev/null &
gpid=$!
track_pid $gpid
wait_for 10 test -e "$A/k5"
t0=$(now_ms)
timeout 20 flock -w 15 "$B/k5" true
ok $? "a flock on another mount gets the key after the group"
ok $(($(now_ms) - t0 < 500)) "(it waited for the group: $(($(now_ms) - t0)) ms)"
wait $gpid 2>/dev/null
is "$(proxy_ctl stats >/dev/null && echo up)" up "(the proxy carried mount a's requests)"
