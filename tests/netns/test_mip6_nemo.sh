#!/usr/bin/env bash
# tests/netns/test_mip6_nemo.sh: a NEMO mobile router (RFC 3963) through xipsecd's home agent, on
# the bed of mip6_common.sh: the mobile node played by scapy (tests/netns/test_mip6_mn.py) is a
# mobile router owning 2001:db8:77::/64 and 2001:db8:78::/64 (`router-prefix` in its mobile-node
# statement); its namespace forwards for a host mh (2001:db8:77::10) behind it, cn routes the
# mobile networks to the home agent. Checked:
#  1. a Binding Update with R naming 2001:db8:99::/64, which the router does not own, gets 142 and
#     changes nothing: no binding, no policy for any of its networks; it is counted (prefix-not-owned);
#  2. one naming 2001:db8:77::/64 is accepted (0) with R in the acknowledgement (RFC 3963 4.2), and
#     the home agent adds exactly the protect policies of that prefix (out and fwd, the tunnel's
#     reqid), none for 2001:db8:78::/64;
#  3. ping and TCP between mh and cn go through the tunnel: between the home agent and the router
#     only ESP, and tshark, with the keys ipsecctl exports, finds mh's packets inside the tunnel SA;
#  4. the router sending from its other network (2001:db8:78::1, owned but not registered) through
#     the same tunnel is dropped after decapsulation (policy mismatch, counted on the SA);
#  5. a refresh naming 2001:db8:78::/64 alone moves the routes: 77 gone, 78 there; a reload of the
#     configuration, which removes them as manual policies the file lacks, finds them put back;
#  6. tshark decodes the Binding Updates and Acknowledgements it decrypts: R, the Mobile Network
#     Prefix options, status, sequence and lifetime, field by field;
#  7. deregistration removes every route of the router's networks; mh reaches cn no more;
#  8. a Binding Update naming no prefix registers all the router owns (implicit mode), and xipsecd
#     stopping removes their routes.
set -u
XT_BG_TIMEOUT=120
MIP6_MN_MORE="router-prefix 2001:db8:77::/64 router-prefix 2001:db8:78::/64"
MH=2001:db8:77::10
mip6_topo_more() {
	xt_ns_add mh
	xt_veth mn eth3 mh eth0
	xt_exec mn ip -6 addr add 2001:db8:77::1/64 dev eth3 nodad
	xt_exec mn ip -6 addr add 2001:db8:78::1/64 dev eth3 nodad
	xt_exec mn sysctl -qw net.ipv6.conf.all.forwarding=1
	xt_exec mh ip -6 addr add $MH/64 dev eth0 nodad
	xt_exec mh ip -6 route add default via 2001:db8:77::1
	xt_exec mh ethtool -K eth0 tx off >/dev/null
	xt_exec mn ethtool -K eth3 tx off >/dev/null
	xt_exec cn ip -6 route add 2001:db8:77::/64 via 2001:db8:1::1
	xt_exec cn ip -6 route add 2001:db8:78::/64 via 2001:db8:1::1
}
. "$top_srcdir/tests/netns/mip6_common.sh"

# routes: the protect policies of the tunnel's reqid (0x3000) for a mobile network, as "dir dst-or-src"
routes() {
	ctl --json show policies > "$XT_DIR/pol.json" || xt_fail "ipsecctl show policies"
	dp_json "$XT_DIR/pol.json" "' '.join(sorted(p['dir'] + ' ' + (p['selector']['dst'] if p['dir'] == 'out' else \
p['selector']['src']) for p in j['policies'] if p['action'] == 'protect' and p.get('reqid') == 0x3000 and \
'2001:db8:1::100/128' not in (p['selector']['src'], p['selector']['dst'])))"
}
routes_are() { [ "$(routes)" = "$1" ] || xt_fail "$2: routes '$(routes)', not '$1'"; }
sa_drop() { ctl --json show sa > "$XT_DIR/sa.json" && dp_json "$XT_DIR/sa.json" \
	"sum(v for s in j['sas'] if s['spi'] == 0x3001 for k, v in s['counters']['drops'].items() if k.lower() == '$1')"; }

routes_are "" "before registration"
# the owned networks are the discard policies ipsecctl made
nets=$(dp_json "$XT_DIR/pol.json" "sorted(p['selector']['dst'] for p in j['policies'] \
	if p['action'] == 'discard' and p.get('reqid') == 0x3000)")
[ "$nets" = "['2001:db8:77::/64', '2001:db8:78::/64']" ] || xt_fail "the router's networks: $nets"
xt_exec cn ping -6 -c 1 -W 1 $MH >/dev/null 2>&1 && xt_fail "mh reachable before the router registers"

dp_capture_start sig rt eth0
# ---- 1. a network the router does not own: 142, nothing changes
mn bu eth1 1 120 AHR 2001:db8:99::/64
wait_ba 1
ba_is 1 "b['status'] == 142 and b['seq'] == 1 and b['cksum_ok'] and b['esp_spi'] == 0x2000"
[ "$(b_json "len(j['bindings'])")" = 0 ] || xt_fail "a binding after 142: $(cat "$XT_DIR/b.json")"
[ "$(b_json "(j['refused'].get('prefix-not-owned'), j['rejected'].get('142'))")" = "(1, 1)" ] ||
	xt_fail "the refusal is not counted by reason and status: $(cat "$XT_DIR/b.json")"
routes_are "" "after 142"

# ---- 2. its own: accepted with R, the routes of that prefix alone
mn bu eth1 2 120 AHR 2001:db8:77::/64
wait_ba 2
ba_is 2 "b['status'] == 0 and b['seq'] == 2 and b['lifetime'] == 120 and b['flags'] == 2 and b['cksum_ok'] and \
b['dst'] == '$COA1' and b['rh_addr'] == '$HOA'"
routes_are "fwd 2001:db8:77::/64 out 2001:db8:77::/64" "registered 77"

# ---- 3. mh <-> cn through the tunnel, only ESP outside
dp_capture_start ha-rt rt eth0
xt_exec mh ping -6 -c 3 -i 0.2 -W 2 $CN >/dev/null || { tail -3 "$XT_DIR/mn.log" >&2; xt_fail "ping mh -> cn"; }
xt_exec cn ping -6 -c 3 -i 0.2 -W 2 $MH >/dev/null || xt_fail "ping cn -> mh"
dp_tcp cn mh $MH 100000
dp_tcp mh cn $CN 100000
dp_capture_stop ha-rt
n=$(dp_only_ipsec "$XT_DIR/ha-rt.pcap") || xt_fail "plaintext between the home agent and the router"
[ "$n" -ge 20 ] || xt_fail "only $n ESP packets between the home agent and the router"
dp_inner "$XT_DIR/ha-rt.pcap" "$(dp_tshark_args ha | tr '\n' ' ')" > "$XT_DIR/inner.txt"
for spi in 12288 12289; do
	awk -F'\t' -v spi=$spi -v a=$MH -v b=$CN '($1 == spi || $1 == sprintf("0x%08x", spi)) && ($8 == a || $8 == b) { n++ }
		END { exit !(n >= 10) }' "$XT_DIR/inner.txt" ||
		xt_fail "tshark finds no mh/cn packets in tunnel SA $spi: $(head -5 "$XT_DIR/inner.txt")"
done

# ---- 4. the router's other network is not registered: its packets are dropped after decapsulation
before=$(sa_drop policy_mismatch)
xt_exec mn ping -6 -c 2 -i 0.2 -W 1 -I 2001:db8:78::1 $CN >/dev/null 2>&1 && xt_fail "an unregistered network reached cn"
[ "$(sa_drop policy_mismatch)" -ge $((before + 2)) ] ||
	xt_fail "policy_mismatch of the tunnel SA: $before, then $(sa_drop policy_mismatch)"

# ---- 5. a refresh naming 78 alone: the routes follow
mn bu eth1 3 120 AHR 2001:db8:78::/64
wait_ba 3
ba_is 3 "b['status'] == 0 and b['seq'] == 3 and b['flags'] == 2"
routes_are "fwd 2001:db8:78::/64 out 2001:db8:78::/64" "refreshed with 78"
xt_exec mn ping -6 -c 2 -i 0.2 -W 2 -I 2001:db8:78::1 $CN >/dev/null || xt_fail "ping from the registered 78"
# a reload of the configuration removes the manual policies the file does not have, the routes
# among them: the home agent puts them back, the binding stays
ctl reload "$XT_DIR/ha.conf" || xt_fail "ipsecctl reload"
routes_78() { [ "$(routes)" = "fwd 2001:db8:78::/64 out 2001:db8:78::/64" ]; }
xt_wait 5 routes_78 || xt_fail "routes after a reload: '$(routes)'"
[ "$(b_json "len(j['bindings'])")" = 1 ] || xt_fail "the binding after a reload: $(cat "$XT_DIR/b.json")"

# ---- 7. deregistration: no route is left
mn bu eth1 4 0 AHR
wait_ba 4
ba_is 4 "b['status'] == 0 and b['seq'] == 4 and b['lifetime'] == 0"
routes_are "" "after deregistration"
xt_exec mh ping -6 -c 1 -W 1 $CN >/dev/null 2>&1 && xt_fail "mh reaches cn after deregistration"
dp_capture_stop sig

# ---- 8. implicit mode (no prefix named): every network it owns; xipsecd stopping removes them
mn bu eth1 5 120 AHR
wait_ba 5
ba_is 5 "b['status'] == 0 and b['seq'] == 5 and b['flags'] == 2"
routes_are "fwd 2001:db8:77::/64 fwd 2001:db8:78::/64 out 2001:db8:77::/64 out 2001:db8:78::/64" "implicit mode"
xt_exec mh ping -6 -c 2 -i 0.2 -W 2 $CN >/dev/null || xt_fail "ping mh -> cn in implicit mode"
xt_stop xipsecd-ha
routes_are "" "after xipsecd stopped"

# ---- 6. tshark's reading of the signalling (decrypted with the exported keys)
eval "timeout 60 tshark -r '$XT_DIR/sig.pcap' $(dp_tshark_args ha | tr '\n' ' ') -Y 'mip6.mhtype == 5 || mip6.mhtype == 6' \
	-E occurrence=a -E aggregator=, -T fields -e mip6.mhtype -e mip6.bu.seqnr -e mip6.nemo.bu.r_flag \
	-e mip6.nemo.mnp.mnp -e mip6.nemo.mnp.pfl -e mip6.ba.status -e mip6.ba.seqnr -e mip6.nemo.ba.r_flag \
	-e mip6.ba.k_flag -e mip6.ba.lifetime" 2>/dev/null | tr -s '\t' ' ' | sed 's/ $//' > "$XT_DIR/sig.txt"
cat > "$XT_DIR/sig.want" <<EOF
5 1 1 2001:db8:99:: 64
6 142 1 1 0 0
5 2 1 2001:db8:77:: 64
6 0 2 1 0 30
5 3 1 2001:db8:78:: 64
6 0 3 1 0 30
5 4 1
6 0 4 1 0 0
EOF
sed -i -e 's/True/1/g' -e 's/False/0/g' "$XT_DIR/sig.txt"
diff -u "$XT_DIR/sig.want" "$XT_DIR/sig.txt" >&2 || xt_fail "tshark's Binding Updates and Acknowledgements differ"
xt_log "PASS"
