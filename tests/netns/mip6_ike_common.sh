# tests/netns/mip6_ike_common.sh: sourced by the tests of mobile nodes keyed by IKEv2
# (test_mip6_ike.sh, test_mip6_cp.sh): the libraries of their bed (lib.sh, test_dp_common.sh,
# test_mip6_common.sh's network, ike_common.sh's xipsec-iked on both sides), what they need, and
# the helpers that write mn's swanctl.conf (mip6_mn_child, mip6_mn_conn) and scapy's configuration
# (mip6_link).
set -u
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/test_dp_common.sh"
. "$top_srcdir/tests/netns/test_mip6_common.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
ike_require
xt_require ip tcpdump tshark
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
"$PYTHON" -c 'import scapy.layers.inet6, scapy.layers.ipsec' 2>/dev/null || xt_skip "needs python3-scapy"

# mip6_link IFACE COA: mn's link IFACE with its care-of address and the router's MAC on it (JSON)
mip6_link() { echo "\"$1\": {\"coa\": \"$2\", \"gw_mac\": \"$(xt_exec rt ip -br link show $1 | awk '{print $3}')\"}"; }

# mip6_mn_child NAME HOA: a mobile node's two children in mn's swanctl.conf, NAME-sig (signalling,
# transport_proxy, the Mobility Header) and NAME-tun (its tunnel), for the home address HOA, or for
# the one the home agent assigns when HOA is "dynamic"
mip6_mn_child() {
	local a=$2/128
	[ "$2" = dynamic ] && a=dynamic
	cat <<EOT
      $1-sig { mode = transport_proxy
        local_ts = $a[135]
        remote_ts = $HA/128[135]
        esp_proposals = aes128gcm16 }
      $1-tun { mode = tunnel
        local_ts = $a
        remote_ts = ::/0
        esp_proposals = aes128gcm16 }
EOT
}

# mip6_mn_conn NAME ID COA CHILDREN [LINE]: mn's connection NAME to the home agent (ha.example at $HA,
# PSK) as identity ID from the care-of address COA, with CHILDREN and one more setting LINE
mip6_mn_conn() {
	cat <<EOT
  $1 {
    version = 2
    local_addrs = $3
    remote_addrs = $HA
    ${5:-}
    proposals = aes128gcm16-prfsha256-ecp256
    local { auth = psk
      id = $2 }
    remote { auth = psk
      id = ha.example }
    children {
$4
    }
  }
EOT
}
