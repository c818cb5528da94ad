#!/usr/bin/env bash
# tests/netns/test_ha_sync.sh: the dataplane's side of a two-node cluster (dataplane/xipsecd/
# dp_cluster*.c). Two xipsecd nodes A and B whose SADBs hold the same SAs (loaded with ipsecctl into
# each, as the ha plugin would install them), a sync link between them, and a sink on the outside
# that captures ESP with tcpdump; tshark (nobody here wrote it) reads the SPIs and sequence numbers.
#
#   hA (10.1.0.2) -- A [inA | outA] --+               A syncA 172.16.0.1
#                                     sw (bridge) -- sink 192.0.2.2
#   hB (10.1.0.2) -- B [inB | outB] --+               B syncB 172.16.0.2 (one veth: the sync link)
#
# Both nodes carry the gateway's addresses (the VIPs keepalived would move); each has its own inside
# host, so traffic goes through the node the test chooses. The capture tells the nodes apart by MAC.
#  0. An SA A holds and B lacks: B is not eligible (show cluster says why), refuses to be made
#     active, and is eligible again once it holds the SA. A reserved SPI (LARVAL) completed into an
#     SA on A: xipsecd takes the reservation for what it is (no refusal, no warning).
#  1. A active, B standby: B catches up (eligible; a resync asked for again while it is served goes
#     on); traffic through A.
#     Inbound ESP into A from scapy (nobody here wrote it) with the inbound SA's keys.
#  2. A killed (-9) right after a last burst of inbound ESP, `ipsecctl cluster active` on B: B's
#     sequence numbers start above A's; B's inbound window starts at the top A last synced: every
#     packet A accepted up to it, sent again to B, is dropped as a replay; of the ones A accepted
#     after it (the residual, at most sync_packets numbers or sync_ms of traffic) B accepts each
#     once; new numbers pass.
#  3. A restarted (standby, catches up), the sync link cut, A made active: both active, both alone,
#     both sending: no (SPI, sequence) twice in the capture, each node stops at its budget and
#     raises the SA's expiry.
#  4. The link healed: A made standby (as keepalived's notify would), A catches up again, B knows a
#     lease end at or above every number A used; one active.
# Forged datagrams sent to B's sync port are dropped and counted (auth, foreign), never acted on.
# After 2., the cluster in monitoring: B's counters view read by `ipsecctl metrics --stats` (the
# xipsec_cluster_* families) and XIPSEC-MIB's xipsecCluster group walked through a stock Net-SNMP
# snmpd with xipsec-snmpd as its AgentX subagent, each figure compared with B's show cluster.
. "$top_srcdir/tests/netns/lib.sh"
xt_require tcpdump tshark "$PYTHON"
"$PYTHON" -c 'import scapy.layers.ipsec' 2>/dev/null || xt_fail "scapy missing for $PYTHON (python3-scapy: scripts/install-deps)"
. "$top_srcdir/tests/netns/test_dp_common.sh"
CTL="$top_builddir/ipsecctl/ipsecctl"
AGENT="$top_builddir/snmpd/xipsec-snmpd"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
[ -x "$AGENT" ] || xt_skip "xipsec-snmpd not built (configure found no libsnmp-dev)"
for c in snmpd snmpwalk; do
	command -v "$c" >/dev/null || xt_fail "$c is missing: scripts/install-deps installs it (Debian snmpd, snmp)"
done

LEASE=1024
BUDGET=4096
SYNC_PACKETS=256
for ns in hA A hB B sw sink; do
	xt_ns_add "$ns"
	xt_exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
xt_veth hA eth0 A inA
xt_veth hB eth0 B inB
xt_veth A outA sw sA
xt_veth B outB sw sB
xt_veth sink eth0 sw s0
xt_veth A syncA B syncB
xt_exec sw ip link add br0 type bridge
for p in sA sB s0; do xt_exec sw ip link set "$p" master br0; done
xt_exec sw ip link set br0 up
xt_exec sw sysctl -qw net.bridge.bridge-nf-call-iptables=0 2>/dev/null || true
xt_exec sink ip addr add 192.0.2.2/24 dev eth0
for n in A B; do
	xt_exec "h$n" ip addr add 10.1.0.2/24 dev eth0
	xt_exec "h$n" ip route add default via 10.1.0.1
	xt_exec "h$n" ethtool -K eth0 tx off >/dev/null
	xt_exec "$n" ip addr add 10.1.0.1/24 dev "in$n"
	xt_exec "$n" ip addr add 192.0.2.1/24 dev "out$n"
	xt_exec "$n" ip route add 10.2.0.0/24 via 192.0.2.2
	xt_exec "$n" ip route add 10.3.0.0/24 via 192.0.2.2
	xt_exec "$n" sysctl -qw net.ipv4.ip_forward=0
done
xt_exec A ip addr add 172.16.0.1/24 dev syncA
xt_exec B ip addr add 172.16.0.2/24 dev syncB
mac() { xt_exec "$1" ip -o link show "$2" | sed -n 's|.*link/ether \([0-9a-f:]*\).*|\1|p'; }
MAC_A=$(mac A outA)
MAC_B=$(mac B outB)
xt_log "A is $MAC_A, B is $MAC_B"

# the cluster key: 64 hex digits, ours, 0600
KEY="$XT_DIR/cluster.key"
( umask 077; od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$KEY"; echo >> "$KEY" )

dp_sadb A
dp_sadb B
cat > "$XT_DIR/gw.conf" <<CONF
esp tunnel from 10.1.0.0/24 to 10.2.0.0/24 local 192.0.2.1 peer 192.0.2.2 \\
    spi 0x1000:0x1001 enc aes128 auth sha256 \\
    key 0x000102030405060708090a0b0c0d0e0f:0x101112131415161718191a1b1c1d1e1f \\
    authkey 0x202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f:0x404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f \\
    ikeid 1
esp tunnel from 10.1.0.0/24 to 10.3.0.0/24 local 192.0.2.1 peer 192.0.2.2 \\
    spi 0x2100:0x2101 enc aes128gcm16 \\
    key 0xa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3:0xc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3
CONF
# (ikeid: the SAs are flagged negotiated, as the ha plugin's are; a manual inbound SA would keep its
# window ceiling on disk instead of the cluster's window tops). The second tunnel is manually keyed
# AES-GCM: a clustered node refuses both its SAs (their numbers and window only its own disk holds,
# so the other node would repeat them), and nothing may leave on SPI 0x2100.
for n in A B; do
	timeout 30 "$CTL" --sadb "$(dp_sadb_of "$n")" -f "$XT_DIR/gw.conf" || xt_fail "ipsecctl load on $n"
done

start() { # start NODE: xipsecd of the node, clustered with the other
	local n=$1 local peer
	[ "$n" = A ] && { local=172.16.0.1; peer=172.16.0.2; } || { local=172.16.0.2; peer=172.16.0.1; }
	xt_bg "$n" "xipsecd-$n" "$XIPSECD" --inside "in$n" --outside "out$n" --workers 1 \
		--sadb "$(dp_sadb_of "$n")" --ctl "$XT_DIR/$n.sock" --stats "$(dp_stats_of "$n")" --tun none \
		--cluster-local "$local" --cluster-peer "$peer" --cluster-key "$KEY" \
		--cluster-lease $LEASE --cluster-budget $BUDGET --cluster-sync-ms 20 \
		--cluster-sync-packets $SYNC_PACKETS
	xt_wait 20 "$XIPSECD" --status --ctl "$XT_DIR/$n.sock" ||
		{ cat "$XT_DIR/xipsecd-$n.log" >&2; xt_fail "xipsecd on $n did not start"; }
}
cl() { timeout 10 "$CTL" --ctl "$XT_DIR/$1.sock" "${@:2}"; }
cluster_json() { cl "$1" --json show cluster > "$XT_DIR/cl-$1.json" || xt_fail "show cluster on $1"; }
field() { cluster_json "$1"; dp_json "$XT_DIR/cl-$1.json" "$2"; }
wait_field() { # wait_field NODE EXPR: until the expression over its show cluster JSON is True (10 s)
	local i
	for i in $(seq 100); do
		[ "$(field "$1" "$2")" = True ] && return 0
		sleep 0.1
	done
	cat "$XT_DIR/cl-$1.json" >&2
	xt_fail "$1: never $2"
}
send() { # send HOST COUNT: UDP datagrams to 10.2.0.2 through the host's node, paced
	xt_exec "$1" "$PYTHON" -c "
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[1])):
    s.sendto(b'x' * 64, ('10.2.0.2', 9))
    if i % 200 == 199: time.sleep(0.01)" "$2" || xt_fail "sending from $1"
}

# esp_in NODE FIRST LAST: ESP of the inbound SA (SPI 0x1001) with sequence numbers FIRST..LAST from
# the sink to NODE's outside MAC, built by scapy; each carries a UDP datagram to 10.1.0.2:9999
# whose payload is its sequence number
esp_in() {
	xt_exec sink "$PYTHON" - "$1" "$2" "$3" <<'PY' || xt_fail "scapy sending ESP to $1"
import logging, sys
logging.getLogger('scapy.runtime').setLevel(logging.ERROR)
from scapy.all import Ether, IP, UDP, Raw, ESP, conf, sendp
from scapy.layers.ipsec import SecurityAssociation
conf.verb = 0
mac, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sa = SecurityAssociation(ESP, spi=0x1001, crypt_algo='AES-CBC',
                         crypt_key=bytes.fromhex('101112131415161718191a1b1c1d1e1f'),
                         auth_algo='SHA2-256-128',
                         auth_key=bytes.fromhex('404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f'),
                         tunnel_header=IP(src='192.0.2.2', dst='192.0.2.1'))
pkts = [Ether(dst=mac) / sa.encrypt(IP(src='10.2.0.2', dst='10.1.0.2') / UDP(sport=9999, dport=9999) /
                                   Raw(b'%010d' % n), seq_num=n) for n in range(first, last + 1)]
sendp(pkts, iface='eth0', inter=0.0005)
PY
}
# the sequence numbers host hNODE received (each once), one a line, in rx-NODE.log
rx_start() {
	xt_bg "h$1" "rx-$1" "$PYTHON" -u -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('10.1.0.2', 9999))
while True:
    print(int(s.recvfrom(100)[0]))"
}
rx_seqs() { sort -nu "$XT_DIR/rx-$1.log" | awk -v a="$2" -v b="$3" '$1 >= a && $1 <= b'; }

# Each resync here takes several of A's scans (one SA a scan) and B asks again before it ends, as a
# resync of 20,000 SAs does with a second between asks: the pass must go on, not start over at each
# ask (B was never eligible).
export XIPSEC_TEST_RESYNC_STEP=1 XIPSEC_TEST_RESYNC_RETRY_MS=25
start A
start B
# B's SNMP: a stock snmpd as the AgentX master (v2c on B's loopback), xipsec-snmpd on B's view
SD="$XT_DIR/snmp"
mkdir -p "$SD/persist" "$SD/client/cert_indexes"
export SNMP_PERSISTENT_DIR="$SD/client"
cat > "$SD/snmpd.conf" <<EOF
agentaddress udp:127.0.0.1:1161
master agentx
agentXSocket $SD/agentx.sock
rocommunity xsha 127.0.0.1 .1.3.6.1.4.1.32473
EOF
xt_bg B snmpd env SNMP_PERSISTENT_DIR="$SD/persist" MIBS= \
	snmpd -f -C -c "$SD/snmpd.conf" -Lf "$SD/snmpd.log" -p "$SD/snmpd.pid"
xt_wait 10 test -S "$SD/agentx.sock" || { cat "$SD/snmpd.log" >&2; xt_fail "snmpd did not open its AgentX socket"; }
xt_bg B snmp-agent "$AGENT" --agentx-socket "$SD/agentx.sock" --stats "$(dp_stats_of B)" --no-ike
rx_start A
rx_start B
dp_capture_start esp sink eth0
# a clustered xipsecd starts standby: nothing leaves until a role is set
cl A cluster active || xt_fail "cluster active on A"
wait_field B "j['eligible'] and j['peer_role'] == 'active' and j['peer_reachable']"
[ "$(field B "j['role']")" = standby ] || xt_fail "B is not standby"

# 0. an SA the active holds and the standby lacks (as when the ha plugin's resync brought a restarted
# node an IKE_SA without its CHILD_SAs): after the grace (3 s) B is not eligible, says why and
# refuses to be made active; once it holds the SA too it is eligible again
extra_sa() { # NODE add|delete
	if [ "$2" = add ]; then
		timeout 10 "$CTL" --sadb "$(dp_sadb_of "$1")" sa add esp tunnel from 192.0.2.1 to 192.0.2.2 \
			spi 0x2000 out enc aes128 auth sha256 key 0x606162636465666768696a6b6c6d6e6f \
			authkey 0x707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f ikeid 2
	else
		timeout 10 "$CTL" --sadb "$(dp_sadb_of "$1")" sa delete esp 0x2000 dst 192.0.2.2
	fi || xt_fail "sa $2 on $1"
}
extra_sa A add
wait_field B "not j['eligible'] and not j['sas_match'] and 'waiting for the SAs the active holds' in j['eligibility']"
! cl B cluster active >"$XT_DIR/refused.txt" 2>&1 || xt_fail "B was made active without an SA the active holds"
grep -q "refused: this node holds 2 covered SAs, the active peer .* 3" "$XT_DIR/refused.txt" ||
	xt_fail "B's refusal does not say why: $(cat "$XT_DIR/refused.txt")"
grep -q "not eligible (it holds 2 covered SAs, the active 3" <<<"$(cl B show cluster)" ||
	xt_fail "B's show cluster does not say why it is not eligible"
extra_sa B add
wait_field B "j['eligible'] and j['sas_match'] and j['role'] == 'standby'"
grep -q "covered SAs have differed from the 3 of the active" "$XT_DIR/xipsecd-B.log" &&
	grep -q "holds the SAs the active .* holds again (3)" "$XT_DIR/xipsecd-B.log" ||
	xt_fail "B's xipsecd did not log the difference and its end"
extra_sa A delete
extra_sa B delete
xt_log "0: B lacking an SA of the active: not eligible after the grace, active refused; eligible once it held it"
# An SPI reserved for a negotiation (LARVAL: no algorithm, no key) and completed a moment later,
# as xipsec-iked's backend does for every CHILD_SA whose inbound SPI this node picks (the resync's
# rekeys among them): a reservation, not an SA the engine refuses, and no counters to lose when
# the completed SA (a new instance) takes its slot's runtime area
larval=$(timeout 10 "$CTL" --sadb "$(dp_sadb_of A)" sa allocspi esp from 192.0.2.2 to 192.0.2.1 range 0x3000-0x3000) ||
	xt_fail "allocspi on A"
sleep 0.3
timeout 10 "$CTL" --sadb "$(dp_sadb_of A)" sa update esp tunnel from 192.0.2.2 to 192.0.2.1 spi "$larval" in \
	enc aes128 auth sha256 key 0x909192939495969798999a9b9c9d9e9f \
	authkey 0xa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf ikeid 3 || xt_fail "completing $larval on A"
sleep 0.3
timeout 10 "$CTL" --sadb "$(dp_sadb_of A)" sa delete esp "$larval" dst 192.0.2.1 || xt_fail "deleting $larval on A"
sleep 0.3
! grep -E "engine refuses|belongs to another SA" "$XT_DIR/xipsecd-A.log" ||
	xt_fail "A's xipsecd warned of the reserved SPI $larval as of a broken SA"
xt_log "0: a reserved SPI completed into an SA: no engine refusal, no lost counters"

# 1. traffic through A
send hA 3000
xt_exec hA "$PYTHON" -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(50): s.sendto(b'x' * 64, ('10.3.0.2', 9))" || xt_fail "sending to the manual tunnel"
for spi in 0x00002100 0x00002101; do
	grep -q "SA spi $spi dst .* refused on a cluster node: a manual" "$XT_DIR/xipsecd-A.log" ||
		{ cat "$XT_DIR/xipsecd-A.log" >&2; xt_fail "A did not refuse the manual SA $spi"; }
done
wait_field B "[s for s in j['sas'] if s['dir'] == 'out'][0]['recorded'] > 0"

# inbound ESP into A: 600 numbers, synced to B (the top B recorded reaches A's); then a burst of 200
# A accepts after its last sync (its messages to B blackholed, as if it died before its next sync:
# at most sync_packets numbers or sync_ms of traffic), and A dies
in_field() { field "$1" "[s for s in j['sas'] if s['dir'] == 'in'][0]['$2']"; }
esp_in "$MAC_A" 1 600
sleep 0.3
top=$(in_field A top)
[ "$top" -ge 500 ] || xt_fail "inbound: A's window top is $top after 600 ESP packets"
wait_field B "[s for s in j['sas'] if s['dir'] == 'in'][0]['recorded'] == $top"
xt_exec A ip route add blackhole 172.16.0.2/32
esp_in "$MAC_A" 601 800

# 2. A dies; B takes over
xt_stop xipsecd-A KILL
xt_exec A ip route del blackhole 172.16.0.2/32
rec=$(in_field B recorded)
cl B cluster active || xt_fail "cluster active on B after A died"
a_got=$(rx_seqs A 1 800 | wc -l)
a_top=$(rx_seqs A 1 800 | tail -1)
[ "$a_got" -ge 700 ] || xt_fail "inbound: A delivered $a_got of 800 ESP packets"
[ "$rec" -eq "$top" ] && [ "$a_top" -gt "$rec" ] || xt_fail "inbound: B recorded the window top $rec, A accepted up to $a_top"
# everything A accepted, sent again to B, then 50 new numbers
drops0=$(dp_status B | "$PYTHON" -c "import json, sys; d = json.load(sys.stdin)['worker'][0]['drops']; print(d.get('replay', 0) + d.get('replay_old', 0))")
esp_in "$MAC_B" 1 850
xt_wait 5 sh -c "[ \$(sort -nu '$XT_DIR/rx-B.log' | awk '\$1 > 800' | wc -l) -ge 45 ]" ||
	xt_fail "inbound: B delivered $(rx_seqs B 801 850 | wc -l) of 50 new ESP packets"
drops1=$(dp_status B | "$PYTHON" -c "import json, sys; d = json.load(sys.stdin)['worker'][0]['drops']; print(d.get('replay', 0) + d.get('replay_old', 0))")
b_old=$(rx_seqs B 1 "$rec" | wc -l)
residual=$(rx_seqs B $((rec + 1)) 800 | wc -l)
[ "$b_old" -eq 0 ] || xt_fail "inbound: B accepted $b_old packets at or below the synced top $rec: $(rx_seqs B 1 "$rec" | head -5 | tr '\n' ' ')"
[ $((drops1 - drops0)) -ge "$rec" ] || xt_fail "inbound: B counted $((drops1 - drops0)) replay drops, want at least $rec"
# the residual: numbers A accepted above the last top it synced, accepted once more by B; the
# bound is sync_packets numbers (or what arrived within sync_ms)
[ "$residual" -eq $((a_top - rec)) ] && [ "$residual" -lt "$SYNC_PACKETS" ] ||
	xt_fail "inbound: B accepted $residual packets above the synced top $rec (A's top $a_top, bound $SYNC_PACKETS)"
# once: sent again, the residual is dropped too
esp_in "$MAC_B" $((rec + 1)) 800
sleep 0.5
[ "$(sort -n "$XT_DIR/rx-B.log" | awk -v r="$rec" '$1 > r && $1 <= 800' | wc -l)" -eq "$residual" ] ||
	xt_fail "inbound: B accepted packets of the residual twice"
xt_log "inbound: A accepted up to $a_top, B's window seeded at $rec: B dropped all $rec as replays ($((drops1 - drops0)) drops), residual $residual accepted again (bound $SYNC_PACKETS numbers or 20 ms)"
send hB 2000
# forged datagrams from A's sync address and port (A is dead, so they are free): dropped as auth,
# never acted on; from another port: foreign
xt_exec A "$PYTHON" -c "
import socket
for port, n in ((4510, 5), (4999, 3)):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(('172.16.0.1', port))
    for i in range(n):
        s.sendto(b'XCL1' + bytes(80), ('172.16.0.2', 4510))
    s.close()" || xt_fail "forged datagrams"
wait_field B "j['counters']['dropped']['auth'] >= 5 and j['counters']['dropped']['foreign'] >= 3"
[ "$(field B "j['role']")" = active ] || xt_fail "B changed role"

# The cluster in monitoring, read while the traffic stands still and A is dead: everything but the
# ages and the message counts (B sends heartbeats, A sends nothing) is settled, and the view is at
# most 500 ms older than show cluster (the subagent's cache one second more).
sleep 1.1
xt_wait 10 grep -q "subagent connected" "$XT_DIR/snmp-agent.log" ||
	{ cat "$XT_DIR/snmp-agent.log" >&2; xt_fail "xipsec-snmpd did not connect"; }
timeout 10 "$CTL" metrics --stats "$(dp_stats_of B)" --no-ike --no-sa > "$XT_DIR/metrics-B.prom" ||
	xt_fail "ipsecctl metrics --stats on B"
xt_exec B timeout 20 snmpwalk -v2c -c xsha -m XIPSEC-MIB -M "$top_srcdir/snmpd/mib/ietf:$top_srcdir/snmpd/mib" \
	-OQsU -t 3 -r 1 127.0.0.1:1161 XIPSEC-MIB::xipsecCluster > "$XT_DIR/walk-B.txt" ||
	xt_fail "snmpwalk of xipsecCluster on B"
cluster_json B
"$PYTHON" - "$XT_DIR/cl-B.json" "$XT_DIR/metrics-B.prom" "$XT_DIR/walk-B.txt" <<'PY' || xt_fail "monitoring disagrees with show cluster"
import json, re, sys
j = json.load(open(sys.argv[1]))
prom = {}
for l in open(sys.argv[2]):
    m = re.match(r'(xipsec_cluster_\w+)(\{[^}]*\})? (\d+)$', l.strip())
    if m:
        prom[m.group(1) + (m.group(2) or '')] = int(m.group(3))
walk = dict(l.strip().split(' = ', 1) for l in open(sys.argv[3]) if ' = ' in l)
walk = {k.split('.')[0]: v.strip('"') for k, v in walk.items()}
def same(what, a, b):
    if a != b:
        sys.exit('%s: show cluster %r, monitoring %r' % (what, a, b))
c, d = j['counters'], j['counters']['dropped']
assert j['role'] == 'active' and not j['peer_reachable'] and d['auth'] >= 5 and d['foreign'] >= 3, j
# the exporter: every family against the JSON, under the same names
same('up', 1, prom['xipsec_cluster_up'])
same('role', j['role'] == 'active', prom['xipsec_cluster_active'] == 1)
same('eligible', j['eligible'], prom['xipsec_cluster_eligible'] == 1)
same('peer_reachable', j['peer_reachable'], prom['xipsec_cluster_peer_reachable'] == 1)
same('peer_role', j['peer_role'] == 'active', prom['xipsec_cluster_peer_active'] == 1)
same('covered_sas', j['covered_sas'], prom['xipsec_cluster_covered_sas'])
same('min_headroom', j['min_headroom'], prom.get('xipsec_cluster_lease_headroom_min', -1))
if j['min_headroom'] >= 0:
    same('min_headroom_spi', int(j['min_headroom_spi'], 16), prom['xipsec_cluster_lease_headroom_min_spi'])
same('segments', j['segments']['count'], prom['xipsec_cluster_segments'])
for name, v in c.items():
    if name == 'dropped':
        for r, n in v.items():
            same('dropped ' + r, n, prom['xipsec_cluster_sync_dropped_total{reason="%s"}' % r])
    elif name in ('sent', 'received', 'send_errors'):
        # B's heartbeats go on between the readings: the view's count is the older one
        p = prom['xipsec_cluster_sync_total{event="%s"}' % name]
        assert p <= v <= p + 20, '%s: show cluster %d, metrics %d' % (name, v, p)
    else:
        same(name, v, prom['xipsec_cluster_sync_total{event="%s"}' % name])
# A is dead: its last message only grows older; the view's age is the older reading's
lm = prom['xipsec_cluster_last_message_age_milliseconds']
assert lm <= j['last_message_ms'] <= lm + 2500, (lm, j['last_message_ms'])
# SNMP: the same figures again, as XIPSEC-MIB types them
same('snmp up', 'true', walk['xipsecClusterUp'])
same('snmp role', j['role'], walk['xipsecClusterRole'])
same('snmp peer role', j['peer_role'], walk['xipsecClusterPeerRole'])
same('snmp peer reachable', 'true' if j['peer_reachable'] else 'false', walk['xipsecClusterPeerReachable'])
same('snmp eligible', 'true' if j['eligible'] else 'false', walk['xipsecClusterEligible'])
same('snmp covered', j['covered_sas'], int(walk['xipsecClusterCoveredSas']))
same('snmp takeovers', c['takeovers'], int(walk['xipsecClusterTakeovers']))
same('snmp leases acked', c['leases_acked'], int(walk['xipsecClusterLeasesAcked']))
same('snmp resyncs served', c['resyncs_served'], int(walk['xipsecClusterResyncsServed']))
same('snmp auth', d['auth'], int(walk['xipsecClusterDropAuth']))
same('snmp foreign', d['foreign'], int(walk['xipsecClusterDropForeign']))
same('snmp headroom', j['min_headroom'] if j['min_headroom'] >= 0 else 2**64 - 1,
     int(walk['xipsecClusterLeaseHeadroomMin']))
same('snmp segments', j['segments']['count'], int(walk['xipsecClusterSegments']))
print('monitoring: role %s, takeovers %d, auth %d, foreign %d, headroom %d (SPI %s), %d SNMP objects'
      % (j['role'], c['takeovers'], d['auth'], d['foreign'], j['min_headroom'], j['min_headroom_spi'],
         len(walk)), file=sys.stderr)
PY
xt_stop snmp-agent TERM
xt_stop snmpd TERM

# 3. A back (standby). While its own messages cannot reach B (a blackhole route on A: it hears B,
# B never hears it), it cannot catch up: `cluster active` is refused with a message, as long as
# the active peer is reachable. Then it catches up.
xt_exec A ip route add blackhole 172.16.0.2/32
start A
wait_field A "j['peer_reachable'] and j['peer_role'] == 'active' and not j['eligible']"
cl A cluster active 2>"$XT_DIR/refused.err" && xt_fail "cluster active on A accepted before it caught up"
grep -q "not caught up" "$XT_DIR/refused.err" || { cat "$XT_DIR/refused.err" >&2; xt_fail "no refusal message"; }
# 3b. The peer unreachable too: A, still not caught up, is made active (a lone node must serve). It
# does not know how far B went on the SAs it holds, so it sends nothing on them (their soft expiry
# raised for a rekey; no lease) rather than guess: not one ESP packet from A in this phase.
xt_exec A ip link set syncA down
wait_field A "not j['peer_reachable']"
dp_capture_start blind sink eth0
cl A cluster active 2>"$XT_DIR/blind.err" || xt_fail "cluster active on A, alone: $(cat "$XT_DIR/blind.err")"
send hA 200
wait_field A "j['counters']['solo_soft_expired'] >= 1 and [s for s in j['sas'] if s['dir'] == 'out'][0]['lease'] == 0"
sleep 0.5
dp_capture_stop blind
timeout 60 tshark -r "$XT_DIR/blind.pcap" -Y "esp && eth.src == $MAC_A" > "$XT_DIR/blind.txt" \
	2> "$XT_DIR/tshark.err" || xt_fail "tshark: $(cat "$XT_DIR/tshark.err")"
n_blind=$(wc -l < "$XT_DIR/blind.txt")
[ "$n_blind" = 0 ] || xt_fail "A, made active without having caught up, sent $n_blind ESP packets on SAs it could not lease"
xt_log "A active without having caught up: no ESP sent, soft expiry raised, no lease"
cl A cluster standby || xt_fail "cluster standby on A after the blind phase"
xt_exec A ip link set syncA up
wait_field A "j['peer_reachable']"
xt_exec A ip route del blackhole 172.16.0.2/32
wait_field A "j['eligible'] and j['peer_role'] == 'active' and j['counters']['resyncs_asked'] >= 1"
# the split brain
xt_exec A ip link set syncA down
wait_field A "not j['peer_reachable']"
wait_field B "not j['peer_reachable']"
cl A cluster active || xt_fail "cluster active on A, alone"
send hA $((BUDGET * 3 / 2)) &
sa=$!
send hB $((BUDGET * 3 / 2))
wait $sa
# a loaded machine loses some of the datagrams on the way in: send more until the budget is used
for n in A B; do
	for i in 1 2 3 4 5; do
		sleep 0.1
		[ "$(field "$n" "j['counters']['solo_hard_expired'] >= 1")" = True ] && break
		send "h$n" "$BUDGET"
	done
	wait_field "$n" "j['counters']['solo_soft_expired'] >= 1 and j['counters']['solo_hard_expired'] >= 1"
done

xt_exec A ip link set syncA up

# 4. heal: A steps down, catches up again; one active; B knows every number A used
a_top=$(field A "[s for s in j['sas'] if s['dir'] == 'out'][0]['reserved']")
cl A cluster standby || xt_fail "cluster standby on A"
wait_field A "j['peer_reachable'] and j['eligible'] and j['role'] == 'standby'"
wait_field B "j['role'] == 'active' and j['peer_role'] == 'standby'"
wait_field B "[s for s in j['sas'] if s['dir'] == 'out'][0]['recorded'] >= $a_top"
dp_capture_stop esp

# not one packet on the refused manual SA, from either node
timeout 60 tshark -r "$XT_DIR/esp.pcap" -Y "esp.spi == 0x2100" > "$XT_DIR/manual.txt" || xt_fail "tshark (manual SA)"
[ ! -s "$XT_DIR/manual.txt" ] || xt_fail "ESP on the refused manual SA: $(head -3 "$XT_DIR/manual.txt")"
# the capture: (node, SPI, sequence)
timeout 60 tshark -r "$XT_DIR/esp.pcap" -Y "esp && !icmp && ip.src == 192.0.2.1" -T fields -e eth.src -e esp.spi -e esp.sequence \
	> "$XT_DIR/esp.txt" || xt_fail "tshark"
"$PYTHON" - "$XT_DIR/esp.txt" "$MAC_A" "$MAC_B" "$BUDGET" "$XT_DIR/cl-B.json" <<'PY' || xt_fail "the capture"
import json, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().split('\n') if l]
mac_a, mac_b, budget = sys.argv[2], sys.argv[3], int(sys.argv[4])
seen, phases = {}, {'A': [], 'B': []}
for mac, spi, seq in rows:
    node = 'A' if mac == mac_a else 'B' if mac == mac_b else None
    assert node, 'ESP from an unknown MAC %s (A %s, B %s)' % (mac, mac_a, mac_b)
    key = (spi, int(seq))
    if key in seen:
        sys.exit('(SPI %s, sequence %s) sent twice: by %s and by %s' % (spi, seq, seen[key], node))
    seen[key] = node
    phases[node].append(int(seq))
# the runs of each node in capture order: A's first run, B's run, A's second (split brain)
def runs(seqs):
    out, cur = [], [seqs[0]]
    for s in seqs[1:]:
        if s < cur[-1] or s > cur[-1] + 2 * budget:
            out.append(cur); cur = [s]
        else:
            cur.append(s)
    return out + [cur]
a, b = phases['A'], phases['B']
print('A sent %d (%d..%d), B sent %d (%d..%d)' % (len(a), min(a), max(a), len(b), min(b), max(b)),
      file=sys.stderr)
# (the small lease makes the engine wait for acknowledgements now and then: seq_lease drops)
assert len(a) >= 1000 and len(b) >= 500, 'too little traffic in the capture'
# B's first number lies above every number A used before it died (A's numbers in the capture order
# until B's first packet)
order = [(l[0], int(l[2])) for l in rows]
first_b = next(i for i, (m, s) in enumerate(order) if m == mac_b)
a_before = [s for m, s in order[:first_b] if m == mac_a]
assert order[first_b][1] > max(a_before), 'B started at %d, A had used %d' % (order[first_b][1], max(a_before))
# alone, each node sent at most a budget's numbers past where it started being alone: never all
# it was given (1.5 budgets)
split = [s for m, s in order[first_b:] if m == mac_a]
split_a = [s for s in split if s > max(a_before)]
assert split_a and max(split_a) - min(split_a) < budget, 'A alone used %d numbers' % (max(split_a) - min(split_a) + 1)
# healed: B knows a lease end at or above every number A used
j = json.load(open(sys.argv[5]))
rec = [s for s in j['sas'] if s['dir'] == 'out'][0]['recorded']
assert rec >= max(a), 'B recorded %d, A used %d' % (rec, max(a))
PY
grep -h "cluster" "$XT_DIR/xipsecd-A.log" "$XT_DIR/xipsecd-B.log" | tail -12 >&2
cl B show cluster >&2 || xt_fail "show cluster (text) on B"
for n in A B; do
	"$XIPSECD" --status --ctl "$XT_DIR/$n.sock" > "$XT_DIR/status-$n.json"
	xt_log "$n drops: $(dp_json "$XT_DIR/status-$n.json" "j['worker'][0]['drops']")"
done
xt_log "PASS"
