#!/usr/bin/env bash
# owncache.t: the kernel keeps this mount's own lock names for
# entry_timeout, which spares the lookup it made before each unlink; the
# names of other owners' locks it asks for every time. A name of ours can
# outlive its lock (released with no unlink through the kernel: its
# process group gone, a close under hold=fd, a loss). It decides nothing:
# its attributes are not kept, so stat asks the daemon and says ENOENT at
# once, an exclusive create asks again, and flock(1)'s O_CREAT open takes
# the key as it is now.
# Mount a has entry_timeout=30, so that every name of ours is surely
# still cached when it is used, and goes through the fault proxy (2 ms
# each way); b checks from outside.
. "$(dirname "$0")/lib.sh"

plan 15

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=cache-a,entry_timeout=30" &&
	mount_start b "owner=cache-b" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
proxy_ctl latency 2 >/dev/null
ok $? "a's requests are delayed by 2 ms each way"

free_on_b() { [ "$("$T" stat "$B/$1" 2>&1)" = ENOENT ]; }

# ---- the lookup before unlink is spared ---------------------------------------
l0=$(fuse_reqs lookup)
is "$("$T" cycle "$A/c" 20)" "ok=20 failed=0" "20 cycles (create, close, unlink) on a"
l=$(($(fuse_reqs lookup) - l0))
ok "$([ "$l" -le 22 ] && echo 0)" \
	"one lookup a cycle (before the create), none before the unlink: $l for 20"

# ---- a name of ours that outlived its lock -----------------------------------
# The creator's process group ends: the daemon releases the lock, and the
# kernel still has the name.
setsid "$T" open "$A/k1" O_CREAT,O_EXCL,O_RDONLY 0644 >"$WORK/k1.out" 2>&1
is "$(cat "$WORK/k1.out")" 0 "a: k1 created by a process group that then ended"
wait_for 10 free_on_b k1
ok $? "the lock is released (b finds no k1)"
expect ENOENT stat "$A/k1"
# Again from a group that stays 3 s: the create must reach the daemon.
setsid bash -c 'echo "$("$0" open "$1" O_CREAT,O_EXCL,O_RDONLY 0644)" >"$2"; sleep 3' \
	"$T" "$A/k1" "$WORK/k1b.out" </dev/null >/dev/null 2>&1 &
track_pid $!
wait_for 10 test -s "$WORK/k1b.out"
is "$(cat "$WORK/k1b.out")" 0 \
	"a: O_CREAT|O_EXCL on the cached name asks again, and acquires k1"
is "$("$T" flock "$B/k1" O_CREAT,O_RDONLY ex,nb)" EAGAIN \
	"b cannot take k1 meanwhile (it is a's)"
wait_for 10 free_on_b k1
ok $? "released again when that second group ended"
is "$("$T" flock "$A/k1" O_CREAT,O_RDONLY ex,nb)" 0 \
	"a: an O_CREAT open and flock (flock(1)) on the cached name take k1"

# ---- other owners' names are not cached ------------------------------------------
expect 0 open "$B/k2" O_CREAT,O_EXCL,O_RDONLY 0644
is "$("$T" open "$A/k2" O_CREAT,O_EXCL,O_RDONLY 0644)" EEXIST "a: b holds k2"
expect 0 unlink "$B/k2"
is "$("$T" open "$A/k2" O_CREAT,O_EXCL,O_RDONLY 0644)" 0 \
	"a acquires k2 at once after b's unlink"

# ---- concurrent callers, each its own key -----------------------------------
for i in 1 2 3 4; do
	timeout 120 "$T" cycle "$A/w$i" 25 >"$WORK/w$i.out" 2>&1 &
	eval "p$i=\$!"
done
for i in 1 2 3 4; do eval "_reap \$p$i 130 >/dev/null"; done
is "$(cat "$WORK"/w*.out | sort | uniq -c | tr -s ' ')" " 4 ok=25 failed=0" \
	"four processes, 25 cycles each on a, none failed"
