#!/usr/bin/env bash
# tests/netns/test_dp_scapy.sh: interoperability with an ESP implementation nobody here wrote. gw1 runs
# xipsecd; gw2 is a peer gateway made of scapy's SecurityAssociation (test_dp_scapy_peer.py) and the
# kernel's forwarding. IPv4-in-IPv4 with AES-GCM-128 and IPv6-in-IPv6 with AES-CBC + HMAC-SHA256-128:
# ping and TCP (1 MB, compared) both ways between h1 and h2.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool socat ping ss
. "$top_srcdir/tests/netns/test_dp_common.sh"
"$PYTHON" -c 'import scapy.layers.ipsec' 2>/dev/null || xt_skip "scapy missing for $PYTHON"

dp_topo 1
# gw1: ours
k() { dp_sa_keys "$1" "$2" | cut -d' ' -f2-; }
dp_ctl gw1 policy out protect 10.1.0.0/24 10.2.0.0/24 reqid 1 esp tunnel 192.0.2.1 192.0.2.2
dp_ctl gw1 policy fwd protect 10.2.0.0/24 10.1.0.0/24 reqid 1 esp tunnel 192.0.2.2 192.0.2.1
dp_ctl gw1 policy out protect fd01::/64 fd02::/64 reqid 2 esp tunnel fd00::1 fd00::2
dp_ctl gw1 policy fwd protect fd02::/64 fd01::/64 reqid 2 esp tunnel fd00::2 fd00::1
# shellcheck disable=SC2046
{
dp_ctl gw1 sa out 0x8001 esp tunnel 192.0.2.1 192.0.2.2 reqid 1 $(k gcm 0x8001)
dp_ctl gw1 sa in 0x8002 esp tunnel 192.0.2.2 192.0.2.1 reqid 1 $(k gcm 0x8002)
dp_ctl gw1 sa out 0x8003 esp tunnel fd00::1 fd00::2 reqid 2 $(k cbc 0x8003)
dp_ctl gw1 sa in 0x8004 esp tunnel fd00::2 fd00::1 reqid 2 $(k cbc 0x8004)
}
dp_start gw1

# gw2: scapy, the same keys
cat > "$XT_DIR/peer.json" <<JSON
{"v4": {"out_spi": $((0x8002)), "in_spi": $((0x8001)), "crypt_algo": "AES-GCM",
        "out_key": "$(dp_key 0x8002 20)", "in_key": "$(dp_key 0x8001 20)", "auth_algo": null},
 "v6": {"out_spi": $((0x8004)), "in_spi": $((0x8003)), "crypt_algo": "AES-CBC",
        "out_key": "$(dp_key 0x8004 16)", "in_key": "$(dp_key 0x8003 16)",
        "auth_algo": "SHA2-256-128",
        "out_auth": "$(dp_key $((0x8004 + 1)) 32)", "in_auth": "$(dp_key $((0x8003 + 1)) 32)"}}
JSON
xt_bg gw2 peer "$PYTHON" "$top_srcdir/tests/netns/test_dp_scapy_peer.py" sp0 192.0.2.2 192.0.2.1 \
	fd00::2 fd00::1 "$XT_DIR/peer.json"
xt_wait 30 grep -q ready "$XT_DIR/peer.log" || { cat "$XT_DIR/peer.log" >&2; xt_fail "scapy peer did not start"; }
xt_exec gw2 sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
	net.ipv4.conf.all.rp_filter=0
xt_exec gw2 ip link set sp0 mtu 1400 up
xt_exec gw2 sysctl -qw net.ipv4.conf.sp0.rp_filter=0
xt_exec gw2 ip route replace 10.1.0.0/24 dev sp0
xt_exec gw2 ip -6 route replace fd01::/64 dev sp0

dp_ping h1 10.2.0.2 -W 3
dp_ping h2 10.1.0.2 -W 3
dp_ping h1 fd02::2 -W 3
dp_ping h2 fd01::2 -W 3
dp_tcp h1 h2 10.2.0.2 1000000
dp_tcp h2 h1 10.1.0.2 1000000
dp_tcp h1 h2 fd02::2 1000000
dp_tcp h2 h1 fd01::2 1000000
tail -1 "$XT_DIR/peer.log" | grep -q '"bad": 0' || xt_fail "the scapy peer rejected packets: $(tail -3 "$XT_DIR/peer.log")"
xt_log "scapy peer: $(tail -1 "$XT_DIR/peer.log")"
dp_finish
exit 0
