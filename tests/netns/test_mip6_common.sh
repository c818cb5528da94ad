# tests/netns/test_mip6_common.sh: sourced by the Mobile IPv6 home agent's netns tests
# (test_mip6_ha.sh, test_mip6_flood.sh): their network and xipsecd on the home agent.
#
#   cn (2001:db8:1::10) -- [in0 | out0] ha -- rt -- eth1 mn (care-of $COA1 = 2001:db8:a::100)
#   home link 2001:db8:1::/64  HA 2001:db8:1::1       \- eth2 mn (care-of $COA2 = 2001:db8:b::100)
#                              (2001:db8:f::1 outside)
HA=2001:db8:1::1 CN=2001:db8:1::10 COA1=2001:db8:a::100 COA2=2001:db8:b::100

# mip6_topo: the namespaces and links above, the SADB of ha in $SADB
mip6_topo() {
	for ns in cn ha rt mn; do
		xt_ns_add "$ns"
		xt_exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	done
	xt_veth cn eth0 ha in0
	xt_veth ha out0 rt eth0
	xt_veth rt eth1 mn eth1
	xt_veth rt eth2 mn eth2
	xt_exec cn ip -6 addr add $CN/64 dev eth0 nodad
	xt_exec ha ip -6 addr add $HA/64 dev in0 nodad
	xt_exec ha ip -6 addr add 2001:db8:f::1/64 dev out0 nodad
	xt_exec ha ip -6 route add default via 2001:db8:f::2
	# only xipsecd forwards on the home agent
	xt_exec ha sysctl -qw net.ipv6.conf.all.forwarding=0
	xt_exec rt ip -6 addr add 2001:db8:f::2/64 dev eth0 nodad
	xt_exec rt ip -6 addr add 2001:db8:a::1/64 dev eth1 nodad
	xt_exec rt ip -6 addr add 2001:db8:b::1/64 dev eth2 nodad
	xt_exec rt ip -6 route add 2001:db8:1::/64 via 2001:db8:f::1
	xt_exec rt sysctl -qw net.ipv6.conf.all.forwarding=1
	xt_exec mn ip -6 addr add $COA1/64 dev eth1 nodad
	xt_exec mn ip -6 addr add $COA2/64 dev eth2 nodad
	for ns in cn mn; do xt_exec "$ns" ethtool -K eth1 tx off >/dev/null 2>&1; done
	xt_exec cn ethtool -K eth0 tx off >/dev/null
	dp_sadb ha
	SADB=$(dp_sadb_of ha)
}

# mip6_start_ha [XIPSECD-OPTION...]: xipsecd on ha, its control socket $XT_DIR/ha.sock
mip6_start_ha() {
	xt_bg ha xipsecd-ha "$XIPSECD" --inside in0 --outside out0 --sadb "$SADB" --ctl "$XT_DIR/ha.sock" "$@"
	xt_wait 20 "$XIPSECD" --status --ctl "$XT_DIR/ha.sock" ||
		{ cat "$XT_DIR/xipsecd-ha.log" >&2; xt_fail "xipsecd on ha did not start"; }
}

# mip6_start_mn: scapy's mobile node (test_mip6_mn.py) in mn, configured by $XT_DIR/mn.json; its
# commands go to $XT_DIR/mn.fifo, its events to $XT_DIR/mn.log
mip6_start_mn() {
	mkfifo "$XT_DIR/mn.fifo"
	xt_bg mn mn "$PYTHON" -u "$top_srcdir/tests/netns/test_mip6_mn.py" "$XT_DIR/mn.json" "$XT_DIR/mn.fifo"
	xt_wait 20 grep -q '"ev": "ready"' "$XT_DIR/mn.log" ||
		{ cat "$XT_DIR/mn.log" >&2; xt_fail "mobile node did not start"; }
}
