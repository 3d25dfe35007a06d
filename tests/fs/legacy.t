#!/usr/bin/env bash
# legacy.t: the ways shells and old programs already lock, unmodified, across
# two mounts of one table (two daemons, two owners, as on two machines). For
# each idiom: A takes the lock, B is refused while A holds it, and B gets it
# once A lets go. Idioms: bash noclobber and its subshell form, flock(1)
# with -n and -w, Python fcntl.flock and fcntl.lockf, Perl flock, the
# classic O_CREAT|O_EXCL + pid + unlink lock file, and the NFS-safe link
# protocol of dotlockfile (liblockfile), lockfile-create (lockfile-progs)
# and procmail's lockfile. The tools run under `timeout --foreground`, which
# keeps them in the script's process group: plain `timeout` starts a new
# group, and under hold=pgrp a lock lives as long as its acquiring group.
. "$(dirname "$0")/lib.sh"

plan 52

new_table || { echo "Bail out! cannot create a table"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0,allow_other
mount_start a "owner=legacy-a,$OPT" &&
	mount_start b "owner=legacy-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
PY=/usr/bin/python3

exists() { [ -e "$1" ]; }
field_kv() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
gone() { [ ! -e "$1" ]; }

# ---- bash noclobber ---------------------------------------------------------
( set -C; echo $$ > "$A/cron" ) 2>/dev/null
ok $? "A: set -C; echo \$\$ > lock acquires"
( set -C; : > "$B/cron" ) 2>/dev/null
ok $((!$?)) "B: set -C refused while A holds it"
like "$(cat "$B/cron")" "owner: legacy-a" "B sees A as the owner"
like "$(cat "$B/cron")" "data: [0-9]+\\\\n" "B sees the pid A wrote"
rm "$A/cron"
ok $? "A: rm releases"
( set -C; : > "$B/cron" ) 2>/dev/null
ok $? "B: set -C acquires after A's release"
rm -f "$B/cron"

# the subshell idiom: ( set -C; : > lock ) 2>/dev/null && work; rm lock
if ( set -C; : > "$A/sub" ) 2>/dev/null; then ran_a=1; else ran_a=0; fi
if ( set -C; : > "$B/sub" ) 2>/dev/null; then ran_b=1; else ran_b=0; fi
is "$ran_a$ran_b" 10 "subshell idiom: A runs, B does not"
rm "$A/sub"
if ( set -C; : > "$B/sub" ) 2>/dev/null; then ran_b=1; else ran_b=0; fi
is "$ran_b" 1 "subshell idiom: B runs after A's rm"
rm -f "$B/sub"

# ---- flock(1) -----------------------------------------------------------------
flock "$A/deploy" sleep 3 &
fa=$!
wait_for 5 exists "$B/deploy"
ok $? "flock(1) on A: B sees the lock"
timeout 10 flock -n "$B/deploy" true
is "$?" 1 "flock -n on B: busy (exit 1)"
t0=$(now_ms)
timeout 10 flock -w 0.5 "$B/deploy" true
rc=$? t1=$(now_ms)
is "$rc" 1 "flock -w 0.5 on B: times out (exit 1)"
ok $((!(t1 - t0 >= 400 && t1 - t0 < 3000))) "flock -w 0.5 waited about 0.5 s ($((t1 - t0)) ms)"
t0=$(now_ms)
timeout 15 flock -w 10 "$B/deploy" sh -c "grep -q 'owner: legacy-b' '$A/deploy'"
rc=$? t1=$(now_ms)
is "$rc" 0 "flock -w 10 on B: gets it when A's flock ends, and holds it as B"
wait "$fa"
ok $((!(t1 - t0 < 6000))) "B waited about as long as A held it ($((t1 - t0)) ms)"
wait_for 5 gone "$A/deploy"
ok $? "no lock left behind after flock(1) (no ghost lock)"

# ---- Python fcntl.flock and fcntl.lockf ----------------------------------------
pylock() {  # MOUNT KEY flock|lockf nb|wait [HOLD_SECONDS]
	timeout 20 "$PY" - "$@" <<'EOF'
import fcntl, os, sys, time
path, how, mode = sys.argv[1], sys.argv[2], sys.argv[3]
hold = float(sys.argv[4]) if len(sys.argv) > 4 else 0
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
fn = fcntl.flock if how == "flock" else fcntl.lockf
try:
    fn(fd, fcntl.LOCK_EX | (fcntl.LOCK_NB if mode == "nb" else 0))
except OSError as e:
    print("busy" if e.errno in (11,) else "error %d" % e.errno)
    sys.exit(0)
print("locked", flush=True)
time.sleep(hold)
fn(fd, fcntl.LOCK_UN)
os.close(fd)
EOF
}
for how in flock lockf; do
	pylock "$A/py-$how" "$how" nb 3 >"$WORK/py-$how.out" &
	pa=$!
	wait_for 5 grep -q locked "$WORK/py-$how.out"
	ok $? "python fcntl.$how on A: locked"
	is "$(pylock "$B/py-$how" "$how" nb)" busy "python fcntl.$how LOCK_NB on B: busy"
	is "$(pylock "$B/py-$how" "$how" wait)" locked "python fcntl.$how on B: waits, then locked"
	wait "$pa"
	wait_for 5 gone "$A/py-$how"
	ok $? "python fcntl.$how: nothing left after unlock"
done

# A file that waited for its flock shows the lock it was granted, not the
# one it saw when it was opened: a new fence, state held.
flock "$A/granted" sh -c "cat '$A/granted' >/dev/null; sleep 1" &
fa=$!
wait_for 5 exists "$A/granted"
got=$(timeout 20 "$PY" - "$A/granted" <<'EOF2'
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
text = os.pread(fd, 65536, 0).decode()
f = dict(l.split(": ", 1) for l in text.splitlines() if ": " in l)
print(f.get("state"), f.get("fence"))
EOF2
)
wait "$fa"
is "$got" "held 2" "a file granted its flock after waiting reads state held and the next fence"

# ---- Perl flock ---------------------------------------------------------------------
perllock() {  # PATH nb|wait [HOLD]
	timeout 20 perl -e '
		use Fcntl qw(:flock O_RDWR O_CREAT);
		my ($p, $mode, $hold) = @ARGV;
		sysopen(my $fh, $p, O_RDWR | O_CREAT, 0644) or die "open: $!";
		if (!flock($fh, LOCK_EX | ($mode eq "nb" ? LOCK_NB : 0))) { print "busy\n"; exit 0 }
		$| = 1; print "locked\n"; sleep($hold || 0); close($fh);' "$@"
}
perllock "$A/perl" nb 3 >"$WORK/perl.out" &
pa=$!
wait_for 5 grep -q locked "$WORK/perl.out"
ok $? "perl flock on A: locked"
is "$(perllock "$B/perl" nb)" busy "perl flock LOCK_NB on B: busy"
is "$(perllock "$B/perl" wait)" locked "perl flock on B: waits, then locked"
wait "$pa"

# ---- the classic lock-file daemon: O_CREAT|O_EXCL, pid, later unlink ----------------
expect 0 write "$A/daemon.pid" 4242 O_CREAT,O_EXCL,O_WRONLY
expect EEXIST open "$B/daemon.pid" O_CREAT,O_EXCL,O_WRONLY 0644
like "$(cat "$B/daemon.pid")" "data: 4242" "B reads the pid the holder wrote"
expect 0 unlink "$A/daemon.pid"
expect 0 open "$B/daemon.pid" O_CREAT,O_EXCL,O_WRONLY 0644
expect 0 unlink "$B/daemon.pid"

# ---- the NFS-safe link protocol ------------------------------------------------------
if command -v dotlockfile >/dev/null; then
	timeout --foreground 10 dotlockfile -l -r 0 "$A/mbox.lock"
	is "$?" 0 "dotlockfile -l on A"
	like "$(cat "$B/mbox.lock")" $'(^|\n)data: [0-9]+' \
		"B reads the pid dotlockfile wrote in its temporary file (the link carries it)"
	timeout --foreground 10 dotlockfile -l -r 0 "$B/mbox.lock"
	ok $(($? == 0)) "dotlockfile -l on B fails while A holds it"
	ls -A "$A" | grep -q '^\.lk' && flunk "dotlockfile left no temporary file" ||
		pass "dotlockfile left no temporary file"
	timeout --foreground 10 dotlockfile -u "$A/mbox.lock"
	is "$?" 0 "dotlockfile -u on A"
	timeout --foreground 10 dotlockfile -l -r 0 "$B/mbox.lock"
	is "$?" 0 "dotlockfile -l on B after A's unlock"
	timeout --foreground 10 dotlockfile -u "$B/mbox.lock"
else
	for i in 1 2 3 4 5 6; do skip "dotlockfile" "liblockfile-bin is not installed"; done
fi
if command -v lockfile-create >/dev/null; then
	timeout --foreground 10 lockfile-create --retry 0 "$A/spool"
	is "$?" 0 "lockfile-create on A"
	like "$(cat "$B/spool.lock")" $'(^|\n)data: [0-9]+' \
		"B reads the pid lockfile-create wrote (the link carries it)"
	timeout --foreground 10 lockfile-create --retry 0 "$B/spool" 2>/dev/null
	ok $(($? == 0)) "lockfile-create on B fails while A holds it"
	timeout --foreground 10 lockfile-remove "$A/spool"
	timeout --foreground 10 lockfile-create --retry 0 "$B/spool" 2>/dev/null
	is "$?" 0 "lockfile-create on B after lockfile-remove on A"
	timeout --foreground 10 lockfile-remove "$B/spool"
else
	for i in 1 2 3 4; do skip "lockfile-create" "lockfile-progs is not installed"; done
fi
if command -v lockfile >/dev/null; then
	timeout --foreground 10 lockfile -r 0 "$A/proc.lock"
	is "$?" 0 "procmail lockfile on A"
	timeout --foreground 10 lockfile -r 0 "$B/proc.lock" 2>/dev/null
	ok $(($? == 0)) "procmail lockfile on B fails while A holds it"
	rm -f "$A/proc.lock"
	timeout --foreground 10 lockfile -r 0 "$B/proc.lock"
	is "$?" 0 "procmail lockfile on B after rm on A"
	rm -f "$B/proc.lock"
else
	for i in 1 2 3; do skip "procmail lockfile" "procmail is not installed"; done
fi

# The link rules themselves: one inode, two names, link count 2.
expect 0 open "$A/tmpname" O_CREAT,O_EXCL,O_WRONLY 0644
expect 0 link "$A/tmpname" "$A/linked"
st1=$("$T" stat "$A/tmpname") st2=$("$T" stat "$A/linked")
is "$(field_kv "$st1" ino)" "$(field_kv "$st2" ino)" "link: both names are one inode"
is "$(field_kv "$st2" nlink)" 2 "link: link count 2"
expect EEXIST open "$B/linked" O_CREAT,O_EXCL,O_WRONLY 0644
expect EPERM link "$B/linked" "$B/other"
