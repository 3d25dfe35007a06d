#!/bin/sh
# cron-nightly.sh: run a cron job on one machine of many. Every machine has
# the same crontab line; the first to create the lock file runs the job,
# the others exit quietly. Shows: noclobber (set -C makes ">" open with
# O_CREAT|O_EXCL, which acquires the lock or fails with EEXIST at once),
# the release on exit, the holder's note to the others (the lock's data),
# and the check that lockfs is mounted (else ">" would create a plain file
# on the local disk and every machine would run the job).
#
# If the script dies, lockfs releases the lock at once; only a dead machine
# makes the others wait, for a lease (30 s).
#
#   # /etc/cron.d/nightly, on every host:
#   15 2 * * *  root  /usr/local/sbin/cron-nightly.sh
MNT=/mnt/locks
LOCK=$MNT/nightly

[ -e "$MNT/.lockfs/status" ] || { echo "nightly: lockfs is not mounted on $MNT" >&2; exit 1; }

set -C
# (the subshell: in sh, a failed redirection of ":" would end the script)
if ! (: >"$LOCK") 2>/dev/null; then
	[ -e "$LOCK" ] && exit 0 # held: another host runs it
	echo "nightly: cannot create $LOCK" >&2
	exit 1
fi
# release when done, whatever happens; set only now that the lock is ours,
# so that a run that did not get it never removes another host's lock
trap 'rm -f "$LOCK"' EXIT
set +C

# shown to every host as "data:" in cat /mnt/locks/nightly
echo "$(hostname) since $(date -u +%FT%TZ)" >"$LOCK"

# ... the nightly work, e.g.:
# pg_dump mydb | gzip > "/backup/mydb-$(date +%F).sql.gz"
