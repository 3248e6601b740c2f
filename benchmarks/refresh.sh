#!/usr/bin/env bash
# Planning a refresh against exporting the same table (issue 6): a gen random
# tree of NODES nodes (default 1,000,000) is loaded once into DynamoDB Local
# (path layout); then `treeport export` of the whole table and `treeport plan`
# of a snapshot with 1% of the nodes changed run in turns, ROUNDS times, and
# the wall-clock and CPU times of each are printed. Both read the same table
# with the same Scan segments. Needs DynamoDB Local (scripts/ddblocal.sh).
#
#   ./scripts/ddblocal.sh start && eval "$(./scripts/ddblocal.sh env)"
#   NODES=1000000 ROUNDS=3 ./benchmarks/refresh.sh
#
# PLAN_OOC=SIZE (e.g. 64MiB) adds, in each round, the same plan out of core
# (`--memory SIZE --force-out-of-core`, its passes in a temporary
# --tmp-dir), and at the end checks that its --json summary equals the
# plan's in memory byte for byte.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${TREEPORT_TEST_ENDPOINT:?start DynamoDB Local: eval \"\$(./scripts/ddblocal.sh env)\"}"
NODES=${NODES:-1000000}
ROUNDS=${ROUNDS:-3}
LAYOUT=${LAYOUT:-path}
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-local} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-local} AWS_REGION=${AWS_REGION:-us-east-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/treeport" .
tp="$work/treeport"
ep=(--endpoint-url "$TREEPORT_TEST_ENDPOINT")
table="refresh-bench-$RANDOM$RANDOM"

"$tp" gen --nodes "$NODES" --shape random --seed 1 --out "$work/base.csv" >/dev/null
# 1% of the nodes changed: 0.5% get a new name, 0.25% move under the root
# (which is never below them, so no cycle), 0.25% are new leaves.
awk -F, -v OFS=, 'NR==1 {print; next}
  NR==2 {root=$1}
  (NR % 200) == 0 {$4 = $4 "-renamed"}
  (NR % 400) == 1 && NR > 2 {$2 = root}
  {print}
  (NR % 400) == 3 {print "new-" NR, $1, $3, "fresh", $5, $6}' "$work/base.csv" > "$work/snapshot.csv"

echo "loading $NODES nodes into $table ($LAYOUT layout)…"
"$tp" import --in "$work/base.csv" --types score:N,size:N --layout "$LAYOUT" --table "$table" --create-table --no-progress "${ep[@]}" | tail -1

timed() { # name, command…: prints wall and CPU seconds
  local name=$1; shift
  /usr/bin/time -f "$name wall %e s, cpu %U+%S s, max RSS %M KB" "$@" >/dev/null 2>"$work/time.$name" || { cat "$work/time.$name"; exit 1; }
  tail -1 "$work/time.$name"
}
for r in $(seq "$ROUNDS"); do
  echo "round $r"
  timed export "$tp" export --table "$table" --layout "$LAYOUT" --out "$work/export.jsonl" "${ep[@]}"
  timed plan "$tp" plan --in "$work/snapshot.csv" --types score:N,size:N --table "$table" --layout "$LAYOUT" "${ep[@]}"
  if [ -n "${PLAN_OOC:-}" ]; then
    mkdir -p "$work/tmp"
    timed plan-ooc "$tp" plan --in "$work/snapshot.csv" --types score:N,size:N --table "$table" --layout "$LAYOUT" "${ep[@]}" \
      --memory "$PLAN_OOC" --force-out-of-core --tmp-dir "$work/tmp"
  fi
done
if [ -n "${PLAN_OOC:-}" ]; then
  "$tp" plan --in "$work/snapshot.csv" --types score:N,size:N --table "$table" --layout "$LAYOUT" "${ep[@]}" --json > "$work/mem.json"
  "$tp" plan --in "$work/snapshot.csv" --types score:N,size:N --table "$table" --layout "$LAYOUT" "${ep[@]}" --json \
    --memory "$PLAN_OOC" --force-out-of-core --tmp-dir "$work/tmp" > "$work/ooc.json"
  cmp "$work/mem.json" "$work/ooc.json" && echo "the plans in memory and out of core are the same (--json summaries)"
fi
"$tp" plan --in "$work/snapshot.csv" --types score:N,size:N --table "$table" --layout "$LAYOUT" "${ep[@]}"
