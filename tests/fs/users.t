#!/usr/bin/env bash
# users.t: several users on one mount with allow_other (default_permissions
# is always on). Any user can take a lock in a 1777 directory, and only the
# user who took it (or root) can remove it; directories keep the mode and
# owner they were made with; users exclude each other with flock; on
# another mount nobody but allow_break's root may remove the lock.
. "$(dirname "$0")/lib.sh"

plan 30

U1=1001 U2=1002
new_table || { echo "Bail out! cannot create a table"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0,allow_other
mount_start a "owner=users-a,$OPT" && mount_start b "owner=users-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
field_kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }

# The root of a mount is a sticky, world-writable directory.
st=$("$T" stat "$A")
is "$(field_kv "$st" mode)" 041777 "the mount root is drwxrwxrwt"

# ---- a 1777 directory: anyone locks, only the owner (or root) unlocks ------
mkdir -m 1777 "$A/shared"
is "$?" 0 "mkdir -m 1777 (mkdir, then chmod for the sticky bit)"
st=$("$T" stat "$B/shared")
is "$(field_kv "$st" mode)" 041777 "the mode is seen on every mount"
expect_as $U1 0 open "$A/shared/job" O_CREAT,O_EXCL,O_RDONLY 0644
st=$("$T" stat "$A/shared/job")
is "$(field_kv "$st" uid)" $U1 "the lock belongs to the user who took it"
expect_as $U2 EEXIST open "$A/shared/job" O_CREAT,O_EXCL,O_RDONLY 0644
expect_as $U2 EPERM unlink "$A/shared/job"
expect_as $U2 0 open "$A/shared/other" O_CREAT,O_EXCL,O_RDONLY 0644
expect_as $U1 EPERM unlink "$A/shared/other"
expect_as $U1 0 unlink "$A/shared/job"
expect_as $U2 0 open "$A/shared/job" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 unlink "$A/shared/job"
is "$(cat "$A/shared/job" 2>&1 | head -1)" "cat: $A/shared/job: No such file or directory" \
	"root removed another user's lock on the holding mount"
expect_as $U2 0 unlink "$A/shared/other"

# ---- directories keep their mode and owner ------------------------------------
setpriv --reuid=$U1 --regid=$U1 --clear-groups mkdir -m 0755 "$A/private"
is "$?" 0 "user 1 makes a directory"
expect_as $U2 EPERM chmod "$A/private" 0777
expect EPERM chmod "$A" 0755
st=$("$T" stat "$B/private")
is "$(field_kv "$st" uid)" $U1 "a directory belongs to its maker, on every mount"
is "$(field_kv "$st" mode)" 040755 "and keeps its mode"
expect_as $U2 EACCES open "$A/private/x" O_CREAT,O_EXCL,O_RDONLY 0644
expect_as $U1 0 open "$A/private/x" O_CREAT,O_EXCL,O_RDONLY 0644
expect_as $U2 EPERM rmdir "$A/private"  # the sticky root protects it
expect_as $U1 0 unlink "$A/private/x"
expect_as $U1 0 rmdir "$A/private"

# ---- users exclude each other with flock ------------------------------------------
timeout --foreground 10 setpriv --reuid=$U1 --regid=$U1 --clear-groups \
	flock "$A/shared/db" sleep 2 &
f1=$!
wait_for 5 sh -c "grep -q 'uid=$U1' '$A/shared/db' 2>/dev/null"
timeout --foreground 10 setpriv --reuid=$U2 --regid=$U2 --clear-groups \
	flock -n "$A/shared/db" true
is "$?" 1 "user 2's flock -n fails while user 1 holds the flock"
timeout --foreground 10 setpriv --reuid=$U2 --regid=$U2 --clear-groups \
	flock -w 8 "$A/shared/db" sh -c "grep -q 'uid=$U2' '$A/shared/db'"
is "$?" 0 "user 2's flock gets it after user 1's, and holds it as user 2"
wait "$f1"

# ---- across mounts -------------------------------------------------------------------
expect_as $U1 0 open "$A/shared/cross" O_CREAT,O_EXCL,O_RDONLY 0644
expect_as $U1 EPERM unlink "$B/shared/cross"
expect EPERM unlink "$B/shared/cross"
expect_as $U1 0 unlink "$A/shared/cross"
