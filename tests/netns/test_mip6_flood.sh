#!/usr/bin/env bash
# tests/netns/test_mip6_flood.sh: one mobile node's Binding Update flood does not starve another's
# refresh (dataplane/xipsecd/dp_mip6_queue.c: each signalling SA's share of the home agent's queue).
#
# The network of tests/netns/test_mip6_common.sh: node A (home address 2001:db8:1::100) at care-of
# address 2001:db8:a::100 (mn's eth1), node B (2001:db8:1::200) at 2001:db8:b::100 (eth2), so that
# B's acknowledgements go to a link of their own and A's scapy reads only its own.
#
# Node A (scapy's mobile node, tests/netns/test_mip6_mn.py) registers for 8 s. Node B then sends
# ROUNDS x FLOOD valid Binding Updates (its own SA, increasing sequence numbers) back to back, with
# A's refreshes mixed into the same stream (tests/netns/test_mip6_flooder.py), so A's reach the home
# agent while B's fill its queue. Checked: every refresh of A is answered with status 0 and A's binding
# carries the last one's sequence number and outlives the 8 s of its registration; the flood's
# excess is counted as the flooder's share drops, by reason, and nothing of A is counted dropped.
set -u
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/test_dp_common.sh"
. "$top_srcdir/tests/netns/test_mip6_common.sh"
xt_require ip ethtool xxd
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
"$PYTHON" -c 'import scapy.layers.inet6, scapy.layers.ipsec, cryptography' 2>/dev/null ||
	xt_skip "needs python3-scapy and python3-cryptography"
FLOOD=${FLOOD:-3000} ROUNDS=3 REFRESHES=4

HOA=2001:db8:1::100 HOB=2001:db8:1::200
mip6_topo
ctl() { timeout 30 "$CTL" --sadb "$SADB" "$@"; }

key() { head -c 20 /dev/urandom | xxd -p -c 40; }
KA_BA=$(key) KA_BU=$(key) KA_TO=$(key) KA_TI=$(key) KB_BU=$(key)
cat > "$XT_DIR/ha.conf" <<EOF
home-agent $HA prefix 2001:db8:1::/64 lifetime 600
mobile-node $HOA \\
	signalling spi 0x2000:0x2001 enc aes128gcm16 key 0x$KA_BA:0x$KA_BU \\
	tunnel spi 0x3000:0x3001 enc aes128gcm16 key 0x$KA_TO:0x$KA_TI
mobile-node $HOB \\
	signalling spi 0x2100:0x2101 enc aes128gcm16 key 0x$(key):0x$KB_BU \\
	tunnel spi 0x3100:0x3101 enc aes128gcm16 key 0x$(key):0x$(key)
EOF
ctl --new-keys load "$XT_DIR/ha.conf" || xt_fail "ipsecctl load of the home agent configuration"
mip6_start_ha
b_json() {
	ctl --ctl "$XT_DIR/ha.sock" --json show bindings > "$XT_DIR/b.json" || xt_fail "ipsecctl show bindings"
	dp_json "$XT_DIR/b.json" "$1"
}

mac() { xt_exec "$1" ip -br link show "$2" | awk '{print $3}'; }
cat > "$XT_DIR/mn.json" <<EOF
{"hoa": "$HOA", "ha": "$HA", "tun": "tun0", "crypt_algo": "AES-GCM",
 "links": {"eth1": {"coa": "$COA1", "gw_mac": "$(mac rt eth1)"}},
 "sa": {"bu": {"spi": 8193, "key": "$KA_BU"}, "ba": {"spi": 8192, "key": "$KA_BA"},
        "tun_out": {"spi": 12289, "key": "$KA_TI"}, "tun_in": {"spi": 12288, "key": "$KA_TO"}}}
EOF
mip6_start_mn
bas() { grep '"ev": "ba"' "$XT_DIR/mn.log"; }

# A registers for 8 s (ESP sequence number 1 of its signalling SA, Binding Update sequence 1)
echo "bu eth1 1 8" > "$XT_DIR/mn.fifo"
xt_wait 5 sh -c "grep -q '\"ev\": \"ba\"' '$XT_DIR/mn.log'" || xt_fail "no BA for A's registration"
# the refreshes come 3 s into the registration: their 8 s outlast its 8 s by 3
sleep 3

# B floods in ROUNDS rounds of FLOOD; A's refreshes ride in each, MQ_SHARE (4) of them: A never has
# more than its share outstanding, as a mobile node that waits for its acknowledgements (RFC 6275
# 11.8) never has, however long the home agent's control thread takes to look.
unanswered() { # the refreshes of round R without a BA of status 0
	"$PYTHON" -c 'import json,sys
seqs = set(json.load(open(sys.argv[1]))["refresh_seqs"])
ok = {b["seq"] for b in map(json.loads, open(sys.argv[2])) if b.get("ev") == "ba" and b["status"] == 0}
print(sorted(seqs - ok))' "$XT_DIR/flood$1.out" "$XT_DIR/mn.log"
}
answered() { [ "$(unanswered "$1")" = "[]" ]; }
# what the outside AF_XDP socket lost before the dataplane saw it (a worker not scheduled in time
# lets its fill ring run dry): the home agent never had those packets
xsk_lost() { "$XIPSECD" --status --ctl "$XT_DIR/ha.sock" | "$PYTHON" -c 'import json,sys
print(sum(w["xsk_outside"]["rx_dropped"] for w in json.load(sys.stdin)["worker"]))'; }
r=0 tries=0
while [ $r -lt $ROUNDS ]; do
	lost0=$(xsk_lost)
	cat > "$XT_DIR/flood$r.json" <<EOF
{"iface": "eth2", "mac": "$(mac mn eth2)", "gw_mac": "$(mac rt eth2)", "ha": "$HA", "count": $FLOOD,
 "burst": 200, "gap_ms": 2,
 "flooder": {"hoa": "$HOB", "coa": "$COA2", "spi": 8449, "key": "$KB_BU", "esp_seq": $((1 + tries * FLOOD)),
             "bu_seq": $((1 + tries * FLOOD)), "lifetime": 600},
 "refresh": {"hoa": "$HOA", "coa": "$COA1", "spi": 8193, "key": "$KA_BU", "esp_seq": $((100 + tries * REFRESHES)),
             "bu_seq": $((2 + tries * REFRESHES)), "lifetime": 8, "n": $REFRESHES}}
EOF
	tries=$((tries + 1))
	xt_exec mn "$PYTHON" "$top_srcdir/tests/netns/test_mip6_flooder.py" "$XT_DIR/flood$r.json" > "$XT_DIR/flood$r.out" ||
		xt_fail "the flood did not run: $(cat "$XT_DIR/flood$r.out")"
	xt_log "flood $r: $(cat "$XT_DIR/flood$r.out")"
	if ! xt_wait 5 answered "$r"; then
		lost=$(( $(xsk_lost) - lost0 ))
		# a mobile node sends again what was not acknowledged (RFC 6275 11.8): a round that lost
		# packets before the home agent is run again, at most twice more in all
		if [ "$lost" -gt 0 ] && [ $tries -lt $((ROUNDS + 2)) ]; then
			xt_log "round $r: $lost packets lost at the AF_XDP socket, before the home agent: again"
			continue
		fi
		b_json "j['counters']" >&2; "$XIPSECD" --status --ctl "$XT_DIR/ha.sock" >&2
		xt_fail "A's refreshes $(unanswered "$r") were not answered during B's flood"
	fi
	r=$((r + 1))
done
last=$(dp_json "$XT_DIR/flood$((ROUNDS - 1)).out" "j['refresh_seqs'][-1]")
ref_ok() { [ "$(b_json "[(b['sequence'], b['lifetime']) for b in j['bindings'] if b['home_address'] == '$HOA']")" = "[($last, 8)]" ]; }
xt_wait 5 ref_ok || xt_fail "A's binding does not carry its last refresh ($last): $(cat "$XT_DIR/b.json")"
# 9 s after the registration (its age, as the home agent counts it) the binding is still there:
# the refreshes renewed it
age() { b_json "[b['age'] for b in j['bindings'] if b['home_address'] == '$HOA']"; }
aged() { local a; a=$(age); [ "$a" = "[]" ] || [ "$(echo "$a" | tr -d '[]')" -ge 9 ]; }
xt_wait 15 aged || xt_fail "A's binding did not age: $(cat "$XT_DIR/b.json")"
[ "$(age)" != "[]" ] || xt_fail "A's binding expired despite its refreshes: $(cat "$XT_DIR/b.json")"
[ "$(b_json "j['counters']['bindings_expired']")" = 0 ] || xt_fail "a binding expired"
# the flood's excess is the flooder's: counted as over its share, and A lost nothing
b_json "j['counters']" >&2
"$XIPSECD" --status --ctl "$XT_DIR/ha.sock" >&2
[ "$(b_json "j['counters']['queue_drop_share']")" -gt 0 ] || xt_log "the flood stayed within B's share of the queue"
[ "$(b_json "j['counters']['queue_full_out']")" = 0 ] || xt_fail "acknowledgements dropped: the outbound queue was full"
xt_log "A's $((ROUNDS * REFRESHES)) refreshes answered and its binding renewed under B's flood of $((ROUNDS * FLOOD)) Binding Updates"
exit 0
