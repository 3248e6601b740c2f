#!/usr/bin/env bash
# Out-of-core import against the import in memory, side by side (issue 27).
#
#   benchmarks/ooc.sh NODES MEMORY [ROUNDS] [LAYOUT] [SHAPE]
#
# generates a forest of NODES nodes of gen's SHAPE (default random; deep is
# one chain; CSV, parents first as gen writes them), then runs `import --out DIR` on it in memory (--memory
# 64GiB) and out of core (--memory MEMORY), alternating, ROUNDS times
# (default 1), and prints each run's wall time, CPU time and peak RSS
# (TREEPORT_PEAKRSS), and the speed ratio. Work files go to $OOC_DIR
# (default /tmp/treeport-ooc-bench); the tmp dir of the passes is in it.
#
# With OOC_BEFORE set to another source tree of treeport (an earlier
# commit: git archive COMMIT | tar -x -C DIR), each round also runs its
# out-of-core import, side by side (a resolve a level at a time against
# this tree's doubling, say); OOC_SKIP_MEM=1 leaves out the run in memory.
#
# With OOC_DRYRUN=1, each run is `import --dry-run --json` instead of
# --out, and the plans (printed JSON) are compared instead of the data
# files (LAYOUT all: every layout's plan, one after the other out of
# core). OOC_ARGS adds flags to every run (--shard 0/4, say).
set -euo pipefail
nodes=${1:?NODES}
memory=${2:?MEMORY}
rounds=${3:-1}
layout=${4:-path}
shape=${5:-random}
dir=${OOC_DIR:-/tmp/treeport-ooc-bench}
mkdir -p "$dir/tmp"
bin="$dir/treeport"
go build -o "$bin" "$(dirname "$0")/.."
if [ -n "${OOC_BEFORE:-}" ]; then
	(cd "$OOC_BEFORE" && go build -o "$dir/treeport-before" .)
fi
in="$dir/$shape-$nodes.csv"
[ -f "$in" ] || "$bin" gen --nodes "$nodes" --shape "$shape" --seed 1 --out "$in"
echo "input: $in, $(du -h "$in" | cut -f1); df: $(df -h "$dir" | tail -1 | awk '{print $4}') free"
one() { # name memory [binary]
	rm -rf "$dir/out-$1"
	local what=(--out "$dir/out-$1" --on-invalid=skip --rejects "$dir/rejects-$1")
	[ "${OOC_DRYRUN:-}" = 1 ] && what=(--dry-run --json)
	local t0=$(date +%s.%N)
	TREEPORT_PEAKRSS="$dir/rss-$1" /usr/bin/time -f "%U %S" -o "$dir/cpu-$1" \
		"${3:-$bin}" import --in "$in" --layout "$layout" "${what[@]}" ${OOC_ARGS:-} --memory "$2" --tmp-dir "$dir/tmp" --no-progress >"$dir/plan-$1" 2>"$dir/err-$1"
	local t1=$(date +%s.%N)
	local wall=$(echo "$t1 - $t0" | bc)
	local cpu=$(awk '{print $1 + $2}' "$dir/cpu-$1")
	local rss=$(awk '{print $2}' "$dir/rss-$1")
	local items=$(grep -o 'wrote [0-9,]* items' "$dir/err-$1" | head -1)
	echo "$1 --memory $2: wall ${wall}s cpu ${cpu}s peak RSS ${rss} kB ($items)" >&2
	echo "$wall $cpu $rss"
}
for r in $(seq 1 "$rounds"); do
	if [ -n "${OOC_BEFORE:-}" ]; then
		read -r wb cb rb < <(one before "$memory" "$dir/treeport-before")
		read -r wo co ro < <(one ooc "$memory")
		echo "round $r: out of core, this tree / OOC_BEFORE: speed $(echo "scale=3; $wb / $wo" | bc) (wall), $(echo "scale=3; $cb / $co" | bc) (cpu); peak RSS $rb kB before, $ro kB now"
		if [ "${OOC_DRYRUN:-}" = 1 ]; then
			cmp -s "$dir/plan-before" "$dir/plan-ooc" || { echo "round $r: the plan differs from OOC_BEFORE's" >&2; exit 1; }
		fi
		for f in $([ "${OOC_DRYRUN:-}" = 1 ] || echo "$dir"/out-before/data/*); do
			if ! cmp -s "$f" "$dir/out-ooc/data/$(basename "$f")"; then
				echo "round $r: $(basename "$f") differs from OOC_BEFORE's" >&2
				exit 1
			fi
		done
	fi
	[ "${OOC_SKIP_MEM:-}" = 1 ] && continue
	read -r wm cm rm < <(one mem 64GiB)
	[ -n "${OOC_BEFORE:-}" ] || read -r wo co ro < <(one ooc "$memory")
	echo "round $r: out of core / in memory: speed $(echo "scale=3; $wm / $wo" | bc) (wall), $(echo "scale=3; $cm / $co" | bc) (cpu); peak RSS $rm kB in memory, $ro kB out of core"
	# The same items in the same order: the data files byte for byte (a
	# dry run: the same plan).
	if [ "${OOC_DRYRUN:-}" = 1 ]; then
		cmp -s "$dir/plan-mem" "$dir/plan-ooc" || { echo "round $r: the plans differ" >&2; exit 1; }
		continue
	fi
	for f in "$dir"/out-mem/data/*; do
		if ! cmp -s "$f" "$dir/out-ooc/data/$(basename "$f")"; then
			echo "round $r: $(basename "$f") differs" >&2
			exit 1
		fi
	done
done
