#!/usr/bin/env bash
# tests/bench/test_mip6_ike_bench.sh: bench/mip6-bench's part (d) in its smallest case: one IKEv2-keyed
# mobile node (bench/mip6-ike-bench: xipsec-iked on the home agent and in mn, the node's Binding
# Update in the IKE-keyed signalling SA answered by xipsecd's home agent) for one point, and one move
# with the K bit, through bench/mip6-bench's summary. Checked: the table's row for 1 MN with one BA
# and none lost, times and a rate above zero, and the move's line (BA and IKE SA follow in ms). No
# speed is asserted. bench/mip6-ike-bench runs on tests/netns/lib.sh, whose trap removes its
# namespaces, processes and files on every exit; a timeout bounds the whole run.
set -u
[ "$(id -u)" -eq 0 ] || { echo "test_mip6_ike_bench: needs root" >&2; exit 77; }
top_srcdir=${top_srcdir:?}
top_builddir=${top_builddir:?}
out=$(mktemp /tmp/test-mip6-ike-bench.XXXXXX)
trap 'rm -f "$out"' EXIT
MIP6_PARTS=ike MIP6_IKE_NODES=1 MIP6_IKE_REPS=1 MIP6_IKE_MOVES=1 MIP6_IKE_TIMEOUT=120 \
	timeout --kill-after=10 180 "$top_srcdir/bench/mip6-bench" "$top_builddir" > "$out" 2>&1
rc=$?
[ "$rc" = 77 ] && { cat "$out"; exit 77; }
[ "$rc" = 0 ] || { echo "FAIL: bench/mip6-bench (ike) exited $rc"; cat "$out"; exit 1; }
cat "$out"
# MNs, IKE s, BU/BA s, registrations/s, IKE CPU s (each "median [min-max]"), BAs (lost)
awk '$1 == "1" && NF == 11 { row = 1
	if (!($2 > 0 && $4 >= 0 && $6 > 0 && $8 >= 0 && $10 == 1 && $11 == "(0)")) bad = 1 }
     /^move with K, 1 MN: BA [0-9]+ \[[0-9]+-[0-9]+\] ms, IKE SA at the new address [0-9]+ / { move = 1 }
     END { exit !(row && !bad && move) }' "$out" ||
	{ echo "FAIL: no row for 1 mobile node with its BA, or no move line"; exit 1; }
echo "PASS: bench/mip6-bench part (d), 1 IKEv2-keyed mobile node and a move with K"
