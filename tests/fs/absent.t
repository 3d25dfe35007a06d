#!/usr/bin/env bash
# absent.t: a name a lookup just found free is answered free again from
# memory for FS_ABSENT_MS (100 ms), so the stat that shells and lock-file
# tools make before their O_CREAT|O_EXCL costs the acquire no second read:
# bash's noclobber (`set -C; : > f`) is one Query and one PutItem through
# the fault proxy (it was two Queries and one PutItem). The memory is a
# view, never a decision: a lock another mount takes in that window still
# refuses this mount's O_CREAT|O_EXCL (EEXIST) and its flock(1) open, and
# this mount shows it (stat, cat) once it has tried, and to a lookup once
# the 100 ms are past. mkdir's own check of the name is served the same
# way (one Query and one PutItem; it was two Queries), and the name is a
# directory at once; a mkdir refused because b took the name shows b's lock at once.
. "$(dirname "$0")/lib.sh"

plan 14

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=absent-a" ||
	{ echo "Bail out! cannot mount a"; exit 1; }
mount_start b "owner=absent-b" || { echo "Bail out! cannot mount b"; exit 1; }
A=$(mnt a) B=$(mnt b)

# op NAME: how many NAME requests the proxy has carried.
op() { proxy_ctl stats | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# delta CMD...: runs CMD; Q and P are the Queries and PutItems it cost.
delta() {
	local q0 p0
	q0=$(op Query) p0=$(op PutItem)
	"$@"
	Q=$(($(op Query) - q0)) P=$(($(op PutItem) - p0))
}
# fewest NAME CMD...: the fewest "Queries/PutItems" of three runs of CMD
# with NAME, NAME.2, NAME.3 for {} (a read slower than the memory's 100 ms,
# on a loaded machine, costs a run its second read). Removes each.
fewest() {
	local name=$1 i best= cmd
	shift
	for i in "" .2 .3; do
		cmd=${*//\{\}/$name$i}
		delta bash -c "$cmd"
		[ -z "$best" ] || [ "$Q" -lt "${best%/*}" ] && best=$Q/$P
		rm -f "$name$i" 2>/dev/null || rmdir "$name$i" 2>/dev/null
	done
	echo "$best"
}

# 1. bash's noclobber: a stat, then O_CREAT|O_EXCL.
is "$(fewest "$A/n1" "set -C; : > '{}'")" "1/1" \
	"set -C; : > f costs one Query and one PutItem (stat's read answers the open's lookup)"
bash -c "set -C; : > '$A/n1'"
is "$(field "$(cat "$A/n1")" state)" held "  and the lock is held"
rm -f "$A/n1"

# 2. Free on a, then taken on b at once: a's O_CREAT|O_EXCL still asks
# DynamoDB, which refuses it.
stat "$A/n2" >/dev/null 2>&1
expect 0 open "$B/n2" O_CREAT,O_EXCL,O_RDONLY 0644
expect EEXIST open "$A/n2" O_CREAT,O_EXCL,O_RDONLY 0644
like "$(cat "$A/n2" 2>&1)" "owner: absent-b" "  a shows b's lock right after its refused create"
rm -f "$B/n2"

# 3. The same with flock(1) (O_CREAT without O_EXCL): it opens b's lock and
# gets no flock while b's holder has one.
stat "$A/n3" >/dev/null 2>&1
hold_start h3 "$B/n3" O_CREAT,O_RDWR 0644
hold_cmd h3 "flock ex"
is "$HOUT" 0 "b holds n3 with flock right after a found it free"
timeout 10 flock -n "$A/n3" true
is "$?" 1 "  a's flock -n on n3 is refused (it opened b's lock)"
hold_stop h3

# 4. Taken on b after a lookup on a: a lookup on a sees it within the
# memory's 100 ms (and a round trip), never later.
stat "$A/n4" >/dev/null 2>&1
expect 0 open "$B/n4" O_CREAT,O_EXCL,O_RDONLY 0644
t0=$(now_ms)
wait_for 5 test -e "$A/n4"
ok $? "a lookup on a shows b's new lock"
dt=$(($(now_ms) - t0))
ok "$([ "$dt" -le 1000 ] && echo 0)" "  within a second ($dt ms)"
rm -f "$B/n4"

# 5. mkdir of a free name: the kernel's lookup serves mkdir's own check
# (the directory's write decides), and it is a directory at once.
is "$(fewest "$A/n5" "mkdir '{}'")" "1/1" "mkdir of a free name costs one Query and one PutItem"
mkdir "$A/n5"
ok "$(test -d "$A/n5"; echo $?)" "  and it is a directory at once"
rmdir "$A/n5"

# 6. mkdir of a name b took meanwhile: refused, and a shows b's lock at once.
stat "$A/n6" >/dev/null 2>&1
expect 0 open "$B/n6" O_CREAT,O_EXCL,O_RDONLY 0644
mkdir "$A/n6" 2>/dev/null
is "$?/$(test -f "$A/n6" && echo file)" "1/file" \
	"mkdir of a name b took after a found it free: refused, and a shows the lock at once"
rm -f "$B/n6"
