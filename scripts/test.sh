#!/usr/bin/env bash
# Runs the whole test suite: go vet, staticcheck, and go test -race, with the
# integration tests against a DynamoDB Local and an s3rver (local S3) that this
# script installs (into a cache outside the repo), starts on free ports and
# stops again.
set -euo pipefail
cd "$(dirname "$0")/.."

stops=()
cleanup() {
  local s
  for s in ${stops[@]+"${stops[@]}"}; do $s || true; done
}
trap cleanup EXIT
# A server that was running already is used and left running.
if [ -z "${TREEPORT_TEST_ENDPOINT:-}" ]; then
  if ! ./scripts/ddblocal.sh status >/dev/null; then
    ./scripts/ddblocal.sh start
    stops+=('./scripts/ddblocal.sh stop')
  fi
  eval "$(./scripts/ddblocal.sh env)"
fi
export TREEPORT_TEST_ENDPOINT
echo "DynamoDB Local at $TREEPORT_TEST_ENDPOINT"
if [ -z "${TREEPORT_TEST_S3_ENDPOINT:-}" ]; then
  if ! ./scripts/s3rver.sh status >/dev/null; then
    ./scripts/s3rver.sh start
    stops+=('./scripts/s3rver.sh stop')
  fi
  eval "$(./scripts/s3rver.sh env)"
fi
export TREEPORT_TEST_S3_ENDPOINT
echo "s3rver at $TREEPORT_TEST_S3_ENDPOINT"
# Headless Chromium renders bench's HTML report (installed with apt-get once).
if [ -z "${TREEPORT_TEST_CHROMIUM:-}" ]; then
  ./scripts/chromium.sh install >/dev/null
  eval "$(./scripts/chromium.sh env)"
fi
export TREEPORT_TEST_CHROMIUM
echo "chromium at $TREEPORT_TEST_CHROMIUM"

echo "== go vet"
go vet ./...

echo "== staticcheck"
GOBIN="$(go env GOPATH)/bin"
if [ ! -x "$GOBIN/staticcheck" ]; then
  go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
"$GOBIN/staticcheck" ./...

echo "== go test -race"
# One package at a time: the integration tests of several packages share one
# DynamoDB Local, and the writer's capacity test measures rates against it.
go test -race -count=1 -p 1 -timeout 20m "$@" ./...
