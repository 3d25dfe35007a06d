#!/usr/bin/env bash
# release.t: unlink with -o release=async, through the latency and fault
# proxy. Such a mount answers unlink before DynamoDB confirmed the delete,
# so that the directory's kernel lock is free for the next create or unlink
# a round trip sooner; it marks the lock releasing first, so its own
# lookups, listings and creates of the name wait for the delete. Checks:
# the answer comes before the round trip (a sync mount's after it); the
# name is gone at once for the mount's callers and free for another mount
# once the delete lands; concurrent workers on an async and a sync mount
# cycling on shared keys in one directory never overlap (a local mkdir
# marks each critical section); a delete that fails after the answer
# leaves the key to lapse (or be cleaned up) and never to two holders.
. "$(dirname "$0")/lib.sh"

plan 26

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start lockfs-faultproxy"; exit 1; }
P1_ENDPOINT=$PROXY_ENDPOINT P1_CTL=$PROXY_CTL
ENDPOINT=$P1_ENDPOINT mount_start a "owner=rel-a,release=async" &&
	ENDPOINT=$P1_ENDPOINT mount_start b "owner=rel-b" ||
	{ echo "Bail out! cannot mount through the proxy"; exit 1; }
A=$(mnt a) B=$(mnt b)

like "$("$T" read "$A/.lockfs/status")" $'\nrelease: async\n' "status: release: async on a"
like "$("$T" read "$B/.lockfs/status")" $'\nrelease: sync\n' "status: release: sync on b"

# ms CMD...: runs CMD, prints its status and its time in ms.
ms() {
	local t0 rc
	t0=$(now_ms)
	"$@" >/dev/null
	rc=$?
	echo "$rc $(($(now_ms) - t0))"
}
# ms_t VERB ARGS...: runs lockfs-t VERB, prints its status and the verb's
# own time in ms (lockfs-t timed: without the process's start, which a
# loaded machine made 80 ms and more).
ms_t() {
	local out rc
	out=$("$T" timed "$@")
	rc=$?
	echo "$rc $(sed -n 's/^ms //p' <<<"$out")"
}

# ---- one round trip of 100 ms ------------------------------------------
PROXY_CTL=$P1_CTL proxy_ctl latency 50 >/dev/null
expect 0 open "$A/k1" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 open "$B/k2" O_CREAT,O_EXCL,O_RDONLY 0644
read -r ra ta < <(ms_t unlink "$A/k1")
read -r rb tb < <(ms_t unlink "$B/k2")
diag "unlink with a 100 ms round trip: async ${ta} ms, sync ${tb} ms"
is "$ra $rb" "0 0" "both unlinks succeed"
ok "$([ "$tb" -ge 100 ] && echo 0)" "sync: unlink answers after the delete's round trip ($tb ms)"
ok "$([ "$ta" -lt 60 ] && echo 0)" "async: unlink answers before it ($ta ms)"

# The name is gone at once for a's callers: they wait for the delete.
expect 0 open "$A/k1" O_CREAT,O_EXCL,O_RDONLY 0644
read -r r1 t1 < <(ms bash -c '[ "$("$1" unlink "$2")" = 0 ] || exit 99; exec stat "$2"' _ "$T" "$A/k1" 2>/dev/null)
is "$r1" 1 "stat right after the async unlink: no such file (stat's status 1; 99: the unlink failed; $t1 ms)"
expect 0 open "$A/k1" O_CREAT,O_EXCL,O_RDONLY 0644
read -r r3 t3 < <(ms bash -c 'o=$("$1" unlink "$2") && [ "$o" = 0 ] && o=$("$1" open "$2" O_CREAT,O_EXCL,O_RDONLY 0644) && [ "$o" = 0 ]' _ "$T" "$A/k1")
is "$r3" 0 "unlink then create of the same name at once on the async mount: both succeed"
ok "$([ "$t3" -ge 200 ] && echo 0)" "... the create waited for the delete (and made its own PutItem): $t3 ms"
out=$("$T" unlink "$A/k1")
is "$out" 0 "released again"
# Another mount: the row stays until the delete lands, then the key is free.
expect 0 open "$A/k3" O_CREAT,O_EXCL,O_RDONLY 0644
"$T" unlink "$A/k3" >/dev/null
wait_for 5 try_acquire "$B/k3"
ok $? "another mount acquires once the delete landed"
expect 0 open "$A/k4" O_CREAT,O_EXCL,O_RDONLY 0644
unlike "$("$T" unlink "$A/k4" >/dev/null; ls "$A")" 'k4' "ls on a right after the async unlink: the name is gone"
"$T" unlink "$B/k3" >/dev/null
PROXY_CTL=$P1_CTL proxy_ctl latency 0 >/dev/null

# ---- concurrent workers on shared keys in one directory -----------------
PROXY_CTL=$P1_CTL proxy_ctl latency 2 >/dev/null # a 4 ms round trip
mkdir "$A/d" "$WORK/cs"
: >"$WORK/overlaps"
: >"$WORK/errors"
# worker MNT NAME ROUNDS: takes one of 4 keys with O_EXCL; inside, marks
# the key's critical section with a local mkdir (a second holder would
# find it there), then leaves it and releases the key.
worker() {
	local m=$1 name=$2 i k
	for ((i = 0; i < $3; i++)); do
		k=k$((RANDOM % 4))
		( set -C; : >"$m/d/$k" ) 2>/dev/null || continue
		mkdir "$WORK/cs/$k" 2>/dev/null || echo "$name $k" >>"$WORK/overlaps"
		sleep 0.00$((RANDOM % 5))
		rmdir "$WORK/cs/$k" 2>/dev/null
		rm "$m/d/$k" 2>>"$WORK/errors" || echo "$name rm $k" >>"$WORK/errors"
		echo "$k" >>"$WORK/got-$name"
	done
}
pids=()
for w in 1 2 3 4 5; do worker "$A" "a$w" 40 & pids+=($!); done
for w in 1 2 3; do worker "$B" "b$w" 40 & pids+=($!); done
for p in "${pids[@]}"; do track_pid "$p"; done
deadline=$(($(now_ms) + 120000))
for p in "${pids[@]}"; do
	while kill -0 "$p" 2>/dev/null && [ "$(now_ms)" -lt "$deadline" ]; do sleep 0.1; done
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
done
ok "$([ "$(now_ms)" -lt "$deadline" ] && echo 0)" "8 workers, 40 rounds each, ended within 120 s"
ga=$(cat "$WORK"/got-a* 2>/dev/null | wc -l) gb=$(cat "$WORK"/got-b* 2>/dev/null | wc -l)
diag "acquisitions: async mount $ga, sync mount $gb"
is "$(cat "$WORK/overlaps")" "" "no two holders of a key at once"
is "$(cat "$WORK/errors")" "" "every rm of a held key succeeded"
ok "$([ "$ga" -ge 10 ] && [ "$gb" -ge 3 ] && echo 0)" "both mounts acquired ($ga and $gb)"
PROXY_CTL=$P1_CTL proxy_ctl latency 0 >/dev/null

# ---- a delete that fails after the answer ---------------------------------
# Mount c (async, a 2 s lease) behind a proxy of its own, whose
# connections then all fail: its unlink is answered, its delete is not
# made; the row lapses for b (which judges it by its own clock), and c's
# later cleanup never removes b's lock.
proxy_start || { echo "Bail out! cannot start a second proxy"; exit 1; }
P2_CTL=$PROXY_CTL
ENDPOINT=$PROXY_ENDPOINT mount_start c "owner=rel-c,release=async,lease=2,safe_period=1.5,heartbeat=0.5" ||
	{ echo "Bail out! cannot mount c"; exit 1; }
C=$(mnt c)
expect 0 open "$C/f" O_CREAT,O_EXCL,O_RDONLY 0644
PROXY_CTL=$P2_CTL proxy_ctl drop on >/dev/null
read -r rc tc < <(ms_t unlink "$C/f")
is "$rc" 0 "async unlink answered although DynamoDB cannot be reached ($tc ms)"
wait_for 20 try_acquire "$B/f"
ok $? "the row lapses: another mount acquires it within 20 s"
wait_for 25 grep -q 'answered before its delete, which failed' "$WORK/daemon-c.log"
ok $? "c's log says the delete after the answer failed"
PROXY_CTL=$P2_CTL proxy_ctl drop off >/dev/null
sleep 2 # c's cleanup runs each heartbeat
like "$("$T" read "$B/f")" $'owner: rel-b\n' "c's cleanup left b's lock alone"
