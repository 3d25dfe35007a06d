#!/usr/bin/env bash
# ops.t: the Operations of doc/semantics.md on one mount: acquire by
# O_CREAT|O_EXCL, EEXIST, O_CREAT on a held key (no acquire); the text of a
# lock (fields, order, RFC 3339 ms times, expires = heartbeat + lease);
# stat (mode from create with umask, uid, size = the holder's data, mtime =
# heartbeat, ctime = acquired); xattrs = text fields, setxattr EPERM,
# other namespaces; write sets data (64 KiB, EFBIG), non-holder writes;
# EPERM for chmod/chown/rename/symlink/mknod and non-holder link/truncate,
# link by the holder (one inode, two links);
# fsync (a synchronous heartbeat, EIO once released); poll; unlink releases
# (sticky rule for other uids); mkdir/rmdir/ENOTEMPTY/EEXIST; readdir and
# the cost of ls -l; bash noclobber; fences increase across re-acquires.
. "$(dirname "$0")/lib.sh"

plan 159

new_table || { echo "Bail out! cannot create a table"; exit 1; }
OWNER=ops-owner-$$
mount_start a "owner=$OWNER,allow_other,attr_timeout=0" ||
	{ echo "Bail out! cannot mount"; exit 1; }
M=$(mnt a)
HOST=$(hostname)

# ---- acquire ---------------------------------------------------------------
umask 027
t_before=$(now_ms)
hold_start h "$M/x" O_CREAT,O_EXCL,O_RDWR 0666
is "$HOUT" ready "open(O_CREAT|O_EXCL) of a free key acquires it"
t_after=$(now_ms)
umask 022
hold_cmd h pid
HPID=$(sed 's/^pid=\([0-9]*\) .*/\1/' <<<"$HOUT")
is "$(metric lockfs_acquires_total "$M")" 1 "one acquire counted"
expect EEXIST open "$M/x" O_CREAT,O_EXCL,O_RDONLY 0644
expect EEXIST open "$M/x" O_CREAT,O_EXCL,O_WRONLY 0600
v1=$(field "$("$T" read "$M/x")" version)
expect 0 open "$M/x" O_CREAT,O_RDONLY 0644
is "$(metric lockfs_acquires_total "$M")" 1 "O_CREAT without O_EXCL on a held key: no acquire"
is "$(field "$("$T" read "$M/x")" version)" "$v1" "... and the lock row is unchanged (same version)"
expect ENOENT open "$M/nothing" O_RDONLY
expect ENOENT stat "$M/nothing"

# ---- the text ----------------------------------------------------------------
hold_cmd h read
text=$HOUT
is "$(cut -d: -f1 <<<"$text" | tr '\n' ' ')" \
	"key state owner version fence lease acquired heartbeat expires holder " \
	"the text has key..holder, one per line, in order (no data yet)"
is "$(field "$text" key)" x "key: the key"
is "$(field "$text" state)" held "state: held"
is "$(field "$text" owner)" "$OWNER" "owner: the mount's owner"
like "$(field "$text" version)" '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' \
	"version: a UUID v4"
is "$(field "$text" fence)" 1 "fence: 1 for the first holder of the key"
is "$(field "$text" lease)" 30.000 "lease: 30.000 (seconds, default)"
acq=$(field "$text" acquired)
hb=$(field "$text" heartbeat)
exp=$(field "$text" expires)
like "$acq" "$RFC3339_MS" "acquired: RFC 3339 UTC with milliseconds"
like "$hb" "$RFC3339_MS" "heartbeat: RFC 3339 UTC with milliseconds"
like "$exp" "$RFC3339_MS" "expires: RFC 3339 UTC with milliseconds"
acq_ms=$(rfc_ms "$acq")
ok "$([ "$acq_ms" -ge $((t_before - 2000)) ] && [ "$acq_ms" -le $((t_after + 2000)) ] && echo 0)" \
	"acquired is the time of the open ($acq)"
is "$(($(rfc_ms "$exp") - $(rfc_ms "$hb")))" 30000 "expires = heartbeat + lease"
ok "$([ "$(rfc_ms "$hb")" -ge "$acq_ms" ] && echo 0)" "heartbeat >= acquired"
is "$(field "$text" holder)" "host=$HOST pid=$HPID uid=0 cmd=lockfs-t" \
	"holder: host, pid, uid and command of the opener"

# ---- stat ------------------------------------------------------------------
# read, stat, read: a heartbeat in between changes version and times, so
# compare only when both reads agree (3 tries).
stat_vs_text() {
	local i t1 t2 st
	for i in 1 2 3; do
		t1=$("$T" read "$M/x"; echo .)
		st=$("$T" stat "$M/x")
		t2=$("$T" read "$M/x"; echo .)
		[ "$t1" == "$t2" ] && break
	done
	TXT=${t1%.}
	ST=$st
}
stat_vs_text
sv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$ST"; }
is "$(sv mode)" 0100640 "stat: regular file, mode 0666 from create masked by umask 027"
is "$(sv nlink)/$(sv uid)/$(sv gid)" 1/0/0 "stat: nlink 1, uid and gid of the creator"
# doc/semantics.md (stat): st_size is the length of the holder's data (0 for a
# new lock, as lock-file programs check), not of the text.
is "$(sv size)" 0 "stat: size of a new lock is 0 (no data yet)"
# stat's times are the text's, in the host's clock (DynamoDB's, as the
# mount estimates it, less its lead over the host: within its second of
# resolution here), and never in the host's future.
near() { local d=$(($1 - $2)); [ "${d#-}" -le 2500 ]; }
m_ms=$(sv mtime | tr -d .) c_ms=$(sv ctime | tr -d .)
ok "$(near "$m_ms" "$(rfc_ms "$(field "$TXT" heartbeat)")" && echo 0)" \
	"stat: mtime = heartbeat ($m_ms against $(field "$TXT" heartbeat))"
ok "$(near "$c_ms" "$(rfc_ms "$(field "$TXT" acquired)")" && echo 0)" \
	"stat: ctime = acquired ($c_ms against $(field "$TXT" acquired))"
now_after=$(now_ms)
ok "$([ "$m_ms" -le "$now_after" ] && [ "$c_ms" -le "$now_after" ] && echo 0)" \
	"stat: neither is after the host's now"
like "$(ls -l "$M/x")" '^-rw-r----- 1 root root ' "ls -l shows a regular file"
like "$(LC_ALL=C ls -l "$M/x")" ' [A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2} ' \
	"ls -l shows its time of day (a time in the future shows the year instead)"

# ---- extended attributes ---------------------------------------------------
xattrs_vs_text() {
	local i f t1 t2 bad
	for i in 1 2 3; do
		bad=
		t1=$("$T" read "$M/x")
		XNAMES=$("$T" listxattr "$M/x")
		for f in $(cut -d: -f1 <<<"$t1"); do
			[ "$("$T" getxattr "$M/x" "user.lockfs.$f")" == "$(field "$t1" "$f")" ] ||
				bad+=" $f"
		done
		t2=$("$T" read "$M/x")
		[ "$t1" == "$t2" ] && break
	done
	XTEXT=$t1
	XBAD=$bad
}
xattrs_vs_text
is "$XNAMES" "$(cut -d: -f1 <<<"$XTEXT" | sed 's/^/user.lockfs./')" \
	"listxattr: user.lockfs.<field> for every field of the text"
is "$XBAD" "" "getxattr user.lockfs.<field> equals the field of the text"
expect ENODATA getxattr "$M/x" user.lockfs.data
expect ENODATA getxattr "$M/x" user.lockfs.nosuchfield
expect ENODATA getxattr "$M/x" user.other
expect ENODATA getxattr "$M/x" trusted.other
expect EPERM setxattr "$M/x" user.lockfs.owner someone
expect ENOTSUP setxattr "$M/x" user.other value
expect EPERM removexattr "$M/x" user.lockfs.owner

# ---- data --------------------------------------------------------------------
hold_cmd h "write hello world"
is "$HOUT" 0 "write on the holding fd: 0"
is "$(field "$("$T" read "$M/x")" data)" "hello world" "data: what the holder wrote"
like "$("$T" stat "$M/x")" ' size=11 ' "stat: size is the length of the data"
is "$("$T" getxattr "$M/x" user.lockfs.data)" "hello world" "user.lockfs.data too"
is "$("$T" read "$M/x" | tail -n 1)" "data: hello world" "data: is the last line"
expect 0 write "$M/x" 'two\x0alines' O_WRONLY,O_TRUNC
is "$(field "$("$T" read "$M/x")" data)" 'two\nlines' "a newline in data is shown escaped (one line)"
expect 0 write "$M/x" '\{65536}z'
is "$("$T" read "$M/x" | sed -n 's/^data: //p' | tr -d '\n' | wc -c)" 65536 "64 KiB of data is accepted"
expect EFBIG write "$M/x" '\{65537}z'
hold_cmd h 'write \{65537}y'
is "$HOUT" EFBIG "64 KiB + 1 on the holding fd: EFBIG"
is "$("$T" read "$M/x" | sed -n 's/^data: //p' | tr -d 'z\n' | wc -c)" 0 "a refused write leaves the data alone"
expect 0 write "$M/x" new O_WRONLY,O_TRUNC
is "$(field "$("$T" read "$M/x")" data)" new "O_TRUNC by the holder replaces the data"
expect 0 truncate "$M/x" 2
is "$(field "$("$T" read "$M/x")" data)" ne "truncate by the holder cuts the data"
# O_TRUNC truncates whatever the access mode, as on Linux: O_RDONLY|O_TRUNC
# by the holder cuts the data (it answered 0 and left it)
expect 0 open "$M/x" O_RDONLY,O_TRUNC
is "$(field "$("$T" read "$M/x")" data)" "" "O_RDONLY|O_TRUNC by the holder truncates"
expect 0 write "$M/x" ne

# a shared lock has no data: a truncate to any size but 0 is refused at
# once, every time, and cutting it to nothing (O_TRUNC: a second reader's
# `exec 9>lock` before `flock -s 9`) leaves it as it is; its files still
# close cleanly (a truncate let through failed in the background, then
# every close of the key said EPERM)
hold_start hs "$M/sh" O_RDWR,O_CREAT 0644
hold_cmd hs "flock sh"
is "$HOUT" 0 "a shared lock taken with flock"
tr_out=
for i in 1 2 3 4 5 6; do tr_out+="$("$T" truncate "$M/sh" 2 2>&1) "; done
is "$tr_out" "EPERM EPERM EPERM EPERM EPERM EPERM " "truncate of a shared lock to 2: EPERM, every time"
expect 0 truncate "$M/sh" 0
expect 0 open "$M/sh" O_WRONLY,O_TRUNC
is "$(bash -c 'exec 9>"$1" && flock -s -n 9 && echo shared' _ "$M/sh" 2>&1)" shared \
	"a second reader's exec 9>lock; flock -s 9: shared"
expect 0 open "$M/sh" O_RDONLY
hold_cmd hs "write x"
is "$HOUT" EPERM "write on the shared lock's fd: EPERM"
hold_cmd hs close
is "$HOUT" 0 "close of the shared lock's fd: 0"
hold_stop hs

# ---- metadata changes are refused --------------------------------------------
expect EPERM chmod "$M/x" 0600
expect EPERM chmod "$M/x" 0640
expect EPERM chown "$M/x" 65534 65534
expect EPERM chown "$M/x" 0 0
expect EPERM rename "$M/x" "$M/y"
expect EPERM symlink "$M/x" "$M/y"
expect EPERM symlink /etc/passwd "$M/y"
expect EPERM mknod "$M/y" reg 0644
expect EPERM mknod "$M/y" fifo 0644
expect ENOENT stat "$M/y"
ST=$("$T" stat "$M/x")
is "$(sv mode)" 0100640 "the mode is unchanged"

# link by the holder acquires the new name (README: the dotlock protocols)
expect 0 link "$M/x" "$M/y"
ix=$("$T" stat "$M/x" | sed 's/ .*//') iy=$("$T" stat "$M/y" | sed 's/ .*//')
is "$iy" "$ix" "link by the holder: one inode for both names"
like "$("$T" stat "$M/y")" ' nlink=2 ' "... with a link count of 2"
# one second name at a time: a third took the inode's alias while the
# second still named it, and one name then read and wrote another's key
expect EMLINK link "$M/x" "$M/z"
expect EMLINK link "$M/y" "$M/z"
expect ENOENT stat "$M/z"
expect 0 unlink "$M/y"
like "$("$T" stat "$M/x")" ' nlink=1 ' "after unlinking the new name x has one link again"
expect ENOENT stat "$M/y"
expect 0 link "$M/x" "$M/z"
like "$("$T" stat "$M/z")" ' nlink=2 ' "once the second name is gone, a new one can be made"
expect 0 unlink "$M/z"

# ---- fsync and poll ------------------------------------------------------
v_before=$(field "$("$T" read "$M/x")" version)
hb_before=$(field "$("$T" read "$M/x")" heartbeat)
sleep 0.01
hold_cmd h fsync
is "$HOUT" 0 "fsync on the holding fd: 0 (still ours)"
after=$("$T" read "$M/x")
ok "$([ "$(field "$after" version)" != "$v_before" ] && [ "$(rfc_ms "$(field "$after" heartbeat)")" -gt "$(rfc_ms "$hb_before")" ] && echo 0)" \
	"fsync is a heartbeat: new version, later heartbeat"
expect 0 fsync "$M/x" O_RDONLY
hold_cmd h "poll 0"
is "$HOUT" POLLIN "poll on a held lock: readable, no POLLERR/POLLPRI"

# ---- other uids (allow_other; the root directory is sticky 1777) -----------
is "$(stat -c %a "$M")" 1777 "the root directory is 1777"
NB=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if "${NB[@]}" "$T" stat "$M" >/dev/null 2>&1; then
	(umask 0; "$T" open "$M/w" O_CREAT,O_EXCL,O_RDONLY 0666 >/dev/null)
	expect_as 65534 EPERM write "$M/w" nope
	is "$("${NB[@]}" "$T" read "$M/w" | sed -n 's/^key: //p')" w "another uid can read a lock"
	expect_as 65534 EPERM truncate "$M/w" 0
	expect_as 65534 EPERM link "$M/w" "$M/w2"
	expect_as 65534 EPERM unlink "$M/w"
	expect_as 65534 EPERM open "$M/w" O_WRONLY,O_TRUNC
	expect_as 65534 EPERM open "$M/w" O_RDONLY,O_TRUNC
	expect_as 65534 0 open "$M/nb" O_CREAT,O_EXCL,O_RDONLY 0644
	is "$("$T" stat "$M/nb" | sed 's/.*uid=\([0-9]*\) gid=\([0-9]*\).*/\1 \2/')" "65534 65534" \
		"a lock belongs to the uid and gid that created it"
	like "$(field "$("$T" read "$M/nb")" holder)" ' uid=65534 cmd=lockfs-t$' "holder: uid of the creator"
	expect_as 65534 0 write "$M/nb" mine
	expect_as 65534 0 unlink "$M/nb"
	expect_as 65534 0 open "$M/nb" O_CREAT,O_EXCL,O_RDONLY 0644
	expect 0 unlink "$M/nb"
	expect ENOENT stat "$M/nb"
	expect 0 unlink "$M/w"
else
	for i in $(seq 16); do skip "other uids" "uid 65534 cannot reach $M"; done
fi

# ---- unlink releases ---------------------------------------------------------
f1=$(field "$("$T" read "$M/x")" fence)
rel0=$(metric lockfs_releases_total "$M")
expect 0 unlink "$M/x"
expect ENOENT stat "$M/x"
expect ENOENT open "$M/x" O_RDONLY
hold_cmd h fsync
is "$HOUT" EIO "fsync on the holding fd after unlink: EIO (no longer ours)"
hold_cmd h "write late"
is "$HOUT" EIO "write on the holding fd after unlink: EIO"
is "$(metric lockfs_releases_total "$M")" $((rel0 + 1)) "the release is counted"
unlike "$("$T" readdir "$M")" $'(^|\n)x($|\n)' "a released lock is not listed"
expect 0 open "$M/x" O_CREAT,O_EXCL,O_RDONLY 0644
t2=$("$T" read "$M/x")
f2=$(field "$t2" fence)
unlike "$t2" $'(^|\n)data:' "a new holder starts without data"
expect 0 unlink "$M/x"
expect 0 open "$M/x" O_CREAT,O_EXCL,O_RDONLY 0644
f3=$(field "$("$T" read "$M/x")" fence)
ok "$([ "$f1" -lt "$f2" ] && [ "$f2" -lt "$f3" ] && echo 0)" "the fence strictly increases across release and re-acquire ($f1 < $f2 < $f3)"
hold_cmd h read
like "$HOUT" $'(^|\n)state: (released|lost)($|\n)' "the old holding fd does not say held ($(field "$HOUT" state))"
hold_stop h
expect 0 unlink "$M/x"

# a key acquired by O_CREAT without O_EXCL
expect 0 open "$M/plain" O_CREAT,O_WRONLY 0644
is "$(field "$("$T" read "$M/.lockfs/status")" locks_held)" 1 "O_CREAT without O_EXCL on a free key acquires it"
expect 0 unlink "$M/plain"

# ---- directories -------------------------------------------------------------
umask 027
expect 0 mkdir "$M/d" 0777
umask 022
like "$("$T" stat "$M/d")" ' mode=040750 nlink=2 uid=0 gid=0 ' "mkdir: a directory, mode masked by umask"
expect EEXIST mkdir "$M/d" 0755
expect EEXIST open "$M/d" O_CREAT,O_EXCL,O_RDONLY 0644
expect EISDIR open "$M/d" O_WRONLY
expect 0 open "$M/d/l" O_CREAT,O_EXCL,O_RDONLY 0644
is "$(field "$("$T" read "$M/d/l")" key)" d/l "a lock in a directory has the key dir/name"
expect 0 mkdir "$M/d/sub" 0755
expect ENOTEMPTY rmdir "$M/d"
expect ENOTDIR rmdir "$M/d/l"
expect ENOTDIR open "$M/d/l/z" O_CREAT,O_EXCL,O_RDONLY 0644
expect EEXIST mkdir "$M/d/l" 0755
expect ENOENT open "$M/nodir/z" O_CREAT,O_EXCL,O_RDONLY 0644
is "$("$T" readdir "$M/d" | sort | tr '\n' ' ')" ". .. l sub " "readdir lists the locks and directories of a directory"
expect 0 unlink "$M/d/l"
expect ENOTEMPTY rmdir "$M/d"
expect 0 rmdir "$M/d/sub"
expect 0 rmdir "$M/d"
expect ENOENT stat "$M/d"
expect ENOENT rmdir "$M/d"

# ---- readdir and the cost of ls -l ---------------------------------------------
for i in $(seq -w 1 20); do "$T" open "$M/many$i" O_CREAT,O_EXCL,O_RDONLY 0644 >/dev/null; done
"$T" mkdir "$M/dd" 0755 >/dev/null
is "$(ls -A "$M" | tr '\n' ' ')" ".lockfs dd $(printf 'many%s ' $(seq -w 1 20))" \
	"ls -A lists the control directory, the directory and the 20 locks"
# A second mount with the default 1 s caches: ls -l there must not make a
# request per entry.
mount_start b "owner=ops-b-$$"
B=$(mnt b)
reqs() {
	"$T" read "$B/.lockfs/metrics" |
		awk '/^lockfs_dynamodb_requests_total/ { s += $2 } END { print s }'
}
r0=$(reqs)
lsl=$(ls -l "$B")
r1=$(reqs)
is "$(grep -c '^-' <<<"$lsl")" 20 "ls -l on another mount lists the 20 locks as files"
ok "$([ $((r1 - r0)) -le 4 ] && echo 0)" "ls -l of 21 entries costs at most 4 requests ($((r1 - r0)))"
mount_stop b

# ---- the kernel's requests, counted by operation ---------------------------------
c0=$(fuse_reqs create "$M") u0=$(fuse_reqs unlink "$M")
"$T" open "$M/counted" O_CREAT,O_EXCL,O_RDONLY 0644 >/dev/null
expect 0 unlink "$M/counted"
is "$(($(fuse_reqs create "$M") - c0)) $(($(fuse_reqs unlink "$M") - u0))" "1 1" \
	"lockfs_fuse_requests_total counts the cycle's one create and one unlink"
is "$("$T" read "$M/.lockfs/metrics" | grep -c '^lockfs_fuse_requests_total{op="[a-z_]*"} [0-9]*$')" 33 \
	"... and each of the 33 operations lockfs answers, by name"

# ---- bash noclobber ------------------------------------------------------------
(set -C; : >"$M/clob") 2>/dev/null
ok $? "set -C; : > file acquires"
(set -C; : >"$M/clob") 2>/dev/null
ok "$([ $? -ne 0 ] && echo 0)" "a second set -C; : > file fails"
is "$(field "$("$T" read "$M/clob")" state)" held "the noclobber lock is held"

mount_stop a
