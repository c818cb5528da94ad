# tests/netns/mip6_ike_common.sh: sourced by the tests of mobile nodes keyed by IKEv2
# (test_mip6_ike.sh, test_mip6_cp.sh): the libraries of their bed (lib.sh, test_dp_common.sh,
# test_mip6_common.sh's network, ike_common.sh's xipsec-iked on both sides), what they need, and
# mip6_link, one link of scapy's mobile node in its configuration.
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
