#!/bin/bash
# tests/netns/test_ike_auth.sh: authentication and exchange variants between two xipsec-iked:
#  - X.509 certificates made here with strongSwan's pki (a test CA, one ECDSA certificate per gateway),
#    IKEv2 and IKEv1 Main Mode;
#  - IKEv1 Aggressive Mode with PSK;
#  - Quick Mode with PFS (IKEv1, modp2048) and IKEv2 CREATE_CHILD_SA with PFS (ecp256);
#  - dead peer detection: B dies without a word (SIGKILL); A notices on the IKEv2 SA (cert2) and the
#    Aggressive Mode SA (aggr), which have DPD, and removes their SAs and policies from its SADB, while
#    the IKEv1 certificate SA (cert1, no DPD) stays.
# After each establishment both SADBs must match (inbound of one = outbound of the other).
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
ike_require
xt_require pki
ike_pair
for s in A B; do ike_dirs $s; done

ike_certs A B

conf() { # SIDE ME PEER MYNET PEERNET MYNAME PEERNAME
	# cert2: with MOBIKE a retransmission timeout makes charon look for another path instead of closing.
	# aggr: the responder picks the IKE proposal before it knows which connection: same as cert1.
	ike_swanctl "$1" "$2" "$3" \
		conn cert2 2 aes128gcm16-prfsha256-ecp256 dpd_delay=1s mobike=no auth=pubkey id="$6" peer_id="$7" \
			child c2 "$4.2.0/24" "$5.2.0/24" aes128gcm16 dpd_action=clear \
			child c2pfs "$4.3.0/24" "$5.3.0/24" aes128gcm16-ecp256 \
		conn cert1 1 aes128-sha256-ecp256 auth=pubkey id="$6" peer_id="$7" \
			child c1 "$4.1.0/24" "$5.1.0/24" aes256-sha256 \
		conn aggr 1 aes128-sha256-ecp256 aggressive=yes dpd_delay=1s dpd_timeout=3s id="psk-$6" peer_id="psk-$7" \
			child am "$4.4.0/24" "$5.4.0/24" aes128gcm16-modp2048 dpd_action=clear
}
conf A 10.9.0.1 10.9.0.2 10.1 10.2 gw-A gw-B
conf B 10.9.0.2 10.9.0.1 10.2 10.1 gw-B gw-A
# Aggressive Mode with PSK exposes a hash of the key to a passive attacker: charon (as responder)
# refuses it unless told otherwise. Fast retransmissions make IKEv2 dead peer detection quick.
ike_sconf A "retransmit_timeout = 0.5" "retransmit_tries = 2" "retransmit_base = 1.2"
ike_sconf B "i_dont_care_about_security_and_use_aggressive_mode_psk = yes"
ike_start A
ike_start B

for c in c2 c2pfs c1 am; do
	ike_ctl A --initiate --child $c >/dev/null || { ike_logs; xt_fail "initiating $c failed"; }
done
xt_wait 5 ike_nsa B 8 || { ike_dump B >&2; ike_logs; xt_fail "B's SADB does not hold 8 SAs"; }
[ "$(ike_dump A | wc -l)" -eq 8 ] || { ike_dump A >&2; xt_fail "A's SADB does not hold 8 SAs"; }
n=$(ike_match A B) || exit 1
[ "$n" -eq 8 ] || xt_fail "expected 8 matching SAs, got $n"

sas=$(ike_ctl A --list-sas)
echo "$sas" | grep -q "cert2: #.*ESTABLISHED, IKEv2" || { echo "$sas" >&2; xt_fail "no IKEv2 certificate SA"; }
echo "$sas" | grep -q "cert1: #.*ESTABLISHED, IKEv1" || { echo "$sas" >&2; xt_fail "no IKEv1 certificate SA"; }
grep -q 'using certificate "C=CH, O=xipsec test, CN=gw-B"' "$XT_DIR/iked-A.log" ||
	{ ike_logs; xt_fail "gw-B's certificate was not used"; }
grep -q 'using trusted ca certificate "C=CH, O=xipsec test, CN=xipsec test CA"' "$XT_DIR/iked-A.log" ||
	{ ike_logs; xt_fail "gw-B's certificate was not checked against the test CA"; }
[ "$(grep -c "authentication of 'gw-B' with ECDSA" "$XT_DIR/iked-A.log")" -eq 2 ] ||
	{ ike_logs; xt_fail "not two ECDSA signature authentications of gw-B (IKEv1 + IKEv2)"; }
grep -q "xipsec: Aggressive Mode established IKE_SA aggr" "$XT_DIR/iked-A.log" || { ike_logs; xt_fail "no Aggressive Mode logged"; }
grep -q "xipsec: Main Mode established IKE_SA cert1" "$XT_DIR/iked-A.log" || xt_fail "no Main Mode with certificates logged"
# PFS: the Quick Mode of 'am' and the CREATE_CHILD_SA of 'c2pfs' carried a key exchange, c2 (IKE_AUTH) not
echo "$sas" | grep -A1 "^  am: #" | grep -q "MODP_2048" || { echo "$sas" >&2; xt_fail "Quick Mode without PFS"; }
echo "$sas" | grep -A1 "^  c2pfs: #" | grep -q "ECP_256" || { echo "$sas" >&2; xt_fail "CREATE_CHILD_SA without PFS"; }
echo "$sas" | grep -A1 "^  c2: #" | grep -q "ECP_256\|MODP" && { echo "$sas" >&2; xt_fail "c2 unexpectedly shows a PFS group"; }

# ---- dead peer detection ----
xt_stop iked-B KILL
xt_wait 20 ike_nsa A 2 || { ike_dump A >&2; ike_logs; xt_fail "A did not clear the dead peer's SAs"; }
ike_dump A | grep -q "enc=aes-cbc" || { ike_dump A >&2; xt_fail "the SAs left are not cert1's (no DPD)"; }
np=$(ike_dump A --policies | wc -l)
[ "$np" -eq 3 ] || { ike_dump A --policies >&2; xt_fail "A has $np policies after DPD, expected cert1's 3"; }
grep -q "<aggr|.*DPD check timed out" "$XT_DIR/iked-A.log" || { ike_logs; xt_fail "no IKEv1 DPD timeout in A's log"; }
grep -q "<cert2|.*giving up after" "$XT_DIR/iked-A.log" || { ike_logs; xt_fail "no IKEv2 DPD (retransmission give-up) in A's log"; }
# B was killed with its SAs in its SADB: a new daemon on that SADB removes what no charon knows any more
[ "$(ike_dump B | wc -l)" -eq 8 ] || { ike_dump B >&2; xt_fail "B's SADB does not hold the 8 SAs of the killed daemon"; }
rm -f "$XT_DIR/B/run/charon.vici"
ike_start B --no-load
ike_nsa B 0 || { ike_dump B >&2; xt_fail "the restarted daemon left the killed daemon's SAs in the SADB"; }
[ "$(ike_dump B --policies | wc -l)" -eq 0 ] || { ike_dump B --policies >&2; xt_fail "the killed daemon's policies are still in the SADB"; }
grep -q "removed 8 SAs and 12 policies left in the SADB by an earlier IKE daemon" "$XT_DIR/iked-B.log" ||
	{ ike_logs; xt_fail "orphan removal not logged"; }
ike_check_logs
xt_log "PASS: certificates (IKEv1+IKEv2), Aggressive Mode, PFS, DPD, orphaned SAs removed at restart"
exit 0
