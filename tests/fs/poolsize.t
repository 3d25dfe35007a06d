#!/usr/bin/env bash
# poolsize.t: the lease pool against a saturated DynamoDB. lockfs-faultproxy
# forwards at most 150 UpdateItems a second, one at a time in order of
# arrival (capacity 150 UpdateItem): the more renewals in flight, the
# longer each waits, and no more are answered. Mount a holds N=300 locks
# at a 1 s heartbeat (300 renewals a second needed; lease 20 s, safe
# period 16 s, so renewals run late without locks at stake). Renewals wait
# for a worker, and the pool doubles to 128; still waiting, it is judged:
# the renewals answered a second at 128, then at 64, and 128 renewed no
# more, so the pool is back at 64 and stays there (growth held off 30 s).
# Before, it grew to 256, where each renewal waited 1.7 s for its turn, past
# its deadline (a heartbeat): every one failed, and all 300 locks were
# lost. No lock is lost.
. "$(dirname "$0")/lib.sh"

plan 8

N=300
new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start a \
	"owner=pool-a,hold=unlink,lease=20,heartbeat=1,safe_period=16,max_locks_per_user=0" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a)

take_locks "$A" "$N"
is "$?:$(find "$A" -maxdepth 1 -name 'k*' | wc -l)" "0:$N" "a holds $N locks"
is "$(metric lockfs_lease_workers)" 64 "64 lease workers to start with"

is "$(proxy_ctl capacity 150 UpdateItem)" "ok capacity 150 UpdateItem" \
	"DynamoDB renews 150 a second at most"
like "$(daemon_line a 45 'lease workers: 128 renewed.*saturated')" \
	'lease workers: 128 renewed [0-9]+ a second, [0-9.]+x what 64 did .*: 64 it is, no growth for 30 s' \
	"the pool doubled to 128, renewed no more, and is back at 64"
workers=
for _ in $(seq 20); do # the workers above 64 end between jobs: 10 s at most
	workers=$(metric lockfs_lease_workers)
	[ "$workers" = 64 ] && break
	sleep 0.5
done
is "$workers" 64 "... 64 workers run"
sleep 5
is "$(metric lockfs_lease_workers)" 64 "... and 64 still, 5 s on (growth held off)"
proxy_ctl capacity 0 >/dev/null
sleep 2
is "$(metric lockfs_lost_total)" 0 "no lock lost"

for f in "$A"/k*; do rm -f "$f"; done
is "$(find "$A" -maxdepth 1 -name 'k*' | wc -l)" 0 "every lock let go of"
