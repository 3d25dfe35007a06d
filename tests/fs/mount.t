#!/usr/bin/env bash
# mount.t: tenet 6, "fail loudly and early": a missing table, an unreachable
# endpoint, missing credentials, bad options and a missing mountpoint each
# give one line on stderr and exit status 1, quickly, and leave nothing
# mounted. --create-table is idempotent, says whether it created the table,
# and makes an on-demand table with TTL on expiry_time. Without -f the daemon
# goes to the background after mounting, and unmounting ends it. What is on
# the mountpoint already: a regular file and a live lockfs mount are refused
# with one line (no mount on a file, no second daemon stacked), a dead
# lockfs mount (its daemon killed: ENOTCONN) is detached and mounted afresh,
# and its directory stays immutable.
. "$(dirname "$0")/lib.sh"

plan 67

new_table || { echo "Bail out! cannot create a table"; exit 1; }
MP=$WORK/mp
mkdir -p "$MP"
EO="endpoint=$ENDPOINT,region=us-east-1"

# fails CMD...: runs lockfs (20 s at most); checks status 1, one stderr line
# matching $want, nothing mounted.
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

fails "missing table" "does not exist" \
	"$L" -f -o "$EO,table=no-such-table-$$" "$MP"
fails "unreachable endpoint" "127\\.0\\.0\\.1:1" \
	"$L" -f -o "endpoint=http://127.0.0.1:1,region=us-east-1,table=$TABLE" "$MP"
fails "no credentials" "credentials" \
	env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME=/nonexistent \
	"$L" -f -o "$EO,table=$TABLE" "$MP"
fails "lease=0" "lease=0" "$L" -f -o "$EO,table=$TABLE,lease=0" "$MP"
fails "safe_period >= lease" "safe_period" \
	"$L" -f -o "$EO,table=$TABLE,lease=3,safe_period=5" "$MP"
fails "hold=bogus" "hold=bogus" "$L" -f -o "$EO,table=$TABLE,hold=bogus" "$MP"
fails "missing mountpoint" "$WORK/nowhere" "$L" -f -o "$EO,table=$TABLE" "$WORK/nowhere"

# ---- --create-table --------------------------------------------------------
out=$(timeout 60 "$L" --create-table -o "$EO,table=$TABLE" 2>&1)
is "$?" 0 "--create-table on an existing table: exit 0"
is "$out" "lockfs: table $TABLE already exists at $ENDPOINT; ready" \
	"... and says it already existed"
out=$(timeout 60 "$L" --create-table -o "$EO,table=$TABLE-new" 2>&1)
is "$out" "lockfs: table $TABLE-new created at $ENDPOINT; ready" \
	"--create-table of a missing table says it created it"
# contrib/create-table.sh (the AWS CLI) says the same, and runs twice.
CT=$(dirname "$0")/../../contrib/create-table.sh
if command -v aws >/dev/null && AWS_ENDPOINT_URL=$ENDPOINT timeout 60 \
	aws dynamodb list-tables --region us-east-1 >/dev/null 2>&1; then
	out=$(AWS_ENDPOINT_URL=$ENDPOINT timeout 120 sh "$CT" "$TABLE-cli" us-east-1 2>&1)
	is "$?/$out" "0/create-table.sh: table $TABLE-cli created, with the index lockfs_parent"$'\n'"create-table.sh: TTL turned on, on expiry_time" \
		"create-table.sh of a missing table: created with the index, TTL on"
	out=$(AWS_ENDPOINT_URL=$ENDPOINT timeout 120 sh "$CT" "$TABLE-cli" us-east-1 2>&1)
	is "$?/$out" "0/create-table.sh: table $TABLE-cli exists"$'\n'"create-table.sh: TTL is on expiry_time" \
		"create-table.sh again: exit 0, the table exists, TTL on"
	out=$(timeout 60 "$L" --create-table -o "$EO,table=$TABLE-cli" 2>&1)
	is "$out" "lockfs: table $TABLE-cli already exists at $ENDPOINT; ready" \
		"... and lockfs takes that table"
else
	for d in "create-table.sh of a missing table" "create-table.sh again" \
		"... and lockfs takes that table"; do
		skip "$d" "no AWS CLI that reaches DynamoDB Local (AWS_ENDPOINT_URL)"
	done
fi
if /usr/bin/python3 -c 'import boto3' 2>/dev/null; then
	desc=$(/usr/bin/python3 - "$ENDPOINT" "$TABLE" <<'EOF'
import sys, boto3
db = boto3.client("dynamodb", endpoint_url=sys.argv[1], region_name="us-east-1")
t = db.describe_table(TableName=sys.argv[2])["Table"]
ttl = db.describe_time_to_live(TableName=sys.argv[2])["TimeToLiveDescription"]
keys = " ".join("%s:%s" % (k["AttributeName"], k["KeyType"]) for k in t["KeySchema"])
gsi = " ".join("%s=%s/%s/%s" % (g["IndexName"],
    ",".join("%s:%s" % (k["AttributeName"], k["KeyType"]) for k in g["KeySchema"]),
    g["Projection"]["ProjectionType"], g["IndexStatus"])
    for g in t.get("GlobalSecondaryIndexes", []))
print(keys, t.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED"),
      ttl.get("TimeToLiveStatus"), ttl.get("AttributeName"), gsi)
EOF
)
	is "$desc" "lock_key:HASH sort_key:RANGE PAY_PER_REQUEST ENABLED expiry_time lockfs_parent=lockfs_parent:HASH,lock_key:RANGE/ALL/ACTIVE" \
		"the table: lock_key/sort_key, on-demand, TTL on expiry_time, the index lockfs_parent"
else
	skip "the table's schema, billing and TTL" "no boto3"
fi

# ---- in the background (no -f) ---------------------------------------------
track_mount "$MP"
timeout 30 "$L" -o "$EO,table=$TABLE,owner=bg-$$" "$MP" >"$WORK/bg.out" 2>&1
is "$?" 0 "without -f lockfs returns 0 once mounted"
if _mounted "$MP"; then pass "the mount is there when lockfs returns"; else flunk "the mount is there when lockfs returns"; fi
bgpid=$(pgrep -f -x "$L -o $EO,table=$TABLE,owner=bg-$$ $MP" | head -n 1)
ok "$([ -n "$bgpid" ] && echo 0)" "a daemon serves it (pid ${bgpid:-none})"
[ -n "$bgpid" ] && track_pid "$bgpid"
expect 0 open "$MP/bg" O_CREAT,O_EXCL,O_RDONLY 0644
is "$(field "$("$T" read "$MP/bg")" owner)" "bg-$$" "the background daemon holds locks"
timeout 10 fusermount3 -u "$MP"
ok $? "fusermount3 -u"
wait_for 10 bash -c '! kill -0 "$0" 2>/dev/null' "${bgpid:-0}"
ok $? "the background daemon exits after the unmount"
mount_start check
expect 0 open "$(mnt check)/bg" O_CREAT,O_EXCL,O_RDONLY 0644
mount_stop check

# ---- what is on the mountpoint already ---------------------------------------
# lockfs_on DIR: how many fuse.lockfs mounts are on DIR.
lockfs_on() {
	awk -v m="$1" '$5 == m { for (i = 7; i <= NF; i++) if ($i == "-") {
		if ($(i + 1) == "fuse.lockfs") n++; break } } END { print n + 0 }' \
		/proc/self/mountinfo
}
# refused DESC REGEX ARGS...: lockfs ARGS exits 1 with one line matching
# REGEX (10 s at most: it fails before any request).
refused() {
	local desc=$1 want=$2 err rc
	shift 2
	err=$(timeout 10 "$L" "$@" 2>&1 >/dev/null)
	rc=$?
	is "$rc/$(wc -l <<<"$err")" "1/1" "$desc: exit 1 with one line"
	like "$err" "$want" "$desc: says why"
}

# A regular file: FUSE would mount on it (stat then gives EIO).
F=$WORK/afile
: >"$F"
track_mount "$F"
refused "a regular file as mountpoint" "^lockfs: mountpoint $F: not a directory" \
	-o "$EO,table=$TABLE" "$F"
refused "a regular file, -o mountpoint_writable" "^lockfs: mountpoint $F: not a directory" \
	-o "$EO,table=$TABLE,mountpoint_writable" "$F"
is "$(lockfs_on "$F")" 0 "... nothing is mounted on the file"

# A live lockfs mount: no second daemon stacked on it.
S=$WORK/stack
mkdir -p "$S"
track_mount "$S"
timeout 30 "$L" -o "$EO,table=$TABLE,owner=stack-$$" "$S" 2>"$WORK/stack.err"
is "$?" 0 "a first mount on S"
spid=$(pgrep -f -x "$L -o $EO,table=$TABLE,owner=stack-$$ $S" | head -n 1)
[ -n "$spid" ] && track_pid "$spid"
live="^lockfs: mountpoint $S: lockfs is already mounted there \\(lockfs:$TABLE\\); unmount it first \\(fusermount3 -u $S\\)"
refused "lockfs on a live lockfs mount" "$live" -o "$EO,table=$TABLE" "$S"
refused "the same by another path (S/../stack/)" "$live" -o "$EO,table=$TABLE" "$S/../stack/"
refused "the same with -o mountpoint_writable" "$live" \
	-o "$EO,table=$TABLE,mountpoint_writable" "$S"
is "$(lockfs_on "$S")" 1 "... one lockfs mount on S: nothing stacked"

# A prefix that is a held lock: a name is a lock or a directory, never
# both. The mount came up, and its locks were keys below the lock.
expect 0 open "$S/pl" O_CREAT,O_EXCL,O_RDONLY 0644
PX=$WORK/pfx
mkdir -p "$PX"
track_mount "$PX"
refused "prefix=pl, pl a held lock" "^lockfs: prefix pl/: pl is a lock \\(owner stack-$$\\), not a directory" \
	-o "$EO,table=$TABLE,prefix=pl" "$PX"
refused "prefix=pl/sub" "^lockfs: prefix pl/sub/: pl is a lock" \
	-o "$EO,table=$TABLE,prefix=pl/sub" "$PX"
is "$(lockfs_on "$PX")" 0 "... nothing is mounted"
expect 0 unlink "$S/pl"

# A dead lockfs mount: the daemon killed, the mount left behind. A stat
# just before fills the kernel's attribute cache, which may answer stat(2)
# on a dead mount: lockfs must not take it for a live one.
stat "$S" >/dev/null
kill -9 "${spid:-0}"
wait_for 10 bash -c '! kill -0 "$0" 2>/dev/null' "${spid:-0}"
expect ENOTCONN statfs "$S"
t0=$(now_ms)
err=$(timeout 30 "$L" -o "$EO,table=$TABLE,owner=again-$$" "$S" 2>&1 >/dev/null)
is "$?" 0 "lockfs on the dead lockfs mount: exit 0 ($(($(now_ms) - t0)) ms)"
like "$err" "^lockfs: $S: detached a dead lockfs mount \\(its daemon was gone" \
	"... says it detached the dead mount"
apid=$(pgrep -f -x "$L -o $EO,table=$TABLE,owner=again-$$ $S" | head -n 1)
[ -n "$apid" ] && track_pid "$apid"
is "$(lockfs_on "$S")" 1 "... one lockfs mount on S: the dead one is gone"
expect 0 open "$S/again" O_CREAT,O_EXCL,O_RDONLY 0644
is "$(field "$("$T" read "$S/again")" owner)" "again-$$" "... served by the new daemon"
timeout 10 fusermount3 -u "$S"
ok $? "fusermount3 -u S"
wait_for 10 bash -c '! kill -0 "$0" 2>/dev/null' "${apid:-0}"
ok $? "... and the new daemon exits"
expect EPERM open "$S/bare" O_CREAT,O_EXCL,O_RDONLY 0644
is "$(lockfs_on "$S")" 0 "... nothing is left mounted on S"
