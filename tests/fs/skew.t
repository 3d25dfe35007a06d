#!/usr/bin/env bash
# skew.t: a holder whose wall clock is 2 h behind (libfaketime, FAKETIME=-7200s,
# on mount A's daemon only) keeps its lock (doc/semantics.md, principle 3:
# no host clock can get a live lock deleted by the table's TTL). lockfs
# writes the row's expiry_time (the TTL attribute), acquire and heartbeat
# times in DynamoDB's time, learned from the Date of its answers, not in the
# host's: the row read straight from DynamoDB (boto3) expires about an hour
# after the real time, and A's lock file's text shows real times, while
# stat shows them in each host's clock (A's 2 h behind, B's real). DynamoDB Local's
# TTL sweep deletes rows whose expiry_time has passed within about 7 s: 12 s
# later the row is still there with the same version, A's holder confirms
# with fsync (a synchronous conditional heartbeat: 0), and mount B's
# O_CREAT|O_EXCL gets EEXIST. A logs how far its clock is from DynamoDB's.
# Then a mount whose heartbeats meet refusals dated two days back (below).
# (With the host's clock, expiry_time was an hour in the past and the row
# vanished within seconds; B then took the key.)
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
PYLOCK=$_root/tests/interop/pylock.py
FAKETIME_LIB=${LOCKFS_FAKETIME_LIB:-}
if [ -z "$FAKETIME_LIB" ]; then
	for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
		[ -f "$f" ] && { FAKETIME_LIB=$f; break; }
	done
fi
need() {  # WHY: skip without it, except on CI where it must be installed
	if [ "${CI:-}" = true ]; then
		echo "Bail out! $1 (contrib/install-deps test installs it)"
		exit 1
	fi
	skip_all "$1"
}
[ -n "$FAKETIME_LIB" ] && [ -f "$FAKETIME_LIB" ] ||
	need "libfaketime is missing (Debian package faketime)"
[ -x "$PY" ] && "$PY" -c 'import boto3' 2>/dev/null ||
	need "python3-boto3 is missing"

plan 24

new_table || { echo "Bail out! cannot create a table"; exit 1; }
export PYLOCK_TABLE=$TABLE LOCKFS_DDB_ENDPOINT=$ENDPOINT
py() { timeout 30 "$PY" "$PYLOCK" "$@" 2>>"$WORK/pylock.err"; }
sv() { sed -n "s/^$1=//p" <<<"$show"; }

SKEW_S=7200
# FAKETIME_DONT_FAKE_MONOTONIC: only the wall clock moves. libfaketime 0.9.10
# also rewrites the deadlines of pthread_cond_timedwait on CLOCK_MONOTONIC
# by the offset (every timed wait returns at once) unless
# FAKETIME_FORCE_MONOTONIC_FIX=0. ASan wants to come first among the
# preloaded libraries; it does not mind libfaketime before it.
MOUNT_ENV="LD_PRELOAD=$FAKETIME_LIB FAKETIME=-${SKEW_S}s FAKETIME_DONT_FAKE_MONOTONIC=1"
MOUNT_ENV+=" FAKETIME_FORCE_MONOTONIC_FIX=0"
MOUNT_ENV+=" ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
mount_start a "owner=skew-a,entry_timeout=0,attr_timeout=0" ||
	{ echo "Bail out! cannot mount with libfaketime"; exit 1; }
MOUNT_ENV=
mount_start b "owner=skew-b,entry_timeout=0,attr_timeout=0" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)

# The daemon really runs 2 h behind (the same preload on date(1)).
fake_now=$(env LD_PRELOAD="$FAKETIME_LIB" FAKETIME=-${SKEW_S}s date +%s)
off=$(($(date +%s) - fake_now))
ok "$([ "$off" -ge $((SKEW_S - 5)) ] && [ "$off" -le $((SKEW_S + 5)) ] && echo 0)" \
	"libfaketime puts a process 2 h behind ($off s)"

hold_start h --pgrp "$A/job" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "A (clock 2 h behind) acquires job"
t_acq=$(date +%s)

# The row as DynamoDB has it.
show=$(py show job)
is "$?/$(head -n 1 <<<"$show")" "0/lock_key=job" "the row is in the table"
et=$(sv expiry_time)
rvn=$(sv record_version_number)
diag "expiry_time - real now at acquire: $((et - t_acq)) s"
ok "$([ "$((et - t_acq))" -ge 3000 ] && [ "$((et - t_acq))" -le 3700 ] && echo 0)" \
	"expiry_time is about an hour after the real time ($((et - t_acq)) s), not an hour before"

# The lock file's times are DynamoDB's too (acquired within a minute of the
# real time, not 2 h before).
hold_cmd h read
acq_ms=$(rfc_ms "$(field "$HOUT" acquired)")
d=$(((acq_ms / 1000) - t_acq))
ok "$([ "${d#-}" -le 60 ] && echo 0)" "acquired: is the real time ($d s off)"

# stat shows those times in each host's own clock, as its other files'
# (ls -l, find -mmin, test -nt compare them): on A, 2 h behind the real
# time (it showed the real time, 2 h in A's future); on B, the real time.
d=$(($(stat -c %Y "$A/job") - $(date +%s) + SKEW_S))
ok "$([ "${d#-}" -le 10 ] && echo 0)" \
	"A's stat: mtime in A's clock, 2 h behind the real time ($d s off)"
d=$(($(stat -c %Z "$A/job") - t_acq + SKEW_S))
ok "$([ "${d#-}" -le 10 ] && echo 0)" \
	"A's stat: ctime (acquired) in A's clock ($d s off)"
d=$(($(stat -c %Y "$B/job") - $(date +%s)))
ok "$([ "${d#-}" -le 10 ] && echo 0)" \
	"B's stat of A's lock: mtime in B's clock, the real time ($d s off)"

like "$(cat "$WORK/daemon-a.log")" "clock.*(719[0-9]|720[0-9])\.[0-9]{3} s behind DynamoDB's" \
	"A logs that its clock is 2 h behind DynamoDB's"

# DynamoDB Local's TTL sweep deletes past rows within about 7 s: give it 12.
sleep 12

show=$(py show job)
is "$?/$(head -n 1 <<<"$show")" "0/lock_key=job" \
	"12 s later the row is still in the table (not deleted by TTL)"
is "$(sv owner_name)" skew-a "... owned by A"
ok "$([ "$(sv expiry_time)" -ge $(($(date +%s) + 3000)) ] 2>/dev/null && echo 0)" \
	"... and its expiry_time is still an hour ahead"
hold_cmd h fsync
is "$HOUT" 0 "A's holder: fsync (a synchronous heartbeat) says the lock is still ours"
show=$(py show job)
unlike "$(sv record_version_number)" "^($rvn)?$" "the heartbeat wrote a new version"
ok "$([ "$(sv expiry_time)" -ge $(($(date +%s) + 3000)) ] 2>/dev/null && echo 0)" \
	"the heartbeat's expiry_time is an hour ahead of the real time too"
expect EEXIST open "$B/job" O_CREAT,O_EXCL,O_RDONLY 0644
hold_cmd h read
is "$(field "$HOUT" state)" held "A's holder still reads state: held"

hold_stop h
mount_stop a

# ---- odd refusals: a Date two days old ---------------------------------------
# Mount C, through lockfs-faultproxy, holds odd; four of its heartbeats are
# refused for their signing time ("Signature expired") with a Date two
# days old, a time none of its accepted answers agrees with. It keeps its
# clock: the row's expiry_time stays an hour ahead, the TTL sweep leaves
# it, B cannot take the key, and C's holder still holds it. (C took the
# first refusal's Date for DynamoDB's time: the next heartbeat wrote an
# expiry_time two days old, the sweep deleted the row and B took the key
# while C's holder trusted it.)
proxy_start || { echo "Bail out! cannot start lockfs-faultproxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start c \
	"owner=skew-c,entry_timeout=0,attr_timeout=0,lease=12,heartbeat=1,safe_period=8" ||
	{ echo "Bail out! cannot mount c"; exit 1; }
C=$(mnt c)
hold_start o --pgrp "$C/odd" O_CREAT,O_EXCL,O_RDWR 0644
sleep 2 # some accepted heartbeats first
proxy_ctl odd-time 4 UpdateItem >/dev/null
four_refused() { [ "$(proxy_injected)" -ge 4 ]; }
wait_for 20 four_refused
sleep 9 # a heartbeat after them, and the TTL sweep's 7 s
show=$(py show odd)
ok "$([ "$(sv expiry_time)" -ge $(($(date +%s) + 3000)) ] 2>/dev/null && echo 0)" \
	"after 4 refusals dated two days back ($(proxy_injected) injected): odd's expiry_time is still an hour ahead ($(sv expiry_time))"
expect EEXIST open "$B/odd" O_CREAT,O_EXCL,O_RDONLY 0644
hold_cmd o read
is "$(field "$HOUT" state)" held "C's holder still reads state: held"
like "$(cat "$WORK/daemon-c.log")" "far behind the time recent answers agree on: taken for an odd answer, clock kept" \
	"C's log says it took the refusal for an odd answer"
hold_stop o
mount_stop c
mount_stop b
