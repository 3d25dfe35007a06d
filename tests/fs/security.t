#!/usr/bin/env bash
# security.t: issue 12 with two unprivileged users (uids 1001 and 1002) on
# mounts with allow_other (default_permissions is always on):
#  1  a private directory stays private after any ls -l of its parent, even
#     when a key below it is listed before its own row (readdirplus);
#  3  per-user limits on held locks, waiters, directories and open files
#     give EDQUOT to the user over one, never to the other or to root;
#  4  200 one-byte pwrites cost a few item writes, not 200;
#  5  .lockfs/status lists for each user only the locks ls would show it;
#     metrics has counts only;
#  8  names, other clients' owner_name, lockfs_cmd and data are escaped in
#     the text, the xattrs, the status, the daemon's log and lockfs-run's
#     messages (no raw newline, ESC, C1 control or U+202E);
#  9  rows never show setuid/setgid, and a directory row of nobody (65534)
#     belongs to the mount root's owner: nobody cannot chmod it;
# 12  lockfs-run refuses to run when the lock file's name points at another
#     file once the lock is granted (device and inode compared).
# Item 11 (a create racing another user's acquire) is decided between the
# kernel's lookup and create, out of a script's reach: tests/unit/fs_security
# covers it on the filesystem layer.
. "$(dirname "$0")/lib.sh"

[ -x /usr/bin/python3 ] || skip_all "python3 is missing (contrib/install-deps test)"
plan 83

: "${LOCKFS_RUN_BIN:=$(dirname "$LOCKFS_BIN")/lockfs-run}"
U1=1001 U2=1002
AS1=(setpriv --reuid=$U1 --regid=$U1 --clear-groups)
AS2=(setpriv --reuid=$U2 --regid=$U2 --clear-groups)
field_kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
ESC=$'\x1b' RLO=$'\xe2\x80\xae' CSI1=$'\xc2\x9b'
# raw BYTES FILE...: the number of lines holding those raw bytes.
raw() { local b=$1; shift; LC_ALL=C grep -c -F -- "$b" "$@" 2>/dev/null | awk -F: '{ s += $NF } END { print s + 0 }'; }

new_table || { echo "Bail out! cannot create a table"; exit 1; }
mount_start a "owner=sec-a,allow_other,attr_timeout=30,entry_timeout=30" &&
	mount_start q "owner=sec-q,allow_other,attr_timeout=0,entry_timeout=0,prefix=q/,max_locks_per_user=3,max_waiters_per_user=1,max_dirs_per_user=2,max_opens_per_user=6" &&
	mount_start w "owner=sec-w,allow_other,lease=60,heartbeat=20,safe_period=40" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) Q=$(mnt q) W=$(mnt w)

# ddb OP JSON: DynamoDB as another client would call it (DynamoDB Local
# checks no signature), straight to 127.0.0.1 (no proxy).
ddb() {
	timeout 20 /usr/bin/python3 - "$ENDPOINT" "$1" "$2" <<'PY'
import sys, urllib.request
url, op, body = sys.argv[1:4]
req = urllib.request.Request(url, data=body.encode(), headers={
    "X-Amz-Target": "DynamoDB_20120810." + op,
    "Content-Type": "application/x-amz-json-1.0",
    "Authorization": "AWS4-HMAC-SHA256 Credential=fake/20260101/"
                     "us-east-1/dynamodb/aws4_request, "
                     "SignedHeaders=host, Signature=00"})
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
sys.stdout.write(opener.open(req, timeout=10).read().decode())
PY
}
now_s=$(date +%s)
# foreign_lock KEY UID MODE OWNER CMD DATA: a live row with lockfs's fields.
foreign_lock() {
	ddb PutItem "{\"TableName\":\"$TABLE\",\"Item\":{
		\"lock_key\":{\"S\":\"$1\"},\"sort_key\":{\"S\":\"-\"},
		\"owner_name\":{\"S\":\"$4\"},\"lease_duration\":{\"N\":\"3600\"},
		\"record_version_number\":{\"S\":\"rvn-$RANDOM\"},
		\"expiry_time\":{\"N\":\"$((now_s + 7200))\"},
		\"lockfs_host\":{\"S\":\"elsewhere\"},\"lockfs_pid\":{\"N\":\"1\"},
		\"lockfs_uid\":{\"N\":\"$2\"},\"lockfs_gid\":{\"N\":\"$2\"},
		\"lockfs_mode\":{\"N\":\"$3\"},\"lockfs_cmd\":{\"S\":\"$5\"},
		\"lockfs_acquired\":{\"N\":\"${now_s}000\"},
		\"lockfs_heartbeat\":{\"N\":\"${now_s}000\"},
		\"lockfs_data\":{\"S\":\"$6\"}}}" >/dev/null
}
foreign_dir() {
	ddb PutItem "{\"TableName\":\"$TABLE\",\"Item\":{
		\"lock_key\":{\"S\":\"$1\"},\"sort_key\":{\"S\":\"lockfs:dir\"},
		\"lockfs_uid\":{\"N\":\"$2\"},\"lockfs_gid\":{\"N\":\"$2\"},
		\"lockfs_mode\":{\"N\":\"$3\"},
		\"lockfs_created\":{\"N\":\"${now_s}000\"}}}" >/dev/null
}

# ---- 1: a private directory stays private after ls -l ----------------------
# DynamoDB scans in hash order: some of these directories' keys below come
# before their own row in a listing of the root (checked below).
DIRS="p1 p2 p3 p4 p5 p6 p7 p8"
bad=
for d in $DIRS; do
	"${AS2[@]}" "$T" mkdir "$A/$d" 0700 >/dev/null || bad+=" mkdir-$d"
	"${AS2[@]}" "$T" open "$A/$d/x" O_CREAT,O_EXCL,O_RDONLY 0600 >/dev/null ||
		bad+=" lock-$d"
done
is "$bad" "" "user 2 makes 0700 directories p1..p8, each with a lock"
order=$(ddb Scan "{\"TableName\":\"$TABLE\"}" | grep -o '"lock_key":{"S":"[^"]*"}' |
	sed 's/.*"S":"\([^"]*\)"}/\1/')
first_below=
for d in $DIRS; do
	[ "$(grep -m1 -x -E "$d|$d/x" <<<"$order")" = "$d/x" ] && first_below+=" $d"
done
ok "$([ -n "$first_below" ] && echo 0)" \
	"a listing meets a key below before the directory's row for:$first_below"
ls -l "$A" >/dev/null
"${AS1[@]}" ls -l "$A" >/dev/null 2>&1
bad=
for d in $DIRS; do
	st=$("${AS1[@]}" "$T" stat "$A/$d")
	[ "$(field_kv "$st" mode)/$(field_kv "$st" uid)" = "040700/$U2" ] ||
		bad+=" $d:$(field_kv "$st" mode)/$(field_kv "$st" uid)"
done
is "$bad" "" "after ls -l as root and as user 1, every pN shows 0700 and user 2"
bad=
for d in $DIRS; do
	[ "$("${AS1[@]}" "$T" readdir "$A/$d" 2>&1 | head -n 1)" = EACCES ] || bad+=" ls-$d"
	[ "$("${AS1[@]}" "$T" read "$A/$d/x" 2>&1 | head -n 1)" = EACCES ] || bad+=" cat-$d"
	[ "$("${AS1[@]}" "$T" open "$A/$d/y" O_CREAT,O_EXCL,O_RDONLY 0644 2>&1 | head -n 1)" = EACCES ] ||
		bad+=" create-$d"
done
is "$bad" "" "user 1 can neither list, read nor create in any of them"
expect_as $U1 EACCES getxattr "$A/p1/x" user.lockfs.owner
expect_as $U2 0 open "$A/p1/y" O_CREAT,O_EXCL,O_RDONLY 0644
expect_as $U2 0 unlink "$A/p1/y"

# ---- 9: foreign rows: no setuid/setgid; nobody owns nothing ------------------
foreign_lock suid 0 3565 other-client x ""       # mode 06755
foreign_dir nobodys 65534 511                     # 0777
foreign_dir sgid $U1 1533                         # 02775
st=$("$T" stat "$A/suid")
is "$(field_kv "$st" mode)/$(field_kv "$st" uid)" 0100755/0 \
	"a row with mode 06755 shows as 0755 (no setuid/setgid)"
st=$("$T" stat "$A/nobodys")
is "$(field_kv "$st" mode)/$(field_kv "$st" uid)/$(field_kv "$st" gid)" 040777/0/0 \
	"a directory row of uid 65534 belongs to the mount root's owner"
expect_as 65534 EPERM chmod "$A/nobodys" 0700
expect_as $U1 EPERM chmod "$A/nobodys" 0700
expect 0 chmod "$A/nobodys" 06770
is "$(field_kv "$("$T" stat "$A/nobodys")" mode)" 040770 "root's chmod 06770 keeps 0770"
is "$(field_kv "$("$T" stat "$A/sgid")" mode)/$(field_kv "$("$T" stat "$A/sgid")" uid)" 040775/$U1 \
	"a setgid directory row shows 0775, its owner as recorded"
expect_as $U1 0 chmod "$A/sgid" 0755
expect_as $U2 EPERM chmod "$A/sgid" 0700

# ---- 5: .lockfs/status shows each user what ls would -----------------------
expect_as $U2 0 mkdir "$A/pub5" 0755
expect_as $U2 0 open "$A/pub5/seen" O_CREAT,O_EXCL,O_RDONLY 0644
expect_as $U1 0 open "$A/mine5" O_CREAT,O_EXCL,O_RDONLY 0644
s1=$("${AS1[@]}" cat "$A/.lockfs/status")
s2=$("${AS2[@]}" cat "$A/.lockfs/status")
s0=$(cat "$A/.lockfs/status")
unlike "$s1" $'\nlock: key=p[1-8]/x ' "user 1 does not see user 2's locks in 0700 directories"
like "$s1" $'\nlock: key=pub5/seen ' "user 1 sees user 2's lock in a 0755 directory"
like "$s1" $'\nlock: key=mine5 ' "user 1 sees its own lock"
is "$(grep -c '^lock: key=p[1-8]/x ' <<<"$s2")" 8 "user 2 sees its 8 private locks"
is "$(grep -c '^lock: key=p[1-8]/x ' <<<"$s0")" 8 "root sees every lock"
is "$(field "$s1" locks_held)" "$(field "$s0" locks_held)" \
	"locks_held is the mount's count for everyone (as metrics)"
ok "$([ "$(field "$s1" locks_listed)" -lt "$(field "$s0" locks_listed)" ] && echo 0)" \
	"locks_listed: fewer for user 1 ($(field "$s1" locks_listed)) than for root ($(field "$s0" locks_listed))"
m=$("${AS1[@]}" cat "$A/.lockfs/metrics")
is "$(grep -c -E 'p[1-8]/x|pub5|mine5' <<<"$m")" 0 "metrics names no key (counts only)"
like "$m" $'\nlockfs_locks_held [0-9]+' "metrics has the count of held locks"

# ---- 8: escaping ---------------------------------------------------------------
EVIL='ev\x0aall locks released\x1b[2J\xe2\x80\xae\xc2\x9bX'
expect_as $U1 0 open "$A/$EVIL" O_CREAT,O_EXCL,O_RDONLY 0644
text=$("$T" read "$A/$EVIL")
is "$(field "$text" key)" 'ev\nall locks released\x1b[2J\u202e\u009bX' \
	"cat: the key is escaped on one line"
is "$("$T" getxattr "$A/$EVIL" user.lockfs.key)" 'ev\nall locks released\x1b[2J\u202e\u009bX' \
	"getxattr user.lockfs.key: the same escaped value"
cat "$A/.lockfs/status" >"$WORK/status8"
is "$(raw "$ESC" "$WORK/status8")/$(raw "$RLO" "$WORK/status8")/$(raw "$CSI1" "$WORK/status8")" 0/0/0 \
	"status: no raw ESC, U+202E or C1 control"
like "$(cat "$WORK/status8")" 'lock: key=ev\\nall\\x20locks\\x20released\\x1b\[2J\\u202e\\u009bX state=held' \
	"status: the key escaped on its lock line"
# A log line with the name: rm from another session (EBUSY).
"${AS1[@]}" setsid -w "$T" unlink "$A/$EVIL" >"$WORK/rm8" 2>&1
is "$(cat "$WORK/rm8")" EBUSY "rm from another session of the holder's user: EBUSY"
wait_for 5 grep -q 'refused (EBUSY)' "$WORK/daemon-a.log"
like "$(grep 'refused (EBUSY)' "$WORK/daemon-a.log")" 'key=ev\\nall locks released\\x1b\[2J\\u202e\\u009bX refused' \
	"the daemon's log line names the key escaped"
is "$(raw "$ESC" "$WORK/daemon-a.log")/$(raw "$RLO" "$WORK/daemon-a.log")/$(raw "$CSI1" "$WORK/daemon-a.log")" 0/0/0 \
	"the daemon's log has no raw ESC, U+202E or C1 control"
# Another client's owner_name, lockfs_cmd and data.
foreign_lock forged 0 420 'x\nlockfs: all locks released\u001b]0;pwned\u0007' \
	'\u001b[31mcmd' 'data\u009b2J\u202eend'
text=$("$T" read "$A/forged")
is "$(field "$text" owner)" 'x\nlockfs: all locks released\x1b]0;pwned\x07' "cat: another client's owner_name escaped"
like "$(field "$text" holder)" 'cmd=\\x1b\[31mcmd$' "cat: its lockfs_cmd escaped"
is "$(field "$text" data)" 'data\u009b2J\u202eend' "cat: its data escaped (C1 control, U+202E)"
is "$("$T" getxattr "$A/forged" user.lockfs.data)" 'data\u009b2J\u202eend' "getxattr user.lockfs.data escaped"
is "$("$T" getxattr "$A/forged" user.lockfs.owner)" \
	'x\nlockfs: all locks released\x1b]0;pwned\x07' "getxattr user.lockfs.owner escaped"
# lockfs-run's messages.
EVILRAW=$(printf 'ev\nall locks released\033[2J\342\200\256\302\233X')
"${AS2[@]}" timeout 20 "$LOCKFS_RUN_BIN" -n "$A/$EVILRAW" -- true 2>"$WORK/run8"
is "$?" 75 "lockfs-run -n on the busy lock exits 75"
is "$(raw "$ESC" "$WORK/run8")/$(raw "$RLO" "$WORK/run8")/$(wc -l <"$WORK/run8")" 0/0/1 \
	"lockfs-run's message: one line, no raw ESC or U+202E"

# ---- 12: lockfs-run compares the file it reads with the file it locked -------
expect_as $U2 0 open "$A/r12a" O_CREAT,O_EXCL,O_RDONLY 0644
expect_as $U2 0 open "$A/r12b" O_CREAT,O_EXCL,O_RDONLY 0644
ln -s "$A/r12a" "$WORK/link12"
waits() { "$T" read "$A/.lockfs/metrics" | sed -n 's/^lockfs_waits_total //p'; }
w0=$(waits)
"${AS1[@]}" timeout 30 "$LOCKFS_RUN_BIN" -w 20 "$WORK/link12" -- sh -c 'echo ran' \
	>"$WORK/run12.out" 2>"$WORK/run12.err" &
run12=$!
track_pid "$run12"
wait_for 10 sh -c "[ \"\$(\"$T\" read \"$A/.lockfs/metrics\" | sed -n 's/^lockfs_waits_total //p')\" -gt $w0 ]"
ok $? "user 1's lockfs-run waits for user 2's lock r12a"
ln -sfn "$A/r12b" "$WORK/link12"   # the name now points at another lock
expect_as $U2 0 unlink "$A/r12a"
_reap "$run12" 20
is "$?" 69 "granted r12a, the name now r12b: lockfs-run exits 69"
is "$(cat "$WORK/run12.out")" "" "... and does not run the command"
like "$(cat "$WORK/run12.err")" 'was replaced by another file after the lock was granted' \
	"... and says why"
ok "$(! grep -q '^lock: key=r12a ' "$A/.lockfs/status" && echo 0)" "... leaving no lock on r12a"
expect_as $U2 0 unlink "$A/r12b"

# ---- 4: data writes are coalesced ------------------------------------------------
updates() {
	"$T" read "$W/.lockfs/metrics" |
		sed -n 's/^lockfs_dynamodb_requests_total{operation="UpdateItem"} //p'
}
expect_as $U1 0 open "$W/data" O_CREAT,O_EXCL,O_RDONLY 0644
u0=$(updates)
t0=$(now_ms)
"${AS1[@]}" timeout 30 /usr/bin/python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
for i in range(200):
    os.pwrite(fd, b"xy"[i % 2:i % 2 + 1], 65535)
os.close(fd)' "$W/data"
is "$?" 0 "user 1 (the holder) makes 200 one-byte pwrites at offset 65535"
u1=$(updates)
# At most one item write per 100 ms of the loop, and the close's (the loop
# takes a few ms, unless the machine is loaded).
most=$((2 + ($(now_ms) - t0) / 100))
ok "$([ $((u1 - u0)) -le $most ] && [ $((u1 - u0)) -lt 50 ] && echo 0)" \
	"they cost $((u1 - u0)) item writes (at most $most: one per 100 ms), not 200"
st=$("${AS2[@]}" "$T" stat "$W/data")
is "$(field_kv "$st" size)" 65536 "user 2 sees 64 KiB of data"
is "$("${AS2[@]}" "$T" read "$W/data" | sed -n 's/^data: //p' | tail -c 2)" y \
	"... ending with the last byte written"
expect_as $U2 EACCES write "$W/data" nope
u0=$(updates)
for i in 1 2 3 4 5; do
	"${AS1[@]}" "$T" write "$W/data" "pid $i" O_WRONLY >/dev/null
done
u1=$(updates)
ok "$([ $((u1 - u0)) -le 5 ] && [ "$(field "$("$T" read "$W/data")" data | head -c 5)" = "pid 5" ] && echo 0)" \
	"open, write, close five times: each write is out by its close ($((u1 - u0)) item writes)"
expect_as $U1 0 unlink "$W/data"

# ---- 3: per-user limits ------------------------------------------------------------
mkdir -m 1777 "$Q/s"
is "$?" 0 "a sticky 1777 directory on the limited mount"
bad=
for i in 1 2 3; do
	"${AS1[@]}" "$T" open "$Q/s/l$i" O_CREAT,O_EXCL,O_RDONLY 0644 >/dev/null || bad+=" l$i"
done
is "$bad" "" "user 1 holds 3 locks (max_locks_per_user=3)"
expect_as $U1 EDQUOT open "$Q/s/l4" O_CREAT,O_EXCL,O_RDONLY 0644
expect_as $U2 0 open "$Q/s/m1" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 open "$Q/s/r1" O_CREAT,O_EXCL,O_RDONLY 0644
expect_as $U1 0 unlink "$Q/s/l1"
expect_as $U1 0 open "$Q/s/l4" O_CREAT,O_EXCL,O_RDONLY 0644
like "$(cat "$WORK/daemon-q.log")" 'uid 1001 reached -o max_locks_per_user=3: request refused with EDQUOT' \
	"the log says which limit user 1 reached"
bad=
for i in 2 3 4; do
	"${AS1[@]}" "$T" unlink "$Q/s/l$i" >/dev/null || bad+=" l$i"
done
is "$bad" "" "user 1 lets go of its locks"
# directories
expect_as $U1 0 mkdir "$Q/s/d1" 0755
expect_as $U1 0 mkdir "$Q/s/d2" 0755
expect_as $U1 EDQUOT mkdir "$Q/s/d3" 0755
expect_as $U2 0 mkdir "$Q/s/d3" 0755
expect 0 rmdir "$Q/s/d1"
expect_as $U1 0 mkdir "$Q/s/d4" 0755
# waiters: user 1 may have one blocking flock waiting, user 2 its own
hold_start qw --pgrp "$Q/s/w" O_CREAT,O_EXCL,O_RDWR 0644
qwaits() { "$T" read "$Q/.lockfs/metrics" | sed -n 's/^lockfs_waits_total //p'; }
q0=$(qwaits)
timeout --foreground 30 "${AS1[@]}" "$T" flock "$Q/s/w" O_RDONLY ex >"$WORK/f1" 2>&1 &
f1=$!
track_pid "$f1"
wait_for 10 sh -c "[ \"\$(\"$T\" read \"$Q/.lockfs/metrics\" | sed -n 's/^lockfs_waits_total //p')\" -gt $q0 ]"
ok $? "user 1's flock waits"
expect_as $U1 EDQUOT flock "$Q/s/w" O_RDONLY ex
like "$(cat "$WORK/daemon-q.log")" 'uid 1001 reached -o max_waiters_per_user=1' \
	"... (the waiters' limit, says the log)"
timeout --foreground 30 "${AS2[@]}" "$T" flock "$Q/s/w" O_RDONLY ex >"$WORK/f2" 2>&1 &
f2=$!
track_pid "$f2"
wait_for 10 sh -c "[ \"\$(\"$T\" read \"$Q/.lockfs/metrics\" | sed -n 's/^lockfs_waits_total //p')\" -gt $((q0 + 1)) ]"
ok $? "user 2's flock waits too"
hold_stop qw
_reap "$f1" 20
r1=$?
_reap "$f2" 20
is "$r1/$?/$(cat "$WORK/f1")/$(cat "$WORK/f2")" "0/0/0/0" "once released both waiters get the lock in turn"
# open files (lock files and listings)
out=$(timeout 20 "${AS1[@]}" bash -c 'n=0
	for i in 1 2 3 4 5 6 7 8 9; do exec {fd}<"$1" || break; n=$((n + 1)); done
	echo "opened=$n"' _ "$Q/s/m1" 2>&1)
like "$out" 'Disk quota exceeded' "user 1's 7th open file: EDQUOT"
like "$out" 'opened=6$' "... after 6 (max_opens_per_user=6)"
out=$(timeout 20 "${AS2[@]}" bash -c 'n=0
	for i in 1 2 3 4 5 6; do exec {fd}<"$1" || break; n=$((n + 1)); done
	echo "opened=$n"' _ "$Q/s/m1" 2>&1)
is "$out" "opened=6" "user 2 opens its own 6 meanwhile"
