#!/usr/bin/env bash
# dirview.t: acquires in a subdirectory cost one request each. The kernel
# asks for a directory's attributes after every create or unlink in it
# (default_permissions checks them on the next path walk); a mount answers
# that from the directory's attributes as DynamoDB last confirmed them, for
# attr_timeout (1 s here, the default), so a cycle in a subdirectory is one
# PutItem and one DeleteItem, as in the root. The view never decides a
# lock, and it is dropped at once by this mount's own chmod and rmdir;
# another mount's chmod is seen within attr_timeout.
. "$(dirname "$0")/lib.sh"

plan 8

new_table || { echo "Bail out! cannot create a table"; exit 1; }
mount_start a "owner=dirview-a" && mount_start b "owner=dirview-b" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
req() { "$T" read "$A/.lockfs/metrics" | sed -n "s/^lockfs_dynamodb_requests_total{operation=\"$1\"} //p"; }

mkdir "$A/d"
ok $? "mkdir d"
stat "$A/d" >/dev/null
q0=$(( $(req Query) + $(req GetItem) )) p0=$(req PutItem) d0=$(req DeleteItem)
fails=0
for i in $(seq 20); do
	( set -C; : > "$A/d/k" ) 2>/dev/null || fails=$((fails + 1))
	rm "$A/d/k" || fails=$((fails + 1))
done
is "$fails" 0 "20 acquire and release cycles in d"
q=$(( $(req Query) + $(req GetItem) - q0 )) p=$(( $(req PutItem) - p0 )) d=$(( $(req DeleteItem) - d0 ))
diag "20 cycles in a subdirectory: $p PutItem, $d DeleteItem, $q reads"
is "$p $d" "20 20" "one PutItem and one DeleteItem a cycle"
ok $((!(q <= 4))) "reads: at most a few in all, not one a cycle ($q)"

# Another mount's chmod is seen within attr_timeout.
chmod 0700 "$B/d"
wait_for 3 sh -c '[ "$(stat -c %a "$1")" = 700 ]' _ "$A/d"
ok $? "another mount's chmod is seen within attr_timeout"
# This mount's own chmod and rmdir are seen at once.
chmod 0750 "$A/d"
is "$(stat -c %a "$A/d")" 750 "this mount's chmod is seen at once"
rmdir "$A/d"
ok $? "rmdir d"
expect ENOENT stat "$A/d"
