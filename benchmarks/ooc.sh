#!/usr/bin/env bash
# Out-of-core import against the import in memory, side by side (issue 27).
#
#   benchmarks/ooc.sh NODES MEMORY [ROUNDS] [LAYOUT]
#
# generates a random forest of NODES nodes (CSV, parents first as gen
# writes them), then runs `import --out DIR` on it in memory (--memory
# 64GiB) and out of core (--memory MEMORY), alternating, ROUNDS times
# (default 1), and prints each run's wall time, CPU time and peak RSS
# (TREEPORT_PEAKRSS), and the speed ratio. Work files go to $OOC_DIR
# (default /tmp/treeport-ooc-bench); the tmp dir of the passes is in it.
set -euo pipefail
nodes=${1:?NODES}
memory=${2:?MEMORY}
rounds=${3:-1}
layout=${4:-path}
dir=${OOC_DIR:-/tmp/treeport-ooc-bench}
mkdir -p "$dir/tmp"
bin="$dir/treeport"
go build -o "$bin" "$(dirname "$0")/.."
in="$dir/random-$nodes.csv"
[ -f "$in" ] || "$bin" gen --nodes "$nodes" --shape random --seed 1 --out "$in"
echo "input: $in, $(du -h "$in" | cut -f1); df: $(df -h "$dir" | tail -1 | awk '{print $4}') free"
one() { # name memory
	rm -rf "$dir/out-$1"
	local t0=$(date +%s.%N)
	TREEPORT_PEAKRSS="$dir/rss-$1" /usr/bin/time -f "%U %S" -o "$dir/cpu-$1" \
		"$bin" import --in "$in" --layout "$layout" --out "$dir/out-$1" --memory "$2" --tmp-dir "$dir/tmp" --no-progress >/dev/null 2>"$dir/err-$1"
	local t1=$(date +%s.%N)
	local wall=$(echo "$t1 - $t0" | bc)
	local cpu=$(awk '{print $1 + $2}' "$dir/cpu-$1")
	local rss=$(awk '{print $2}' "$dir/rss-$1")
	local items=$(grep -o 'wrote [0-9]* items' "$dir/err-$1" | head -1)
	echo "$1 --memory $2: wall ${wall}s cpu ${cpu}s peak RSS ${rss} kB ($items)" >&2
	echo "$wall $cpu $rss"
}
for r in $(seq 1 "$rounds"); do
	read -r wm cm rm < <(one mem 64GiB)
	read -r wo co ro < <(one ooc "$memory")
	echo "round $r: out of core / in memory: speed $(echo "scale=3; $wm / $wo" | bc) (wall), $(echo "scale=3; $cm / $co" | bc) (cpu); peak RSS $rm kB in memory, $ro kB out of core"
	# The same items in the same order: the data files byte for byte.
	for f in "$dir"/out-mem/data/*; do
		if ! cmp -s "$f" "$dir/out-ooc/data/$(basename "$f")"; then
			echo "round $r: $(basename "$f") differs" >&2
			exit 1
		fi
	done
done
