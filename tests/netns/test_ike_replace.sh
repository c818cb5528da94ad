#!/bin/bash
# tests/netns/test_ike_replace.sh: a CHILD SA replaced by a new one with the same selectors, under
# traffic, loses no packet. Two gateways run xipsec-iked and xipsecd (h1 - gw1 - bridge - gw2 - h2);
# an IKEv2 CHILD SA carries a numbered UDP stream both ways, and while it flows:
#  1. gw1 rekeys the CHILD SA (CREATE_CHILD_SA);
#  2. gw1 negotiates an IKEv1 Main Mode + Quick Mode SA for the same selectors: a second IKE SA,
#     whose CHILD SA replaces the IKEv2 one as the newest for the selectors (charon refuses a
#     duplicate CHILD SA inside one IKE SA, not across two);
#  3. gw2, the responder so far, rekeys the IKEv2 CHILD SA;
#  4. gw1 deletes the IKEv2 IKE SA with its CHILD SAs, leaving the IKEv1 one.
# Asserted: every datagram of both streams arrived at every step, and the deleted SAs left the SADBs.
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
xt_require ethtool socat ping ss
ike_require
. "$top_srcdir/tests/netns/test_dp_common.sh"

dp_topo 1
ike_dirs gw1 "$DP_SADB_gw1"
ike_dirs gw2 "$DP_SADB_gw2"
conf() { # SIDE ME PEER MYNET PEERNET
	ike_swanctl "$1" "$2" "$3" \
		conn v2 2 aes128gcm16-prfsha256-x25519 child net "$4" "$5" aes128gcm16 \
		conn v1 1 aes128-sha256-modp2048 child net "$4" "$5" aes128-sha256
}
conf gw1 192.0.2.1 192.0.2.2 10.1.0.0/24 10.2.0.0/24
conf gw2 192.0.2.2 192.0.2.1 10.2.0.0/24 10.1.0.0/24
ike_start gw1
ike_start gw2
dp_start gw1
dp_start gw2
ike_ctl gw1 --initiate --ike v2 --child net >/dev/null || { ike_logs; xt_fail "IKEv2 initiate failed"; }
dp_ping h1 10.2.0.2
dp_ping h2 10.1.0.2

# step LABEL CMD...: both streams for 4 s, CMD run 1.5 s in; no datagram may be lost
step() {
	local label=$1 res1 res2; shift
	( sleep 1.5; "$@" > "$XT_DIR/step-$label.log" 2>&1 || echo FAILED >> "$XT_DIR/step-$label.log" ) &
	local pid=$!
	ike_udp_stream h2 h1 10.1.0.2 4 300 > "$XT_DIR/rev-$label" &
	local rpid=$!
	res1=$(ike_udp_stream h1 h2 10.2.0.2 4 300)
	wait "$rpid"; res2=$(cat "$XT_DIR/rev-$label")
	wait "$pid"
	! grep -q FAILED "$XT_DIR/step-$label.log" || { cat "$XT_DIR/step-$label.log" >&2; ike_logs; xt_fail "$label: $*"; }
	set -- $res1; [ "$2" -eq "$4" ] && [ "$6" = 0 ] ||
		{ ike_logs; dp_status gw1 >&2; dp_status gw2 >&2; xt_fail "$label: h1 -> h2 sent $2, received $4"; }
	set -- $res2; [ "$2" -eq "$4" ] && [ "$6" = 0 ] ||
		{ ike_logs; dp_status gw1 >&2; dp_status gw2 >&2; xt_fail "$label: h2 -> h1 sent $2, received $4"; }
	xt_log "$label: $res1 / $res2, no loss"
}
step "IKEv2 rekey from the initiator" ike_ctl gw1 --rekey --ike v2 --child net
step "IKEv1 Quick Mode for the same selectors" ike_ctl gw1 --initiate --ike v1 --child net
step "IKEv2 rekey from the responder" ike_ctl gw2 --rekey --ike v2 --child net
step "IKEv2 IKE SA deleted" ike_ctl gw1 --terminate --ike v2
dp_ping h1 10.2.0.2
# the deleted inbound SAs leave the SADB after inbound_delete_delay_ms (1 s): the IKEv1 pair remains
for gw in gw1 gw2; do
	xt_wait 10 ike_nsa "$gw" 2 || { ike_dump "$gw" >&2; xt_fail "$gw: deleted SAs stay in the SADB"; }
done
xt_log "PASS: CHILD SAs replaced under traffic (IKEv2 and IKEv1, from either side, old ones deleted) without loss"
ike_check_logs
