#!/usr/bin/env bash
# dirgone.t: a directory removed on mount a while mount b takes locks in
# it. b goes by its kernel's entry for the directory (entry_timeout, 1 s
# by default), made before a's rmdir, so its creates land under a
# directory whose marker is gone. Before, such a lock was invisible on
# every mount, its holder's rm got ENOENT, and the lock stayed until its
# process group ended. Now: b's holder always reaches its lock (b knows
# the directories it holds locks in), a's rmdir that finds a lock after
# its delete puts the marker back (ENOTEMPTY), and b reads the directory
# again after its write and writes the marker back, so that a sees the
# lock within a few seconds. b runs through the fault proxy with 3 ms
# each way, with eight creators at once, and with the read after the
# write failing for a while.
. "$(dirname "$0")/lib.sh"

plan 34

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
mount_start a "owner=gone-a" &&
	ENDPOINT=$PROXY_ENDPOINT mount_start b "owner=gone-b" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
proxy_ctl latency 3 >/dev/null
ok $? "b's requests and answers are delayed by 3 ms"

# kind PATH: dir MODE, file, or none, as lockfs-t stat sees it.
kind() {
	local s
	s=$("$T" stat "$1" 2>&1)
	case $s in
	*mode=04*) echo "dir $(sed -n 's/.*mode=04\([0-7]*\).*/\1/p' <<<"$s")" ;;
	*mode=0100*) echo file ;;
	*) echo none ;;
	esac
}
is_kind() { [ "$(kind "$1")" = "$2" ]; }

# ---- 1. one lock, taken by b's cached entry after a's rmdir ---------------
mkdir -m 0750 "$A/d1"
is "$(kind "$B/d1")" "dir 0750" "b sees d1 (and its kernel keeps the entry)"
rmdir "$A/d1"
ok $? "a removes d1"
group_hold "$B/d1/l" 120
h1=$HPID
sleep 0.3
is "$(count_alive "$h1")" 1 "b's set -C; : > d1/l, by its cached entry, succeeds"
is "$(kind "$B/d1")" "dir 0750" "b sees d1 at once, as it last saw it (it holds a lock in it)"
is "$(kind "$B/d1/l")" file "and its lock there"
t0=$(now_ms)
wait_for 10 is_kind "$A/d1" "dir 0750"
ok $? "a sees d1 again, as it was, within $(($(now_ms) - t0)) ms (b wrote its marker back)"
is "$(kind "$A/d1/l")" file "and b's lock in it"
like "$(ls "$A")" '(^|
)d1($|
)' "ls on a lists d1"
like "$(cat "$WORK/daemon-b.log")" \
	'dir=d1 was removed by another mount while this mount took a lock in it' \
	"b's log says why d1 came back"
expect ENOTEMPTY rmdir "$A/d1"
expect EEXIST open "$A/d1/l" O_CREAT,O_EXCL,O_RDONLY 0644
kill "$h1"
wait_for 10 is_kind "$A/d1/l" none
ok $? "the holder gone, a sees d1/l free"
expect 0 rmdir "$A/d1"

# ---- 2. eight creators on b racing a's rmdir, five rounds -----------------
bad=0 came_back=0 refused=0 taken=0
for r in 1 2 3 4 5; do
	d=r$r
	mkdir -m 0750 "$A/$d"
	[ "$(kind "$B/$d")" = "dir 0750" ] || diag "round $r: b does not see $d"
	pids=()
	GATE=$WORK/gate
	exec 8>"$GATE"
	flock -x 8
	(flock -s "$GATE" rmdir "$A/$d" 2>/dev/null; echo $? >"$WORK/rmdir.rc") &
	rp=$!
	for i in 1 2 3 4 5 6 7 8; do
		(flock -s "$GATE" true; sleep "0.00$i"; exec setsid bash -c \
			'set -C; : >"$1" || exit 1; exec sleep 60' _ "$B/$d/k$i") \
			</dev/null >/dev/null 2>&1 &
		pids+=("$!")
		track_pid "$!"
	done
	sleep 0.2
	flock -u 8
	exec 8>&-
	_reap "$rp" 30 >/dev/null
	sleep 0.5
	rrc=$(cat "$WORK/rmdir.rc" 2>/dev/null || echo x)
	held=()
	for i in 1 2 3 4 5 6 7 8; do
		kill -0 "${pids[$((i - 1))]}" 2>/dev/null && held+=("k$i")
	done
	taken=$((taken + ${#held[@]}))
	[ "$rrc" = 0 ] || refused=$((refused + 1))
	[ "$rrc" = 0 ] && [ ${#held[@]} -gt 0 ] && came_back=$((came_back + 1))
	if [ ${#held[@]} -gt 0 ]; then
		# Every lock b holds is seen from a, in d as it was.
		see_all() {
			local k
			[ "$(kind "$A/$d")" = "dir 0750" ] || return 1
			for k in "${held[@]}"; do
				[ "$(kind "$A/$d/$k")" = file ] || return 1
			done
		}
		if ! wait_for 10 see_all; then
			bad=$((bad + 1))
			diag "round $r: rmdir $rrc, b holds ${held[*]}; a sees $d: $(kind "$A/$d"), $(ls "$A/$d" 2>&1 | tr '\n' ' ')"
		fi
	elif [ "$rrc" != 0 ]; then
		bad=$((bad + 1))
		diag "round $r: rmdir failed ($rrc) with no lock taken"
	fi
	kill "${pids[@]}" 2>/dev/null
	wait_for 10 bash -c '! ls "$1" 2>/dev/null | grep -q .' _ "$A/$d"
	rmdir "$A/$d" 2>/dev/null
done
diag "5 rounds: $taken locks taken, rmdir refused (ENOTEMPTY) in $refused, removed and written back in $came_back"
is "$bad" 0 "every lock b took while a removed its directory is seen from a"
ok "$([ "$taken" -gt 0 ] && echo 0)" "b's creators took locks in the rounds (the races were real)"

# ---- 3. the read after the write fails for a while -------------------------
mkdir -m 0750 "$A/d3"
is "$(kind "$B/d3")" "dir 0750" "b sees d3"
rmdir "$A/d3"
group_hold "$B/d3/l" 120
h3=$HPID
sleep 0.3
is "$(count_alive "$h3")" 1 "b takes d3/l by its cached entry"
proxy_ctl http500 100000 Query >/dev/null
ok $? "b's Queries fail (HTTP 500) from now on, before its read of d3"
sleep 4
is "$(kind "$A/d3")" none "a does not see d3 while b cannot read it"
proxy_ctl clear >/dev/null
t0=$(now_ms)
wait_for 15 is_kind "$A/d3" "dir 0750"
ok $? "once b's reads answer, a sees d3 within $(($(now_ms) - t0)) ms (tried again)"
is "$(kind "$A/d3/l")" file "and b's lock in it"
kill "$h3"

# ---- 4. released before b reads again: nothing comes back -----------------
mkdir -m 0750 "$A/d4"
is "$(kind "$B/d4")" "dir 0750" "b sees d4"
rmdir "$A/d4"
(set -C; : >"$B/d4/l") 2>/dev/null && rm "$B/d4/l"
ok $? "b takes d4/l by its cached entry and releases it at once"
sleep 2.5
is "$(kind "$A/d4")" none "d4 stays removed: no lock of b's needed it"

# ---- 5. an rmdir's delete that reaches DynamoDB late ------------------------
# b's rmdir of d5: its first DeleteItem is held by the proxy, its resend
# removes the marker. a makes d5 again and takes a lock in it; then the
# held delete lands. It removed a's new marker (it was conditioned on the
# row being a marker only), so d5 and its lock were invisible on every
# other mount for good; now it is conditioned on the marker's version.
mkdir "$B/d5"
is "$(kind "$A/d5")" "dir 0755" "a sees d5, made on b"
proxy_ctl late-request 1 DeleteItem >/dev/null
timeout 60 rmdir "$B/d5"
ok $? "b's rmdir of d5 answers 0 (its first delete held back)"
mkdir "$A/d5"
ok $? "a makes d5 again"
(set -C; : >"$A/d5/l")
ok $? "a takes d5/l"
sleep 2.5 # past a's read of d5 after that write
proxy_ctl clear >/dev/null
late() { grep -q 'DeleteItem delivered late' "$WORK/proxy-0.log"; }
wait_for 10 late
ok $? "b's held delete reaches DynamoDB"
sleep 0.5
is "$(kind "$B/d5")" "dir 0755" "b still sees d5 ..."
is "$(kind "$B/d5/l")" file "... and a's lock in it"
rm "$A/d5/l"
rmdir "$A/d5"
# A DeleteItem whose answer is lost, sent again: the rmdir answers 0 (it
# said ENOENT when curl sent it again on a fresh connection).
mkdir "$B/d6"
proxy_ctl lose-reply 1 DeleteItem >/dev/null
timeout 60 rmdir "$B/d6" 2>"$WORK/d6.err"
is "$?" 0 "an rmdir whose delete's answer was lost answers 0 ($(cat "$WORK/d6.err"))"
is "$(kind "$A/d6")" none "d6 is gone"
