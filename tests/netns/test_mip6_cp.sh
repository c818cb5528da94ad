#!/usr/bin/env bash
# tests/netns/test_mip6_cp.sh: home addresses assigned through the IKEv2 configuration payload (RFC
# 4877 4.3) by the home agent's xipsec-iked from a swanctl.conf pool, on test_mip6_ike.sh's bed
# (mip6_ike_common.sh: test_mip6_common.sh's network, libcharon in xipsec-iked on both sides,
# scapy's mobile node). The
# pool is 2001:db8:1::1000-1003 and its connection takes any identity *.pool.example; cn holds
# ::1000 on the home link and a manually keyed mobile node has ::1001. Checked:
#  1. two mobile nodes (mn-a, mn-b) asking at once with a CFG_REQUEST for INTERNAL_IP6_ADDRESS get
#     different addresses, neither ::1000 (it answers a Neighbor Solicitation on the home link) nor
#     ::1001 (its SAs are in the SADB): xipsec-iked's log names both refusals, and swanctl's leases
#     list the two addresses online for the two identities;
#  2. tshark, with the IKE keys from mn's log, reads each IKE_AUTH: a CFG_REQUEST with
#     INTERNAL_IP6_ADDRESS from each node, a CFG_REPLY with the leased address to each;
#  3. mn-a's signalling SAs carry its address (mn's SADB), its Binding Update for it is answered
#     BA status 0, field by field, and the binding is listed;
#  4. a Binding Update in mn-a's signalling SA for mn-b's address is not answered, is dropped by
#     the dataplane on that SA (its selectors carry mn-a's address only) and changes no binding;
#  5. the home agent rekeys mn-a's CHILD_SAs: the binding stays, the new signalling SA carries the
#     same address;
#  6. mn-a's IKE SA goes: its address is offline in the pool (back to it); mn-a back at once (its
#     old SAs still being deleted) gets the same address; gone again, its SAs are gone.
set -u
XT_BG_TIMEOUT=60
. "$top_srcdir/tests/netns/mip6_ike_common.sh"

ON_LINK=2001:db8:1::1000 MANUAL=2001:db8:1::1001
PSK_A=$(head -c 16 /dev/urandom | xxd -p) PSK_B=$(head -c 16 /dev/urandom | xxd -p)
key() { head -c 20 /dev/urandom | xxd -p -c 40; }

mip6_topo
xt_exec cn ip -6 addr add $ON_LINK/64 dev eth0 nodad
ctl() { timeout 30 "$CTL" --sadb "$SADB" "$@"; }
cat > "$XT_DIR/ha.conf" <<EOF
home-agent $HA prefix 2001:db8:1::/64 lifetime 600
mobile-node $MANUAL \\
	signalling spi 0x2000:0x2001 enc aes128gcm16 key 0x$(key):0x$(key) \\
	tunnel spi 0x3000:0x3001 enc aes128gcm16 key 0x$(key):0x$(key)
EOF
ctl load "$XT_DIR/ha.conf" || xt_fail "ipsecctl load of the home agent"
mip6_start_ha -v

# the home agent's xipsec-iked: one connection for every *.pool.example, home addresses from the pool
ike_dirs ha "$SADB"
ike_sconf ha "install_routes = no"
cat > "$XT_DIR/ha/conf/swanctl.conf" <<EOF
connections {
  mn-pool {
    version = 2
    mobike = no
    local_addrs = $HA
    pools = home
    proposals = aes128gcm16-prfsha256-ecp256
    local { auth = psk
      id = ha.example }
    remote { auth = psk
      id = *.pool.example }
    children {
      mip6-signalling { mode = transport_proxy
        local_ts = $HA/128[135]
        remote_ts = dynamic[135]
        esp_proposals = aes128gcm16 }
      mip6-tunnel { mode = tunnel
        local_ts = ::/0
        remote_ts = dynamic
        esp_proposals = aes128gcm16 }
    }
  }
}
pools {
  home { addrs = 2001:db8:1::1000-2001:db8:1::1003 }
}
secrets {
  ike-a { id-1 = ha.example
    id-2 = mn-a.pool.example
    secret = 0x$PSK_A }
  ike-b { id-1 = ha.example
    id-2 = mn-b.pool.example
    secret = 0x$PSK_B }
}
EOF
ike_start ha

# The mobile nodes' IKE: one xipsec-iked in mn (test_mip6_ike.sh says why not stock charon), mn-a
# from the first care-of address, mn-b from the second, each asking for an address (vips = ::). Its
# IKE keys go to its log (ike = 4) for tshark.
ike_dirs mn
ike_sconf mn "install_routes = no" "filelog { stderr { ike = 4 } }"
cat > "$XT_DIR/mn/conf/swanctl.conf" <<EOF
connections {
$(mip6_mn_conn na mn-a.pool.example $COA1 "$(mip6_mn_child a dynamic)" "vips = ::")
$(mip6_mn_conn nb mn-b.pool.example $COA2 "$(mip6_mn_child b dynamic)" "vips = ::")
}
secrets { ike-a { id-1 = ha.example
    id-2 = mn-a.pool.example
    secret = 0x$PSK_A }
  ike-b { id-1 = ha.example
    id-2 = mn-b.pool.example
    secret = 0x$PSK_B } }
EOF
ike_start mn

fail_ike() { tail -30 "$XT_DIR/iked-mn.log" >&2; tail -30 "$XT_DIR/iked-ha.log" >&2; xt_fail "$*"; }

# ---- 1. two nodes at once: different addresses, none in use
xt_exec mn ip -6 route add default via 2001:db8:a::1 dev eth1
xt_exec mn ip -6 rule add from $COA2 table 100
xt_exec mn ip -6 route add default via 2001:db8:b::1 dev eth2 table 100
dp_capture_start ike rt eth0
ike_ctl mn --initiate --timeout 20 --child a-sig > "$XT_DIR/init-a.log" 2>&1 & pa=$!
ike_ctl mn --initiate --timeout 20 --child b-sig > "$XT_DIR/init-b.log" 2>&1 & pb=$!
wait $pa || fail_ike "mn-a's signalling CHILD_SA not negotiated: $(cat "$XT_DIR/init-a.log")"
wait $pb || fail_ike "mn-b's signalling CHILD_SA not negotiated: $(cat "$XT_DIR/init-b.log")"
ike_ctl mn --initiate --timeout 10 --child a-tun > "$XT_DIR/init-at.log" 2>&1 || fail_ike "mn-a's tunnel not negotiated"
dp_capture_stop ike
lease() { # ID: the address the home agent's pool has online for ID
	ike_ctl ha --list-pools --leases | awk -v id="'$1'" '$2 == "online" && $3 == id { print $1 }'; }
HOA=$(lease mn-a.pool.example) HOB=$(lease mn-b.pool.example)
ike_ctl ha --list-pools --leases > "$XT_DIR/leases.txt"
[ -n "$HOA" ] && [ -n "$HOB" ] && [ "$HOA" != "$HOB" ] || fail_ike "leases: $(cat "$XT_DIR/leases.txt")"
for a in $HOA $HOB; do
	case $a in 2001:db8:1::1002|2001:db8:1::1003) ;; *) fail_ike "$a handed out: $(cat "$XT_DIR/leases.txt")" ;; esac
done
grep -q "home address $ON_LINK not handed out to '.*': in use on the home link" "$XT_DIR/iked-ha.log" ||
	fail_ike "no refusal of $ON_LINK (held on the home link) logged"
grep -q "home address $MANUAL not handed out to '.*': the home address of a mobile node's SAs in the SADB" \
	"$XT_DIR/iked-ha.log" || fail_ike "no refusal of $MANUAL (a manually keyed node's) logged"
xt_log "two nodes at once: mn-a $HOA, mn-b $HOB ($ON_LINK on the link and $MANUAL in the SADB refused)"

# ---- 2. the configuration payloads, decrypted by tshark with the IKE keys from mn's log (charon's
# %B dumps: "<na|1> Sk_ei secret => 20 bytes @ 0x...", then lines "   0: 7A 8B ...")
spis() { ike_ctl mn --list-sas --ike "$1" | sed -n 's/.*IKEv2, \([0-9a-f]*\)_i[*]* \([0-9a-f]*\)_r.*/\1 \2/p' | head -1; }
"$PYTHON" - "$XT_DIR/iked-mn.log" "$(spis na)" "$(spis nb)" > "$XT_DIR/ikev2_decryption_table" <<'EOF' || xt_fail "mn's IKE keys"
import re, sys
keys, cur = {}, None
for line in open(sys.argv[1], errors='replace'):
    m = re.search(r'<(\w+)\|\d+> Sk_(e[ir]) secret => (\d+) bytes', line)
    if m:
        cur = [m.group(1), m.group(2), int(m.group(3)), '']
        continue
    m = re.search(r'>\s+\d+: ((?:[0-9A-F]{2} )+)', line)
    if cur and m:
        cur[3] += m.group(1).replace(' ', '')
        if len(cur[3]) >= 2 * cur[2]:
            keys.setdefault(cur[0], {})[cur[1]] = cur[3][:2 * cur[2]].lower()
            cur = None
for name, spi in (('na', sys.argv[2]), ('nb', sys.argv[3])):
    i, r = spi.split()
    k = keys[name]
    assert len(k['ei']) == 40, k  # AES-GCM-128: key and salt
    print('%s,%s,%s,%s,"AES-GCM-128 with 16 octet ICV [RFC5282]",,,"NONE [RFC4306]"' % (i, r, k['ei'], k['er']))
EOF
mkdir -p "$XT_DIR/ws"
cp "$XT_DIR/ikev2_decryption_table" "$XT_DIR/ws/"
cfg() { # the configuration payloads in the capture: CFG-TYPE SRC ATTR-TYPES ADDRESSES
	WIRESHARK_CONFIG_DIR="$XT_DIR/ws" timeout 60 tshark -r "$XT_DIR/ike.pcap" -Y isakmp.cfg.type \
		-T fields -E separator=' ' -e isakmp.cfg.type -e ipv6.src -e isakmp.cfg.attr.type \
		-e isakmp.cfg.attr.internal_ip6_address 2> "$XT_DIR/tshark.err"
}
cfg > "$XT_DIR/cfg.txt" || fail_ike "tshark: $(cat "$XT_DIR/tshark.err")"
grep -q "^1 $COA1 8" "$XT_DIR/cfg.txt" && grep -q "^1 $COA2 8" "$XT_DIR/cfg.txt" ||
	fail_ike "no CFG_REQUEST for INTERNAL_IP6_ADDRESS from each node: $(cat "$XT_DIR/cfg.txt")"
grep -q "^2 $HA 8 $HOA" "$XT_DIR/cfg.txt" && grep -q "^2 $HA 8 $HOB" "$XT_DIR/cfg.txt" ||
	fail_ike "no CFG_REPLY with $HOA and $HOB: $(cat "$XT_DIR/cfg.txt")"
xt_log "tshark: CFG_REQUEST INTERNAL_IP6_ADDRESS from $COA1 and $COA2, CFG_REPLY $HOA and $HOB"

# ---- 3. mn-a registers its address in its signalling SA
# mn-a's four SAs from mn's SADB (the ones whose selectors carry its address): "ROLE SPI KEY+SALT"
timeout 30 "$CTL" --sadb "$(ike_sadb mn)" --json --show-keys show > "$XT_DIR/mn-sadb.json" || xt_fail "mn's SADB"
"$PYTHON" - "$XT_DIR/mn-sadb.json" "$HA" "$HOA" > "$XT_DIR/mn-sas.txt" <<'EOF' || { cat "$XT_DIR/mn-sadb.json" >&2; xt_fail "mn-a's SAs"; }
import json, sys
ha, hoa = sys.argv[2], sys.argv[3] + '/128'
h = lambda x: str(x).replace('0x', '')
roles = {}
for s in json.load(open(sys.argv[1]))['sas']:
    if hoa not in (s['selector']['src'], s['selector']['dst']):
        continue
    t = s['mode'] == 'tunnel'
    role = {(False, True): 'bu', (False, False): 'ba', (True, True): 'tun_out', (True, False): 'tun_in'}[(t, s['dst'] == ha)]
    assert role not in roles, (role, s)
    roles[role] = s
assert sorted(roles) == ['ba', 'bu', 'tun_in', 'tun_out'], roles
assert roles['bu']['selector']['src'] == hoa and roles['bu']['selector']['proto'] == 135, roles['bu']
for role, s in sorted(roles.items()):
    print(role, s['spi'], h(s['keys']['enc']) + h(s['keys']['salt']))
EOF
sa_of() { awk -v r="$1" '$1 == r { print $2, $3 }' "$XT_DIR/mn-sas.txt"; }
read -r BU_SPI BU_KEY <<< "$(sa_of bu)"
read -r BA_SPI BA_KEY <<< "$(sa_of ba)"
read -r TO_SPI TO_KEY <<< "$(sa_of tun_out)"
read -r TI_SPI TI_KEY <<< "$(sa_of tun_in)"
cat > "$XT_DIR/mn.json" <<EOF
{"hoa": "$HOA", "ha": "$HA", "tun": "tun0", "crypt_algo": "AES-GCM",
 "links": {$(mip6_link eth1 $COA1)},
 "sa": {"bu": {"spi": $BU_SPI, "key": "$BU_KEY"}, "ba": {"spi": $BA_SPI, "key": "$BA_KEY"},
        "tun_out": {"spi": $TO_SPI, "key": "$TO_KEY"}, "tun_in": {"spi": $TI_SPI, "key": "$TI_KEY"}}}
EOF
mip6_start_mn
mn() { echo "$*" > "$XT_DIR/mn.fifo"; }
nba() { grep -c '"ev": "ba"' "$XT_DIR/mn.log"; }
ba_have() { [ "$(nba)" -ge "$1" ]; }
bjson() { ctl --ctl "$XT_DIR/ha.sock" --json show bindings > "$XT_DIR/b.json" || xt_fail "ipsecctl show bindings"
	dp_json "$XT_DIR/b.json" "$1"; }
bindings() { bjson "[(x['home_address'], x['care_of_address'], x['sequence']) for x in j['bindings']]"; }
mn bu eth1 1 120
xt_wait 5 ba_have 1 || { tail -5 "$XT_DIR/mn.log" >&2; tail -20 "$XT_DIR/xipsecd-ha.log" >&2; xt_fail "no BA for $HOA"; }
grep '"ev": "ba"' "$XT_DIR/mn.log" | head -1 > "$XT_DIR/ba.json"
"$PYTHON" - "$XT_DIR/ba.json" <<EOF || xt_fail "BA: $(cat "$XT_DIR/ba.json")"
import json, sys
b = json.load(open(sys.argv[1]))
want = {'status': 0, 'seq': 1, 'lifetime': 120, 'src': '$HA', 'dst': '$COA1', 'rh_type': 2,
        'rh_segleft': 1, 'rh_addr': '$HOA', 'esp_spi': $BA_SPI, 'cksum_ok': True, 'iface': 'eth1', 'flags': 0}
bad = {k: (b.get(k), v) for k, v in want.items() if b.get(k) != v}
assert not bad, bad
EOF
[ "$(bindings)" = "[('$HOA', '$COA1', 1)]" ] || xt_fail "binding: $(cat "$XT_DIR/b.json")"
# the home agent's signalling SA from mn-a carries the assigned address (and the Mobility Header)
ctl --json show > "$XT_DIR/ha-sadb.json" || xt_fail "ipsecctl show"
[ "$(dp_json "$XT_DIR/ha-sadb.json" "[(s['selector']['src'], s['selector']['proto']) for s in j['sas'] if s['spi'] == $BU_SPI and s['dst'] == '$HA']")" = \
	"[('$HOA/128', 135)]" ] || xt_fail "the home agent's SA $BU_SPI: $(ctl show)"
xt_log "mn-a registered $HOA in SA $BU_SPI: BA 0 in SA $BA_SPI"

# ---- 4. mn-a's signalling SA, a BU for mn-b's address: refused. The SA's selectors carry mn-a's
# address only, so the dataplane drops it after decryption (counted on the SA, with its reason) and
# the home agent never takes it as a Binding Update.
mismatch() { ctl --json show > "$XT_DIR/sa-bu.json" || xt_fail "ipsecctl show"
	dp_json "$XT_DIR/sa-bu.json" "[s['counters']['drops']['policy_mismatch'] for s in j['sas'] if s['spi'] == $BU_SPI and s['dst'] == '$HA'][0]"; }
d0=$(mismatch) r0=$(bjson "j['counters']['bu_received']")
mn bu-hoa eth1 2 120 $HOB
sleep 1
d1=$(mismatch)
[ "$(nba)" = 1 ] || xt_fail "a BU for $HOB in mn-a's SA was answered: $(tail -1 "$XT_DIR/mn.log")"
[ "$(bindings)" = "[('$HOA', '$COA1', 1)]" ] || xt_fail "binding after the BU for $HOB: $(cat "$XT_DIR/b.json")"
[ "$(bjson "j['counters']['bu_received']")" = "$r0" ] || xt_fail "the BU for $HOB reached the home agent's decision"
[ "$d1" = $((d0 + 1)) ] || xt_fail "the BU for $HOB not counted as a policy mismatch on SA $BU_SPI: $d0 -> $d1"
xt_log "a BU for $HOB in mn-a's SA: unanswered, no binding, SA $BU_SPI's policy_mismatch drops $d0 -> $d1"

# ---- 5. the home agent rekeys mn-a's CHILD_SAs (it initiates: the selectors it proposes are the
# assigned address, which its own narrow hook checks): the binding stays, the new signalling SA
# carries the same address
ike_a=$(ike_ctl ha --list-sas | awk '/^mn-pool: #/ { n = substr($2, 2, length($2) - 2) } /remote .mn-a.pool.example/ { print n }')
[ -n "$ike_a" ] || fail_ike "mn-a's IKE SA on the home agent: $(ike_ctl ha --list-sas)"
for c in mip6-signalling mip6-tunnel; do
	ike_ctl ha --rekey --ike-id "$ike_a" --child $c > "$XT_DIR/rekey-$c.log" 2>&1 || fail_ike "rekeying $c of mn-a"
done
xt_wait 10 grep -q "home agent: $HOA rekeyed, binding kept" "$XT_DIR/xipsecd-ha.log" || fail_ike "no rekey under $HOA's binding"
[ "$(bindings)" = "[('$HOA', '$COA1', 1)]" ] || xt_fail "binding after the rekey: $(cat "$XT_DIR/b.json")"
new_bu() { ctl --json show > "$XT_DIR/ha-sadb2.json" &&
	[ "$(dp_json "$XT_DIR/ha-sadb2.json" "sorted(set((s['selector']['src'], s['selector']['proto']) for s in j['sas'] if s['dst'] == '$HA' and s['mode'] == 'transport' and s['spi'] != $BU_SPI and '$HOA/' in s['selector']['src']))")" = "[('$HOA/128', 135)]" ]; }
xt_wait 5 new_bu || fail_ike "no new signalling SA for $HOA: $(ctl show)"
xt_log "the home agent rekeyed mn-a's CHILD_SAs: binding kept, the new signalling SA for $HOA"

# ---- 6. mn-a's IKE SA goes: its address back to the pool. mn-a back at once (its deleted inbound SAs
# still lingering, inbound_delete_delay_ms): the same address again. Gone again: no SA left for it.
offline() { ike_ctl ha --list-pools --leases | grep -q "$HOA *offline *'mn-a.pool.example'"; }
ike_ctl mn --terminate --ike na --timeout 10 > "$XT_DIR/term.log" 2>&1 || fail_ike "terminating mn-a's IKE SA"
xt_wait 5 offline || fail_ike "$HOA not back in the pool: $(ike_ctl ha --list-pools --leases)"
ike_ctl mn --initiate --timeout 10 --child a-sig > "$XT_DIR/init-a2.log" 2>&1 || fail_ike "mn-a back: no CHILD_SA"
[ "$(lease mn-a.pool.example)" = "$HOA" ] || fail_ike "mn-a back: not $HOA: $(ike_ctl ha --list-pools --leases)"
ike_ctl mn --terminate --ike na --timeout 10 > "$XT_DIR/term2.log" 2>&1 || fail_ike "terminating mn-a's IKE SA"
xt_wait 5 offline || fail_ike "$HOA not back in the pool: $(ike_ctl ha --list-pools --leases)"
no_sa() { ctl --json show > "$XT_DIR/sa.json" &&
	"$PYTHON" -c "import json,sys; s=json.load(open(sys.argv[1]))['sas']; assert not any('$HOA/' in json.dumps(x) for x in s)" \
		"$XT_DIR/sa.json" 2>/dev/null; }
xt_wait 5 no_sa || fail_ike "SAs of $HOA after its IKE SA went: $(ctl show)"
xt_log "mn-a's IKE SA gone: $HOA offline in the pool; back at once, $HOA again; gone, no SA left for it"

ike_check_logs
xt_log "PASS: home addresses from the IKEv2 configuration payload: pool, checks, BU/BA, refusal, release"
