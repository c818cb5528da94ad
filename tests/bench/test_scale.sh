#!/bin/bash
# tests/bench/test_scale.sh: bench/scale, the per-packet path on 1 and N threads in memory, runs one
# round and its figures are sound: every row printed, rates positive, and no packet dropped. A drop
# inbound on one SA would mean the threads taking the stream's bursts out of order pushed numbers out
# of the replay window (the span bound failed), or the shared window lost an update; outbound, a
# packet the SPD did not match. Run with 2 threads and with 3 (more threads than this machine's CPUs:
# threads are descheduled in the middle of bursts, the case the span bound exists for). Correctness
# only: the scaling figures are the benchmark's to print, not this test's to judge.
set -u
top_builddir=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
SCALE="$top_builddir/bench/scale"
[ -x "$SCALE" ] || { echo "FAIL: $SCALE not built" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
for t in 2 3; do
	timeout 300 "$SCALE" -r 1 -t "$t" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	if [ "$rc" != 0 ]; then
		echo "FAIL: scale -t $t: exit status $rc: $(cat "$tmp/err")" >&2
		bad=1
		continue
	fi
	cat "$tmp/out"
	# rows: direction bytes SAs... 1-thread pps, N-thread pps, ratio, drops
	rows=$(grep -cE '^(outbound|inbound) ' "$tmp/out")
	[ "$rows" = 10 ] || { echo "FAIL: scale -t $t printed $rows rows, expected 10" >&2; bad=1; }
	awk -v t="$t" '/^(outbound|inbound) / {
		d = $NF; r = $(NF - 1); sub(/x$/, "", r); many = $(NF - 2); one = $(NF - 3)
		if (d != 0) { printf "FAIL: scale -t %s: %d drops in row: %s\n", t, d, $0; bad = 1 }
		if (!(one > 0 && many > 0 && r > 0)) { printf "FAIL: scale -t %s: no rate in row: %s\n", t, $0; bad = 1 }
	} END { exit bad }' "$tmp/out" >&2 || bad=1
	grep -q "^N = $t threads" "$tmp/out" || { echo "FAIL: scale -t $t: no legend for $t threads" >&2; bad=1; }
done
[ "$bad" = 0 ] && echo "PASS: bench/scale, 2 and 3 threads, no drops"
exit "$bad"
