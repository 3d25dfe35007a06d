#!/usr/bin/env bash
# hidepid.t: a daemon that cannot see its callers in /proc. This file
# re-runs itself in a private mount namespace (unshare -m) and mounts a
# /proc of its own there with hidepid=invisible (and a gid= nobody here
# has), so a process without CAP_SYS_PTRACE sees in /proc only the
# processes of its own uid that are no more privileged than it. The daemon
# of mount a runs without CAP_SYS_PTRACE (setpriv); its callers are
# another user's process groups (allow_other, hold=pgrp). /proc/PID of a
# caller reads as missing to it, which before 2dfc57c meant "gone": an
# acquire answered 0 and its lock was let go of at the first close, so
# another mount took the key while its holder ran. Now the daemon asks the
# kernel (getpgid, getsid, kill 0) when /proc hides a live process. Checked
# through lockfs-faultproxy (1 ms each way): the daemon cannot read its
# callers' /proc; a group's lock holds while the group lives (another mount
# is refused, past several group checks), shown by its pid and uid (its
# command, which only /proc names, as ?), and removable only from its own
# session (another session's rm: EBUSY); the log says why groups are
# asked of the kernel; the group's death frees its lock within 5 s, a
# one-command group's lock is freed when that command ends, and a group's
# own rm releases its lock.
if [ -z "${LOCKFS_HIDEPID_NS:-}" ] && [ "$(id -u)" = 0 ] &&
	command -v unshare >/dev/null 2>&1 &&
	unshare -m --propagation private true 2>/dev/null; then
	export LOCKFS_HIDEPID_NS=1
	exec unshare -m --propagation private bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root (a mount namespace, another user)"
[ -n "${LOCKFS_HIDEPID_NS:-}" ] || skip_all "no private mount namespace (unshare -m failed)"
command -v setpriv >/dev/null || skip_all "setpriv (util-linux) is missing"
setpriv --bounding-set=-sys_ptrace true 2>/dev/null ||
	skip_all "cannot drop CAP_SYS_PTRACE (setpriv needs CAP_SETPCAP)"
mount -t proc -o hidepid=invisible,gid=4242 proc /proc 2>/dev/null ||
	skip_all "this kernel cannot mount a /proc of its own with hidepid"
plan 13

U1=1001
new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
OPT=hold=pgrp,allow_other,entry_timeout=0,attr_timeout=0
MOUNT_WRAP="setpriv --bounding-set=-sys_ptrace --" ENDPOINT=$PROXY_ENDPOINT \
	mount_start a "owner=hidepid-a,$OPT" &&
	ENDPOINT=$PROXY_ENDPOINT mount_start b "owner=hidepid-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
proxy_ctl latency 1 >/dev/null
mkdir -m 1777 "$A/shared" || { echo "Bail out! mkdir"; exit 1; }

taken_on_b() { "$T" open "$B/shared/$1" O_CREAT,O_EXCL,O_RDONLY 0644; }
free_on_b() { [ "$(taken_on_b "$1")" = 0 ]; }
gone() { ! kill -0 "$1" 2>/dev/null; }

group_hold "$A/shared/job" 300 $U1
wait_for 10 test -e "$A/shared/job"
ok "$(kill -0 "$HPID" 2>/dev/null && echo 0)" "a group of uid $U1 took the lock and runs"
if setpriv --bounding-set=-sys_ptrace cat "/proc/$HPID/stat" >/dev/null 2>&1; then
	flunk "the daemon's privileges read /proc/$HPID/stat"
else
	pass "without CAP_SYS_PTRACE, /proc/$HPID of that group is hidden"
fi

# Past the close and the group checks that follow it: still held.
sleep 1
is "$(taken_on_b job)" EEXIST "a second later another mount's O_EXCL gets EEXIST"
sleep 2
is "$(taken_on_b job)" EEXIST "... and three seconds later"
is "$(field "$("$T" read "$B/shared/job")" owner)" hidepid-a \
	"... and the row is still mount a's"
like "$(field "$("$T" read "$A/shared/job")" holder)" "pid=$HPID uid=$U1 cmd=[?]\$" \
	"mount a shows the holder by pid and uid; its command, which only /proc names, as ?"
got=$(timeout --foreground 20 setpriv --reuid=$U1 --regid=$U1 --clear-groups setsid -w \
	rm "$A/shared/job" 2>&1)
like "$got" 'Device or resource busy' \
	"rm by the same user from another session: EBUSY while the holder lives (its session asked of the kernel)"
like "$(grep -c 'process groups are asked of the kernel' "$WORK/daemon-a.log")" '^[1-9]' \
	"the daemon's log says why it asks the kernel"

kill -KILL "$HPID"
t0=$(now_ms)
if wait_for 5 free_on_b job; then
	pass "the group killed, its lock is free within 5 s ($(($(now_ms) - t0)) ms; taken on b)"
else
	flunk "the group killed, its lock is still held 5 s later"
fi

# A group of one command: held while it runs, freed when it ends.
group_hold "$A/shared/short" 2 $U1
wait_for 10 test -e "$A/shared/short"
is "$(taken_on_b short)" EEXIST "a one-command group's lock holds while the command runs"
wait_for 10 gone "$HPID"
t0=$(now_ms)
if wait_for 5 free_on_b short; then
	pass "... and is free within 5 s of its end ($(($(now_ms) - t0)) ms)"
else
	flunk "... and is still held 5 s after its end"
fi

# The holder's own session releases it with rm, as on any mount.
got=$(timeout --foreground 20 setpriv --reuid=$U1 --regid=$U1 --clear-groups setsid -w \
	bash -c 'set -C; : >"$1" || exit 1; sleep 0.3; rm "$1" && echo rm-ok' _ "$A/shared/mine" 2>&1)
is "$got" rm-ok "the holding group's own rm releases its lock"
is "$(taken_on_b mine)" 0 "... and another mount takes the key at once"
