#!/usr/bin/env bash
# costs.t: what each everyday idiom costs in DynamoDB requests, counted by
# the fault proxy (README "What each operation costs" is this table). A
# mount a through the proxy (per-lock leases, default heartbeat), and a
# mount b beside it that makes the locks a lists. Each idiom runs three
# times, each time after its own setup, and the run with the fewest
# requests counts: a heartbeat of a held lock, or a read slower than the
# lookup memory's 100 ms on a loaded machine, adds to a run without being
# the idiom's cost.
. "$(dirname "$0")/lib.sh"

plan 21

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=costs-a" ||
	{ echo "Bail out! cannot mount a"; exit 1; }
mount_start b "owner=costs-b" || { echo "Bail out! cannot mount b"; exit 1; }
A=$(mnt a) B=$(mnt b)

# snap: "Op=N" lines of the proxy's counts of DynamoDB operations.
snap() { proxy_ctl stats | tr ' ' '\n' | grep -E '^[A-Z][A-Za-z]+=[0-9]+$' | sort; }
# cost SETUP CMD TEARDOWN: the requests CMD made (bash -c, after SETUP,
# and until 0.3 s after it ended: a write at the file's release comes
# after close returns; before TEARDOWN), as "Op=N ..." sorted by name,
# "none" for none; the cheapest of three runs (what an idiom costs, every
# run pays: a load-induced extra, a directory looked up again after its
# entry expired on a slow machine, only ever adds).
# In each run @ stands for a name of its own, so that no run is served by
# what an earlier one left in memory (a key released or found free
# moments ago). Every run's counts go to WORK/runs.
run=0
cost() {
	local i a b d s c t r1= r2= r3= n
	for i in 1 2 3; do
		run=$((run + 1))
		s=${1//@/r$run} c=${2//@/r$run} t=${3//@/r$run}
		bash -c "$s" >/dev/null 2>&1
		a=$(snap)
		bash -c "$c" >/dev/null 2>&1
		sleep 0.3
		b=$(snap)
		bash -c "$t" >/dev/null 2>&1
		# An operation the proxy has not seen yet has no line in a.
		d=$(printf '%s\n' "$a" | sed 's/^/a /'
			printf '%s\n' "$b" | sed 's/^/b /')
		d=$(awk -F'[ =]' 'NF == 3 { if ($1 == "a") n[$2] -= $3; else n[$2] += $3 }
			END { for (k in n) if (n[k] > 0) printf "%s=%d\n", k, n[k] }' <<<"$d" |
			sort | tr '\n' ' ')
		d=${d% }
		d=${d:-none}
		echo "run $run: $c: $d" >>"$WORK/runs"
		eval "r$i=\$d"
	done
	n=$(printf '%s\n' "$r1" "$r2" "$r3" | awk '{ t = 0; for (i = 1; i <= NF; i++) { split($i, p, "="); t += p[2] } print t, $0 }' | sort -s -n -k1,1 | head -n 1)
	echo "${n#* }"
}
# check WANT DESC SETUP CMD TEARDOWN: is the cost of CMD WANT, with the
# runs' counts as diagnostics.
check() {
	: >"$WORK/runs"
	is "$(cost "$3" "$4" "$5")" "$1" "$2"
	while read -r l; do diag "$l"; done <"$WORK/runs"
}

check "PutItem=1 Query=1" "set -C; : > f (acquire, bash's stat first): a Query and a PutItem" \
	"" "set -C; : > '$A/@c1'" "rm -f '$A/@c1'"
check "DeleteItem=1" "rm f of our lock (release): a DeleteItem" \
	"set -C; : > '$A/@c2'" "rm '$A/@c2'" ""
check "PutItem=1 Query=1 UpdateItem=1" "set -C; echo \$\$ > f (acquire with data): and an UpdateItem" \
	"" "set -C; echo \$\$ > '$A/@c3'" "rm -f '$A/@c3'"
# Rewriting our lock's data: tee (as cp, dd, python's open(f, "w")) opens
# with O_TRUNC, then writes and closes; the truncate goes with the write
# (it was an UpdateItem of its own). bash's echo x > f still costs two:
# bash closes its first descriptor after dup2, and every close writes what
# is pending (the truncate). An O_TRUNC open of our lock with no data
# writes nothing.
check "UpdateItem=1" "echo x | tee f of our lock (new data): one UpdateItem" \
	"set -C; echo 1 > '$A/@c15'; sleep 0.3" "echo \$\$ | tee '$A/@c15'" "rm -f '$A/@c15'"
# Each run, not only the cheapest: the truncate was written at the open
# (the setup's write is more than the 100 ms interval before).
is "$(grep -c ': UpdateItem=1$' "$WORK/runs")" 3 "... in each of its three runs"
check "none" ": > f of our lock without data: nothing" \
	"set -C; : > '$A/@c16'" ": > '$A/@c16'" "rm -f '$A/@c16'"
check "DeleteItem=1 PutItem=1 Query=1" "flock -n f cmd on a free key: acquire and release" \
	"" "flock -n '$A/@c4' true" ""
check "GetItem=1" "cat f of our lock: a consistent GetItem" \
	"set -C; : > '$A/@c5'; cat '$A/@c5'" "cat '$A/@c5'" "rm -f '$A/@c5'"
check "UpdateItem=1" "touch f of our lock (a heartbeat): an UpdateItem" \
	"set -C; : > '$A/@c6'" "touch '$A/@c6'" "rm -f '$A/@c6'"
check "Query=1" "test -e f of a free key: a Query" \
	"" "test -e '$A/@c7'" ""
check "PutItem=1 Query=1" "mkdir d: a Query and a PutItem" \
	"" "mkdir '$A/@c8'" "rmdir '$A/@c8'"
check "DeleteItem=1 GetItem=1 Query=2" "rmdir d (empty): a Query for its children, the marker's version (GetItem), a DeleteItem on it, a Query for a lock taken inside meanwhile" \
	"mkdir '$A/@c9'" "rmdir '$A/@c9'" ""
# The link protocol (lockfile-progs, procmail; liblockfile's dotlockfile
# is the same, but setgid mail it needs allow_other): a temporary lock
# (the lookup's Query, its PutItem, the pid's UpdateItem), linked to the
# name (the name's Query, a PutItem carrying the pid), then unlinked.
LINKED="DeleteItem=1 PutItem=2 Query=2 UpdateItem=1"
if command -v lockfile-create >/dev/null; then
	check "$LINKED" "lockfile-create f: a temporary lock with the pid, linked (its PutItem carries the pid), unlinked" \
		"" "lockfile-create --retry 0 '$A/@c10'" "lockfile-remove '$A/@c10'"
else
	skip "lockfile-create" "lockfile-progs is not installed"
fi
if command -v lockfile >/dev/null; then
	check "$LINKED" "procmail's lockfile f: the same" \
		"" "lockfile -r 0 '$A/@c11'" "rm -f '$A/@c11'"
else
	skip "procmail's lockfile" "procmail is not installed"
fi

# A lock in a subdirectory: the daemon reads the directory once, 1 s after
# the write, in the background (another mount may have removed it
# meanwhile), unless the lock is gone by then. The acquire is the setup;
# what is counted is the 1.2 s after it.
mkdir -p "$A/sub"
check "Query=1" "set -C; : > d/f: one Query of d, 1 s after, while f is held" \
	"stat '$A/sub'; set -C; : > '$A/sub/@c12'" "sleep 1.2" "rm -f '$A/sub/@c12'"
check "none" "set -C; : > d/f; rm d/f: no read of d after (nothing held)" \
	"stat '$A/sub'; set -C; : > '$A/sub/@c13'; rm '$A/sub/@c13'" "sleep 1.2" ""

# Locks of another mount: b takes 40 in one directory, and holds one more.
# Each run first looks the directory up (stat), as the kernel keeps that
# answer for entry_timeout (1 s): a path through a directory looked up
# longer ago costs one Query more, for the directory.
mkdir -p "$B/many"
for i in $(seq 1 40); do "$T" open "$B/many/k$i" O_CREAT,O_EXCL,O_RDONLY 0644 >/dev/null; done
hold_start m "$B/many/held" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "b holds a lock in many/ too"
check "Query=1" "ls of a directory of 41 locks: one Query" \
	"stat '$A/many'" "ls '$A/many' | wc -l" ""
check "Query=1" "ls -l of it: one Query (no request per entry)" \
	"stat '$A/many'" "ls -l '$A/many' | wc -l" ""
check "GetItem=1 Query=1" "cat f of another mount's lock: the lookup's Query and a GetItem" \
	"stat '$A/many'" "cat '$A/many/held'" ""
check "Query=1" "set -C; : > f of a key held elsewhere: refused after one Query (EEXIST)" \
	"stat '$A/many'" "set -C; : > '$A/many/held'" ""
hold_stop m
