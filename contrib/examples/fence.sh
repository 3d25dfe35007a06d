#!/bin/sh
# fence.sh: the fencing token of a lock you hold. It strictly increases from
# each holder of a key to the next (it survives releases), so a storage
# service that remembers the highest token it has seen can refuse writes
# from a holder that lost the lock without knowing it (paused, partitioned).
# The token is allocated on the holder's first read, while it holds the lock.
MNT=/mnt/locks
LOCK=$MNT/ledger

[ -e "$MNT/.lockfs/status" ] || { echo "fence: lockfs is not mounted on $MNT" >&2; exit 1; }
set -C
(: >"$LOCK") || exit 1 # held: "cannot create ...: File exists"
trap 'rm -f "$LOCK"' EXIT # only once the lock is ours
set +C

fence=$(sed -n 's/^fence: //p' "$LOCK")
# the same value, as an extended attribute (getfattr is in the attr package):
#   getfattr --only-values -n user.lockfs.fence "$LOCK"
echo "holding $LOCK with fence $fence"

# pass it along with every write the lock protects, e.g.
#   curl -fsS -X PUT -H "X-Fencing-Token: $fence" --data-binary @batch.json \
#        https://ledger.internal/batches/42
# and check the lock is still ours before anything irreversible:
state=$(sed -n 's/^state: //p' "$LOCK")
[ "$state" = held ] || { echo "lost the lock ($state)" >&2; exit 1; }
