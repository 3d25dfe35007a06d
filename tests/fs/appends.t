#!/usr/bin/env bash
# appends.t: the holder appends to its lock's data (O_APPEND) while other
# processes stat and list the file. An O_APPEND write goes where the
# kernel's size of the file says, and every stat, lookup or readdirplus
# that answers for the file sets that size: it must count the holder's
# writes not yet in the table (written in the background, coalesced).
# Before, stat answered the size of the data last written to DynamoDB, so
# the next append went back there and overwrote lines (10 lines in, 2 or
# 3 kept). Mount a goes through the fault proxy (2 ms each way); the
# holder's threads append while two processes stat and ls -l in a loop;
# another mount then reads every line exactly once.
. "$(dirname "$0")/lib.sh"

plan 6

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=ap-a" &&
	mount_start b "owner=ap-b" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
proxy_ctl latency 2 >/dev/null

# One process, its sizes after each write, as any stat sees them.
out=$(timeout --foreground 60 python3 - "$A/one" <<'PY'
import os, sys
p = sys.argv[1]
fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_APPEND, 0o644)
sizes = []
for i in range(10):
    os.write(fd, b"line%d\n" % i)
    sizes.append(os.stat(p).st_size)
os.fsync(fd)
print(" ".join(map(str, sizes)))
print(os.stat(p).st_size)
os.close(fd)
PY
)
is "$(sed -n 1p <<<"$out")" "6 12 18 24 30 36 42 48 54 60" "st_size after each O_APPEND write counts it"
is "$(sed -n 2p <<<"$out")" 60 "and after fsync"
data_lines() { printf '%b' "$(field "$("$T" read "$1")" data)"; }
is "$(data_lines "$B/one" | tr '\n' ' ')" "line0 line1 line2 line3 line4 line5 line6 line7 line8 line9 " \
	"b reads every appended line"

# Four threads append 25 lines each while two processes stat and list.
rm -f "$WORK/stop"
(for ((i = 0; i < 400; i++)); do [ -e "$WORK/stop" ] && break; stat -c %s "$A/many" >/dev/null 2>&1; done) &
s1=$!
(for ((i = 0; i < 200; i++)); do [ -e "$WORK/stop" ] && break; ls -l "$A" >/dev/null 2>&1; done) &
s2=$!
timeout --foreground 120 python3 - "$A/many" >"$WORK/many.out" 2>&1 <<'PY' &
import os, sys, threading, time
p = sys.argv[1]
fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_APPEND, 0o644)
def worker(w):
    for i in range(25):
        os.write(fd, b"w%d-%02d\n" % (w, i))
        time.sleep(0.005)
ts = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
for t in ts: t.start()
for t in ts: t.join()
os.fsync(fd)
print(os.stat(p).st_size)
time.sleep(30)   # holds the lock while b reads it
PY
w=$!
sleep 0.5
wait_for 60 bash -c "[ \"\$(stat -c %s '$A/many' 2>/dev/null)\" = 600 ]"
ok $? "the holder's 100 appended lines (600 bytes) are all counted in st_size"
: >"$WORK/stop"
_reap "$s1" 30 >/dev/null
_reap "$s2" 30 >/dev/null
lines=$(data_lines "$B/many")
is "$(sort <<<"$lines" | uniq | wc -l)" 100 "b reads 100 distinct lines"
is "$(wc -l <<<"$lines")" 100 "each exactly once (none overwritten, none twice)"
kill "$w" 2>/dev/null
