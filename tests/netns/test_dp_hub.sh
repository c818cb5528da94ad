#!/usr/bin/env bash
# tests/netns/test_dp_hub.sh: hub and spokes. Spoke A (gw1) and spoke B (gw2) each have one tunnel to
# the hub (gw3), with broad selectors (the hub's tunnels cover 10.0.0.0/8 on the far side). h1 (behind
# A) reaches h2 (behind B) through the hub: the hub decrypts A's packet, and because its route to h2
# leaves through the outside interface again, the packet takes the hub's outbound SPD lookup and is
# protected again for B (RFC 4301 §5.1), never sent on in clear. A capture on the hub's outside link
# shows only ESP. Without a hub-to-B SA, or without a hub-to-B policy, the packets are dropped with
# their reasons (acquire, no_policy), still never in clear.
#
#   h1 -- gw1 (A) --\                        192.0.2.1 / .2 / .3 on one bridge (sw)
#                    sw -- gw3 (hub) -- h3
#   h2 -- gw2 (B) --/
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool ping tcpdump tshark
. "$top_srcdir/tests/netns/test_dp_common.sh"

for ns in h1 gw1 h2 gw2 h3 gw3 sw; do
	xt_ns_add "$ns"
	xt_exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
done
xt_exec sw ip link add br0 type bridge
xt_exec sw sysctl -qw net.bridge.bridge-nf-call-iptables=0 2>/dev/null || true
for n in 1 2 3; do
	xt_veth "h$n" eth0 "gw$n" "in$n"
	xt_veth "gw$n" "out$n" sw "s$n"
	xt_exec sw ip link set "s$n" master br0
	xt_exec "h$n" ip addr add "10.$n.0.2/24" dev eth0
	xt_exec "h$n" ip route add default via "10.$n.0.1"
	xt_exec "h$n" ethtool -K eth0 tx off >/dev/null
	xt_exec "gw$n" ip addr add "10.$n.0.1/24" dev "in$n"
	xt_exec "gw$n" ip addr add "192.0.2.$n/24" dev "out$n"
	xt_exec "gw$n" sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0
	dp_sadb "gw$n"
done
xt_exec sw ip link set br0 up
xt_exec gw1 ip route add 10.0.0.0/8 via 192.0.2.3
xt_exec gw2 ip route add 10.0.0.0/8 via 192.0.2.3
xt_exec gw3 ip route add 10.1.0.0/24 via 192.0.2.1
xt_exec gw3 ip route add 10.2.0.0/24 via 192.0.2.2

# spoke N (1 or 2) <-> hub: spoke's site 10.N.0.0/24 <-> 10.0.0.0/8, reqid N, SPIs 0xN01 (spoke ->
# hub) and 0xN02 (hub -> spoke)
spoke() {
	local n=$1 site="10.$1.0.0/24" o="192.0.2.$1" h=192.0.2.3 up down
	up=$(dp_sa_keys gcm $((n * 256 + 1))); down=$(dp_sa_keys gcm $((n * 256 + 2)))
	# shellcheck disable=SC2086
	{
	dp_ctl "gw$n" policy out protect "$site" 10.0.0.0/8 reqid "$n" esp tunnel "$o" "$h"
	dp_ctl "gw$n" policy fwd protect 10.0.0.0/8 "$site" reqid "$n" esp tunnel "$h" "$o"
	dp_ctl gw3 policy fwd protect "$site" 10.0.0.0/8 reqid "$n" esp tunnel "$o" "$h"
	dp_ctl gw3 policy out protect 10.0.0.0/8 "$site" reqid "$n" esp tunnel "$h" "$o"
	dp_ctl "gw$n" sa out $((n * 256 + 1)) esp tunnel "$o" "$h" reqid "$n" ${up#* }
	dp_ctl gw3 sa in $((n * 256 + 1)) esp tunnel "$o" "$h" reqid "$n" ${up#* }
	dp_ctl gw3 sa out $((n * 256 + 2)) esp tunnel "$h" "$o" reqid "$n" ${down#* }
	dp_ctl "gw$n" sa in $((n * 256 + 2)) esp tunnel "$h" "$o" reqid "$n" ${down#* }
	}
}
spoke 1
spoke 2
dp_start gw1
dp_start gw2
dp_start gw3
drops3() { dp_status gw3 > "$XT_DIR/gw3.json"; dp_json "$XT_DIR/gw3.json" "sum(w['drops'].get('$1', 0) for w in j['worker'])"; }

dp_capture_start hub sw s3
dp_ping h1 10.2.0.2
dp_ping h2 10.1.0.2
dp_ping h1 10.3.0.2   # the hub's own site, for comparison
dp_capture_stop hub
n=$(dp_only_ipsec "$XT_DIR/hub.pcap") || xt_fail "plaintext on the hub's outside link"
dp_status gw3 > "$XT_DIR/gw3.json"
spd=$(dp_json "$XT_DIR/gw3.json" "sum(w['spd_out'] for w in j['worker'])")
[ "$spd" -ge 20 ] || xt_fail "the hub sent only $spd decrypted packets through its outbound SPD"
# the spoke-to-spoke packets left the hub under the hub -> B SA
rt=$(timeout 30 "$DP_TESTCTL" "$(dp_sadb_of gw3)" rt 0x202 esp 192.0.2.2 | sed -n 's/^packets=//p')
[ "${rt:-0}" -ge 5 ] || xt_fail "hub -> B SA carried ${rt:-0} packets"
xt_log "spoke to spoke through the hub: $n ESP packets on the hub's link, $spd re-protected, none in clear"

# blocked TAG REASON WHAT: h1 no longer reaches h2, the hub counts at least 5 drops of REASON, and its
# outside link carries nothing in clear meanwhile
blocked() {
	local before after
	sleep 0.2
	before=$(drops3 "$2")
	dp_capture_start "$1" sw s3
	xt_exec h1 ping -q -c 5 -i 0.1 -W 1 10.2.0.2 >/dev/null && xt_fail "h2 reachable without $3"
	dp_capture_stop "$1"
	dp_only_ipsec "$XT_DIR/$1.pcap" >/dev/null || xt_fail "plaintext on the hub's link without $3"
	after=$(drops3 "$2")
	[ $((after - before)) -ge 5 ] || xt_fail "no $2 drops at the hub without $3 ($before -> $after)"
}
# No hub -> B SA: dropped (the policy demands protection), never forwarded in clear.
dp_ctl gw3 del 0x202 esp 192.0.2.2
blocked nosa acquire "a hub -> B SA"
# No hub -> B policy either: no_policy.
timeout 30 "$top_builddir/ipsecctl/ipsecctl" --sadb "$(dp_sadb_of gw3)" policy delete out \
	from 10.0.0.0/8 to 10.2.0.0/24 || xt_fail "cannot delete the hub -> B policy"
blocked nopol no_policy "a hub -> B policy"
xt_log "without the hub -> B SA: acquire drops; without its policy: no_policy drops; nothing in clear"
dp_ping h1 10.3.0.2
dp_finish
exit 0
