#!/usr/bin/env bash
# The main job on the bundled fixtures, from a fresh clone: installs and starts
# DynamoDB Local (cached outside the repo), builds treeport, loads every
# fixture in every layout, queries a few nodes and says what it did.
set -euo pipefail
cd "$(dirname "$0")/.."

# A DynamoDB Local that was running already is used and left running, as
# scripts/test.sh does: stopping it would pull it from under its other users.
started_here=
if ! ./scripts/ddblocal.sh status >/dev/null; then
  ./scripts/ddblocal.sh start
  started_here=1
fi
if [ -n "${TREEPORT_KEEP_DDBLOCAL:-}" ]; then started_here=; fi
# The reports, the export and the import files go to a temporary directory
# that is removed on exit (also on failure or Ctrl-C), unless
# TREEPORT_KEEP_WORK=1 keeps it to look at.
work=
cleanup() {
  if [ -n "$work" ] && [ -z "${TREEPORT_KEEP_WORK:-}" ]; then rm -rf "$work"; fi
  if [ -n "$started_here" ]; then ./scripts/ddblocal.sh stop; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
eval "$(./scripts/ddblocal.sh env)"

# DynamoDB Local accepts any credentials; the SDK wants some.
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-local}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-local}" AWS_REGION="${AWS_REGION:-us-east-1}"
export TREEPORT_ENDPOINT_URL="$TREEPORT_TEST_ENDPOINT"

mkdir -p bin
go build -o bin/treeport .
tp=bin/treeport
work=$(mktemp -d "${TMPDIR:-/tmp}/treeport-demo.XXXXXX")

echo "== dry run: what each layout would write and cost for the car parts"
$tp import --in fixtures/cars.json --layout all --dry-run

for fixture in cars folders org; do
  for layout in path sharded-path closure prefix adjacency; do
    table="demo-$fixture-$layout"
    echo "== import fixtures/$fixture.parquet into $table ($layout)"
    $tp import --in "fixtures/$fixture.parquet" --layout "$layout" --table "$table" --create-table \
      --no-progress --report "$work/$table.json"
  done
done

for layout in path sharded-path closure prefix adjacency; do
  echo "== $layout: children of CM1, descendants of CM2 down to depth 2, ancestors of CM8 (requests and RCU on stderr)"
  $tp query children --table "demo-cars-$layout" --layout "$layout" --id CM1 --stats
  $tp query descendants --table "demo-cars-$layout" --layout "$layout" --id CM2 --max-depth 2 --stats
  $tp query ancestors --table "demo-cars-$layout" --layout "$layout" --id CM8 --stats
done

echo "== export the closure table back to CSV and verify it against the input"
$tp export --table demo-cars-closure --layout closure --out "$work/cars.csv"
head -5 "$work/cars.csv"
$tp verify --in fixtures/cars.parquet --table demo-cars-closure --layout closure

echo "== import files for DynamoDB's import from S3"
$tp import --in fixtures/org.csv --types "$(cat fixtures/org.types)" --layout closure --out "$work/org-closure"
ls -l "$work/org-closure" "$work/org-closure/data"

echo "== a table treeport did not design: the single-table model (keys PK/SK = NODE#<id>, a type field)"
$tp import --in fixtures/cars.parquet --model fixtures/models/single-table.json --table demo-cars-single --create-table --no-progress
$tp query children --table demo-cars-single --model fixtures/models/single-table.json --id CM1 --stats
$tp verify --in fixtures/cars.parquet --table demo-cars-single --model fixtures/models/single-table.json

echo "== a live migration: adjacency to path, following the source's stream until it is idle for 3 s, then verified"
$tp migrate --from-table demo-cars-adjacency --from-layout adjacency --to-table demo-cars-live --to-layout path \
  --create-table --follow --enable-stream --follow-idle 3s --checkpoint "$work/live.ckpt" --no-progress

echo
if [ -n "${TREEPORT_KEEP_WORK:-}" ]; then
  echo "done: 3 fixtures x 5 layouts loaded into DynamoDB Local at $TREEPORT_TEST_ENDPOINT; reports kept in $work"
else
  echo "done: 3 fixtures x 5 layouts loaded into DynamoDB Local at $TREEPORT_TEST_ENDPOINT (reports removed; TREEPORT_KEEP_WORK=1 keeps them)"
fi
