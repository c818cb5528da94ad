#!/usr/bin/env bash
# tests/netns/test_dp_replay_reboot.sh: nothing recorded before a reboot is accepted after it (design
# rule 9). A home agent with manually keyed SAs (mip6_common.sh's test bed) registers the scapy
# mobile node and carries a ping through its tunnel while everything between the router and the home
# agent is recorded. Then a reboot: xipsecd stops, the SADB is removed (its runtime area held the
# replay windows), the configuration is loaded again WITHOUT --new-keys (the marks in the state
# directory exist) and xipsecd starts. The recorded ESP packets sent again from the router are all
# refused as replays (the signalling SA's Binding Update and the tunnel SA's packets, counted per
# SA): no Binding Acknowledgement, no binding. The mobile node's next Binding Update (a fresh ESP
# number) with its old Binding Update sequence number is answered 135 naming the last one accepted,
# and changes nothing; one with the next sequence number is accepted, and the mobile node's running
# ESP senders get through again (a ping through the tunnel). Then the same after a crash (xipsecd
# killed): a fresh recording, taken just before, is refused all the same, and the mobile node's own
# packets pass again once its numbers are above the ceiling the crash left (a step of 64 here,
# XIPSEC_WINDOW_LEASE: the residual dp_seqmark.c bounds).
XT_BG_TIMEOUT=180
export XIPSEC_WINDOW_LEASE=64
. "$top_srcdir/tests/netns/mip6_common.sh"

# ---- recorded: a registration and traffic through the tunnel
dp_capture_start rec rt eth0
mn bu eth1 1 120
wait_ba 1
ba_is 1 "b['status'] == 0 and b['seq'] == 1"
xt_exec cn ping -6 -c 3 -i 0.2 -W 2 $HOA >/dev/null || xt_fail "ping cn -> mn before the reboot"
dp_capture_stop rec

# ---- a reboot: the SADB (and the windows in it) gone, the same configuration loaded as at boot
xt_stop xipsecd-ha
rm -f "$SADB"
ctl load "$XT_DIR/ha.conf" || xt_fail "ipsecctl load after the reboot (without --new-keys)"
mip6_start_ha
[ "$(b_json "len(j['bindings'])")" = 0 ] || xt_fail "a binding right after the reboot"

# ---- the recording sent again from the router: every ESP packet towards the home agent
replay_drops() { # SPI: replay + replay_old drops of the home agent's inbound SA SPI
	ctl --json show sa > "$XT_DIR/sas.json" || xt_fail "ipsecctl show sa"
	dp_json "$XT_DIR/sas.json" "sum(s['counters']['drops'].get('replay', 0) + s['counters']['drops'].get('replay_old', 0) for s in j['sas'] if s['spi'] == $1 and s['dir'] == 'in')"
}
replay() { # PCAP: its ESP packets towards the home agent sent again from the router; sets n_bu, n_tun
	xt_exec rt "$PYTHON" - "$1" "$HA" > "$XT_DIR/replayed.txt" <<'PY' || xt_fail "replay from the router"
import sys
from scapy.all import ESP, IPv6, rdpcap, sendp
pkts = [p for p in rdpcap(sys.argv[1]) if IPv6 in p and p[IPv6].dst == sys.argv[2] and ESP in p]
for p in pkts:
    sendp(p, iface='eth0', verbose=False)
print(sum(p[ESP].spi == 0x2001 for p in pkts), sum(p[ESP].spi == 0x3001 for p in pkts))
PY
	read -r n_bu n_tun < "$XT_DIR/replayed.txt"
	xt_log "replayed $n_bu Binding Update(s) and $n_tun tunnel packet(s) from $(basename "$1")"
	[ "$n_bu" -ge 1 ] && [ "$n_tun" -ge 3 ] || xt_fail "the recording lacks the BU or the tunnel traffic ($n_bu, $n_tun)"
	sleep 1
}
n0=$(nba)
bu0=$(replay_drops 0x2001) tun0=$(replay_drops 0x3001)
replay "$XT_DIR/rec.pcap"
[ "$(nba)" = "$n0" ] || { ba "$(nba)" >&2; xt_fail "a replayed Binding Update was answered"; }
[ "$(b_json "len(j['bindings'])")" = 0 ] || xt_fail "a replayed Binding Update bound the home address: $(cat "$XT_DIR/b.json")"
[ "$(replay_drops 0x2001)" = $((bu0 + n_bu)) ] || xt_fail "replayed BUs: $(replay_drops 0x2001) replay drops, expected $((bu0 + n_bu))"
[ "$(replay_drops 0x3001)" = $((tun0 + n_tun)) ] || xt_fail "replayed tunnel packets: $(replay_drops 0x3001) replay drops, expected $((tun0 + n_tun))"

# ---- the mobile node's own next packets: its old BU sequence refused (135), the next accepted
mn bu eth1 1 120
wait_ba $((n0 + 1))
ba_is $((n0 + 1)) "b['status'] == 135 and b['seq'] == 1"
[ "$(b_json "len(j['bindings'])")" = 0 ] || xt_fail "a BU with an old sequence number bound the home address"
mn bu eth1 2 120
wait_ba $((n0 + 2))
ba_is $((n0 + 2)) "b['status'] == 0 and b['seq'] == 2"
[ "$(b_json "[(x['care_of_address'], x['sequence']) for x in j['bindings']]")" = "[('$COA1', 2)]" ] ||
	xt_fail "binding after the genuine BU: $(cat "$XT_DIR/b.json")"
xt_exec cn ping -6 -c 3 -i 0.2 -W 2 $HOA >/dev/null || xt_fail "ping cn -> mn after the reboot"
xt_log "after the reboot: $n_bu BU(s) and $n_tun tunnel packet(s) replayed, all refused; BA 135 then 0"

# ---- a crash: recorded just before, xipsecd killed, the SADB gone
dp_capture_start rec2 rt eth0
mn bu eth1 3 120
wait_ba $((n0 + 3))
ba_is $((n0 + 3)) "b['status'] == 0 and b['seq'] == 3"
xt_exec cn ping -6 -c 3 -i 0.2 -W 2 $HOA >/dev/null || xt_fail "ping cn -> mn before the crash"
dp_capture_stop rec2
xt_stop xipsecd-ha KILL
rm -f "$SADB"
ctl load "$XT_DIR/ha.conf" || xt_fail "ipsecctl load after the crash"
mip6_start_ha
n1=$(nba)
bu0=$(replay_drops 0x2001) tun0=$(replay_drops 0x3001)
replay "$XT_DIR/rec2.pcap"
[ "$(nba)" = "$n1" ] || { ba "$(nba)" >&2; xt_fail "a Binding Update replayed after the crash was answered"; }
[ "$(b_json "len(j['bindings'])")" = 0 ] || xt_fail "a replayed Binding Update bound the home address after the crash"
[ "$(replay_drops 0x2001)" = $((bu0 + n_bu)) ] && [ "$(replay_drops 0x3001)" = $((tun0 + n_tun)) ] ||
	xt_fail "after the crash: $(replay_drops 0x2001) / $(replay_drops 0x3001) replay drops, expected $((bu0 + n_bu)) / $((tun0 + n_tun))"
# the mobile node's next Binding Updates: refused while their ESP numbers are under the ceiling, then
# one gets through (its sequence number newer than 3: accepted)
s=4
while [ "$(nba)" = "$n1" ] && [ $s -lt 200 ]; do mn bu eth1 $s 120; s=$((s + 1)); sleep 0.05; done
wait_ba $((n1 + 1))
ba_is $((n1 + 1)) "b['status'] == 0 and b['seq'] > 3"
xt_exec cn ping -6 -c 150 -i 0.01 -W 1 $HOA >/dev/null || true
xt_exec cn ping -6 -c 3 -i 0.2 -W 2 $HOA >/dev/null || xt_fail "ping cn -> mn after the crash"
xt_log "after the crash: the fresh recording refused; the mobile node back after $((s - 4)) Binding Update(s)"
exit 0
