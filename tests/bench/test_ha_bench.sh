#!/usr/bin/env bash
# tests/bench/test_ha_bench.sh: bench/ha-bench at its smallest size (100 tunnels, one repetition,
# short flows) and its table complete: every figure once, numbers throughout; the failovers
# renegotiated nothing (no IKE_SA_INIT, no CREATE_CHILD_SA on the outside link, counted by tshark),
# while the same count over the restarted node's catch-up finds the rekey of every CHILD_SA that the
# ha plugin's resync asks for (so the count does see IKE messages); the flow was interrupted by each
# failover for less than 3 s, and the steady state shows sync messages and the active dataplane's
# CPU. The bench removes its own test bed (a TERM from the timeout reaches it).
set -u
[ "$(id -u)" -eq 0 ] || { echo "test_ha_bench: needs root" >&2; exit 77; }
top_srcdir=${top_srcdir:?}
top_builddir=${top_builddir:?}
N=100
out=$(mktemp /tmp/test-ha-bench.XXXXXX)
trap 'rm -f "$out"' EXIT
HA_BENCH_SIZES=$N HA_BENCH_REPS=1 HA_BENCH_FLOW_SECS=4 HA_BENCH_STEADY_SECS=2 \
	timeout 170 "$top_srcdir/bench/ha-bench" "$top_builddir" > "$out"
rc=$?
cat "$out"
[ "$rc" = 77 ] && exit 77
[ "$rc" = 0 ] || { echo "FAIL: bench/ha-bench exited with $rc" >&2; exit 1; }
grep -q "^tunnels $N (" "$out" || { echo "FAIL: no table for $N tunnels" >&2; exit 1; }
awk -v n=$N '
function want(f) { wanted[f] = 1 }
BEGIN {
	want("sync_ha_plugin_msgs/s"); want("sync_dataplane_msgs/s"); want("sync_msgs/s_per_1000_tunnels")
	want("cpu_ms/s_active_xipsecd"); want("cpu_ms/s_active_iked"); want("cpu_ms/s_standby_xipsecd")
	want("cpu_ms/s_standby_iked"); want("cpu_ms/s_all_per_1000_tunnels")
	for (e = split("kill9 links_down", ev); e > 0; e--) {
		want(ev[e] "_gap_ms"); want(ev[e] "_lost"); want(ev[e] "_ike_sa_init"); want(ev[e] "_create_child_sa")
	}
	want("rejoin_restart_eligible_ms"); want("rejoin_restart_sadb_equal_ms")
	want("rejoin_restart_ike_sa_init"); want("rejoin_restart_create_child_sa")
	want("rejoin_links_up_eligible_ms"); want("rejoin_links_up_sadb_equal_ms")
}
function bad(m) { printf "FAIL: %s\n", m; failed = 1 }
# figure median min-max n
NF == 4 && $1 in wanted {
	if ($1 in seen) bad("figure " $1 " twice")
	seen[$1] = 1; v[$1] = $2
	if ($2 !~ /^[0-9]+\.[0-9]$/ || $3 !~ /^[0-9.]+-[0-9.]+$/ || $4 != 1) bad("row not a median, a range and n = 1: " $0)
}
END {
	for (f in wanted) if (!(f in seen)) bad("figure " f " missing")
	if (failed) exit 1
	for (e = split("kill9 links_down", ev); e > 0; e--) {
		if (v[ev[e] "_ike_sa_init"] != 0 || v[ev[e] "_create_child_sa"] != 0)
			bad(ev[e] ": IKE_SA_INIT " v[ev[e] "_ike_sa_init"] ", CREATE_CHILD_SA " v[ev[e] "_create_child_sa"])
		if (v[ev[e] "_gap_ms"] <= 0 || v[ev[e] "_gap_ms"] >= 3000) bad(ev[e] ": gap " v[ev[e] "_gap_ms"] " ms")
	}
	if (v["rejoin_restart_create_child_sa"] < 2 * n)
		bad("the restart counted " v["rejoin_restart_create_child_sa"] " CREATE_CHILD_SA messages, want at least " 2 * n)
	if (v["sync_dataplane_msgs/s"] <= 0) bad("no dataplane sync messages in steady state")
	if (v["cpu_ms/s_active_xipsecd"] <= 0) bad("no CPU for the active xipsecd")
	exit failed
}' "$out" >&2 || exit 1
echo "PASS: bench/ha-bench at $N tunnels: every figure, nothing renegotiated by the failovers"
