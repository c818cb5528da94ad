#!/bin/bash
# tests/netns/test_ike_trap.sh: on-demand tunnels. gw1 has `start_action = trap`, gw2 `none`, each
# gateway xipsec-iked and xipsecd on one SADB (h1 - gw1 - bridge - gw2 - h2):
#  - charon's trap installs gw1's policies with no SA; the first ping from h1 meets the outbound one,
#    xipsecd drops it as "acquire" and raises an acquire, xipsec-iked hands it to charon, the IKE_SA
#    and CHILD_SA come up and the pings after pass (how many of the first ones were lost is printed);
#  - after `swanctl --terminate` the trap is still installed and the next packet brings the tunnel up
#    again;
#  - the trap survives a restart of xipsec-iked: stopped, the SADB holds no trap policy; started again,
#    charon reinstalls it from swanctl.conf and a ping brings the tunnel up.
# The acquires xipsecd raised are fewer than the packets it dropped for them (the rate limit).
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
xt_require ethtool ping
ike_require
. "$top_srcdir/tests/netns/test_dp_common.sh"
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"

dp_topo 1
ike_dirs gw1 "$DP_SADB_gw1"
ike_dirs gw2 "$DP_SADB_gw2"
ike_swanctl gw1 192.0.2.1 192.0.2.2 conn od 2 aes128gcm16-prfsha256-x25519 \
	child net 10.1.0.0/24 10.2.0.0/24 aes128gcm16 start_action=trap
ike_swanctl gw2 192.0.2.2 192.0.2.1 conn od 2 aes128gcm16-prfsha256-x25519 \
	child net 10.2.0.0/24 10.1.0.0/24 aes128gcm16 start_action=none
ike_start gw1
ike_start gw2
dp_start gw1
dp_start gw2

# gw1's outbound PROTECT policies for 10.1.0.0/24 -> 10.2.0.0/24 (charon's trap or its CHILD_SA's)
trap_pols() {
	"$CTL" --json --sadb "$DP_SADB_gw1" show policy > "$XT_DIR/pol.json" || return 1
	dp_json "$XT_DIR/pol.json" "sum(1 for p in j['policies'] if p['dir'] == 'out' and p['action'] == 'protect' and p['ike_id'] != 0)"
}
has_trap() { [ "$(trap_pols)" -ge 1 ]; }
drops1() { dp_status gw1 > "$XT_DIR/gw1.json"; dp_json "$XT_DIR/gw1.json" "sum(w['drops'].get('$1', 0) for w in j['worker'])"; }
acq1() { dp_status gw1 > "$XT_DIR/gw1.json"; dp_json "$XT_DIR/gw1.json" "j['acquires']['$1']"; }

# ROUND: 10 pings 0.2 s apart from h1 with no SA yet: the tunnel comes up on the first, the rest
# pass; prints how many were lost before it was up.
on_demand() {
	local round=$1 d0 out got
	xt_wait 10 has_trap || { ike_logs; xt_fail "$round: no trap policy in gw1's SADB"; }
	ike_nsa gw1 0 || xt_fail "$round: gw1 has SAs before any traffic"
	d0=$(drops1 acquire)
	out=$(xt_exec h1 ping -c 10 -i 0.2 -W 1 10.2.0.2 2>&1) || true
	got=$(echo "$out" | sed -n 's/.* \([0-9]*\) received.*/\1/p')
	[ -n "$got" ] && [ "$got" -ge 5 ] || { echo "$out" >&2; ike_logs; xt_fail "$round: ${got:-0} of 10 pings passed"; }
	xt_wait 5 ike_nsa gw1 2 || xt_fail "$round: no CHILD_SA on gw1"
	dp_ping h1 10.2.0.2
	[ "$(drops1 acquire)" -gt "$d0" ] || xt_fail "$round: no packet counted as an acquire drop"
	xt_log "$round: tunnel up on demand, $((10 - got)) of the first 10 pings lost (dropped as 'acquire' while IKE ran), $(( $(drops1 acquire) - d0 )) packets dropped"
}

on_demand "first packet"
n=$(ike_match gw1 gw2) || exit 1
[ "$n" -eq 2 ] || xt_fail "expected 2 matching SAs, got $n"

ike_ctl gw1 --terminate --ike od >/dev/null || xt_fail "terminate failed"
xt_wait 5 ike_nsa gw1 0 || xt_fail "SAs left on gw1 after terminate"
xt_wait 5 ike_nsa gw2 0 || xt_fail "SAs left on gw2 after terminate"
on_demand "after terminate"

# restart: a clean stop removes charon's policies, the new daemon's trap installs them again
xt_stop iked-gw1 TERM
mv "$XT_DIR/iked-gw1.log" "$XT_DIR/iked-gw1.log.1"
[ "$(trap_pols)" -eq 0 ] || xt_fail "gw1's trap policy outlived its xipsec-iked"
xt_wait 10 ike_nsa gw2 0 || ike_ctl gw2 --terminate --ike od >/dev/null
xt_wait 10 ike_nsa gw2 0 || xt_fail "gw2 kept the SAs of gw1's stopped daemon"
ike_start gw1
on_demand "after restarting xipsec-iked"

raised=$(acq1 raised); drops=$(drops1 acquire)
[ "$raised" -ge 3 ] || xt_fail "xipsecd raised only $raised acquires for three tunnels"
xt_log "xipsecd: $raised acquires raised for $drops packets dropped as 'acquire', $(acq1 limited) held back by the rate limit, $(acq1 lost) lost"
dp_finish
ike_check_logs
xt_log "PASS: start_action = trap brings the tunnel up on the first packet, after terminate and after an xipsec-iked restart"
exit 0
