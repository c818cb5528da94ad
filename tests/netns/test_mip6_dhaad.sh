#!/usr/bin/env bash
# tests/netns/test_mip6_dhaad.sh: Dynamic Home Agent Address Discovery (RFC 6275 section 10.5), the
# home agents list learnt from radvd (Debian's, not ours) and the DHAAD Reply read by scapy.
#
# The network of tests/netns/test_mip6_common.sh. Two home agents on the home link 2001:db8:1::/64,
# each announced by its own radvd with the H bit, a Home Agent Information option and its address
# in an R-bit prefix (RFC 6275 sections 7.1, 7.2, 7.4): ha itself (2001:db8:1::1, preference 10) and
# the other one, played by cn's radvd (2001:db8:1::10, preference 20, lifetime 3 s). Checked:
#  1. a DHAAD Request from the mobile node's care-of address to the Home-Agents anycast address
#     2001:db8:1::fdff:ffff:ffff:fffe (RFC 2526) gets one Reply from ha's address with the request's
#     identifier and a correct checksum, listing both home agents, the more preferred first; the
#     request went to xipsecd through the kernel, not forwarded onto the home link by the dataplane;
#  2. the other home agent falls silent (its radvd killed, no final RA): once its lifetime has run
#     out the Reply lists ha alone.
set -u
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/test_dp_common.sh"
. "$top_srcdir/tests/netns/test_mip6_common.sh"
xt_require ip ethtool radvd
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
"$PYTHON" -c 'import scapy.layers.inet6' 2>/dev/null || xt_skip "needs python3-scapy"

ANYCAST=2001:db8:1::fdff:ffff:ffff:fffe OTHER=2001:db8:1::10
mip6_topo
xt_exec mn ip -6 route add default via 2001:db8:a::1 dev eth1
ctl() { timeout 30 "$CTL" --sadb "$SADB" "$@"; }
echo "home-agent $HA prefix 2001:db8:1::/64 lifetime 600" > "$XT_DIR/ha.conf"
ctl load "$XT_DIR/ha.conf" || xt_fail "ipsecctl load of the home agent configuration"
mip6_start_ha -v

# radvd_conf IFACE ADDRESS PREFERENCE LIFETIME: a home agent's advertisements, about one a second
radvd_conf() {
	cat <<EOC
interface $1 {
	AdvSendAdvert on;
	MinRtrAdvInterval 0.5;
	MaxRtrAdvInterval 1;
	AdvHomeAgentFlag on;
	AdvHomeAgentInfo on;
	HomeAgentPreference $3;
	HomeAgentLifetime $4;
	prefix $2/64 { AdvRouterAddr on; };
};
EOC
}
radvd_conf in0 $HA 10 60 > "$XT_DIR/radvd-ha.conf"
radvd_conf eth0 $OTHER 20 3 > "$XT_DIR/radvd-cn.conf"
# radvd wants to see forwarding on the interface it advertises
xt_exec cn sysctl -qw net.ipv6.conf.eth0.forwarding=1
for n in ha cn; do
	xt_bg $n radvd-$n radvd -n -C "$XT_DIR/radvd-$n.conf" -p "$XT_DIR/radvd-$n.pid" -m stderr
done

counter() { ctl --ctl "$XT_DIR/ha.sock" --json show bindings | "$PYTHON" -c "import json,sys; print(json.load(sys.stdin)['counters']['$1'])"; }
heard() { [ "$(counter ra_heard)" -ge "$1" ]; }
# the first advertisements of both (radvd sends three quickly at start)
xt_wait 10 heard 2 || { tail -n 30 "$XT_DIR/xipsecd-ha.log" >&2
	ctl --ctl "$XT_DIR/ha.sock" show bindings >&2; xt_fail "xipsecd heard no Router Advertisement"; }
sleep 1.5

# dhaad DST: the replies (JSON) to one request from the care-of address to DST
dhaad() { xt_exec mn "$PYTHON" "$top_srcdir/tests/netns/test_mip6_dhaad_req.py" eth1 $COA1 "$1"; }
check() { # JSON EXPR: a python expression over the replies (bound to r)
	[ "$("$PYTHON" -c "import json,sys; r=json.loads(sys.argv[1]); print($2)" "$1")" = True ] ||
		{ tail -20 "$XT_DIR/xipsecd-ha.log" >&2; xt_fail "DHAAD: not $2: $1"; }
}

# ---- 1. both home agents, the more preferred first
dp_capture_start in ha in0
r=$(dhaad $ANYCAST) || xt_fail "the DHAAD requester failed"
dp_capture_stop in
check "$r" "len(r) == 1 and r[0]['src'] == '$HA' and r[0]['id_ok'] and r[0]['cksum_ok'] and r[0]['code'] == 0"
check "$r" "r[0]['addresses'] == ['$OTHER', '$HA']"

# ---- 2. the other home agent's lifetime runs out
xt_stop radvd-cn KILL
sleep 3.5
r=$(dhaad $ANYCAST) || xt_fail "the DHAAD requester failed"
check "$r" "len(r) == 1 and r[0]['addresses'] == ['$HA']"

[ "$(timeout 30 tshark -r "$XT_DIR/in.pcap" -Y "icmpv6.type == 144" 2>/dev/null | wc -l)" = 0 ] ||
	xt_fail "the DHAAD Request was forwarded onto the home link"
[ "$(counter dhaad_replies)" = 2 ] || xt_fail "dhaad_replies is $(counter dhaad_replies), not 2"
xt_log "PASS"
