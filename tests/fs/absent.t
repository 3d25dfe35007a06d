#!/usr/bin/env bash
# absent.t: a name a lookup just found free is answered free again from
# memory for FS_ABSENT_MS (100 ms), so the stat that shells and lock-file
# tools make before their O_CREAT|O_EXCL, and mkdir's own check after
# the kernel's lookup, cost no second read (tests/fs/costs.t counts the
# requests: one Query and one PutItem each, where there were two
# Queries). The memory is a view, never a decision: a lock another mount
# takes in that window still refuses this mount's O_CREAT|O_EXCL (EEXIST),
# its flock(1) open and its mkdir, and this mount shows it (stat, cat)
# once it has tried, and to a lookup once the 100 ms are past. A name
# made a directory here is one at once.
. "$(dirname "$0")/lib.sh"

plan 12

new_table || { echo "Bail out! cannot create a table"; exit 1; }
mount_start a "owner=absent-a" && mount_start b "owner=absent-b" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)

# 1. bash's noclobber on a name a lookup just found free: acquired.
stat "$A/n1" >/dev/null 2>&1
bash -c "set -C; : > '$A/n1'"
is "$?/$(field "$(cat "$A/n1")" state)" 0/held "set -C; : > f right after a stat of it: the lock is held"
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

# 5. mkdir of a name just found free: a directory at once.
stat "$A/n5" >/dev/null 2>&1
mkdir "$A/n5"
ok "$(test -d "$A/n5"; echo $?)" "mkdir of a name just found free: a directory at once"
rmdir "$A/n5"

# 6. mkdir of a name b took meanwhile: refused, and a shows b's lock at once.
stat "$A/n6" >/dev/null 2>&1
expect 0 open "$B/n6" O_CREAT,O_EXCL,O_RDONLY 0644
mkdir "$A/n6" 2>/dev/null
is "$?/$(test -f "$A/n6" && echo file)" "1/file" \
	"mkdir of a name b took after a found it free: refused, and a shows the lock at once"
rm -f "$B/n6"
