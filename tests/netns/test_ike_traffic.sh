#!/bin/bash
# tests/netns/test_ike_traffic.sh: IKE-keyed traffic end to end. Two gateways each run xipsec-iked
# and xipsecd on one SADB (topology of test_dp_common.sh: h1 - gw1 - bridge - gw2 - h2):
#  - IKEv2 (PSK): ping and a TCP transfer pass h1 <-> h2 (the gateways' kernels do not forward: only
#    xipsecd with the negotiated SAs can); `ipsecctl ike list` and swanctl show the CHILD SA's byte counts,
#    which xipsec-iked reads from the dataplane's counters in the SADB (query_sa);
#    with a 5 s soft / 8 s hard lifetime, a 13 s UDP stream is rekeyed at least twice with no loss.
#  - IKEv1 (Main + Quick Mode, PSK): a byte lifetime (300 kB soft / 600 kB hard) under a 2.4 MB UDP
#    stream: rekeyed on the dataplane's byte counts, no loss, never reaching hard.
#  - X.509 certificates (made with pki), IKEv2 and IKEv1 Main Mode: ping and TCP pass, and the SAs
#    `ipsecctl show` lists on both gateways match (inbound of one = outbound of the other, keys too).
# Zero loss across rekeys relies on xipsec-iked's dataplane_sync_ms (default 30): with 0, this test
# loses a few datagrams per rekey (the peer switches to the new SPI before xipsecd has loaded it).
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
xt_require ethtool socat ping ss
ike_require
. "$top_srcdir/tests/netns/test_dp_common.sh"

dp_topo 1
ike_dirs gw1 "$DP_SADB_gw1"
ike_dirs gw2 "$DP_SADB_gw2"

# v2: time lifetimes REKEY/LIFE; v1: byte lifetimes; cert2/cert1: X.509 (IKEv1 responders pick the IKE
# proposal before they know the connection: the same as v1's)
conf() { # SIDE ME PEER MYNET PEERNET REKEY LIFE MYNAME PEERNAME
	ike_swanctl "$1" "$2" "$3" \
		conn v2 2 aes128gcm16-prfsha256-x25519 \
			child net "$4" "$5" aes128gcm16 rekey_time="$6" life_time="$7" rand_time=0s \
		conn v1 1 aes128-sha256-modp2048 \
			child net "$4" "$5" aes128-sha256 rekey_time=0s rekey_bytes=300000 life_bytes=600000 rand_bytes=0 \
		conn cert2 2 aes128-sha256-modp2048 auth=pubkey id="$8" peer_id="$9" child net "$4" "$5" aes256gcm16 \
		conn cert1 1 aes128-sha256-modp2048 auth=pubkey id="$8" peer_id="$9" child net "$4" "$5" aes256gcm16
}
xt_require pki
ike_certs gw1 gw2
conf gw1 192.0.2.1 192.0.2.2 10.1.0.0/24 10.2.0.0/24 5s 8s gw-gw1 gw-gw2
conf gw2 192.0.2.2 192.0.2.1 10.2.0.0/24 10.1.0.0/24 60s 90s gw-gw2 gw-gw1
for gw in gw1 gw2; do ike_sconf "$gw" "delete_rekeyed_delay = 2"; done
ike_start gw1
ike_start gw2
dp_start gw1
dp_start gw2
# ---- IKEv2 ----
ike_ctl gw1 --initiate --ike v2 --child net >/dev/null || { ike_logs; xt_fail "IKEv2 initiate failed"; }
dp_ping h1 10.2.0.2
dp_ping h2 10.1.0.2
dp_tcp h1 h2 10.2.0.2 2000000
n=$(ike_match gw1 gw2) || exit 1
[ "$n" -eq 2 ] || xt_fail "IKEv2: expected 2 matching SAs, got $n"
if n=$(ike_ipsecctl_match gw1 gw2); then
	[ "$n" -eq 2 ] || xt_fail "ipsecctl show: $n SAs on gw1, expected 2"
else
	[ $? -eq 77 ] || xt_fail "IKEv2: the SAs ipsecctl show lists on gw1 and gw2 do not match"
fi
# charon's counters come from the dataplane (query_sa reads sadb_runtime)
bytes=$(ike_ctl gw1 --list-sas --ike v2 | awk '$1 == "out" { gsub(",", "", $3); print $3; exit }')
[ -n "$bytes" ] && [ "$bytes" -gt 1000000 ] || { ike_ctl gw1 --list-sas >&2; xt_fail "IKEv2: outbound byte count $bytes not from the dataplane"; }
if out=$(ike_ipsecctl gw1 list); then
	echo "$out" | grep -q "out .* [1-9][0-9]\{6,\} bytes" || { echo "$out" >&2; xt_fail "ipsecctl ike list shows no traffic"; }
fi
xt_log "IKEv2: ping and 2 MB TCP through the IKE-keyed tunnel, $bytes bytes counted outbound"

rk0=$(ike_status gw1 child_sa_rekeyed)
res=$(ike_udp_stream h1 h2 10.2.0.2 13 200)
rk=$(( $(ike_status gw1 child_sa_rekeyed) - rk0 ))
set -- $res
[ "$6" = 0 ] || xt_fail "IKEv2 rekey stream: $6 corrupt datagrams"
[ "$2" -eq "$4" ] || { ike_logs; dp_status gw1 >&2; dp_status gw2 >&2; xt_fail "IKEv2 rekey stream: sent $2, received $4 (loss while rekeying every 5 s)"; }
[ "$rk" -ge 2 ] || xt_fail "IKEv2: only $rk rekeys during the 13 s stream"
grep -q "<v2|.*closing expired CHILD_SA net" "$XT_DIR/iked-gw1.log" && xt_fail "IKEv2: the CHILD SA reached its hard lifetime"
xt_log "IKEv2: 5 s/8 s lifetime, $rk rekeys under a 13 s stream at 200 pps: $2 sent, $4 received"
ike_ctl gw1 --terminate --ike v2 >/dev/null || xt_fail "terminate v2 failed"
xt_wait 5 ike_nsa gw2 0 || xt_fail "IKEv2 SAs left on gw2"

# ---- IKEv1 ----
ike_ctl gw1 --initiate --ike v1 --child net >/dev/null || { ike_logs; xt_fail "IKEv1 initiate failed"; }
grep -q "xipsec: Main Mode established IKE_SA v1" "$XT_DIR/iked-gw1.log" || xt_fail "no Main Mode"
dp_ping h1 10.2.0.2
rk0=$(ike_status gw1 child_sa_rekeyed); rk0b=$(ike_status gw2 child_sa_rekeyed)
res=$(ike_udp_stream h1 h2 10.2.0.2 8 300)
rk=$(( $(ike_status gw1 child_sa_rekeyed) - rk0 + $(ike_status gw2 child_sa_rekeyed) - rk0b ))
set -- $res
[ "$6" = 0 ] || xt_fail "IKEv1 byte-lifetime stream: $6 corrupt datagrams"
[ "$2" -eq "$4" ] || { ike_logs; dp_status gw1 >&2; dp_status gw2 >&2; xt_fail "IKEv1 byte-lifetime stream: sent $2, received $4"; }
[ "$rk" -ge 3 ] || { ike_logs; xt_fail "IKEv1: only $rk rekeys for 2.4 MB over a 300 kB soft byte limit"; }
grep -q "closing expired CHILD_SA net" "$XT_DIR/iked-gw1.log" "$XT_DIR/iked-gw2.log" && xt_fail "IKEv1: a CHILD SA reached its hard byte limit"
xt_log "IKEv1: 300 kB/600 kB byte lifetime, $rk Quick Mode rekeys under 2.4 MB at 300 pps: $2 sent, $4 received"
ike_ctl gw1 --terminate --ike v1 >/dev/null || xt_fail "terminate v1 failed"
xt_wait 5 ike_nsa gw2 0 || xt_fail "IKEv1 SAs left on gw2"

# ---- certificates ----
for v in 2 1; do
	ike_ctl gw1 --initiate --ike cert$v --child net >/dev/null || { ike_logs; xt_fail "IKEv$v with certificates: initiate failed"; }
	dp_ping h1 10.2.0.2
	dp_tcp h2 h1 10.1.0.2 1000000
	n=$(ike_match gw1 gw2) || exit 1
	if n=$(ike_ipsecctl_match gw1 gw2); then
		[ "$n" -eq 2 ] || xt_fail "IKEv$v certificates: ipsecctl show lists $n SAs on gw1, expected 2"
	else
		[ $? -eq 77 ] || xt_fail "IKEv$v certificates: the SAs ipsecctl show lists on gw1 and gw2 do not match"
	fi
	ike_ctl gw1 --terminate --ike cert$v >/dev/null || xt_fail "terminate cert$v failed"
	xt_wait 5 ike_nsa gw2 0 || xt_fail "IKEv$v certificate SAs left on gw2"
done
[ "$(grep -c "authentication of 'gw-gw2' with ECDSA" "$XT_DIR/iked-gw1.log")" -eq 2 ] ||
	{ ike_logs; xt_fail "gw2 was not authenticated twice by its ECDSA certificate"; }
xt_log "certificates: IKEv2 and IKEv1 Main Mode, ping and 1 MB TCP, ipsecctl show matches on both gateways"
dp_finish
ike_check_logs
xt_log "PASS: IKE-keyed traffic through xipsecd, IKEv2 time and IKEv1 byte rekeying without loss"
exit 0
