#!/usr/bin/env bash
# secrets.t: how the daemon keeps credentials (issue 12, items 6, 7, 10).
# As root, AWS files that another user owns or may write are refused with
# one line before their credential_process runs; the helper gets a minimal
# environment and no descriptor of the daemon's (it runs again in the
# daemon, while a lock is held, as its short-lived credentials are
# refreshed; ones that come already expired are used, and fetched again
# every 10 s); plain HTTP to a host that is not loopback is refused at
# mount time; the secrets of the environment are gone from /proc/PID/environ; the
# daemon is not dumpable; and its memory outside MADV_DONTDUMP pages (what a
# core would hold) has no copy of the secret key or the session token.
# [::ffff:127.0.0.1] plays the "remote" host: it is not judged loopback, but
# nothing ever leaves the machine, even if the check were broken.
. "$(dirname "$0")/lib.sh"

plan 42

new_table || { echo "Bail out! cannot create a table"; exit 1; }
MP=$WORK/mp
mkdir -p "$MP"
EO="region=us-east-1,table=$TABLE"
PORT=${ENDPOINT##*:}
PORT=${PORT%%/*}
REMOTE="http://[::ffff:127.0.0.1]:$PORT"

# fails DESC REGEX CMD...: status 1, one line on stderr matching REGEX,
# quickly, nothing mounted.
fails() {
	local desc=$1 want=$2 err rc t0
	shift 2
	t0=$(now_ms)
	err=$(timeout 20 "$@" 2>&1 >/dev/null)
	rc=$?
	is "$rc/$(wc -l <<<"$err")" "1/1" "$desc: exit 1 with one line"
	like "$err" "^lockfs: .*$want" "$desc: says why"
	if _mounted "$MP"; then
		flunk "$desc: nothing is left mounted"
		fusermount3 -u -z "$MP"
	else
		pass "$desc: nothing is left mounted ($(($(now_ms) - t0)) ms)"
	fi
}

# ---- item 7: plain HTTP only to loopback ------------------------------------
fails "endpoint $REMOTE" "plain HTTP to a host that is not loopback" \
	"$L" -f -o "endpoint=$REMOTE,$EO" "$MP"
fails "AWS_ENDPOINT_URL=$REMOTE" "plain HTTP to a host that is not loopback" \
	env AWS_ENDPOINT_URL="$REMOTE" "$L" -f -o "$EO" "$MP"
out=$(timeout 60 "$L" --create-table -o "endpoint=http://localhost:$PORT,$EO" 2>&1)
is "$?" 0 "plain HTTP to localhost is fine ($out)"

# ---- item 6: AWS files as root --------------------------------------------
SECRET=helpersecret$$x$RANDOM
TOKEN=helpertoken$$x$RANDOM
ENVTOKEN=envtoken$$x$RANDOM
HOMEDIR=$WORK/home
mkdir -p "$HOMEDIR/.aws"
echo 3600 >"$WORK/helper.life"
cat >"$WORK/helper.sh" <<EOF
#!/bin/sh
D=$WORK
n=\$((\$(cat \$D/helper.n 2>/dev/null || echo 0) + 1))
env >\$D/helper.env
(ls -l /proc/\$\$/fd) >\$D/helper.fds.\$n
echo \$n >\$D/helper.n.new && mv \$D/helper.n.new \$D/helper.n
exp=\$(date -u -d "+\$(cat \$D/helper.life) seconds" +%Y-%m-%dT%H:%M:%SZ)
printf '{"Version":1,"AccessKeyId":"AKIDHELPER","SecretAccessKey":"%s","SessionToken":"%s","Expiration":"%s"}' \
	$SECRET $TOKEN "\$exp"
EOF
chmod 0755 "$WORK/helper.sh"
printf '[default]\ncredential_process = %s\n' "$WORK/helper.sh" >"$HOMEDIR/.aws/config"
chmod 0600 "$HOMEDIR/.aws/config"
AWSENV=(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME="$HOMEDIR"
	AWS_CONFIG_FILE="$HOMEDIR/.aws/config"
	AWS_SHARED_CREDENTIALS_FILE="$HOMEDIR/.aws/credentials")

# The case of the issue: ~/.aws owned by another user, mode 0777.
chown 65534:65534 "$HOMEDIR/.aws"
chmod 0777 "$HOMEDIR/.aws"
fails ".aws of uid 65534, 0777" "refusing .*/\\.aws is owned by uid 65534" \
	"${AWSENV[@]}" "$L" -f -o "endpoint=$ENDPOINT,$EO" "$MP"
chown 0:0 "$HOMEDIR/.aws"
chmod 0700 "$HOMEDIR/.aws"
chmod 0666 "$HOMEDIR/.aws/config"
fails "config mode 0666" "refusing .*config is writable by group or others" \
	"${AWSENV[@]}" "$L" -f -o "endpoint=$ENDPOINT,$EO" "$MP"
ok "$([ ! -e "$WORK/helper.n" ] && echo 0)" "credential_process never ran from refused files"
chmod 0600 "$HOMEDIR/.aws/config"

# Fixed: the daemon mounts with the helper's credentials, lives under a gid
# of its own (so that /proc shows whether it is dumpable), and has secrets
# in its environment that it does not use.
echo 6 >"$WORK/helper.life"  # refreshed every 3 s or so, in the daemon
cat >"$WORK/lockfs-gid" <<EOF
#!/bin/sh
exec setpriv --regid=4321 --clear-groups "$LOCKFS_BIN" "\$@"
EOF
chmod 0755 "$WORK/lockfs-gid"
L=$WORK/lockfs-gid
# (not exported: the daemon's environment must hold ENVTOKEN only where
# these put it)
MOUNT_ENV="-u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME=$HOMEDIR
AWS_CONFIG_FILE=$HOMEDIR/.aws/config
AWS_SHARED_CREDENTIALS_FILE=$HOMEDIR/.aws/credentials
AWS_SESSION_TOKEN=$ENVTOKEN AWS_CONTAINER_AUTHORIZATION_TOKEN=$ENVTOKEN
PRIVATE_TEST_VAR=visible$$"
# allow_other: root (gid 0) may use a mount whose daemon has gid 4321
mount_start a allow_other
mounted=$?
L=$LOCKFS_BIN
MOUNT_ENV=
ok "$mounted" "mounts with credential_process credentials from safe files"
pid=$(daemon_pid a)
expect 0 open "$MNT/held" O_CREAT,O_EXCL,O_RDONLY 0644
helper_runs() { [ "$(cat "$WORK/helper.n" 2>/dev/null || echo 0)" -ge "$1" ]; }
wait_for 30 helper_runs 3
ok $? "the daemon's refresher ran the helper again ($(cat "$WORK/helper.n" 2>/dev/null) runs)"
is "$(field "$("$T" read "$MNT/held")" state)" held "a lock stays held across the refreshes"

# The helper's environment: a fixed PATH, none of our secrets.
henv=$(cat "$WORK/helper.env" 2>/dev/null)
like "$henv" $'(^|\n)PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin(\n|$)' \
	"the helper's PATH is fixed"
unlike "$henv" "$ENVTOKEN|AWS_SESSION_TOKEN|AWS_CONTAINER_AUTHORIZATION_TOKEN|PRIVATE_TEST_VAR" \
	"the helper gets no token nor other variable of the daemon's"
# Its descriptors in the daemon (run 3: /dev/fuse and DynamoDB connections
# open): 0, 1, 2 and the shell's own handle on its script (dash: 10),
# nothing else.
bad=$(awk -v s="$WORK/helper.sh" '$1 ~ /^l/ { fd = $(NF - 2); t = $NF;
	if (fd + 0 >= 3 && t != s) print fd " -> " t }' "$WORK/helper.fds.3" 2>/dev/null)
is "$bad" "" "the helper inherits no descriptor of the daemon's"
[ -n "$bad" ] && diag "$(cat "$WORK/helper.fds.3")"

# A helper that hands out credentials already expired (a wrong clock, a
# stale cache): they are used all the same, since DynamoDB judges them by
# its clock, and fetched again every 10 s. The daemon ran such a helper 30
# times a second and answered every request ENOKEY (errno 126).
echo -3600 >"$WORK/helper.life"
runs0=$(cat "$WORK/helper.n")
wait_for 10 helper_runs $((runs0 + 1)) # the next refresh: expired ones
runs1=$(cat "$WORK/helper.n")
sleep 5
runs2=$(cat "$WORK/helper.n")
ok "$([ $((runs2 - runs1)) -le 1 ] && echo 0)" \
	"expired credentials from the helper: fetched again at most once in 5 s ($((runs2 - runs1)) runs)"
expect 0 open "$MNT/afterexp" O_CREAT,O_EXCL,O_RDONLY 0644
like "$(cat "$WORK/daemon-a.log")" "already expired .*used all the same" \
	"the log says the helper's credentials are already expired"
echo 6 >"$WORK/helper.life"

# ---- item 10: environment, dumpability, memory -------------------------------
envd=$(tr '\0' '\n' <"/proc/$pid/environ")
unlike "$envd" "$ENVTOKEN" "/proc/PID/environ no longer holds the tokens"
like "$envd" $'(^|\n)AWS_SESSION_TOKEN=(\n|$)' "(the name stays, its value wiped)"
like "$envd" "PRIVATE_TEST_VAR=visible$$" "(other variables are left alone)"
# No lazy binding (the dynamic linker's resolver saves the vector registers,
# secret bytes included, on the stack at a symbol's first call): lockfs is
# linked with -z now and runs itself again with LD_BIND_NOW for its libraries.
like "$envd" $'(^|\n)LD_BIND_NOW=1(\n|$)' "the daemon binds every library at start (LD_BIND_NOW)"
is "$(cat "/proc/$pid/comm")" "${LOCKFS_BIN##*/}" \
	"(run again by its own path, the daemon keeps its name for ps and pgrep)"
# The same run again sets glibc's malloc tunables (read only at exec too):
# no per-thread cache, one arena; an operator's own follow, and so win.
# (glibc splits the variable at its colons in place: NULs read as colons.)
tunables() { tr '\0' ':' <"/proc/$1/environ" | grep -o 'GLIBC_TUNABLES=[a-z._=0-9:]*'; }
like "$(tunables "$pid")" '^GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1:' \
	"the daemon runs without glibc's per-thread malloc caches (GLIBC_TUNABLES)"
A_MNT=$MNT
GLIBC_TUNABLES=glibc.malloc.arena_max=2 mount_start tun ||
	{ echo "Bail out! cannot mount tun"; exit 1; }
like "$(tunables "$(daemon_pid tun)")" \
	'^GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1:glibc.malloc.arena_max=2:' \
	"(an operator's GLIBC_TUNABLES come after lockfs's, so theirs win)"
mount_stop tun
MNT=$A_MNT # mount_start set it to tun's
ok "$(readelf -d "$LOCKFS_BIN" | grep -q 'BIND_NOW' && readelf -lW "$LOCKFS_BIN" |
	grep -q GNU_RELRO && echo 0)" "lockfs is linked with -z now and full RELRO"
setpriv --regid=4321 --clear-groups sleep 30 &
ctl=$!
track_pid "$ctl"
wait_for 5 bash -c '[ "$(stat -c %g /proc/$0/environ)" = 4321 ]' "$ctl"
ok $? "(control: a dumpable process of gid 4321 owns its /proc files as 4321)"
kill "$ctl" 2>/dev/null
is "$(stat -c %g "/proc/$pid/environ")" 0 \
	"the daemon is not dumpable (its /proc files belong to root, not to gid 4321)"

cat >"$WORK/memscan.py" <<'EOF'
# memscan.py PID MARKER: "D N": copies of MARKER in the process's memory
# outside pages marked dd (MADV_DONTDUMP, what a core would hold), and in
# them. Reads only pages that are present (pagemap), skips sanitizer shadow.
import re, struct, sys
pid, marker = sys.argv[1], sys.argv[2].encode()
PG = 4096
regions, cur = [], None
for line in open(f"/proc/{pid}/smaps"):
    m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$", line)
    if m:
        cur = {"lo": int(m.group(1), 16), "hi": int(m.group(2), 16),
               "perm": m.group(3), "name": m.group(4), "rss": 0, "dd": False}
        regions.append(cur)
    elif line.startswith("Rss:"):
        cur["rss"] = int(line.split()[1])
    elif line.startswith("VmFlags:"):
        cur["dd"] = " dd" in line
dumped = kept = 0
with open(f"/proc/{pid}/mem", "rb", 0) as mem, \
        open(f"/proc/{pid}/pagemap", "rb", 0) as pm:
    for r in regions:
        if "r" not in r["perm"] or not r["rss"] or r["name"].startswith("[v") \
                or r["hi"] - r["lo"] > (1 << 32):
            continue
        prev = b""
        for page in range(r["lo"], r["hi"], PG):
            pm.seek(page // PG * 8)
            if not struct.unpack("<Q", pm.read(8))[0] >> 63:
                prev = b""
                continue
            try:
                mem.seek(page)
                data = mem.read(PG)
            except OSError:
                prev = b""
                continue
            n = (prev + data).count(marker) - prev.count(marker)
            prev = data[-(len(marker) - 1):]
            if r["dd"]:
                kept += n
            else:
                dumped += n
print(dumped, kept)
EOF
# Credentials that stay (an hour): no refresh moves them during the scan.
echo 3600 >"$WORK/helper.life"
n=$(cat "$WORK/helper.n" 2>/dev/null || echo 0)
wait_for 30 helper_runs $((n + 1))
ok $? "(the refresher fetched hour-long credentials)"
# A few signed requests first (acquire, read, release).
for i in 1 2 3 4 5; do
	timeout 20 "$T" open "$MNT/k$i" O_CREAT,O_EXCL,O_RDONLY 0644 >/dev/null 2>&1
	timeout 20 "$T" read "$MNT/k$i" >/dev/null 2>&1
	timeout 20 "$T" unlink "$MNT/k$i" >/dev/null 2>&1
done
read -r d k < <(timeout 60 /usr/bin/python3 "$WORK/memscan.py" "$pid" "$SECRET")
is "${d:-?}" 0 "no copy of the secret key outside MADV_DONTDUMP pages (${k:-?} inside)"
ok "$([ "${k:-0}" -ge 1 ] && echo 0)" "(the scan finds the key where it is kept)"
read -r d k < <(timeout 60 /usr/bin/python3 "$WORK/memscan.py" "$pid" "$TOKEN")
is "${d:-?}" 0 "no copy of the session token outside MADV_DONTDUMP pages (${k:-?} inside)"

expect 0 unlink "$MNT/held"
mount_stop a
ok "$(grep -q "refreshing credentials failed" "$WORK/daemon-a.log" || echo 0)" \
	"no refresh failed in the daemon"

