#!/bin/sh
# pairs.sh ROUNDS BIN... — the fan-out target's paired runs.
#
# On a shared machine one `-count 5` run of Fanout against FanoutFloor
# moves by ±15% (docs/performance.md, "The machine"), so the figure to
# trust is the median of many pairs taken close together. Each round runs
# BenchmarkFanout (150 ops) of every test binary given, then
# BenchmarkFanoutFloor (300 ops) of the first, and takes each binary's
# ratio of cpu-ms/op (the process's CPU an op) in that round. It prints
# every round, then the medians.
#
# Build the binaries from the trees to compare, for example:
#
#	(cd bench && go test -c -o /tmp/new.test .)
#	git worktree add --detach /tmp/old HEAD~1
#	(cd /tmp/old/bench && go test -c -o /tmp/old.test .)
#	sh bench/pairs.sh 16 /tmp/new.test /tmp/old.test
#
# CPU=1 in the environment runs everything on one P (-test.cpu 1), where
# CPU time and wall time agree.
set -eu
if [ $# -lt 2 ]; then
	echo "usage: pairs.sh ROUNDS BIN..." >&2
	exit 2
fi
rounds=$1
shift
procs=${CPU:+-test.cpu $CPU}

# cpu BIN BENCH OPS prints the cpu-ms/op BIN's BENCH reports.
cpu() {
	# shellcheck disable=SC2086 # procs is empty or two words
	"$1" -test.run '^$' -test.bench "^Benchmark$2\$" -test.benchtime "$3x" $procs |
		awk '/^Benchmark/ { for (i = 1; i < NF; i++) if ($(i+1) == "cpu-ms/op") print $i }'
}

i=0
while [ "$i" -lt "$rounds" ]; do
	line=""
	for bin in "$@"; do
		line="$line $(cpu "$bin" Fanout 150)"
	done
	echo "$line $(cpu "$1" FanoutFloor 300)"
	i=$((i + 1))
done | awk -v n="$#" '
	function median(a, k,   j, m, t) {
		for (j = 2; j <= k; j++) {
			t = a[j]
			for (m = j - 1; m >= 1 && a[m] > t; m--) a[m+1] = a[m]
			a[m+1] = t
		}
		return k % 2 ? a[(k+1)/2] : (a[k/2] + a[k/2+1]) / 2
	}
	{
		out = ""
		for (b = 1; b <= n; b++) {
			r = $b / $(n+1)
			cpu[b, NR] = $b
			ratio[b, NR] = r
			out = out sprintf(" %.2f", r)
		}
		floor[NR] = $(n+1)
		print $0 "   ratios" out
	}
	END {
		for (b = 1; b <= n; b++) {
			for (k = 1; k <= NR; k++) { c[k] = cpu[b, k]; q[k] = ratio[b, k] }
			printf "binary %d: Fanout %.2f cpu-ms/op, ratio to FanoutFloor %.2f (medians of %d pairs)\n", b, median(c, NR), median(q, NR), NR
		}
		printf "FanoutFloor %.2f cpu-ms/op\n", median(floor, NR)
	}'
