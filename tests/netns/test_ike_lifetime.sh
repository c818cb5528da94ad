#!/bin/bash
# tests/netns/test_ike_lifetime.sh: lifetimes raised by xipsec-iked itself (no kernel holds the SAs).
#  - time: CHILD SA 't' with a 5 s soft / 8 s hard lifetime on A (B's are longer, so A drives). Over
#    13 s A must rekey it at least twice, never reach the hard limit, and never leave a direction
#    without an installed SA (make-before-break: in A's log the new SAs are installed before the old
#    ones are deleted); both SADBs match at the end.
#  - packets: CHILD SA 'p' with rekey_packets 1000: 1500 packets counted on its inbound SA rekey it.
#  - bytes: CHILD SA 'b' with rekey_bytes 1 MB / life_bytes 2 MB. The dataplane's counters are
#    simulated here (sadb-dump --count adds to the SA's runtime counters, as xipsecd does): 1.5 MB
#    on the inbound SA must make A rekey it (soft), 2.5 MB on the next one must make A delete it (hard).
# Traffic through xipsecd under rekeying is covered by test_ike_traffic.sh once the dataplane exists.
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
ike_require
ike_pair
for s in A B; do ike_dirs $s; done

conf() { # SIDE ME PEER MYNET PEERNET REKEY LIFE
	ike_swanctl "$1" "$2" "$3" conn gw 2 aes128gcm16-prfsha256-x25519 \
		child t "$4.1.0/24" "$5.1.0/24" aes128gcm16 rekey_time="$6" life_time="$7" rand_time=0s \
		child p "$4.3.0/24" "$5.3.0/24" aes128gcm16 rekey_time=0s rekey_packets=1000 life_packets=2000 rand_packets=0 \
		child b "$4.2.0/24" "$5.2.0/24" aes128gcm16 rekey_time=0s rekey_bytes=1000000 life_bytes=2000000 rand_bytes=0
}
conf A 10.9.0.1 10.9.0.2 10.1 10.2 5s 8s
conf B 10.9.0.2 10.9.0.1 10.2 10.1 60s 90s
# old inbound SAs stay 1 s after a rekey (default 5 s, as long as the rekey interval here)
ike_sconf A "delete_rekeyed_delay = 1"
ike_sconf B "delete_rekeyed_delay = 1"
ike_start A
ike_start B
ike_ctl A --initiate --child t >/dev/null || { ike_logs; xt_fail "initiating t failed"; }
ike_ctl A --initiate --child b >/dev/null || { ike_logs; xt_fail "initiating b failed"; }
xt_wait 5 ike_nsa B 4 || { ike_dump B >&2; xt_fail "B does not hold 4 SAs"; }
t0=$(date +%s)

# SPI of the inbound SA of CHILD 'b' on A
b_in() { ike_dump A | grep " | dir=in .*sel=10.2.2.0/24" | sed 's/^spi=\([0-9a-f]*\) .*/\1/'; }

# ---- bytes: soft ----
spi1=$(b_in)
[ -n "$spi1" ] || { ike_dump A >&2; xt_fail "no inbound SA of b"; }
"$IKE_DUMP" --sadb "$(ike_sadb A)" --count "$spi1:1500000:1000" || xt_fail "cannot add to the counters of $spi1"
xt_wait 5 ike_status_is A sadb_soft_expired 1 || { cat "$XT_DIR/A/run/status" >&2; xt_fail "1.5 MB on a 1 MB soft limit raised no soft expiry"; }
# the new inbound SA is there at once; the old one stays a few seconds for packets still in flight
# (charon's delete_rekeyed_delay), then goes on both sides
b_new() { b_in | grep -v "^$spi1\$" | head -n 1; }
b_rekeyed() { [ -n "$(b_new)" ]; }
xt_wait 5 b_rekeyed || { ike_dump A >&2; ike_logs; xt_fail "b was not rekeyed after its soft byte limit"; }
spi2=$(b_new)
old_gone() { ! ike_dump A | grep -q "^spi=$1 " && ! ike_dump B | grep -q "^spi=$1 "; }
xt_wait 10 old_gone "$spi1" || { ike_dump A >&2; ike_dump B >&2; xt_fail "the old SA $spi1 stayed after the rekey"; }
xt_log "bytes: soft limit: $spi1 -> $spi2"

# ---- bytes: hard ----
"$IKE_DUMP" --sadb "$(ike_sadb A)" --count "$spi2:2500000:2000" || xt_fail "cannot add to the counters of $spi2"
xt_wait 5 ike_status_is A sadb_hard_expired 1 || { cat "$XT_DIR/A/run/status" >&2; xt_fail "2.5 MB on a 2 MB hard limit raised no hard expiry"; }
xt_wait 5 old_gone "$spi2" || { ike_dump A >&2; ike_dump B >&2; ike_logs; xt_fail "b's SA $spi2 survived its hard byte limit"; }
grep -q "closing expired CHILD_SA b" "$XT_DIR/iked-A.log" || { ike_logs; xt_fail "charon did not close b as expired"; }
# charon then re-creates the CHILD SA with fresh SPIs (IKEv2 behaviour after a hard expire)
xt_log "bytes: hard limit: $spi2 deleted on both sides"

# ---- packets: soft ----
ike_ctl A --initiate --child p >/dev/null || { ike_logs; xt_fail "initiating p failed"; }
p_in() { ike_dump A | grep " | dir=in .*sel=10.2.3.0/24" | sed 's/^spi=\([0-9a-f]*\) .*/\1/'; }
pspi=$(p_in)
[ -n "$pspi" ] || { ike_dump A >&2; xt_fail "no inbound SA of p"; }
"$IKE_DUMP" --sadb "$(ike_sadb A)" --count "$pspi:0:1500" || xt_fail "cannot add to the counters of $pspi"
p_new() { p_in | grep -v "^$pspi\$" | head -n 1; }
p_rekeyed() { [ -n "$(p_new)" ]; }
xt_wait 5 p_rekeyed || { ike_dump A >&2; ike_logs; xt_fail "p was not rekeyed after 1500 packets on a 1000-packet soft limit"; }
pnew=$(p_new)
xt_wait 10 old_gone "$pspi" || xt_fail "the old SA $pspi of p stayed after the rekey"
ike_ctl A --terminate --child p >/dev/null || xt_fail "terminating p failed"
xt_log "packets: soft limit: $pspi -> $pnew"

# ---- time: wait until 13 s after establishment, sampling the SADBs ----
min_a=99
while [ $(( $(date +%s) - t0 )) -lt 13 ]; do
	n=$(ike_dump A | grep -c "sel=10.1.1.0/24\|sel=10.2.1.0/24")
	[ "$n" -lt "$min_a" ] && min_a=$n
	sleep 0.1
done
[ "$min_a" -ge 2 ] || xt_fail "A's SADB held only $min_a SAs of t at some point"
n=$(ike_status A child_sa_rekeyed)
[ "$n" -ge 3 ] || { cat "$XT_DIR/A/run/status" >&2; ike_logs; xt_fail "only $n CHILD SA rekeys in 13 s (t twice at least, b once)"; }
# A hard expiry may hit an old inbound SA of t that charon keeps for delete_rekeyed_delay (5 s) after
# rekeying it at 5 s (as XFRM would); what must not happen is an active CHILD SA of t expiring.
grep -q "closing expired CHILD_SA t" "$XT_DIR/iked-A.log" && { ike_logs; xt_fail "t reached its hard lifetime instead of being rekeyed"; }
[ "$(grep -c "soft lifetime of SA" "$XT_DIR/iked-A.log")" -ge 3 ] || xt_fail "fewer than 3 soft expiries logged"
# rekeyed inbound SAs linger for charon's delete_rekeyed_delay: let the last rekey settle, then both
# sides must hold the same SAs (t's pair and the pair of b that charon re-created after its hard expiry)
t_sas() { [ "$(ike_dump "$1" | grep -c "sel=10.1.1.0/24\|sel=10.2.1.0/24")" -eq 2 ]; }
settled() { t_sas A && t_sas B && ike_nsa A 4 && ike_nsa B 4; }
xt_wait 10 settled || { ike_dump A >&2; ike_dump B >&2; xt_fail "the SADBs do not settle at 2 SAs of t and 2 of b"; }
n=$(ike_match A B) || exit 1
[ "$n" -eq 4 ] || { ike_dump A >&2; xt_fail "expected 4 matching SAs at the end, got $n"; }

# make-before-break in A's log: at no deletion does a direction of t lose its last SA
awk '
	/xipsec: installed inbound SA/  { inb[$(NF-2)] = 1 }
	/xipsec: installed outbound SA/ { outb[$(NF-2)] = 1 }
	/xipsec: deleted SA/ {
		spi = $NF; delete inb[spi]; delete outb[spi]
		ni = 0; no = 0
		for (k in inb) ni++
		for (k in outb) no++
		if (ni == 0 || no == 0) { print "after deleting " spi ": " ni " inbound, " no " outbound SAs left"; bad = 1 }
	}
	END { exit bad }' "$XT_DIR/iked-A.log" >&2 || xt_fail "a rekey deleted the old SAs before the new ones were installed"
n=$(ike_status A child_sa_rekeyed)
ike_check_logs
xt_log "PASS: 5 s/8 s time lifetime, packet and byte limits: $n CHILD SA rekeys; t never reached hard; byte soft/hard honoured"
exit 0
