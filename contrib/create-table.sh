#!/bin/sh
# create-table.sh: creates a lockfs table with the AWS CLI (what
# `lockfs --create-table` does): on-demand billing, the python_dynamodb_lock
# key schema, and TTL on expiry_time.
#   contrib/create-table.sh [TABLE] [REGION]
set -eu
TABLE=${1:-lockfs}
REGION=${2:-${AWS_REGION:-us-east-1}}
aws dynamodb create-table --region "$REGION" --table-name "$TABLE" \
	--attribute-definitions AttributeName=lock_key,AttributeType=S \
		AttributeName=sort_key,AttributeType=S \
	--key-schema AttributeName=lock_key,KeyType=HASH \
		AttributeName=sort_key,KeyType=RANGE \
	--billing-mode PAY_PER_REQUEST
aws dynamodb wait table-exists --region "$REGION" --table-name "$TABLE"
aws dynamodb update-time-to-live --region "$REGION" --table-name "$TABLE" \
	--time-to-live-specification Enabled=true,AttributeName=expiry_time
