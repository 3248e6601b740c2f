#!/usr/bin/env bash
# Runs the whole test suite: go vet, staticcheck, and go test -race, with the
# integration tests against a DynamoDB Local that this script installs (into a
# cache outside the repo), starts on a free port and stops again.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${TREEPORT_TEST_ENDPOINT:-}" ]; then
  ./scripts/ddblocal.sh start
  trap './scripts/ddblocal.sh stop' EXIT
  eval "$(./scripts/ddblocal.sh env)"
fi
export TREEPORT_TEST_ENDPOINT
echo "DynamoDB Local at $TREEPORT_TEST_ENDPOINT"

echo "== go vet"
go vet ./...

echo "== staticcheck"
GOBIN="$(go env GOPATH)/bin"
if [ ! -x "$GOBIN/staticcheck" ]; then
  go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
"$GOBIN/staticcheck" ./...

echo "== go test -race"
go test -race -count=1 -timeout 20m "$@" ./...
