#!/usr/bin/env bash
# oddkeys.t: rows whose key has no file name here. A python_dynamodb_lock
# client may use any string as a key: "/abs", "a//b", "d/./e", ".lockfs",
# a name over 255 bytes. One such row made `ls` of its directory fail with
# EIO (the listing gave the kernel an empty name, and FUSE refuses the
# whole readdir), or listed "." or ".lockfs" twice. Now a listing leaves
# such rows out, says so once in the log, and the rows stay in the table;
# every other row is listed. Mount s lists by a Scan (list=scan), mount a
# by the index until it meets a python row (list=auto), then by a Scan.
. "$(dirname "$0")/lib.sh"

need_boto3

plan 15

new_table || { echo "Bail out! cannot create a table"; exit 1; }
long=$(printf 'n%.0s' $(seq 1 300))
# python_dynamodb_lock's rows (sort key "-"), held for a minute.
"$PY" - "$ENDPOINT" "$TABLE" "$long" <<'EOF' 2>>"$WORK/py.err"
import sys, time, boto3
c = boto3.client("dynamodb", endpoint_url=sys.argv[1], region_name="us-east-1",
                 aws_access_key_id="fake", aws_secret_access_key="fake")
keys = ["/abs", "plain", "a//b", "a/ok", ".lockfs", "d/./e", "d/../f", "d/fine",
        "g/" + sys.argv[3] + "/x", "g/y"]
for k in keys:
    c.put_item(TableName=sys.argv[2], Item={
        "lock_key": {"S": k}, "sort_key": {"S": "-"},
        "owner_name": {"S": "py-owner"}, "lease_duration": {"N": "60"},
        "record_version_number": {"S": "rvn-" + str(len(k))},
        "expiry_time": {"N": str(int(time.time()) + 3600)}})
# A row of another client without a valid lease_duration.
c.put_item(TableName=sys.argv[2], Item={
    "lock_key": {"S": "nolease"}, "sort_key": {"S": "-"},
    "owner_name": {"S": "odd-owner"}, "lease_duration": {"S": "thirty"},
    "record_version_number": {"S": "rvn-x"},
    "expiry_time": {"N": str(int(time.time()) + 3600)}})
EOF
ok $? "(eleven rows written, six of them with odd keys, one with no valid lease)"
mount_start s "owner=ok-s,list=scan" && mount_start a "owner=ok-a" ||
	{ echo "Bail out! cannot mount"; exit 1; }
S=$(mnt s) A=$(mnt a)

out=$(ls "$S" 2>&1)
is "$?/$(tr '\n' ' ' <<<"$out")" "0/a d g nolease plain " "ls of the root lists the rows it can name (it failed with EIO on '/abs')"
is "$(ls "$S/a" 2>&1 | tr '\n' ' ')" "ok " "ls a lists a/ok, not 'a//b' (EIO before)"
is "$(ls -a "$S/d" 2>&1 | tr '\n' ' ')" ". .. fine " "ls -a d: '.' and '..' once each, and d/fine"
is "$(ls -a "$S" | grep -cx '\.lockfs')" 1 "the root lists .lockfs once (the control directory, not the row)"
is "$(ls "$S/g" 2>&1 | tr '\n' ' ')" "y " "ls g leaves out a directory name over 255 bytes"
is "$(field "$(cat "$S/plain")" owner)" py-owner "the python lock plain reads as held by py-owner"
text=$(cat "$S/nolease")
is "$(field "$text" owner)/$(grep -c '^lease:' <<<"$text")" "odd-owner/0" \
	"a row with no valid lease_duration shows no lease: line (left out, not the mount's invented)"
is "$("$T" getxattr "$S/nolease" user.lockfs.lease)" ENODATA "... and no user.lockfs.lease"
grep -q 'listings leave out rows whose key has no file name here' "$WORK/daemon-s.log"
ok $? "s's log says rows are left out"
is "$(grep -c 'listings leave out rows' "$WORK/daemon-s.log")" 1 "... once"
cat "$A/plain" >/dev/null # a meets a python row: it lists by a Scan from now on
out=$(ls "$A" 2>&1)
is "$?/$(tr '\n' ' ' <<<"$out")" "0/a d g nolease plain " "the auto mount's ls of the root, by a Scan, too"
python3 -c 'import os, sys; print(" ".join(sorted(os.listdir(sys.argv[1]))))' "$S/d" >"$WORK/listdir" 2>&1
is "$(cat "$WORK/listdir")" "fine" "python's os.listdir of d"
n=$("$PY" - "$ENDPOINT" "$TABLE" <<'EOF' 2>>"$WORK/py.err"
import sys, boto3
c = boto3.client("dynamodb", endpoint_url=sys.argv[1], region_name="us-east-1",
                 aws_access_key_id="fake", aws_secret_access_key="fake")
print(sum(p["Count"] for p in c.get_paginator("scan").paginate(
    TableName=sys.argv[2], FilterExpression="sort_key = :d",
    ExpressionAttributeValues={":d": {"S": "-"}})))
EOF
)
is "$n" 11 "every row is still in the table"
expect EEXIST open "$S/plain" O_CREAT,O_EXCL,O_RDONLY 0644
