#!/usr/bin/env bash
# throttled.t: a table that keeps refusing a mount's renewals (every
# UpdateItem answered ProvisionedThroughputExceededException by
# lockfs-faultproxy for 5 s) is not asked ever faster. Mount a holds N=60
# locks (hold=unlink, heartbeat 1 s, safe period 8 s) behind the proxy:
# normally 60 UpdateItems a second.
# - Each call's retries are paid from a quota the mount's calls share (the
#   AWS SDKs' retry quota: 500, 5 a retry): once about 100 are spent, each
#   call makes one attempt, and the log says so.
# - A lock whose renewal failed tries again after a quarter of a
#   heartbeat, then twice as long each time, up to a heartbeat.
# So the throttled mount sends about 1.5 UpdateItems a lock a second
# (checked: at most 3). Before, each renewal made up to 8 attempts within
# its heartbeat and its lock tried again every 250 ms: 7.2 a lock a second
# (a daemon built at 0706e7d), seven times the load of a healthy mount, on
# a table that was already refusing it.
# When the throttling ends, every lock is renewed within its safe period,
# none is lost, and retries are paid again as successes give tokens back.
. "$(dirname "$0")/lib.sh"

plan 8

N=60
new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start a \
	"owner=thr-a,hold=unlink,lease=10,heartbeat=1,safe_period=8,max_locks_per_user=0" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a)

updates() { proxy_ctl stats | tr ' ' '\n' | sed -n 's/^UpdateItem=//p'; }
held() { grep -c '^state: held' < <(for f in "$A"/k*; do "$T" read "$f"; done); }

take_locks "$A" "$N"
is "$?:$(find "$A" -maxdepth 1 -name 'k*' | wc -l)" "0:$N" "a holds $N locks"

# ---- 5 s of throttled renewals -----------------------------------------------
sleep 2 # every lock renewed at least once at its own time
u0=$(updates)
t0=$(date +%s%N)
proxy_ctl throttle 1000000 UpdateItem >/dev/null
sleep 5
proxy_ctl clear >/dev/null
t1=$(date +%s%N)
u1=$(updates)
rate=$(awk -v n=$((u1 - u0)) -v ms=$(((t1 - t0) / 1000000)) -v k="$N" \
	'BEGIN { printf "%.2f", n / (ms / 1000) / k }')
ok "$(awk -v r="$rate" 'BEGIN { print (r <= 3 ? 0 : 1) }')" \
	"throttled for 5 s: $((u1 - u0)) UpdateItems, $rate a lock a second (at most 3; a healthy mount sends 1)"
refused=$(metric lockfs_dynamodb_retries_refused_total)
[ "${refused:-0}" -gt 0 ]
ok $? "... retries refused once the quota was spent ($refused)"
like "$(grep -m1 'retry quota spent' "$WORK/daemon-a.log")" \
	'UpdateItem: .*ProvisionedThroughputExceeded.*not retried until some succeed again' \
	"... and the log says so"

# ---- the table answers again --------------------------------------------------
sleep 3 # at most a heartbeat to the next try, and a round of renewals
is "$(metric lockfs_lost_total)" 0 "throttling over: no lock lost (of $N)"
is "$(held)" "$N" "... all $N still held"
ok1=$(metric lockfs_heartbeats_ok_total)
sleep 2
ok2=$(metric lockfs_heartbeats_ok_total)
[ $((ok2 - ok1)) -ge "$N" ]
ok $? "... and renewed at their own pace again ($((ok2 - ok1)) in 2 s)"
# Successes gave tokens back: two throttled answers are retried again.
r0=$(metric lockfs_dynamodb_retries_total)
proxy_ctl throttle 2 UpdateItem >/dev/null
sleep 2
is "$(($(metric lockfs_dynamodb_retries_total) - r0))" 2 \
	"... and a throttled renewal is retried again (the quota refilled)"
