#!/usr/bin/env bash
# ddblocal.sh: install, start and stop DynamoDB Local for treeport's tests.
#
#   scripts/ddblocal.sh install   fetch DynamoDB Local into the cache (once)
#   scripts/ddblocal.sh start     install if needed, start it in memory on a free
#                                 loopback port, wait until it answers
#   scripts/ddblocal.sh stop      stop the copy this script started
#   scripts/ddblocal.sh status    say whether it runs (exit 0) or not (exit 1)
#   scripts/ddblocal.sh env       print `export TREEPORT_TEST_ENDPOINT=...`
#
# Typical use:
#   scripts/ddblocal.sh start && eval "$(scripts/ddblocal.sh env)" && go test ./...
#
# DynamoDB Local comes from the npm package amplify-dynamodb-simulator, which
# ships DynamoDBLocal.jar and its native libraries. It is installed outside the
# repository, in ${TREEPORT_CACHE:-$HOME/.cache/treeport}/ddblocal, together
# with the state file (pid and endpoint) and the server's log. Every command is
# idempotent: start reuses a running copy, stop on a stopped one is a no-op.
# The machinery is scripts/lib/service.sh, shared with scripts/s3rver.sh.
# Needs: bash, java (11 or later), npm (for install), curl.
set -euo pipefail

CACHE_ROOT="${TREEPORT_CACHE:-$HOME/.cache/treeport}"
DIR="$CACHE_ROOT/ddblocal"
PKG="amplify-dynamodb-simulator"
PKG_VERSION="${TREEPORT_DDBLOCAL_VERSION:-^2.9.30}"
EMULATOR="$DIR/node_modules/$PKG/emulator"
# TREEPORT_SERVICE_INSTANCE=NAME runs a second, independent copy beside the
# first (test.sh gives each of its lanes one): its own state file and log,
# the same installation.
INSTANCE="${TREEPORT_SERVICE_INSTANCE:-}"
STATE="$DIR/state${INSTANCE:+.$INSTANCE}"
LOG="$DIR/ddblocal${INSTANCE:+.$INSTANCE}.log"
START_TIMEOUT="${TREEPORT_DDBLOCAL_TIMEOUT:-60}"
POLL=0.3

SVC=ddblocal
SVC_TITLE="DynamoDB Local"
SVC_HOME="$EMULATOR"
SVC_FILE="$EMULATOR/DynamoDBLocal.jar"
SVC_NPM_HINT="install Node.js and npm, or put DynamoDBLocal.jar in $EMULATOR yourself"
SVC_INSTALL_NOTE=" (about 30 s)"
SVC_ENV_VAR=TREEPORT_TEST_ENDPOINT

# shellcheck source=lib/service.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/service.sh"

installed() { [[ -f "$EMULATOR/DynamoDBLocal.jar" && -d "$EMULATOR/DynamoDBLocal_lib" ]]; }

# answers succeeds when the endpoint serves a real DynamoDB ListTables call.
# DynamoDB Local accepts any signature but wants the Authorization header to
# name an access key and a region.
answers() {
	local body
	body="$(curl -s --max-time 2 -X POST "$1" \
		-H 'Content-Type: application/x-amz-json-1.0' \
		-H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
		-H 'Authorization: AWS4-HMAC-SHA256 Credential=treeport/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=00' \
		-d '{}' 2>/dev/null)" || return 1
	[[ "$body" == *TableNames* ]]
}

svc_need() { need java "install a Java runtime (11 or later)"; }
svc_prepare() { :; }
svc_read_extra() { :; }
svc_after_stop() { :; }

# -sharedDb: one database whatever the credentials and region, so the AWS
# CLI and the tests see the same tables. -disableTelemetry: no outbound calls.
svc_launch() {
	cd "$EMULATOR"
	exec nohup java -Djava.library.path=DynamoDBLocal_lib -jar DynamoDBLocal.jar \
		-inMemory -sharedDb -disableTelemetry -port "$1" >"$LOG" 2>&1 </dev/null
}

service_main "$@"
