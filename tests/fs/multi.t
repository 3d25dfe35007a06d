#!/usr/bin/env bash
# multi.t: several mounts of one table, each its own daemon and owner, with
# no kernel caching (entry_timeout=0,attr_timeout=0): exclusion (EEXIST),
# release on one lets another acquire at once, a race of three mounts for
# the same keys has exactly one winner, EPERM when another mount unlinks,
# writes, truncates or links a lock, allow_break for root only (and the old
# holder then learns it lost the lock), what another mount shows (cat,
# stat, ls, xattrs, data), directories across mounts (also a directory
# that exists only because it has locks), and prefix= mounts that see only
# their subtree.
. "$(dirname "$0")/lib.sh"

plan 88

new_table || { echo "Bail out! cannot create a table"; exit 1; }
NC=entry_timeout=0,attr_timeout=0
mount_start a "owner=owner-a,$NC" &&
	mount_start b "owner=owner-b,$NC" &&
	mount_start c "owner=owner-c,$NC,allow_break,allow_other" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b) C=$(mnt c)

# ---- exclusion -------------------------------------------------------------
expect 0 open "$A/k" O_CREAT,O_EXCL,O_RDONLY 0640
ta=$("$T" read "$A/k")
expect EEXIST open "$B/k" O_CREAT,O_EXCL,O_RDONLY 0644
expect EEXIST open "$C/k" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 open "$B/k" O_CREAT,O_RDONLY 0644
is "$(field "$("$T" read "$B/.lockfs/status")" locks_held)" 0 "B's O_CREAT on A's lock did not acquire it"
is "$(field "$("$T" read "$A/k")" version)" "$(field "$ta" version)" "... and did not touch A's row"

# ---- what B sees of A's lock -----------------------------------------------
tb=$("$T" read "$B/k")
is "$(field "$tb" owner)" owner-a "cat on B: owner is A's owner"
is "$(field "$tb" key)/$(field "$tb" state)" k/held "cat on B: key and state held"
is "$(field "$tb" version)" "$(field "$ta" version)" "cat on B: A's version"
is "$(field "$tb" fence)" "$(field "$ta" fence)" "cat on B: A's fence"
is "$(field "$tb" holder)" "$(field "$ta" holder)" "cat on B: A's holder"
is "$(field "$tb" acquired)" "$(field "$ta" acquired)" "cat on B: A's acquire time"
like "$("$T" stat "$B/k")" ' mode=0100640 nlink=1 uid=0 gid=0 ' "stat on B: A's mode and owner"
is "$("$T" getxattr "$B/k" user.lockfs.owner)" owner-a "getxattr on B: owner"
like "$("$T" readdir "$B")" $'\nk($|\n)' "ls on B lists A's lock"

# ---- other mounts may not touch it ---------------------------------------------
expect EPERM unlink "$B/k"
expect EPERM write "$B/k" hijack
expect EPERM write "$B/k" hijack O_WRONLY,O_TRUNC
expect EPERM truncate "$B/k" 0
expect EPERM chmod "$B/k" 0600
expect EPERM rename "$B/k" "$B/k2"
expect EPERM link "$B/k" "$B/k3"
expect_as 65534 EPERM unlink "$C/k"
is "$(field "$("$T" read "$A/k")" state)" held "A still holds k"

# ---- data written on A is read on B -------------------------------------------
hold_start ha "$A/d" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "A acquires d (holding fd kept)"
hold_cmd ha "write payload-123 äöü"
is "$HOUT" 0 "A writes data on its holding fd"
is "$(field "$("$T" read "$B/d")" data)" "payload-123 äöü" "B reads A's data"
is "$("$T" getxattr "$C/d" user.lockfs.data)" "payload-123 äöü" "C reads A's data as an xattr"
expect 0 write "$A/d" second O_WRONLY,O_TRUNC
is "$(field "$("$T" read "$B/d")" data)" second "B sees the new data at once"

# ---- allow_break -------------------------------------------------------------------
expect EPERM unlink "$B/d"
expect 0 unlink "$C/d"
is "$("$T" read "$C/.lockfs/metrics" | sed -n 's/^lockfs_breaks_total //p')" 1 "C counts the break"
expect 0 open "$B/d" O_CREAT,O_EXCL,O_RDONLY 0644
is "$(field "$("$T" read "$B/d")" owner)" owner-b "after the break B holds d"
hold_cmd ha fsync
is "$HOUT" EIO "A's fsync on its holding fd: EIO (its lock was broken)"
hold_cmd ha read
is "$(field "$HOUT" state)" lost "A's holding fd reads state: lost"
hold_cmd ha "write again"
is "$HOUT" EIO "A's write on its holding fd: EIO"
like "$("$T" read "$A/.lockfs/status")" $'\nlock: key=d state=lost ' "A's status shows d lost"
expect EEXIST open "$A/d" O_CREAT,O_EXCL,O_RDONLY 0644
# This script's process group took d (hold=pgrp): it sees its lost file,
# as lost, until it removes it; that rm leaves B's lock alone.
text=$("$T" read "$A/d")
is "$(field "$text" state)/$(field "$text" owner)" lost/owner-a "A's group reads its lost d afresh: state: lost (never re-acquired for A)"
hold_stop ha
expect 0 unlink "$A/d"
is "$(field "$("$T" read "$A/d")" owner)" owner-b "then A sees B as d's owner"
expect EPERM unlink "$A/d"
expect 0 unlink "$B/d"

# ---- release on A lets B acquire at once ------------------------------------------
expect 0 open "$A/r" O_CREAT,O_EXCL,O_RDONLY 0644
expect EEXIST open "$B/r" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 unlink "$A/r"
expect 0 open "$B/r" O_CREAT,O_EXCL,O_RDONLY 0644
expect EEXIST open "$A/r" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 unlink "$B/r"
expect 0 open "$C/r" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 unlink "$C/r"

# ---- three mounts race for the same keys: one winner each ------------------------
for i in $(seq 1 10); do
	for m in a b c; do
		"$T" open "$(mnt $m)/race$i" O_CREAT,O_EXCL,O_RDONLY 0644 \
			>"$WORK/race$i.$m" 2>&1 &
	done
done
wait_for 20 bash -c '[ "$(cat "$0"/race*.? 2>/dev/null | wc -l)" -ge 30 ]' "$WORK"
bad=
for i in $(seq 1 10); do
	wins=$(cat "$WORK"/race$i.? | grep -cx 0)
	losses=$(cat "$WORK"/race$i.? | grep -cx EEXIST)
	[ "$wins" = 1 ] && [ "$losses" = 2 ] || bad+=" race$i:$wins/$losses"
done
is "$bad" "" "10 keys raced by 3 mounts: exactly one winner and two EEXIST each"
owners=$(for i in $(seq 1 10); do field "$("$T" read "$B/race$i")" owner; done | sort -u | tr '\n' ' ')
like "$owners" '^(owner-[abc] )+$' "every raced key has one of the three owners ($owners)"
held=$(($(field "$("$T" read "$A/.lockfs/status")" locks_held) + \
	$(field "$("$T" read "$B/.lockfs/status")" locks_held) + \
	$(field "$("$T" read "$C/.lockfs/status")" locks_held)))
is "$held" 11 "the mounts hold 11 locks in all (k and the 10 raced keys)"

# ---- directories across mounts ------------------------------------------------
expect 0 mkdir "$A/dir1" 0750
like "$("$T" stat "$B/dir1")" ' mode=040750 nlink=1 ' "a directory made on A is a directory on B (nlink 1: B has not listed it)"
like "$("$T" readdir "$C")" $'\ndir1($|\n)' "... and listed on C"
expect 0 open "$B/dir1/x" O_CREAT,O_EXCL,O_RDONLY 0644
is "$("$T" readdir "$A/dir1" | sort | tr '\n' ' ')" ". .. x " "A lists B's lock in the directory"
expect ENOTEMPTY rmdir "$A/dir1"
expect EEXIST mkdir "$C/dir1" 0755
expect 0 unlink "$B/dir1/x"
expect 0 rmdir "$A/dir1"
expect ENOENT stat "$B/dir1"

# ---- prefix= mounts ---------------------------------------------------------------
mount_start pa "owner=owner-pa,prefix=team-a/,$NC" &&
	mount_start pb "owner=owner-pb,prefix=team-b/,$NC" ||
	{ echo "Bail out! cannot mount with prefix"; exit 1; }
PA=$(mnt pa) PB=$(mnt pb)
expect 0 open "$PA/job" O_CREAT,O_EXCL,O_RDONLY 0644
is "$(field "$("$T" read "$PA/job")" key)" team-a/job "a prefix mount's file is the key <prefix><name>"
is "$(field "$("$T" read "$PA/.lockfs/status")" prefix)" team-a/ "status shows the prefix"
expect ENOENT stat "$PB/job"
expect 0 open "$PB/job" O_CREAT,O_EXCL,O_RDONLY 0644
is "$("$T" readdir "$PA" | sort | tr '\n' ' ')" ". .. .lockfs job " "team-a/ sees only its own subtree"
is "$("$T" readdir "$PB" | sort | tr '\n' ' ')" ". .. .lockfs job " "team-b/ sees only its own subtree"
# team-a/ and team-b/ were never made with mkdir: directories because
# locks are under them.
like "$("$T" stat "$A/team-a/job")" ' mode=0100644 ' "the root mount sees team-a/job (without listing first)"
like "$("$T" stat "$B/team-b")" ' mode=04[0-7]+ ' "a directory that only has locks is a directory (without listing first)"
# (list the root once, so that the rest does not depend on the above)
is "$("$T" readdir "$A" | grep -x 'team-.' | sort | tr '\n' ' ')" 'team-a team-b ' "the root mount lists team-a and team-b"
is "$(field "$("$T" read "$A/team-a/job")" owner)" owner-pa "... owned by the team-a mount"
expect EEXIST open "$A/team-b/job" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 mkdir "$A/team-a/sub" 0755
is "$("$T" readdir "$PA" | sort | tr '\n' ' ')" ". .. .lockfs job sub " "a directory made under the prefix shows in the prefix mount"
expect 0 unlink "$PA/job"
expect 0 open "$A/team-a/job" O_CREAT,O_EXCL,O_RDONLY 0644
expect EEXIST open "$PA/job" O_CREAT,O_EXCL,O_RDONLY 0644

mount_stop pa
mount_stop pb
mount_stop a
mount_stop b
mount_stop c
