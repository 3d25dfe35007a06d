#!/bin/sh
# flock.sh: flock(1) on a lockfs file is a lock across machines. Shows the
# three waiting styles and the file-descriptor form. A signal (Ctrl-C, the
# -w timeout) ends a wait and leaves no lock behind; the lock is released
# when the command ends (LOCK_UN or last close), so no file is left over.
LOCK=/mnt/locks/deploy

# wait as long as it takes
flock "$LOCK" echo "deploying (waited for the lock)"

# give up at once if someone holds it
flock -n "$LOCK" echo "deploying" || echo "someone else is deploying"

# wait at most 30 s
flock -w 30 "$LOCK" echo "deploying" || echo "still busy after 30 s"

# the fd form, for a block of commands: >> (not >, which would truncate a
# lock held by someone else and fail with EPERM)
(
	exec 9>>"$LOCK"
	flock -n 9 || { echo "busy"; exit 1; }
	echo "step 1"
	echo "step 2"
) # the lock goes with fd 9 when the subshell ends
