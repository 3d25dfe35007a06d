#!/usr/bin/env bash
# ofdreuse.t: an F_OFD_SETLK lock's owner is its open file, which the
# kernel names by the address of its struct file. After the last close,
# the kernel may hand the same struct file to the very next open, before
# the daemon has seen the RELEASE of the first: the next open file's lock
# then comes with the same owner. Its lock must survive that late
# RELEASE. Before, the RELEASE dropped the lock the second open file had
# been granted, and another mount took the key while it was still held.
# Mount a goes through the fault proxy (2 ms each way); three processes
# on a run the rounds at once, each on its own keys; b checks the keys
# from outside. The unit test fs_flk/test_ofd_owner_reused makes the late
# RELEASE come for certain; here it comes late only now and then.
. "$(dirname "$0")/lib.sh"

plan 6

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=reuse-a,$OPT" &&
	mount_start b "owner=reuse-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
proxy_ctl latency 2 >/dev/null
ok $? "a's requests are delayed by 2 ms each way"

ROUNDS=12 PROCS=3
# Each round: lock through one open file, close it, open again at once and
# lock (blocking: without reuse it waits for the first file's release),
# wait out the first file's RELEASE, then b tries the key: it must not get
# it while the second open file holds its lock. Prints the rounds b got.
for p in $(seq $PROCS); do
	timeout --foreground 120 python3 - "$A" "$B" "$ROUNDS" "p$p" \
		>"$WORK/rounds-$p.out" 2>&1 <<'PY' &
import fcntl, os, struct, sys, time
OFD_SETLKW = getattr(fcntl, "F_OFD_SETLKW", 38)
a, b, rounds, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
wr = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0)
got = []
for i in range(rounds):
    p = "%s/%s-%d" % (a, tag, i)
    fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.fcntl(fd, OFD_SETLKW, wr)
    os.close(fd)
    fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.fcntl(fd, OFD_SETLKW, wr)
    time.sleep(0.3)
    fb = os.open("%s/%s-%d" % (b, tag, i), os.O_CREAT | os.O_RDONLY, 0o644)
    try:
        fcntl.flock(fb, fcntl.LOCK_EX | fcntl.LOCK_NB)
        got.append(i)
    except BlockingIOError:
        pass
    os.close(fb)
    os.close(fd)
print("done", len(got), " ".join(map(str, got)))
PY
	eval "r$p=\$!"
done
for p in $(seq $PROCS); do eval "_reap \$r$p 130 >/dev/null"; done
out=$(cat "$WORK"/rounds-*.out)
is "$(grep -c '^done ' <<<"$out")" $PROCS \
	"$PROCS processes ran $ROUNDS rounds each of lock, close, reopen, lock"
is "$(awk '/^done /{n += $2} END {print n + 0}' <<<"$out")" 0 \
	"b never took a key a second open file held"
diag "$out"

# After all that, every key is free: the last close released each one.
free=0
for p in $(seq $PROCS); do
	for ((i = 0; i < ROUNDS; i++)); do
		[ "$("$T" flock "$B/p$p-$i" O_CREAT,O_RDONLY ex,nb)" = 0 ] &&
			free=$((free + 1))
	done
done
is "$free" $((PROCS * ROUNDS)) "b takes every key once a closed its files"
is "$(ls "$A" | wc -l)" 0 "a lists no lock left"
is "$(metric lockfs_locks_held)" 0 "a holds no lock"
