#!/bin/bash
# tests/bench/test_sizing_plan.sh: golden test of `bench/sizing plan`, the sizing calculator, on a stored
# run directory (tests/bench/sizing-plan/run/: results.json and CSVs of a quick bench/sizing run,
# trimmed, with the loss-free rates of a quick lossfree run at 1 and 2 workers, the home agent's
# in-memory Binding Update rates of another quick run, and a full scale run's forwarding tables added:
# the floods over 1 to 100,000 tunnels (scale_fwd: the rate carried over N tunnels), 1 and 2 workers over
# 1,000 and 10,000 (scale_workers, the many-SA efficiency) and the lines of CPU against the packet rate
# (scale_cost: what grows with the tunnels)). Each case tests/bench/sizing-plan/cases/NAME.args holds the calculator's arguments after
# the run directory (run/, or the directory NAME.dir names: no-dataplane/ is a run without the
# dataplane's tables); NAME.out is the expected output (stdout, then stderr) and NAME.rc the expected exit
# status. The error cases check that bad input is refused with a message naming the problem. No root.
# REGEN=1 rewrites the .out and .rc files from the current output (review the diff before committing).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=${PYTHON:-/usr/bin/python3}
d="$top_srcdir/tests/bench/sizing-plan"
[ -f "$d/run/results.json" ] || { echo "FAIL: no stored run in $d/run" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$d" || exit 1
n=0 bad=0
for a in cases/*.args; do
	name=$(basename "$a" .args)
	run=run
	[ -f "cases/$name.dir" ] && run=$(cat "cases/$name.dir")
	# word splitting of the one-line argument file is intended
	# shellcheck disable=SC2046
	"$PY" "$top_srcdir/bench/sizing" plan "$run" $(cat "$a") > "$tmp/out" 2> "$tmp/err"
	rc=$?
	cat "$tmp/out" "$tmp/err" > "$tmp/all"
	if [ "${REGEN:-}" = 1 ]; then
		cp "$tmp/all" "cases/$name.out"; echo "$rc" > "cases/$name.rc"
	fi
	n=$((n + 1))
	if [ "$rc" != "$(cat "cases/$name.rc" 2>/dev/null)" ]; then
		echo "FAIL: $name: exit status $rc, expected $(cat "cases/$name.rc" 2>/dev/null)" >&2
		cat "$tmp/err" >&2
		bad=$((bad + 1))
	elif ! diff -u "cases/$name.out" "$tmp/all" >&2; then
		echo "FAIL: $name: output differs from cases/$name.out" >&2
		bad=$((bad + 1))
	fi
done
[ "$n" -ge 5 ] || { echo "FAIL: only $n cases in $d/cases" >&2; exit 1; }
[ "$bad" -eq 0 ] || { echo "FAIL: $bad of $n cases" >&2; exit 1; }
echo "PASS: $n cases of bench/sizing plan"
