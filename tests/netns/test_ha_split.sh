#!/bin/bash
# tests/netns/test_ha_split.sh: split brain of the two-node cluster with IKE, on the bed of
# tests/netns/ha_common.sh (stock charon with kernel-libipsec as the peer).
#
# The sync link is cut and keepalived's adverts are dropped (nftables on both nodes), while both
# nodes keep their outside and inside links: both become MASTER, both
# dataplanes active and alone, both xipsec-iked active for the IKE_SA. Traffic goes out through
# each node's inside (host routes on h1 via each node's own address); the peer's replies and
# requests go to node B (its ARP entry for the virtual address is pinned there). With a small
# sequence budget (--cluster-budget) node B's xipsecd raises the outbound SA's soft expiry at half
# the budget, its xipsec-iked rekeys the CHILD_SA (the peer lists a new one, the old one deleted)
# and B's dataplane never reaches the hard expiry. A capture on the shared outside link shows no
# (SPI, sequence) pair twice and ESP from both nodes. When the link returns, VRRP leaves one master
# (node B: equal priorities, the higher address wins); node A's notify script restarts its
# xipsec-iked, whose ha plugin takes B's IKE state: A's SADB holds the new CHILD_SA, its IKE_SA is
# PASSIVE, its dataplane standby and caught up. The heal brings the sync link back before the
# adverts, and node A's notify script runs late: A's IKE_SA must send nothing when it loses the
# address. Before the split, the IKE_AUTH response (decrypted by tshark) lists no sync-link address.
# The peer's first DPDs of the split go to node A: node B must take up the message IDs A answered
# (ike/cluster_mid.c), so that the peer's requests are answered after the heal.
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
. "$top_srcdir/tests/netns/ha_common.sh"
xt_require nft
BUDGET=4096
HA_DP_ARGS="--cluster-budget $BUDGET"
IKE_STOCK_IKE_LOG=4
ha_bed
xt_wait 10 ha_peer_one_child || ha_fail "the peer holds $(ha_peer_sas | grep -c ^CHILD) CHILD_SAs, want 1"
# The addresses node A listed to the peer (MOBIKE): its own outside one, never the sync link's
# (interfaces_ignore in etc/cluster/strongswan-ha.conf)
addrs=$(ha_ike_addresses | paste -sd ' ')
grep -qw "192.0.2.11" <<<"$addrs" || ha_fail "IKE_AUTH: node A listed '$addrs', not its outside address"
! grep -q "10\.9\.9\." <<<"$addrs" || ha_fail "IKE_AUTH: node A listed its sync-link address to the peer: $addrs"
xt_log "IKE_AUTH: node A listed $addrs to the peer, no sync-link address"
child0=$(ha_peer_sas | grep ^CHILD)
mac() { xt_exec "$1" ip -o link show "$2" | sed -n 's|.*link/ether \([0-9a-f:]*\).*|\1|p'; }
MAC_A=$(mac gw1 out1)
MAC_B=$(mac gw3 out3)
# cluster_field NODE EXPR: a Python expression over `ipsecctl show cluster`'s JSON (j)
cluster_field() {
	timeout 10 "$IPSECCTL" --ctl "$XT_DIR/$1.sock" --json show cluster 2>/dev/null |
		"$PYTHON" -c "import json, sys; j = json.load(sys.stdin); print($2)" 2>/dev/null
}
cluster_is() { [ "$(cluster_field "$1" "$2")" = True ]; }

# ---- the partition ----
# Everything on the sync link is dropped, not the link taken down: the nodes keep the sync
# addresses the ha plugin and the dataplanes are bound to, as when a switch between them fails.
for n in gw1 gw3; do
	xt_exec $n nft -f - <<'NFT' || ha_fail "nft on $n"
table inet ha_split {
	chain out { type filter hook output priority 0; oifname "sy" drop; ip protocol vrrp drop; }
	chain in { type filter hook input priority 0; iifname "sy" drop; ip protocol vrrp drop; }
}
NFT
done
# the peer's packets to the virtual address go to node A for its first DPDs (the peer is idle), then
# to node B: A's answers move the peer's message IDs past the one B expects, as when a split sends
# the peer's requests to either node; B's xipsec-iked must take up the peer's IDs from its next
# authentic request (ike/cluster_mid.c), or ignore the peer until it gives up and tears the tunnel
# down
dpds_a0=$(grep -c "parsed INFORMATIONAL request" "$XT_DIR/iked-gw1.log")
xt_exec gw2 ip neigh replace $HA_VIP lladdr "$MAC_A" dev out2 nud permanent
t0=$(date +%s%N)
xt_wait 10 ha_is_master gw3 || ha_fail "split: node B did not become master"
ha_is_master gw1 || ha_fail "split: node A is no longer master"
xt_wait 5 ha_role_is gw3 active || ha_fail "split: node B's dataplane did not become active"
ha_role_is gw1 active || ha_fail "split: node A's dataplane is $(ha_role gw1), not active"
xt_wait 5 sh -c "STRONGSWAN_CONF='$XT_DIR/gw3/conf/strongswan.conf' $IKE_SWANCTL --list-sas --uri 'unix://$XT_DIR/gw3/run/charon.vici' | grep -q 'ha: #[0-9]*, ESTABLISHED'" ||
	ha_fail "split: node B's IKE_SA did not turn ESTABLISHED"
ike_ctl gw1 --list-sas | grep -q "ha: #[0-9]*, ESTABLISHED" || ha_fail "split: node A's IKE_SA is not ESTABLISHED"
for n in gw1 gw3; do
	xt_wait 5 cluster_is $n "not j['peer_reachable']" || ha_fail "split: node $n's dataplane still hears the other"
done
xt_log "split: both nodes master and active $(( ($(date +%s%N) - t0) / 1000000 )) ms after the cut"
xt_wait 10 sh -c "[ \$(grep -c 'parsed INFORMATIONAL request' '$XT_DIR/iked-gw1.log') -ge $((dpds_a0 + 2)) ]" ||
	ha_fail "split: node A answered no DPD of the peer"
xt_exec gw2 ip neigh replace $HA_VIP lladdr "$MAC_B" dev out2 nud permanent

# h1 reaches h2 through A (10.2.0.2) and through B (10.2.0.3)
xt_exec h2 ip addr add 10.2.0.3/24 dev eth0
xt_exec h1 ip route add 10.2.0.2/32 via 10.1.0.11
xt_exec h1 ip route add 10.2.0.3/32 via 10.1.0.12
xt_bg h1 send-a "$PYTHON" -c "$(ike_udp_sender 10.2.0.2 9 8 100)"
# through B until its dataplane raised the soft expiry (half the budget; a loaded machine drops some
# datagrams on the way in)
for i in 1 2 3 4; do
	xt_exec h1 "$PYTHON" -c "$(ike_udp_sender 10.2.0.3 9 2 600)" >/dev/null || ha_fail "sending through B"
	grep -q "soft expiry by the dataplane's cluster budget" "$XT_DIR/iked-gw3.log" && break
done
xt_wait 5 grep -q "soft expiry by the dataplane's cluster budget" "$XT_DIR/iked-gw3.log" ||
	ha_fail "split: node B's xipsec-iked did not take its dataplane's soft expiry"
rekeyed() { ha_peer_one_child && [ "$(ha_peer_sas | grep ^CHILD)" != "$child0" ]; }
xt_wait 15 rekeyed || ha_fail "split: the peer did not rekey the CHILD_SA to one new one: '$(ha_peer_sas | grep ^CHILD)' (was '$child0')"
child1=$(ha_peer_sas | grep ^CHILD)
xt_log "split: node B rekeyed the CHILD_SA at its soft expiry: the peer's '$child0' became '$child1'"
# the new CHILD_SA carries B's traffic
xt_exec h1 "$PYTHON" -c "$(ike_udp_sender 10.2.0.3 9 1 300)" >/dev/null || ha_fail "sending through B"
xt_wait 15 grep -q "^[0-9]" "$XT_DIR/send-a.log" || ha_fail "split: the sender through A did not finish"
cluster_is gw3 "j['counters']['solo_soft_expired'] >= 1 and j['counters']['solo_hard_expired'] == 0" ||
	ha_fail "split: node B's dataplane counters: $(cluster_field gw3 "j['counters']")"
xt_log "split: node B's dataplane: $(cluster_field gw3 "(j['counters']['solo_soft_expired'], j['counters']['solo_hard_expired'])") soft/hard solo expiries"
ha_check_capture "split"
tshark -r "$XT_DIR/outside.pcap" -Y "esp && ip.src == $HA_VIP" -T fields -e eth.src -e esp.spi \
	2>/dev/null > "$XT_DIR/esp-nodes.txt"
# the peer's inbound SPI is the cluster's outbound one
spi_out=$(awk '{print $2}' <<<"$child1")
spi_in=$(awk '{print $3}' <<<"$child1")
n_a=$(awk -v m="$MAC_A" '$1 == m' "$XT_DIR/esp-nodes.txt" | wc -l)
n_b_new=$(awk -v m="$MAC_B" -v s="0x$spi_out" '$1 == m && $2 == s' "$XT_DIR/esp-nodes.txt" | wc -l)
[ "$n_a" -gt 100 ] && [ "$n_b_new" -gt 50 ] ||
	ha_fail "split: ESP from node A $n_a, from node B on the new SA 0x$spi_out $n_b_new: both should send"
xt_log "split: ESP from node A $n_a, from node B on the new CHILD_SA $n_b_new"

# ---- the link returns ----
xt_exec gw2 ip neigh del $HA_VIP dev out2
xt_exec h1 ip route del 10.2.0.2/32
xt_exec h1 ip route del 10.2.0.3/32
# The sync link first, the adverts a moment later: node A's plugin hears B again while A is still
# master, and keepalived removes A's virtual address before its notify script makes A's IKE_SA
# PASSIVE. Whatever A's IKE_SA sends in that moment reaches B through the plugin: a MOBIKE update
# for the lost address (without roam_events = no in etc/cluster/strongswan-ha.conf) would move B's
# next message ID to one the peer has already answered, and B's rekey for the resync below would
# stall. Its notify script restarts xipsec-iked once the dataplane hears B again. The script runs
# late here, as it can on a loaded machine (its environment file sleeps a second): the IKE_SA stays
# active for that second after the address went.
echo "sleep 1" >> "$XT_DIR/gw1/env"
for n in gw1 gw3; do
	for c in out in; do
		xt_exec $n nft delete rule inet ha_split $c handle "$(xt_exec $n nft -a list chain inet ha_split $c | awk '/"sy"/ {print $NF}')"
	done
done
xt_wait 5 cluster_is gw1 "j['peer_reachable']" || ha_fail "heal: node A's dataplane does not hear B over the sync link"
sleep 1
for n in gw1 gw3; do xt_exec $n nft delete table inet ha_split; done
t0=$(date +%s%N)
xt_wait 10 sh -c "! ip -n $(xt_ns gw1) -4 addr show dev out1 | grep -q ' $HA_VIP/'" ||
	ha_fail "heal: node A kept the virtual address"
ha_is_master gw3 || ha_fail "heal: node B is not master"
xt_wait 5 ha_role_is gw1 standby || ha_fail "heal: node A's dataplane is $(ha_role gw1), not standby"
ha_role_is gw3 active || ha_fail "heal: node B's dataplane is $(ha_role gw3), not active"
xt_wait 10 grep -q "ha_start: xipsec-iked exited" "$XT_DIR/iked-gw1.log" ||
	ha_fail "heal: node A's xipsec-iked was not restarted"
# the restarted instance took B's IKE state: B rekeys the CHILD_SA for it (the plugin never resends
# CHILD_SA keys), and both SADBs hold the SPIs of the peer's one CHILD_SA
resynced() {
	local c
	c=$(ha_peer_sas | grep ^CHILD)
	[ "$(wc -l <<<"$c")" = 1 ] && ha_same_sas && ike_nsa gw1 2 &&
		ha_sa_spis gw1 | grep -q "spi=$(awk '{print $2}' <<<"$c")" &&
		ha_sa_spis gw1 | grep -q "spi=$(awk '{print $3}' <<<"$c")"
}
xt_wait 20 resynced || ha_fail "heal: node A's SADB $(ha_sa_spis gw1), B's $(ha_sa_spis gw3), the peer's CHILD_SA $(ha_peer_sas | grep ^CHILD)"
xt_wait 5 sh -c "STRONGSWAN_CONF='$XT_DIR/gw1/conf/strongswan.conf' $IKE_SWANCTL --list-sas --uri 'unix://$XT_DIR/gw1/run/charon.vici' | grep -q 'ha: #[0-9]*, PASSIVE'" ||
	ha_fail "heal: node A's IKE_SA is not PASSIVE"
xt_wait 10 cluster_is gw1 "j['peer_reachable'] and j['eligible'] and j['role'] == 'standby'" ||
	ha_fail "heal: node A's dataplane did not catch up"
xt_log "heal: one master (node B) $(( ($(date +%s%N) - t0) / 1000000 )) ms after the link returned; node A standby with B's IKE state"
dp_ping h1 10.2.0.2
dp_ping h2 10.1.0.2
# the peer's last request (an idle DPD) answered: B took up the IDs A had answered
peer_answered() {
	local last
	last=$(grep -o "generating INFORMATIONAL request [0-9]*" "$XT_DIR/charon-gw2.log" | tail -1 | awk '{print $4}')
	[ -n "$last" ] && grep -q "parsed INFORMATIONAL response $last " "$XT_DIR/charon-gw2.log"
}
sleep 2
xt_wait 15 peer_answered || ha_fail "heal: the peer's request $(grep -o "generating INFORMATIONAL request [0-9]*" "$XT_DIR/charon-gw2.log" | tail -1) is not answered: $(grep -c "expected [0-9]*, ignored" "$XT_DIR/iked-gw3.log") ignored by node B"
grep -q "is authentic while [0-9]* was expected" "$XT_DIR/iked-gw3.log" ||
	ha_fail "heal: node B never took up the message IDs node A answered"
xt_log "heal: node B took up the peer's message IDs node A answered: $(grep -o "request [0-9]* is authentic while [0-9]* was expected" "$XT_DIR/iked-gw3.log" | head -1)"
ha_check_capture "heal"

xt_stop capture
xt_log "PASS: split brain with both nodes sending, the lone node rekeyed at its budget, no sequence number twice, the pair converged"
exit 0
