#!/bin/bash
# tests/bench/test_mem_bench.sh: the in-memory benchmarks of the dataplane run one round each and their
# figures are sound (no root).
#  - bench/scale, the per-packet path on 1 and N threads: every row printed, rates positive, and no
#    packet dropped. A drop inbound on one SA would mean the threads taking the stream's bursts out of
#    order pushed numbers out of the replay window (the span bound failed), or the shared window lost
#    an update; outbound, a packet the SPD did not match. Run with 2 threads and with 3 (more threads
#    than this machine's CPUs: threads are descheduled in the middle of bursts, the case the span
#    bound exists for).
#  - bench/handoff-mem, one inbound SA decrypted by one worker and by a worker handing parts of its
#    bursts to a second through xipsecd's own hand-off (dp_handoff.c): both transforms printed, rates
#    positive, the jobs taken back no more than the jobs posted, and every packet decrypted (the
#    benchmark exits non-zero otherwise). The helper's share is not judged: on a busy machine the
#    owner may take every job back, which is the hand-off working as designed.
# Correctness only: the figures are the benchmarks' to print, not this test's to judge.
set -u
top_builddir=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
SCALE="$top_builddir/bench/scale"
HM="$top_builddir/bench/handoff-mem"
for b in "$SCALE" "$HM"; do
	[ -x "$b" ] || { echo "FAIL: $b not built" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
# bench NAME ARGS...: run it with a timeout into $tmp/out and show that; nonzero (reported) if it failed
bench() {
	local name=$1 rc
	shift
	timeout 300 "$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	if [ "$rc" != 0 ]; then
		echo "FAIL: $name: exit status $rc: $(cat "$tmp/err")" >&2
		return 1
	fi
	cat "$tmp/out"
}
for t in 2 3; do
	bench "scale -t $t" "$SCALE" -r 1 -t "$t" || { bad=1; continue; }
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
if ! bench "handoff-mem -r 1" "$HM" -r 1; then
	bad=1
else
	# rows: transform, 1-worker pps, hand-off pps, ratio, helper share %, taken back/jobs
	awk '/^(aes-gcm-128|cbc-sha256) / {
		rows++
		split($NF, tb, "/")
		if (!($2 > 0 && $3 > 0 && $4 > 0)) { printf "FAIL: handoff-mem: no rate in row: %s\n", $0; bad = 1 }
		if (tb[2] == "" || tb[1] + 0 > tb[2] + 0) { printf "FAIL: handoff-mem: more jobs taken back than posted: %s\n", $0; bad = 1 }
	} END {
		if (rows != 2) { printf "FAIL: handoff-mem: %d rows, expected 2 (aes-gcm-128, cbc-sha256)\n", rows; bad = 1 }
		exit bad
	}' "$tmp/out" >&2 || bad=1
fi
[ "$bad" = 0 ] && echo "PASS: bench/scale (2 and 3 threads, no drops) and bench/handoff-mem (every packet decrypted)"
exit "$bad"
