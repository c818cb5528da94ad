#!/usr/bin/env bash
# tests/netns/test_mip6_v4.sh: Dual Stack Mobile IPv6 (RFC 5555) in xipsecd: a mobile node on an
# IPv4 network registers its IPv4 care-of address with the home agent's IPv4 address and its
# traffic goes through an ESP tunnel in IPv4, then does the same from behind a NAT (nftables
# masquerade), in UDP; on mip6_common.sh's bed with scapy's mobile node (test_mip6_mn.py, its bu4
# command):
#
#   cn (2001:db8:1::10) -- [in0 | out0] ha -- rt -- eth1 mn (IPv4 care-of 198.51.100.100)
#   home agent 2001:db8:1::1, IPv4 192.0.2.1 (out0)      \- eth3 nat (203.0.113.2) -- eth3 mn (10.0.0.100)
#
# Checked:
#  1. ipsecctl loads the home-agent statement's `ipv4` and shows it;
#  2. the Binding Update, ESP-protected and in IPv4 (protocol 41) to 192.0.2.1, is acknowledged
#     in IPv4 from 192.0.2.1 to the care-of address, scapy decoding it field by field: status 0,
#     sequence, lifetime, source the home agent, destination the home address with no routing
#     header, ESP of the signalling SA, a good checksum, no NAT Detection option (no NAT, no UDP)
#     and the IPv4 Address Acknowledgement 132 its IPv4 Home Address option 0.0.0.0 asked for;
#     the binding is the care-of address IPv4-mapped;
#  3. cn pings the home address and sends it a TCP stream through the tunnel: between the home
#     agent and the router only ESP in IPv4 (no IPv6 at all), and tshark decrypts cn's packets in
#     the tunnel SA with the keys ipsecctl exports;
#  4. from behind the NAT, the Binding Update in UDP to port 4191: the acknowledgement comes back
#     in UDP from 4191 through the NAT with NAT Detection (F set, refresh 110 s) and the binding is
#     the NAT's address; the same traffic then goes in ESP in UDP (RFC 3948, port 4500: tshark
#     decodes it and decrypts cn's packets), the tunnel SA's sequence numbers going on from where
#     they were (the SA moved, not renewed);
#  5. a deregistration from behind the NAT is acknowledged there and the tunnel SAs go home to their
#     IPv6 endpoints, without UDP.
set -u
XT_BG_TIMEOUT=60
HA4=192.0.2.1 COA4=198.51.100.100
MIP6_HA_PREFIXES="prefix 2001:db8:1::/64 ipv4 $HA4"
COA4N=10.0.0.100 NAT4=203.0.113.2
mip6_topo_more() {
	xt_ns_add nat
	xt_veth rt eth3 nat eth0
	xt_veth nat eth1 mn eth3
	xt_exec rt ip addr add 203.0.113.1/24 dev eth3
	xt_exec nat ip addr add $NAT4/24 dev eth0
	xt_exec nat ip addr add 10.0.0.1/24 dev eth1
	xt_exec nat ip route add default via 203.0.113.1
	xt_exec nat sysctl -qw net.ipv4.conf.all.forwarding=1
	{ xt_exec nat nft add table ip nat &&
	  xt_exec nat nft add chain ip nat post '{ type nat hook postrouting priority srcnat; }' &&
	  xt_exec nat nft add rule ip nat post oifname eth0 masquerade; } || xt_fail "nftables masquerade in nat"
	xt_exec mn ip addr add $COA4N/24 dev eth3
	MIP6_MN_JSON=", \"v4\": {\"ha4\": \"$HA4\", \"links\": {\"eth1\": {\"coa4\": \"$COA4\"},
		\"eth3\": {\"coa4\": \"$COA4N\", \"gw_mac\": \"$(xt_exec nat ip -br link show eth1 | awk '{print $3}')\"}}}"
	xt_exec ha ip addr add $HA4/24 dev out0
	xt_exec ha ip route add default via 192.0.2.2
	xt_exec ha sysctl -qw net.ipv4.conf.all.forwarding=0
	xt_exec rt ip addr add 192.0.2.2/24 dev eth0
	xt_exec rt ip addr add 198.51.100.1/24 dev eth1
	xt_exec rt sysctl -qw net.ipv4.conf.all.forwarding=1
	xt_exec mn ip addr add $COA4/24 dev eth1
	xt_exec mn ip route add default via 198.51.100.1
}
. "$top_srcdir/tests/netns/mip6_common.sh"
xt_exec mn ip link set tun0 mtu 1400

# ---- 1. the home agent's IPv4 address in the SADB
ctl --json show home-agent > "$XT_DIR/ha.json" || xt_fail "ipsecctl show home-agent"
[ "$(dp_json "$XT_DIR/ha.json" "j['home_agents'][0].get('ipv4')")" = $HA4 ] ||
	xt_fail "ipsecctl show home-agent: no ipv4 $HA4: $(cat "$XT_DIR/ha.json")"
ctl show home-agent | grep -q "ipv4 $HA4" || xt_fail "ipsecctl show home-agent (text): no ipv4 $HA4"

# ---- 2. registration in IPv4
ba4_have() { [ "$(grep -c '"ev": "ba4"' "$XT_DIR/mn.log")" -ge "$1" ]; }
wait_ba4() { # N: the N-th acknowledgement in IPv4 arrives within 5 s, into $XT_DIR/ba.json
	xt_wait 5 ba4_have "$1" || {
		tail -5 "$XT_DIR/mn.log" >&2; tail -20 "$XT_DIR/xipsecd-ha.log" >&2; bindings >&2; ctl show sa >&2
		xt_fail "no Binding Acknowledgement #$1 in IPv4"; }
	grep '"ev": "ba4"' "$XT_DIR/mn.log" | sed -n "${1}p" > "$XT_DIR/ba.json"
}
mn bu4 eth1 1 400 0.0.0.0
wait_ba4 1
ba4_is() {
	[ "$("$PYTHON" -c "import json,sys; b=json.load(open(sys.argv[1])); print($1)" "$XT_DIR/ba.json")" = True ] ||
		xt_fail "BA in IPv4: not $1: $(cat "$XT_DIR/ba.json")"
}
# RFC 5555 3.2.1: IPv4 Address Acknowledgement (30), status 132 (no dynamic IPv4 home address), no
# NAT Detection (31)
ba4_is "(b['v4_src'], b['v4_dst'], b['v4_proto'], b['src'], b['dst'], b['nh'], b['esp_spi'], b['opts']) == \
('$HA4', '$COA4', 41, '$HA', '$HOA', 50, 0x2000, [[30, '840000000000']])"
ba4_is "(b['status'], b['seq'], b['lifetime'], b['cksum_ok']) == (0, 1, 400, True)"
[ "$(b_json "[(x['home_address'], x['care_of_address']) for x in j['bindings']]")" = \
  "[('$HOA', '::ffff:$COA4')]" ] || xt_fail "binding after registration: $(cat "$XT_DIR/b.json")"

# ---- 3. traffic through the tunnel in IPv4
head -c 200000 /dev/urandom > "$XT_DIR/tcp.in"
traffic() { # NAME PORT: cn pings the home address and sends it tcp.in, captured in NAME.pcap
	dp_capture_start "$1" rt eth0
	xt_exec cn ping -6 -c 5 -i 0.2 -W 2 $HOA >/dev/null ||
		{ tail -3 "$XT_DIR/mn.log" >&2; ctl show sa >&2; xt_fail "$1: ping cn -> mn"; }
	xt_bg mn "sink-$1" socat -u TCP6-LISTEN:$2,bind=[$HOA],reuseaddr OPEN:"$XT_DIR/$1.out",creat,trunc
	sleep 0.5
	xt_exec cn timeout 20 socat -u OPEN:"$XT_DIR/tcp.in" TCP6:[$HOA]:$2 || xt_fail "$1: TCP cn -> mn"
	xt_wait 10 cmp -s "$XT_DIR/tcp.in" "$XT_DIR/$1.out" || xt_fail "$1: TCP stream cn -> mn not received whole"
	dp_capture_stop "$1"
}
traffic ha-rt 5001
n=$(dp_only_ipsec "$XT_DIR/ha-rt.pcap") || xt_fail "plaintext between the home agent and the router"
v6=$(timeout 60 tshark -r "$XT_DIR/ha-rt.pcap" -Y 'ipv6 && !ip && !icmpv6' 2>/dev/null | wc -l)
[ "$v6" -eq 0 ] || xt_fail "$v6 IPv6 packets between the home agent and the router (the tunnel is IPv4)"
esp4=$(timeout 60 tshark -r "$XT_DIR/ha-rt.pcap" -Y 'ip.proto == 50' 2>/dev/null | wc -l)
[ "$esp4" -ge 50 ] || xt_fail "only $esp4 ESP packets in IPv4 between the home agent and the router ($n ESP)"
dp_inner "$XT_DIR/ha-rt.pcap" "$(dp_tshark_args ha | tr '\n' ' ')" > "$XT_DIR/inner.txt"
awk -F'\t' -v cn=$CN '($1 == "0x00003000" || $1 == 12288) && $8 == cn { n++ } END { exit !(n >= 5) }' "$XT_DIR/inner.txt" ||
	xt_fail "tshark does not decrypt cn's packets in the tunnel SA 0x3000: $(head -5 "$XT_DIR/inner.txt")"

# the tunnel SA's sequence numbers cn's packets had (tshark's esp.sequence of SPI 0x3000)
seqs() { awk -F'\t' '($1 == "0x00003000" || $1 == 12288) && $2 != "" { print $2 }' "$1" | sort -n; }
last1=$(seqs "$XT_DIR/inner.txt" | tail -1)

# ---- 4. behind a NAT: UDP
mn bu4 eth3 2 400 - udp
wait_ba4 2
# in UDP from 4191 through the NAT; RFC 5555 3.2.2: NAT Detection (31), F set, refresh 110 s (0x6e)
ba4_is "(b['v4_src'], b['v4_dst'], b['v4_proto'], b['udp_sport'], b['udp_dport'], b['src'], b['dst'], \
b['esp_spi'], b['opts']) == ('$HA4', '$COA4N', 17, 4191, 4500, '$HA', '$HOA', 0x2000, [[31, '80000000006e']])"
ba4_is "(b['status'], b['seq'], b['lifetime'], b['cksum_ok']) == (0, 2, 400, True)"
[ "$(b_json "[(x['home_address'], x['care_of_address']) for x in j['bindings']]")" = \
  "[('$HOA', '::ffff:$NAT4')]" ] || xt_fail "binding behind the NAT: $(cat "$XT_DIR/b.json")"
traffic ha-rt2 5002
dp_only_ipsec "$XT_DIR/ha-rt2.pcap" >/dev/null || xt_fail "plaintext between the home agent and the router (NAT)"
esp4=$(timeout 60 tshark -r "$XT_DIR/ha-rt2.pcap" -Y 'ip.proto == 50' 2>/dev/null | wc -l)
[ "$esp4" -eq 0 ] || xt_fail "$esp4 ESP packets not in UDP behind the NAT"
# every UDP datagram is ESP in UDP that tshark decodes, both ways, and there are enough of them
notesp=$(timeout 60 tshark -r "$XT_DIR/ha-rt2.pcap" -d udp.port==4500,udpencap -Y 'udp && !esp' 2>/dev/null | wc -l)
[ "$notesp" -eq 0 ] || xt_fail "$notesp UDP datagrams that are not ESP in UDP between the home agent and the router"
for d in src dst; do
	udp=$(timeout 60 tshark -r "$XT_DIR/ha-rt2.pcap" -d udp.port==4500,udpencap \
		-Y "udp.port == 4500 && esp && ip.$d == $NAT4" 2>/dev/null | wc -l)
	[ "$udp" -ge 20 ] || xt_fail "only $udp ESP in UDP packets (port 4500) with the NAT as $d"
done
dp_inner "$XT_DIR/ha-rt2.pcap" "$(dp_tshark_args ha | tr '\n' ' ')" > "$XT_DIR/inner2.txt"
awk -F'\t' -v cn=$CN '($1 == "0x00003000" || $1 == 12288) && $8 == cn { n++ } END { exit !(n >= 5) }' "$XT_DIR/inner2.txt" ||
	xt_fail "tshark does not decrypt cn's packets in ESP in UDP: $(head -5 "$XT_DIR/inner2.txt")"
[ "$(cnt bu_ipv4_received)" = 2 ] && [ "$(cnt bu_ipv4_dropped)" = 0 ] && [ "$(cnt bu_accepted)" = 2 ] ||
	xt_fail "the home agent's counters: $(cat "$XT_DIR/b.json")"
first2=$(seqs "$XT_DIR/inner2.txt" | head -1)
[ -n "$last1" ] && [ -n "$first2" ] && [ "$first2" -gt "$last1" ] ||
	xt_fail "the tunnel SA's sequence numbers did not go on after the move: ${last1:-none} then ${first2:-none}"

# ---- 5. deregistration from behind the NAT: answered there, and the tunnel goes home, IPv6 again
mn bu4 eth3 3 0 - udp
wait_ba4 3
ba4_is "(b['status'], b['seq'], b['lifetime'], b['v4_dst'], b['udp_sport']) == (0, 3, 0, '$COA4N', 4191)"
[ "$(b_json "len(j['bindings'])")" = 0 ] || xt_fail "a binding after deregistration: $(cat "$XT_DIR/b.json")"
ctl --no-times sa get 0x3000 | grep -q "from $HA to $HOA spi" || xt_fail "tunnel out not home: $(ctl sa get 0x3000)"
ctl --no-times sa get 0x3001 | grep -q "from $HOA to $HA spi" || xt_fail "tunnel in not home: $(ctl sa get 0x3001)"
ctl --no-times sa get 0x3001 | grep -q encap && xt_fail "tunnel in still in UDP at home"

xt_log "DSMIPv6: Binding Update and Acknowledgement in IPv4 and, behind a NAT, in UDP; the home address's traffic in an IPv4 ESP tunnel, then ESP in UDP"
exit 0
