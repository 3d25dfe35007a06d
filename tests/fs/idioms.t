#!/usr/bin/env bash
# idioms.t: every locking idiom that README.md, lockfs(8), lockfs-run(1) and
# contrib/examples show, run as written (copied below, each with where it
# comes from; the docs are checked to still show that text). One mount.
#
# For each idiom, twice:
#  - busy: a holder (lockfs-t hold --pgrp: O_CREAT|O_EXCL in a process group
#    of its own) holds the key; the idiom runs as a second instance on the
#    same mount, in the test's own process group (as a cron job or script
#    would). Its command must not run (the marker file it would create does
#    not exist), it exits as documented, and the holder still holds the
#    lock afterwards: the holder's fsync gives 0 and cat shows "state: held"
#    with the holder's pid. (lockfs(8)'s old `set -C; : > F && run; rm F`,
#    whose rm also runs when the acquire failed, removed the holder's lock
#    here while lockfs let any process of the holder's uid remove it.)
#  - free: the key is free; the command runs, and afterwards the lock is
#    released by the idiom itself (the file is gone and another O_EXCL create
#    succeeds). The idiom runs in the test's process group, which outlives
#    it, so under hold=pgrp only its own rm, LOCK_UN or close can have
#    released the key.
#  - broken: the cron idioms (lockfs-run -n, -n -E 0, the sh guard that
#    asks [ -e ] after a failed create, cron-nightly.sh) where no lock can
#    be taken: DynamoDB unreachable (EIO), the daemon dead (ENOTCONN),
#    lockfs not mounted (EPERM on the immutable mountpoint). Each exits
#    non-zero (69 or 1: never 0, as for a lock held elsewhere; flock -n
#    66, its "cannot open", where a held key gives 1) and does not run its
#    command: README's "Held, or broken?" table.
# Shell idioms run under bash and dash (README: they must work in both);
# a text shown in two places runs once. Waits longer than a second in the
# docs (-w 30) are shortened to -w 1. Each run's time is printed as a
# diagnostic (the file takes about 40 s on an idle 2-core machine).
. "$(dirname "$0")/lib.sh"

: "${LOCKFS_RUN_BIN:=$(dirname "$LOCKFS_BIN")/lockfs-run}"
R=$LOCKFS_RUN_BIN
[ -x "$R" ] || { echo "Bail out! $R is missing (build lockfs-run)"; exit 1; }
command -v dash >/dev/null || { echo "Bail out! dash is missing"; exit 1; }
command -v flock >/dev/null || { echo "Bail out! flock(1) is missing"; exit 1; }
# The interpreter itself, not a wrapper script (pyenv's shim costs seconds
# on a loaded machine).
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) ||
	{ echo "Bail out! python3 is missing"; exit 1; }

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
README=$ROOT/README.md
MAN8=$ROOT/contrib/man/lockfs.8
MAN1=$ROOT/contrib/man/lockfs-run.1
EXAMPLES=$ROOT/contrib/examples

# ---- the idioms, copied from the docs ----------------------------------------
# Each is NAME, the file it comes from, and its text exactly as shown there
# (man pages with "\-" read as "-"). Lines the docs leave to the reader
# (the job itself) are added with job_line.

declare -A DOC TEXT SHELLS BUSY_RC FREE_RC
IDIOMS=()
# An idiom shown with the same text in two places is run once (both places
# are checked to show it): SHELLS is emptied for the second.
idiom() { # NAME FILE SHELLS BUSY_RC FREE_RC (text on stdin)
	local k
	IDIOMS+=("$1")
	DOC[$1]=$2 SHELLS[$1]=$3 BUSY_RC[$1]=$4 FREE_RC[$1]=$5
	TEXT[$1]=$(cat)
	for k in "${IDIOMS[@]}"; do
		if [ "$k" != "$1" ] && [ "${TEXT[$k]}" = "${TEXT[$1]}" ]; then
			SHELLS[$1]=
			diag "$1: the same text as $k, run once as $k"
		fi
	done
}

# README, "Use it from the shell": lockfs-run for cron, held a quiet 0.
idiom readme-lockfs-run-E0 "$README" bash 0 0 <<'EOF'
lockfs-run -n -E 0 /mnt/locks/nightly -- /usr/local/bin/nightly
EOF
# README, "Use it from the shell": the plain sh cron guard that tells held
# (exit 0) from broken (exit 1) (then the job).
idiom readme-guard "$README" "bash dash" 0 0 <<'EOF'
( set -C; : > /mnt/locks/nightly ) 2>/dev/null || { [ -e /mnt/locks/nightly ] && exit 0; echo "cannot lock /mnt/locks/nightly" >&2; exit 1; }
trap 'rm -f /mnt/locks/nightly' EXIT
EOF
# README, "Use it from the shell": the subshell idiom.
idiom readme-subshell "$README" "bash dash" 0 0 <<'EOF'
if ( set -C; : > /mnt/locks/backup ) 2>/dev/null; then
        run-backup; rm /mnt/locks/backup
fi
EOF
# README, "Release" bullet (the short form; work = the job).
idiom readme-release "$README" "bash dash" 0 0 <<'EOF'
if (set -C; : > f) 2>/dev/null; then work; rm f; fi
EOF
# README, "Use it from the shell": flock(1) -n and -w (-w 30 run as -w 1).
idiom readme-flock-n "$README" bash 0 0 <<'EOF'
flock -n /mnt/locks/deploy make deploy || echo "someone else is deploying"
EOF
idiom readme-flock-w "$README" bash 1 0 <<'EOF'
flock -w 30 /mnt/locks/deploy make deploy
EOF
# README, "lockfs-run": the cron line.
idiom readme-lockfs-run-n "$README" bash 75 0 <<'EOF'
lockfs-run -n /mnt/locks/nightly -- /usr/local/bin/nightly
EOF
# README, "Use it from the shell": lockfs-run -w 30 (run as -w 1).
idiom readme-lockfs-run-w "$README" bash 75 0 <<'EOF'
lockfs-run -w 30 /mnt/locks/deploy -- sh -c 'deploy --fence "$LOCKFS_FENCE"'
EOF
# lockfs-run(1), EXAMPLES: the cron line, with the -E 0 it suggests.
idiom man1-lockfs-run-E0 "$MAN1" bash 0 0 <<'EOF'
0 2 * * *  lockfs-run -n /mnt/locks/nightly -- /usr/local/bin/nightly
EOF
# lockfs(8), EXAMPLES: the subshell idiom.
idiom man8-subshell "$MAN8" "bash dash" 0 0 <<'EOF'
if ( set -C; : > /mnt/locks/nightly ) 2>/dev/null; then
        run-nightly; rm /mnt/locks/nightly
fi
EOF
# lockfs(8), EXAMPLES: the cron script (then the job).
idiom man8-cron "$MAN8" "bash dash" 0 0 <<'EOF'
( set -C; : > /mnt/locks/nightly ) 2>/dev/null || { [ -e /mnt/locks/nightly ] && exit 0; echo "cannot lock /mnt/locks/nightly" >&2; exit 1; }
trap 'rm -f /mnt/locks/nightly' EXIT
EOF
# lockfs(8), EXAMPLES: flock(1) -n and -w, lockfs-run -n.
idiom man8-flock-n "$MAN8" bash 1 0 <<'EOF'
flock -n /mnt/locks/deploy make deploy
EOF
idiom man8-flock-w "$MAN8" bash 1 0 <<'EOF'
flock -w 30 /mnt/locks/deploy make deploy
EOF
idiom man8-lockfs-run-n "$MAN8" bash 75 0 <<'EOF'
lockfs-run -n /mnt/locks/nightly -- run-nightly
EOF
idiom man8-lockfs-run-E0 "$MAN8" bash 0 0 <<'EOF'
lockfs-run -n -E 0 /mnt/locks/nightly -- run-nightly
EOF
# README, the Python block: open(path, "x") and unlink in finally.
idiom readme-python "$README" "$PY" 0 0 <<'EOF'
try:
    open("/mnt/locks/once", "x").close()   # O_EXCL: acquire, or FileExistsError at once
except FileExistsError:
    raise SystemExit(0)                # held by someone else: leave the file alone
try:
    ...                                # the work
finally:
    os.unlink("/mnt/locks/once")       # release: reached only after our own acquire
EOF
# contrib/examples/cron-nightly.sh and python-locks.py's run_once() are run
# from the files themselves (see run_idiom).
IDIOMS+=(cron-nightly.sh python-locks.run_once)
DOC[cron-nightly.sh]=$EXAMPLES/cron-nightly.sh
SHELLS[cron-nightly.sh]="dash bash" BUSY_RC[cron-nightly.sh]=0 FREE_RC[cron-nightly.sh]=0
DOC[python-locks.run_once]=$EXAMPLES/python-locks.py
SHELLS[python-locks.run_once]=$PY
BUSY_RC[python-locks.run_once]=0 FREE_RC[python-locks.run_once]=0

n_runs=0
for name in "${IDIOMS[@]}"; do
	for sh in ${SHELLS[$name]}; do n_runs=$((n_runs + 1)); done
done
n_text=$((${#IDIOMS[@]} - 2))

# The idioms for cron, run again where no lock can be taken, with the status
# each must give there (not 0, as if the lock were held elsewhere).
declare -A BROKEN_RC=([readme-guard]=1 [readme-lockfs-run-E0]=69
	[readme-lockfs-run-n]=69 [cron-nightly.sh]=1 [man8-flock-n]=66)
n_broken=0
for name in "${!BROKEN_RC[@]}"; do
	for sh in ${SHELLS[$name]}; do n_broken=$((n_broken + 1)); done
done
# per run: busy 5 (status, not run, fsync, state, pid), free 4 (status, ran,
# gone, O_EXCL); then one per copied text, and the unmount; broken: three
# mounts (the errno of an O_EXCL create there, then per run status and not
# run), the errno for another uid on the bare mountpoint, one more unmount
plan $((n_runs * 9 + n_text + 1 + 3 * (1 + n_broken * 2) + 1 + 1))

# ---- helpers -------------------------------------------------------------------

# The docs still show the copied text (each non-empty line, "\-" read as "-").
for name in "${IDIOMS[@]}"; do
	[ -n "${TEXT[$name]:-}" ] || continue
	missing=
	doc=$(sed 's/\\-/-/g' "${DOC[$name]}")
	while IFS= read -r line; do
		[ -z "$line" ] && continue
		grep -qF -- "$line" <<<"$doc" || missing+="$line"$'\n'
	done <<<"${TEXT[$name]}"
	is "$missing" "" "$name: $(basename "${DOC[$name]}") still shows this idiom"
done

# script NAME KEY MARK: the idiom's text with the lock paths on our mount
# (key KEY), the job replaced by creating MARK, and waits shortened.
script() {
	local name=$1 key=$2 mark=$3 job
	job="touch '$mark'"
	sed -e "s|/mnt/locks/[A-Za-z0-9_.-]*|$M/$key|g" \
		-e "s|(set -C; : > f)|(set -C; : > '$M/$key')|; s|rm f;|rm '$M/$key';|" \
		-e "s|then work;|then $job;|" \
		-e "s|^0 2 \* \* \*  lockfs-run -n|lockfs-run -n -E 0|" \
		-e "s|^lockfs-run |'$R' |" \
		-e "s|-w 30 |-w 1 |" \
		-e "s|run-backup;|$job;|; s|run-nightly;|$job;|; s|-- run-nightly\$|-- $job|" \
		-e "s|make deploy|$job|" \
		-e "s|-- /usr/local/bin/nightly|-- $job|" \
		-e "s|-- sh -c 'deploy --fence \"\$LOCKFS_FENCE\"'|-- $job|" \
		-e "s|^    \.\.\. *# the work\$|    open('$mark', 'w').close()|" \
		<<<"${TEXT[$name]}"
	case $name in
	readme-guard | man8-cron) echo "$job" ;; # the guarded job
	esac
}

# run_idiom NAME SHELL KEY MARK: runs it in the test's process group (no
# setsid, timeout --foreground), at most 20 s; RC, OUT (stdout+stderr).
run_idiom() {
	local name=$1 sh=$2 key=$3 mark=$4 f=$WORK/idiom.run
	case $name in
	cron-nightly.sh)
		sed -e "s|^MNT=/mnt/locks\$|MNT=$M|; s|^LOCK=\$MNT/nightly\$|LOCK=\$MNT/$key|" \
			"${DOC[$name]}" >"$f"
		echo "touch '$mark' # the nightly work" >>"$f"
		;;
	python-locks.run_once)
		cat >"$f" <<EOF
import importlib.util, sys
sys.dont_write_bytecode = True  # no __pycache__ in contrib/examples
sys.argv = ["python-locks.py", "$M"]
spec = importlib.util.spec_from_file_location("pl", "${DOC[$name]}")
pl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pl)
pl.run_once("$key", lambda: open("$mark", "w").close())
EOF
		;;
	readme-python)
		{ echo "import os"; script "$name" "$key" "$mark"; } >"$f"
		;;
	*)
		script "$name" "$key" "$mark" >"$f"
		;;
	esac
	OUT=$(cd "$WORK" && timeout --foreground -k 5 20 "$sh" "$f" </dev/null 2>&1)
	RC=$?
}

t_start=$(now_ms)
new_table || { echo "Bail out! cannot create a table"; exit 1; }
mount_start a "owner=idioms-a" || { echo "Bail out! cannot mount"; exit 1; }
M=$(mnt a)
diag "table and mount: $(($(now_ms) - t_start)) ms"

# ---- each idiom on a busy key, then on a free one -------------------------------
i=0
for name in "${IDIOMS[@]}"; do
	for sh in ${SHELLS[$name]}; do
		i=$((i + 1))
		tag="$name ($(basename "$sh"))"

		t0=$(now_ms)
		key=busy-$i mark=$WORK/ran-busy-$i
		hold_start h --pgrp "$M/$key" O_CREAT,O_EXCL,O_RDONLY 0644
		if [ "$HOUT" != ready ]; then
			diag "holder of $key: $HOUT"
		fi
		hpid=$(hold_pid h)
		run_idiom "$name" "$sh" "$key" "$mark"
		is "$RC" "${BUSY_RC[$name]}" "$tag, key held by another process group: exits ${BUSY_RC[$name]}" ||
			diag "output: $OUT"
		ok "$([ ! -e "$mark" ] && echo 0)" "... and its command did not run"
		hold_cmd h fsync
		is "$HOUT" 0 "... the holder's fsync still gives 0"
		txt=$(cat "$M/$key" 2>&1)
		is "$(field "$txt" state)" held "... cat shows state: held"
		like "$(field "$txt" holder)" " pid=$hpid " "... by the holder (pid $hpid)"
		hold_stop h
		t1=$(now_ms)

		key=free-$i mark=$WORK/ran-free-$i
		run_idiom "$name" "$sh" "$key" "$mark"
		is "$RC" "${FREE_RC[$name]}" "$tag, key free: exits ${FREE_RC[$name]}" ||
			diag "output: $OUT"
		ok "$([ -e "$mark" ] && echo 0)" "... and its command ran"
		ok "$([ ! -e "$M/$key" ] && echo 0)" "... and the lock is gone afterwards"
		got=$(timeout --foreground 20 "$T" open "$M/$key" O_CREAT,O_EXCL,O_RDONLY 0644 2>&1)
		is "$got" 0 "... another O_EXCL create acquires it"
		[ "$got" = 0 ] && rm -f "$M/$key"
		diag "$tag: busy $((t1 - t0)) ms, free $(($(now_ms) - t1)) ms"
	done
done

# ---- broken, not busy ----------------------------------------------------------
# Three mounts where no lock can be taken: DynamoDB unreachable (the fault
# proxy drops every connection: EIO), the daemon killed and its mount left
# (ENOTCONN), lockfs unmounted (the bare mountpoint, which lockfs makes
# immutable: EPERM, for every uid: the kernel checks the flag before the
# mode). The cron idioms fail loudly there and never run
# their job: lockfs-run with 69 (-E 0 too), the sh guard and
# cron-nightly.sh with 1, flock -n with 66 (held: 1).
# broken_case WHAT DIR ERRNO: the errno of an O_EXCL create in DIR, then
# every cron idiom run with DIR as the mount.
broken_case() {
	local what=$1 dir=$2 want=$3 name sh got t0
	got=$(timeout --foreground 30 "$T" open "$dir/any" O_CREAT,O_EXCL,O_RDONLY 0644 2>&1 | head -n 1)
	is "$got" "$want" "$what: an O_EXCL create gives $want"
	M=$dir
	for name in readme-guard readme-lockfs-run-E0 readme-lockfs-run-n cron-nightly.sh man8-flock-n; do
		for sh in ${SHELLS[$name]}; do
			t0=$(now_ms)
			run_idiom "$name" "$sh" broken "$WORK/ran-broken"
			is "$RC" "${BROKEN_RC[$name]}" "$what: $name ($(basename "$sh")) exits ${BROKEN_RC[$name]} ($(($(now_ms) - t0)) ms)" ||
				diag "output: $OUT"
			ok "$([ ! -e "$WORK/ran-broken" ] && echo 0)" "... and its command did not run"
			rm -f "$WORK/ran-broken"
		done
	done
	M=$(mnt a)
}

SHORT=lease=2,heartbeat=0.5,safe_period=1.5,entry_timeout=0,attr_timeout=0
proxy_start || { echo "Bail out! cannot start the fault proxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT mount_start e "owner=idioms-e,$SHORT" ||
	{ echo "Bail out! cannot mount through the proxy"; exit 1; }
proxy_ctl drop on >/dev/null
broken_case "DynamoDB unreachable" "$(mnt e)" EIO
proxy_ctl drop off >/dev/null

mount_start d "owner=idioms-d,$SHORT" || { echo "Bail out! cannot mount"; exit 1; }
dpid=$(daemon_pid d)
kill -9 "$dpid"
wait_for 10 _gone "$dpid"
broken_case "daemon dead" "$(mnt d)" ENOTCONN

mount_start b "owner=idioms-b" || { echo "Bail out! cannot mount"; exit 1; }
mount_stop b
broken_case "lockfs not mounted" "$(mnt b)" EPERM
expect_as 65534 EPERM open "$(mnt b)/any" O_CREAT,O_EXCL,O_RDONLY 0644

mount_stop a
