#!/usr/bin/env bash
# tests/netns/test_mip6_ha2.sh: one xipsecd, two home agent addresses (two SADB home agent records,
# ipsecctl's home-agent statement twice), each with its own home prefix on the home link, on
# mip6_common.sh's bed with scapy's mobile node (test_mip6_mn.py):
#
#   cn (2001:db8:1::10, 2001:db8:2::10) -- [in0 | out0] ha -- rt -- mn (care-of 2001:db8:a::100)
#   record 0: 2001:db8:1::1 prefix 2001:db8:1::/64 lifetime 600
#   record 1: 2001:db8:2::1 prefix 2001:db8:2::/64 lifetime 300   home address 2001:db8:2::100
#
# Checked:
#  1. `ipsecctl show home-agent` lists both records, xipsecd serves both (its bindings answer);
#  2. the mobile node, whose home address is in the second prefix, registers with the second
#     address: BA status 0 from 2001:db8:2::1 (scapy decodes it), its lifetime capped by that
#     record's 300 s (the first record's 600 s would have granted 400);
#  3. cn pings the home address through the tunnel: only ESP between the home agent and the router,
#     and tshark decrypts cn's packets in the tunnel SA with the keys ipsecctl exports.
set -u
XT_BG_TIMEOUT=60
HA2=2001:db8:2::1
MIP6_HOA=2001:db8:2::100
MIP6_MN_HA=$HA2
MIP6_HA_MORE="home-agent $HA2 prefix 2001:db8:2::/64 lifetime 300"
mip6_topo_more() {
	xt_exec ha ip -6 addr add $HA2/64 dev in0 nodad
	xt_exec cn ip -6 addr add 2001:db8:2::10/64 dev eth0 nodad
	xt_exec rt ip -6 route add 2001:db8:2::/64 via 2001:db8:f::1
}
. "$top_srcdir/tests/netns/mip6_common.sh"
CN2=2001:db8:2::10
# the mobile node reaches its home link's second prefix through the tunnel too
xt_exec mn ip -6 route add 2001:db8:2::/64 dev tun0

# ---- 1. both records, both served
ctl --json show home-agent > "$XT_DIR/ha.json" || xt_fail "ipsecctl show home-agent"
[ "$(dp_json "$XT_DIR/ha.json" "[(h['address'], h['prefixes'], h['lifetime']) for h in j['home_agents']]")" = \
  "[('$HA', ['2001:db8:1::/64'], 600), ('$HA2', ['2001:db8:2::/64'], 300)]" ] ||
	xt_fail "ipsecctl show home-agent: $(cat "$XT_DIR/ha.json")"
ctl --ctl "$XT_DIR/ha.sock" show bindings > "$XT_DIR/b.txt" || xt_fail "ipsecctl show bindings"
for a in $HA $HA2; do
	grep -q "$a" "$XT_DIR/b.txt" || xt_fail "xipsecd does not serve $a: $(cat "$XT_DIR/b.txt")"
done

# ---- 2. registration with the second address, its record's lifetime
mn bu eth1 1 400
wait_ba 1
ba_is 1 "b['status'] == 0 and b['seq'] == 1 and b['lifetime'] == 300 and b['src'] == '$HA2' and \
b['dst'] == '$COA1' and b['rh_addr'] == '$HOA' and b['esp_spi'] == 0x2000 and b['cksum_ok']"
[ "$(b_json "[(x['home_address'], x['care_of_address'], x['lifetime']) for x in j['bindings']]")" = \
  "[('$HOA', '$COA1', 300)]" ] || xt_fail "binding after registration: $(cat "$XT_DIR/b.json")"
xt_exec ha ip -6 neigh show proxy | grep -q "$HOA" || xt_fail "no proxy ND entry for the home address"

# ---- 3. traffic through the tunnel, only ESP between home agent and router
dp_capture_start ha-rt rt eth0
xt_exec cn ping -6 -c 5 -i 0.2 -W 2 -I $CN2 $HOA >/dev/null ||
	{ tail -3 "$XT_DIR/mn.log" >&2; xt_fail "ping cn -> mn (home address in the second prefix)"; }
dp_capture_stop ha-rt
n=$(dp_only_ipsec "$XT_DIR/ha-rt.pcap") || xt_fail "plaintext between the home agent and the router"
[ "$n" -ge 10 ] || xt_fail "only $n ESP packets between the home agent and the router"
dp_inner "$XT_DIR/ha-rt.pcap" "$(dp_tshark_args ha | tr '\n' ' ')" > "$XT_DIR/inner.txt"
awk -F'\t' -v cn=$CN2 '($1 == "0x00003000" || $1 == 12288) && $8 == cn { n++ } END { exit !(n >= 5) }' "$XT_DIR/inner.txt" ||
	xt_fail "tshark does not decrypt cn's packets in the tunnel SA 0x3000: $(head -5 "$XT_DIR/inner.txt")"

xt_log "two home agent addresses in one xipsecd: the second serves its prefix's mobile node, lifetime capped by its record, traffic tunnelled"
exit 0
