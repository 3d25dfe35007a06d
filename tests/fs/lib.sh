# lib.sh: shared helpers of the filesystem tests (sourced by tests/fs/*.t).
#
# TAP:      plan N | ok COND DESC | pass DESC | flunk DESC | is GOT WANT DESC
#           like GOT REGEX DESC | unlike GOT REGEX DESC | skip DESC REASON
#           skip_all REASON | diag TEXT | expect WANT VERB ARGS... (runs
#           "$LOCKFS_T VERB ARGS..." and compares its first output line)
# Backend:  new_table [NAME]           creates a fresh table, sets TABLE
#           start_ddb_private          a DynamoDB Local of this test only:
#                                      sets PRIV_ENDPOINT and PRIV_PID
# Mounts:   mount_start NAME [OPTS]    mounts $TABLE on $(mnt NAME), sets MNT
#           mount_stop NAME            unmounts, asserts exit status 0
#           mount_kill NAME [SIG]      signals the daemon (KILL: lazy unmount)
#           mnt NAME, daemon_pid NAME
# Holders:  hold_start NAME ARGS...    "$LOCKFS_T hold ARGS" as a coprocess;
#                                      HOUT is its first line (ready/errno)
#           hold_cmd NAME CMD [SECS]   one command, its output in HOUT
#           hold_kill NAME [SIG], hold_stop NAME, hold_pid NAME
#           need_boto3                 sets PY (/usr/bin/python3), PYLOCK
#                                      (tests/interop/pylock.py), or skips
#                                      the file without python3-boto3
# Time:     now_ms, wait_for SECS CMD... (polls CMD every 50 ms)
# Proxy:    proxy_start [ENDPOINT]     lockfs-faultproxy in front of $ENDPOINT
#                                      (or http://127.0.0.1:PORT): sets
#                                      PROXY_ENDPOINT, PROXY_CTL, PROXY_PID;
#                                      mount through it with
#                                      ENDPOINT=$PROXY_ENDPOINT mount_start a
#           proxy_ctl CMD ARGS...      one control command (latency MS,
#                                      stall on|off, drop on|off, reset,
#                                      http500|throttle|lose-reply|hang-reply
#                                      |late-request N [OP], clear, stats);
#                                      prints the reply, status 0 on "ok",
#                                      else non-zero
#
# Every wait is bounded. The EXIT trap kills holders, unmounts and kills
# every daemon and stops every proxy and private DynamoDB Local this test
# started (proxies are cleared of faults first, so that unmounts get
# through).
#
# Environment: LOCKFS_BIN, LOCKFS_T, LOCKFS_DDB_SCRIPT, LOCKFS_DDB_ENDPOINT
# (when unset, a DynamoDB Local is started for this file alone), LOCKFS_TMP,
# LOCKFS_FAULTPROXY (default: tools/lockfs-faultproxy next to lockfs-t's
# directory), LOCKFS_PRELOAD_BIN (the lockfs that mount_start runs when
# MOUNT_ENV preloads a library, default LOCKFS_BIN: a ThreadSanitizer build
# cannot run under libfaketime, whose pthread_cond_timedwait hides the
# mutex's release and re-lock from TSan's interceptors).

set -u
set -o pipefail

_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_root=$(cd "$_here/../.." && pwd)
: "${LOCKFS_BIN:=$_root/build/lockfs}"
: "${LOCKFS_T:=$_root/build/tests/lib/lockfs-t}"
: "${LOCKFS_DDB_SCRIPT:=$_root/contrib/dynamodb-local}"
: "${LOCKFS_FAULTPROXY:=$(dirname "$LOCKFS_T")/../tools/lockfs-faultproxy}"
L=$LOCKFS_BIN
T=$LOCKFS_T
: "${LOCKFS_PRELOAD_BIN:=$L}"

export AWS_ACCESS_KEY_ID=fake AWS_SECRET_ACCESS_KEY=fake
export AWS_EC2_METADATA_DISABLED=true
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL AWS_ENDPOINT_URL_DYNAMODB
export AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1
# No AWS config files of the machine may change what the tests see.
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null

TEST_NAME=$(basename "$0" .t)
if [ -n "${LOCKFS_TMP:-}" ]; then
	mkdir -p "$LOCKFS_TMP"
	WORK=$(mktemp -d "$LOCKFS_TMP/$TEST_NAME.XXXXXX")
else
	WORK=$(mktemp -d "/tmp/lockfs-fs-$TEST_NAME.XXXXXX")
fi
chmod 0711 "$WORK"  # other uids must reach the mountpoints (ops.t)

_n=0
_failed=0
_planned=
declare -A _daemon _hold_fd _hold_pid _hold_off
_extra_pids=()
_extra_mounts=()
_priv_state=
_own_ddb_state=
PRIV_PID=
_proxy_pids=()
_proxy_ctls=()

# ---- TAP ---------------------------------------------------------------

plan() { _planned=$1; echo "1..$1"; }

diag() { sed 's/^/# /' <<<"$*"; }

pass() { _n=$((_n + 1)); echo "ok $_n - $1"; }

flunk() {
	_n=$((_n + 1))
	_failed=$((_failed + 1))
	echo "not ok $_n - $1"
	return 1
}

ok() {
	local cond=$1 desc=$2
	if [ "$cond" = 0 ] || [ "$cond" = true ]; then
		pass "$desc"
	else
		flunk "$desc"
	fi
}

is() {
	if [ "$1" == "$2" ]; then
		pass "$3"
	else
		flunk "$3"
		diag "got:      '$1'"
		diag "expected: '$2'"
		return 1
	fi
}

like() {
	if [[ $1 =~ $2 ]]; then
		pass "$3"
	else
		flunk "$3"
		diag "got:      '$1'"
		diag "expected to match: ${2//$'\n'/\\n}"
		return 1
	fi
}

unlike() {
	if [[ $1 =~ $2 ]]; then
		flunk "$3"
		diag "got:      '$1'"
		diag "expected not to match: ${2//$'\n'/\\n}"
		return 1
	else
		pass "$3"
	fi
}

skip() { _n=$((_n + 1)); echo "ok $_n - $1 # SKIP $2"; }

skip_all() { echo "1..0 # SKIP $*"; _planned=0; exit 0; }

# Shortens long arguments (300-byte names) in descriptions.
_short() {
	local a out=
	for a in "$@"; do
		a=${a//"$WORK"/W}
		[ ${#a} -gt 40 ] && a="${a:0:24}...(${#a})"
		out+="$a "
	done
	echo "${out% }"
}

# expect WANT VERB ARGS...: the first line of lockfs-t's output is WANT
# (EAGAIN and EWOULDBLOCK are the same errno and print as EAGAIN).
expect() {
	local want=$1 got
	shift
	# --foreground: timeout must not put lockfs-t in a process group of
	# its own (hold=pgrp would release its locks when it exits).
	got=$(timeout --foreground 20 "$T" "$@" 2>&1 | head -n 1)
	is "$got" "$want" "$(_short "$@") -> $want"
}

# expect_as UID WANT VERB ARGS...: expect, run as UID (and its gid UID).
expect_as() {
	local uid=$1 want=$2 got
	shift 2
	got=$(timeout --foreground 20 setpriv --reuid="$uid" --regid="$uid" \
		--clear-groups "$T" "$@" 2>&1 | head -n 1)
	is "$got" "$want" "as uid $uid: $(_short "$@") -> $want"
}

# ---- time and waiting --------------------------------------------------

now_ms() {
	local t=${EPOCHREALTIME/./}
	echo $((10#${t:0:-3}))
}

# wait_for SECS CMD...: runs CMD every 50 ms until it succeeds; 1 on timeout.
wait_for() {
	local secs=$1 deadline
	shift
	deadline=$(($(now_ms) + secs * 1000))
	while :; do
		"$@" && return 0
		[ "$(now_ms)" -ge "$deadline" ] && return 1
		sleep 0.05
	done
}

# daemon_line NAME SECS PATTERN: the first line of mount NAME's daemon log
# that matches PATTERN (grep's basic regex), waited for SECS at most;
# nothing if none came.
daemon_line() {
	local log=$WORK/daemon-$1.log
	wait_for "$2" grep -q -- "$3" "$log" && grep -m 1 -- "$3" "$log"
	return 0
}

# metric NAME [DIR]: the value of metric NAME of the mount at DIR (by
# default $A, the mount a test calls a), from its .lockfs/metrics.
metric() { "$T" read "${2:-$A}/.lockfs/metrics" | sed -n "s/^$1 //p"; }
# fuse_reqs OP [DIR]: the kernel's requests of operation OP so far.
fuse_reqs() { metric "lockfs_fuse_requests_total{op=\"$1\"}" "${2:-$A}"; }

# take_locks DIR N: creates DIR/k1 ... DIR/kN with O_EXCL (each a lock);
# stops at the first that fails (its error in $WORK/acquire.err).
take_locks() {
	(
		set -C
		for i in $(seq "$2"); do : >"$1/k$i" || exit 1; done
	) 2>"$WORK/acquire.err"
}

# ---- DynamoDB Local ----------------------------------------------------

_ddb_start() {  # STATE_DIR -> "PORT PID"
	local out
	out=$(timeout 120 "$LOCKFS_DDB_SCRIPT" --state-dir "$1" start 2>"$1.log") ||
		{ cat "$1.log" >&2; return 1; }
	echo "$out"
}

if [ -z "${LOCKFS_DDB_ENDPOINT:-}" ]; then
	# Run on its own (not from run.sh): a DynamoDB Local for this file.
	_own_ddb_state=$WORK/ddb-shared
	mkdir -p "$_own_ddb_state"
	read -r _port _pid < <(_ddb_start "$_own_ddb_state") ||
		{ echo "Bail out! cannot start DynamoDB Local"; exit 1; }
	LOCKFS_DDB_ENDPOINT=http://127.0.0.1:$_port
fi
ENDPOINT=$LOCKFS_DDB_ENDPOINT

# A DynamoDB Local for this test alone (it may be paused): PRIV_ENDPOINT.
start_ddb_private() {
	local port pid
	_priv_state=$WORK/ddb-private
	mkdir -p "$_priv_state"
	read -r port pid < <(_ddb_start "$_priv_state") || return 1
	[ -n "${pid:-}" ] || return 1
	PRIV_ENDPOINT=http://127.0.0.1:$port
	PRIV_PID=$pid
	ENDPOINT=$PRIV_ENDPOINT
}

# new_table [NAME]: creates a fresh table at $ENDPOINT and sets TABLE.
new_table() {
	TABLE=${1:-fs-$TEST_NAME-$$-$RANDOM}
	timeout 60 "$L" --create-table \
		-o "endpoint=$ENDPOINT,region=us-east-1,table=$TABLE" \
		>"$WORK/create-$TABLE.log" 2>&1 ||
		{ cat "$WORK/create-$TABLE.log" >&2; return 1; }
}

# ---- mounts ------------------------------------------------------------

mnt() { echo "$WORK/mnt-$1"; }
daemon_pid() { echo "${_daemon[$1]:-}"; }

_mounted() {  # MOUNTPOINT: mounted as fuse.lockfs?
	awk -v m="$1" '$5 == m { for (i = 7; i <= NF; i++) if ($i == "-") {
		if ($(i + 1) == "fuse.lockfs") f = 1; break } } END { exit !f }' \
		/proc/self/mountinfo
}

# The command that opened our extra fds must not leak them to children.
_close_hold_fds() {
	local k
	for k in "${!_hold_fd[@]}"; do
		eval "exec ${_hold_fd[$k]}>&-"
	done
}

# mount_start NAME [OPTIONS]: lockfs -f on $(mnt NAME) with the table and
# endpoint; OPTIONS are appended to -o. Waits (10 s) for the mount.
# MOUNT_ENV="VAR=value ..." (optional) is put in the daemon's environment;
# one that preloads a library runs LOCKFS_PRELOAD_BIN. MOUNT_WRAP="CMD
# ARGS --" (optional) runs the daemon through a command that execs it
# (prlimit), so that the daemon keeps the pid.
mount_start() {
	local name=$1 opts=${2:-} m pid bin=$L
	m=$(mnt "$name")
	mkdir -p "$m"
	[[ ${MOUNT_ENV:-} == *LD_PRELOAD=* ]] && bin=$LOCKFS_PRELOAD_BIN
	(
		_close_hold_fds
		# shellcheck disable=SC2086 # MOUNT_ENV: "VAR=value ..."
		exec ${MOUNT_WRAP:-} ${MOUNT_ENV:+env $MOUNT_ENV} \
			"$bin" -f -o "endpoint=$ENDPOINT,region=us-east-1,table=$TABLE${opts:+,$opts}" \
			"$m" </dev/null >>"$WORK/daemon-$name.log" 2>&1
	) &
	pid=$!
	_daemon[$name]=$pid
	MNT=$m
	if ! wait_for 10 _mounted "$m"; then
		diag "mount $name did not come up; its log:"
		diag "$(cat "$WORK/daemon-$name.log")"
		return 1
	fi
}

# Waits (SECS) for a process of ours to end; its exit status in $? or 124.
_reap() {
	local pid=$1 secs=${2:-15}
	wait_for "$secs" _gone "$pid" || return 124
	wait "$pid" 2>/dev/null
}
_gone() { ! kill -0 "$1" 2>/dev/null || [ "$(ps -o stat= -p "$1" 2>/dev/null)" = Z ]; }

# mount_stop NAME: fusermount3 -u, then the daemon must exit 0 (one TAP test).
mount_stop() {
	local name=$1 m pid rc
	m=$(mnt "$name")
	pid=${_daemon[$name]:-}
	timeout 10 fusermount3 -u "$m" 2>"$WORK/umount-$name.err"
	if [ $? -ne 0 ] && _mounted "$m"; then
		diag "fusermount3 -u $m: $(cat "$WORK/umount-$name.err")"
		sleep 1
		timeout 10 fusermount3 -u "$m" 2>/dev/null
	fi
	_reap "$pid" 15
	rc=$?
	unset "_daemon[$name]"
	if [ "$rc" -eq 0 ]; then
		pass "daemon $name exits 0 after unmount"
	else
		flunk "daemon $name exits 0 after unmount (status $rc)"
		diag "$(tail -n 20 "$WORK/daemon-$name.log")"
		[ "$rc" -eq 124 ] && diag "$(_stacks "$pid")"
	fi
}

# _stacks PID: where a daemon that does not exit is waiting: every
# thread's user stack (gdb, when installed) or its kernel wait channel.
_stacks() {
	local pid=$1 t
	if command -v gdb >/dev/null; then
		timeout 30 gdb -batch -nx -p "$pid" -ex 'thread apply all bt 12' \
			2>/dev/null | grep -E '^(Thread|#)'
		return
	fi
	for t in /proc/"$pid"/task/*; do
		echo "thread $(cat "$t/comm" 2>/dev/null): $(cat "$t/wchan" 2>/dev/null)"
	done
}

# mount_kill NAME [SIG]: signals the daemon; after KILL the mountpoint is
# lazily unmounted. Sets DAEMON_RC to its exit status.
mount_kill() {
	local name=$1 sig=${2:-TERM} pid
	pid=${_daemon[$name]:-}
	kill -s "$sig" "$pid" 2>/dev/null
	if [ "$sig" = KILL ] || [ "$sig" = 9 ]; then
		timeout 10 fusermount3 -u -z "$(mnt "$name")" 2>/dev/null
	fi
	_reap "$pid" 15
	DAEMON_RC=$?
	unset "_daemon[$name]"
}

# ---- holders -----------------------------------------------------------

# hold_start NAME ARGS...: "$T hold ARGS" reading commands from a pipe.
# HOUT is its first line: "ready" or the errno name of the open.
hold_start() {
	local name=$1 fifo out fd pid
	shift
	fifo=$WORK/hold-$name.in
	out=$WORK/hold-$name.out
	rm -f "$fifo" "$out"
	mkfifo "$fifo"
	: >"$out"
	exec {fd}<>"$fifo"
	(
		_close_hold_fds
		eval "exec $fd>&-"
		exec "$T" hold "$@" <"$fifo" >"$out" 2>&1
	) &
	pid=$!
	_hold_fd[$name]=$fd
	_hold_pid[$name]=$pid
	_hold_off[$name]=0
	_hold_collect "$name" 10 first
}

hold_pid() { echo "${_hold_pid[$1]:-}"; }

# group_hold PATH [SECS [UID]]: a process group of its own (setsid) that
# takes PATH with noclobber (O_EXCL), closes it (under hold=pgrp the group
# holds it) and stays SECS (default 300), as user UID if given (setpriv);
# its pid in HPID, killed by the cleanup. It exits at once if the create
# fails.
group_hold() {
	local as=()
	[ -n "${3:-}" ] && as=(setpriv --reuid="$3" --regid="$3" --clear-groups)
	(
		_close_hold_fds
		exec "${as[@]}" setsid \
			bash -c 'set -C; : >"$1" || exit 1; exec sleep "$2"' \
			_ "$1" "${2:-300}" </dev/null >/dev/null 2>&1
	) &
	HPID=$!
	track_pid "$HPID"
	disown # no job notice when it is killed
}

# count_alive PID...: how many of them still run.
count_alive() {
	local p n=0
	for p in "$@"; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done
	echo "$n"
}

# track_pid PID: a process the cleanup must kill (children of holders).
track_pid() { _extra_pids+=("$1"); }
# track_mount DIR: a mount not made by mount_start that cleanup unmounts.
track_mount() { _extra_mounts+=("$1"); }

_lines() { local n; n=$(wc -l <"$1"); echo $((n)); }

# Waits until the holder's output has a complete answer past the offset.
_hold_collect() {
	local name=$1 secs=$2 mode=${3:-} out off deadline
	out=$WORK/hold-$name.out
	off=${_hold_off[$name]}
	deadline=$(($(now_ms) + secs * 1000))
	HOUT=
	while :; do
		if [ "$mode" = first ]; then
			if [ "$(_lines "$out")" -gt "$off" ]; then
				HOUT=$(sed -n "$((off + 1))p" "$out")
				_hold_off[$name]=$((off + 1))
				return 0
			fi
		elif tail -n +"$((off + 1))" "$out" | grep -qx '@end'; then
			HOUT=$(tail -n +"$((off + 1))" "$out" | sed '/^@end$/,$d')
			_hold_off[$name]=$((off + $(tail -n +"$((off + 1))" "$out" |
				sed -n '/^@end$/{=;q}')))
			return 0
		fi
		if _gone "${_hold_pid[$name]}" ||
			[ "$(now_ms)" -ge "$deadline" ]; then
			HOUT="(no answer from holder $name)"
			return 1
		fi
		sleep 0.02
	done
}

# hold_cmd NAME CMD [SECS]: sends one command, waits (default 15 s) for its
# answer and puts it in HOUT.
hold_cmd() {
	local name=$1 cmd=$2 secs=${3:-15}
	echo "$cmd" >&"${_hold_fd[$name]}"
	_hold_collect "$name" "$secs"
}

# hold_send NAME CMD: sends a command without waiting (e.g. a blocking
# flock); collect its answer later with hold_wait NAME SECS.
hold_send() { echo "$2" >&"${_hold_fd[$1]}"; }
hold_wait() { _hold_collect "$1" "$2"; }

_hold_forget() {
	local name=$1
	eval "exec ${_hold_fd[$name]}>&-"
	unset "_hold_fd[$name]" "_hold_pid[$name]" "_hold_off[$name]"
}

# hold_kill NAME [SIG]: kills the holder and reaps it (a zombie would still
# count as a live process group). HOLD_RC is its exit status.
hold_kill() {
	local name=$1 sig=${2:-KILL} pid
	pid=${_hold_pid[$name]}
	kill -s "$sig" "$pid" 2>/dev/null
	_reap "$pid" 10
	HOLD_RC=$?
	_hold_forget "$name"
}

# hold_stop NAME: asks the holder to exit and reaps it.
hold_stop() {
	local name=$1 pid
	pid=${_hold_pid[$name]}
	echo exit >&"${_hold_fd[$name]}" 2>/dev/null
	_reap "$pid" 10
	HOLD_RC=$?
	[ "$HOLD_RC" = 124 ] && { kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
	_hold_forget "$name"
}

# ---- fault proxy -------------------------------------------------------

_proxy_up() { [ -s "$1" ]; }

# proxy_start [ENDPOINT]: lockfs-faultproxy in front of ENDPOINT (default
# $ENDPOINT). Sets PROXY_ENDPOINT, PROXY_CTL (its control socket) and
# PROXY_PID; its stderr goes to $WORK/proxy-N.log. Waits (10 s) for its port.
# PROXY_LISTEN=127.0.0.1:PORT: on that port (a proxy back where one was
# stopped), not a free one.
proxy_start() {
	local target=${1:-$ENDPOINT} n=${#_proxy_pids[@]} portf pid port
	target=${target#http://}
	target=${target%/}
	if [ ! -x "$LOCKFS_FAULTPROXY" ]; then
		diag "proxy_start: $LOCKFS_FAULTPROXY is missing (build first)"
		return 1
	fi
	PROXY_CTL=$WORK/proxy-$n.ctl
	# A unix socket path is at most 107 bytes.
	[ ${#PROXY_CTL} -gt 100 ] && PROXY_CTL=$(mktemp -u /tmp/lockfs-proxy.XXXXXX)
	portf=$WORK/proxy-$n.port
	: >"$portf"
	(
		_close_hold_fds
		exec "$LOCKFS_FAULTPROXY" --target "$target" --control "$PROXY_CTL" \
			${PROXY_LISTEN:+--listen "$PROXY_LISTEN"} \
			</dev/null >"$portf" 2>>"$WORK/proxy-$n.log"
	) &
	pid=$!
	_proxy_pids+=("$pid")
	_proxy_ctls+=("$PROXY_CTL")
	if ! wait_for 10 _proxy_up "$portf"; then
		diag "proxy_start: no port from lockfs-faultproxy; its log:"
		diag "$(cat "$WORK/proxy-$n.log")"
		return 1
	fi
	read -r port <"$portf"
	PROXY_ENDPOINT=http://127.0.0.1:$port
	PROXY_PID=$pid
}

# proxy_ctl CMD ARGS...: one control command to the proxy at $PROXY_CTL;
# prints its reply; status 0 for "ok ...", 1 for "error: ...", 2 (or 124,
# timed out) when the proxy cannot be reached.
proxy_ctl() {
	timeout 10 "$LOCKFS_FAULTPROXY" --control "$PROXY_CTL" "$@"
}

# proxy_injected: how many requests the proxy at $PROXY_CTL has answered
# with a fault since it started.
proxy_injected() {
	proxy_ctl stats | sed -n 's/.* injected=\([0-9]*\).*/\1/p'
}

# proxy_count OP: how many OP requests (PutItem, ...) the proxy at
# $PROXY_CTL has received since it started (0 before the first).
proxy_count() {
	local n
	n=$(proxy_ctl stats | tr ' ' '\n' | sed -n "s/^$1=//p")
	echo "${n:-0}"
}

# ---- cleanup -----------------------------------------------------------

# _unseal DIR: clears the immutable flag lockfs sets on its mountpoints
# under DIR (not crossing into mounts), so that DIR can be removed.
_unseal() {
	timeout 20 find "$1" -xdev -type d -exec chattr -i {} + 2>/dev/null
	return 0
}

_cleanup() {
	local rc=$? k pid m
	trap - EXIT INT TERM HUP
	for m in "${_proxy_ctls[@]}"; do
		timeout 10 "$LOCKFS_FAULTPROXY" --control "$m" clear >/dev/null 2>&1
	done
	for k in "${!_hold_pid[@]}"; do
		pid=${_hold_pid[$k]}
		kill -9 -- "-$pid" 2>/dev/null
		kill -9 "$pid" 2>/dev/null
	done
	for m in "${_extra_mounts[@]}"; do
		_mounted "$m" && timeout 10 fusermount3 -u -z "$m" 2>/dev/null
	done
	for pid in "${_extra_pids[@]}"; do
		kill -9 "$pid" 2>/dev/null
	done
	for k in "${!_daemon[@]}"; do
		m=$(mnt "$k")
		timeout 10 fusermount3 -u -z "$m" 2>/dev/null
		pid=${_daemon[$k]}
		kill -TERM "$pid" 2>/dev/null
		if ! wait_for 10 _gone "$pid"; then
			kill -9 "$pid" 2>/dev/null
		fi
	done
	# lockfs makes its mountpoints immutable: let them go.
	_unseal "$WORK"
	for pid in "${_proxy_pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null
		wait_for 10 _gone "$pid" || kill -9 "$pid" 2>/dev/null
	done
	for m in "${_proxy_ctls[@]}"; do
		rm -f "$m"
	done
	if [ -n "$PRIV_PID" ]; then
		kill -CONT "$PRIV_PID" 2>/dev/null
		timeout 30 "$LOCKFS_DDB_SCRIPT" --state-dir "$_priv_state" stop \
			>/dev/null 2>&1 || kill -9 "$PRIV_PID" 2>/dev/null
	fi
	if [ -n "$_own_ddb_state" ]; then
		timeout 30 "$LOCKFS_DDB_SCRIPT" --state-dir "$_own_ddb_state" stop \
			>/dev/null 2>&1
	fi
	wait 2>/dev/null
	if [ -n "$_planned" ] && [ "$_planned" != "$_n" ] && [ "$_planned" != 0 ]; then
		echo "# planned $_planned tests but ran $_n"
		[ "$rc" = 0 ] && rc=255
	fi
	[ "$_failed" -gt 0 ] && [ "$rc" = 0 ] && rc=1
	if [ "$rc" = 0 ] && [ -z "${LOCKFS_KEEP:-}" ]; then
		rm -rf "$WORK"
	else
		# The daemons' last words go into the output (tests/run, as CI
		# runs it, removes the work directory).
		[ "$rc" = 0 ] || for f in "$WORK"/daemon-*.log; do
			[ -s "$f" ] || continue
			echo "# --- the last 25 lines of ${f##*/} ---"
			tail -n 25 "$f" | sed 's/^/# /'
		done
		echo "# work directory kept: $WORK"
	fi
	exit "$rc"
}
trap _cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# ---- checks common to several files ------------------------------------

# field TEXT NAME: the value of "NAME: value" in a lock text.
field() { sed -n "s/^$2: //p" <<<"$1" | head -n 1; }

RFC3339_MS='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$'

# rfc_ms TIME: milliseconds since the epoch of an RFC 3339 UTC time.
rfc_ms() {
	local s
	s=$(date -u -d "${1%.*}Z" +%s 2>/dev/null) || { echo 0; return; }
	local frac=${1##*.}
	frac=${frac%Z}
	echo $((s * 1000 + 10#$frac))
}

# Acquire attempts from the test shell: "0" when taken.
try_acquire() { [ "$("$T" open "$1" O_CREAT,O_EXCL,O_RDONLY 0644 2>&1)" = 0 ]; }

# need_boto3: the python3 with boto3 that files writing rows directly (or
# acting as python_dynamodb_lock) need; skips the whole file without it.
need_boto3() {
	local why
	PY=/usr/bin/python3
	PYLOCK=$_root/tests/interop/pylock.py
	[ -x "$PY" ] || skip_all "no $PY"
	if ! why=$("$PY" -c 'import boto3' 2>&1); then
		skip_all "python3-boto3 is missing: $(tail -n 1 <<<"$why")"
	fi
}
