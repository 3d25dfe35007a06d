#!/bin/sh
# create-table.sh: creates a lockfs table with the AWS CLI (what
# `lockfs --create-table` does): on-demand billing, the python_dynamodb_lock
# key schema, and TTL on expiry_time. Run it again and it says the table
# exists, and turns TTL on if it is off.
#   contrib/create-table.sh [TABLE] [REGION]
# The AWS CLI's own settings apply (AWS_PROFILE, AWS_ENDPOINT_URL, ...).
set -eu
TABLE=${1:-lockfs}
REGION=${2:-${AWS_REGION:-us-east-1}}

ddb() { aws dynamodb --region "$REGION" "$@"; }

if ddb describe-table --table-name "$TABLE" >/dev/null 2>&1; then
	echo "create-table.sh: table $TABLE exists"
else
	ddb create-table --table-name "$TABLE" \
		--attribute-definitions AttributeName=lock_key,AttributeType=S \
			AttributeName=sort_key,AttributeType=S \
		--key-schema AttributeName=lock_key,KeyType=HASH \
			AttributeName=sort_key,KeyType=RANGE \
		--billing-mode PAY_PER_REQUEST >/dev/null
	ddb wait table-exists --table-name "$TABLE"
	echo "create-table.sh: table $TABLE created"
fi
ttl=$(ddb describe-time-to-live --table-name "$TABLE" \
	--query 'TimeToLiveDescription.[TimeToLiveStatus,AttributeName]' \
	--output text)
case $ttl in
ENABLED*expiry_time | ENABLING*expiry_time)
	echo "create-table.sh: TTL is on expiry_time" ;;
*)
	ddb update-time-to-live --table-name "$TABLE" \
		--time-to-live-specification Enabled=true,AttributeName=expiry_time \
		>/dev/null
	echo "create-table.sh: TTL turned on, on expiry_time" ;;
esac
