#!/usr/bin/env bash
# tests/netns/test_dp_icmp_decap.sh: an ICMP error about a decapsulated packet leaves only through the
# tunnel it came from, or not at all (RFC 4301 section 6.2), even where a bypass policy broader than
# the tunnel would carry it in clear (a gateway that also routes other traffic). gw2's inside
# interface has 10.2.0.1 first, which no tunnel covers, and 10.2.1.1; both gateways bypass 0/0 behind
# the tunnels' policies.
#  - tunnel 1, 10.1.0.0/24 <-> 10.2.1.0/24: h1's ping with TTL 2 expires at gw2 after decapsulation,
#    and a DF ping too big for gw2's narrowed inside link: both errors reach h1 from 10.2.1.1 (the
#    inside address the tunnel covers), through the tunnel;
#  - tunnel 2, 10.1.0.3/32 <-> 10.2.1.3/32 (preferred over tunnel 1): no gateway address is inside
#    its selectors, and tunnel 1's SA is not its SA: the errors are not sent, and counted
#    (icmp_decap);
#  - a capture between the gateways shows only ESP all along.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool socat ping ss tcpdump tshark
. "$top_srcdir/tests/netns/test_dp_common.sh"

dp_topo 1
xt_exec gw2 ip addr add 10.2.1.1/24 dev in2
xt_exec h2 ip addr add 10.2.1.2/24 dev eth0
xt_exec h2 ip addr add 10.2.1.3/24 dev eth0
xt_exec h1 ip addr add 10.1.0.3/24 dev eth0
xt_exec gw1 ip route add 10.2.1.0/24 via 192.0.2.2

# tun REQID SPI1 SPI2 NET1 NET2 [ARGS]: a tunnel between NET1 (behind gw1) and NET2 (behind gw2)
tun() {
	local reqid=$1 spi1=$2 spi2=$3 n1=$4 n2=$5 o1=192.0.2.1 o2=192.0.2.2 k1 k2; shift 5
	k1=$(dp_sa_keys gcm "$spi1"); k2=$(dp_sa_keys gcm "$spi2")
	# shellcheck disable=SC2086
	{
	dp_ctl gw1 policy out protect "$n1" "$n2" reqid "$reqid" esp tunnel "$o1" "$o2" "$@"
	dp_ctl gw1 policy fwd protect "$n2" "$n1" reqid "$reqid" esp tunnel "$o2" "$o1" "$@"
	dp_ctl gw2 policy out protect "$n2" "$n1" reqid "$reqid" esp tunnel "$o2" "$o1" "$@"
	dp_ctl gw2 policy fwd protect "$n1" "$n2" reqid "$reqid" esp tunnel "$o1" "$o2" "$@"
	dp_ctl gw1 sa in "$spi2" esp tunnel "$o2" "$o1" reqid "$reqid" ${k2#* }
	dp_ctl gw2 sa in "$spi1" esp tunnel "$o1" "$o2" reqid "$reqid" ${k1#* }
	dp_ctl gw1 sa out "$spi1" esp tunnel "$o1" "$o2" reqid "$reqid" ${k1#* }
	dp_ctl gw2 sa out "$spi2" esp tunnel "$o2" "$o1" reqid "$reqid" ${k2#* }
	}
}
tun 1 0x1001 0x1002 10.1.0.0/24 10.2.1.0/24
tun 2 0x2001 0x2002 10.1.0.3/32 10.2.1.3/32 prio 10
for gw in gw1 gw2; do
	dp_ctl "$gw" policy out bypass 0.0.0.0/0 0.0.0.0/0 prio 1000
	dp_ctl "$gw" policy fwd bypass 0.0.0.0/0 0.0.0.0/0 prio 1000
done
dp_start gw1
dp_start gw2
dp_ping h1 10.2.1.2
dp_ping h1 10.2.1.3 -I 10.1.0.3
decap_drops() {
	dp_status gw2 > "$XT_DIR/gw2.json"
	dp_json "$XT_DIR/gw2.json" "sum(w['drops'].get('icmp_decap', 0) for w in j['worker'])"
}

dp_capture_start decap sw s1
# tunnel 1: TTL 2 at h1, 1 after gw1, expires at gw2 after decapsulation
xt_exec h1 ping -c 3 -i 0.2 -W 2 -t 2 10.2.1.2 > "$XT_DIR/ttl1.out" 2>&1
grep -q "From 10.2.1.1.*Time to live exceeded" "$XT_DIR/ttl1.out" ||
	{ cat "$XT_DIR/ttl1.out" >&2; xt_fail "no time exceeded from 10.2.1.1 through tunnel 1"; }
# and too big for the link behind gw2, with DF
xt_exec gw2 ip link set in2 mtu 1200
sleep 0.3
xt_exec h1 ping -c 2 -i 0.2 -W 2 -M do -s 1300 10.2.1.2 > "$XT_DIR/big1.out" 2>&1
grep -q "From 10.2.1.1.*mtu = 1200" "$XT_DIR/big1.out" ||
	{ cat "$XT_DIR/big1.out" >&2; xt_fail "no fragmentation needed from 10.2.1.1 through tunnel 1"; }
xt_exec h1 ip route get 10.2.1.2 | grep -q "mtu 1200" ||
	xt_fail "h1 did not learn the path MTU: $(xt_exec h1 ip route get 10.2.1.2 | tr '\n' ' ')"
[ "$(decap_drops)" = 0 ] || xt_fail "errors through tunnel 1 counted as icmp_decap"

# tunnel 2: no source its selectors allow; tunnel 1's SA would take one, but is not its SA
xt_exec h1 ping -c 3 -i 0.2 -W 1 -t 2 -I 10.1.0.3 10.2.1.3 > "$XT_DIR/ttl2.out" 2>&1
grep -q "exceeded" "$XT_DIR/ttl2.out" && { cat "$XT_DIR/ttl2.out" >&2; xt_fail "an error left for tunnel 2"; }
xt_exec h1 ping -c 2 -i 0.2 -W 1 -M do -s 1300 -I 10.1.0.3 10.2.1.3 > "$XT_DIR/big2.out" 2>&1
grep -q "From .*mtu" "$XT_DIR/big2.out" && { cat "$XT_DIR/big2.out" >&2; xt_fail "an error left for tunnel 2"; }
n=$(decap_drops)
[ "$n" -ge 5 ] || xt_fail "errors for tunnel 2 not counted as icmp_decap: $n"
dp_capture_stop decap
e=$(dp_only_ipsec "$XT_DIR/decap.pcap") || xt_fail "plaintext between the gateways"
xt_log "errors through tunnel 1 from 10.2.1.1; $n errors for tunnel 2 not sent (icmp_decap); $e ESP packets, nothing in clear"
dp_finish
exit 0
