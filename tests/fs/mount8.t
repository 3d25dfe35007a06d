#!/usr/bin/env bash
# mount8.t: lockfs through mount(8), as fstab and systemd use it: the type
# fuse.lockfs (mount(8) -> mount.fuse3 -> "lockfs SOURCE MOUNTPOINT -o
# OPTIONS"), the type lockfs (mount(8) -> mount/mount.lockfs -> lockfs), a
# temporary fstab (mount -T FILE; /etc/fstab is never read or touched),
# fstab words (_netdev, nofail, auto, defaults, x-systemd.*) accepted,
# umount(8) releasing every lock at once, findmnt showing fuse.lockfs and
# lockfs:TABLE, and mount errors (missing table, bad option) failing with
# lockfs's one-line message and a non-zero status. What is on the mountpoint
# passes through the helpers as lockfs decides it: a live lockfs mount and a
# regular file are refused with lockfs's one line (no second daemon, no
# mount on a file), a dead lockfs mount (daemon killed) is replaced, through
# mount.lockfs, mount.fuse3 and mount(8).
#
# mount(8) removes PATH from its helpers' environment and looks for helpers
# in /sbin only, so mount.fuse3's "sh -c lockfs ..." finds lockfs only in
# sh's default path. To test mount(8) itself without installing anything,
# this file re-runs itself in a private mount namespace (unshare -m) and
# lays read-only overlays on /usr/local/sbin (lockfs) and /usr/sbin
# (mount.lockfs) there: nothing outside the namespace sees them, nor any
# mount made here. Without unshare or overlayfs the mount(8) tests are
# skipped; the helpers are still tested as mount(8) runs them (mount.fuse3
# and mount.lockfs called directly, lockfs found through PATH).
# LOCKFS_MOUNT8_NO_NS=1 tests the fallback (no mount(8) tests).
if [ -z "${LOCKFS_MOUNT8_PARENT_NS:-}" ] && [ -z "${LOCKFS_MOUNT8_NO_NS:-}" ] &&
	command -v unshare >/dev/null 2>&1 &&
	unshare -m --propagation private true 2>/dev/null; then
	LOCKFS_MOUNT8_PARENT_NS=$(readlink /proc/self/ns/mnt)
	export LOCKFS_MOUNT8_PARENT_NS
	exec unshare -m --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip_all "mount(8) and mount.fuse3 need root"
plan 84

HELPER=${LOCKFS_MOUNT_HELPER:-$_root/mount/mount.lockfs}
MOUNT_FUSE3=$(command -v mount.fuse3 || echo /sbin/mount.fuse3)
E_R="endpoint=$ENDPOINT,region=us-east-1"
NOISE=_netdev,nofail,auto,defaults,x-systemd.automount

# lockfs in a directory of our own, first in PATH, for the helpers called
# directly (mount(8) itself drops PATH).
mkdir -p "$WORK/bin"
ln -s "$(readlink -f "$L")" "$WORK/bin/lockfs"
export PATH=$WORK/bin:$PATH

# ---- small helpers -------------------------------------------------------
# t DESC CMD...: one test, passed when CMD succeeds.
t() {
	local desc=$1
	shift
	if "$@"; then pass "$desc"; else flunk "$desc"; fi
}
not() { ! "$@"; }

lockfs_mounted() {  # MOUNTPOINT: a fuse.lockfs mount is there
	[ "$(findmnt -n -o FSTYPE -M "$1" 2>/dev/null | tail -n 1)" = fuse.lockfs ]
}

# newmnt NAME: a fresh mountpoint that lib.sh's cleanup unmounts.
newmnt() {
	local m=$WORK/m-$1
	mkdir -p "$m"
	track_mount "$m"
	echo "$m"
}

# acquire MOUNTPOINT NAME: the shell's noclobber acquire; 0 when taken.
# (hold=pgrp: held until rm, unmount, or the end of this file's group.)
acquire() { ( set -C; : >"$1/$2" ) 2>>"$WORK/acquire.err"; }

# released_on MOUNTPOINT NAME: that mount takes NAME now (O_EXCL).
released_on() { try_acquire "$1/$2"; }

# source_and_type MOUNTPOINT: "fuse.lockfs lockfs:TABLE" as findmnt says.
source_and_type() { findmnt -n -o FSTYPE,SOURCE -M "$1"; }

# ---- the namespace: lockfs and mount.lockfs where mount(8) looks ----------
NS=
NS_WHY="not in a private mount namespace (unshare -m failed)"
# The overlays vanish with the namespace at the end of this file.
overlay_add() {  # DIR SRC_DIR: SRC_DIR's files appear in DIR
	mount -t overlay overlay -o "lowerdir=$2:$1" "$1" 2>>"$WORK/overlay.err"
}
# Overlays only in a namespace of our own: not the one we were started in,
# not init's, and private.
own_ns=$(readlink /proc/self/ns/mnt)
if [ -n "${LOCKFS_MOUNT8_PARENT_NS:-}" ] &&
	[ "$own_ns" != "$LOCKFS_MOUNT8_PARENT_NS" ] &&
	[ "$own_ns" != "$(readlink /proc/1/ns/mnt 2>/dev/null)" ] &&
	[ "$(findmnt -n -o PROPAGATION /)" = private ]; then
	mkdir -p "$WORK/ov-bin" "$WORK/ov-sbin"
	ln -s "$(readlink -f "$L")" "$WORK/ov-bin/lockfs"
	ln -s "$(readlink -f "$HELPER")" "$WORK/ov-sbin/mount.lockfs"
	case $WORK in
	*[:,]*) NS_WHY="the work directory has ':' or ',' (overlayfs lowerdir)" ;;
	*)
		if overlay_add /usr/local/sbin "$WORK/ov-bin" &&
			overlay_add /usr/sbin "$WORK/ov-sbin"; then
			found=$(env -i /bin/sh -c 'command -v lockfs')
			if [ "$(readlink -f "$found")" = "$(readlink -f "$L")" ] &&
				[ -x /sbin/mount.lockfs ]; then
				NS=1
			else
				NS_WHY="lockfs in sh's default path is '$found', not ours"
			fi
		else
			NS_WHY="no overlayfs: $(head -n 1 "$WORK/overlay.err")"
		fi
		;;
	esac
fi
[ -n "$NS" ] || diag "mount(8) tests skipped: $NS_WHY"

# ns_block N DESC CMD...: runs CMD (which runs N TAP tests) when mount(8)
# can be tested, else skips N tests named DESC.
ns_block() {
	local n=$1 desc=$2 i
	shift 2
	if [ -n "$NS" ]; then
		"$@"
	else
		for ((i = 0; i < n; i++)); do skip "$desc" "$NS_WHY"; done
	fi
}

new_table || { echo "Bail out! cannot create a table"; exit 1; }

# ---- mount.lockfs without mounting: arguments ----------------------------
out=$("$HELPER" "lockfs:$TABLE" /mnt/x -f -o "$E_R,$NOISE,allow_other" 2>&1)
is "$?" 0 "mount.lockfs -f (fake) exits 0"
is "$out" "mount.lockfs: would run: lockfs lockfs:$TABLE /mnt/x -o $E_R,allow_other" \
	"mount.lockfs -f prints the lockfs command, fstab words dropped"
out=$("$HELPER" lockfs /mnt/x -snf -o rw -t lockfs -o table=a 2>&1)
is "$out" "mount.lockfs: would run: lockfs lockfs /mnt/x -o rw,table=a" \
	"mount.lockfs accepts -s -n -t and joins several -o"
out=$("$HELPER" lockfs /mnt/x -o setuid=nobody 2>&1)
t "mount.lockfs refuses setuid= (an option of mount.fuse3)" not test $? = 0
like "$out" 'use the type fuse\.lockfs' "... and points to the type fuse.lockfs"

# ---- mount.fuse3 directly, as mount(8) runs it for fuse.lockfs -----------
M1=$(newmnt fuse3)
timeout 30 "$MOUNT_FUSE3" lockfs "$M1" -o "rw,table=$TABLE,$E_R,$NOISE" \
	-t fuse.lockfs 2>"$WORK/fuse3.err"
rc=$?
is "$rc" 0 "mount.fuse3 lockfs M -o rw,table=,endpoint=,region=,$NOISE -t fuse.lockfs"
[ "$rc" = 0 ] || diag "$(cat "$WORK/fuse3.err")"
is "$(source_and_type "$M1")" "fuse.lockfs lockfs:$TABLE" \
	"findmnt: type fuse.lockfs, source lockfs:TABLE"
t "set -C acquire on the mount.fuse3 mount" acquire "$M1" f3
like "$(cat "$M1/f3")" $'^key: f3\nstate: held\n' "cat shows the held lock"
timeout 30 umount "$M1"
is "$?" 0 "umount of the mount.fuse3 mount"

# ---- mount.lockfs directly, as mount(8) runs it for -t lockfs -------------
M2=$(newmnt helper)
timeout 30 "$HELPER" "lockfs:$TABLE" "$M2" -v -o "rw,$E_R,$NOISE,allow_other" \
	2>"$WORK/helper.err"
rc=$?
is "$rc" 0 "mount.lockfs lockfs:TABLE M -v -o rw,endpoint=,region=,$NOISE,allow_other"
is "$(grep -v "^lockfs: mounted $M2; logs go to " "$WORK/helper.err")" \
	"mount.lockfs: running: lockfs lockfs:$TABLE $M2 -o rw,$E_R,allow_other" \
	"mount.lockfs -v says what it runs, and nothing else (but lockfs's line on where its log goes)"
is "$(source_and_type "$M2")" "fuse.lockfs lockfs:$TABLE" \
	"findmnt: type fuse.lockfs, source lockfs:TABLE (the table from the source)"
like "$(findmnt -n -o OPTIONS -M "$M2")" 'allow_other' "allow_other reached the mount"
t "set -C acquire on the mount.lockfs mount" acquire "$M2" h1
t "a second set -C on the held lock fails" not acquire "$M2" h1
t "rm releases it" rm "$M2/h1"
t "... and it is gone" not test -e "$M2/h1"
timeout 30 umount "$M2"
is "$?" 0 "umount of the mount.lockfs mount"

M3=$(newmnt helper-err)
out=$(timeout 30 "$HELPER" lockfs "$M3" -o "table=nosuch-$$,$E_R" 2>&1)
t "mount.lockfs with a missing table fails" not test $? = 0
like "$out" "^lockfs: table 'nosuch-$$' does not exist" "... with lockfs's one-line message"
t "... and nothing is mounted" not lockfs_mounted "$M3"

# ---- mount(8) -t fuse.lockfs -----------------------------------------------
t_fuse_lockfs() {
	local m rc out
	m=$(newmnt t-fuse)
	timeout 30 mount -t fuse.lockfs lockfs "$m" \
		-o "table=$TABLE,$E_R,$NOISE" 2>"$WORK/mount-fuse.err"
	rc=$?
	is "$rc" 0 "mount -t fuse.lockfs lockfs M -o table=,endpoint=,region=,$NOISE"
	[ "$rc" = 0 ] || diag "$(cat "$WORK/mount-fuse.err")"
	is "$(source_and_type "$m")" "fuse.lockfs lockfs:$TABLE" \
		"findmnt: type fuse.lockfs, source lockfs:TABLE"
	t "set -C; : > M/job acquires" acquire "$m" job
	out=$(cat "$m/job")
	like "$out" $'^key: job\nstate: held\n' "cat M/job: key, state held"
	like "$out" $'\nholder: host=[^ ]+ pid=[0-9]+ uid=0 ' "... and the holder"
	t "a second set -C fails (EEXIST)" not acquire "$m" job
	t "rm M/job releases" rm "$m/job"
	t "... and it can be taken again" acquire "$m" job
	rm -f "$m/job"
	timeout 30 umount "$m"
	is "$?" 0 "umount M"
	t "... and M is gone from mountinfo" not lockfs_mounted "$m"
}
ns_block 10 "mount -t fuse.lockfs" t_fuse_lockfs

# ---- mount(8) -t lockfs, through /sbin/mount.lockfs ------------------------
t_lockfs() {
	local m rc out
	m=$(newmnt t-lockfs)
	timeout 30 mount -t lockfs "lockfs:$TABLE" "$m" -o "$E_R,$NOISE" \
		2>"$WORK/mount-lockfs.err"
	rc=$?
	is "$rc" 0 "mount -t lockfs lockfs:TABLE M -o endpoint=,region=,$NOISE"
	[ "$rc" = 0 ] || diag "$(cat "$WORK/mount-lockfs.err")"
	is "$(source_and_type "$m")" "fuse.lockfs lockfs:$TABLE" \
		"findmnt: type fuse.lockfs, source lockfs:TABLE"
	t "set -C acquire on the mount -t lockfs mount" acquire "$m" l1
	timeout 30 umount "$m"
	is "$?" 0 "umount M"
	out=$(timeout 30 mount -f -v -t lockfs "lockfs:$TABLE" "$m" -o "$E_R" 2>&1)
	like "$out" "mount\\.lockfs: would run: lockfs lockfs:$TABLE $m -o rw,$E_R" \
		"mount -f -t lockfs: the helper prints what it would run"
	t "... and mounts nothing" not lockfs_mounted "$m"
}
ns_block 6 "mount -t lockfs" t_lockfs

# ---- a temporary fstab (mount -T FILE MOUNTPOINT) --------------------------
t_fstab() {
	local m1 m2 rc fstab=$WORK/fstab
	m1=$(newmnt fstab-fuse)
	m2=$(newmnt fstab-helper)
	cat >"$fstab" <<EOF
# lockfs test fstab (mount8.t)
lockfs  $m1  fuse.lockfs  table=$TABLE,$E_R,_netdev,nofail,allow_other,nosuid,nodev  0 0
lockfs:$TABLE  $m2  lockfs  $E_R,_netdev,nofail,x-systemd.automount,noauto  0 0
EOF
	timeout 30 mount -T "$fstab" "$m1" 2>"$WORK/fstab1.err"
	rc=$?
	is "$rc" 0 "mount -T FSTAB M: a fuse.lockfs line with _netdev,nofail,allow_other,nosuid,nodev"
	[ "$rc" = 0 ] || diag "$(cat "$WORK/fstab1.err")"
	is "$(source_and_type "$m1")" "fuse.lockfs lockfs:$TABLE" \
		"findmnt: type fuse.lockfs, source lockfs:TABLE (table from table=)"
	like "$(findmnt -n -o OPTIONS -M "$m1")" '(^|,)nosuid,nodev,.*allow_other' \
		"the mount has nosuid, nodev and allow_other"
	timeout 30 mount -T "$fstab" "$m2" 2>"$WORK/fstab2.err"
	rc=$?
	is "$rc" 0 "mount -T FSTAB M: a lockfs line (mount.lockfs), noauto"
	[ "$rc" = 0 ] || diag "$(cat "$WORK/fstab2.err")"
	t "acquire on the first fstab mount" acquire "$m1" shared
	t "the second fstab mount (another daemon) finds it held" \
		not acquire "$m2" shared
	timeout 30 umount "$m1"
	is "$?" 0 "umount of the first"
	timeout 30 umount "$m2"
	is "$?" 0 "umount of the second"
}
ns_block 8 "mount -T FSTAB" t_fstab

# ---- umount(8) releases every lock at once ---------------------------------
mount_fuse_lockfs() {  # MOUNTPOINT: mount(8) -t fuse.lockfs
	timeout 30 mount -t fuse.lockfs "lockfs:$TABLE" "$1" -o "$E_R,_netdev" \
		2>"$WORK/release.err"
}
mount_fuse3_direct() {  # MOUNTPOINT: mount.fuse3 as mount(8) runs it
	timeout 30 "$MOUNT_FUSE3" "lockfs:$TABLE" "$1" -o "rw,$E_R,_netdev" \
		-t fuse.lockfs 2>"$WORK/release.err"
}
t_umount_releases() {  # MOUNT_FUNCTION
	local m b how=$1
	mount_start other "entry_timeout=0,attr_timeout=0,owner=mount8-other" ||
		{ echo "Bail out! cannot mount"; exit 1; }
	b=$(mnt other)
	m=$(newmnt release)
	if ! "$how" "$m"; then
		diag "$(cat "$WORK/release.err")"
	fi
	# shellcheck disable=SC2016  # expanded by eval, in t
	t "two locks taken through a mount by $how" \
		eval 'acquire "$m" r1 && acquire "$m" r2'
	t "another mount cannot take them" not released_on "$b" r1
	timeout 30 umount "$m"
	is "$?" 0 "umount M with two locks held"
	# shellcheck disable=SC2016
	t "the other mount takes both within 10 s (released, not lapsed)" \
		eval 'wait_for 10 released_on "$b" r1 && wait_for 10 released_on "$b" r2'
	rm -f "$b/r1" "$b/r2"
	mount_stop other
}
if [ -n "$NS" ]; then
	t_umount_releases mount_fuse_lockfs
else
	t_umount_releases mount_fuse3_direct
fi

# ---- mount errors: a non-zero status and lockfs's one line ------------------
t_errors() {
	local m out
	m=$(newmnt errors)
	out=$(timeout 30 mount -t fuse.lockfs lockfs "$m" -o "table=nosuch-$$,$E_R" 2>&1)
	t "mount -t fuse.lockfs with a missing table fails" not test $? = 0
	is "$out" "lockfs: table 'nosuch-$$' does not exist (create it with --create-table, or see contrib/create-table.sh) (endpoint $ENDPOINT, region us-east-1)" \
		"... with exactly lockfs's one line"
	out=$(timeout 30 mount -t fuse.lockfs lockfs "$m" -o "table=$TABLE,$E_R,lease=abc" 2>&1)
	t "mount -t fuse.lockfs with lease=abc fails" not test $? = 0
	like "$out" '^lockfs: lease=abc: want seconds[^'$'\n'']*$' "... with lockfs's one line"
	out=$(timeout 30 mount -t lockfs lockfs "$m" -o "table=nosuch-$$,$E_R" 2>&1)
	t "mount -t lockfs with a missing table fails" not test $? = 0
	like "$out" "^lockfs: table 'nosuch-$$' does not exist[^"$'\n'"]*\$" "... with lockfs's one line"
	t "nothing got mounted" not lockfs_mounted "$m"
}
ns_block 7 "mount errors through mount(8)" t_errors

# mount.fuse3 errors without mount(8): always testable
M4=$(newmnt fuse3-err)
out=$(timeout 30 "$MOUNT_FUSE3" lockfs "$M4" -o "table=$TABLE,$E_R,hold=never" \
	-t fuse.lockfs 2>&1)
t "mount.fuse3 with hold=never fails" not test $? = 0
is "$out" "lockfs: hold=never: want pgrp, fd or unlink" "... with lockfs's one line"

# ---- what is on the mountpoint: the helpers pass lockfs's verdict on --------
# lockfs_count MOUNTPOINT: how many fuse.lockfs mounts are on it.
lockfs_count() {
	awk -v m="$1" '$5 == m { for (i = 7; i <= NF; i++) if ($i == "-") {
		if ($(i + 1) == "fuse.lockfs") n++; break } } END { print n + 0 }' \
		/proc/self/mountinfo
}
# kill_daemon OWNER MOUNTPOINT: kill -9 of the daemon mounted with
# owner=OWNER (10 s for it to go); its mount is left dead behind it.
kill_daemon() {
	local pid
	pid=$(pgrep -f "owner=$1( |,|\$)" | head -n 1)
	[ -n "$pid" ] || return 1
	kill -9 "$pid"
	wait_for 10 bash -c '! kill -0 "$0" 2>/dev/null' "$pid"
}
dead() { [ "$("$T" statfs "$1" 2>&1)" = ENOTCONN ]; }

M5=$(newmnt state)
timeout 30 "$HELPER" "lockfs:$TABLE" "$M5" -o "$E_R,owner=m8-first-$$" 2>"$WORK/state.err"
is "$?" 0 "mount.lockfs on M: mounted"
out=$(timeout 30 "$HELPER" "lockfs:$TABLE" "$M5" -o "$E_R" 2>&1)
t "mount.lockfs on M, where lockfs is mounted, fails" not test $? = 0
is "$out" "lockfs: mountpoint $M5: lockfs is already mounted there (lockfs:$TABLE); unmount it first (fusermount3 -u $M5) or choose another directory" \
	"... with lockfs's one line"
out=$(timeout 30 "$MOUNT_FUSE3" "lockfs:$TABLE" "$M5" -o "rw,$E_R" -t fuse.lockfs 2>&1)
t "mount.fuse3 on M, where lockfs is mounted, fails" not test $? = 0
like "$out" "^lockfs: mountpoint $M5: lockfs is already mounted there[^"$'\n'"]*\$" \
	"... with lockfs's one line"
is "$(lockfs_count "$M5")" 1 "... one lockfs mount on M: no second daemon stacked"
: >"$WORK/file"
track_mount "$WORK/file"
out=$(timeout 30 "$HELPER" "lockfs:$TABLE" "$WORK/file" -o "$E_R" 2>&1)
t "mount.lockfs on a regular file fails" not test $? = 0
is "$out" "lockfs: mountpoint $WORK/file: not a directory (lockfs mounts on a directory)" \
	"... with lockfs's one line"

t "kill -9 of M's daemon leaves a dead mount (ENOTCONN)" \
	eval 'kill_daemon "m8-first-$$" && dead "$M5"'
out=$(timeout 30 "$HELPER" "lockfs:$TABLE" "$M5" -o "$E_R,owner=m8-again-$$" 2>&1)
is "$?" 0 "mount.lockfs on the dead mount: mounted"
like "$out" "^lockfs: $M5: detached a dead lockfs mount" "... saying it replaced the dead one"
is "$(lockfs_count "$M5")" 1 "... one lockfs mount on M"
t "set -C acquire on the new mount" acquire "$M5" again
timeout 30 umount "$M5"
is "$?" 0 "umount M"

# mount(8) on a dead mount: the helper runs, and lockfs replaces it.
t_dead_mount8() {  # TYPE
	local type=$1 m rc
	m=$(newmnt "dead-$type")
	timeout 30 mount -t "$type" "lockfs:$TABLE" "$m" -o "$E_R,owner=m8-$type-$$" \
		2>"$WORK/dead-$type.err"
	is "$?" 0 "mount -t $type M"
	t "kill -9 of its daemon leaves a dead mount (ENOTCONN)" \
		eval 'kill_daemon "m8-$type-$$" && dead "$m"'
	timeout 30 mount -t "$type" "lockfs:$TABLE" "$m" -o "$E_R" 2>"$WORK/dead-$type.err"
	rc=$?
	is "$rc" 0 "mount -t $type on the dead mount: mounted afresh"
	[ "$rc" = 0 ] || diag "$(cat "$WORK/dead-$type.err")"
	t "set -C acquire on it" acquire "$m" "d-$type"
	timeout 30 umount "$m"
	is "$?" 0 "umount M"
}
ns_block 5 "mount -t fuse.lockfs on a dead mount" t_dead_mount8 fuse.lockfs
ns_block 5 "mount -t lockfs on a dead mount" t_dead_mount8 lockfs
