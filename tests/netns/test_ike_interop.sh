#!/bin/bash
# tests/netns/test_ike_interop.sh: xipsec-iked (A) against strongSwan's stock charon (B) using the
# kernel-libipsec plugin (strongSwan's own user-space ESP over a TUN device), an implementation none
# of us wrote. kernel-libipsec requires UDP encapsulation, so B fakes a NAT and both ends use NAT-T.
# For IKEv2 and IKEv1 (Main + Quick Mode), with A and then B initiating, checks that IKE completes and
# that A's SADB holds exactly the SAs charon reports: A's inbound SPI is B's outbound SPI and the other
# way round, same transform, ESP-in-UDP on port 4500 at both ends.
# The stock charon writes /var/run/charon.pid: it runs in its own mount namespace with a private /run.
# Traffic between the two (needs xipsecd) is in test_ike_traffic.sh.
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
ike_require
xt_require unshare /usr/lib/ipsec/charon
[ -f /usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so ] || xt_skip "kernel-libipsec plugin missing (libcharon-extra-plugins)"
[ -c /dev/net/tun ] || xt_skip "no /dev/net/tun"
ike_pair
for s in A B; do ike_dirs $s; done
# kernel-libipsec routes the remote subnets into its TUN device with a source address from the local
# subnet: B needs addresses there, as a gateway has on its inside network
ip -n "$(xt_ns B)" addr add 10.2.1.1/24 dev lo
ip -n "$(xt_ns B)" addr add 10.2.2.1/24 dev lo

conf() { # SIDE ME PEER MYNET PEERNET
	ike_swanctl "$1" "$2" "$3" \
		conn v2 2 aes128gcm16-prfsha256-ecp256 child n2 "$4.2.0/24" "$5.2.0/24" aes128gcm16 \
		conn v1 1 aes128-sha256-modp2048 child n1 "$4.1.0/24" "$5.1.0/24" aes128-sha256
}
conf A 10.9.0.1 10.9.0.2 10.1 10.2
conf B 10.9.0.2 10.9.0.1 10.2 10.1

ike_start_stock B
grep -q "kernel-libipsec" "$XT_DIR/charon-B.log" || xt_fail "B's charon did not load kernel-libipsec"
ike_start A

# B's view from VICI: lines "CHILD in SPI" / "out SPI"
spis() { ike_ctl "$1" --list-sas --child "$2" | awk '$1 == "in" || $1 == "out" { sub(",", "", $2); print $1, $2 }'; }

check_child() { # CHILD TS-SUBSTRING ENC
	local c=$1 sel=$2 enc=$3 bin bout
	bin=$(spis B "$c" | awk '$1 == "in" {print $2}')
	bout=$(spis B "$c" | awk '$1 == "out" {print $2}')
	[ -n "$bin" ] && [ -n "$bout" ] || { ike_ctl B --list-sas >&2; xt_fail "$c: charon lists no SPIs"; }
	# A's outbound SA carries B's inbound SPI towards B, A's inbound SA B's outbound SPI
	ike_dump A | grep -q "^spi=$bin proto=50 mode=2 src=10.9.0.1 dst=10.9.0.2 enc=$enc .* encap=4500/4500 | dir=out" ||
		{ ike_dump A >&2; xt_fail "$c: A has no outbound SA $bin (UDP 4500) matching charon's inbound SA"; }
	ike_dump A | grep -q "^spi=$bout proto=50 mode=2 src=10.9.0.2 dst=10.9.0.1 enc=$enc .* encap=4500/4500 | dir=in" ||
		{ ike_dump A >&2; xt_fail "$c: A has no inbound SA $bout (UDP 4500) matching charon's outbound SA"; }
	[ "$(ike_dump A | grep -c "sel=.*$sel")" -eq 2 ] || { ike_dump A >&2; xt_fail "$c: A does not hold exactly 2 SAs"; }
}

for who in A B; do
	ike_ctl $who --initiate --child n2 >/dev/null || { ike_logs; cat "$XT_DIR/charon-B.log" >&2; xt_fail "IKEv2 initiated by $who failed"; }
	ike_ctl $who --initiate --child n1 >/dev/null || { ike_logs; cat "$XT_DIR/charon-B.log" >&2; xt_fail "IKEv1 initiated by $who failed"; }
	xt_wait 5 ike_nsa A 4 || { ike_dump A >&2; ike_logs; xt_fail "A does not hold 4 SAs ($who initiating)"; }
	check_child n2 "10.2.2.0/24" aes-gcm-16
	check_child n1 "10.2.1.0/24" aes-cbc
	grep -q "faking NAT situation to enforce UDP encapsulation" "$XT_DIR/charon-B.log" ||
		xt_fail "B did not force UDP encapsulation"
	xt_log "$who initiating: IKEv2 and IKEv1 with stock charon/kernel-libipsec: SADB matches charon's SAs"
	ike_ctl $who --terminate --ike v2 >/dev/null || xt_fail "terminate v2 failed"
	ike_ctl $who --terminate --ike v1 >/dev/null || xt_fail "terminate v1 failed"
	xt_wait 5 ike_nsa A 0 || { ike_dump A >&2; xt_fail "A kept SAs after terminate"; }
done
grep -q "xipsec: Main Mode established IKE_SA v1" "$XT_DIR/iked-A.log" || xt_fail "no Main Mode logged on A"
ike_check_logs
xt_log "PASS: interoperates with stock charon + kernel-libipsec (NAT-T), IKEv1 and IKEv2, either side initiating"
exit 0
