#!/bin/bash
# tests/netns/test_ha_failover.sh: two xipsec nodes as one gateway (xipsecd + xipsec-iked with
# strongSwan's ha plugin + keepalived each, configured from etc/cluster/) against a peer that is
# stock charon with kernel-libipsec (nothing of ours), on the bed of tests/netns/ha_common.sh.
# Both nodes hold the same SAs (the ha plugin installs the active node's CHILD_SAs into the standby's
# SADB). Under a fixed-rate UDP flow and a 50 MB TCP transfer h1 -> h2: (1) kill -9 of the active
# node's daemons, (2) after the failed node rejoined as standby (no preemption), the active node's
# links taken down while the peer rekeys and its DPD runs. Each time: traffic resumes through the
# other node within 3 s, the peer's IKE_SA is the same one (no IKE_SA_INIT on the wire), the TCP
# transfer arrives intact, the peer counts no replay or ICV failure, and no (SPI, sequence number)
# pair leaves the cluster twice (a capture on the shared outside link).
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
. "$top_srcdir/tests/netns/ha_common.sh"
ha_bed

# ---- case 1: kill -9 of the active node's daemons ----
# node B's start had node A rekey the CHILD_SA (the plugin's resync): the old one goes in a moment
xt_wait 10 ha_peer_one_child || ha_fail "the peer holds $(ha_peer_sas | grep -c ^CHILD) CHILD_SAs, want 1"
sas0=$(ha_peer_sas)
[ "$(grep -c "^IKE [0-9a-f]*_i\*\? [0-9a-f]*_r\*\?$" <<<"$sas0")" = 1 ] &&
	[ "$(grep -c "^CHILD [0-9a-f]\{8\} [0-9a-f]\{8\}$" <<<"$sas0")" = 1 ] ||
	ha_fail "the peer does not list one IKE_SA and one CHILD_SA: '$sas0'"
ha_flow_start kill 8
sleep 1
ha_tcp_start kill
ha_tcp_midway kill
t0=$(date +%s%N)
ha_kill gw1
xt_wait 5 ha_is_master gw3 || ha_fail "kill -9: node B did not become master"
xt_wait 5 ha_role_is gw3 active || ha_fail "kill -9: node B's dataplane did not become active"
xt_wait 5 sh -c "STRONGSWAN_CONF='$XT_DIR/gw3/conf/strongswan.conf' $IKE_SWANCTL --list-sas --uri 'unix://$XT_DIR/gw3/run/charon.vici' | grep -q 'ha: #[0-9]*, ESTABLISHED'" ||
	ha_fail "kill -9: node B's IKE_SA did not turn ESTABLISHED"
xt_log "kill -9: node B seen master $(( ($(date +%s%N) - t0) / 1000000 )) ms after the kill began"
set -- $(ha_flow_result kill)
xt_log "kill -9: UDP flow sent $2 received $4, longest gap $6 ms; TCP $HA_TCP_BYTES bytes"
[ "$6" -le $HA_GAP_MAX_MS ] || ha_fail "kill -9: traffic stopped for $6 ms (peer drops: $(ha_peer_drops))"
ha_tcp_result kill
sas1=$(ha_peer_sas)
[ "$sas0" = "$sas1" ] || ha_fail "kill -9: the peer's SAs changed: before '$sas0', after '$sas1'"
ha_check_peer "kill -9"
ha_check_capture "kill -9"

# ---- rejoin: node A comes back as a rebooted box would (no virtual address left), stays standby ----
for k in in1 out1; do xt_exec gw1 ip addr flush dev $k; done
xt_exec gw1 ip addr add 10.1.0.11/24 dev in1
xt_exec gw1 ip addr add 192.0.2.11/24 dev out1
xt_stop "xipsecd-gw1" KILL
ha_start gw1
xt_wait 10 ha_is_backup gw1 || ha_fail "rejoin: node A did not become backup"
ha_is_master gw3 || ha_fail "rejoin: node A preempted node B"
ha_role_is gw1 standby || ha_fail "rejoin: node A's dataplane is $(ha_role gw1), not standby"
ha_role_is gw3 active || ha_fail "rejoin: node B's dataplane is $(ha_role gw3), not active"
xt_wait 10 grep -q "installed HA CHILD_SA" "$XT_DIR/iked-gw1.log" || ha_fail "rejoin: node A did not resync the CHILD_SA"
xt_wait 10 ike_nsa gw1 2 || ha_fail "rejoin: node A's SADB holds $(ike_dump gw1 | wc -l) SAs, want 2"
xt_wait 10 ha_same_sas || ha_fail "rejoin: the nodes' SADBs differ: A $(ha_sa_spis gw1), B $(ha_sa_spis gw3)"
dp_ping h1 10.2.0.2
ha_check_capture "rejoin"
xt_log "rejoin: node A is standby again, the peer's IKE_SA unchanged"

# ---- case 2: the active node's links go down while the peer rekeys and runs DPD ----
ike_pre=$(ha_peer_sas | grep ^IKE)
child_pre=$(ha_peer_sas | grep ^CHILD)
log_pre=$(wc -l < "$XT_DIR/charon-gw2.log")
ha_peer_dpd_seen() { tail -n +"$log_pre" "$XT_DIR/charon-gw2.log" | grep -q "sending DPD request"; }
ha_peer_dpd_answered() {
	tail -n +"$log_pre" "$XT_DIR/charon-gw2.log" | grep -A10 "sending DPD request" |
		grep -q "parsed INFORMATIONAL response"
}
ha_flow_start links 8
sleep 1
ha_tcp_start links
ha_tcp_midway links
for k in in3 out3 sy; do xt_exec gw3 ip link set $k down; done
ike_ctl gw2 --rekey --child net >/dev/null || ha_fail "links down: the peer's rekey request failed"
xt_wait 5 ha_is_master gw1 || ha_fail "links down: node A did not become master"
xt_wait 5 ha_role_is gw1 active || ha_fail "links down: node A's dataplane did not become active"
set -- $(ha_flow_result links)
xt_log "links down: UDP flow sent $2 received $4, longest gap $6 ms"
[ "$6" -le $HA_GAP_MAX_MS ] || ha_fail "links down: traffic stopped for $6 ms (peer drops: $(ha_peer_drops))"
ha_tcp_result links
# The peer's DPD (dpd_delay 1 s) goes out once it has heard nothing for a second: during the gap if
# the gap is long enough, else when the flows have ended, with node A alone either way. It must be
# answered, and the IKE_SA kept.
xt_wait 15 ha_peer_dpd_answered || {
	ha_peer_dpd_seen || ha_fail "links down: the peer sent no DPD within 15 s"
	ha_fail "links down: the peer's DPD was not answered"; }
ike_post=$(ha_peer_sas | grep ^IKE)
[ "$ike_pre" = "$ike_post" ] || ha_fail "links down: the peer's IKE_SA changed: '$ike_pre' then '$ike_post'"
xt_wait 10 ha_peer_one_child || ha_fail "links down: the peer holds $(ha_peer_sas | grep -c ^CHILD) CHILD_SAs"
[ "$(ha_peer_sas | grep ^CHILD)" != "$child_pre" ] || ha_fail "links down: the peer's rekey did not happen"
dpd=$(tail -n +"$log_pre" "$XT_DIR/charon-gw2.log" | grep -c "sending DPD request")
xt_log "links down: the peer rekeyed its CHILD_SA and sent $dpd DPDs, answered, its IKE_SA kept"
ha_check_peer "links down"
ha_check_capture "links down"
for k in in3 out3 sy; do xt_exec gw3 ip link set $k up; done
xt_wait 10 ha_is_backup gw3 || ha_fail "links up: node B did not go back to backup"
ha_role_is gw3 standby || ha_fail "links up: node B's dataplane is $(ha_role gw3), not standby"
ha_is_master gw1 || ha_fail "links up: node B preempted node A"
# node B missed the rekey while it was cut off: its notify script (fault, then backup) restarts its
# xipsec-iked, which takes node A's IKE state
xt_wait 10 grep -q "ha_start: xipsec-iked exited" "$XT_DIR/iked-gw3.log" ||
	ha_fail "links up: node B's xipsec-iked was not restarted"
xt_wait 20 ha_same_sas || ha_fail "links up: node B did not resync: A $(ha_sa_spis gw1), B $(ha_sa_spis gw3)"
xt_log "links up: node B's xipsec-iked restarted and resynced the CHILD_SA rekeyed while it was cut off"
dp_ping h1 10.2.0.2
ha_check_capture "links up"

xt_stop capture
xt_log "PASS: failover by kill -9 and by links down, rejoin as standby, IKE_SA kept, no sequence number sent twice"
exit 0
