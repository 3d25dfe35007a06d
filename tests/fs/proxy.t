#!/usr/bin/env bash
# proxy.t: lockfs behind lockfs-faultproxy (tests/tools/faultproxy.c), a
# userspace proxy between the mount and DynamoDB Local that adds latency and
# injects faults. Checks that the proxy does what it says (delays, counts
# requests by operation, injects exactly N faults) and how lockfs copes:
# acquires retried past throttles and HTTP 500s; reads fail with EIO within
# a bounded time while connections are refused, and work again after; a
# stall past the safe period loses the lock for good (state: lost, fsync
# EIO) and another mount gets it; a release or an acquire whose reply is
# lost after it landed leaves no orphan; a mkdir whose reply is lost after
# it landed returns 0 (four at once), and of two mounts making one name at
# once exactly one succeeds; so does an rmdir whose reply hangs after it
# landed; a heartbeat whose reply hangs is retried within the safe period;
# blocking flocks whose first tries meet HTTP 500s wait on and get the key;
# cat and ls whose reads are answered by a proxy's page ask again; a data
# write whose reply is lost or is a page is told it landed.
. "$(dirname "$0")/lib.sh"

plan 92

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start lockfs-faultproxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=proxy-a" ||
	{ echo "Bail out! cannot mount through the proxy"; exit 1; }
A=$(mnt a)

# snap: takes the proxy's stats into STATS; stat_of NAME: the counter NAME
# in them (0 when absent).
snap() { STATS=$(proxy_ctl stats); }
stat_of() {
	local v
	v=$(grep -o " $1=[0-9]*" <<<"$STATS" | cut -d= -f2)
	echo "${v:-0}"
}

# cycle KEY: one acquire + release through mount a; prints its ms.
cycle() {
	local t0 o u
	t0=$(now_ms)
	o=$(timeout --foreground 20 "$T" open "$A/$1" O_CREAT,O_EXCL,O_RDONLY 0644)
	u=$(timeout --foreground 20 "$T" unlink "$A/$1")
	[ "$o" = 0 ] && [ "$u" = 0 ] || { echo "failed:$o:$u"; return 1; }
	echo $(($(now_ms) - t0))
}

min() { printf '%s\n' "$@" | sort -n | head -n 1; }

# ---- the control socket --------------------------------------------------
like "$(proxy_ctl stats)" '^ok conns=[0-9]+ requests=[0-9]+ forwarded=[0-9]+ injected=0( |$)' \
	"stats answers ok with the counters"
out=$(proxy_ctl frobnicate 1)
is "$?:$out" "1:error: unknown command frobnicate" "an unknown command is an error (status 1)"
# the mount's preflight went through the proxy
snap
ok "$([ "$(stat_of DescribeTable)" -ge 1 ] && echo 0)" "the mount's preflight went through the proxy"

# ---- latency -------------------------------------------------------------
cycle warm >/dev/null
snap
puts=$(stat_of PutItem) dels=$(stat_of DeleteItem)
proxy_ctl latency 5 >/dev/null
is "$?" 0 "latency 5: ok"
t5=$(cycle lat)
ok "$([ "${t5%%[!0-9]*}" ] && [ "$t5" -ge 20 ] && echo 0)" \
	"latency 5: an acquire + release cycle (2+ requests) takes >= 20 ms ($t5 ms)"
proxy_ctl latency 100 >/dev/null
t100=$(cycle lat)
ok "$([ "${t100%%[!0-9]*}" ] && [ "$t100" -ge 400 ] && echo 0)" \
	"latency 100: a cycle takes >= 400 ms ($t100 ms)"
proxy_ctl latency 0 >/dev/null
t0a=$(cycle lat) t0b=$(cycle lat) t0c=$(cycle lat)
m0=$(min "$t0a" "$t0b" "$t0c")
ok "$([ "${t100%%[!0-9]*}" ] && [ "${m0%%[!0-9]*}" ] && [ $((m0 + 200)) -lt "$t100" ] && echo 0)" \
	"latency 0: fast again (best of 3: $m0 ms; with latency 100: $t100 ms)"
snap
is "$(($(stat_of PutItem) - puts))" 5 "stats count the 5 PutItems of 5 acquires"
is "$(($(stat_of DeleteItem) - dels))" 5 "stats count the 5 DeleteItems of 5 releases"

# ---- injected DynamoDB errors: retried -----------------------------------
# No lock is held here, so the next request is the acquire's own.
out=$(proxy_ctl http500 1)
is "$out" "ok http500 1" "http500 1: ok"
expect 0 open "$A/h5" O_CREAT,O_EXCL,O_RDONLY 0644
snap
is "$(stat_of injected)" 1 "... one request was answered with HTTP 500 (injected=1)"
is "$(field "$("$T" read "$A/h5")" state)" held "... and h5 is held"

snap
puts=$(stat_of PutItem)
proxy_ctl throttle 2 PutItem >/dev/null
expect 0 open "$A/th" O_CREAT,O_EXCL,O_RDONLY 0644
snap
is "$(stat_of injected)" 3 "throttle 2 PutItem: both throttles injected (injected=3)"
is "$(($(stat_of PutItem) - puts))" 3 "... the acquire's PutItem was sent 3 times"
is "$(field "$("$T" read "$A/th")" owner)" proxy-a "... and th is ours"

# A call that fails for good is said in the log with DynamoDB's own words,
# not only its errno (the caller's line said "Input/output error (EIO)").
proxy_ctl http500 1000 PutItem >/dev/null
expect EIO open "$A/h500" O_CREAT,O_EXCL,O_RDONLY 0644
proxy_ctl clear >/dev/null
like "$(cat "$WORK/daemon-a.log")" "warning ddb: PutItem failed after [0-9]+ attempts: .*InternalServerError" \
	"... and a's log names DynamoDB's error"

# ---- connections reset, refused -----------------------------------------
proxy_ctl reset >/dev/null
is "$(field "$("$T" read "$A/th")" state)" held "reset: the next read works (new connection)"

proxy_ctl drop on >/dev/null
t0=$(now_ms)
err=$(timeout 60 cat "$A/th" 2>&1 >/dev/null)
rc=$?
el=$(($(now_ms) - t0))
ok "$([ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && echo 0)" "drop on: cat of a lock fails (status $rc)"
like "$err" 'Input/output error|Connection|timed out' "... with an error ($err)"
ok "$([ "$el" -lt 20000 ] && echo 0)" "... within 20 s ($el ms)"
proxy_ctl drop off >/dev/null
t0=$(now_ms)
got=$(timeout 60 cat "$A/th" 2>&1)
is "$?:$(field "$got" state)" "0:held" "drop off: cat works again ($(($(now_ms) - t0)) ms)"
expect 0 unlink "$A/th"
expect 0 unlink "$A/h5"

# ---- a stall past the safe period: lost for good -------------------------
OPT=lease=3,heartbeat=1,safe_period=2
ENDPOINT=$PROXY_ENDPOINT mount_start s "owner=proxy-s,$OPT" &&
	mount_start b "owner=proxy-b,$OPT" ||
	{ echo "Bail out! cannot mount s or b"; exit 1; }
S=$(mnt s) B=$(mnt b)
hold_start h --pgrp "$S/st" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "s acquires st (through the proxy)"
sleep 1.2 # a heartbeat or so
proxy_ctl stall on >/dev/null
t_stall=$(now_ms)
lost_in() { grep -q "^lock: key=$2 state=lost " "$1/.lockfs/status"; }
wait_for 6 lost_in "$S" st
ok $? "stall on: s gives st up ($(($(now_ms) - t_stall)) ms after the stall began)"
hold_cmd h read 10
is "$(field "$HOUT" state)" lost "... the holder's read shows state: lost"
hold_cmd h fsync 10
is "$HOUT" EIO "... and fsync gives EIO"
# hold the stall for 4 s in all
while [ $(($(now_ms) - t_stall)) -lt 4000 ]; do sleep 0.1; done
proxy_ctl stall off >/dev/null
is "$?" 0 "stall off after 4 s"
hold_cmd h read 10
is "$(field "$HOUT" state)" lost "after stall off the holder still reads state: lost"
hold_cmd h fsync 10
is "$HOUT" EIO "... and fsync still gives EIO"
got=
t0=$(now_ms)
while [ $(($(now_ms) - t0)) -lt 8000 ]; do
	got=$("$T" open "$B/st" O_CREAT,O_EXCL,O_RDONLY 0644)
	[ "$got" = 0 ] && break
	sleep 0.1
done
is "$got" 0 "b (direct) acquires st after the stall ($(($(now_ms) - t0)) ms)"
hold_cmd h read 10
is "$(field "$HOUT" state)" lost "... and s's holder is still lost (never re-acquired)"
hold_kill h KILL
expect 0 unlink "$B/st"

# ---- a release whose reply is lost after it landed -----------------------
expect 0 open "$S/r" O_CREAT,O_EXCL,O_RDONLY 0644
snap
inj=$(stat_of injected)
proxy_ctl lose-reply 1 DeleteItem >/dev/null
err=$(timeout 30 rm "$S/r" 2>&1)
rc=$?
ok "$([ "$rc" = 0 ] || [[ $err =~ Input/output ]] && echo 0)" \
	"lose-reply 1 DeleteItem: rm returns 0 or EIO (status $rc${err:+: $err})"
snap
is "$(($(stat_of injected) - inj))" 1 "... the reply of one DeleteItem was lost"
got=
t0=$(now_ms)
while [ $(($(now_ms) - t0)) -lt 6000 ]; do
	got=$("$T" open "$B/r" O_CREAT,O_EXCL,O_RDONLY 0644)
	[ "$got" = 0 ] && break
	sleep 0.1
done
el=$(($(now_ms) - t0))
is "$got" 0 "... b acquires r afterwards ($el ms; the lease is 3 s)"
expect 0 unlink "$B/r"

# ---- an acquire whose reply is lost after it landed ----------------------
proxy_ctl lose-reply 1 PutItem >/dev/null
expect 0 open "$S/p" O_CREAT,O_EXCL,O_RDONLY 0644
snap
is "$(($(stat_of injected) - inj))" 2 "lose-reply 1 PutItem: the reply of one PutItem was lost"
is "$(field "$("$T" read "$B/p")" owner)" proxy-s "... s holds p (its retry saw its own write)"
expect 0 unlink "$S/p"

# ---- an acquire answered by a proxy's page after it landed -----------------
# A 200 that is not JSON was taken for a request never sent: the create
# failed with EIO and its row blocked the key for a lease. Now s reads the
# row back and holds the key it took. Then s and b take one key at once,
# s's answer a page: one of them holds it, the other gets EEXIST.
proxy_ctl garbage-reply 1 PutItem >/dev/null
expect 0 open "$S/g" O_CREAT,O_EXCL,O_RDONLY 0644
is "$(field "$("$T" read "$B/g")" owner)" proxy-s \
	"garbage-reply 1 PutItem: s holds g (it read its landed write back)"
expect 0 unlink "$S/g"
proxy_ctl garbage-reply 1 PutItem >/dev/null
(timeout --foreground 30 "$T" open "$S/g2" O_CREAT,O_EXCL,O_RDONLY 0644 >"$WORK/g2-s.out" 2>&1) &
rs=$!
(timeout --foreground 30 "$T" open "$B/g2" O_CREAT,O_EXCL,O_RDONLY 0644 >"$WORK/g2-b.out" 2>&1) &
rb=$!
_reap "$rs" 40
_reap "$rb" 40
got="$(head -n 1 "$WORK/g2-s.out") $(head -n 1 "$WORK/g2-b.out")"
owner=$(field "$("$T" read "$B/g2")" owner)
ok "$([ "$got/$owner" = "0 EEXIST/proxy-s" ] || [ "$got/$owner" = "EEXIST 0/proxy-b" ] && echo 0)" \
	"s and b take g2 at once (s's answer a page): one 0, one EEXIST, and the row is the winner's ($got, $owner)"
proxy_ctl clear >/dev/null
"$T" unlink "$S/g2" >/dev/null
"$T" unlink "$B/g2" >/dev/null

# ---- reads answered by a proxy's page --------------------------------------
# A read changes nothing, so one whose success cannot be read is asked
# again: cat and ls through s work with one page (or two) in the way; ls
# failed EIO at the first, cat too.
expect 0 open "$B/gr" O_CREAT,O_EXCL,O_RDONLY 0644
proxy_ctl garbage-reply 2 GetItem >/dev/null
got=$(timeout 30 cat "$S/gr" 2>&1)
is "$?:$(field "$got" owner)" "0:proxy-b" "garbage-reply 2 GetItem: cat through s shows b's lock"
snap
inj=$(stat_of injected)
proxy_ctl garbage-reply 1 Query >/dev/null
proxy_ctl garbage-reply 1 Scan >/dev/null
got=$(timeout 30 ls "$S" 2>&1)
is "$?:$(grep -cx gr <<<"$got")" "0:1" "garbage-reply 1 Query and Scan: ls through s lists gr"
snap
ok "$([ "$(($(stat_of injected) - inj))" -ge 1 ] && echo 0)" "... a page was in the way"
proxy_ctl clear >/dev/null
expect 0 unlink "$B/gr"

# ---- data writes whose reply is lost, or is a proxy's page -------------------
# The write landed (or, for the page, may not have), and its writer was told
# EIO. Now the daemon sends it once more on the same version within the
# operation's deadline and tells the writer it landed. On mount a (through the
# proxy, default heartbeat of 5 s): the lock is fresh, so the one UpdateItem
# whose reply goes is the write's, not a heartbeat's.
hold_start w "$A/wdata" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "a acquires wdata (through the proxy)"
snap
inj=$(stat_of injected)
proxy_ctl lose-reply 1 UpdateItem >/dev/null
hold_cmd w "write one-two" 30
is "$HOUT" 0 "lose-reply 1 UpdateItem: the data write gives 0"
proxy_ctl garbage-reply 1 UpdateItem >/dev/null
hold_cmd w "write 1" 30 # (written at offset 0)
is "$HOUT" 0 "garbage-reply 1 UpdateItem: the data write gives 0"
hold_cmd w fsync 30
is "$HOUT" 0 "... and fsync gives 0"
snap
is "$(($(stat_of injected) - inj))" 2 "... the two replies were lost or garbled"
is "$(field "$("$T" read "$B/wdata")" data)/$(field "$("$T" read "$B/wdata")" owner)" \
	"1ne-two/proxy-a" "... b reads the data written, a still the owner"
proxy_ctl clear >/dev/null
hold_kill w KILL
expect 0 unlink "$A/wdata"

# ---- a mkdir whose reply is lost after it landed -------------------------
# Each marker's PutItem reaches DynamoDB but its reply is lost (the
# connection reset): it is sent again and refused, the marker being there.
# That refusal names our own marker (its RVN): the directory was made once,
# by us, and mkdir returns 0 (it said EEXIST before). Four at once.
# four_at_once CMD OUT: CMD "$S/md1" ... CMD "$S/md4" at once, each bounded;
# their exit codes in WORK/OUT1.rc..., their errors in WORK/OUT1.err...
four_at_once() {
	local i p pids=()
	for i in 1 2 3 4; do
		(timeout 30 "$1" "$S/md$i" 2>"$WORK/$2$i.err"; echo $? >"$WORK/$2$i.rc") &
		pids+=($!)
	done
	for p in "${pids[@]}"; do _reap "$p" 40; done
}
snap
inj=$(stat_of injected)
proxy_ctl lose-reply 4 PutItem >/dev/null
four_at_once mkdir md
is "$(cat "$WORK"/md[1-4].rc | tr -d '\n')" 0000 \
	"lose-reply 4 PutItem, 4 mkdirs at once: each returns 0 $(cat "$WORK"/md[1-4].err)"
snap
is "$(($(stat_of injected) - inj))" 4 "... 4 PutItem replies were lost"
is "$("$T" readdir "$B" | grep -c '^md[1-4]$')" 4 "... b lists the 4 directories"
# Two mounts make one name at once, s's replies lost: one of them made it,
# the other is told EEXIST (s's own marker is known by its RVN alone).
proxy_ctl lose-reply 2 PutItem >/dev/null
(timeout 30 "$T" mkdir "$S/race" 0755 >"$WORK/race-s.out" 2>&1) &
rs=$!
(timeout 30 "$T" mkdir "$B/race" 0755 >"$WORK/race-b.out" 2>&1) &
rb=$!
_reap "$rs" 40
_reap "$rb" 40
got="$(head -n 1 "$WORK/race-s.out") $(head -n 1 "$WORK/race-b.out")"
ok "$([ "$got" = "0 EEXIST" ] || [ "$got" = "EEXIST 0" ] && echo 0)" \
	"s and b make one directory at once (s's replies lost): one 0, one EEXIST ($got)"
proxy_ctl clear >/dev/null
"$T" rmdir "$B/race" >/dev/null
# An rmdir whose DeleteItem landed but whose reply hangs: s gives up on it
# (its attempt timeout) and sends it again, which finds no marker. Sent
# more than once and nothing there: it is gone (by this rmdir, or by
# another's), and rmdir returns 0 (it said ENOENT before). Four at once.
snap
inj=$(stat_of injected)
proxy_ctl hang-reply 4 DeleteItem >/dev/null
four_at_once rmdir rd
is "$(cat "$WORK"/rd[1-4].rc | tr -d '\n')" 0000 \
	"hang-reply 4 DeleteItem, 4 rmdirs at once: each returns 0 $(cat "$WORK"/rd[1-4].err)"
snap
is "$(($(stat_of injected) - inj))" 4 "... 4 DeleteItem replies were held back"
is "$("$T" readdir "$B" | grep -c '^md[1-4]$')" 0 "... b lists none of them"
proxy_ctl clear >/dev/null

# ---- a heartbeat whose reply hangs: retried within the safe period -------
# Without a later heartbeat landing, hb would be lost 4 s after the acquire.
ENDPOINT=$PROXY_ENDPOINT mount_start w "owner=proxy-w,lease=6,heartbeat=1,safe_period=4" ||
	{ echo "Bail out! cannot mount w"; exit 1; }
W=$(mnt w)
proxy_ctl hang-reply 1 UpdateItem >/dev/null
t_acq=$(now_ms)
hold_start hw --pgrp "$W/hb" O_CREAT,O_EXCL,O_RDWR 0644
wait_for 5 eval 'snap; [ "$(stat_of injected)" -ge 3 ]'
ok $? "hang-reply 1 UpdateItem: a heartbeat's reply is held back"
while [ $(($(now_ms) - t_acq)) -lt 5000 ]; do sleep 0.1; done
hold_cmd hw read 10
is "$(field "$HOUT" state)" held "... w retried it and still holds hb 5 s after the acquire"
hold_cmd hw fsync 10
is "$HOUT" 0 "... fsync: 0"
hold_stop hw

# ---- blocking flocks whose first tries meet HTTP 500s wait on -----------
# Two open files on a (opened while b held the key, so no create), then
# b lets go, then 40 PutItems are answered 500 (past the 10 s an acquire
# tries for), then both flock(2) the key at once: the first try fails,
# and the flock waits on and gets the key; the second gets it once the
# first lets go. Before, the first flock(2) failed with EIO (and flock(1)
# then gave up).
hold_start ob "$B/outage" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "b holds outage"
wait_for 10 test -e "$A/outage"
hold_start o1 "$A/outage" O_RDONLY
hold_start o2 "$A/outage" O_RDONLY
rm "$B/outage"
hold_stop ob
wait_for 10 sh -c "! test -e '$A/outage'"
proxy_ctl clear >/dev/null
snap
inj0=$(stat_of injected)
proxy_ctl http500 40 PutItem >/dev/null
(hold_cmd o1 "flock ex" 60; echo "$HOUT" >"$WORK/outage-1") &
p1=$!
sleep 0.2
(hold_cmd o2 "flock ex" 60; echo "$HOUT" >"$WORK/outage-2") &
p2=$!
wait "$p1"
is "$(cat "$WORK/outage-1")" 0 \
	"a blocking flock whose first try met HTTP 500s waits on and gets the key"
snap
is "$(($(stat_of injected) - inj0))" 40 "... past the 40 HTTP 500s"
hold_cmd o1 "flock un"
wait "$p2"
is "$(cat "$WORK/outage-2")" 0 "... and the flock beside it gets it next"
hold_stop o1
hold_stop o2
wait_for 10 sh -c "! test -e '$A/outage'"
ok $? "... and it is free after them"

# ---- a file lock DynamoDB does not decide fails with ENOLCK -------------
# b holds nolck; a's open files on it try LOCK_NB, F_SETLK (a read lock) and
# F_GETLK, and flock(1) -n, while every request of a is answered HTTP 500:
# each fails with ENOLCK (as on NFS when the lock manager cannot be reached), told
# apart from a held key (EWOULDBLOCK) and from a local I/O error. Before,
# EIO, on which flock(1) reopens the file as for NFS's emulated flock.
hold_start nb "$B/nolck" O_CREAT,O_EXCL,O_RDWR 0644
wait_for 10 test -e "$A/nolck"
for n in 1 2 3; do hold_start "n$n" "$A/nolck" O_RDONLY; done
hold_cmd n1 "flock ex,nb"
is "$HOUT" EAGAIN "LOCK_NB on a key held elsewhere: EWOULDBLOCK (EAGAIN) while DynamoDB answers"
exec 9<"$A/nolck"
proxy_ctl http500 100000 >/dev/null
hold_send n1 "flock ex,nb"
hold_send n2 "setlk rd"
hold_send n3 getlk
timeout 40 flock -n 9 2>"$WORK/nolck-flock1"
echo "$?" >>"$WORK/nolck-flock1"
hold_wait n1 40
is "$HOUT" ENOLCK "... and ENOLCK while every request fails: LOCK_NB"
hold_wait n2 40
is "$HOUT" ENOLCK "... F_SETLK"
hold_wait n3 40
is "$HOUT" ENOLCK "... F_GETLK"
proxy_ctl clear >/dev/null
exec 9<&-
like "$(tr '\n' ' ' <"$WORK/nolck-flock1")" "No locks available 71 \$" \
	"... flock(1) -n: \"No locks available\", exit 71"
hold_cmd n1 "flock ex,nb"
is "$HOUT" EAGAIN "... and EWOULDBLOCK again once DynamoDB answers"
for n in 1 2 3; do hold_stop "n$n"; done
rm "$B/nolck"
hold_stop nb
wait_for 10 sh -c "! test -e '$A/nolck'"
ok $? "... nolck is free after them"

# ---- a signal ends a lookup or a create waiting on DynamoDB --------------
# Once the daemon has read a request, the kernel waits for its answer even
# for a fatal signal: a Ctrl-C'd `set -C; : > f` waited out its lookup or
# its acquire (here 3 s and 2 s). The interrupt of a caller being killed
# is answered EINTR at once; what the create took is given back when it
# ends.
proxy_ctl clear >/dev/null
proxy_ctl latency 1500 >/dev/null # each way: lookups take 3 s
s=$(now_ms)
timeout -s INT 0.5 "$T" open "$A/sig1" O_CREAT,O_EXCL,O_RDONLY 0644 >/dev/null 2>&1
took=$(($(now_ms) - s))
ok $((!(took < 1500))) "SIGINT ends an open(O_CREAT) in its lookup at once ($took ms)"
# A caught signal (a handler without SA_RESTART) does not end it: open
# would fail EINTR where a local disk never does.
"$T" hold "$A/sig3" O_CREAT,O_EXCL,O_RDONLY 0644 </dev/null >"$WORK/sig3.out" 2>&1 &
p=$!
sleep 0.5
kill -USR1 $p
wait $p
is "$(head -n 1 "$WORK/sig3.out")" "ready" "a caught signal during the lookup: the open goes on (no EINTR)"
rm -f "$A/sig3"
proxy_ctl latency 0 >/dev/null
proxy_ctl late-request 1 PutItem >/dev/null # the create's first write held
s=$(now_ms)
timeout -s INT 0.5 "$T" open "$A/sig2" O_CREAT,O_EXCL,O_RDONLY 0644 >/dev/null 2>&1
took=$(($(now_ms) - s))
ok $((!(took < 1500))) "SIGINT ends an open(O_CREAT) in its acquire at once ($took ms)"
sleep 3
proxy_ctl clear >/dev/null
wait_for 30 try_acquire "$B/sig2"
ok $? "... and the lock it took meanwhile is given back: b takes sig2"
rm -f "$B/sig2"

proxy_ctl clear >/dev/null
is "$?" 0 "clear"
mount_stop w
mount_stop s
mount_stop b
mount_stop a
