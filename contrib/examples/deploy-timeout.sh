#!/bin/sh
# deploy-timeout.sh: a deploy that waits at most WAIT seconds for its turn
# and hands the fencing token to what it changes. Shows flock -w with a
# distinct exit status for "no turn" (-E 75), reading the fence from inside
# the lock, and that the lock lives only as long as the command: if the
# deploy crashes or is killed, lockfs releases it at once.
#
#   deploy-timeout.sh [ENV] [WAIT]
ENV=${1:-production}
WAIT=${2:-600}
MNT=/mnt/locks
LOCK=$MNT/deploy-$ENV

[ -e "$MNT/.lockfs/status" ] || { echo "deploy: lockfs is not mounted on $MNT" >&2; exit 1; }

# shellcheck disable=SC2016 # $1 and $2 belong to the inner sh
flock -w "$WAIT" -E 75 "$LOCK" sh -c '
	fence=$(sed -n "s/^fence: //p" "$1")   # allocated on the first read
	echo "deploying $2 with fence $fence"
	# exec ./deploy.sh --env "$2" --fence "$fence"
' deploy "$LOCK" "$ENV"
rc=$?
if [ "$rc" -eq 75 ]; then
	echo "deploy-$ENV: no turn within $WAIT s; held by:" >&2
	sed -n 's/^holder: /  /p; s/^owner: /  owner /p' "$LOCK" >&2
fi
exit "$rc"
