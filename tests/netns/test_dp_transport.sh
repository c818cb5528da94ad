#!/usr/bin/env bash
# tests/netns/test_dp_transport.sh: transport-mode ESP between the two gateways themselves, their own
# traffic entering and leaving xipsecd through its TUN device (routes to the peer point into it):
# ping and TCP (2 MB, compared) over IPv4 and IPv6 with AES-GCM and AES-CBC + HMAC-SHA256; the
# capture between the gateways holds only ESP and tshark decrypts it; the gateways' kernels wrote
# nothing of their own into the TUN device (no link-local address there: no router solicitations).
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool socat ping ss tcpdump tshark
. "$top_srcdir/tests/netns/test_dp_common.sh"

dp_topo 1
transport() { # XFORM 4|6 REQID SPI1 SPI2
	local xf=$1 fam=$2 reqid=$3 spi1=$4 spi2=$5 a1 a2 k1 k2 pl
	if [ "$fam" = 4 ]; then a1=192.0.2.1 a2=192.0.2.2 pl=32; else a1=fd00::1 a2=fd00::2 pl=128; fi
	k1=$(dp_sa_keys "$xf" "$spi1"); k2=$(dp_sa_keys "$xf" "$spi2")
	dp_ctl gw1 policy out protect "$a1/$pl" "$a2/$pl" reqid "$reqid" esp transport
	dp_ctl gw1 policy in protect "$a2/$pl" "$a1/$pl" reqid "$reqid" esp transport
	dp_ctl gw2 policy out protect "$a2/$pl" "$a1/$pl" reqid "$reqid" esp transport
	dp_ctl gw2 policy in protect "$a1/$pl" "$a2/$pl" reqid "$reqid" esp transport
	# shellcheck disable=SC2086
	{
	dp_ctl gw1 sa in "$spi2" esp transport "$a2" "$a1" reqid "$reqid" ${k2#* }
	dp_ctl gw2 sa in "$spi1" esp transport "$a1" "$a2" reqid "$reqid" ${k1#* }
	dp_ctl gw1 sa out "$spi1" esp transport "$a1" "$a2" reqid "$reqid" ${k1#* }
	dp_ctl gw2 sa out "$spi2" esp transport "$a2" "$a1" reqid "$reqid" ${k2#* }
	}
}
transport gcm 4 1 0x7001 0x7002
transport cbc 6 2 0x7003 0x7004
dp_start gw1
dp_start gw2
for gw in gw1 gw2; do
	xt_exec "$gw" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.xipsec0.rp_filter=0
done
xt_exec gw1 ip route add 192.0.2.2/32 dev xipsec0 src 192.0.2.1
xt_exec gw2 ip route add 192.0.2.1/32 dev xipsec0 src 192.0.2.2
xt_exec gw1 ip -6 route add fd00::2/128 dev xipsec0 src fd00::1
xt_exec gw2 ip -6 route add fd00::1/128 dev xipsec0 src fd00::2

dp_capture_start tr sw s1
dp_ping gw1 192.0.2.2
dp_ping gw2 fd00::1
dp_tcp gw1 gw2 192.0.2.2 2000000
dp_tcp gw2 gw1 fd00::1 2000000
dp_capture_stop tr

n=$(dp_only_ipsec "$XT_DIR/tr.pcap") || xt_fail "plaintext seen between the gateways"
[ "$n" -gt 500 ] || xt_fail "only $n ESP packets captured"
args=$(dp_tshark_args gw1 | tr '\n' ' ')
rows=$(eval "timeout 120 tshark -r '$XT_DIR/tr.pcap' $args -Y 'esp && icmp.type==8 && ip.src==192.0.2.1' -T fields -e icmp.seq" | wc -l)
[ "$rows" -ge 5 ] || xt_fail "tshark decrypted $rows transport-mode echo requests (want 5)"
rows=$(eval "timeout 120 tshark -r '$XT_DIR/tr.pcap' $args -Y 'esp && tcp.len > 0 && ipv6.src==fd00::2' -T fields -e tcp.seq" | wc -l)
[ "$rows" -ge 100 ] || xt_fail "tshark decrypted only $rows IPv6 transport-mode TCP segments"
for gw in gw1 gw2; do
	dp_status "$gw" > "$XT_DIR/$gw.json"
	[ "$(dp_json "$XT_DIR/$gw.json" "j['worker'][0]['from_tun']")" -gt 100 ] || xt_fail "$gw: TUN not used"
	[ "$(dp_json "$XT_DIR/$gw.json" "j['worker'][0]['to_tun']")" -gt 100 ] || xt_fail "$gw: nothing delivered to TUN"
	# the TUN device has no link-local address, so its kernel sent no router solicitation or MLD
	# report into it: nothing without a policy came from it (dp_tun.c)
	xt_exec "$gw" ip -6 addr show dev xipsec0 | grep -q fe80 &&
		xt_fail "$gw: the TUN device has a link-local address: $(xt_exec "$gw" ip -6 addr show dev xipsec0)"
	[ "$(dp_json "$XT_DIR/$gw.json" "j['worker'][0]['drops'].get('no_policy', 0)")" = 0 ] ||
		xt_fail "$gw: packets without a policy: $(dp_json "$XT_DIR/$gw.json" "j['worker'][0]['drops']")"
done
dp_finish
exit 0
