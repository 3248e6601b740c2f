#!/usr/bin/env bash
# Runs the whole test suite: go vet, staticcheck, and go test -race, one
# package at a time (each named as it starts), with the integration tests
# against a DynamoDB Local and an s3rver (local S3) that this script installs
# with npm (into ~/.cache/treeport, or $TREEPORT_CACHE), starts on free ports
# and stops again. It also installs, when missing, headless Chromium and
# fonts-dejavu-core with apt-get as root (sudo when not root; see
# scripts/chromium.sh) for the HTML report tests, and staticcheck with go
# install into $(go env GOPATH)/bin. The README's Quickstart lists them.
set -euo pipefail
cd "$(dirname "$0")/.."

stops=()
heartbeat=
cleanup() {
  local s
  if [ -n "$heartbeat" ]; then kill "$heartbeat" 2>/dev/null || true; fi
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
# Each package says when it starts and how long it took, so that a run is
# never silent for minutes; the slowest packages are listed at the end.
# Arguments go to go test: ./scripts/test.sh -short skips the slow tests
# (the README lists them); CI runs everything.
pkgs=$(go list ./...)
total=$(echo "$pkgs" | wc -l | tr -d ' ')
n=0
failed=()
times=()
suite_start=$SECONDS
for pkg in $pkgs; do
  n=$((n + 1))
  echo "-- [$n/$total] $pkg"
  start=$SECONDS
  # A heartbeat while a long package runs (go test prints at its end).
  (s=0; while sleep 60; do s=$((s + 60)); echo "   ... $pkg still running (${s}s)"; done) &
  heartbeat=$!
  # The root package (the CLI run end to end) takes about 17 minutes under
  # -race on a loaded 2-core machine: the timeout is for a hang, not a bound.
  if ! go test -race -count=1 -timeout 35m "$@" "$pkg"; then
    failed+=("$pkg")
  fi
  kill "$heartbeat" 2>/dev/null || true
  wait "$heartbeat" 2>/dev/null || true
  heartbeat=
  times+=("$((SECONDS - start)) $pkg")
done
echo "== slowest packages (seconds, build included)"
printf '%s\n' "${times[@]}" | sort -rn | head -8 | awk '{ printf "  %5ds  %s\n", $1, $2 }'
echo "== go test took $((SECONDS - suite_start))s for $total packages"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}" >&2
  exit 1
fi
