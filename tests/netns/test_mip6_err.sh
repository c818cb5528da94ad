#!/usr/bin/env bash
# tests/netns/test_mip6_err.sh: the home agent's answers to Mobility Header packets it cannot take
# (RFC 6275 9.2), on mip6_common.sh's bed, against scapy's mobile node (test_mip6_mn.py), which
# sends ESP-protected Binding Updates broken after scapy built them and decodes the answers with
# scapy's Binding Error and ICMPv6 layers. Checked, after a registration:
#  1. an unknown MH type: a Binding Error, status 2, ESP-protected by the signalling SA (0x2000),
#     to the care-of address with a type 2 routing header naming the home address, checksum right;
#  2. a Payload Proto that is not 59 and a Header Len below the type's minimum: an ICMPv6 Parameter
#     Problem, code 0, pointing at that field of the packet it quotes, to the home address through
#     the mobile node's tunnel (SA 0x3000), checksum right; a wrong checksum: nothing;
#  3. a burst of 12 unknown types gets at most the bucket's worth (--mip6-error-burst 4, one a
#     second refilled), the rest counted as held back; every answer counted by kind in `ipsecctl
#     show bindings`, in `ipsecctl metrics` (the counters view) and in an snmpwalk of XIPSEC-MIB
#     (snmpd with xipsec-snmpd), and the binding still there;
#  4. the mobile node's own counters (one Binding Update accepted, its replay refused with 135) in
#     `ipsecctl show bindings`, in `ipsecctl metrics` (home_address label) and in XIPSEC-MIB's node
#     tables and BA status table.
set -u
XT_BG_TIMEOUT=90
MIP6_HA_OPTS="--mip6-error-burst 4 --mip6-error-rate 1"
. "$top_srcdir/tests/netns/mip6_common.sh"
xt_require snmpd snmpwalk

nev() { grep -c "\"ev\": \"$1\"" "$XT_DIR/mn.log"; }
ev_have() { [ "$(nev "$1")" -ge "$2" ]; }
ev_is() { # EV N EXPR: a python expression over the N-th event EV (bound to b)
	grep "\"ev\": \"$1\"" "$XT_DIR/mn.log" | sed -n "${2}p" > "$XT_DIR/ev.json"
	[ "$("$PYTHON" -c "import json,sys; b=json.load(open(sys.argv[1])); print($3)" "$XT_DIR/ev.json")" = True ] ||
		xt_fail "$1 #$2: not $3: $(cat "$XT_DIR/ev.json")"
}
wait_ev() { # EV N WHAT
	xt_wait 5 ev_have "$1" "$2" || { tail -5 "$XT_DIR/mn.log" >&2; tail -20 "$XT_DIR/xipsecd-ha.log" >&2
		xt_fail "no $3"; }
}

mn bu eth1 1 120
wait_ba 1
ba_is 1 "b['status'] == 0"
mn bu eth1 1 120   # the same sequence number again: refused, 135, counted for this node
wait_ba 2
ba_is 2 "b['status'] == 135"

# ---- 1. unknown MH type: Binding Error 2
mn mh-bad eth1 type
wait_ev be 1 "Binding Error for an unknown MH type"
ev_is be 1 "b['status'] == 2 and b['hoa'] == '$HOA' and b['src'] == '$HA' and b['dst'] == '$COA1' and \
b['rh_type'] == 2 and b['rh_segleft'] == 1 and b['rh_addr'] == '$HOA' and b['esp_spi'] == 0x2000 and b['cksum_ok']"

# ---- 2. Parameter Problems; a bad checksum goes unanswered
# the quoted packet is the decrypted Binding Update: IPv6 (40) / Destination Options (24) / MH
quote="bytes.fromhex(b['quote'])[:1] == b'\\x60' and bytes.fromhex(b['quote'])[8:24] == __import__('ipaddress').ip_address('$COA1').packed"
mn mh-bad eth1 proto
wait_ev pp 1 "Parameter Problem for a Payload Proto of 6"
ev_is pp 1 "b['code'] == 0 and b['ptr'] == 64 and b['src'] == '$HA' and b['dst'] == '$HOA' and \
b['esp_spi'] == 0x3000 and b['cksum_ok'] and bytes.fromhex(b['quote'])[64] == 6 and $quote"
mn mh-bad eth1 short
wait_ev pp 2 "Parameter Problem for a Header Len below a Binding Update's"
ev_is pp 2 "b['code'] == 0 and b['ptr'] == 65 and bytes.fromhex(b['quote'])[65] == 0 and b['cksum_ok'] and $quote"
mn mh-bad eth1 cksum
xt_wait 5 grep -q '"kind": "cksum"' "$XT_DIR/mn.log" || xt_fail "the mobile node did not send the bad checksum"
sleep 1
[ "$(nev be)" = 1 ] && [ "$(nev pp)" = 2 ] || xt_fail "a bad checksum was answered: $(tail -3 "$XT_DIR/mn.log")"
[ "$(b_json "j['dropped'].get('bad-checksum', 0)")" = 1 ] || xt_fail "the bad checksum not counted: $(cat "$XT_DIR/b.json")"

# ---- 3. a burst gets at most the bucket's worth
sleep 4.5 # the bucket (4, one a second) full again
mn mh-bad eth1 type 12
xt_wait 10 grep -q '"cmd": "mh-bad", "kind": "type", "esp_seq": 1[0-9]' "$XT_DIR/mn.log" ||
	xt_fail "the mobile node did not send its burst"
sleep 1
burst=$(( $(nev be) - 1 ))
# 12 sent 20 ms apart take about 0.3 s: at most one token more comes in meanwhile
[ "$burst" -ge 4 ] && [ "$burst" -le 5 ] || xt_fail "a burst of 12 got $burst Binding Errors, not 4 or 5"
sent=$(cnt error_sent_be_unknown_mh_type) limited=$(cnt error_limited_be_unknown_mh_type)
share=$(cnt queue_drop_share)
[ "$sent" = $((burst + 1)) ] || xt_fail "error_sent_be_unknown_mh_type $sent, the mobile node got $((burst + 1))"
[ $((sent + limited + share)) = 13 ] || xt_fail "sent $sent + held back $limited + queue share drops $share is not the 13 sent"
[ "$limited" -ge 1 ] || xt_fail "nothing held back by the bucket"
[ "$(cnt error_sent_pp_payload_proto)" = 1 ] && [ "$(cnt error_sent_pp_header_len)" = 1 ] ||
	xt_fail "Parameter Problems not counted: $(cat "$XT_DIR/b.json")"
[ "$(b_json "[(x['home_address'], x['care_of_address']) for x in j['bindings']]")" = "[('$HOA', '$COA1')]" ] ||
	xt_fail "the binding did not survive the errors: $(cat "$XT_DIR/b.json")"
[ "$(b_json "[(x['home_address'], x['bu_accepted'], x['bu_refused'], x['moves'], x['ba_status'], x['last_bu_age'] is not None) for x in j['mobile_nodes']]")" = "[('$HOA', 1, 1, 0, {'0': 1, '135': 1}, True)]" ] ||
	xt_fail "the mobile node's own counters: $(cat "$XT_DIR/b.json")"

# the same counters in `ipsecctl metrics`, read from the counters view as the exporter reads it
sleep 0.7 # a reading is at most 500 ms old
ctl metrics --stats "$XIPSEC_STATS" > "$XT_DIR/metrics.txt" || xt_fail "ipsecctl metrics --stats"
for want in "xipsec_home_agent_up 1" "xipsec_home_agent_bindings 1" \
	"xipsec_home_agent_events_total{kind=\"be_sent\"} $sent" \
	"xipsec_home_agent_events_total{kind=\"pp_sent\"} 2" \
	"xipsec_home_agent_events_total{kind=\"errors_limited\"} $limited" \
	"xipsec_home_agent_binding_acks_total{status=\"0\"} 1" \
	"xipsec_home_agent_node_binding_updates_total{home_address=\"$HOA\",result=\"accepted\"} 1" \
	"xipsec_home_agent_node_binding_updates_total{home_address=\"$HOA\",result=\"refused\"} 1" \
	"xipsec_home_agent_node_binding_acks_total{home_address=\"$HOA\",status=\"135\"} 1" \
	"xipsec_home_agent_node_moves_total{home_address=\"$HOA\"} 0" \
	"xipsec_home_agent_node_bound{home_address=\"$HOA\"} 1" "xipsec_home_agent_nodes_left_out 0"; do
	grep -qxF "$want" "$XT_DIR/metrics.txt" || xt_fail "ipsecctl metrics lacks '$want': $(grep home_agent "$XT_DIR/metrics.txt")"
done
grep -q '^# HELP xipsec_home_agent_events_total ' "$XT_DIR/metrics.txt" || xt_fail "no HELP line for the home agent's events"

# and in XIPSEC-MIB: Net-SNMP's snmpd as the master agent, xipsec-snmpd reading the same view,
# snmpwalk (Net-SNMP's) of xipsecGlobals
AGENT="$top_builddir/snmpd/xipsec-snmpd"
[ -x "$AGENT" ] || xt_fail "xipsec-snmpd not built (configure found no libsnmp-dev)"
MIBDIRS="$top_srcdir/snmpd/mib/ietf:$top_srcdir/snmpd/mib" SD="$XT_DIR/snmp"
mkdir -p "$SD/persist" "$SD/client/cert_indexes"
printf '%s\n' "agentaddress udp:127.0.0.1:1161" "master agentx" "agentXSocket $SD/agentx.sock" \
	"rocommunity xsmip6 127.0.0.1 .1.3.6.1.4.1.32473" > "$SD/snmpd.conf"
xt_bg ha snmpd env SNMP_PERSISTENT_DIR="$SD/persist" MIBS= snmpd -f -C -c "$SD/snmpd.conf" -Lf "$SD/snmpd.log"
xt_wait 10 test -S "$SD/agentx.sock" || xt_fail "snmpd did not open its AgentX socket: $(cat "$SD/snmpd.log")"
xt_bg ha snmp-agent "$AGENT" --agentx-socket "$SD/agentx.sock" --stats "$XIPSEC_STATS" --no-ike --no-sa --ping 1
xt_wait 10 grep -q "subagent connected" "$XT_DIR/snmp-agent.log" || xt_fail "xipsec-snmpd did not connect"
xt_exec ha env SNMP_PERSISTENT_DIR="$SD/client" snmpwalk -v2c -c xsmip6 -m XIPSEC-MIB -M "$MIBDIRS" -OqsU -t 3 -r 1 \
	127.0.0.1:1161 XIPSEC-MIB::xipsecGlobals > "$SD/walk.txt" || xt_fail "snmpwalk of xipsecGlobals"
for want in "xipsecHomeAgentUp.0 true" "xipsecHomeAgentBindings.0 1" "xipsecHaBeSent.0 $sent" \
	"xipsecHaPpSent.0 2" "xipsecHaErrorsLimited.0 $limited" "xipsecHaBuAccepted.0 1"; do
	grep -qxF "$want" "$SD/walk.txt" || xt_fail "snmpwalk lacks '$want': $(grep -i 'ha\|home' "$SD/walk.txt")"
done
# the node tables, indexed by ipv6(2), 16, the home address's octets (-On: numeric, no MIB parsing)
hoa_oid=$("$PYTHON" -c "import ipaddress; print('.'.join(str(b) for b in ipaddress.ip_address('$HOA').packed))")
for t in 7 8 9; do
	xt_exec ha env SNMP_PERSISTENT_DIR="$SD/client" snmpwalk -v2c -c xsmip6 -On -Oqe -t 3 -r 1 \
		127.0.0.1:1161 .1.3.6.1.4.1.32473.1.$t >> "$SD/walk-ha.txt" || xt_fail "snmpwalk of xipsecObjects.$t"
done
for want in ".1.3.6.1.4.1.32473.1.7.1.2.0 1" ".1.3.6.1.4.1.32473.1.7.1.2.135 1" \
	".1.3.6.1.4.1.32473.1.8.1.3.2.16.$hoa_oid 1" ".1.3.6.1.4.1.32473.1.8.1.4.2.16.$hoa_oid 1" \
	".1.3.6.1.4.1.32473.1.8.1.5.2.16.$hoa_oid 0" ".1.3.6.1.4.1.32473.1.8.1.7.2.16.$hoa_oid 1" \
	".1.3.6.1.4.1.32473.1.9.1.2.2.16.$hoa_oid.0 1" ".1.3.6.1.4.1.32473.1.9.1.2.2.16.$hoa_oid.135 1"; do
	grep -qxF "$want" "$SD/walk-ha.txt" || xt_fail "snmpwalk of the home agent's tables lacks '$want': $(cat "$SD/walk-ha.txt")"
done
grep -q "^.1.3.6.1.4.1.32473.1.8.1.6.2.16.$hoa_oid [0-9]" "$SD/walk-ha.txt" || xt_fail "no last Binding Update age"

mn counts
sleep 0.3
grep -q '"bad": 0' "$XT_DIR/mn.log" || xt_fail "the mobile node could not decrypt something: $(grep '"ev": "bad"' "$XT_DIR/mn.log" | head -3)"
xt_log "Binding Error 2, Parameter Problems at Payload Proto and Header Len, silence for a bad checksum, rate-limited and counted"
exit 0
