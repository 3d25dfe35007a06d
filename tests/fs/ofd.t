#!/usr/bin/env bash
# ofd.t: open file description locks (fcntl F_OFD_SETLK / F_OFD_SETLKW,
# as QEMU's image locking and some databases use) on a lockfs file are
# distributed locks like F_SETLK, owned by the open file: they go at its
# last close (or the death of the last process that had it), not at any
# one process's close. Before, nothing released them: the key stayed held,
# heartbeated, until someone removed the file. And F_GETLK on the file
# that took the key with O_CREAT|O_EXCL reports no conflict (its F_SETLK
# is granted at once); it reported the asker's own lock. Mount a goes
# through the fault proxy (2 ms each way); b takes the keys from outside.
. "$(dirname "$0")/lib.sh"

plan 14

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
OPT=entry_timeout=0,attr_timeout=0
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=ofd-a,$OPT" &&
	mount_start b "owner=ofd-b,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
proxy_ctl latency 2 >/dev/null
ok $? "a's requests are delayed by 2 ms each way"

# ofd PATH SCRIPT: python3 with fd (PATH opened O_CREAT|O_RDWR), lock(cmd,
# type) and the constants; prints what SCRIPT prints. Bounded.
ofd() {
	WORK=$WORK timeout --foreground 30 python3 - "$1" "$2" <<'PY'
import fcntl, os, struct, sys, time
OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", 37)
OFD_SETLKW = getattr(fcntl, "F_OFD_SETLKW", 38)
def lock(fd, cmd, typ=fcntl.F_WRLCK):
    fcntl.fcntl(fd, cmd, struct.pack("hhqqi", typ, 0, 0, 0, 0))
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o644)
exec(sys.argv[2])
PY
}
takeable() { [ "$("$T" flock "$1" O_CREAT,O_RDONLY ex,nb)" = 0 ]; }
held() { [ "$("$T" flock "$1" O_CREAT,O_RDONLY ex,nb)" = EAGAIN ]; }

# ---- the last close frees it; a process's close of its copy does not -----
ofd "$A/k1" '
lock(fd, OFD_SETLK)
pid = os.fork()
if pid == 0:
    time.sleep(1.5)     # the child keeps the open file a while
    os._exit(0)
os.close(fd)            # the parent closes its copy at once
open(os.environ.get("WORK", "/tmp") + "/k1.closed", "w").close()
os.waitpid(pid, 0)
print("done")
' >"$WORK/k1.out" 2>&1 &
p1=$!
wait_for 10 test -e "$WORK/k1.closed"
ok $? "a: F_OFD_SETLK on k1, forked, the parent closed its descriptor"
held "$B/k1"
ok $? "b: k1 is still held while the child has the open file"
_reap "$p1" 30 >/dev/null
is "$(cat "$WORK/k1.out")" done "the child exited (the open file's last close)"
wait_for 10 takeable "$B/k1"
ok $? "b takes k1 once the open file is closed"

# ---- the holder dies without closing ---------------------------------------
ofd "$A/k2" '
lock(fd, OFD_SETLK)
print("locked", os.getpid(), flush=True)
time.sleep(60)
' >"$WORK/k2.out" 2>&1 &
p2=$!
wait_for 10 grep -q locked "$WORK/k2.out"
ok $? "a: F_OFD_SETLK on k2, the process stays"
held "$B/k2"
ok $? "b: k2 is held"
kill -9 "$(sed -n 's/^locked //p' "$WORK/k2.out")" 2>/dev/null
_reap "$p2" 10 >/dev/null
wait_for 10 takeable "$B/k2"
ok $? "b takes k2 once its holder is killed"

# ---- classic F_SETLK beside it: still dropped at any close -----------------
ofd "$A/k3" '
lock(fd, fcntl.F_SETLK)
fd2 = os.open(sys.argv[1], os.O_RDONLY)
os.close(fd2)           # POSIX: any close drops the locks of the process
print("closed", flush=True)
time.sleep(5)
' >"$WORK/k3.out" 2>&1 &
p3=$!
wait_for 10 grep -q closed "$WORK/k3.out"
wait_for 10 takeable "$B/k3"
ok $? "a classic F_SETLK is still dropped at the process's close of another descriptor"
kill "$p3" 2>/dev/null

# ---- four open files waiting in turn (F_OFD_SETLKW), through the proxy -----
for i in 1 2 3 4; do
	ofd "$A/k4" '
lock(fd, OFD_SETLKW)
t = open(os.environ["WORK"] + "/k4.turns", "a")
t.write("in\n"); t.flush()
time.sleep(0.3)
t.write("out\n"); t.flush()
os.close(fd)
print("ok")
' >"$WORK/k4-$i.out" 2>&1 &
	eval "w$i=\$!"
done
for i in 1 2 3 4; do eval "_reap \$w$i 60 >/dev/null"; done
is "$(cat "$WORK"/k4-*.out | sort | uniq -c | tr -s ' ')" " 4 ok" \
	"four F_OFD_SETLKW on four open files of a: each got k4 in turn"
is "$(tr -d '\n' <"$WORK/k4.turns")" "inoutinoutinoutinout" \
	"never two at once (in/out strictly alternate)"
wait_for 10 takeable "$B/k4"
ok $? "b takes k4 after the last one closed"
expect 0 flock "$A/k4" O_CREAT,O_RDONLY ex,nb

# ---- F_GETLK on the file that took the key with O_CREAT|O_EXCL --------------
# Its F_SETLK is granted at once (the fcntl lock adopts the create's), so
# F_GETLK must say F_UNLCK, as POSIX has it; from another mount, the lock.
out=$(WORK=$WORK timeout --foreground 30 python3 - "$A/k5" "$B/k5" <<'PY'
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
q = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0)
def getlk(f):
    t = struct.unpack("hhqqi", fcntl.fcntl(f, fcntl.F_GETLK, q))[0]
    return {fcntl.F_UNLCK: "F_UNLCK", fcntl.F_WRLCK: "F_WRLCK", fcntl.F_RDLCK: "F_RDLCK"}[t]
own = getlk(fd)
fcntl.fcntl(fd, fcntl.F_SETLK, q)
fb = os.open(sys.argv[2], os.O_RDONLY)
print(own, "granted", getlk(fb))
PY
)
is "$out" "F_UNLCK granted F_WRLCK" "F_GETLK on the creating fd: F_UNLCK, and F_SETLK granted; from b: F_WRLCK"
