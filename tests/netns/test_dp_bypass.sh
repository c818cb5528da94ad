#!/usr/bin/env bash
# tests/netns/test_dp_bypass.sh: xipsecd's forwarding path without IPsec, end to end through two
# gateways (h1 - gw1 - gw2 - h2) driven by bypass policies: ping, TCP (4 MB compared) and UDP over
# IPv4 and IPv6; TTL decremented once per gateway; traffic for the gateway itself and ARP/ND stay
# with the kernel; a discard policy and a missing policy drop and count; ICMP "fragmentation needed"
# / "packet too big" when the next link's MTU is smaller; SIGTERM detaches the XDP program.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool socat ping ss
. "$top_srcdir/tests/netns/test_dp_common.sh"

dp_topo 1
dp_bypass_all
dp_start gw1
dp_start gw2

dp_ping h1 10.2.0.2
dp_ping h1 fd02::2
dp_ping h2 10.1.0.2
# the very first packets waited for ARP/ND in the hold queue instead of being lost
dp_status gw1 > "$XT_DIR/st1.json"
[ "$(dp_json "$XT_DIR/st1.json" "j['worker'][0]['held']")" -ge 1 ] || xt_fail "nothing was held for neighbour resolution"
# a next hop that never answers: held, then dropped and counted as no_neigh (never silently)
xt_exec gw1 ip route add 10.3.0.0/24 via 192.0.2.99
xt_exec h1 ping -q -c 2 -i 0.2 -W 1 10.3.0.1 >/dev/null && xt_fail "ping to a dead next hop succeeded"
xt_wait 10 sh -c "'$XIPSECD' --status --ctl '$XT_DIR/gw1.sock' | grep -q '\"no_neigh\":2'" ||
	xt_fail "unresolved neighbour drops not counted: $(dp_status gw1)"
# TTL: 64 from h2, one decrement per gateway
xt_exec h1 ping -c 1 -W 2 10.2.0.2 | grep -q "ttl=62" || xt_fail "TTL not decremented exactly twice"
xt_exec h1 ping -c 1 -W 2 fd02::2 | grep -q "ttl=62" || xt_fail "hop limit not decremented exactly twice"
# the gateway itself answers through its kernel (XDP_PASS)
dp_ping h1 10.1.0.1
dp_ping h1 fd01::1
dp_ping gw1 192.0.2.2

# IKE between the gateways stays with their kernels: UDP 500, and 4500 with the zero non-ESP marker
xt_bg gw2 ike500 socat -u UDP4-RECV:500 -
xt_bg gw2 ike4500 socat -u UDP4-RECV:4500 -
sleep 0.3
printf 'IKE-500' | xt_exec gw1 socat -u - UDP4-SENDTO:192.0.2.2:500
printf '\0\0\0\0IKE-4500' | xt_exec gw1 socat -u - UDP4-SENDTO:192.0.2.2:4500
xt_wait 5 grep -q IKE-500 "$XT_DIR/ike500.log" || xt_fail "UDP 500 did not reach gw2's kernel"
xt_wait 5 grep -q IKE-4500 "$XT_DIR/ike4500.log" || xt_fail "UDP 4500 (non-ESP marker) did not reach gw2's kernel"
xt_stop ike500; xt_stop ike4500

dp_tcp h1 h2 10.2.0.2 4000000
dp_tcp h2 h1 fd01::2 4000000
dp_udp h1 h2 10.2.0.2 300
dp_udp h2 h1 fd01::2 300

# A discard policy (priority wins) and a packet without any policy are dropped and counted.
dp_ctl gw1 policy out discard 10.1.0.2/32 10.2.0.99/32 prio 10
xt_exec h2 ip addr add 10.2.0.99/24 dev eth0
xt_exec h1 ping -q -c 3 -i 0.1 -W 1 10.2.0.99 >/dev/null && xt_fail "discard policy did not discard"
dp_ctl gw2 policy out bypass 10.2.0.0/24 10.1.0.0/24 proto 1 prio 10  # harmless, more specific
dp_status gw1 > "$XT_DIR/st1.json"
[ "$(dp_json "$XT_DIR/st1.json" "j['worker'][0]['drops'].get('policy_discard', 0)")" -ge 3 ] ||
	xt_fail "discard drops not counted: $(cat "$XT_DIR/st1.json")"

# PMTU: a smaller MTU between the gateways makes gw1 answer DF packets with ICMP errors
xt_exec gw1 ip link set out1 mtu 1400
xt_exec gw2 ip link set out2 mtu 1400
sleep 0.2
out=$(xt_exec h1 ping -c 2 -W 1 -M do -s 1450 10.2.0.2 2>&1)
echo "$out" | grep -qi "mtu = 1400\|frag needed" || xt_fail "no fragmentation-needed error: $out"
out=$(xt_exec h1 ping -c 2 -W 1 -M do -s 1450 fd02::2 2>&1)
echo "$out" | grep -qi "mtu = 1400\|too big" || xt_fail "no packet-too-big error: $out"
# and TCP adapts to it (PMTUD through the gateway)
dp_tcp h1 h2 10.2.0.2 1000000
dp_status gw1 > "$XT_DIR/st1.json"
[ "$(dp_json "$XT_DIR/st1.json" "j['worker'][0]['icmp_sent']")" -ge 2 ] || xt_fail "ICMP errors not counted"
[ "$(dp_json "$XT_DIR/st1.json" "j['worker'][0]['drops'].get('mtu', 0)")" -ge 2 ] || xt_fail "MTU drops not counted"

# Clean shutdown: SIGTERM detaches the XDP program; the SADB stays.
xt_stop xipsecd-gw1 TERM
grep -q "stopped" "$XT_DIR/xipsecd-gw1.log" || xt_fail "no clean stop: $(cat "$XT_DIR/xipsecd-gw1.log")"
xt_exec gw1 ip link show in1 | grep -q "xdp" && xt_fail "XDP program still attached after SIGTERM"
[ -e "$DP_SADB_gw1" ] || xt_fail "SADB removed at shutdown"
# restart picks the same SADB up
dp_start gw1
dp_ping h1 10.2.0.2
dp_finish
exit 0
