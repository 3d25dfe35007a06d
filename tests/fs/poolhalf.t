#!/usr/bin/env bash
# poolhalf.t: a doubling of the lease pool made at once, unjudged, while
# locks were at stake is judged afterwards against a saturated DynamoDB.
# Mount a holds N=600 locks at a 4 s heartbeat (150 renewals a second
# needed; safe period 12 s: locks are at stake once a renewal is 2 s
# late). lockfs-faultproxy holds every request (stall): the 64 workers
# wait, renewals run late, locks are at stake, and the pool doubles at
# once to 256 (within 8 s: the stall ends then anyway). DynamoDB answers
# the held requests at once, and 6 s later renews at most 135 a second,
# one at a time (capacity): the more in flight, the longer each waits,
# and no more are answered. Once as many are in flight as there are
# workers, renewals wait for workers again, a little late (each lock
# renewed every 4.4 s, not 4), but no lock is at stake: the doubling is
# judged. Each
# half is then tried for a window and kept, as it renews as much: 128,
# then 64. Before, the pool stayed at 256 for good (bench/scale.sh: 12 MB
# more, and DynamoDB Local slower with 256 in flight). No lock is lost.
# fs-run: alone
. "$(dirname "$0")/lib.sh"

plan 9

N=600
new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start a \
	"owner=pool-h,hold=unlink,lease=16,heartbeat=4,safe_period=12,max_locks_per_user=0" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a)

take_locks "$A" "$N"
is "$?:$(find "$A" -maxdepth 1 -name 'k*' | wc -l)" "0:$N" "a holds $N locks"
is "$(metric lockfs_lease_workers)" 64 "64 lease workers to start with"

proxy_ctl stall on >/dev/null
workers=
for _ in $(seq 80); do # 8 s at most: 2.6 s or so
	sleep 0.1
	workers=$(metric lockfs_lease_workers)
	[ "${workers:-0}" -gt 128 ] && break
done
proxy_ctl stall off >/dev/null
ok "$([ "${workers:-0}" -gt 128 ] && echo true)" \
	"renewals held: locks at stake, the pool grew past 128 at once ($workers)"
like "$(grep -m 1 'locks at stake' "$WORK/daemon-a.log")" \
	'lease workers: renewals [0-9]+ ms late of 8000 ms of slack, locks at stake: 128 now, judged later' \
	"... and the log says why"
sleep 6
is "$(proxy_ctl capacity 135 UpdateItem)" "ok capacity 135 UpdateItem" \
	"then DynamoDB renews 135 a second at most, of the 150 needed"
like "$(daemon_line a 120 'lease workers: 128 renewed [0-9]* a second, what 256 did')" \
	'lease workers: 128 renewed [0-9]+ a second, what 256 did \([0-9]+\): 128 it is' \
	"the half was tried and kept: 128 renewed as much as 256"
like "$(daemon_line a 120 'lease workers: 64 renewed [0-9]* a second, what 128 did')" \
	'lease workers: 64 renewed [0-9]+ a second, what 128 did \([0-9]+\): 64 it is' \
	"... and its half: 64 renewed as much as 128"
proxy_ctl capacity 0 >/dev/null
sleep 2
is "$(metric lockfs_lost_total)" 0 "no lock lost"

for f in "$A"/k*; do rm -f "$f"; done
is "$(find "$A" -maxdepth 1 -name 'k*' | wc -l)" 0 "every lock let go of"
