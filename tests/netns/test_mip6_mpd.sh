#!/usr/bin/env bash
# tests/netns/test_mip6_mpd.sh: Mobile Prefix Discovery (RFC 6275 section 10.6) through the mobile
# node's signalling SA (RFC 3776 section 4.2), against a mobile node played by scapy
# (tests/netns/test_mip6_mn.py) on the bed of mip6_common.sh, whose home agent has two home prefixes
# here. Checked:
#  1. before it registers, the mobile node's protected Mobile Prefix Solicitation goes unanswered
#     (no binding: nothing to send the answer to) and is counted;
#  2. registered, its Solicitation is answered with a Mobile Prefix Advertisement to its care-of
#     address that scapy decrypts with the signalling SA (SPI 0x2000): the identifier echoed, a type
#     2 routing header with the home address, both home prefixes with L and A, a correct checksum;
#     between the home agent and the router both travel as ESP only (tshark finds no ICMPv6 146 or
#     147 in clear);
#  3. the same Solicitation unprotected gets no answer.
set -u
XT_BG_TIMEOUT=120
MIP6_HA_PREFIXES="prefix 2001:db8:1::/64 prefix 2001:db8:9::/48"
. "$top_srcdir/tests/netns/mip6_common.sh"

mpa_n() { grep -c '"ev": "mpa"' "$XT_DIR/mn.log"; }
mpa_have() { [ "$(mpa_n)" -ge "$1" ]; }
mpa() { grep '"ev": "mpa"' "$XT_DIR/mn.log" | sed -n "${1}p"; }
mpa_is() { # N EXPR: a python expression over the N-th advertisement (bound to a)
	mpa "$1" > "$XT_DIR/mpa.json"
	[ "$("$PYTHON" -c "import json,sys; a=json.load(open(sys.argv[1])); print($2)" "$XT_DIR/mpa.json")" = True ] ||
		xt_fail "MPA #$1: not $2: $(cat "$XT_DIR/mpa.json")"
}

# ---- 1. not registered: no answer
mn mps eth1 7
xt_wait 5 grep -q '"cmd": "mps"' "$XT_DIR/mn.log" || xt_fail "the mobile node sent no solicitation"
sleep 1
[ "$(mpa_n)" = 0 ] || xt_fail "an advertisement before registration: $(mpa 1)"
[ "$(cnt mps_dropped)" = 1 ] || xt_fail "mps_dropped is $(cnt mps_dropped), not 1"

# ---- 2. registered: the advertisement, through the signalling SA
mn bu eth1 1 120
wait_ba 1
dp_capture_start ha-rt rt eth0
mn mps eth1 4242
xt_wait 5 mpa_have 1 || { tail -5 "$XT_DIR/mn.log" >&2; tail -20 "$XT_DIR/xipsecd-ha.log" >&2
	bindings >&2; xt_fail "no Mobile Prefix Advertisement"; }
dp_capture_stop ha-rt
mpa_is 1 "a['type'] == 147 and a['code'] == 0 and a['id'] == 4242 and a['src'] == '$HA' and \
a['dst'] == '$COA1' and a['iface'] == 'eth1' and a['esp_spi'] == 0x2000 and a['rh_type'] == 2 and \
a['rh_segleft'] == 1 and a['rh_addr'] == '$HOA' and a['cksum_ok'] and a['rest'] == 0"
mpa_is 1 "sorted(p['prefix'] for p in a['prefixes']) == ['2001:db8:1::/64', '2001:db8:9::/48'] and \
all(p['L'] == 1 and p['A'] == 1 and p['valid'] >= p['preferred'] > 0 for p in a['prefixes'])"
[ "$(cnt mps_received)" = 2 ] && [ "$(cnt mpa_sent)" = 1 ] ||
	xt_fail "counters: mps_received $(cnt mps_received), mpa_sent $(cnt mpa_sent)"
clear=$(timeout 60 tshark -r "$XT_DIR/ha-rt.pcap" -Y "icmpv6.type == 146 || icmpv6.type == 147" 2>/dev/null | wc -l)
esp=$(timeout 60 tshark -r "$XT_DIR/ha-rt.pcap" -Y "esp.spi == 0x2000 || esp.spi == 0x2001" 2>/dev/null | wc -l)
[ "$clear" = 0 ] && [ "$esp" -ge 2 ] ||
	xt_fail "between the home agent and the router: $clear ICMPv6 146/147 in clear, $esp signalling ESP packets"

# ---- 3. unprotected: no answer
mn mps-plain eth1 99
xt_wait 5 grep -q '"cmd": "mps-plain"' "$XT_DIR/mn.log" || xt_fail "the mobile node sent no plain solicitation"
sleep 1
[ "$(mpa_n)" = 1 ] || xt_fail "an unprotected solicitation was answered: $(mpa 2)"
[ "$(cnt mps_received)" = 2 ] || xt_fail "an unprotected solicitation reached the home agent"
xt_log "PASS"
