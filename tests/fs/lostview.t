#!/usr/bin/env bash
# lostview.t: what a process group sees of a lock it lost, and what
# .lockfs/status says of locks and of what is not a lock.
#  1. Per-lock leases (mount a, through the fault proxy, 2 ms each way,
#     hold=pgrp): this script's group takes k, the proxy stalls past the
#     safe period (k is lost), then DynamoDB answers again and a's cleanup
#     removes k's row. The group's fresh reads of k say "state: lost" (cat,
#     getxattr), its writes give EIO, as the file it had open does; before,
#     cat gave an empty file, getxattr ENOENT and a write EPERM. Mount b
#     then takes k: the group still sees its lost file until it removes it
#     (its rm says 0), then it sees b's lock. And while DynamoDB is still
#     out of reach, the group's cat, getxattr and stat of a lock it lost
#     answer from memory at once, and its rm 0 at once (they read the row
#     first: EIO after 4 to 9 s).
#  2. Session leases (mount s): the session item is deleted (its TTL or an
#     operator): every lock of the session is lost. The row of k still
#     names the session, and the group's cat said "state: held" with its
#     own owner for up to a lease; now "lost". Status gives the reason
#     ("is gone from the table", not "fenced by another owner") and a
#     renewed_ago in seconds (it gave 4611686018441958.814).
#  3. An acquire whose PutItem answer was lost (mount d, through the proxy),
#     then released: the watcher for a late landing of that write is no
#     lock; status listed it as a lost lock (pid=0, renewed_ago the host's
#     uptime) for 16 minutes.
#  4. 80 threads poll one lock of a (each its own open file) for POLLPRI,
#     and the lock is lost: every poll returns within the safe period.
#     Only 64 did (fs_on_lost woke at most 64 poll handles a lock); the
#     rest slept until their own timeout.
. "$(dirname "$0")/lib.sh"

need_boto3

plan 33

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
DIRECT=$ENDPOINT
OPT=entry_timeout=0,attr_timeout=0,lease=3,heartbeat=0.5,safe_period=1.5
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=lv-a,$OPT" &&
	mount_start b "owner=lv-b,$OPT" &&
	mount_start s "owner=lv-s,session,$OPT" &&
	ENDPOINT=$PROXY_ENDPOINT mount_start d "owner=lv-d,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b) S=$(mnt s) D=$(mnt d)
proxy_ctl latency 2 >/dev/null

# status_line MOUNT KEY: the status line of KEY on MOUNT.
status_line() { grep "^lock: key=$2 " "$1/.lockfs/status"; }

# ---- 1. per-lock: lost, row removed, then another mount's -------------------
try_acquire "$A/k"
ok $? "the group takes k on a (hold=pgrp)"
try_acquire "$A/ko"
proxy_ctl stall on >/dev/null
wait_for 10 sh -c 'grep -q "^lock: key=k state=lost" "$1/.lockfs/status"' _ "$A"
ok $? "a's status: k is lost (the proxy stalls past the safe period)"
# While DynamoDB is still out of reach (the outage that lost k), the group
# sees its lost locks from memory, at once: before, each of these read the
# row first and gave EIO after 4 to 9 s.
wait_for 5 sh -c 'grep -q "^lock: key=ko state=lost" "$1/.lockfs/status"' _ "$A"
out=$("$T" timed read "$A/ko")
is "$(field "$out" state)" lost "in the outage, the group's cat of ko: state: lost"
ok "$([ "$(sed -n 's/^ms //p' <<<"$out")" -lt 1000 ]; echo $?)" "... from memory, in under 1 s ($(sed -n 's/^ms //p' <<<"$out") ms)"
is "$("$T" getxattr "$A/ko" user.lockfs.state)" lost "in the outage, getxattr user.lockfs.state: lost"
like "$("$T" stat "$A/ko")" '^ino=' "in the outage, stat of ko answers"
# (its rm leaves the row's cleanup to the background: it waited for the
# cleanup's request, then made its own, 5 s in all, and the background
# cleanup of k ran out of tries meanwhile)
out=$("$T" timed unlink "$A/ko")
is "$(head -n 1 <<<"$out")/$([ "$(sed -n 's/^ms //p' <<<"$out")" -lt 1000 ] && echo fast)" 0/fast \
	"in the outage, the group's rm of ko: 0, in under 1 s ($(sed -n 's/^ms //p' <<<"$out") ms)"
like "$(cat "$A/.lockfs/status")" 'lock: key=k state=lost' "... and k, which it did not remove, is still lost on a"
proxy_ctl stall off >/dev/null
wait_for 15 grep -q 'lost key=k: removed our stale row' "$WORK/daemon-a.log"
ok $? "once DynamoDB answers, a's cleanup removes k's row"
is "$("$T" stat "$A/k" | cut -c1-3)" "ino" "the group still sees k"
text=$(cat "$A/k")
is "$(field "$text" state)" lost "the group's cat of k: state: lost (was an empty file)"
is "$(field "$text" owner)" lv-a "... with its own owner"
is "$("$T" getxattr "$A/k" user.lockfs.state)" lost "getxattr user.lockfs.state: lost (was ENOENT)"
is "$("$T" write "$A/k" x O_WRONLY)" EIO "a write by the group: EIO (was EPERM)"
is "$("$T" open "$A/k" O_CREAT,O_EXCL,O_RDONLY 0644)" EEXIST "the group's set -C: EEXIST until it removes k"
try_acquire "$B/k"
ok $? "b takes k (its row is gone)"
is "$(field "$(cat "$A/k")" state)" lost "the group still reads its lost k"
expect 0 unlink "$A/k"
text=$(cat "$A/k")
is "$(field "$text" state)/$(field "$text" owner)" held/lv-b "after its rm, the group reads b's lock"

# ---- 2. session: the session item is deleted --------------------------------
try_acquire "$S/k2"
ok $? "the group takes k2 on s (session leases)"
sk=$(sed -n 's/^session: //p' "$S/.lockfs/status")
like "$sk" '^\.lockfs-session/' "s's session item: $sk"
"$PY" - "$DIRECT" "$TABLE" "$sk" <<'EOF' 2>>"$WORK/py.err"
import sys, boto3
c = boto3.client("dynamodb", endpoint_url=sys.argv[1], region_name="us-east-1",
                 aws_access_key_id="fake", aws_secret_access_key="fake")
c.delete_item(TableName=sys.argv[2],
              Key={"lock_key": {"S": sys.argv[3]}, "sort_key": {"S": "lockfs:session"}})
EOF
ok $? "(the session item is deleted behind s's back)"
wait_for 15 sh -c 'grep -q "^lock: key=k2 state=lost" "$1/.lockfs/status"' _ "$S"
ok $? "s's status: k2 is lost"
line=$(status_line "$S" k2)
like "$line" 'reason="the mount.s session is gone from the table"' \
	"the reason: the session is gone (not fenced by another owner)"
ago=$(sed -n 's/.* renewed_ago=\([0-9.]*\).*/\1/p' <<<"$line")
ok "$(awk -v a="${ago:-x}" 'BEGIN { exit !(a ~ /^[0-9.]+$/ && a < 60) }'; echo $?)" \
	"renewed_ago is the session's last heartbeat, seconds ago ($ago)"
text=$(cat "$S/k2")
is "$(field "$text" state)" lost "the group's cat of k2: state: lost (was held, its row still names the session)"

# ---- 3. a watcher is not a lock ------------------------------------------------
proxy_ctl lose-reply 1 PutItem >/dev/null
expect 0 open "$D/o" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 unlink "$D/o"
st=$(cat "$D/.lockfs/status")
unlike "$st" $'\nlock: key=o ' "d's status lists no lock o (acquired, its answer lost, released)"
like "$st" $'\nlocks_listed: 0($|\n)' "locks_listed: 0"
is "$("$T" unlink "$D/o")" ENOENT "a second rm of o: ENOENT"
proxy_ctl clear >/dev/null

# ---- 4. every poller is woken at a loss --------------------------------------
cat >"$WORK/pollers.py" <<'EOF'
import os, select, sys, threading, time
path, n, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fds = [os.open(path, os.O_RDONLY) for _ in range(n)]
res = {}
def poll_one(i, fd):
    p = select.poll()
    p.register(fd, select.POLLPRI)
    t0 = time.monotonic()
    r = p.poll(15000)
    res[i] = (r[0][1] if r else 0, time.monotonic() - t0)
ts = [threading.Thread(target=poll_one, args=(i, fd)) for i, fd in enumerate(fds)]
for t in ts:
    t.start()
time.sleep(1.0)
open(ready, "w").write("ready\n")
for t in ts:
    t.join()
err = select.POLLERR | select.POLLPRI
print(sum(1 for v in res.values() if v[0] & err == err and v[1] < 10))
EOF
try_acquire "$A/p"
ok $? "the group takes p on a"
timeout 60 python3 "$WORK/pollers.py" "$A/p" 80 "$WORK/pollers.ready" >"$WORK/pollers.out" 2>&1 &
pp=$!
wait_for 20 test -s "$WORK/pollers.ready"
proxy_ctl stall on >/dev/null
wait "$pp"
proxy_ctl stall off >/dev/null
is "$(cat "$WORK/pollers.out")" 80 "all 80 polls of p return POLLERR|POLLPRI at its loss (64 did)"
