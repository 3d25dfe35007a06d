#!/usr/bin/env bash
# writes.t: a lock's data written through one open file shared by several
# processes, through the latency and fault proxy. The holder opens the
# lock (noclobber: O_CREAT|O_EXCL) and 4 child processes write lines to
# that one fd at once while the proxy fails and loses replies of
# UpdateItems: another mount then reads every line exactly once (the shared
# offset keeps them apart, the write-behind coalesces them, a write whose
# reply was lost is not written twice). Then, with the children writing a
# line every 20 ms, DynamoDB stalls: the lock is lost by the clock alone
# (its safe period), and from then on every child's write on the fd fails
# (EIO) at once, none accepted after the safe period or after another
# child's first EIO, and a close of the fd by any of them then reports
# EIO too (the lines they wrote never reached the table).
. "$(dirname "$0")/lib.sh"

plan 10

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start lockfs-faultproxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=wr-a,lease=3,heartbeat=0.5,safe_period=2" &&
	mount_start b "owner=wr-b" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
proxy_ctl latency 2 >/dev/null # a 4 ms round trip

# data_lines PATH: the lock's data as another mount reads it, a line each.
data_lines() {
	local d
	d=$(field "$("$T" read "$1")" data)
	printf '%b' "$d"
}

# The holder: keeps fd 3 on the lock; its children write on it in two
# phases (each bounded), told by files in $WORK.
(
	set -C
	exec 3>"$A/data" || exit 1
	: >"$WORK/acquired"
	for w in 1 2 3 4; do
		(
			for i in $(seq -w 1 25); do
				printf 'w%s-%s\n' "$w" "$i" >&3 ||
					echo "w$w-$i" >>"$WORK/fail1"
			done
			for ((n = 0; n < 600; n++)); do
				[ -e "$WORK/go2" ] && break
				sleep 0.05
			done
			# Phase 2: a line every 20 ms (at most 250) until one
			# fails; each line's start time is kept with its result.
			for ((n = 0; n < 250; n++)); do
				t=${EPOCHREALTIME/./}
				t=$((10#${t:0:-3}))
				if printf 'late-w%s-%s\n' "$w" "$n" >&3 2>/dev/null; then
					echo "$t ok late-w$w-$n" >>"$WORK/phase2-w$w"
				else
					echo "$t EIO" >>"$WORK/phase2-w$w"
					# A close of the shared fd now (a dup's).
					python3 -c 'import os
try:
    os.close(os.dup(3))
    print(0)
except OSError as e:
    print(e.errno)' >"$WORK/close-w$w" 2>&1
					break
				fi
				sleep 0.02
			done
		) &
	done
	wait
	exec 3>&-
) &
track_pid $!
wait_for 10 test -e "$WORK/acquired"
ok $? "the holder acquires the lock with noclobber"
proxy_ctl http500 3 UpdateItem >/dev/null
proxy_ctl lose-reply 2 UpdateItem >/dev/null

expected=$(for w in 1 2 3 4; do for i in $(seq -w 1 25); do echo "w$w-$i"; done; done | sort)
all_in() { [ "$(data_lines "$B/data" | sort)" = "$expected" ]; }
wait_for 20 all_in
ok $? "another mount reads all 100 lines written by 4 processes on one fd"
got=$(data_lines "$B/data")
is "$(sort <<<"$got" | uniq -d)" "" "no line twice"
is "$(wc -l <<<"$got")" 100 "100 lines, none lost, none torn"
is "$(cat "$WORK/fail1" 2>/dev/null)" "" "no write failed while the lock was held"
like "$(proxy_ctl stats)" 'injected=[1-9]' "the proxy failed or lost some UpdateItems meanwhile"

# ---- DynamoDB stalls past the safe period: lost by the clock ----------------
# The children write a line every 20 ms from before the stall on; the lock's
# trust ends at most a safe period (2 s) after the stall began (its last
# confirmed heartbeat was sent before it), and from then on every write
# must fail, whether or not data waits to be written.
: >"$WORK/go2"
sleep 0.3
proxy_ctl stall on >/dev/null
t0=$(now_ms) # the stall began before this: the trust ends by t0 + 2 s
all_failed() {
	local w
	for w in 1 2 3 4; do grep -q EIO "$WORK/phase2-w$w" 2>/dev/null || return 1; done
}
wait_for 10 all_failed
ok $? "every child's writes end with EIO, with DynamoDB still stalled"
late_ok=$(cat "$WORK"/phase2-w* | awk -v lim=$((t0 + 2000 + 150)) '$2 == "ok" && $1 > lim' | wc -l)
diag "phase 2: $(cat "$WORK"/phase2-w* | grep -c ' ok ') writes accepted, first EIO $(($(cat "$WORK"/phase2-w* | awk '$2 == "EIO" { print $1 }' | sort -n | head -n 1) - t0)) ms after the stall began"
is "$late_ok" 0 "no write accepted after the safe period had passed"
closed() { [ "$(cat "$WORK"/close-w[1-4] 2>/dev/null | wc -l)" = 4 ]; }
wait_for 10 closed
is "$(cat "$WORK"/close-w[1-4] 2>/dev/null | tr '\n' ' ')" "5 5 5 5 " \
	"a close of the fd by each child after that: EIO (its lines never reached the table)"
proxy_ctl stall off >/dev/null
sleep 1.5 # what write-behind might have sent is sent by now
lost_lines=$(data_lines "$B/data" | grep -c late)
diag "lines of phase 2 in the table: $lost_lines"
first_fail=$(cat "$WORK"/phase2-w* | awk '$2 == "EIO" { print $1 }' | sort -n | head -n 1)
after=$(for f in "$WORK"/phase2-w*; do awk -v f="$first_fail" '$2 == "ok" && $1 > f { print $3 }' "$f"; done | sort)
ok "$([ -z "$after" ] && echo 0)" "no write accepted after the first EIO on any child"

