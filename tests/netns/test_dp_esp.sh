#!/usr/bin/env bash
# tests/netns/test_dp_esp.sh: tunnel-mode IPsec between two xipsecd gateways (h1 - gw1 - gw2 - h2):
# for AES-GCM-128, AES-CBC + HMAC-SHA256-128, AH (HMAC-SHA256-128) and AES-GCM with NAT-T (ESP-in-UDP
# on 4500): ping, TCP (2 MB, compared) and UDP over IPv4-in-IPv4 and IPv6-in-IPv6 tunnels. A capture
# between the gateways holds only ESP/AH (scapy checks every packet) and tshark, an implementation
# nobody here wrote, decrypts the ESP with the keys `ipsecctl export wireshark` gives; per-SA counters
# in the SADB runtime area count the packets; a packet matching no SA's policy after decapsulation is
# dropped as policy_mismatch.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool socat ping ss tcpdump tshark
. "$top_srcdir/tests/netns/test_dp_common.sh"

dp_topo 1
dp_start gw1
dp_start gw2

round() {
	local xf=$1 natt=${2:-} base=$3 cap n rows args dup proto
	xt_log "round: $xf ${natt:+NAT-T}"
	dp_ctl gw1 flush
	dp_ctl gw2 flush
	dp_tunnel "$xf" 4 1 $((base + 1)) $((base + 2)) $natt
	dp_tunnel "$xf" 6 2 $((base + 3)) $((base + 4)) $natt
	cap="esp-$xf$natt"
	dp_capture_start "$cap" sw s1
	dp_ping h1 10.2.0.2
	dp_ping h2 fd01::2
	dp_tcp h1 h2 10.2.0.2 2000000
	dp_tcp h2 h1 fd01::2 2000000
	dp_udp h1 h2 fd02::2 100
	dp_udp h2 h1 10.1.0.2 100
	dp_capture_stop "$cap"
	n=$(dp_only_ipsec "$XT_DIR/$cap.pcap") || xt_fail "$xf: plaintext seen between the gateways"
	[ "$n" -gt 1000 ] || xt_fail "$xf: only $n ESP/AH packets captured"
	# an independent reader decrypts it (AH: reads through it) with the keys ipsecctl exports
	args=""
	[ "$xf" = ah ] || args=$(dp_tshark_args gw1 | tr '\n' ' ')
	dp_inner "$XT_DIR/$cap.pcap" "$args" > "$XT_DIR/$cap.txt"
	# the sequence numbers never repeat under one SPI
	dup=$(awk -F'\t' '$1 != "" { print $1, $2 } $3 != "" { print $3, $4 }' "$XT_DIR/$cap.txt" |
		sort | uniq -d | head -3)
	[ -z "$dup" ] || xt_fail "$xf: sequence numbers repeated: $dup"
	rows=$(awk -F'\t' '$5 == 8 && $6 == "10.1.0.2" && $7 == "10.2.0.2"' "$XT_DIR/$cap.txt" | wc -l)
	[ "$rows" -ge 5 ] || xt_fail "$xf: tshark found $rows decrypted IPv4 echo requests (want 5)"
	rows=$(awk -F'\t' '$8 == "fd02::2" && $9 > 0' "$XT_DIR/$cap.txt" | wc -l)
	[ "$rows" -ge 100 ] || xt_fail "$xf: tshark found only $rows decrypted IPv6 TCP segments"
	# per-SA counters in the runtime area
	proto=esp; [ "$xf" = ah ] && proto=ah
	timeout 30 "$DP_TESTCTL" "$DP_SADB_gw1" rt $((base + 1)) "$proto" 192.0.2.2 > "$XT_DIR/rt" ||
		xt_fail "$xf: no runtime counters for the outbound SA"
	grep -q "^packets=[1-9]" "$XT_DIR/rt" || xt_fail "$xf: no packets counted on the outbound SA: $(cat "$XT_DIR/rt")"
}

round gcm "" 0x1000
# Path MTU through the tunnel: a DF packet that would exceed the outside MTU once encapsulated is
# answered with "fragmentation needed" / "packet too big" carrying the inner MTU that fits (the
# hosts may already know it from the TCP transfers: only those ICMP errors could have taught it,
# their own links have an MTU of 1500).
out=$(xt_exec h1 ping -c 2 -W 1 -M do -s 1472 10.2.0.2 2>&1)
echo "$out" | grep -qiE "mtu ?[=:] ?14[0-9][0-9]|frag needed" || xt_fail "no fragmentation-needed through the tunnel: $out"
out=$(xt_exec h2 ping -c 2 -W 1 -M do -s 1452 fd01::2 2>&1)
echo "$out" | grep -qiE "mtu ?[=:] ?1[34][0-9][0-9]|too big" || xt_fail "no packet-too-big through the tunnel: $out"
round cbc "" 0x2000
round ah "" 0x3000
round gcm natt 0x4000

# Post-decapsulation policy check: gw2 accepts from this SA only 10.1.0.0/24 -> 10.2.0.0/24;
# an inner packet from elsewhere (h1's second address, protected by a broader policy on gw1) is a
# mismatch.
xt_exec h1 ip addr add 10.9.0.2/24 dev eth0
dp_ctl gw1 policy out protect 10.9.0.0/24 10.2.0.0/24 reqid 1 esp tunnel 192.0.2.1 192.0.2.2
xt_exec h1 ping -q -c 3 -i 0.1 -W 1 -I 10.9.0.2 10.2.0.2 >/dev/null && xt_fail "mismatching inner packet accepted"
dp_status gw2 > "$XT_DIR/st2.json"
[ "$(dp_json "$XT_DIR/st2.json" "j['worker'][0]['drops'].get('policy_mismatch', 0)")" -ge 3 ] ||
	xt_fail "policy mismatch not counted: $(cat "$XT_DIR/st2.json")"
dp_finish
exit 0
