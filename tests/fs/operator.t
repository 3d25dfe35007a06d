#!/usr/bin/env bash
# operator.t: what an operator reads when something is off (issue 9, "say
# what broke"). TLS failures at mount time in words; option errors that
# give the rule or the range (prefix, owner, durations, counts, log_file);
# prefix=team-a meaning the directory team-a/; `df -i` counting the locks
# held; -d showing each DynamoDB request (operation, key, status, ms,
# retries) and no secret; lines with "<N>" priorities when stderr is the
# journal; a daemon in the background saying where its log goes, and its
# warnings landing there (a heartbeat failure named, the loss), with
# log_file= and with the journal. TLS servers and DynamoDB stay on
# 127.0.0.1; every wait is bounded.
. "$(dirname "$0")/lib.sh"

plan 80

new_table || { echo "Bail out! cannot create a table"; exit 1; }
EO="endpoint=$ENDPOINT,region=us-east-1,table=$TABLE"
PORT=${ENDPOINT##*:}
PORT=${PORT%%/*}
MP=$WORK/mp
mkdir -p "$MP"
track_mount "$MP"

# refused DESC REGEX OPTIONS: lockfs -o EO,OPTIONS MP exits 1 with one line
# on stderr matching ^lockfs: REGEX, and mounts nothing.
refused() {
	local desc=$1 want=$2 err rc
	err=$(timeout 30 "$L" -o "$EO,$3" "$MP" 2>&1 >/dev/null)
	rc=$?
	is "$rc/$(wc -l <<<"$err")" "1/1" "$desc: exit 1, one line"
	like "$err" "^lockfs: $want" "$desc: says why"
	if _mounted "$MP"; then
		flunk "$desc: nothing mounted"
		fusermount3 -u -z "$MP"
	fi
}

# ---- options: the rule or the range in the error ----------------------------
refused "prefix=../" 'prefix=\.\./: want names separated by /' "prefix=../"
refused "prefix=/" 'prefix=/: want names separated by /' "prefix=/"
refused "prefix=x//y" 'prefix=x//y: want names separated by /' "prefix=x//y"
refused "prefix=.lockfs" 'prefix=\.lockfs: names starting with \.lockfs are reserved' \
	"prefix=.lockfs"
refused "lease=100000000" 'lease=100000000: want seconds from 0\.001 to 604800 \(7 days\)' \
	"lease=100000000"
refused "owner with a newline" 'owner: want 1 to 256 bytes of UTF-8 without control characters' \
	"owner=a"$'\n'"lock: key=forged"
refused "max_threads=5000" 'max_threads=5000: want a number from 1 to 1024' \
	"max_threads=5000"
refused "log_file in a missing directory" \
	"log_file=$WORK/nodir/x\\.log: No such file or directory \\(ENOENT\\)$" \
	"log_file=$WORK/nodir/x.log"
help=$("$L" --help)
like "$help" 'log_file=PATH' "--help names log_file"
like "$help" 'prefix=DIR' "--help says prefix= is a directory"

# ---- TLS at mount time: which failure ----------------------------------------
# DynamoDB Local speaks plain HTTP.
refused "https to an http port" \
	"cannot describe the table: connection failed: TLS handshake failed: 127\\.0\\.0\\.1:$PORT does not speak TLS" \
	"endpoint=https://127.0.0.1:$PORT"
tls_port=
if command -v openssl >/dev/null &&
	(cd "$WORK" && openssl req -x509 -newkey rsa:2048 -nodes -keyout self.key \
		-out self.pem -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1) >"$WORK/openssl.log" 2>&1; then
	openssl s_server -accept 127.0.0.1:0 -cert "$WORK/self.pem" \
		-key "$WORK/self.key" -www </dev/null >"$WORK/s_server.out" 2>&1 &
	spid=$!
	track_pid "$spid"
	wait_for 10 grep -q '^ACCEPT 127.0.0.1:' "$WORK/s_server.out" &&
		tls_port=$(sed -n 's/^ACCEPT 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$WORK/s_server.out")
fi
if [ -n "$tls_port" ]; then
	refused "a self-signed server" \
		"cannot describe the table: connection failed: TLS: the server's certificate is self-signed" \
		"endpoint=https://127.0.0.1:$tls_port"
	refused "a missing ca_file" \
		"cannot describe the table: connection failed: TLS: cannot read ca_file $WORK/none\\.pem: No such file or directory" \
		"endpoint=https://127.0.0.1:$tls_port,ca_file=$WORK/none.pem"
	refused "localhost against a certificate for 127.0.0.1" \
		"cannot describe the table: connection failed: TLS: the server's certificate is not for host localhost" \
		"endpoint=https://localhost:$tls_port,ca_file=$WORK/self.pem"
else
	for i in 1 2 3 4 5 6; do skip "TLS server cases" "no openssl command"; done
fi
[ -n "${spid:-}" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null

# ---- prefix=team-a is the directory team-a/ ----------------------------------
mount_start p "owner=op-p,hold=unlink,prefix=team-a,entry_timeout=0,attr_timeout=0" &&
	mount_start r "owner=op-r,hold=unlink,entry_timeout=0,attr_timeout=0" ||
	{ echo "Bail out! cannot mount"; exit 1; }
P=$(mnt p) R=$(mnt r)
expect 0 open "$P/x" O_CREAT,O_EXCL,O_RDONLY 0644
is "$(ls "$R")" "team-a" "the table's root shows the directory team-a, no key team-ax"
is "$(ls "$R/team-a")" "x" "team-a/ holds the lock x"
is "$(sed -n 's/^prefix: //p' "$P/.lockfs/status")" "team-a/" "status: prefix team-a/"
expect 0 unlink "$P/x"

# ---- df -i: IUsed is the number of locks held --------------------------------
for k in a b c; do
	"$T" open "$R/df-$k" O_CREAT,O_EXCL,O_RDONLY 0644 >/dev/null
done
read -r iused itotal ifree < <(timeout 10 df --output=iused,itotal,iavail "$R" | tail -n 1)
is "$iused" 3 "df -i: IUsed is the 3 locks held"
is "$((itotal - ifree))" 3 "df -i: Inodes - IFree = IUsed"
read -r files ffree < <(stat -f -c '%c %d' "$R")
ok "$([ "$files" -ge "$ffree" ] && [ "$ffree" -gt 0 ] && echo 0)" \
	"stat -f: total inodes ($files) >= free ($ffree) > 0"
for k in a b c; do rm -f "$R/df-$k"; done
is "$(timeout 10 df --output=iused "$R" | tail -n 1 | tr -d ' ')" 0 "df -i: IUsed 0 once released"
mount_stop p
# r keeps holding "held" for the -d mount to be refused.
expect 0 open "$R/held" O_CREAT,O_EXCL,O_RDONLY 0644

# ---- -d: each request, and never a secret ------------------------------------
# Through the fault proxy, so that one request is retried.
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
AK=AKIDOPTEST$$ SK=SECRETOPTEST$$ TK=TOKENOPTEST$$
MOUNT_ENV="AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_SESSION_TOKEN=$TK" \
	ENDPOINT=$PROXY_ENDPOINT mount_start d "owner=op-d,debug" ||
	{ echo "Bail out! cannot mount -d"; exit 1; }
D=$(mnt d)
proxy_ctl http500 1 PutItem >/dev/null
expect 0 open "$D/dbg" O_CREAT,O_EXCL,O_RDONLY 0644
hold_start hd --pgrp "$D/dbg2" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "a holder takes dbg2"
expect EAGAIN flock "$D/held" O_CREAT,O_RDWR ex,nb
hold_stop hd
mount_stop d
expect 0 unlink "$R/held"
mount_stop r
dlog=$(cat "$WORK/daemon-d.log")
like "$dlog" 'debug ddb: DescribeTable table='"$TABLE"' status=200 ms=[0-9]+ retries=0' \
	"-d: DescribeTable with table, status, ms, retries"
like "$dlog" 'debug ddb: PutItem key=dbg2 status=200 ms=[0-9]+ retries=0' \
	"-d: the PutItem of an acquire"
like "$dlog" 'debug ddb: PutItem key=held status=400 ms=[0-9]+ retries=0: ConditionalCheckFailedException \(HTTP 400\)' \
	"-d: a refused PutItem with its error"
like "$dlog" 'debug ddb: (Query|GetItem) key=dbg status=200 ms=[0-9]+ retries=0' \
	"-d: a lookup"
like "$dlog" 'debug ddb: PutItem key=dbg status=200 ms=[0-9]+ retries=1' \
	"-d: a PutItem answered after one retry (an HTTP 500 first)"
like "$dlog" 'debug ddb: (DeleteItem|UpdateItem) key=dbg2 status=200 ms=[0-9]+ retries=0' \
	"-d: the release of dbg2"
unlike "$dlog" "$SK|$TK|$AK" "-d: no secret key, session token or access key id"
unlike "$dlog" '[Aa]uthorization|Signature=|[Xx]-[Aa]mz-[Ss]ecurity-[Tt]oken|Credential=' \
	"-d: no Authorization header, signature or token header"

# ---- stderr is the journal: <N> priorities -----------------------------------
: >"$WORK/daemon-j.log"
MOUNT_ENV="JOURNAL_STREAM=$(stat -c '%d:%i' "$WORK/daemon-j.log")" \
	mount_start j "owner=op-j" || { echo "Bail out! cannot mount j"; exit 1; }
mount_stop j
like "$(head -n 1 "$WORK/daemon-j.log")" '^<6>info main: mounted ' \
	"journal: an info line starts with <6>, without a time of its own"
unlike "$(cat "$WORK/daemon-j.log")" $'(^|\n)[0-9]{2}:[0-9]{2}:' "journal: no line carries our time stamp"

# ---- in the background: where logs go, and the warnings get there -----------
SHORT="lease=3,heartbeat=0.5,safe_period=1.5,hold=unlink"
PEO="endpoint=$PROXY_ENDPOINT,region=us-east-1,table=$TABLE,$SHORT"
F=$WORK/bg-file J=$WORK/bg-journal
mkdir -p "$F" "$J"
track_mount "$F"
track_mount "$J"
bg_pid() { pgrep -f -x "$L -o $PEO,owner=$1.* $2" | head -n 1; }

# with log_file=
timeout 30 "$L" -o "$PEO,owner=op-f-$$,log_file=$WORK/op.log" "$F" \
	>"$WORK/bg-file.out" 2>&1
is "$?" 0 "log_file: the daemon goes to the background"
is "$(cat "$WORK/bg-file.out")" "lockfs: mounted $F; logs go to $WORK/op.log" \
	"log_file: one line says where the logs go"
fpid=$(bg_pid "op-f-$$" "$F")
[ -n "$fpid" ] && track_pid "$fpid"
like "$(cat "$WORK/op.log")" "lockfs\\[${fpid:-x}\\] info main: mounted $F: .* log=$WORK/op\\.log" \
	"log_file: the file has the mount line, dated, with the pid"

# with session leases: the session is made before the mount goes to the
# background, and its line goes to the log, not to the terminal
S=$WORK/bg-session
mkdir -p "$S"
track_mount "$S"
timeout 30 "$L" -o "$PEO,owner=op-s-$$,session,log_file=$WORK/op-s.log" "$S" \
	>"$WORK/bg-session.out" 2>&1
is "$?/$(cat "$WORK/bg-session.out")" "0/lockfs: mounted $S; logs go to $WORK/op-s.log" \
	"session: the terminal gets the one line (the session's was printed there too)"
spid=$(bg_pid "op-s-$$" "$S")
[ -n "$spid" ] && track_pid "$spid"
like "$(cat "$WORK/op-s.log")" "info main: mounted $S: .* owner=op-s-$$ session=\.lockfs-session/op-s-$$ log=" \
	"session: the log's mount line names the session"
timeout 10 fusermount3 -u "$S"

# with stderr the journal
: >"$WORK/bg-journal.err"
JOURNAL_STREAM=$(stat -c '%d:%i' "$WORK/bg-journal.err") \
	timeout 30 "$L" -o "$PEO,owner=op-j-$$" "$J" 2>>"$WORK/bg-journal.err" </dev/null >/dev/null
is "$?" 0 "journal: the daemon goes to the background"
jpid=$(bg_pid "op-j-$$" "$J")
[ -n "$jpid" ] && track_pid "$jpid"
is "$(head -n 1 "$WORK/bg-journal.err")" "lockfs: mounted $J; logs go to the journal (stderr)" \
	"journal: one line says where the logs go"

expect 0 open "$F/lost-f" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 open "$J/lost-j" O_CREAT,O_EXCL,O_RDONLY 0644
proxy_ctl stall on >/dev/null
lost_in() { grep -q "^lock: key=$2 state=lost " "$1/.lockfs/status"; }
wait_for 10 lost_in "$F" lost-f
ok $? "log_file: lost-f is lost while DynamoDB does not answer"
wait_for 10 lost_in "$J" lost-j
ok $? "journal: lost-j is lost too"
wait_for 5 grep -q 'lost key=lost-f' "$WORK/op.log"
flog=$(cat "$WORK/op.log")
like "$flog" "lockfs\\[$fpid\\] warning lock: heartbeat key=lost-f failed: [A-Za-z ]+ \\(E[A-Z]+\\); lock safe for" \
	"log_file: the heartbeat failure names its error"
like "$flog" "lockfs\\[$fpid\\] warning lock: lost key=lost-f: " "log_file: the loss is there"
wait_for 5 grep -q 'lost key=lost-j' "$WORK/bg-journal.err"
jlog=$(cat "$WORK/bg-journal.err")
like "$jlog" $'\n<6>info main: mounted '"$J" "journal: <6> for the mount line"
like "$jlog" $'\n<4>warning lock: heartbeat key=lost-j failed: [A-Za-z ]+ \\(E[A-Z]+\\)' \
	"journal: <4> for the heartbeat failure, named"
like "$jlog" $'\n<4>warning lock: lost key=lost-j: ' "journal: <4> for the loss"
proxy_ctl stall off >/dev/null
for m in "$F" "$J"; do
	timeout 10 fusermount3 -u "$m"
	ok $? "unmount $(basename "$m")"
done
wait_for 15 _gone "${fpid:-0}"
ok $? "the log_file daemon exits"
wait_for 15 _gone "${jpid:-0}"
ok $? "the journal daemon exits"
like "$(cat "$WORK/op.log")" "lockfs\\[$fpid\\] info main: all locks released" \
	"log_file: the last line is there too"

# with neither: syslog when /dev/log is a socket, else a file
B=$WORK/bg-default
mkdir -p "$B"
track_mount "$B"
timeout 30 "$L" -o "$EO,owner=op-b-$$" "$B" >"$WORK/bg-default.out" 2>&1
is "$?" 0 "default: the daemon goes to the background"
bpid=$(pgrep -f -x "$L -o $EO,owner=op-b-$$ $B" | head -n 1)
[ -n "$bpid" ] && track_pid "$bpid"
if [ -S /dev/log ]; then
	is "$(cat "$WORK/bg-default.out")" "lockfs: mounted $B; logs go to syslog (/dev/log)" \
		"default: logs go to syslog, and it says so"
	skip "default: the fallback file gets the lines" "/dev/log is there"
else
	is "$(cat "$WORK/bg-default.out")" \
		"lockfs: mounted $B; logs go to /var/log/lockfs.log (no syslog socket at /dev/log)" \
		"default: no /dev/log: logs go to /var/log/lockfs.log, and it says so"
	like "$(grep "lockfs\\[${bpid:-x}\\] " /var/log/lockfs.log)" "info main: mounted $B: " \
		"default: /var/log/lockfs.log has the mount line"
fi
timeout 10 fusermount3 -u "$B"
ok $? "unmount the default daemon"
wait_for 15 _gone "${bpid:-0}"
ok $? "the default daemon exits"
