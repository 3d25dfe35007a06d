#!/usr/bin/env bash
# session.t: session leases (-o session; doc/session-leases.md) on real
# mounts, A through the fault/latency proxy (lease=3,heartbeat=0.5,
# safe_period=2). A holds 200 locks: over 3 s its daemon sends about one
# write per period (the proxy counts them), not 200. A is frozen (SIGSTOP):
# B's acquire of one of A's keys is refused until a lease of B's clock has
# passed (never before A's safe period could end) and then succeeds (the
# session fenced, the row taken over); A thawed (SIGCONT) reports every
# lock of its session lost (cat, poll, fsync) and never claims them again;
# acquires made at once after the thaw wait for its next session.
# A mount without -o session takes over a dead session's lock after a lease
# too. -o session is refused on a table holding a python_dynamodb_lock row.
# Session items never show in a listing.
. "$(dirname "$0")/lib.sh"

plan 34

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
OPT=lease=3,heartbeat=0.5,safe_period=2,entry_timeout=0,attr_timeout=0,hold=unlink
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=sess-a,session,$OPT" &&
	mount_start b "owner=sess-b,session,$OPT" &&
	mount_start c "owner=sess-c,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b) C=$(mnt c)
N=200

# ---- 200 locks, about one write per period ------------------------------------
fails=0 why=
for i in $(seq 1 $N); do
	out=$("$T" open "$A/k$i" O_CREAT,O_EXCL,O_RDONLY 0644 2>&1) || {
		fails=$((fails + 1))
		[ -n "$why" ] || why="k$i: $out"
	}
done
is "$fails" 0 "A acquires $N keys${why:+ (the first failure: $why)}"
hold_start h "$A/held" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "A's holder acquires 'held' and keeps its fd"
text=$(cat "$A/k1")
is "$(field "$text" state)" held "k1 is held"
is "$(field "$text" session)" ".lockfs-session/sess-a" "cat shows the session that keeps it"
is "$(field "$text" lease)" "3.000" "and the lease others judge it by"
unlike "$(ls -a "$A" "$B")" 'lockfs-session' "no listing shows a session item"
like "$(cat "$A/.lockfs/status")" $'session: \\.lockfs-session/sess-a\nsession_state: live\nsession_renewed_ago: [0-9.]+' \
	"A's status shows its session, live and recently renewed"
unlike "$(cat "$C/.lockfs/status")" $'\nsession' "a per-lock mount's status shows no session line"

# Writes are PutItem, UpdateItem and DeleteItem through A's proxy.
writes() {
	proxy_ctl stats | tr ' ' '\n' |
		awk -F= '$1 == "PutItem" || $1 == "UpdateItem" || $1 == "DeleteItem" { n += $2 } END { print n + 0 }'
}
w0=$(writes)
sleep 3
w1=$(writes)
dw=$((w1 - w0))
diag "A's writes over 3 s (6 periods) holding $((N + 1)) locks: $dw (per-lock leases: $(((N + 1) * 6)))"
ok "$([ "$dw" -ge 3 ] && [ "$dw" -le 10 ] && echo 0)" \
	"about one write per period for $((N + 1)) locks ($dw in 6 periods)"
text=$(cat "$B/k2")
is "$(field "$text" state)" held "B sees k2 held"
is "$(field "$text" session)" ".lockfs-session/sess-a" "B's cat names A's session"

# ---- what a python_dynamodb_lock client makes of a session lock ---------------
# It judges a lock by lease_duration: an RVN that stands still that long is
# expired. A session row carries a year, so it never takes a live one.
if /usr/bin/python3 -c 'import boto3' 2>/dev/null; then
	pyl() {
		PYLOCK_TABLE=$TABLE LOCKFS_DDB_ENDPOINT=$ENDPOINT timeout 30 \
			/usr/bin/python3 "$_root/tests/interop/pylock.py" "$@" 2>>"$WORK/pylock.err"
	}
	lease=$(pyl show k1 | sed -n 's/^lease_duration=//p')
	ok "$([ "${lease%%.*}" -ge 31536000 ] 2>/dev/null && echo 0)" \
		"a python client reads k1's lease_duration as a year or more (${lease:-none} s)"
	pyl acquire k1 --owner py >/dev/null
	is "$?" 3 "a python client's acquire of k1 is refused (ConditionalCheckFailed)"
else
	skip "a python client reads k1's lease_duration as a year or more" "no python3-boto3"
	skip "a python client's acquire of k1 is refused" "no python3-boto3"
fi

# freeze_a_and_take PATH: freezes A's daemon (SIGSTOP) and tries to acquire
# PATH every 100 ms for at most 15 s; prints the ms it took (or nothing).
freeze_a_and_take() {
	local t0
	kill -STOP "$(daemon_pid a)"
	t0=$(now_ms)
	while [ $(($(now_ms) - t0)) -lt 15000 ]; do
		if try_acquire "$1"; then
			echo $(($(now_ms) - t0))
			return
		fi
		sleep 0.1
	done
}

# ---- A frozen: B takes k7 after a lease, never before A's safe period ----------
taken=$(freeze_a_and_take "$B/k7")
ok "$([ -n "$taken" ] && echo 0)" "B takes k7 while A is frozen (after ${taken:-never} ms)"
ok "$([ -n "$taken" ] && [ "$taken" -ge 3000 ] && echo 0)" \
	"not before a lease of B's clock (3000 ms; A's safe period 2000 ms)"
ok "$([ -n "$taken" ] && [ "$taken" -le 8000 ] && echo 0)" "and within a few periods of it"
text=$(cat "$B/k7")
is "$(field "$text" owner)" sess-b "k7 is B's"

# ---- A thawed: every lock of its session is lost, for good ---------------------
kill -CONT "$(daemon_pid a)"
# Acquires at once, 4 at a time: A trusts no session now (its last
# heartbeat is a frozen lease old, and its session was fenced); each waits
# for the next session and holds by it (before: EIO at once).
for i in 1 2 3 4; do
	( "$T" open "$A/thawed$i" O_CREAT,O_EXCL,O_RDONLY 0644 >"$WORK/thawed$i" 2>&1 ) &
	track_pid $!
done
wait_for 15 sh -c 'for i in 1 2 3 4; do [ -s "$1/thawed$i" ] || exit 1; done' _ "$WORK"
is "$(cat "$WORK"/thawed[1-4] | tr '\n' ' ')" "0 0 0 0 " \
	"4 acquires on A right after the thaw wait for its next session and succeed"
like "$(cat "$A/thawed1")" $'\nsession: \\.lockfs-session/sess-a#' "... held by the new session"
# The holder's fd (k7's and k8's holders are gone: hold=unlink, so A's
# lookups of them answer as anyone's: B's k7, a lapsed k8).
held_lost() { hold_cmd h read; [ "$(field "$HOUT" state)" = lost ]; }
wait_for 10 held_lost
ok $? "A's holding fd of 'held' reads state: lost"
hold_cmd h "poll 0"
like "$HOUT" 'POLLERR' "poll on A's holding fd: POLLERR"
hold_cmd h fsync
is "$HOUT" EIO "fsync on A's holding fd: EIO"
# Thawed, A learns that its session was fenced at its next heartbeat, or,
# when its scheduler runs first (a slow host: the ThreadSanitizer pass
# saw it), abandons it for want of a confirmed heartbeat; either way it
# says so, and never beats it again.
like "$(grep -c -E 'session \.lockfs-session/sess-a( was fenced|: no heartbeat confirmed within the safe period: abandoned)' "$WORK/daemon-a.log")" '^[1-9]' \
	"A's log says its session ended (fenced, or abandoned)"
not_ours() { [ "$(field "$(cat "$A/$1" 2>/dev/null)" owner)" != sess-a ]; }
sleep 1
ok "$(not_ours k7 && not_ours k8 && not_ours held && echo 0)" \
	"A never claims k7, k8 or 'held' again"
ok "$(! try_acquire "$A/k7" && echo 0)" "A cannot take k7 back (B holds it)"
ok "$(try_acquire "$A/k8" && echo 0)" "A takes k8 again, as a new lock of its new session"

# ---- a per-lock mount takes a dead session's lock after a lease ----------------
hold_start h2 "$A/n1" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "A (a new session) acquires n1, its holder keeps the fd"
taken=$(freeze_a_and_take "$C/n1")
kill -CONT "$(daemon_pid a)"
ok "$([ -n "$taken" ] && [ "$taken" -ge 3000 ] && [ "$taken" -le 8000 ] && echo 0)" \
	"C (per-lock leases) takes n1 a lease after A froze (${taken:-never} ms)"
n1_lost() { hold_cmd h2 read; [ "$(field "$HOUT" state)" = lost ]; }
wait_for 10 n1_lost
ok $? "A's holding fd of n1 reads state: lost"

# ---- refused on a table with python_dynamodb_lock rows -------------------------
T1=$TABLE
new_table || { echo "Bail out! cannot create a table"; exit 1; }
T2=$TABLE
TABLE=$T1
if /usr/bin/python3 -c 'import boto3' 2>/dev/null; then
	PYLOCK_TABLE=$T2 LOCKFS_DDB_ENDPOINT=$ENDPOINT timeout 30 /usr/bin/python3 \
		"$_root/tests/interop/pylock.py" acquire pyjob --owner py >/dev/null 2>&1
	mkdir -p "$(mnt d)"
	out=$(timeout 30 "$L" -f -o "endpoint=$ENDPOINT,region=us-east-1,table=$T2,session" \
		"$(mnt d)" </dev/null 2>&1)
	rc=$?
	ok "$([ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && echo 0)" "-o session on that table: the mount fails (status $rc)"
	like "$out" "session refused: table $T2 holds python_dynamodb_lock rows \\(key pyjob\\)" \
		"with a one-line reason naming the table"
else
	skip "-o session on a table with a python row: the mount fails" "no python3-boto3"
	skip "with a one-line reason naming the table" "no python3-boto3"
fi

hold_stop h
hold_stop h2
mount_stop a
mount_stop b
mount_stop c
