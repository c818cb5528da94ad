#!/bin/bash
# tests/netns/test_ike_mobike.sh: new endpoints of installed SAs (kernel-ipsec update_sa, which the
# backend turns into sadb_sa_migrate). A moves from 10.9.0.1 to 10.9.0.11 while an IKEv2 SA with
# MOBIKE is up: charon on A notices the address change (kernel-netlink) and sends
# UPDATE_SA_ADDRESSES; both daemons must move the outer addresses of their SAs in the SADB without
# rekeying (same SPIs, same keys), and both SADBs must still match.
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
ike_require
ike_pair
for s in A B; do ike_dirs $s; done

conf() { # SIDE ME PEER MYNAME PEERNAME MYNET PEERNET
	ike_swanctl "$1" "$2" "$3" conn m 2 aes128gcm16-prfsha256-x25519 mobike=yes id="$4" peer_id="$5" \
		child net "$6" "$7" aes128gcm16
}
# A may use any of its addresses; B accepts A wherever it comes from (%any)
conf A %any 10.9.0.2 gw-a gw-b 10.1.0.0/24 10.2.0.0/24
conf B 10.9.0.2 %any gw-b gw-a 10.2.0.0/24 10.1.0.0/24
ike_start A
ike_start B
ike_ctl A --initiate --child net >/dev/null || { ike_logs; xt_fail "initiate failed"; }
xt_wait 5 ike_nsa B 2 || { ike_dump B >&2; xt_fail "B does not hold 2 SAs"; }
n=$(ike_match A B) || exit 1
before_a=$(ike_dump A | sed 's/ src=[^ ]* dst=[^ ]*//; s/ | .*//' | sort)
ike_dump A | grep -q "src=10.9.0.1 dst=10.9.0.2 .* | dir=out" || { ike_dump A >&2; xt_fail "unexpected outbound endpoints before the move"; }

# the move: new address first, then the old one goes (the secondary must survive its primary)
xt_exec A sysctl -qw net.ipv4.conf.va.promote_secondaries=1
ip -n "$(xt_ns A)" addr add 10.9.0.11/24 dev va
sleep 0.5
ip -n "$(xt_ns A)" addr del 10.9.0.1/24 dev va
moved() {
	ike_dump A | grep -q "src=10.9.0.11 dst=10.9.0.2 .* | dir=out" &&
	ike_dump A | grep -q "src=10.9.0.2 dst=10.9.0.11 .* | dir=in" &&
	ike_dump B | grep -q "src=10.9.0.2 dst=10.9.0.11 .* | dir=out" &&
	ike_dump B | grep -q "src=10.9.0.11 dst=10.9.0.2 .* | dir=in"
}
xt_wait 15 moved || { ike_dump A >&2; ike_dump B >&2; ike_logs; xt_fail "the SAs did not move to 10.9.0.11 on both sides"; }
grep -q "N(UPD_SA_ADDR)" "$XT_DIR/iked-B.log" || { ike_logs; xt_fail "no MOBIKE UPDATE_SA_ADDRESSES seen by B"; }
[ "$(ike_dump A | wc -l)" -eq 2 ] && [ "$(ike_dump B | wc -l)" -eq 2 ] || { ike_dump A >&2; ike_dump B >&2; xt_fail "SAs added or lost by the move"; }
# same SPIs, same keys: only the endpoints changed
after_a=$(ike_dump A | sed 's/ src=[^ ]* dst=[^ ]*//; s/ | .*//' | sort)
[ "$before_a" = "$after_a" ] || { echo "$before_a" >&2; echo "$after_a" >&2; xt_fail "the move changed more than the endpoints"; }
n=$(ike_match A B) || exit 1
[ "$n" -eq 2 ] || xt_fail "expected 2 matching SAs after the move, got $n"
ike_check_logs
xt_log "PASS: MOBIKE address change moved the SAs' endpoints in both SADBs, SPIs and keys kept"
exit 0
