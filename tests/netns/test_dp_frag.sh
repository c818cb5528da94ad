#!/usr/bin/env bash
# tests/netns/test_dp_frag.sh: xipsecd's fragmentation and reassembly end to end (h1 - gw1 - gw2 - h2,
# AES-GCM-128 tunnels for IPv4 and IPv6).
#  1. Outbound: h1's link has an MTU of 3400, the gateways' outside links 1500. A 3028-byte ping
#     without DF is cut by gw1 into fragments before encapsulation, one ESP packet each (tshark
#     decrypts them: inner fragments with 8-byte offsets, MF on all but the last), h2's kernel
#     reassembles it and answers; its 1500-byte fragments exceed the tunnel's inner MTU and are cut
#     again by gw2. DF set (and IPv6) still get "fragmentation needed" / "packet too big" quoting the
#     packet as sent. Bypass traffic to a smaller-MTU link is fragmented the same way.
#  2. Inbound: scapy plays gw2 and sends an ESP packet that was fragmented on the path (IPv4 in
#     order and reversed, IPv6 with a Fragment header): gw1 reassembles, decrypts and delivers the
#     inner datagram to h1 whole; ESP-in-UDP likewise; datagrams larger than a frame are decrypted
#     from the reassembly buffer (IPv4 then leaves in fragments, IPv6 gets "packet too big").
#     Overlapping fragments (RFC 5722) are dropped and counted, and the
#     rest of that datagram times out, counted too. ipsecctl show stats shows the counters.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool ping tcpdump tshark
. "$top_srcdir/tests/netns/test_dp_common.sh"
# The inbound part sends ESP of gw2's SAs from scapy with sequence numbers far ahead of gw2's own
# (100001...): each inbound window's ceiling on disk (dp_seqmark.c) is set far enough ahead of its
# top to hold them, so the first of them is not taken for a peer that jumped ahead.
export XIPSEC_WINDOW_LEASE=1048576
"$PYTHON" -c 'import scapy.layers.ipsec' 2>/dev/null || xt_skip "scapy missing for $PYTHON"
CTL="$DP_BUILD/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"

dp_topo 1
xt_exec h1 ip link set eth0 mtu 3400
xt_exec gw1 ip link set in1 mtu 3400
# a bypassed site behind gw2: 10.3.0.0/24 on h2
xt_exec h2 ip addr add 10.3.0.2/24 dev eth0
xt_exec gw2 ip addr add 10.3.0.1/24 dev in2
xt_exec gw1 ip route add 10.3.0.0/24 via 192.0.2.2
dp_ctl gw1 policy out bypass 10.1.0.0/24 10.3.0.0/24
dp_ctl gw1 policy fwd bypass 10.3.0.0/24 10.1.0.0/24
dp_ctl gw2 policy fwd bypass 10.1.0.0/24 10.3.0.0/24
dp_ctl gw2 policy out bypass 10.3.0.0/24 10.1.0.0/24
dp_tunnel gcm 4 1 0x2001 0x2002
dp_tunnel gcm 6 2 0x3001 0x3002
# a second inbound SA of the IPv4 tunnel, ESP-in-UDP (a peer behind a NAT would use it)
dp_ctl gw1 sa in 0x2003 esp tunnel 192.0.2.2 192.0.2.1 reqid 1 $(dp_sa_keys gcm 0x2003 | cut -d' ' -f2-) encap 4500 4500
dp_start gw1
dp_start gw2
st() { dp_status "$1" > "$XT_DIR/st-$1.json"; dp_json "$XT_DIR/st-$1.json" "$2"; }
wsum() { st "$1" "sum(w['$2'] for w in j['worker'])"; }
drops() { st "$1" "sum(w['drops'].get('$2', 0) for w in j['worker'])"; }
drops_are() { [ "$(drops gw1 "$1")" = "$2" ]; }

# ---- 1. outbound ----
dp_capture_start out sw s1
dp_ping h1 10.2.0.2 -M dont -s 3000
sleep 1.5   # tcpdump hands over packets in blocks: let the last one retire before stopping it
dp_capture_stop out
n=$(dp_only_ipsec "$XT_DIR/out.pcap") || xt_fail "plaintext seen between the gateways"
[ "$(wsum gw1 frag_packets)" -ge 5 ] || xt_fail "gw1 fragmented $(wsum gw1 frag_packets) packets (want 5)"
[ "$(wsum gw1 frag_made)" -ge 15 ] || xt_fail "gw1 made $(wsum gw1 frag_made) fragments (want 15)"
# h2 fragments its 3028-byte replies to 1500; each 1500-byte piece is cut again by gw2
[ "$(wsum gw2 frag_packets)" -ge 10 ] || xt_fail "gw2 fragmented $(wsum gw2 frag_packets) packets (want 10)"
[ "$(drops gw1 mtu)" = 0 ] || xt_fail "gw1 dropped for MTU: $(cat "$XT_DIR/st-gw1.json")"
# every ESP packet fits the outside link, and tshark sees inner fragments of the echo requests
timeout 120 tshark -r "$XT_DIR/out.pcap" -T fields -e frame.len | awk '$1 > 1514 { bad = 1 } END { exit bad }' ||
	xt_fail "an ESP packet larger than the outside MTU"
args=$(dp_tshark_args gw1 | tr '\n' ' ')
eval "timeout 120 tshark -r '$XT_DIR/out.pcap' -o ip.defragment:FALSE $args -E occurrence=l -T fields \
	-e esp.spi -e ip.src -e ip.dst -e ip.id -e ip.frag_offset -e ip.flags.mf -e ip.len" 2>/dev/null \
	> "$XT_DIR/inner.txt"
awk -F'\t' '$2 == "10.1.0.2" && $3 == "10.2.0.2"' "$XT_DIR/inner.txt" > "$XT_DIR/req.txt"
[ "$(wc -l < "$XT_DIR/req.txt")" -ge 15 ] || { cat "$XT_DIR/inner.txt" "$XT_DIR/st-gw1.json" >&2; xt_fail "tshark decrypted $(wc -l < "$XT_DIR/req.txt") inner request fragments (want 15)"; }
# per request (by IP id; the hold queue may reorder the first one; tshark gives offsets in 8-byte
# units): 3 fragments, every one but the last with MF and a multiple of 8 bytes, the last ending at
# 3008 bytes of ICMP, 3008 bytes in all
awk -F'\t' '
	{ id = $4; off = $5 * 8; mf = ($6 == "1" || $6 == "True"); len = $7 - 20
	  n[id]++; tot[id] += len
	  if (mf && len % 8) { print "fragment with MF of " len " bytes"; bad = 1 }
	  if (!mf) { last[id]++; if (off + len != 3008) { print "last fragment ends at " off + len; bad = 1 } } }
	END { for (id in n) { k++
	          if (n[id] != 3 || tot[id] != 3008 || last[id] != 1) {
	              print id ": " n[id] " fragments, " tot[id] " bytes, " last[id] " last"; bad = 1 } }
	      if (k < 5) { print k " requests"; bad = 1 }
	      exit bad }' "$XT_DIR/req.txt" ||
	{ cat "$XT_DIR/req.txt" >&2; xt_fail "inner fragments are not laid out as RFC 791 says"; }
xt_log "outbound: $(wc -l < "$XT_DIR/req.txt") inner fragments of 5 requests in $n ESP packets"

# DF: ICMP "fragmentation needed" quoting the packet as h1 sent it (TTL 50, before the decrement)
dp_capture_start icmp h1 eth0
out=$(xt_exec h1 ping -c 2 -W 1 -t 50 -M do -s 3000 10.2.0.2 2>&1)
sleep 1.5
dp_capture_stop icmp
echo "$out" | grep -qiE "mtu ?[=:] ?14[0-9][0-9]|frag needed" || xt_fail "no fragmentation-needed: $out"
# the quoted header is the last IP header of the frame
q=$(timeout 60 tshark -r "$XT_DIR/icmp.pcap" -Y "icmp.type == 3 && icmp.code == 4" -E occurrence=l \
	-T fields -e icmp.mtu -e ip.ttl -e ip.len 2>/dev/null | head -1)
read -r qmtu qttl qlen <<< "$q"
[ "${qmtu:-0}" -ge 1400 ] && [ "$qmtu" -lt 1500 ] || xt_fail "ICMP next-hop MTU: $q"
[ "${qttl:-}" = 50 ] || xt_fail "the ICMP error does not quote TTL 50: $q"
[ "${qlen:-}" = 3028 ] || xt_fail "the ICMP error does not quote the 3028-byte packet: $q"
dp_capture_start icmp6 h1 eth0
out=$(xt_exec h1 ping -c 2 -W 1 -s 3000 fd02::2 2>&1)
sleep 1.5
dp_capture_stop icmp6
echo "$out" | grep -qiE "mtu ?[=:] ?1[34][0-9][0-9]|too big" || xt_fail "no packet-too-big for IPv6: $out"
# RFC 4443 2.4 (c): as much of the packet as fits in 1280 bytes
q=$(timeout 60 tshark -r "$XT_DIR/icmp6.pcap" -Y "icmpv6.type == 2" -E occurrence=f -T fields \
	-e ipv6.plen -e icmpv6.mtu 2>/dev/null | head -1)
read -r qplen qmtu <<< "$q"
[ "${qplen:-}" = 1240 ] || xt_fail "ICMPv6 packet too big is not 1280 bytes: $q"
[ "${qmtu:-0}" -ge 1300 ] && [ "$qmtu" -lt 1500 ] || xt_fail "ICMPv6 MTU: $q"

# bypass to a link with a smaller MTU: forwarded as fragments (gw2 passes them on, h2 reassembles)
dp_ping h1 10.3.0.2 -M dont -s 3000
[ "$(wsum gw1 frag_packets)" -ge 10 ] || xt_fail "bypass traffic not fragmented: $(cat "$XT_DIR/st-gw1.json")"

# ---- 2. inbound: ESP fragmented on the path ----
xt_bg h1 rx "$PYTHON" "$top_srcdir/tests/netns/test_dp_frag_recv.py"
xt_wait 10 grep -q ready "$XT_DIR/rx.log" || xt_fail "receiver did not start"
mac=$(xt_exec gw1 ip -o link show out1 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
[ -n "$mac" ] || xt_fail "no MAC for gw1 out1"
send() {  # send NAME FAMILY SEQ SIZE FRAGSIZE MODE [natt]
	local osrc=192.0.2.2 odst=192.0.2.1 spi=0x2002 isrc=10.2.0.2 idst=10.1.0.2
	[ "$2" = 6 ] && { osrc=fd00::2 odst=fd00::1 spi=0x3002 isrc=fd02::2 idst=fd01::2; }
	[ "${7:-}" = natt ] && spi=0x2003
	xt_exec sw "$PYTHON" "$top_srcdir/tests/netns/test_dp_frag_send.py" br0 "$mac" "$2" "$osrc" \
		"$odst" "$spi" "$(dp_key "$spi" 20)" "$3" "$isrc" "$idst" 7000 "$1" "$4" "$5" "$6" ${7:-} \
		> "$XT_DIR/send-$1.log" 2>&1 || { cat "$XT_DIR/send-$1.log" >&2; xt_fail "scapy sender $1 failed"; }
}
got() { xt_wait 10 grep -q "^got $1 $2 ok" "$XT_DIR/rx.log"; }
r0=$(wsum gw1 reasm_packets)
send v4in 4 100001 2500 1000 inorder
got v4in 2500 || { cat "$XT_DIR/send-v4in.log" "$XT_DIR/rx.log" >&2; xt_fail "IPv4 ESP fragments in order: inner datagram not delivered"; }
send v4rev 4 100002 2000 600 reverse
got v4rev 2000 || xt_fail "IPv4 ESP fragments in reverse: inner datagram not delivered"
send v6in 6 100001 2500 1000 inorder
got v6in 2500 || { cat "$XT_DIR/send-v6in.log" "$XT_DIR/rx.log" >&2; xt_fail "IPv6 ESP fragments: inner datagram not delivered"; }
send v6rev 6 100002 1800 700 reverse
got v6rev 1800 || xt_fail "IPv6 ESP fragments in reverse: inner datagram not delivered"
r1=$(wsum gw1 reasm_packets)
[ "$((r1 - r0))" = 4 ] || xt_fail "gw1 reassembled $((r1 - r0)) datagrams (want 4)"

[ "$(wsum gw1 reasm_frags)" -ge 13 ] || xt_fail "reassembled fragments: $(wsum gw1 reasm_frags)"
# ESP-in-UDP (NAT-T, RFC 3948) fragmented: the XDP program knows the later fragments by the first
send v4natt 4 1 2500 1000 inorder natt
got v4natt 2500 || { cat "$XT_DIR/send-v4natt.log" "$XT_DIR/rx.log" >&2; xt_fail "ESP-in-UDP fragments: inner datagram not delivered"; }
# larger than a frame (4 KiB): decrypted from the reassembly buffer; 6028 bytes without DF leave as
# fragments of in1's MTU (h1 reassembles), IPv6 gets "packet too big" (counted as mtu)
f0=$(wsum gw1 frag_packets) m0=$(drops gw1 mtu)
send v4big 4 100004 6000 1400 inorder
got v4big 6000 || { cat "$XT_DIR/send-v4big.log" "$XT_DIR/rx.log" "$XT_DIR/st-gw1.json" >&2; xt_fail "a 6000-byte datagram from fragmented ESP not delivered"; }
[ "$(wsum gw1 frag_packets)" = "$((f0 + 1))" ] || xt_fail "the 6028-byte packet was not fragmented for in1"
send v6big 6 100003 5000 1400 inorder
xt_wait 5 drops_are mtu "$((m0 + 1))" || xt_fail "IPv6 5048-byte inner packet: mtu drops $(drops gw1 mtu), want $((m0 + 1))"
grep -q "^got v6big" "$XT_DIR/rx.log" && xt_fail "an IPv6 packet above in1's MTU was delivered"
r1=$(wsum gw1 reasm_packets)
# overlap: fragment 0, a copy of fragment 1 moved back 8 bytes, then fragments 1..: the first two are
# dropped as an overlap, the rest wait for a fragment 0 that never comes and time out (5 s)
o0=$(drops gw1 frag_overlap) t0=$(drops gw1 frag_timeout)
send v4bad 4 100003 2500 1000 overlap
nsent=$(sed -n 's/^sent //p' "$XT_DIR/send-v4bad.log")
xt_wait 5 drops_are frag_overlap "$((o0 + 2))" ||
	xt_fail "overlap: $(drops gw1 frag_overlap) dropped (want $((o0 + 2))): $(cat "$XT_DIR/st-gw1.json")"
xt_wait 10 drops_are frag_timeout "$((t0 + nsent - 2))" ||
	xt_fail "timeout: $(drops gw1 frag_timeout) dropped (want $((t0 + nsent - 2)))"
grep -q "^got v4bad" "$XT_DIR/rx.log" && xt_fail "the overlapping datagram was delivered"
# the same counters through the SADB stats area
timeout 30 "$CTL" --sadb "$DP_SADB_gw1" --json show stats > "$XT_DIR/ctl.json" || xt_fail "ipsecctl show stats"
[ "$(dp_json "$XT_DIR/ctl.json" "j['stats']['dataplane']['reasm_packets']")" = "$r1" ] ||
	xt_fail "ipsecctl: reasm_packets $(dp_json "$XT_DIR/ctl.json" "j['stats']['dataplane']")"
[ "$(dp_json "$XT_DIR/ctl.json" "j['stats']['drops']['frag_overlap']")" = "$((o0 + 2))" ] ||
	xt_fail "ipsecctl: frag_overlap $(dp_json "$XT_DIR/ctl.json" "j['stats']['drops']")"
timeout 30 "$CTL" --sadb "$DP_SADB_gw1" show stats | grep -q "overlapping fragments  *2" ||
	xt_fail "ipsecctl show stats text: $(timeout 30 "$CTL" --sadb "$DP_SADB_gw1" show stats)"
xt_log "inbound: $(grep -c '^got' "$XT_DIR/rx.log") datagrams delivered from fragments; $(wsum gw1 reasm_frags) fragments reassembled"
xt_stop rx
dp_finish
exit 0
