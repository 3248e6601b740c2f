#!/usr/bin/env bash
# s3rver.sh: install, start and stop s3rver, a local S3 server, for treeport's
# tests of `import --out s3://...` and `export --in s3://...`.
#
#   scripts/s3rver.sh install   fetch s3rver into the cache (once)
#   scripts/s3rver.sh start     install if needed, start it on a free loopback
#                               port with a fresh data directory, wait until it
#                               answers
#   scripts/s3rver.sh stop      stop the copy this script started (its data
#                               directory goes with it)
#   scripts/s3rver.sh status    say whether it runs (exit 0) or not (exit 1)
#   scripts/s3rver.sh env       print `export TREEPORT_TEST_S3_ENDPOINT=...`
#
# Typical use:
#   scripts/s3rver.sh start && eval "$(scripts/s3rver.sh env)" && go test ./importer/ ./exporter/
#
# s3rver comes from the npm package of that name. It is installed outside the
# repository, in ${TREEPORT_CACHE:-$HOME/.cache/treeport}/s3rver, together
# with the state file (pid, endpoint, data directory) and the server's log.
# It accepts one key pair, access key S3RVER with secret S3RVER
# (AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER), and wants
# path-style addressing (http://127.0.0.1:PORT/bucket/key), which treeport
# uses for any --s3-endpoint-url. Tests create their own buckets. Every command is
# idempotent: start reuses a running copy, stop on a stopped one is a no-op.
# The machinery is scripts/lib/service.sh, shared with scripts/ddblocal.sh.
# Needs: bash, node and npm, curl.
set -euo pipefail

CACHE_ROOT="${TREEPORT_CACHE:-$HOME/.cache/treeport}"
DIR="$CACHE_ROOT/s3rver"
PKG="s3rver"
PKG_VERSION="${TREEPORT_S3RVER_VERSION:-3.7.1}"
BIN="$DIR/node_modules/$PKG/bin/s3rver.js"
# TREEPORT_SERVICE_INSTANCE=NAME runs a second, independent copy beside the
# first (test.sh gives each of its lanes one): its own state file and log,
# the same installation.
INSTANCE="${TREEPORT_SERVICE_INSTANCE:-}"
STATE="$DIR/state${INSTANCE:+.$INSTANCE}"
LOG="$DIR/s3rver${INSTANCE:+.$INSTANCE}.log"
START_TIMEOUT="${TREEPORT_S3RVER_TIMEOUT:-30}"
POLL=0.2

SVC=s3rver
SVC_TITLE=s3rver
SVC_HOME="$DIR"
SVC_FILE="$BIN"
SVC_NPM_HINT="install Node.js and npm"
SVC_INSTALL_NOTE=""
SVC_ENV_VAR=TREEPORT_TEST_S3_ENDPOINT

# shellcheck source=lib/service.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/service.sh"

installed() { [[ -f "$BIN" ]]; }

# answers succeeds when the endpoint serves a real S3 ListBuckets call.
answers() {
	local body
	body="$(curl -s --max-time 2 "$1/" 2>/dev/null)" || return 1
	[[ "$body" == *ListAllMyBucketsResult* ]]
}

svc_need() { need node "install Node.js"; }

# Every start gets a fresh data directory; the state file remembers it.
svc_prepare() {
	DATA="$(mktemp -d "$DIR/data.XXXXXX")"
	SVC_EXTRA="data=$DATA"$'\n'
	SVC_NOTE=", data in $DATA"
}

# svc_read_extra sets DATA from the state file, or clears it.
svc_read_extra() {
	DATA=""
	if [[ -f "$STATE" ]]; then
		DATA="$(state_value data)"
	fi
}

# Only a data directory this script made, inside the cache, is removed.
svc_after_stop() {
	if [[ -n "$DATA" && "$DATA" == "$DIR"/data.* && -d "$DATA" ]]; then
		rm -rf "$DATA"
	fi
}

svc_launch() {
	exec nohup node "$BIN" --silent --address 127.0.0.1 --port "$1" \
		--directory "$DATA" >"$LOG" 2>&1 </dev/null
}

service_main "$@"
