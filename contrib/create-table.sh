#!/bin/sh
# create-table.sh: creates a lockfs table with the AWS CLI (what
# `lockfs --create-table` does): on-demand billing, the python_dynamodb_lock
# key schema, the index lockfs_parent that listings query (and the row
# lockfs:index that says it is ready), and TTL on expiry_time. Run it again
# and it says the table exists, and turns TTL on if it is off; a table
# without the index gets it from `lockfs --create-index`.
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
			AttributeName=lockfs_parent,AttributeType=S \
		--key-schema AttributeName=lock_key,KeyType=HASH \
			AttributeName=sort_key,KeyType=RANGE \
		--global-secondary-indexes '[{"IndexName":"lockfs_parent",
			"KeySchema":[{"AttributeName":"lockfs_parent","KeyType":"HASH"},
				{"AttributeName":"lock_key","KeyType":"RANGE"}],
			"Projection":{"ProjectionType":"ALL"}}]' \
		--billing-mode PAY_PER_REQUEST >/dev/null
	ddb wait table-exists --table-name "$TABLE"
	# The table is new: no row to tag, the index is ready once ACTIVE.
	i=0
	until [ "$(ddb describe-table --table-name "$TABLE" \
		--query 'Table.GlobalSecondaryIndexes[0].IndexStatus' \
		--output text)" = ACTIVE ]; do
		i=$((i + 1))
		[ "$i" -le 120 ] || { echo "create-table.sh: the index is not ACTIVE after 10 minutes" >&2; exit 1; }
		sleep 5
	done
	ddb put-item --table-name "$TABLE" --item \
		"{\"lock_key\":{\"S\":\"lockfs:index\"},\"sort_key\":{\"S\":\"lockfs:index\"},\"lockfs_created\":{\"N\":\"$(date +%s)000\"}}"
	echo "create-table.sh: table $TABLE created, with the index lockfs_parent"
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
