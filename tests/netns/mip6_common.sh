# tests/netns/mip6_common.sh: the Mobile IPv6 home agent's netns test bed with one manually keyed
# mobile node, sourced by test_mip6_ha.sh and test_dp_replay_reboot.sh (it sources lib.sh,
# test_dp_common.sh and test_mip6_common.sh, whose network it builds): the home agent's
# configuration ($XT_DIR/ha.conf) loaded and xipsecd started on ha (mip6_start_ha, with
# $MIP6_HA_OPTS), the mobile node played by scapy (tests/netns/test_mip6_mn.py, driven through a
# FIFO: mn CMD...), and the helpers that read its Binding Acknowledgements (nba, ba, wait_ba, ba_is)
# and the home agent's bindings and counters (bindings, b_json, cnt). $MIP6_HA_PREFIXES replaces the
# home agent's one home prefix (prefix 2001:db8:1::/64); $MIP6_HA_MORE adds home-agent statements
# after it, $MIP6_HOA and $MIP6_MN_HA replace the mobile node's home address and the home agent
# address it signals to, $MIP6_MN_MORE adds words to its mobile-node statement (router-prefix P/LEN
# makes it a mobile router), $MIP6_MN_JSON adds to the scapy mobile node's configuration
# (",\"key\": ..."), and a function mip6_topo_more, when defined, adds to the network before
# the configuration is loaded.
set -u
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/test_dp_common.sh"
. "$top_srcdir/tests/netns/test_mip6_common.sh"
xt_require ip tcpdump tshark socat nft
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
"$PYTHON" -c 'import scapy.layers.inet6, scapy.layers.ipsec' 2>/dev/null || xt_skip "needs python3-scapy"

HOA=${MIP6_HOA:-2001:db8:1::100}

mip6_topo
if declare -F mip6_topo_more >/dev/null; then mip6_topo_more; fi
ctl() { timeout 30 "$CTL" --sadb "$SADB" "$@"; }

key() { head -c 20 /dev/urandom | xxd -p -c 40; }
K_BA=$(key) K_BU=$(key) K_TO=$(key) K_TI=$(key)
cat > "$XT_DIR/ha.conf" <<EOF
home-agent $HA ${MIP6_HA_PREFIXES:-prefix 2001:db8:1::/64} lifetime 600
${MIP6_HA_MORE:-}
mobile-node $HOA \\
	signalling spi 0x2000:0x2001 enc aes128gcm16 key 0x$K_BA:0x$K_BU \\
	tunnel spi 0x3000:0x3001 enc aes128gcm16 key 0x$K_TO:0x$K_TI ${MIP6_MN_MORE:-}
EOF
ctl --new-keys load "$XT_DIR/ha.conf" || xt_fail "ipsecctl load of the home agent configuration"
mip6_start_ha ${MIP6_HA_OPTS:-}
bindings() { ctl --ctl "$XT_DIR/ha.sock" --json show bindings; }
b_json() { bindings > "$XT_DIR/b.json" || xt_fail "ipsecctl show bindings"; dp_json "$XT_DIR/b.json" "$1"; }

# the mobile node: its kernel holds the home address on tun0 and routes cn's prefix into it
mac() { xt_exec "$1" ip -br link show "$2" | awk '{print $3}'; }
rt1=$(mac rt eth1) rt2=$(mac rt eth2)
cat > "$XT_DIR/mn.json" <<EOF
{"hoa": "$HOA", "ha": "${MIP6_MN_HA:-$HA}", "tun": "tun0", "crypt_algo": "AES-GCM",
 "links": {"eth1": {"coa": "$COA1", "gw_mac": "$rt1"}, "eth2": {"coa": "$COA2", "gw_mac": "$rt2"}},
 "sa": {"bu": {"spi": 8193, "key": "$K_BU"}, "ba": {"spi": 8192, "key": "$K_BA"},
        "tun_out": {"spi": 12289, "key": "$K_TI"}, "tun_in": {"spi": 12288, "key": "$K_TO"}}
 ${MIP6_MN_JSON:-}}
EOF
mip6_start_mn
xt_exec mn sysctl -qw net.ipv6.conf.tun0.router_solicitations=0 net.ipv6.conf.tun0.addr_gen_mode=1
xt_exec mn ip link set tun0 up
xt_exec mn ip -6 addr add $HOA/128 dev tun0 nodad
xt_exec mn ip -6 route add 2001:db8:1::/64 dev tun0
xt_exec mn ip -6 route add default via 2001:db8:a::1 dev eth1

mn() { echo "$*" > "$XT_DIR/mn.fifo"; }
nba() { grep -c '"ev": "ba"' "$XT_DIR/mn.log"; }
ba() { grep '"ev": "ba"' "$XT_DIR/mn.log" | sed -n "${1}p"; }
ba_have() { [ "$(nba)" -ge "$1" ]; }
wait_ba() { # N: the N-th BA arrives within 5 s
	xt_wait 5 ba_have "$1" || {
		tail -5 "$XT_DIR/mn.log" >&2; tail -20 "$XT_DIR/xipsecd-ha.log" >&2
		"$XIPSECD" --status --ctl "$XT_DIR/ha.sock" >&2; bindings >&2; ctl show sa >&2
		xt_fail "no Binding Acknowledgement #$1"; }
}
ba_is() { # N EXPR: a python expression over the N-th BA (bound to b)
	ba "$1" > "$XT_DIR/ba.json"
	[ "$("$PYTHON" -c "import json,sys; b=json.load(open(sys.argv[1])); print($2)" "$XT_DIR/ba.json")" = True ] || xt_fail "BA #$1: not $2: $(cat "$XT_DIR/ba.json")"
}
cnt() { b_json "j['counters']['$1']"; }
