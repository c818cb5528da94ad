#!/usr/bin/env bash
# tests/netns/test_mip6_ha.sh: xipsecd as the IPsec end of a Mobile IPv6 home agent, end to end,
# against a mobile node played by scapy's Mobile IPv6 layers and SecurityAssociation
# (tests/netns/test_mip6_mn.py):
#
#   cn (2001:db8:1::10) -- [in0 | out0] ha -- rt -- eth1 mn (care-of 2001:db8:a::100)
#   home link 2001:db8:1::/64  HA 2001:db8:1::1       \- eth2 mn (care-of 2001:db8:b::100)
#                              (2001:db8:f::1 outside)    home address 2001:db8:1::100 on mn's tun0
#
# Configuration: ipsecctl's home-agent and mobile-node statements (manual keys, RFC 3776). Checked:
#  1. registration: the BU from the first care-of address is answered with BA status 0, field by
#     field (addresses, type 2 routing header, sequence, lifetime, checksum), ESP-protected;
#     `ipsecctl show bindings --json` lists the binding; the home agent proxies ND for the home address
#  2. a ping and a TCP transfer cn <-> mn through the tunnel; between the home agent and the router
#     only ESP, and tshark decrypts it with the keys ipsecctl exports (the inner packets are cn's);
#     a Home Test Init from the home address reaches cn through the reverse tunnel;
#  3. the mobile node moves to the second care-of address: BA for the new sequence, traffic follows,
#     no SA re-keyed (same SPIs, sequence numbers continue), nothing more to the old address after the BA;
#  4. what must change nothing (each counted): an unprotected BU, a BU whose sequence is out of the
#     window (BA 135), a protected BU whose Home Address option names another address (dropped by
#     the SA's selector), a truncated Mobility Header; the care-of address bound to the BU (RFC 3776
#     3.1): the mobile node's BU with its outer source rewritten in flight, and one whose Alternate
#     Care-of Address names a third party, both refused with BA 174 to their source, the binding and
#     the SAs' endpoints as they were, nothing sent to the third party;
#  5. deregistration: BA, the binding gone, no more forwarding, no more proxy ND;
#  6. a short lifetime expires: the binding goes by itself and the tunnel moves home;
#  7. configuration changes under a binding: an SA of no mobile node added and deleted leaves the
#     binding and the tunnel as they are; a second mobile node loaded is taken up, its tunnel SA
#     moved away from home by hand goes back (it has no binding), and it is dropped when its SAs are
#     deleted, the first one's binding staying throughout.
set -u
XT_BG_TIMEOUT=240
MIP6_HA_OPTS=-v # xipsecd's refusals' log lines (section 4)
. "$top_srcdir/tests/netns/mip6_common.sh"

# ---- 1. registration
[ "$(b_json "len(j['bindings'])")" = 0 ] || xt_fail "a binding before any BU"
mn bu eth1 1 120
wait_ba 1
ba_is 1 "b['status'] == 0 and b['seq'] == 1 and b['lifetime'] == 120 and b['src'] == '$HA' and \
b['dst'] == '$COA1' and b['rh_type'] == 2 and b['rh_segleft'] == 1 and b['rh_addr'] == '$HOA' and \
b['esp_spi'] == 0x2000 and b['cksum_ok'] and b['flags'] == 0 and b['iface'] == 'eth1'"
[ "$(b_json "[(x['home_address'], x['care_of_address'], x['sequence'], x['lifetime']) for x in j['bindings']]")" = \
  "[('$HOA', '$COA1', 1, 120)]" ] || xt_fail "binding after registration: $(cat "$XT_DIR/b.json")"
xt_exec ha ip -6 neigh show proxy | grep -q "$HOA" || xt_fail "no proxy ND entry for the home address"
ctl show | grep -A1 "spi 0x00003000" | grep -q "to $COA1" || xt_fail "tunnel SA not moved to $COA1: $(ctl show)"

# ---- 2. traffic through the tunnel, only ESP between home agent and router
dp_capture_start ha-rt rt eth0
xt_exec cn ping -6 -c 3 -i 0.2 -W 2 $HOA >/dev/null || { cat "$XT_DIR/mn.log" | tail -3 >&2; xt_fail "ping cn -> mn (home address)"; }
dp_tcp cn mn $HOA 200000
dp_capture_stop ha-rt
n=$(dp_only_ipsec "$XT_DIR/ha-rt.pcap") || xt_fail "plaintext between the home agent and the router"
[ "$n" -ge 20 ] || { timeout 30 tshark -r "$XT_DIR/ha-rt.pcap" 2>&1 | head -20 >&2; cat "$XT_DIR/cap-ha-rt.log" >&2
	xt_fail "only $n ESP packets between the home agent and the router"; }
# tshark, with the keys ipsecctl exports, finds cn's packets inside the tunnel SA 0x3000
dp_inner "$XT_DIR/ha-rt.pcap" "$(dp_tshark_args ha | tr '\n' ' ')" > "$XT_DIR/inner.txt"
awk -F'\t' -v cn=$CN '($1 == "0x00003000" || $1 == 12288) && $8 == cn { n++ } END { exit !(n >= 10) }' "$XT_DIR/inner.txt" ||
	xt_fail "tshark does not decrypt cn's packets in the tunnel SA 0x3000: $(head -5 "$XT_DIR/inner.txt")"

# the return routability test's Home Test Init travels through the reverse tunnel to cn (RFC 6275 5.2.5)
# (cn's kernel has no Mobile IPv6: it answers with a Parameter Problem quoting it)
dp_capture_start cn-hoti cn eth0
mn hoti $CN
xt_wait 5 grep -q '"cmd": "hoti"' "$XT_DIR/mn.log"
sleep 1
dp_capture_stop cn-hoti
[ "$(timeout 60 tshark -r "$XT_DIR/cn-hoti.pcap" -Y "mip6.mhtype == 1 && ipv6.src == $HOA && ipv6.dst == $CN && !icmpv6" 2>/dev/null | wc -l)" = 1 ] ||
	{ timeout 30 tshark -r "$XT_DIR/cn-hoti.pcap" 2>&1 | head >&2; tail -3 "$XT_DIR/mn.log" >&2
	  xt_fail "the Home Test Init did not reach cn from the home address"; }

# ---- 3. movement: BU from the second care-of address
out_seq_before=$(ctl --json show | "$PYTHON" -c "import json,sys; print([s for s in json.load(sys.stdin)['sas'] if s['spi'] == 0x3000][0]['counters']['packets'])")
dp_capture_start old rt eth1
mn bu eth2 2 120
wait_ba 2
ba_is 2 "b['status'] == 0 and b['seq'] == 2 and b['dst'] == '$COA2' and b['iface'] == 'eth2' and b['rh_addr'] == '$HOA'"
xt_exec mn ip -6 route replace default via 2001:db8:b::1 dev eth2
ba_t=$(date +%s.%N)
xt_exec cn ping -6 -c 3 -i 0.2 -W 2 $HOA >/dev/null || xt_fail "ping cn -> mn after the move"
dp_tcp cn mn $HOA 100000
dp_capture_stop old
# after the BA nothing reached the old care-of address (the BA itself went to the new one)
late=$(timeout 60 tshark -r "$XT_DIR/old.pcap" -Y "ipv6.dst == $COA1 && esp" -T fields -e frame.time_epoch 2>/dev/null |
	awk -v t="$ba_t" '$1 > t' | wc -l)
[ "$late" = 0 ] || xt_fail "$late ESP packets to the old care-of address after the move"
[ "$(b_json "[(x['care_of_address'], x['sequence']) for x in j['bindings']]")" = "[('$COA2', 2)]" ] ||
	xt_fail "binding after the move: $(cat "$XT_DIR/b.json")"
# same SA (no rekey): its packet count went on growing from where it was
ctl --json show > "$XT_DIR/sas.json"
dp_json "$XT_DIR/sas.json" "[(s['spi'], s['dst']) for s in j['sas'] if s['spi'] in (0x3000, 0x3001)]" | grep -q "(12288, '$COA2')" ||
	xt_fail "tunnel SA 0x3000 not at $COA2: $(cat "$XT_DIR/sas.json")"
[ "$(dp_json "$XT_DIR/sas.json" "[s['counters']['packets'] for s in j['sas'] if s['spi'] == 0x3000][0] > $out_seq_before")" = True ] ||
	xt_fail "tunnel SA 0x3000 counters restarted"

# ---- 4. what must change nothing
snap() { b_json "[(x['care_of_address'], x['sequence']) for x in j['bindings']]"; }
before=$(snap)
rej0=$(cnt bu_rejected) drop0=$(cnt bu_dropped) acc0=$(cnt bu_accepted)
n0=$(nba)
mn bu-plain eth2 3 120
sleep 1
[ "$(nba)" = "$n0" ] || xt_fail "an unprotected BU was answered"
mn bu eth2 1 120         # sequence 1 after 2: out of the window
wait_ba $((n0 + 1))
ba_is $((n0 + 1)) "b['status'] == 135 and b['seq'] == 2"
mn bu-hoa eth2 4 120 2001:db8:1::200
mn bu-trunc eth2 5
sleep 1
[ "$(nba)" = $((n0 + 1)) ] || xt_fail "a BU for another home address or a truncated one was answered"
[ "$(snap)" = "$before" ] || xt_fail "the binding cache changed: $(snap) (was $before)"
[ "$(cnt bu_accepted)" = "$acc0" ] || xt_fail "accepted count changed"
[ "$(cnt bu_rejected)" = $((rej0 + 1)) ] || xt_fail "the 135 rejection not counted"
[ "$(cnt bu_dropped)" -ge $((drop0 + 1)) ] || xt_fail "the truncated BU not counted as dropped"
[ "$(b_json "j['rejected'].get('135', 0)")" -ge 1 ] || xt_fail "no 135 in the rejected counters"
# the other home address never reached the home agent: the BU SA's selector dropped it
ctl --json show > "$XT_DIR/sas.json"
[ "$(dp_json "$XT_DIR/sas.json" "[s['counters']['drops']['policy_mismatch'] for s in j['sas'] if s['spi'] == 0x2001][0] >= 1")" = True ] ||
	xt_fail "the BU for another home address is not counted as a selector mismatch on SA 0x2001"
xt_exec ha nft list tables >/dev/null 2>&1 || true

# the care-of address is bound to the BU: what ESP covers (the Alternate CoA option) must be the
# source. The answer to a refused BU goes to its source like any BA (mobility/mip6_ha.c says why):
# a BU from eth2 rewritten to come from COA1 is answered at COA1, where this mobile node listens too.
VICTIM=2001:db8:a::99
sas() { ctl --json show > "$XT_DIR/sas.json" && dp_json "$XT_DIR/sas.json" "sorted((s['spi'], s['src'], s['dst']) for s in j['sas'])"; }
sas0=$(sas) before=$(snap) rej0=$(cnt bu_rejected) acc0=$(cnt bu_accepted)
n1=$(nba)
dp_capture_start forged rt eth0
mn bu-spoof eth2 3 120 $COA1
wait_ba $((n1 + 1))
ba_is $((n1 + 1)) "b['status'] == 174 and b['seq'] == 3 and b['lifetime'] == 0 and b['dst'] == '$COA1' and \
b['iface'] == 'eth1' and b['rh_addr'] == '$HOA' and b['esp_spi'] == 0x2000 and b['cksum_ok']"
mn bu-alt eth2 4 120 $VICTIM
wait_ba $((n1 + 2))
ba_is $((n1 + 2)) "b['status'] == 174 and b['seq'] == 4 and b['lifetime'] == 0 and b['dst'] == '$COA2' and \
b['iface'] == 'eth2'"
xt_exec cn ping -6 -c 2 -i 0.2 -W 2 $HOA >/dev/null || xt_fail "ping cn -> mn after the refused BUs"
sleep 0.5
dp_capture_stop forged
[ "$(nba)" = $((n1 + 2)) ] || xt_fail "more than one BA for the two refused BUs"
[ "$(snap)" = "$before" ] || xt_fail "a refused BU changed the binding cache: $(snap) (was $before)"
[ "$(sas)" = "$sas0" ] || xt_fail "a refused BU moved an SA: $(sas) (was $sas0)"
[ "$(cnt bu_accepted)" = "$acc0" ] || xt_fail "a refused BU was counted accepted"
[ "$(cnt bu_rejected)" = $((rej0 + 2)) ] || xt_fail "the two 174 rejections not counted"
[ "$(b_json "j['rejected'].get('174', 0)")" = 2 ] || xt_fail "no 174 in the rejected counters: $(cat "$XT_DIR/b.json")"
# the refusals by reason (both 174s: the Alternate CoA is not the packet's source; the 135 above: a
# sequence number not newer), in the listing and in the log line of each refusal
[ "$(b_json "(j['refused'].get('alt-coa-not-source', 0), j['refused'].get('sequence', 0))")" = "(2, 1)" ] ||
	xt_fail "the 174 refusals not listed by reason: $(cat "$XT_DIR/b.json")"
grep -q "Binding Update of $HOA refused: alt-coa-not-source" "$XT_DIR/xipsecd-ha.log" ||
	xt_fail "the refusal's log line does not name its reason: $(grep refused "$XT_DIR/xipsecd-ha.log")"
# towards the forged source the BA alone; towards the third party nothing; the tunnel stayed at COA2
n=$(timeout 60 tshark -r "$XT_DIR/forged.pcap" -Y "ipv6.dst == $COA1" 2>/dev/null | wc -l)
[ "$n" = 1 ] || xt_fail "$n packets to the forged source (only the BA 174 may go there)"
n=$(timeout 60 tshark -r "$XT_DIR/forged.pcap" -Y "ipv6.dst == $VICTIM" 2>/dev/null | wc -l)
[ "$n" = 0 ] || xt_fail "$n packets to the third party named in the Alternate CoA option"
n=$(timeout 60 tshark -r "$XT_DIR/forged.pcap" -Y "ipv6.dst == $COA2 && esp.spi == 0x3000" 2>/dev/null | wc -l)
[ "$n" -ge 2 ] || xt_fail "the tunnel did not stay at $COA2 ($n packets of SA 0x3000 there)"

# ---- 5. deregistration
mn bu eth2 6 0
wait_ba $((n0 + 4))
ba_is $((n0 + 4)) "b['status'] == 0 and b['seq'] == 6 and b['lifetime'] == 0"
[ "$(b_json "len(j['bindings'])")" = 0 ] || xt_fail "binding left after deregistration"
xt_exec ha ip -6 neigh show proxy | grep -q "$HOA" && xt_fail "proxy ND entry left after deregistration"
xt_exec cn ip -6 neigh flush dev eth0
xt_exec cn ping -6 -c 2 -i 0.3 -W 1 $HOA >/dev/null && xt_fail "cn still reaches the home address after deregistration"
xt_exec cn ip -6 neigh show $HOA dev eth0 | grep -q lladdr && xt_fail "the home agent still answers ND for the home address"
ctl --json show > "$XT_DIR/sas.json"
dp_json "$XT_DIR/sas.json" "[(s['spi'], s['dst']) for s in j['sas'] if s['spi'] == 0x3000]" | grep -q "'$HOA'" ||
	xt_fail "tunnel SA not moved home after deregistration"
# a correspondent with a stale neighbour entry still sends to the home agent: nothing is tunnelled
# (the SA has no care-of address), each packet counted
xt_exec cn ip -6 neigh replace $HOA lladdr "$(mac ha in0)" dev eth0 nud permanent
dp_capture_start late rt eth0
xt_exec cn ping -6 -c 3 -i 0.2 -W 1 $HOA >/dev/null && xt_fail "cn reaches the home address through a stale entry"
dp_capture_stop late
n=$(timeout 60 tshark -r "$XT_DIR/late.pcap" -Y esp 2>/dev/null | wc -l)
[ "$n" = 0 ] || xt_fail "$n ESP packets left the home agent for a mobile node without a binding"
ctl --json show > "$XT_DIR/sas.json"
[ "$(dp_json "$XT_DIR/sas.json" "[s['counters']['drops']['no_binding'] for s in j['sas'] if s['spi'] == 0x3000][0] >= 3")" = True ] ||
	xt_fail "packets for a mobile node without a binding not counted as no_binding"
xt_exec cn ip -6 neigh del $HOA dev eth0

# ---- 6. expiry of a short lifetime
mn bu eth2 7 8
wait_ba $((n0 + 5))
ba_is $((n0 + 5)) "b['status'] == 0 and b['lifetime'] == 8"
[ "$(b_json "len(j['bindings'])")" = 1 ] || xt_fail "no binding for the short lifetime"
no_binding() { [ "$(b_json "len(j['bindings'])")" = 0 ]; }
xt_wait 15 no_binding || xt_fail "the binding did not expire"
[ "$(cnt bindings_expired)" -ge 1 ] || xt_fail "expiry not counted"
xt_exec ha ip -6 neigh show proxy | grep -q "$HOA" && xt_fail "proxy ND entry left after expiry"
ctl --json show > "$XT_DIR/sas.json"
dp_json "$XT_DIR/sas.json" "[(s['spi'], s['dst']) for s in j['sas'] if s['spi'] == 0x3000]" | grep -q "'$HOA'" ||
	xt_fail "tunnel SA not moved home after expiry"
# ---- 7. the configuration changing under a binding: an SA of no mobile node coming and going leaves
# the binding and the tunnel where they are (the home agent does not read its mobile nodes again for
# it: dp_mip6_cfg.c mns_follow), a mobile node added by ipsecctl is taken up, one removed is dropped
mns() { [ "$(b_json "j['home_agent']['mobile_nodes']")" = "$1" ]; }
bound_at() { [ "$(b_json "[b['care_of_address'] for b in j['bindings'] if b['home_address'] == '$HOA'] == ['$1']")" = True ]; }
mn bu eth2 8 120
wait_ba $((n0 + 6))
ba_is $((n0 + 6)) "b['status'] == 0 and b['seq'] == 8"
bound_at $COA2 || xt_fail "no binding at $COA2 before the configuration changes: $(cat "$XT_DIR/b.json")"
mns 1 || xt_fail "mobile nodes before the changes: $(cat "$XT_DIR/b.json")"
ctl sa add esp tunnel from 2001:db8:9::1 to 2001:db8:9::2 spi 0x7000 in enc aes128gcm16 key "0x$(key)" ||
	xt_fail "adding an SA of no mobile node"
sleep 0.3
ctl sa delete esp 0x7000 dst 2001:db8:9::2 || xt_fail "deleting the SA of no mobile node"
sleep 0.3
bound_at $COA2 || xt_fail "an SA of no mobile node came and went: the binding did not stay: $(cat "$XT_DIR/b.json")"
ctl --json show > "$XT_DIR/sas.json"
dp_json "$XT_DIR/sas.json" "[(s['spi'], s['dst']) for s in j['sas'] if s['spi'] == 0x3000]" | grep -q "'$COA2'" ||
	xt_fail "the tunnel SA left the care-of address when an SA of no mobile node came and went"
HOA2=2001:db8:1::200
cat > "$XT_DIR/mn2.conf" <<EOF
home-agent $HA prefix 2001:db8:1::/64 lifetime 600
mobile-node $HOA2 \\
	signalling spi 0x2100:0x2101 enc aes128gcm16 key 0x$(key):0x$(key) \\
	tunnel spi 0x3100:0x3101 enc aes128gcm16 key 0x$(key):0x$(key)
EOF
ctl --new-keys load "$XT_DIR/mn2.conf" || xt_fail "ipsecctl load of a second mobile node"
xt_wait 5 mns 2 || xt_fail "the second mobile node was not taken up: $(cat "$XT_DIR/b.json")"
bound_at $COA2 || xt_fail "the first mobile node lost its binding when a second was added"
# the second one has no binding: an update of its tunnel SA in place does not send its traffic away
tun2_dst() { ctl --json show > "$XT_DIR/sas2.json" && dp_json "$XT_DIR/sas2.json" "[s['dst'] for s in j['sas'] if s['spi'] == 0x3100][0]"; }
at_home2() { [ "$(tun2_dst)" = "$HOA2" ]; }
at_home2 || xt_fail "the second mobile node's tunnel SA is not at home: $(tun2_dst)"
ctl sa migrate esp 0x3100 dst $HOA2 to $HA 2001:db8:f::99 || xt_fail "ipsecctl sa migrate of the second mobile node's tunnel SA"
xt_wait 5 at_home2 || xt_fail "a mobile node without a binding kept a tunnel moved away from home: $(tun2_dst)"
for spi in 0x2100 0x2101 0x3100 0x3101; do
	ctl --json show > "$XT_DIR/sas.json"
	dst=$(dp_json "$XT_DIR/sas.json" "[s['dst'] for s in j['sas'] if s['spi'] == $spi][0]")
	ctl sa delete esp "$spi" dst "$dst" || xt_fail "deleting SA $spi of the second mobile node"
done
xt_wait 5 mns 1 || xt_fail "the second mobile node was not dropped with its SAs: $(cat "$XT_DIR/b.json")"
bound_at $COA2 || xt_fail "the first mobile node lost its binding when the second was removed"

mn counts
sleep 0.3
grep -q '"bad": 0' "$XT_DIR/mn.log" || xt_fail "the mobile node could not decrypt something: $(grep '"ev": "bad"' "$XT_DIR/mn.log" | head -3)"
xt_log "registration, traffic, move, negatives, deregistration, expiry and configuration changes as RFC 6275 says"
exit 0
