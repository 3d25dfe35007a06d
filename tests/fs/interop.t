#!/usr/bin/env bash
# interop.t: lockfs and a python_dynamodb_lock client (tests/interop/pylock.py,
# the library's calls and conditions through boto3) exclude each other on the
# same key. lockfs rows are valid python_dynamodb_lock items (required
# attributes and types, expiry_time = now + 1 h); a python-held key gives
# EEXIST on the mount and cat shows only the fields the row has; releases on
# either side let the other acquire; fences survive a python holder in
# between; a python lock that stops heartbeating is taken over only a whole
# lease (its lease_duration) after lockfs last saw its version change; a
# python lock broken by allow_break makes the python client's heartbeat
# fail; python keys with '/' are files in directories.
. "$(dirname "$0")/lib.sh"

need_boto3

plan 56

new_table || { echo "Bail out! cannot create a table"; exit 1; }
export PYLOCK_TABLE=$TABLE LOCKFS_DDB_ENDPOINT=$ENDPOINT
py() { timeout 30 "$PY" "$PYLOCK" "$@" 2>>"$WORK/pylock.err"; }
OPT=entry_timeout=0,attr_timeout=0
mount_start a "owner=fs-owner,$OPT" &&
	mount_start c "owner=fs-breaker,allow_break,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
M=$(mnt a) C=$(mnt c)

# ---- lockfs holds: the python client is refused ---------------------------------
t_acq=$(date +%s)
expect 0 open "$M/job" O_CREAT,O_EXCL,O_RDONLY 0644
out=$(py acquire job --owner py-owner)
is "$?/$out" "3/ConditionalCheckFailed" "python acquire of a lockfs-held key: ConditionalCheckFailed"
text=$("$T" read "$M/job")   # (the holder's first read allocates the fence)
show=$(py show job)
is "$?" 0 "python parses lockfs's row (every required attribute, right types)"
sv() { sed -n "s/^$1=//p" <<<"$show"; }
is "$(sv owner_name)" fs-owner "owner_name is the mount's owner"
is "$(sv sort_key)" - "sort_key is -"
is "$(sv lease_duration)" 30.0 "lease_duration is the lease in seconds"
is "$(sv record_version_number)" "$(field "$text" version)" "record_version_number is the version cat shows"
et=$(sv expiry_time)
ok "$([ "$et" -ge $((t_acq + 3500)) ] && [ "$et" -le $((t_acq + 3700)) ] && echo 0)" \
	"expiry_time is now + 1 h ($((et - t_acq)) s)"
out=$(py release job 00000000-0000-4000-8000-000000000000)
is "$?/$out" "3/ConditionalCheckFailed" "python release with another RVN: refused"
is "$(field "$("$T" read "$M/job")" state)" held "lockfs still holds job"
fence1=$(field "$text" fence)
expect 0 unlink "$M/job"
is "$(py show job)" none "unlink on the mount deletes the row"

# ---- python holds: the mount is refused ------------------------------------------
rvn=$(py acquire job --owner py-owner --lease 30)
ok $? "after rm on the mount, python acquires job"
expect EEXIST open "$M/job" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 open "$M/job" O_CREAT,O_RDONLY 0644
text=$("$T" read "$M/job")
is "$(cut -d: -f1 <<<"$text" | tr '\n' ' ')" "key state owner version lease " \
	"cat shows only the fields a python row has (no holder, times or fence invented)"
is "$(field "$text" owner)" py-owner "cat shows the python owner_name"
is "$(field "$text" version)" "$rvn" "cat shows the python RVN"
is "$(field "$text" lease)" 30.000 "cat shows the python lease_duration"
is "$(field "$text" state)" held "state: held"
is "$("$T" listxattr "$M/job" | tr '\n' ' ')" \
	"user.lockfs.key user.lockfs.state user.lockfs.owner user.lockfs.version user.lockfs.lease " \
	"listxattr lists only those fields"
like "$("$T" stat "$M/job")" ' mode=0100644 nlink=1 ' "stat: a regular file"
like "$("$T" readdir "$M")" $'\njob($|\n)' "ls lists the python lock"
expect EPERM unlink "$M/job"
expect EPERM write "$M/job" data
is "$(py show job | sed -n 's/^record_version_number=//p')" "$rvn" "the python row is untouched"
out=$(py release job "$rvn")
is "$?/$out" "0/released" "python releases job"
expect 0 open "$M/job" O_CREAT,O_EXCL,O_RDONLY 0644
text=$("$T" read "$M/job")
is "$(field "$text" owner)" fs-owner "after the python release lockfs acquires at once"
ok "$([ "$(field "$text" fence)" -gt "$fence1" ] && echo 0)" \
	"the fence survives a python holder in between ($fence1 < $(field "$text" fence))"
expect 0 unlink "$M/job"
rvn=$(py acquire job --owner py-again)
ok $? "lockfs's other rows (fence counter) do not stop a python acquire of the same key"
py release job "$rvn" >/dev/null

# ---- a python lock that heartbeats is never taken; a dead one is, after its lease ----
rvn=$(py acquire hb --owner py-hb --lease 2)
first=$("$T" open "$M/hb" O_CREAT,O_EXCL,O_RDONLY 0644)
t0=$(now_ms)
refused=0 tries=0
while [ $(($(now_ms) - t0)) -lt 4000 ]; do
	rvn=$(py heartbeat hb "$rvn") || break
	t_last=$(now_ms)   # the last RVN change is before this
	tries=$((tries + 1))
	[ "$("$T" open "$M/hb" O_CREAT,O_EXCL,O_RDONLY 0644)" = EEXIST ] &&
		refused=$((refused + 1))
	sleep 0.3
done
is "$first/$refused" "EEXIST/$tries" "a python lock (lease 2 s) heartbeating for 4 s is never taken ($tries tries)"
got=
while [ $(($(now_ms) - t_last)) -lt 6000 ]; do
	got=$("$T" open "$M/hb" O_CREAT,O_EXCL,O_RDONLY 0644)
	[ "$got" = 0 ] && break
	sleep 0.05
done
waited=$(($(now_ms) - t_last))
is "$got" 0 "once its heartbeats stop, lockfs takes the python lock over"
ok "$([ "$waited" -ge 1900 ] && [ "$waited" -le 3500 ] && echo 0)" \
	"... a lease (2 s) after the last change it saw ($waited ms)"
is "$(py show hb | sed -n 's/^owner_name=//p')" fs-owner "python sees lockfs's owner"
out=$(py heartbeat hb "$rvn")
is "$?/$out" "3/ConditionalCheckFailed" "the old python holder's heartbeat fails (lock stolen)"
expect 0 unlink "$M/hb"

# ---- allow_break on a python lock ----------------------------------------------
rvn=$(py acquire brk --owner py-brk)
expect EPERM unlink "$M/brk"
expect 0 unlink "$C/brk"
out=$(py heartbeat brk "$rvn")
is "$?/$out" "3/ConditionalCheckFailed" "after a break the python holder's heartbeat fails"
is "$(py show brk)" none "the broken row is gone"

# ---- python keys with '/' ---------------------------------------------------
rvn=$(py acquire team/nightly --owner py-team)
like "$("$T" readdir "$M")" $'\nteam($|\n)' "a python key team/nightly makes a directory team"
is "$("$T" readdir "$M/team" | sort | tr '\n' ' ')" ". .. nightly " "... with the file nightly"
is "$(field "$("$T" read "$M/team/nightly")" owner)" py-team "cat team/nightly shows the python owner"
expect EEXIST open "$M/team/nightly" O_CREAT,O_EXCL,O_RDONLY 0644
expect ENOTEMPTY rmdir "$M/team"
py release team/nightly "$rvn" >/dev/null

# ---- a lockfs directory, seen by python -----------------------------------------
expect 0 mkdir "$M/space" 0755
out=$(py acquire space --owner py-space)
is "$?/$out" "3/ConditionalCheckFailed" "python acquire of a lockfs directory's name: ConditionalCheckFailed"
show=$(py show space)
is "$?" 0 "python parses the directory's marker (it is the lock item of the name)"
is "$(sv owner_name)" lockfs:namespace "the marker's owner_name says what it is"
is "$(sv lease_duration)" 1000000000.0 "its lease (10^9 s): a python client waiting for it gives up before taking it over"
expect 0 rmdir "$M/space"
is "$(py show space)" none "rmdir deletes the marker"

mount_stop a
mount_stop c
