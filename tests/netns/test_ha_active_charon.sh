#!/bin/bash
# tests/netns/test_ha_active_charon.sh: active/active against a peer nobody here wrote. 20 tunnels from
# stock charon with kernel-libipsec (one charon, 20 connections from 20 local addresses 198.51.100.10-29,
# each its own IKE_SA, so the ha plugin places each in the segment of its address) to two xipsec
# nodes sharing the cluster address 198.51.100.1 (a multicast MAC: both receive every frame), each
# with xipsecd (--cluster-segments 2, the dataplanes' sync on the sync link, both dataplanes
# active) and xipsec-iked with strongSwan's ha plugin (two segments, its own heartbeat decides who
# owns which; no keepalived: VRRP has one master, active/active has none). The peer holds the sites
# itself, 10.2.0.10-29, one address per tunnel (kernel-libipsec routes a tunnel only from a local
# address of its traffic selector); h1 is the cluster's inside.
#  1. Each node protects and decrypts exactly the tunnels of its segment (per-SA counters of both
#     nodes against a segment computed apart, tests/netns/ha_segment.py); the sums are what was sent.
#  2. A segment moved while both nodes live (the plugin's FIFO: "-N" on its owner hands it to the
#     other, "+N" takes it back) under UDP flows: no gap over 3 s, no (SPI, sequence) pair twice, no
#     replay refused by the peer; before it, the gaining node's xipsecd given the segment first (by
#     hand) does not take it while the other still forwards it.
#  3. kill -9 of one node's daemons under UDP flows and a TCP transfer: its segment moves to the
#     survivor within 3 s (measured), traffic resumes within 3 s, the TCP transfer arrives intact,
#     the peer's IKE_SAs and CHILD_SAs are the same (SPIs, no IKE_SA_INIT on the wire), the peer
#     counts no replay or ICV failure, and no (SPI, sequence) pair leaves the cluster twice.
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
. "$top_srcdir/tests/netns/ha_common.sh"
ha_require

CL=198.51.100.1
HA_VIP=$CL          # ha_check_capture: what the cluster sends comes from here
HA_SITE=gw2        # the flows end at the peer
NPEER=20
PKTS=20
PSK="xipsec test key: not a real secret 0123456789"

# ---- the bed ----
for ns in h1 lin gw1 gw3 sw gw2; do
	xt_ns_add "$ns"
	xt_exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
ha_links
# bridges without snooping: the cluster's multicast MACs flood to both nodes (CLUSTERIP's trick)
for b in "lin l0 l1 l3" "sw s1 s2 s3"; do
	set -- $b
	xt_exec "$1" ip link add br0 type bridge mcast_snooping 0
	for p in "${@:2}"; do xt_exec "$1" ip link set "$p" master br0; done
	xt_exec "$1" ip link set br0 up
done
xt_exec h1 ip addr add 10.1.0.2/24 dev eth0
xt_exec h1 ip route add default via 10.1.0.1
xt_exec h1 ip neigh replace 10.1.0.1 lladdr 01:00:5e:00:00:02 dev eth0 nud permanent
xt_exec h1 ethtool -K eth0 tx off >/dev/null
xt_exec gw2 ip link add site type veth peer name site0
xt_exec gw2 ip link set site up
xt_exec gw2 ip link set site0 up
for i in $(seq 10 $((9 + NPEER))); do
	xt_exec gw2 ip addr add "10.2.0.$i/32" dev site
	xt_exec gw2 ip addr add "198.51.100.$i/24" dev out2
done
xt_exec gw2 ip neigh replace "$CL" lladdr 01:00:5e:00:00:01 dev out2 nud permanent
for n in gw1 gw3; do
	i=$(ha_id $n); k=${n#gw}
	xt_exec $n ip addr add "$CL/24" dev out$k
	xt_exec $n ip addr add 10.1.0.1/24 dev in$k
	xt_exec $n ip addr add 10.9.9.$i/24 dev sy
	xt_exec $n sysctl -qw net.ipv4.ip_forward=0
	dp_sadb $n
done

# the segment of each peer, computed apart from the product: "I SEGMENT" for 198.51.100.I
"$PYTHON" "$top_srcdir/tests/netns/ha_segment.py" 2 $(seq -f "198.51.100.%g" 10 $((9 + NPEER))) |
	sed 's/^198\.51\.100\.//' > "$XT_DIR/segs"
peers_of() { awk -v s="$1" '$2 == s { print $1 }' "$XT_DIR/segs"; }
[ -n "$(peers_of 1)" ] && [ -n "$(peers_of 2)" ] || xt_fail "the peers do not fall in both segments"
xt_log "peers in segment 1: $(peers_of 1 | wc -l), in segment 2: $(peers_of 2 | wc -l)"

# ---- configuration ----
HA_KEY=$XT_DIR/cluster.key
( umask 077; openssl rand -hex 32 > "$HA_KEY" )
ike_dirs gw2
{
	echo "connections {"
	for i in $(seq 10 $((9 + NPEER))); do
		cat <<EOF
  p$i {
    version = 2
    local_addrs = 198.51.100.$i
    remote_addrs = $CL
    proposals = aes128gcm16-prfsha256-ecp256
    dpd_delay = 1s
    local { auth = psk
      id = 198.51.100.$i }
    remote { auth = psk
      id = $CL }
    children { net { local_ts = 10.2.0.$i/32
      remote_ts = 10.1.0.0/24
      esp_proposals = aes128gcm16 } }
  }
EOF
	done
	printf '}\nsecrets { ike-psk { secret = "%s" } }\n' "$PSK"
} > "$XT_DIR/gw2/conf/swanctl.conf"
for n in gw1 gw3; do
	ike_dirs $n "$(dp_sadb_of $n)"
	# the plugin's heartbeat owns the segments here (etc/cluster/strongswan-ha.conf turns it off
	# for keepalived); its FIFO moves one by hand
	ike_sconf $n "$(grep '^load = ' "$top_srcdir/etc/cluster/strongswan-ha.conf")" \
		"xipsecd_ctl = $XT_DIR/$n.sock" \
		"plugins { ha { local = 10.9.9.$(ha_id $n)" "remote = 10.9.9.$(ha_id "$(ha_other $n)")" \
		"segment_count = 2" "heartbeat_delay = 200" "heartbeat_timeout = 1000" "resync = yes" \
		"fifo_interface = yes } }"
	cat > "$XT_DIR/$n/conf/swanctl.conf" <<EOF
connections {
  peers {
    version = 2
    local_addrs = $CL
    remote_addrs = 198.51.100.0/24
    proposals = aes128gcm16-prfsha256-ecp256
    local { auth = psk
      id = $CL }
    remote { auth = psk }
    children { net { local_ts = 10.1.0.0/24
      remote_ts = 10.2.0.0/24
      esp_proposals = aes128gcm16 } }
  }
}
secrets { ike-psk { secret = "$PSK" } }
EOF
done

# ---- the cluster up: both dataplanes synced and active, the plugin splits the segments ----
seg() { timeout 10 "$IPSECCTL" --ctl "$XT_DIR/$1.sock" cluster segments; }
owned() { seg "$1" | sed -n 's/.*owned: //p'; }
owns() { [ "$(owned "$1")" = "$2" ]; }
fifo() { # NODE CMD: the plugin's segment control ("+N" take, "-N" hand to the other node)
	xt_exec "$1" timeout 5 nsenter --mount="/proc/$(ha_iked_pid "$1")/ns/mnt" \
		sh -c "printf '%s\n' '$2' > /var/run/charon.ha" || ha_fail "writing $2 to $1's ha FIFO"
}
# plugin_move NODE CMD WHO LIST: CMD on NODE's FIFO until WHO owns LIST. The plugin also settles
# ownership from every heartbeat (strongSwan's ha_segments.c, handle_status: a segment that neither
# or both nodes' heartbeats show goes to the node of its parity), so a heartbeat that crosses the
# take or the drop can undo a move, and says so in its log ("was not handled", "was handled
# twice"): only then is CMD given once more.
reconciled() { cat "$XT_DIR/iked-gw1.log" "$XT_DIR/iked-gw3.log" | grep -c "was not handled\|was handled twice"; }
plugin_move() {
	local n0
	n0=$(reconciled)
	fifo "$1" "$2"
	xt_wait 5 owns "$3" "$4" && return 0
	[ "$(reconciled)" -gt "$n0" ] || return 1
	xt_log "the plugin's heartbeat crossed '$2' and undid it (its log: $(grep -h "was not handled\|was handled twice" \
		"$XT_DIR/iked-gw1.log" "$XT_DIR/iked-gw3.log" | tail -1)): once more"
	fifo "$1" "$2"
	xt_wait 5 owns "$3" "$4"
}
cluster_active() { timeout 10 "$IPSECCTL" --ctl "$XT_DIR/$1.sock" cluster active >/dev/null 2>&1; }
ike_start_stock gw2
for n in gw1 gw3; do
	dp_start $n --cluster-segments 2 --cluster-address $CL \
		--cluster-local "10.9.9.$(ha_id $n):4511" --cluster-peer "10.9.9.$(ha_id "$(ha_other $n)"):4511" \
		--cluster-key "$HA_KEY" $HA_DP_ARGS
done
# each hears the other first; gw3's dataplane is made active only once it caught up with gw1's
# (dp_cluster_lease.c: two active nodes number each SA in blocks of their own parity, whichever
# owns its segment)
cl_is() { # NODE KEY VALUE: `ipsecctl show cluster` says so
	[ "$(timeout 10 "$IPSECCTL" --ctl "$XT_DIR/$1.sock" --json show cluster 2>/dev/null |
		"$PYTHON" -c "import json, sys; print(json.load(sys.stdin)['$2'])" 2>/dev/null)" = "$3" ]
}
xt_wait 10 cl_is gw1 peer_reachable True && xt_wait 10 cl_is gw3 peer_reachable True ||
	ha_fail "the dataplanes do not hear each other"
cluster_active gw1 || ha_fail "gw1's dataplane cannot be made active"
xt_wait 5 cl_is gw3 peer_role active || ha_fail "gw3's dataplane does not see gw1's active"
xt_wait 10 cluster_active gw3 || ha_fail "gw3's dataplane cannot be made active (not caught up with gw1)"
grep -q "caught up with" "$XT_DIR/xipsecd-gw3.log" || ha_fail "gw3's dataplane was made active without catching up"
for n in gw1 gw3; do ha_iked $n; done
# the plugin that starts first takes every segment before the other's heartbeat arrives; then one
# is handed over (its FIFO) unless the heartbeats already split them
seg_split() { local a b; a=$(owned gw1) b=$(owned gw3); [ "$a$b" = 12 ] || [ "$a$b" = 21 ]; }
xt_wait 5 seg_split || { [ "$(owned gw1)" = 1,2 ] && fifo gw1 -1; } || { [ "$(owned gw3)" = 1,2 ] && fifo gw3 -1; }
xt_wait 10 seg_split || ha_fail "the plugin did not split the segments: gw1 owns $(owned gw1), gw3 $(owned gw3)"
S1=$(owned gw1) S3=$(owned gw3)
xt_log "the plugin gave segment $S1 to gw1, $S3 to gw3"
ha_role_is gw1 active && ha_role_is gw3 active || ha_fail "dataplanes: gw1 $(ha_role gw1), gw3 $(ha_role gw3)"

for i in $(seq 10 $((9 + NPEER))); do
	ike_ctl gw2 --initiate --ike "p$i" --child net > "$XT_DIR/init-p$i.log" 2>&1 ||
		ha_fail "the peer's connection p$i did not come up: $(tail -3 "$XT_DIR/init-p$i.log")"
done
xt_wait 10 ike_nsa gw1 $((2 * NPEER)) || ha_fail "gw1's SADB holds $(ike_dump gw1 | wc -l) SAs, want $((2 * NPEER))"
xt_wait 10 ike_nsa gw3 $((2 * NPEER)) || ha_fail "gw3's SADB holds $(ike_dump gw3 | wc -l) SAs, want $((2 * NPEER))"
xt_wait 10 ha_same_sas || ha_fail "the nodes' SADBs differ: gw1 $(ha_sa_spis gw1), gw3 $(ha_sa_spis gw3)"
for n in gw1 gw3; do
	e=$(ike_ctl $n --list-sas | grep -c "peers: #[0-9]*, ESTABLISHED")
	p=$(ike_ctl $n --list-sas | grep -c "peers: #[0-9]*, PASSIVE")
	o=$(owned $n)
	[ "$e" = "$(peers_of "$o" | wc -l)" ] && [ "$p" = $((NPEER - e)) ] ||
		ha_fail "$n: $e IKE_SAs ESTABLISHED and $p PASSIVE, want those of segment $o active"
done
ha_capture_start
sas0=$(ha_peer_sas all | sort)
[ "$(grep -c "^IKE" <<<"$sas0")" = $NPEER ] && [ "$(grep -c "^CHILD" <<<"$sas0")" = $NPEER ] ||
	ha_fail "the peer does not list $NPEER IKE_SAs and CHILD_SAs: '$sas0'"

# ---- 1. each node processes only its segment ----
# sinks on both sides, then PKTS datagrams each way through every tunnel
xt_bg h1 sink1 "$PYTHON" -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('10.1.0.2', 9999))
while True: s.recv(2000)"
xt_bg gw2 sink2 "$PYTHON" -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('0.0.0.0', 9999))
while True: s.recv(2000)"
sleep 0.3
send_each() { # NS FROM_FMT TO_FMT: PKTS datagrams per peer I from FROM_FMT % I to TO_FMT % I
	xt_exec "$1" "$PYTHON" - "$2" "$3" "$NPEER" "$PKTS" <<'PY' || ha_fail "the sender in $1 failed"
import socket, sys, time
src, dst, npeer, pkts = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for i in range(10, 10 + npeer):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if '%' in src:
        s.bind((src % i, 0))
    for n in range(pkts):
        s.sendto(b'z' * 200, ((dst % i) if '%' in dst else dst, 9999))
        time.sleep(0.002)
PY
}
send_each h1 "" "10.2.0.%d"
send_each gw2 "10.2.0.%d" "10.1.0.2"
sleep 1
for n in gw1 gw3; do
	timeout 30 "$IPSECCTL" --sadb "$(dp_sadb_of $n)" --json show sa > "$XT_DIR/sa-$n.json" ||
		ha_fail "ipsecctl show sa on $n"
done
"$PYTHON" - "$XT_DIR/segs" "$XT_DIR/sa-gw1.json" "$XT_DIR/sa-gw3.json" "$S1" "$S3" "$PKTS" <<'PY' ||
import json, sys
seg = dict(map(int, l.split()) for l in open(sys.argv[1]))
owner = {int(sys.argv[4]): 0, int(sys.argv[5]): 1}
pkts, bad, total = int(sys.argv[6]), 0, {'in': 0, 'out': 0}
got = {}   # (peer, dir) -> [gw1, gw3]
for n, path in enumerate(sys.argv[2:4]):
    j = json.load(open(path))
    for s in (j['sas'] if isinstance(j, dict) else j):
        peer = s['dst'] if s['dir'] == 'out' else s['src']
        i = int(peer.split('.')[-1])
        got.setdefault((i, s['dir']), [0, 0])[n] += s['counters']['packets']
for (i, d), c in sorted(got.items()):
    want = [0, 0]
    want[owner[seg[i]]] = pkts
    total[d] += sum(c)
    if c != want:
        print('198.51.100.%d (segment %d) %s: gw1 %d gw3 %d, want %d %d' % (i, seg[i], d, c[0], c[1], want[0], want[1]))
        bad = 1
print('decrypted once in all %d, protected once in all %d, of %d each way' % (total['in'], total['out'], pkts * len(seg)))
sys.exit(bad or total['in'] != pkts * len(seg) or total['out'] != pkts * len(seg))
PY
	ha_fail "per-SA counters wrong (above)"
xt_log "1. each node protected and decrypted only its segment's tunnels, every packet once"
xt_stop sink1; xt_stop sink2

# the peers whose tunnels the flows and the TCP transfer use: two of gw1's segment, three of gw3's
a1=$(peers_of "$S1" | head -1) a2=$(peers_of "$S1" | sed -n 2p)
b1=$(peers_of "$S3" | head -1) b2=$(peers_of "$S3" | sed -n 2p) b3=$(peers_of "$S3" | sed -n 3p)
flows_check() { # WHAT NAME...: every flow's longest gap within HA_GAP_MAX_MS
	local what=$1 f; shift
	for f in "$@"; do
		set -- $(ha_flow_result "$f")
		xt_log "$what: UDP flow $f sent $2 received $4, longest gap $6 ms"
		[ "$6" -le "$HA_GAP_MAX_MS" ] || ha_fail "$what: flow $f stopped for $6 ms (peer drops: $(ha_peer_drops))"
	done
}

# ---- 2. a segment moved while both nodes live, and back ----
ha_flow_start mvA 6 "10.2.0.$a1"
ha_flow_start mvB 6 "10.2.0.$b1"
sleep 1.5
# the gaining dataplane told first: the plugins' word reaches the two xipsecds by two paths, and the
# gainer may hear first (dp_segment.c). gw1's xipsecd is given gw3's segment by hand while gw3 still
# forwards it: it must wait for gw3 to let it go, or the peer gets that segment's packets from both
# nodes (and refuses the lower numbers as replays)
both=$(printf '%s\n' "$S1" "$S3" | sort -n | paste -sd,)
timeout 10 "$IPSECCTL" --ctl "$XT_DIR/gw1.sock" cluster segments "$both" >/dev/null ||
	ha_fail "move: ipsecctl cluster segments $both on gw1"
owns gw1 "$S1" || ha_fail "move: gw1 took segment $S3 while gw3 still forwarded it (owns $(owned gw1))"
grep -q "segments $S3 given here: waiting for the other node to let them go" "$XT_DIR/xipsecd-gw1.log" ||
	ha_fail "move: gw1's xipsecd does not say it waits for gw3"
sleep 0.3
plugin_move gw3 "-$S3" gw1 "$both" || ha_fail "move: gw1 did not take segment $S3 (owns $(owned gw1))"
xt_wait 5 owns gw3 none || ha_fail "move: gw3 still owns $(owned gw3)"
xt_log "2. segment $S3 moved to gw1 with both nodes live"
sleep 1.5
plugin_move gw3 "+$S3" gw3 "$S3" || ha_fail "move back: gw3 did not take segment $S3 back (owns $(owned gw3))"
xt_wait 5 owns gw1 "$S1" || ha_fail "move back: gw1 still owns $(owned gw1)"
flows_check "move" mvA mvB
ha_check_peer "move"
ha_check_capture "move"
[ "$(ha_peer_sas all | sort)" = "$sas0" ] || ha_fail "move: the peer's SAs changed"

# ---- 3. kill -9 of gw3's daemons ----
ha_flow_start killA 10 "10.2.0.$a2"
ha_flow_start killB 10 "10.2.0.$b2"
ha_flow_start killC 10 "10.2.0.$b3"
sleep 1
ha_tcp_start kill "10.2.0.$b1"
ha_tcp_midway kill
t0=$(date +%s%N)
ha_kill gw3
xt_wait 5 owns gw1 "$(printf '%s\n' "$S1" "$S3" | sort -n | paste -sd,)" ||
	ha_fail "kill -9: gw1 did not take segment $S3 (owns $(owned gw1))"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
xt_log "3. kill -9: gw1 owns both segments $ms ms after the kill began"
[ "$ms" -le "$HA_GAP_MAX_MS" ] || ha_fail "kill -9: the segment moved in $ms ms"
flows_check "kill -9" killA killB killC
ha_tcp_result kill
xt_log "kill -9: TCP $HA_TCP_BYTES bytes through a tunnel of the moved segment, SHA-256 right"
[ "$(ha_peer_sas all | sort)" = "$sas0" ] ||
	ha_fail "kill -9: the peer's SAs changed: before '$sas0', after '$(ha_peer_sas all | sort)'"
ha_check_peer "kill -9"
ha_check_capture "kill -9"
for p in iked-gw3 xipsecd-gw3; do xt_stop "$p" KILL; done

xt_stop capture
xt_log "PASS: active/active against stock charon: segments split, moved live and on kill -9, SAs kept, no sequence number twice"
exit 0
