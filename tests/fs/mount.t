#!/usr/bin/env bash
# mount.t: tenet 6, "fail loudly and early": a missing table, an unreachable
# endpoint, missing credentials, bad options and a missing mountpoint each
# give one line on stderr and exit status 1, quickly, and leave nothing
# mounted. --create-table is idempotent and makes an on-demand table with
# TTL on expiry_time. Without -f the daemon goes to the background after
# mounting, and unmounting ends it.
. "$(dirname "$0")/lib.sh"

plan 32

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
if /usr/bin/python3 -c 'import boto3' 2>/dev/null; then
	desc=$(/usr/bin/python3 - "$ENDPOINT" "$TABLE" <<'EOF'
import sys, boto3
db = boto3.client("dynamodb", endpoint_url=sys.argv[1], region_name="us-east-1")
t = db.describe_table(TableName=sys.argv[2])["Table"]
ttl = db.describe_time_to_live(TableName=sys.argv[2])["TimeToLiveDescription"]
keys = " ".join("%s:%s" % (k["AttributeName"], k["KeyType"]) for k in t["KeySchema"])
print(keys, t.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED"),
      ttl.get("TimeToLiveStatus"), ttl.get("AttributeName"))
EOF
)
	is "$desc" "lock_key:HASH sort_key:RANGE PAY_PER_REQUEST ENABLED expiry_time" \
		"the table: lock_key/sort_key, on-demand, TTL on expiry_time"
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
