#!/bin/bash
# tests/netns/test_metrics_ike.sh: the xipsec-iked part of `ipsecctl metrics`. Two xipsec-iked
# negotiate one IKEv2 SA with two CHILD SAs; A's metrics must show VICI up, the IKE SA ESTABLISHED
# and both CHILD SAs INSTALLED, their SAs named after them (connection, child, reqid labels) and one
# xipsec_tunnel_* row per CHILD SA, charon's message counters as the exchange made them (A sent one
# IKE_SA_INIT request, B received one), and the daemon's own counters equal to its status file.
# After terminate the state gauges drop to 0; with B's daemon stopped, its metrics say ike_up 0 and
# carry none of its status counters.
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
ike_require
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
ike_pair

for s in A B; do ike_dirs $s; done
ike_swanctl A 10.9.0.1 10.9.0.2 conn v2 2 aes128gcm16-prfsha256-x25519 \
	child neta 10.1.1.0/24 10.2.1.0/24 aes128gcm16 child netb 10.1.2.0/24 10.2.2.0/24 aes128gcm16
ike_swanctl B 10.9.0.2 10.9.0.1 conn v2 2 aes128gcm16-prfsha256-x25519 \
	child neta 10.2.1.0/24 10.1.1.0/24 aes128gcm16 child netb 10.2.2.0/24 10.1.2.0/24 aes128gcm16
ike_start A
ike_start B
ike_ctl A --initiate --child neta >/dev/null || { ike_logs; xt_fail "initiate neta failed"; }
ike_ctl A --initiate --child netb >/dev/null || { ike_logs; xt_fail "initiate netb failed"; }
xt_wait 5 ike_nsa B 4 || { ike_dump B >&2; ike_logs; xt_fail "B's SADB does not hold 4 SAs"; }

# metrics SIDE: A's or B's exposition in $XT_DIR/metrics-SIDE.txt
metrics() {
	timeout 30 "$CTL" metrics --sadb "$(ike_sadb "$1")" --ike-run-dir "$XT_DIR/$1/run" \
		> "$XT_DIR/metrics-$1.txt" || xt_fail "ipsecctl metrics for $1 failed"
}
# val SIDE SAMPLE: the value of the sample (name and labels exactly as written), "none" if absent
val() { awk -v s="$2" '$1 == s { print $2; f = 1 } END { if (!f) print "none" }' "$XT_DIR/metrics-$1.txt"; }
want() { # SIDE SAMPLE VALUE
	local v; v=$(val "$1" "$2")
	[ "$v" = "$3" ] || { grep xipsec_ike "$XT_DIR/metrics-$1.txt" >&2; xt_fail "$1: $2 = $v, expected $3"; }
}

metrics A
metrics B
want A xipsec_ike_up 1
want A 'xipsec_ike_sas{state="ESTABLISHED"}' 1
want A 'xipsec_ike_sas{state="CONNECTING"}' 0
want A 'xipsec_ike_child_sas{state="INSTALLED"}' 2
want B 'xipsec_ike_child_sas{state="INSTALLED"}' 2
want A 'xipsec_ike_events_total{event="ike-init-out-req"}' 1
want A 'xipsec_ike_events_total{event="ike-init-in-req"}' 0
want B 'xipsec_ike_events_total{event="ike-init-in-req"}' 1
want B 'xipsec_ike_events_total{event="ike-auth-out-resp"}' 1
# the second CHILD SA is a CREATE_CHILD_SA exchange A initiated
want A 'xipsec_ike_events_total{event="create-child-out-req"}' 1
want A xipsec_ike_half_open_sas 0
want A xipsec_ike_sa_established_total "$(ike_status A ike_sa_established)"
want A xipsec_ike_child_sa_established_total "$(ike_status A child_sa_established)"
want A xipsec_ike_child_sa_established_total 2
want A xipsec_ike_sadb_sa_added_total "$(ike_status A sadb_sa_added)"
want A xipsec_ike_sadb_hard_expired_total 0
want A xipsec_sadb_sas "$(ike_dump A | wc -l)"
# the SAs carry their connection and CHILD SA names; one tunnel per CHILD SA, an SA each way
for c in neta netb; do
	n=$(grep -c "^xipsec_sa_packets_total{.*,connection=\"v2\",child=\"$c\",reqid=\"[1-9][0-9]*\"}" "$XT_DIR/metrics-A.txt")
	[ "$n" = 2 ] || { grep xipsec_sa_packets "$XT_DIR/metrics-A.txt" >&2; xt_fail "A: $n SAs named $c, expected 2"; }
	n=$(grep -c "^xipsec_tunnel_sas{connection=\"v2\",child=\"$c\",reqid=\"[1-9][0-9]*\",dir=\"\(in\|out\)\"} 1\$" "$XT_DIR/metrics-A.txt")
	[ "$n" = 2 ] || { grep xipsec_tunnel "$XT_DIR/metrics-A.txt" >&2; xt_fail "A: tunnel $c lists $n directions with one SA, expected 2"; }
done
promtool check metrics < "$XT_DIR/metrics-A.txt" || xt_fail "promtool lint failed"

ike_ctl A --terminate --ike v2 >/dev/null || xt_fail "terminate failed"
xt_wait 5 ike_nsa B 0 || { ike_dump B >&2; xt_fail "B kept SAs after terminate"; }
metrics A
want A 'xipsec_ike_sas{state="ESTABLISHED"}' 0
want A 'xipsec_ike_child_sas{state="INSTALLED"}' 0
want A xipsec_ike_sadb_sa_deleted_total "$(ike_status A sadb_sa_deleted)"

xt_stop iked-B TERM
metrics B
want B xipsec_ike_up 0
want B xipsec_ike_sa_established_total none
want B xipsec_sadb_up 1
ike_check_logs
exit 0
