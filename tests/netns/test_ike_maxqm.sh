#!/bin/bash
# tests/netns/test_ike_maxqm.sh: maxqm. With maxqm = 3 on the initiator, establishing 10 CHILD SAs to
# one peer must take ceil(10/3) = 4 IKE SAs: for IKEv1 four Main Modes (the IKE SA is reauthenticated
# after every third Quick Mode), for IKEv2 one IKE_SA_INIT/IKE_AUTH plus three IKE_SA rekeys. Checked
# in the daemon's log, in its status counters, through `ipsecctl ike`, on the responder's side (it
# sees every Main Mode too), and in both SADBs (all 20 SAs present and matching: the CHILD SAs
# survive the renewals). Then 30 renewals back to back (maxqm 1), none of which may need a
# retransmission. Also checks that `ipsecctl ike maxqm set` changes the limit at run time.
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
ike_require
ike_pair

conf() { # SIDE ME PEER MYNET PEERNET VERSION [N]: connection gw with N (10) CHILD SAs c1..cN
	local i children=()
	for i in $(seq 1 "${7:-10}"); do children+=(child "c$i" "$4.$i.0/24" "$5.$i.0/24" aes128gcm16); done
	ike_swanctl "$1" "$2" "$3" conn gw "$6" aes128-sha256-modp2048 "${children[@]}"
}

# The next CHILD SA goes on the fresh IKE SA only once the renewal completed: wait for it, as an
# operator script would (the race is charon's: a CHILD SA initiated meanwhile lands on the old one).
settled() { ! grep -q renewing "$XT_DIR/A/run/status"; }

run_round() { # VERSION EXPECTED_IKE_SAS
	local v=$1 exp=$2 i key n
	ike_sconf A "maxqm = 3"
	ike_sconf B "maxqm = 3"
	conf A 10.9.0.1 10.9.0.2 10.1 10.2 "$v"
	conf B 10.9.0.2 10.9.0.1 10.2 10.1 "$v"
	ike_start A
	ike_start B
	for i in $(seq 1 10); do
		ike_ctl A --initiate --child "c$i" >/dev/null || { ike_logs; xt_fail "IKEv$v: initiating c$i failed"; }
		xt_wait 10 settled || { cat "$XT_DIR/A/run/status" >&2; xt_fail "IKEv$v: renewal after c$i did not finish"; }
	done
	xt_wait 10 ike_nsa B 20 || { ike_dump B >&2; ike_logs; xt_fail "IKEv$v: B's SADB does not hold 20 SAs"; }
	xt_wait 5 ike_nsa A 20 || { ike_dump A >&2; ike_logs; xt_fail "IKEv$v: A's SADB does not hold 20 SAs"; }
	n=$(ike_match A B) || exit 1
	[ "$n" -eq 20 ] || xt_fail "IKEv$v: expected 20 matching SAs, got $n"

	if [ "$v" = 1 ]; then
		key=main_modes
		n=$(grep -c "xipsec: Main Mode established IKE_SA gw" "$XT_DIR/iked-A.log")
		[ "$n" -eq "$exp" ] || { ike_logs; xt_fail "IKEv1: $n Main Modes in A's log, expected $exp"; }
		n=$(grep -c "xipsec: Main Mode established IKE_SA gw" "$XT_DIR/iked-B.log")
		[ "$n" -eq "$exp" ] || xt_fail "IKEv1: the responder saw $n Main Modes, expected $exp"
	else
		key=ike_sa_established
		n=$(grep -c "xipsec: maxqm 3 reached on IKE_SA gw.*IKEv2 IKE_SA rekey" "$XT_DIR/iked-A.log")
		[ "$n" -eq $((exp - 1)) ] || { ike_logs; xt_fail "IKEv2: $n IKE_SA rekeys logged, expected $((exp - 1))"; }
	fi
	n=$(ike_status A "$key")
	[ "$n" -eq "$exp" ] || { cat "$XT_DIR/A/run/status" >&2; xt_fail "IKEv$v: status $key = $n, expected $exp"; }
	n=$(ike_status A maxqm_renewals)
	[ "$n" -eq $((exp - 1)) ] || xt_fail "IKEv$v: status maxqm_renewals = $n, expected $((exp - 1))"
	n=$(ike_status A child_sa_established)
	[ "$n" -eq 10 ] || xt_fail "IKEv$v: status child_sa_established = $n, expected 10"

	# one IKE SA left, carrying the 10 CHILD SAs, and 10 - 3*(exp-1) Quick Modes on it
	# the replaced ISAKMP SA goes 2 s after its successor came up (ike/maxqm.c: RETIRE_DELAY_MS)
	one_ike_sa() { [ "$(ike_ipsecctl A list | grep -c "^gw\[")" -eq 1 ]; }
	if out=$(ike_ipsecctl A list); then
		xt_wait 5 one_ike_sa || { ike_ipsecctl A list >&2; xt_fail "IKEv$v: ipsecctl ike list shows not exactly one IKE SA"; }
		out=$(ike_ipsecctl A list)
		[ "$(echo "$out" | grep -c "INSTALLED TUNNEL ESP")" -eq 10 ] || { echo "$out" >&2; xt_fail "IKEv$v: ipsecctl ike list does not show 10 CHILD SAs"; }
		echo "$out" | grep -q "quick modes $((10 - 3 * (exp - 1))) of maxqm 3" || { echo "$out" >&2; xt_fail "IKEv$v: ipsecctl ike list: wrong Quick Mode count"; }
		out=$(ike_ipsecctl A --json stats) || xt_fail "ipsecctl ike stats failed"
		echo "$out" | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if d['$key'] == $exp and d['maxqm'] == 3 else 1)" ||
			{ echo "$out" >&2; xt_fail "IKEv$v: ipsecctl ike --json stats: $key is not $exp"; }
	else
		[ $? -eq 77 ] || xt_fail "ipsecctl ike list failed"
		xt_log "ipsecctl not built: skipped its checks"
	fi
	xt_log "IKEv$v: 10 CHILD SAs with maxqm 3 took $exp IKE SAs"
	xt_stop iked-A
	xt_stop iked-B
	# the daemons remove what they installed when they stop
	[ "$(ike_dump A | wc -l)" -eq 0 ] || { ike_dump A >&2; xt_fail "IKEv$v: A left SAs in its SADB at exit"; }
	[ "$(ike_dump A --policies | wc -l)" -eq 0 ] || xt_fail "IKEv$v: A left policies in its SADB at exit"
	mv "$XT_DIR/iked-A.log" "$XT_DIR/iked-A-v$v.log.old"
	mv "$XT_DIR/iked-B.log" "$XT_DIR/iked-B-v$v.log.old"
}

for s in A B; do ike_dirs $s; done
run_round 1 4
run_round 2 4

# Renewals racing their replies: with maxqm 1 every CHILD SA ends in a new Main Mode, whose first reply
# can come back before charon has entered the new ISAKMP SA in its IKE_SA manager; xipsec-iked enters it
# beforehand, so that such a reply waits instead of being dropped (which cost a 4 s retransmission in
# several percent of the renewals). 30 CHILD SAs back to back (bench/ike-bench-vici waits out each
# renewal): 31 Main Modes, not one retransmission.
VICI="$top_builddir/bench/ike-bench-vici"
if [ -x "$VICI" ]; then
	ike_sconf A "maxqm = 1"
	ike_sconf B "maxqm = 1"
	conf A 10.9.0.1 10.9.0.2 10.1 10.2 1 30
	conf B 10.9.0.2 10.9.0.1 10.2 10.1 1 30
	ike_start A
	ike_start B
	timeout 120 "$VICI" "unix://$XT_DIR/A/run/charon.vici" bringup "$XT_DIR/A/run/status" gw $(seq -f "c%g" 1 30) \
		> "$XT_DIR/bringup.out" || { ike_logs; xt_fail "maxqm 1: bringing up 30 CHILD SAs failed"; }
	n=$(grep -c "xipsec: Main Mode established IKE_SA gw" "$XT_DIR/iked-A.log")
	[ "$n" -eq 31 ] || { ike_logs; xt_fail "maxqm 1: $n Main Modes for 30 CHILD SAs, expected 31"; }
	if grep "sending retransmit" "$XT_DIR/iked-A.log" >&2; then
		xt_fail "maxqm 1: a renewal's Main Mode needed a retransmission (its reply was dropped)"
	fi
	xt_wait 10 ike_nsa B 60 || { ike_dump B >&2; xt_fail "maxqm 1: B's SADB does not hold 60 SAs"; }
	xt_log "maxqm 1: 30 CHILD SAs on 31 Main Modes in $(awk '/^bringup/ { printf "%.2f", $2 / 1e6 }' "$XT_DIR/bringup.out") s, no retransmission"
	xt_stop iked-A
	xt_stop iked-B
	mv "$XT_DIR/iked-A.log" "$XT_DIR/iked-A-race.log.old"
	mv "$XT_DIR/iked-B.log" "$XT_DIR/iked-B-race.log.old"
else
	xt_log "bench/ike-bench-vici not built: skipped the back-to-back renewals"
fi

# maxqm at run time: ipsecctl ike maxqm set changes the daemon's limit
ike_sconf A "maxqm = 100"
ike_sconf B "maxqm = 100"
conf A 10.9.0.1 10.9.0.2 10.1 10.2 1
conf B 10.9.0.2 10.9.0.1 10.2 10.1 1
ike_start A
if ike_ipsecctl A maxqm show >/dev/null; then
	ike_ipsecctl A maxqm show | grep -q "^maxqm 100" || xt_fail "maxqm show: not 100 from strongswan.conf"
	ike_ipsecctl A maxqm set 7 || xt_fail "maxqm set 7 failed"
	[ "$(ike_status A maxqm)" = 7 ] || xt_fail "maxqm set 7: the daemon's status says $(ike_status A maxqm)"
	ike_ipsecctl A maxqm set x 2>/dev/null && xt_fail "maxqm set x was accepted"
	ike_ipsecctl A maxqm unset || xt_fail "maxqm unset failed"
	xt_wait 3 ike_status_is A maxqm 100 || xt_fail "maxqm unset: status says $(ike_status A maxqm)"
	# per connection: the limit of gw's IKE SA follows, the global one stays
	ike_start B
	ike_ctl A --initiate --child c1 >/dev/null || xt_fail "initiating c1 failed"
	ike_ipsecctl A maxqm set 4 --conn gw || xt_fail "maxqm set 4 --conn gw failed"
	conn_limit() { grep -q "^ike [0-9]* gw v1 initiator qm 1 limit 4" "$XT_DIR/A/run/status"; }
	xt_wait 3 conn_limit || { cat "$XT_DIR/A/run/status" >&2; xt_fail "maxqm set --conn gw: gw's IKE SA does not show limit 4"; }
	[ "$(ike_status A maxqm)" = 100 ] || xt_fail "maxqm set --conn changed the global limit"
	ike_ipsecctl A --json maxqm show | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if d['ike_sas'][0]['maxqm'] == 4 and d['maxqm'] == 100 else 1)" ||
		xt_fail "maxqm show --json does not show the per-connection limit"
else
	[ $? -eq 77 ] || xt_fail "ipsecctl ike maxqm show failed"
fi
ike_check_logs
xt_log "PASS: maxqm=3, 10 CHILD SAs: 4 Main Modes (IKEv1), 4 IKE SAs (IKEv2)"
exit 0
