#!/usr/bin/env bash
# tests/netns/test_dp_icmp.sh: ICMP errors about packets that came through the tunnel go back through
# it, protected. The gateways build them as packets and send them through their outbound SPD (source:
# the inside interface's address, which the tunnel's selectors cover):
#  - TTL expiry at the far gateway: h1's ping with TTL 2 gets "time exceeded" from gw2's site address;
#  - path MTU discovery from both sides: the MTU of the link behind the far gateway is lowered, and a
#    TCP transfer with DF (Linux's default) still completes, because "fragmentation needed" reaches the
#    sender through the tunnel;
#  - a capture between the gateways shows only ESP all along (no error in clear).
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool socat ping ss tcpdump tshark
. "$top_srcdir/tests/netns/test_dp_common.sh"

dp_topo 1
dp_tunnel gcm 4 1 0x1001 0x1002
dp_start gw1
dp_start gw2
dp_ping h1 10.2.0.2
icmp_sent() { dp_status "$1" > "$XT_DIR/$1.json"; dp_json "$XT_DIR/$1.json" "sum(w['icmp_sent'] for w in j['worker'])"; }

dp_capture_start icmp sw s1
# TTL: 2 at h1, 1 after gw1, expires at gw2 after decapsulation
xt_exec h1 ping -c 3 -i 0.2 -W 2 -t 2 10.2.0.2 > "$XT_DIR/ttl.out" 2>&1
grep -q "From 10.2.0.1.*Time to live exceeded" "$XT_DIR/ttl.out" ||
	{ cat "$XT_DIR/ttl.out" >&2; xt_fail "no time exceeded from gw2 through the tunnel"; }
[ "$(icmp_sent gw2)" -ge 3 ] || xt_fail "gw2 counted $(icmp_sent gw2) ICMP errors"

# PMTUD, h1 -> h2: the link behind gw2 narrows to 1200 (h2 keeps 1500, so its MSS asks for more)
xt_exec gw2 ip link set in2 mtu 1200
sleep 0.3
DP_PORT=7100 dp_tcp h1 h2 10.2.0.2 2000000
# h1 learned the narrow link's MTU: the error reached it, and only the tunnel leads there
xt_exec h1 ip route get 10.2.0.2 | grep -q "mtu 1200" ||
	xt_fail "h1 did not learn the path MTU: $(xt_exec h1 ip route get 10.2.0.2 | tr '\n' ' ')"
# and h2 -> h1: the link behind gw1 narrows
xt_exec gw1 ip link set in1 mtu 1100
sleep 0.3
DP_PORT=7101 dp_tcp h2 h1 10.1.0.2 2000000
xt_exec h2 ip route get 10.1.0.2 | grep -q "mtu 1100" ||
	xt_fail "h2 did not learn the path MTU: $(xt_exec h2 ip route get 10.1.0.2 | tr '\n' ' ')"
dp_capture_stop icmp
n=$(dp_only_ipsec "$XT_DIR/icmp.pcap") || xt_fail "plaintext between the gateways"
s1=$(icmp_sent gw1) s2=$(icmp_sent gw2)
[ "$s1" -ge 1 ] && [ "$s2" -ge 4 ] || xt_fail "ICMP errors sent: gw1 $s1, gw2 $s2"
xt_log "ICMP errors sent: gw1 $s1, gw2 $s2; path MTU learnt on both sides; $n ESP packets, nothing in clear"
dp_finish
exit 0
