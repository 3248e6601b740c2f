#!/usr/bin/env bash
# Runs the whole test suite: go vet, staticcheck, and go test -race, with the
# integration tests against DynamoDB Local and s3rver (local S3), which this
# script installs with npm (into ~/.cache/treeport, or $TREEPORT_CACHE),
# starts on free ports and stops again. It also installs, when missing,
# headless Chromium and fonts-dejavu-core with apt-get as root (sudo when not
# root; see scripts/chromium.sh) for the HTML report tests, and staticcheck
# with go install into $(go env GOPATH)/bin. The README's Quickstart lists them.
#
# The packages run in lanes ($TREEPORT_TEST_LANES, 2 by default, one a core
# of the 2-core CI machine): each lane has its own DynamoDB Local and s3rver
# (lane 1 the default copies, lane N the copies named laneN through
# TREEPORT_SERVICE_INSTANCE), and takes the next package from one queue, the
# slowest first, so that the lanes end together. A package's output is kept
# until it ends and printed in one piece; a line a minute names the packages
# still running. The packages that measure rates or times against a clock
# (the writer's capacity tests, the limiter's pacing, the fault proxy's
# bucket) run last, one at a time with nothing beside them, so that the other
# lane's load cannot make them flaky. The root package, the longest, is two
# entries of the queue, each half of its tests (a check stops the script if
# the halves do not cover them all). TREEPORT_TEST_LANES=1 runs every package
# one after the other, as before.
set -euo pipefail
cd "$(dirname "$0")/.."

lanes="${TREEPORT_TEST_LANES:-2}"
case "$lanes" in
'' | *[!0-9]* | 0)
  echo "test.sh: TREEPORT_TEST_LANES=$lanes is not a number of lanes (1, 2, ...)" >&2
  exit 2
  ;;
esac

stops=()
heartbeat=
work=
cleanup() {
  local s
  if [ -n "$heartbeat" ]; then kill "$heartbeat" 2>/dev/null || true; fi
  for s in ${stops[@]+"${stops[@]}"}; do $s || true; done
  if [ -n "$work" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
# A signal ends the script through its EXIT trap: the servers it started stop.
trap 'exit 130' INT
trap 'exit 143' TERM
work="$(mktemp -d "${TMPDIR:-/tmp}/treeport-test.XXXXXX")"

# start_service SCRIPT INSTANCE: starts the copy unless it runs already (a
# copy that was running already is used and left running) and prints its env.
start_service() {
  local script=$1 instance=$2
  if ! TREEPORT_SERVICE_INSTANCE=$instance "$script" status >/dev/null; then
    TREEPORT_SERVICE_INSTANCE=$instance "$script" start >&2
    stops+=("env TREEPORT_SERVICE_INSTANCE=$instance $script stop")
  fi
  TREEPORT_SERVICE_INSTANCE=$instance "$script" env
}

# Lane 1 uses TREEPORT_TEST_ENDPOINT and TREEPORT_TEST_S3_ENDPOINT when they
# are set; the other lanes then share them (every test makes its own tables
# and buckets).
for lane in $(seq 1 "$lanes"); do
  instance=""
  if [ "$lane" -gt 1 ]; then instance="lane$lane"; fi
  env_file="$work/lane_env_$lane"
  : >"$env_file"
  if [ -n "${TREEPORT_TEST_ENDPOINT:-}" ]; then
    echo "export TREEPORT_TEST_ENDPOINT=$TREEPORT_TEST_ENDPOINT" >>"$env_file"
  else
    start_service ./scripts/ddblocal.sh "$instance" >>"$env_file"
  fi
  if [ -n "${TREEPORT_TEST_S3_ENDPOINT:-}" ]; then
    echo "export TREEPORT_TEST_S3_ENDPOINT=$TREEPORT_TEST_S3_ENDPOINT" >>"$env_file"
  else
    start_service ./scripts/s3rver.sh "$instance" >>"$env_file"
  fi
  echo "lane $lane: $(sed 's/^export //' "$env_file" | tr '\n' ' ')"
done
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

echo "== go test -race ($lanes lanes)"
# Arguments go to go test: ./scripts/test.sh -short skips the slow tests
# (the README lists them); CI runs everything.
mod=$(go list -m)
# The slowest packages first (measured under -race on 2 cores, slowest
# first), so that no lane is left with a long one at the end.
slow="$mod $mod/importer/ooc $mod/layouts $mod/refresh $mod/importer $mod/records $mod/layoutbench $mod/exporter"
# Run alone at the end: their tests compare rates or durations with a clock.
alone="$mod/ddbwrite $mod/internal/ddb $mod/internal/testserver/faultproxy"
all=$(go list ./...)
total=$(echo "$all" | wc -l | tr -d ' ')
queue=()
for p in $slow; do
  if echo "$all" | grep -qx "$p"; then queue+=("$p"); fi
done
for p in $all; do
  case " $slow $alone " in *" $p "*) continue ;; esac
  queue+=("$p")
done
solo=()
for p in $alone; do
  if echo "$all" | grep -qx "$p"; then solo+=("$p"); fi
done
mkdir -p "$work/claim" "$work/running" "$work/done" "$work/halves"

# The root package (the CLI run end to end) and importer/ooc (the passes)
# are the longest: each runs as two halves, one a queue entry each, so that the lanes can take them side by
# side and end together. The halves alternate over the package's tests
# (go test -list, compiled under -race as the runs will be), each run with
# -run '^(A|B|...)$'; the union of the halves must be every test the list
# names, once, or the script stops before running any. An argument -run
# (./scripts/test.sh -run TestX) runs the packages whole, as it says.
split="$mod $mod/importer/ooc"
for a in "$@"; do
  case "$a" in -run | -run=* | -test.run | -test.run=*) split="" ;; esac
done
for p in $split; do
  for k in "${!queue[@]}"; do
    [ "${queue[$k]}" = "$p" ] || continue
    list="$work/halves/list"
    go test -race -list '.*' "$p" | grep -E '^(Test|Example|Fuzz)' | sort >"$list" || true
    if [ ! -s "$list" ]; then
      echo "test.sh: go test -list found no test in $p" >&2
      exit 1
    fi
    awk 'NR % 2 == 1' "$list" >"$work/halves/a"
    awk 'NR % 2 == 0' "$list" >"$work/halves/b"
    if [ "$(sort "$work/halves/a" "$work/halves/b")" != "$(cat "$list")" ]; then
      echo "test.sh: the halves of $p do not cover its $(wc -l <"$list" | tr -d ' ') tests" >&2
      exit 1
    fi
    for h in a b; do
      echo "^($(paste -sd '|' "$work/halves/$h"))\$" >"$work/halves/${p//\//%}.$h"
    done
    echo "$p: $(wc -l <"$list" | tr -d ' ') tests in two halves of $(wc -l <"$work/halves/a" | tr -d ' ') and $(wc -l <"$work/halves/b" | tr -d ' ')"
    queue=("${queue[@]:0:k}" "$p@a" "$p@b" "${queue[@]:k+1}")
    total=$((total + 1))
    break
  done
done

# say prints its input in one piece, under a lock when flock is there.
say() {
  if command -v flock >/dev/null 2>&1; then
    flock "$work/print.lock" cat
  else
    cat
  fi
}

# run_pkg LANE INDEX PKG ARGS...: one package's go test, its output kept until
# it ends. The root package (the CLI run end to end) takes many minutes under
# -race on a loaded 2-core machine: the timeout is for a hang, not a bound.
run_pkg() {
  local lane=$1 i=$2 pkg=$3 out start rc took run=()
  shift 3
  case "$pkg" in
  *@?)
    local base=${pkg%@?}
    run=(-run "$(cat "$work/halves/${base//\//%}.${pkg##*@}")")
    ;;
  esac
  out="$work/done/$i.out"
  start=$SECONDS
  echo "$start" >"$work/running/$i $lane ${pkg//\//%}"
  echo "-- [$i/$total] $pkg started (lane $lane)" | say
  rc=0
  (
    # shellcheck disable=SC1090
    source "$work/lane_env_$lane"
    go test -race -count=1 -timeout 35m ${run[@]+"${run[@]}"} "$@" "${pkg%@?}"
  ) >"$out" 2>&1 || rc=$?
  took=$((SECONDS - start))
  rm -f "$work/running/$i $lane ${pkg//\//%}"
  echo "$took $pkg" >>"$work/times"
  if [ $rc -ne 0 ]; then echo "$pkg" >>"$work/failed"; fi
  {
    echo "-- [$i/$total] $pkg took ${took}s (lane $lane)$([ $rc -ne 0 ] && echo ', FAILED')"
    sed 's/^/   /' "$out"
  } | say
}

# lane_worker LANE ARGS...: claims the next package of the queue (mkdir is
# atomic) until none is left.
lane_worker() {
  local lane=$1 i
  shift
  for i in "${!queue[@]}"; do
    if mkdir "$work/claim/$i" 2>/dev/null; then
      run_pkg "$lane" "$((i + 1))" "${queue[$i]}" "$@"
    fi
  done
}

# A heartbeat: every minute, the packages still running and for how long.
(
  while sleep 60; do
    for f in "$work"/running/*; do
      [ -e "$f" ] || continue
      set -- $(basename "$f")
      echo "   ... ${3//%//} still running ($((SECONDS - $(cat "$f")))s, lane $2)"
    done | say
  done
) &
heartbeat=$!

suite_start=$SECONDS
pids=()
for lane in $(seq 1 "$lanes"); do
  lane_worker "$lane" "$@" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
n=${#queue[@]}
for pkg in ${solo[@]+"${solo[@]}"}; do
  n=$((n + 1))
  run_pkg 1 "$n" "$pkg" "$@"
done
kill "$heartbeat" 2>/dev/null || true
wait "$heartbeat" 2>/dev/null || true
heartbeat=

echo "== slowest packages (seconds, build included)"
sort -rn "$work/times" | head -8 | awk '{ printf "  %5ds  %s\n", $1, $2 }'
echo "== go test took $((SECONDS - suite_start))s for $total packages in $lanes lanes"
if [ -s "$work/failed" ]; then
  echo "FAILED: $(tr '\n' ' ' <"$work/failed")" >&2
  exit 1
fi
