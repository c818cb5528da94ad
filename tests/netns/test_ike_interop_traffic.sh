#!/bin/bash
# tests/netns/test_ike_interop_traffic.sh: traffic between our gateway and strongSwan's. gw1 runs
# xipsec-iked + xipsecd; gw2 runs the stock charon with kernel-libipsec (strongSwan's own user-space
# ESP behind a TUN device, always ESP-in-UDP): an ESP implementation none of us wrote. For IKEv2 and
# IKEv1 (Main + Quick Mode): IKE completes, ping and TCP pass both ways h1 <-> h2, and the ESP-in-UDP
# both ends exchange is counted by both (xipsecd's SA counters via charon on gw1, libipsec's on gw2).
# The stock charon writes /var/run/charon.pid: it runs in its own mount namespace with a private /run.
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
xt_require ethtool socat ping ss unshare /usr/lib/ipsec/charon
ike_require
[ -f /usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so ] || xt_skip "kernel-libipsec plugin missing (libcharon-extra-plugins)"
[ -c /dev/net/tun ] || xt_skip "no /dev/net/tun"
. "$top_srcdir/tests/netns/test_dp_common.sh"

dp_topo 1
# gw2 is a plain Linux router whose IPsec is libipsec: its kernel forwards (into and out of the TUN)
xt_exec gw2 sysctl -qw net.ipv4.ip_forward=1
ike_dirs gw1 "$DP_SADB_gw1"
ike_dirs gw2

conf() { # SIDE ME PEER MYNET PEERNET
	ike_swanctl "$1" "$2" "$3" \
		conn v2 2 aes128gcm16-prfsha256-ecp256 child net "$4" "$5" aes128gcm16 \
		conn v1 1 aes128-sha256-modp2048 child net "$4" "$5" aes128-sha256
}
conf gw1 192.0.2.1 192.0.2.2 10.1.0.0/24 10.2.0.0/24
conf gw2 192.0.2.2 192.0.2.1 10.2.0.0/24 10.1.0.0/24
ike_start_stock gw2
ike_start gw1
dp_start gw1

counts() { # SIDE IKE: "bytes_in bytes_out" of the CHILD SA as charon reports them
	ike_ctl "$1" --list-sas --ike "$2" | awk '$1 == "in" { gsub(",", "", $3); i = $3 } $1 == "out" { gsub(",", "", $3); o = $3 } END { print i + 0, o + 0 }'
}

for v in v2 v1; do
	ike_ctl gw1 --initiate --ike $v --child net >/dev/null || { ike_logs; cat "$XT_DIR/charon-gw2.log" >&2; xt_fail "$v: initiate failed"; }
	ike_dump gw1 | grep -q "encap=4500/4500 | dir=out" || { ike_dump gw1 >&2; xt_fail "$v: our outbound SA is not UDP-encapsulated"; }
	dp_ping h1 10.2.0.2
	dp_ping h2 10.1.0.2
	dp_tcp h1 h2 10.2.0.2 1000000
	dp_tcp h2 h1 10.1.0.2 1000000
	set -- $(counts gw1 $v); in1=$1 out1=$2
	set -- $(counts gw2 $v); in2=$1 out2=$2
	for n in "$in1" "$out1" "$in2" "$out2"; do
		[ "$n" -gt 1000000 ] || { ike_ctl gw1 --list-sas >&2; ike_ctl gw2 --list-sas >&2; xt_fail "$v: an SA carried only $n bytes"; }
	done
	xt_log "$v: ping and 1 MB TCP each way with stock charon/kernel-libipsec: xipsecd in/out $in1/$out1 B, libipsec in/out $in2/$out2 B"
	ike_ctl gw1 --terminate --ike $v >/dev/null || xt_fail "$v: terminate failed"
	xt_wait 5 ike_nsa gw1 0 || { ike_dump gw1 >&2; xt_fail "$v: SAs left after terminate"; }
done
dp_finish
ike_check_logs
xt_log "PASS: traffic both ways between xipsecd/xipsec-iked and charon/kernel-libipsec, IKEv2 and IKEv1, NAT-T"
exit 0
