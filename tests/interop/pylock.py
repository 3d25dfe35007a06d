#!/usr/bin/python3
"""pylock: a client that speaks python_dynamodb_lock's protocol, for the
interoperability test (tests/fs/interop.t). Each subcommand makes the same
DynamoDB calls, with the same item and conditions, as one step of
python_dynamodb_lock's DynamoDBLockClient:

  acquire KEY [--owner O] [--lease S]   PutItem of a new lock, condition
                                        NOT(attribute_exists(pk) AND
                                        attribute_exists(sk)); prints the RVN
  takeover KEY OLD_RVN [--owner O] [--lease S]
                                        PutItem over an expired lock, condition
                                        attribute_exists(pk) AND
                                        attribute_exists(sk) AND rvn = :old
  heartbeat KEY RVN                     UpdateItem SET rvn, expiry_time,
                                        condition rvn = :old; prints new RVN
  release KEY RVN                       DeleteItem, condition
                                        attribute_exists(pk) AND
                                        attribute_exists(sk) AND rvn = :rvn
  show KEY                              consistent GetItem; parses the item the
                                        way the library does (owner_name,
                                        lease_duration, record_version_number,
                                        expiry_time are required) and prints
                                        "name=value" lines, or "none"

The item: lock_key, sort_key "-", owner_name (S), lease_duration (N seconds),
record_version_number (S, a fresh uuid4), expiry_time (N, now + 1 h).

Exit status: 0 done, 3 ConditionalCheckFailed (printed on stdout), 4 a
required attribute is missing (show), 2 any other error (on stderr).

Connection: --endpoint (default $LOCKFS_DDB_ENDPOINT), --table (default
$PYLOCK_TABLE), region us-east-1, the credentials of the environment.
"""
import argparse
import os
import sys
import time
import uuid

try:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError
except ImportError as e:  # the test skips with this reason
    print("boto3 is missing: %s" % e, file=sys.stderr)
    sys.exit(5)

SORT_KEY = "-"
EXPIRY_PERIOD_S = 3600


def client(args):
    return boto3.client(
        "dynamodb",
        endpoint_url=args.endpoint,
        region_name="us-east-1",
        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "fake"),
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "fake"),
        config=Config(retries={"max_attempts": 2}, connect_timeout=5,
                      read_timeout=10),
    )


def key_of(k):
    return {"lock_key": {"S": k}, "sort_key": {"S": SORT_KEY}}


def lease_n(s):
    # python_dynamodb_lock stores Decimal.from_float(seconds)
    v = float(s)
    return str(int(v)) if v == int(v) else repr(v)


def new_item(args):
    rvn = str(uuid.uuid4())
    item = key_of(args.key)
    item.update({
        "owner_name": {"S": args.owner},
        "lease_duration": {"N": lease_n(args.lease)},
        "record_version_number": {"S": rvn},
        "expiry_time": {"N": str(int(time.time() + EXPIRY_PERIOD_S))},
    })
    return item, rvn


NAMES = {"#pk": "lock_key", "#sk": "sort_key"}


def cmd_acquire(db, args):
    item, rvn = new_item(args)
    db.put_item(
        TableName=args.table,
        Item=item,
        ConditionExpression="NOT(attribute_exists(#pk) AND attribute_exists(#sk))",
        ExpressionAttributeNames=NAMES,
    )
    print(rvn)


def cmd_takeover(db, args):
    item, rvn = new_item(args)
    db.put_item(
        TableName=args.table,
        Item=item,
        ConditionExpression="attribute_exists(#pk) AND attribute_exists(#sk) AND #rvn = :old_rvn",
        ExpressionAttributeNames=dict(NAMES, **{"#rvn": "record_version_number"}),
        ExpressionAttributeValues={":old_rvn": {"S": args.rvn}},
    )
    print(rvn)


def cmd_heartbeat(db, args):
    new_rvn = str(uuid.uuid4())
    db.update_item(
        TableName=args.table,
        Key=key_of(args.key),
        UpdateExpression="SET #rvn = :new_rvn, #et = :new_et",
        ConditionExpression="attribute_exists(#pk) AND attribute_exists(#sk) AND #rvn = :old_rvn",
        ExpressionAttributeNames=dict(NAMES, **{"#rvn": "record_version_number",
                                                "#et": "expiry_time"}),
        ExpressionAttributeValues={
            ":old_rvn": {"S": args.rvn},
            ":new_rvn": {"S": new_rvn},
            ":new_et": {"N": str(int(time.time() + EXPIRY_PERIOD_S))},
        },
    )
    print(new_rvn)


def cmd_release(db, args):
    db.delete_item(
        TableName=args.table,
        Key=key_of(args.key),
        ConditionExpression="attribute_exists(#pk) AND attribute_exists(#sk) AND #rvn = :rvn",
        ExpressionAttributeNames=dict(NAMES, **{"#rvn": "record_version_number"}),
        ExpressionAttributeValues={":rvn": {"S": args.rvn}},
    )
    print("released")


def cmd_show(db, args):
    r = db.get_item(TableName=args.table, Key=key_of(args.key),
                    ConsistentRead=True)
    item = r.get("Item")
    if item is None:
        print("none")
        return
    # what _get_lock_from_item requires, with the types it converts
    try:
        out = {
            "lock_key": item.pop("lock_key")["S"],
            "sort_key": item.pop("sort_key")["S"],
            "owner_name": item.pop("owner_name")["S"],
            "lease_duration": float(item.pop("lease_duration")["N"]),
            "record_version_number": item.pop("record_version_number")["S"],
            "expiry_time": int(item.pop("expiry_time")["N"]),
        }
    except (KeyError, ValueError) as e:
        print("unusable item: missing or bad %s" % e)
        sys.exit(4)
    for k in ("lock_key", "sort_key", "owner_name", "lease_duration",
              "record_version_number", "expiry_time"):
        print("%s=%s" % (k, out[k]))
    print("additional=%s" % ",".join(sorted(item)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--endpoint", default=os.environ.get("LOCKFS_DDB_ENDPOINT"))
    p.add_argument("--table", default=os.environ.get("PYLOCK_TABLE"))
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("acquire", "takeover"):
        s = sub.add_parser(name)
        s.add_argument("key")
        if name == "takeover":
            s.add_argument("rvn")
        s.add_argument("--owner", default="pylock-" + uuid.uuid4().hex[:8])
        s.add_argument("--lease", default="30")
    for name in ("heartbeat", "release"):
        s = sub.add_parser(name)
        s.add_argument("key")
        s.add_argument("rvn")
    s = sub.add_parser("show")
    s.add_argument("key")
    args = p.parse_args()
    if not args.endpoint or not args.table:
        p.error("need --endpoint and --table (or LOCKFS_DDB_ENDPOINT, PYLOCK_TABLE)")
    db = client(args)
    try:
        {"acquire": cmd_acquire, "takeover": cmd_takeover,
         "heartbeat": cmd_heartbeat, "release": cmd_release,
         "show": cmd_show}[args.cmd](db, args)
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        if code == "ConditionalCheckFailedException":
            print("ConditionalCheckFailed")
            sys.exit(3)
        print("pylock: %s" % e, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
