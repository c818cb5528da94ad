#!/usr/bin/env bash
# tests/netns/test_mip6_ike.sh: a mobile node keyed by IKEv2 (RFC 4877) at xipsecd's home agent, its
# SAs negotiated by xipsec-iked on the home agent and on the mobile node (libcharon's IKEv2 on both
# sides; below, why not stock charon in mn), its SPIs and keys read from mn's SADB,
# its Binding Updates sent by scapy (test_mip6_mn.py) with those keys; the network of
# test_mip6_common.sh. The home agent's swanctl.conf gives identity mn-a.example the home address
# 2001:db8:1::100 and mn-b.example 2001:db8:1::200 (kernel_sadb_mip6.c's convention). Checked:
#  1. the IKE_SA and both CHILD_SAs (transport_proxy signalling, tunnel) come up, and the home
#     agent's SADB holds them flagged mobile (the SPIs mn's SADB holds);
#  2. a BU in the IKE-keyed signalling SA is answered BA status 0, field by field, and the binding
#     is listed; a ping and a TCP transfer cn <-> mn through the tunnel, only ESP between the home
#     agent and the router;
#  3. a move with the K bit: BA with K, the home agent's IKE SA follows the care-of address (no
#     IKE_SA_INIT; the home agent's IKE messages go to the new address, and mn's IKE SA, answering
#     them, runs from it too); both CHILD_SAs rekeyed by
#     the home agent under the binding: it stays, the next BU in the new signalling SA is answered 0
#     and the new tunnel carries a ping;
#  4. deregistration: BA, the binding gone;
#  5. a node authenticated as mn-a.example that asks for mn-b's home address gets no CHILD_SA: no SA
#     installed on either side, no binding;
#  6. a connection against the convention's rules (mn-c: MOBIKE on) gets no SA, and xipsec-iked's log
#     names the connection, the child and the rule.
set -u
XT_BG_TIMEOUT=120
. "$top_srcdir/tests/netns/mip6_ike_common.sh"

HOA=2001:db8:1::100 HOB=2001:db8:1::200 HOC=2001:db8:1::300
PSK_A=$(head -c 16 /dev/urandom | xxd -p) PSK_B=$(head -c 16 /dev/urandom | xxd -p)
PSK_C=$(head -c 16 /dev/urandom | xxd -p)

mip6_topo
ctl() { timeout 30 "$CTL" --sadb "$SADB" "$@"; }
echo "home-agent $HA prefix 2001:db8:1::/64 lifetime 600" > "$XT_DIR/ha.conf"
ctl load "$XT_DIR/ha.conf" || xt_fail "ipsecctl load of the home agent"
mip6_start_ha -v

# the home agent's xipsec-iked on the same SADB
ike_dirs ha "$SADB"
ike_sconf ha "install_routes = no"
mnconn() { # NAME ID HOA [MOBIKE]
	cat <<EOF
  $1 {
    version = 2
    mobike = ${4:-no}
    local_addrs = $HA
    proposals = aes128gcm16-prfsha256-ecp256
    local { auth = psk
      id = ha.example }
    remote { auth = psk
      id = $2 }
    children {
      mip6-signalling { mode = transport_proxy
        local_ts = $HA/128[135]
        remote_ts = $3/128[135]
        esp_proposals = aes128gcm16 }
      mip6-tunnel { mode = tunnel
        local_ts = ::/0
        remote_ts = $3/128
        esp_proposals = aes128gcm16 }
    }
  }
EOF
}
{
	echo "connections {"
	mnconn mn-a mn-a.example $HOA
	mnconn mn-b mn-b.example $HOB
	mnconn mn-c mn-c.example $HOC yes # against the rules: MOBIKE on
	echo "}"
	echo "secrets {"
	echo "  ike-a { id-1 = ha.example
    id-2 = mn-a.example
    secret = 0x$PSK_A }"
	echo "  ike-c { id-1 = ha.example
    id-2 = mn-c.example
    secret = 0x$PSK_C }"
	echo "  ike-b { id-1 = ha.example
    id-2 = mn-b.example
    secret = 0x$PSK_B }"
	echo "}"
} > "$XT_DIR/ha/conf/swanctl.conf"
ike_start ha

# The mobile node's IKE: libcharon, strongSwan's IKEv2, in xipsec-iked, which writes the node's SAs
# into an SADB of its own in mn (no dataplane reads it). Stock charon cannot be the mobile node on
# this kernel: it has no ESP, so charon needs kernel-libipsec, which fakes a NAT to get ESP-in-UDP,
# and under a NAT charon rewrites transport-mode selectors to the IKE address, which loses the home
# address of RFC 4877's signalling SAs. The mobile node's packets are scapy's (test_mip6_mn.py),
# with the keys read from mn's SADB.
ike_dirs mn
ike_sconf mn "install_routes = no"
cat > "$XT_DIR/mn/conf/swanctl.conf" <<EOF
connections {
$(mip6_mn_conn ha mn-a.example $COA1 "$(mip6_mn_child mn $HOA; mip6_mn_child evil $HOB)")
$(mip6_mn_conn hc mn-c.example $COA1 "$(mip6_mn_child c $HOC)")
}
secrets { ike-a { id-1 = ha.example
    id-2 = mn-a.example
    secret = 0x$PSK_A }
  ike-c { id-1 = ha.example
    id-2 = mn-c.example
    secret = 0x$PSK_C } }
EOF
ike_start mn

fail_ike() { tail -30 "$XT_DIR/iked-mn.log" >&2; tail -30 "$XT_DIR/iked-ha.log" >&2; xt_fail "$*"; }

# ---- 1. IKE_SA and the two CHILD_SAs
xt_exec mn ip -6 route add default via 2001:db8:a::1 dev eth1
for c in mn-sig mn-tun; do
	ike_ctl mn --initiate --timeout 10 --child $c > "$XT_DIR/init-$c.log" 2>&1 || fail_ike "CHILD_SA $c not negotiated"
done
[ "$(ike_ctl mn --list-sas | grep -c 'ESTABLISHED')" = 1 ] || fail_ike "not one IKE_SA: $(ike_ctl mn --list-sas)"
# the four SAs' SPIs and keys from mn's SADB, the newest of each role (after a rekey charon keeps
# the replaced inbound SAs a few seconds): "ROLE SPI KEY+SALT"
mn_sas() {
	timeout 30 "$CTL" --sadb "$(ike_sadb mn)" --json --show-keys show | "$PYTHON" -c '
import json, sys
ha = sys.argv[1]
best = {}
for s in json.load(sys.stdin)["sas"]:
    t = s["mode"] == "tunnel"
    role = {(False, True): "bu", (False, False): "ba", (True, True): "tun_out", (True, False): "tun_in"}[(t, s["dst"] == ha)]
    if role not in best or s["instance"] > best[role]["instance"]:
        best[role] = s
h = lambda x: str(x).replace("0x", "")
for role, s in sorted(best.items()):
    print(role, s["spi"], h(s["keys"]["enc"]) + h(s["keys"]["salt"]))' "$HA"
}
sa_of() { awk -v r="$1" '$1 == r { print $2, $3 }' "$XT_DIR/mn-sas.txt"; }
mn_keys() { # BU_SPI BU_KEY ... from mn's SADB
	mn_sas > "$XT_DIR/mn-sas.txt" || fail_ike "ipsecctl show of mn's SADB"
	read -r BU_SPI BU_KEY <<< "$(sa_of bu)"
	read -r BA_SPI BA_KEY <<< "$(sa_of ba)"
	read -r TO_SPI TO_KEY <<< "$(sa_of tun_out)"
	read -r TI_SPI TI_KEY <<< "$(sa_of tun_in)"
	for v in "$BU_SPI" "$BA_SPI" "$TO_SPI" "$TI_SPI"; do
		[ -n "$v" ] || { cat "$XT_DIR/mn-sas.txt" >&2; fail_ike "mn's SADB lacks one of the four SAs"; }
	done
	[ ${#BU_KEY} = 40 ] || fail_ike "not an AES-GCM-128 key and salt: $BU_KEY"
}
mn_keys
# the home agent's SADB: the same four SPIs, flagged mobile, owned by an IKE_SA
ctl --json show > "$XT_DIR/sa.json" || xt_fail "ipsecctl show"
"$PYTHON" - "$XT_DIR/sa.json" $BU_SPI $BA_SPI $TO_SPI $TI_SPI <<'EOF' || xt_fail "home agent's SADB: $(ctl show)"
import json, sys
sas = json.load(open(sys.argv[1]))['sas']
want = sorted(int(x) for x in sys.argv[2:])
got = sorted(s['spi'] for s in sas)
assert got == want, (got, want)
assert all('mobile' in json.dumps(s) for s in sas), sas
EOF

# scapy's mobile node with the current keys, its tunnel from the care-of address on IFACE (the first
# link it is given); its tun0 holds the home address
start_mn() { # IFACE
	local links
	case $1 in
	eth1) links="$(mip6_link eth1 $COA1), $(mip6_link eth2 $COA2)" ;;
	*) links="$(mip6_link eth2 $COA2), $(mip6_link eth1 $COA1)" ;;
	esac
	cat > "$XT_DIR/mn.json" <<EOF
{"hoa": "$HOA", "ha": "$HA", "tun": "tun0", "crypt_algo": "AES-GCM",
 "links": {$links},
 "sa": {"bu": {"spi": $BU_SPI, "key": "$BU_KEY"}, "ba": {"spi": $BA_SPI, "key": "$BA_KEY"},
        "tun_out": {"spi": $TO_SPI, "key": "$TO_KEY"}, "tun_in": {"spi": $TI_SPI, "key": "$TI_KEY"}}}
EOF
	rm -f "$XT_DIR/mn.fifo"
	mip6_start_mn
	xt_exec mn sysctl -qw net.ipv6.conf.tun0.router_solicitations=0 net.ipv6.conf.tun0.addr_gen_mode=1
	xt_exec mn ip link set tun0 up
	xt_exec mn ip -6 addr add $HOA/128 dev tun0 nodad
	xt_exec mn ip -6 route add 2001:db8:1::/64 dev tun0
}
start_mn eth1
# IKE with the home agent goes from the care-of address, not through the tunnel (RFC 4877 4.4)
xt_exec mn ip -6 route add $HA/128 via 2001:db8:a::1 dev eth1
mn() { echo "$*" > "$XT_DIR/mn.fifo"; }
nba() { grep -c '"ev": "ba"' "$XT_DIR/mn.log"; }
ba_have() { [ "$(nba)" -ge "$1" ]; }
wait_ba() { xt_wait 5 ba_have "$1" || { tail -5 "$XT_DIR/mn.log" >&2; tail -20 "$XT_DIR/xipsecd-ha.log" >&2; ctl show >&2
	xt_fail "no Binding Acknowledgement #$1"; }; }
ba_is() { # N EXPR over the N-th BA (bound to b)
	grep '"ev": "ba"' "$XT_DIR/mn.log" | sed -n "${1}p" > "$XT_DIR/ba.json"
	[ "$("$PYTHON" -c "import json,sys; b=json.load(open(sys.argv[1])); print($2)" "$XT_DIR/ba.json")" = True ] ||
		xt_fail "BA #$1: not $2: $(cat "$XT_DIR/ba.json")"
}
bindings() { ctl --ctl "$XT_DIR/ha.sock" --json show bindings > "$XT_DIR/b.json" || xt_fail "ipsecctl show bindings"
	dp_json "$XT_DIR/b.json" "[(x['home_address'], x['care_of_address'], x['sequence']) for x in j['bindings']]"; }

# ---- 2. registration in the IKE-keyed signalling SA, traffic through the IKE-keyed tunnel
[ "$(bindings)" = "[]" ] || xt_fail "a binding before any BU"
mn bu eth1 1 120
wait_ba 1
ba_is 1 "b['status'] == 0 and b['seq'] == 1 and b['lifetime'] == 120 and b['src'] == '$HA' and \
b['dst'] == '$COA1' and b['rh_type'] == 2 and b['rh_segleft'] == 1 and b['rh_addr'] == '$HOA' and \
b['esp_spi'] == $BA_SPI and b['cksum_ok'] and b['iface'] == 'eth1' and b['flags'] == 0"
[ "$(bindings)" = "[('$HOA', '$COA1', 1)]" ] || xt_fail "binding after registration: $(cat "$XT_DIR/b.json")"
dp_capture_start ha-rt rt eth0
xt_exec cn ping -6 -c 3 -i 0.2 -W 2 $HOA >/dev/null || { tail -3 "$XT_DIR/mn.log" >&2; xt_fail "ping cn -> mn (home address)"; }
dp_tcp cn mn $HOA 100000
dp_capture_stop ha-rt
n=$(dp_only_ipsec "$XT_DIR/ha-rt.pcap") || xt_fail "plaintext between the home agent and the router"
[ "$n" -ge 20 ] || xt_fail "only $n ESP packets between the home agent and the router"
xt_log "IKE-keyed mobile node registered (BA 0 in SA $BA_SPI), ping and TCP through its tunnel ($n ESP packets)"

# ---- 3. a move with the K bit: the home agent grants K (the node is IKE-keyed) and the IKE SA
# follows the care-of address without a new IKE_SA_INIT; then the home agent rekeys both CHILD_SAs
# under the binding, which stays
ha_at() { ike_ctl ha --list-sas | grep -q "remote .* @ $1\["; } # the IKE SA's peer is at $1
dp_capture_start ike-rt rt eth0
mn bu eth2 2 120 AHK
wait_ba 2
ba_is 2 "b['status'] == 0 and b['seq'] == 2 and b['dst'] == '$COA2' and b['iface'] == 'eth2' and b['flags'] == 4"
xt_exec mn ip -6 route replace default via 2001:db8:b::1 dev eth2
xt_exec mn ip -6 route replace $HA/128 via 2001:db8:b::1 dev eth2
xt_wait 5 ha_at $COA2 || fail_ike "the IKE SA did not follow to $COA2: $(ike_ctl ha --list-sas)"
[ "$(bindings)" = "[('$HOA', '$COA2', 2)]" ] || xt_fail "binding after the move: $(cat "$XT_DIR/b.json")"
xt_exec cn ping -6 -c 3 -i 0.2 -W 2 $HOA >/dev/null || xt_fail "ping cn -> mn after the move"
for c in mip6-signalling mip6-tunnel; do
	ike_ctl ha --rekey --child $c > "$XT_DIR/rekey-$c.log" 2>&1 || fail_ike "rekeying $c"
done
xt_wait 10 grep -q "rekeyed, binding kept" "$XT_DIR/xipsecd-ha.log" || fail_ike "no rekey under the binding"
dp_capture_stop ike-rt
# IKE between the home agent and the node after the move went to the care-of address, and no
# IKE_SA_INIT at all (exchange type 34). tshark's own failure (a field name it does not know, an
# unreadable capture) fails the test rather than counting as none.
timeout 60 tshark -r "$XT_DIR/ike-rt.pcap" -Y "isakmp.exchangetype == 34" > "$XT_DIR/init.txt" \
	2> "$XT_DIR/tshark.err" || fail_ike "tshark on the capture: $(cat "$XT_DIR/tshark.err")"
n_init=$(wc -l < "$XT_DIR/init.txt")
n_coa2=$(timeout 60 tshark -r "$XT_DIR/ike-rt.pcap" -Y "isakmp && ipv6.dst == $COA2" 2>/dev/null | wc -l)
[ "$n_init" = 0 ] && [ "$n_coa2" -ge 2 ] || fail_ike "IKE after the move: $n_init IKE_SA_INIT, $n_coa2 IKE messages to $COA2"
[ "$(bindings)" = "[('$HOA', '$COA2', 2)]" ] || xt_fail "binding after the rekeys: $(cat "$XT_DIR/b.json")"
# mn's IKE SA, the one of the first IKE_SA_INIT, now runs from the care-of address too
ike_ctl mn --list-sas > "$XT_DIR/mn-ike.txt"
grep -q "ha: #1, ESTABLISHED" "$XT_DIR/mn-ike.txt" && grep -q "local .* @ $COA2\[" "$XT_DIR/mn-ike.txt" ||
	fail_ike "mn's IKE SA after the move: $(cat "$XT_DIR/mn-ike.txt")"
old_bu=$BU_SPI old_to=$TO_SPI
mn_keys
[ "$BU_SPI" != "$old_bu" ] && [ "$TO_SPI" != "$old_to" ] || fail_ike "the CHILD_SAs were not rekeyed"
xt_stop mn
start_mn eth2
xt_exec cn ping -6 -c 3 -i 0.2 -W 2 $HOA >/dev/null || { ctl show >&2; timeout 30 "$CTL" --sadb "$(ike_sadb mn)" --json show > "$XT_DIR/mn-sadb.json"; xt_fail "ping cn -> mn through the rekeyed tunnel"; }
mn bu eth2 3 120 AHK
wait_ba 1
ba_is 1 "b['status'] == 0 and b['seq'] == 3 and b['esp_spi'] == $BA_SPI and b['flags'] == 4"
xt_log "moved with K ($n_coa2 IKE messages to $COA2, no IKE_SA_INIT), rekeyed under the binding: BU 3 in the new SA answered 0"

# ---- 4. deregistration
mn bu eth2 4 0
wait_ba 2
ba_is 2 "b['status'] == 0 and b['seq'] == 4 and b['lifetime'] == 0"
[ "$(bindings)" = "[]" ] || xt_fail "binding after deregistration: $(cat "$XT_DIR/b.json")"

# ---- 5. mn-a.example asks for mn-b's home address: refused before any SA
ike_ctl mn --initiate --timeout 10 --child evil-sig > "$XT_DIR/init-evil.log" 2>&1 && fail_ike "a CHILD_SA for another node's home address"
ike_ctl mn --initiate --timeout 10 --child evil-tun >> "$XT_DIR/init-evil.log" 2>&1 && fail_ike "a tunnel for another node's home address"
timeout 30 "$CTL" --sadb "$(ike_sadb mn)" show | grep -q "$HOB" && fail_ike "mn has SAs for mn-b's home address"
ctl --json show > "$XT_DIR/sa2.json"
"$PYTHON" -c "import json,sys; s=json.load(open(sys.argv[1]))['sas']; assert s and not any('$HOB' in json.dumps(x) for x in s), s" "$XT_DIR/sa2.json" ||
	fail_ike "the home agent's SADB holds SAs for mn-b's home address"
grep -q "N(TS_UNACCEPT)" "$XT_DIR/iked-ha.log" || fail_ike "no TS_UNACCEPTABLE answer logged"
[ "$(bindings)" = "[]" ] || xt_fail "a binding after the refused CHILD_SA"
xt_log "mn-a.example asking for $HOB: no CHILD_SA, no SA, no binding"

# ---- 6. a mobile node's connection against the rules (MOBIKE on): refused by xipsec-iked with a
# message naming it, before any SA
ike_ctl mn --initiate --timeout 10 --child c-sig > "$XT_DIR/init-c.log" 2>&1 && fail_ike "a CHILD_SA of a connection against the rules"
grep -q "connection 'mn-c' child 'mip6-signalling' (mobile node mn-c.example) refused: its connection needs mobike = no" "$XT_DIR/iked-ha.log" ||
	fail_ike "no refusal naming connection mn-c"
ctl --json show > "$XT_DIR/sa3.json"
"$PYTHON" -c "import json,sys; s=json.load(open(sys.argv[1]))['sas']; assert not any('$HOC' in json.dumps(x) for x in s), s" "$XT_DIR/sa3.json" ||
	fail_ike "the home agent's SADB holds SAs of the refused connection"
xt_log "a mip6- child of a connection with MOBIKE on: refused before any SA, the log names it"

ike_check_logs
xt_log "PASS: IKEv2-keyed mobile node: SAs, BU/BA, tunnel traffic, deregistration, home address bound to the identity"
