#!/usr/bin/env bash
# refused.t: DynamoDB refusing connections (the endpoint down: here the
# fault proxy of mount a stopped, its port closed). An acquire there fails
# with EIO, and since none of its attempts left on a connection, nothing
# of it can land: no write is made to resolve it and nothing looks at the
# key afterwards (a write whose answer was lost would be looked for, a
# heartbeat apart, for 16 minutes). Once the proxy is back on its port,
# mount a makes no request for the key until it is asked to, then takes
# it at once.
. "$(dirname "$0")/lib.sh"

plan 9

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
OPT=lease=2,heartbeat=0.5,safe_period=1.5,attr_timeout=0
# a: entry_timeout=5, so that a key it released is known free for 5 s
# (recent_release_ms) and the kernel's lookup before the create is
# answered without a request: the create's PutItem is what is refused.
ENDPOINT=$PROXY_ENDPOINT mount_start a "owner=refused-a,$OPT,entry_timeout=5" &&
	mount_start b "owner=refused-b,$OPT,entry_timeout=0" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b)
port=${PROXY_ENDPOINT##*:}
expect 0 open "$A/k" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 unlink "$A/k"

kill "$PROXY_PID"
_reap "$PROXY_PID" 10 >/dev/null
refused() { ! timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; }
wait_for 10 refused
ok $? "the proxy is gone: its port $port refuses connections"

t0=$(now_ms)
got=$(timeout --foreground 60 "$T" open "$A/k" O_CREAT,O_EXCL,O_RDONLY 0644 2>&1 | head -n 1)
is "$got" EIO "a's acquire of k while DynamoDB refuses connections: EIO ($(($(now_ms) - t0)) ms)"

PROXY_LISTEN=127.0.0.1:$port proxy_start ||
	{ echo "Bail out! cannot start the proxy again on $port"; exit 1; }
is "$PROXY_ENDPOINT" "http://127.0.0.1:$port" "the proxy is back on port $port"
sleep 3 # six heartbeats: an orphan's cleanup would delete within one
ops=$(proxy_ctl stats | tr ' ' '\n' | grep -E '^(PutItem|DeleteItem|UpdateItem)=' | tr '\n' ' ')
is "$ops" "" "no write of a's reaches DynamoDB for k afterwards (none to resolve, no orphan)"
expect ENOENT stat "$B/k"
expect 0 open "$A/k" O_CREAT,O_EXCL,O_RDONLY 0644
like "$(proxy_ctl stats)" '(^| )PutItem=1( |$)' "a takes k through the proxy with one PutItem"

