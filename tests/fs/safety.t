#!/usr/bin/env bash
# safety.t: regressions of the safety issue (two holders, hangs, silent
# losses), each under the condition that showed it, on real mounts through
# the fault proxy (tests/tools/faultproxy.c) in front of DynamoDB Local:
#  - flock/fcntl racing on the acquiring fd never release a granted lock;
#  - a holder that flocks its own O_CREAT lock while another process of the
#    mount waits for it gets it at once (no deadlock);
#  - a request of the lease path that hangs (an automatic release) delays
#    no other lock's renewal, and a lock's trust ends by the clock while it
#    hangs;
#  - rm of a live holder's lock from another session gives EBUSY;
#  - stopping the daemon tells the holders (lost_signal) before release;
#  - under hold=pgrp a lost lock is not silently re-acquired by its holder;
#  - a read whose renewal failed does not say "lost" of a lock still held;
#  - a name released and made a directory on the same mount is that
#    directory at once;
#  - a release on one mount is never refused by another mount's kernel
#    cache (bash's noclobber stats first);
#  - a mountpoint whose lockfs is gone refuses creates (it is immutable).
. "$(dirname "$0")/lib.sh"

plan 69

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
DIRECT=$ENDPOINT
ENDPOINT=$PROXY_ENDPOINT
FAST=lease=4,heartbeat=0.5,safe_period=2,entry_timeout=0,attr_timeout=0
mount_start a "owner=safety-a,lost_signal=USR1,$FAST" &&
	mount_start b "owner=safety-b,$FAST" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)

# ---- 1. flock/fcntl racing on the acquiring fd -------------------------------
out=$(timeout 120 "$T" race "$A/race-f" flock 300)
is "$out" "ok=600 busy=0 lost=0 other=0" \
	"300 rounds: parent and child flock the acquiring open file at once: both succeed, the key stays held"
out=$(timeout 120 "$T" race "$A/race-p" setlk 300)
is "$out" "ok=300 busy=300 lost=0 other=0" \
	"300 rounds: parent and child fcntl-lock it at once: one wins, one gets EAGAIN, the key stays held"
expect ENOENT stat "$A/race-f"
expect ENOENT stat "$A/race-p"

# ---- 5. no deadlock: the O_CREAT holder flocks its own lock ----------------
hold_start h --pgrp "$A/dl" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "h acquires dl with O_CREAT|O_EXCL"
hold_start w --pgrp "$A/dl" O_RDWR
is "$HOUT" ready "w opens dl on the same mount"
hold_send w "flock ex"
sleep 0.3
hold_cmd h "flock ex" 5
is "$HOUT" 0 "h's flock on its own holding fd returns at once, though w waits for the key"
hold_cmd h fsync
is "$HOUT" 0 "h still holds dl"
hold_cmd h "flock un"
is "$HOUT" 0 "h unlocks (releasing dl)"
hold_wait w 10
is "$HOUT" 0 "w's waiting flock is granted next"
hold_stop w
hold_stop h

# ---- 2. a hung release delays no renewal; trust ends by the clock ----------
hold_start y --pgrp "$A/y" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "y is held"
# x is held by a process group that then dies: its release hangs.
proxy_ctl hang-reply 1 DeleteItem >/dev/null
ok $? "the proxy will hang the next DeleteItem"
timeout 10 setsid bash -c ': > "$1/x"' _ "$A"
ok $? "x is acquired by a process group that ends at once"
# The automatic release of x hangs for up to the operation timeout (10 s):
# y's renewals must go on meanwhile.
sleep 4
hold_cmd y fsync
is "$HOUT" 0 "4 s (2 safe periods) into the hung release, y is still renewed (fsync 0)"
hold_cmd y read
is "$(field "$HOUT" state)" held "y reads state: held"
like "$(proxy_ctl stats)" 'injected=[1-9]' "the proxy did hang a DeleteItem"
# Now everything stalls while the release still hangs: y's trust must end
# at its safe period by the clock, and its holder must be told at once.
hold_send y "poll 8000 pri"
t0=$(now_ms)
proxy_ctl stall on >/dev/null
hold_wait y 10
t=$(($(now_ms) - t0))
like "$HOUT" 'POLLPRI' "y's holder is woken by POLLPRI during the stall"
ok "$([ "$t" -le 3500 ] && echo 0)" "... within the safe period (2 s) of its last renewal ($t ms)"
hold_cmd y read 5
is "$(field "$HOUT" state)" lost "y reads state: lost (no request needed)"
hold_cmd y fsync 5
is "$HOUT" EIO "y's fsync: EIO"
hold_cmd y signals
is "$HOUT" "USR1=1 USR2=0 HUP=0 ALRM=0" "y's group got lost_signal once"
proxy_ctl clear >/dev/null
hold_cmd y read 10
is "$(field "$HOUT" state)" lost "after the stall y still reads lost (lost is final)"
hold_stop y
t_rm=$(now_ms)
wait_for 20 sh -c '"$1" open "$2/x" O_CREAT,O_EXCL,O_RDWR >/dev/null && "$1" unlink "$2/x" >/dev/null' _ "$T" "$B"
ok $? "x is free again on B after the hung release ($(($(now_ms) - t_rm)) ms)"

# A renewal whose answer hangs is tried again within the safe period (one
# HTTP exchange may take at most a quarter of it).
hold_start hr --pgrp "$B/hung" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "hung is held on B (heartbeat 0.5 s, safe period 2 s)"
proxy_ctl hang-reply 1 UpdateItem >/dev/null
sleep 3
hold_cmd hr fsync 10
is "$HOUT" 0 "a renewal whose answer hung is retried in time: still held after 3 s"
like "$(proxy_ctl stats)" 'injected=[1-9]' "the proxy did hang an UpdateItem"
proxy_ctl clear >/dev/null
hold_stop hr

# ---- 16. a failed renewal on read does not say lost of a held lock ----------
mount_start c "owner=safety-c,entry_timeout=0,attr_timeout=0" ||
	{ echo "Bail out! cannot mount c"; exit 1; }
C=$(mnt c)
hold_start r --pgrp "$C/r" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "r is held on C (default lease)"
hold_cmd r read
like "$HOUT" $'(^|\n)fence: [0-9]+' "its first read allocates the fence"
# A renewal lands but its answer is lost (every retry too): the row now
# carries an RVN C has not confirmed.
proxy_ctl lose-reply 100 UpdateItem >/dev/null
hold_cmd r fsync 30
hold_cmd r read 30
is "$(field "$HOUT" state)" held "a read whose renewal failed says held: the lock is trusted until its safe period"
proxy_ctl clear >/dev/null
hold_cmd r read
is "$(field "$HOUT" state)" held "the next read says held"
hold_cmd r fsync
is "$HOUT" 0 "and the lock is still ours (fsync 0)"
hold_stop r

# ---- 8. hold=pgrp: a lost lock is not silently re-acquired ------------------
cat >"$WORK/job.sh" <<'EOF'
M=$1 W=$2
trap 'echo USR1 >> "$W/sig"' USR1  # mount a has lost_signal=USR1
: > "$M/job" || { echo "acquire=$?" > "$W/s1"; exit 1; }
echo acquired > "$W/s1"
i=0
while [ ! -e "$W/go" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
touch "$M/job" 2>/dev/null; echo "touch=$?" > "$W/s2"
( set -C; : > "$M/job" ) 2>/dev/null; echo "noclobber=$?" >> "$W/s2"
rm "$M/job"; echo "rm=$?" >> "$W/s2"
( set -C; : > "$M/job" ) 2>/dev/null; echo "again=$?" >> "$W/s2"
EOF
rm -f "$WORK/s1" "$WORK/s2" "$WORK/go" "$WORK/sig"
timeout 60 setsid bash "$WORK/job.sh" "$A" "$WORK" &
jobpid=$!
wait_for 10 test -s "$WORK/s1"
is "$(cat "$WORK/s1" 2>/dev/null)" acquired "a script acquires job with ': > job' (no fd kept)"
proxy_ctl stall on >/dev/null
lost_in() { grep -q "^lock: key=job state=lost " "$1/.lockfs/status"; }
wait_for 8 lost_in "$A"
ok $? "DynamoDB stalls past the safe period: job is lost"
proxy_ctl clear >/dev/null
sleep 1
# The lost row stays until a lease after its last confirmed renewal (2 s
# after the loss here), so that no other mount takes job while the script,
# told of the loss, may still run: B's acquire a second after is refused
# (a heartbeat in flight when the lock was lost used to bring the row's
# removal forward, to ~130 ms after the loss).
expect EEXIST open "$B/job" O_CREAT,O_EXCL,O_RDONLY 0644
# The proxy holds every delete from now on, so that the lost row is still
# there when the script acquires job again right after its rm (whose
# removal of the row goes on in the background): it takes over its own
# row, let go of, on that row's version, instead of being refused.
proxy_ctl late-request 100 DeleteItem >/dev/null
touch "$WORK/go"
wait_for 30 sh -c 'grep -q again "$1"' _ "$WORK/s2"
proxy_ctl clear >/dev/null
s2=$(tr '\n' ' ' <"$WORK/s2" 2>/dev/null)
like "$s2" 'touch=[1-9]' "the script's next 'touch job' fails (the loss is not hidden)"
like "$s2" 'noclobber=[1-9]' "its 'set -C; : > job' fails too"
like "$s2" 'rm=0' "its 'rm job' acknowledges the loss"
like "$s2" 'again=0' "after that it may acquire job anew"
_reap "$jobpid" 10
is "$(cat "$WORK/sig" 2>/dev/null)" USR1 "the script got lost_signal once"
# Its group is gone: the daemon notices within pgrp_poll and releases.
wait_for 10 sh -c '! test -e "$1"' _ "$A/job"
expect ENOENT stat "$A/job"

# ---- 4. rm of a live holder's lock from another session ----------------------
hold_start k --pgrp "$A/kept" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "k holds kept (a job of this session)"
out=$(timeout 20 setsid "$T" unlink "$A/kept")
is "$out" EBUSY "rm from another session (a second cron instance): EBUSY"
hold_cmd k fsync
is "$HOUT" 0 "... and k still holds kept"
like "$(cat "$WORK/daemon-a.log")" 'unlink key=kept refused \(EBUSY\)' "the refusal is logged with the holder"
expect 0 unlink "$A/kept"
hold_cmd k fsync
is "$HOUT" EIO "rm from the holder's own session releases it"
hold_stop k
mount_start b2 "owner=safety-b2,allow_break,$FAST" || { echo "Bail out! cannot mount b2"; exit 1; }
hold_start k2 --pgrp "$(mnt b2)/kept2" O_CREAT,O_EXCL,O_RDWR 0644
out=$(timeout 20 setsid "$T" unlink "$(mnt b2)/kept2")
is "$out" 0 "on a mount with allow_break, root may remove it from another session"
hold_stop k2

# ---- 19. a release on one mount is never refused by another's cache -----------
mount_start d "owner=safety-d" || { echo "Bail out! cannot mount d"; exit 1; }
D=$(mnt d)   # the default kernel caches (entry_timeout=1, attr_timeout=1)
expect 0 open "$A/cached" O_CREAT,O_EXCL,O_RDWR
ls -l "$D" >/dev/null
like "$("$T" stat "$D/cached")" '^ino=' "D stats it"
like "$(ls -l "$D")" 'cached' "D lists it (its kernel now has the entry)"
expect 0 unlink "$A/cached"
( set -C; : > "$D/cached" ) 2>/dev/null
ok $? "right after the rm on A returned, set -C; : > file on D acquires (no stale entry refuses it)"
expect 0 unlink "$D/cached"

# ---- 9. one name, one thing (same mount) -------------------------------------
expect 0 open "$A/nm" O_CREAT,O_EXCL,O_RDWR
expect 0 unlink "$A/nm"
expect 0 mkdir "$A/nm" 0755
like "$("$T" stat "$A/nm")" 'mode=040' "the directory made right after the release is visible to lookup"
expect EEXIST open "$A/nm" O_CREAT,O_EXCL,O_RDWR
expect EEXIST symlink x "$A/nm"
expect 0 rmdir "$A/nm"

# ---- 7. stopping the daemon tells the holders first --------------------------
hold_start s --pgrp "$A/stop" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "s holds stop on A (lost_signal=USR1)"
mount_kill a TERM
hold_cmd s signals
is "$HOUT" "USR1=1 USR2=0 HUP=0 ALRM=0" "SIGTERM to A's daemon: the holder got lost_signal before the release"
expect 0 open "$B/stop" O_CREAT,O_EXCL,O_RDWR
hold_stop s

# ---- 14. an unmounted mountpoint never locks on the local disk ---------------
# A's daemon is gone and its mount removed: its mountpoint stays immutable.
( set -C; : > "$A/local" ) 2>/dev/null
ok "$([ $? -ne 0 ] && echo 0)" "set -C; : > file in the unmounted mountpoint fails (root included)"
timeout 10 flock -n "$A/local2" true 2>/dev/null
ok "$([ $? -ne 0 ] && echo 0)" "flock -n on the unmounted mountpoint fails"
expect EPERM open "$A/local3" O_CREAT,O_EXCL,O_RDWR
expect ENOENT stat "$A/local"
mount_start w "owner=safety-w,mountpoint_writable" || { echo "Bail out! cannot mount w"; exit 1; }
mount_stop w
expect 0 open "$(mnt w)/local" O_CREAT,O_EXCL,O_RDWR
