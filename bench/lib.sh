# bench/lib.sh: what the benchmark scripts share, sourced after they set
# ROOT, BUILD and TMP: the fake credentials, the build of their targets,
# DynamoDB Local, and lockfs-faultproxy in front of it for --rtt. Sets E
# (the endpoint the mounts and the baseline use), PORT (DynamoDB Local's),
# PROXY (the proxy's binary) and PROXY_PID; bench_stop undoes the start.

export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench
export AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
PROXY=$BUILD/tests/tools/lockfs-faultproxy
PROXY_PID=

# mounted [DIR]: DIR (default MNT) is a lockfs mount now.
mounted() {
	awk -v m="${1:-$MNT}" '$5 == m { for (i = 7; i <= NF; i++) if ($i == "-") {
		if ($(i + 1) == "fuse.lockfs") f = 1; break } } END { exit !f }' \
		/proc/self/mountinfo
}
# alive PID: running (a child that exited stays a zombie until reaped).
alive() {
	kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1" 2>/dev/null)" != Z ]
}
# wait_for SECS CMD...: polls CMD every 0.1 s for at most SECS.
wait_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 10; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
not() { ! "$@"; }

# bench_build TARGET...: configures BUILD and builds the targets.
bench_build() {
	cmake -S "$ROOT" -B "$BUILD" >/dev/null
	cmake --build "$BUILD" -j "$(nproc)" --target "$@" >/dev/null
}

# bench_start RTT: DynamoDB Local in TMP/ddb; with RTT non-empty, the proxy
# in front of it (no latency yet: bench_latency adds it after warming up).
bench_start() {
	read -r PORT _ < <("$ROOT/contrib/dynamodb-local" --state-dir "$TMP/ddb" start 2>/dev/null)
	E=http://127.0.0.1:$PORT
	[ -n "$1" ] || return 0
	"$PROXY" --target "127.0.0.1:$PORT" --control "$TMP/proxy.ctl" \
		>"$TMP/proxy.port" 2>"$TMP/proxy.log" &
	PROXY_PID=$!
	for _ in $(seq 100); do
		[ -s "$TMP/proxy.port" ] && break
		sleep 0.1
	done
	read -r PPORT <"$TMP/proxy.port" || { echo "lockfs-faultproxy did not start" >&2; exit 1; }
	E=http://127.0.0.1:$PPORT
}

# bench_ctl CMD...: one control command to the proxy.
bench_ctl() { timeout 10 "$PROXY" --control "$TMP/proxy.ctl" "$@" >/dev/null; }

# bench_kill PID: SIGTERM, SIGKILL if it is still there 10 s later; reaped.
bench_kill() {
	kill -TERM "$1" 2>/dev/null || true
	wait_for 10 not alive "$1" || kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# bench_unmount PID [DIR]: unmounts DIR (default MNT) and waits at most 60 s
# for its daemon PID to exit (it releases its locks first), then kills it
# and lazily unmounts what is left.
bench_unmount() {
	local m=${2:-$MNT}
	mounted "$m" && timeout 10 fusermount3 -u "$m" 2>/dev/null
	if ! wait_for 60 not alive "$1"; then
		echo "${0##*/}: daemon still running 60 s after unmount; killing it" >&2
		bench_kill "$1"
	fi
	mounted "$m" && timeout 10 fusermount3 -u -z "$m" 2>/dev/null
	wait "$1" 2>/dev/null || true
}

# bench_teardown: what an EXIT trap ends with once the script's own
# processes are gone: the proxy back to loopback speed (unmounting releases
# the held locks), the mount of DAEMON_PID on MNT, the proxy and DynamoDB
# Local, and TMP (lockfs makes its mountpoint immutable).
bench_teardown() {
	[ -n "$PROXY_PID" ] && bench_ctl latency 0 2>/dev/null
	[ -n "${DAEMON_PID:-}" ] && bench_unmount "$DAEMON_PID"
	bench_stop
	chattr -i "$MNT" 2>/dev/null
	rm -rf "$TMP"
}

# bench_stop: stops the proxy and DynamoDB Local (from the EXIT trap).
bench_stop() {
	if [ -n "$PROXY_PID" ]; then bench_kill "$PROXY_PID"; fi
	timeout 30 "$ROOT/contrib/dynamodb-local" --state-dir "$TMP/ddb" stop \
		>/dev/null 2>&1 || true
}
