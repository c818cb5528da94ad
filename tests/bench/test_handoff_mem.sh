#!/bin/bash
# tests/bench/test_handoff_mem.sh: bench/handoff-mem, one inbound SA decrypted by one worker and by a
# worker handing parts of its bursts to a second through xipsecd's own hand-off (dp_handoff.c), runs
# one round and its figures are sound: both transforms printed, rates positive, the jobs taken back
# no more than the jobs posted, and every packet decrypted (the benchmark exits non-zero otherwise: a
# replay drop would mean the split broke the window). The helper's share is not judged: on a busy
# machine the owner may take every job back, which is the hand-off working as designed.
set -u
top_builddir=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
HM="$top_builddir/bench/handoff-mem"
[ -x "$HM" ] || { echo "FAIL: $HM not built" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
timeout 300 "$HM" -r 1 > "$tmp/out" 2> "$tmp/err"
rc=$?
if [ "$rc" != 0 ]; then
	echo "FAIL: handoff-mem -r 1: exit status $rc: $(cat "$tmp/err")" >&2
	exit 1
fi
cat "$tmp/out"
# rows: transform, 1-worker pps, hand-off pps, ratio, helper share %, taken back/jobs
awk '/^(aes-gcm-128|cbc-sha256) / {
	rows++
	split($NF, tb, "/")
	if (!($2 > 0 && $3 > 0 && $4 > 0)) { printf "FAIL: no rate in row: %s\n", $0; bad = 1 }
	if (tb[2] == "" || tb[1] + 0 > tb[2] + 0) { printf "FAIL: more jobs taken back than posted: %s\n", $0; bad = 1 }
} END {
	if (rows != 2) { printf "FAIL: %d rows, expected 2 (aes-gcm-128, cbc-sha256)\n", rows; bad = 1 }
	exit bad
}' "$tmp/out" >&2 || exit 1
echo "PASS: bench/handoff-mem, both transforms, every packet decrypted"
