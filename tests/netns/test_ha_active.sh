#!/usr/bin/env bash
# tests/netns/test_ha_active.sh: active/active by segments (dataplane/xipsecd/dp_segment.c, the XDP
# program's cluster filter, ike/cluster_seg.c). Two nodes gw1 and gw2 share the cluster address
# 198.51.100.1 on one bridge; the peer namespace reaches it at a multicast MAC, so both nodes receive
# every frame, as the iptables CLUSTERIP target arranged. 20 peers (198.51.100.10-29, scapy's ESP,
# nobody here wrote it) each send ESP through their own tunnel SA, loaded identically into both
# nodes; the segment of each peer is computed here by a hash written apart from the product's.
#  1. ownership set by hand (ipsecctl cluster segments): each node decrypts exactly the SAs of its
#     segment, and every packet is decrypted exactly once (per-SA counters of both nodes); the
#     inside's packets to the 20 sites, which both nodes receive too, are protected exactly once,
#     by the owner of the peer's segment (per-SA counters, cluster_foreign).
#  2. ownership from stock strongSwan's ha plugin (loaded into xipsec-iked on each node, heartbeats
#     over a sync link): the plugin splits the two segments between the nodes, xipsecd follows;
#     killing gw2 (its xipsec-iked and xipsecd) moves segment ownership to gw1 within 3 s, after
#     which gw1 decrypts every peer's traffic.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip
. "$top_srcdir/tests/netns/test_dp_common.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
"$PYTHON" -c 'import scapy.layers.ipsec' 2>/dev/null || xt_skip "scapy missing for $PYTHON"
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
ike_require
[ -f /usr/lib/ipsec/plugins/libstrongswan-ha.so ] ||
	xt_fail "strongSwan's ha plugin is missing (libcharon-extra-plugins; scripts/install-deps)"

CL=198.51.100.1
CLMAC=01:00:5e:00:00:01    # multicast: the bridge floods it to both nodes (CLUSTERIP's trick)
NPEER=20
PKTS=10

for ns in peer sw gw1 gw2 h; do
	xt_ns_add "$ns"
	xt_exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
# bridge NS BR PORTS...: without snooping, so multicast floods to every port
bridge() {
	local ns=$1 br=$2 p; shift 2
	xt_exec "$ns" ip link add "$br" type bridge mcast_snooping 0
	for p in "$@"; do xt_exec "$ns" ip link set "$p" master "$br"; done
	xt_exec "$ns" ip link set "$br" up
}
xt_veth peer p0 sw s0
xt_veth gw1 out1 sw s1
xt_veth gw2 out2 sw s2
bridge sw br0 s0 s1 s2
xt_veth gw1 in1 h i1
xt_veth gw2 in2 h i2
bridge h br1 i1 i2
xt_exec h ip addr add 10.1.0.2/24 dev br1
xt_veth gw1 sync1 gw2 sync2
xt_exec gw1 ip addr add 10.255.0.1/30 dev sync1
xt_exec gw2 ip addr add 10.255.0.2/30 dev sync2
for n in 1 2; do
	xt_exec "gw$n" ip addr add "$CL/24" dev "out$n"
	xt_exec "gw$n" ip addr add 10.1.0.1/24 dev "in$n"
	xt_exec "gw$n" sysctl -qw net.ipv4.ip_forward=0
done
for i in $(seq 10 $((9 + NPEER))); do xt_exec peer ip addr add "198.51.100.$i/24" dev p0; done
xt_exec peer ip neigh replace "$CL" lladdr "$CLMAC" dev p0 nud permanent

# The segment (1 or 2 of 2) of each peer, computed apart from the product (tests/netns/ha_segment.py)
"$PYTHON" "$top_srcdir/tests/netns/ha_segment.py" 2 $(seq -f "198.51.100.%g" 10 $((9 + NPEER))) |
	sed 's/^198\.51\.100\.//' > "$XT_DIR/segs"
n1=$(awk '$2 == 1' "$XT_DIR/segs" | wc -l)
n2=$(awk '$2 == 2' "$XT_DIR/segs" | wc -l)
[ "$n1" -gt 0 ] && [ "$n2" -gt 0 ] || xt_fail "the peers do not fall in both segments ($n1, $n2)"
xt_log "peers in segment 1: $n1, in segment 2: $n2"

# One tunnel per peer: 172.16.0.I -> 10.1.0.0/24 under SPI 0x9000+I, in both nodes.
dp_sadb gw1
dp_sadb gw2
for i in $(seq 10 $((9 + NPEER))); do
	spi=$((0x9000 + i))
	for gw in gw1 gw2; do
		# shellcheck disable=SC2046
		dp_ctl "$gw" policy fwd protect "172.16.0.$i/32" 10.1.0.0/24 reqid "$i" esp tunnel \
			"198.51.100.$i" "$CL"
		# shellcheck disable=SC2046
		dp_ctl "$gw" sa in "$spi" esp tunnel "198.51.100.$i" "$CL" reqid "$i" $(dp_sa_keys gcm "$spi" | cut -d' ' -f2-)
		# the way back, for the outbound split: SPI 0x9000+I too, to the peer
		dp_ctl "$gw" policy out protect 10.1.0.0/24 "172.16.0.$i/32" reqid "$i" esp tunnel "$CL" \
			"198.51.100.$i"
		# shellcheck disable=SC2046
		dp_ctl "$gw" sa out "$spi" esp tunnel "$CL" "198.51.100.$i" reqid "$i" $(dp_sa_keys gcm "$((spi + 0x100))" | cut -d' ' -f2-)
	done
done
# each node its own state directory, as on two machines: they hold the same SAs, SPIs and all
for n in 1 2; do
	XIPSEC_STATE_DIR="$XT_DISK_DIR/state-gw$n" dp_start "gw$n" --cluster-segments 2 --cluster-address "$CL"
done

seg() { timeout 10 "$CTL" --ctl "$XT_DIR/$1.sock" cluster segments "${@:2}"; }
# each node starts owning nothing
seg gw1 | grep -q "owned: none" || xt_fail "gw1 owns segments before it was told: $(seg gw1)"

# send ROUND: every peer sends PKTS ESP packets (scapy), sequence numbers from ROUND*PKTS+1
send() {
	xt_exec peer "$PYTHON" - "$NPEER" "$PKTS" "$1" "$CL" "$CLMAC" <<'PY' || xt_fail "the scapy sender failed"
import logging, sys
logging.getLogger('scapy.runtime').setLevel(logging.ERROR)
from scapy.all import Ether, IP, UDP, Raw, ESP, sendp, conf
from scapy.layers.ipsec import SecurityAssociation
conf.verb = 0
npeer, pkts, rnd, cl, mac = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
def key(spi, n):   # tests/netns/test_dp_common.sh dp_key
    k = ''
    while len(k) < 2 * n:
        k += '%08xa5' % (spi * 2654435761 % 4294967296)
    return bytes.fromhex(k[:2 * n])
frames = []
for i in range(10, 10 + npeer):
    spi = 0x9000 + i
    sa = SecurityAssociation(ESP, spi=spi, crypt_algo='AES-GCM', crypt_key=key(spi, 20),
                             tunnel_header=IP(src='198.51.100.%d' % i, dst=cl))
    for s in range(rnd * pkts + 1, rnd * pkts + pkts + 1):
        inner = IP(src='172.16.0.%d' % i, dst='10.1.0.2') / UDP(sport=4000, dport=9) / Raw(b'x' * 64)
        frames.append(Ether(dst=mac) / sa.encrypt(inner, seq_num=s))
sendp(frames, iface='p0', inter=0.001)
print('sent', len(frames))
PY
}

# counts: "SPI-I packets" lines of a node's inbound SAs
counts() {
	timeout 30 "$CTL" --sadb "$(dp_sadb_of "$1")" --json show sa > "$XT_DIR/show-$1.json" ||
		xt_fail "ipsecctl show sa on $1"
	dp_json "$XT_DIR/show-$1.json" \
		"'\n'.join('%d %d' % (s['spi'] - 0x9000, s['counters']['packets']) for s in (j['sas'] if isinstance(j, dict) else j) if s['dir'] == '${2:-in}')"
}

# check ROUNDS OWNER1 OWNER2: after ROUNDS rounds, the SAs of segment s were decrypted ROUNDS*PKTS
# times on the node OWNERs, never on the other, and nothing was lost or decrypted twice.
check() {
	counts gw1 > "$XT_DIR/c1"; counts gw2 > "$XT_DIR/c2"
	if "$PYTHON" - "$XT_DIR/segs" "$XT_DIR/c1" "$XT_DIR/c2" "$@" "$PKTS" <<'PY'; 
import sys
seg = dict(map(int, l.split()) for l in open(sys.argv[1]))
c = [dict(map(int, l.split()) for l in open(p) if l.strip()) for p in sys.argv[2:4]]
want = [[int(x) for x in a.split(',')] for a in sys.argv[4:6]]   # per node: its packets per round, by round
pkts = int(sys.argv[6])
bad = 0
for i, s in sorted(seg.items()):
    per = [sum(pkts for r in range(len(want[n])) if want[n][r] == s or want[n][r] == 3) for n in (0, 1)]
    got = [c[0].get(i, 0), c[1].get(i, 0)]
    total_sent = pkts * len(want[0])
    if got != per or sum(got) != total_sent:
        print('peer 198.51.100.%d (segment %d): gw1 %d gw2 %d, want %d %d, sent %d' % (i, s, got[0], got[1], per[0], per[1], total_sent))
        bad = 1
print('sum over both nodes:', sum(c[0].values()) + sum(c[1].values()))
sys.exit(bad)
PY
	then return 0; fi
	for gw in gw1 gw2; do
		seg "$gw" --json >&2 || true
		dp_status "$gw" >&2 || true
	done
	xt_fail "per-SA counters wrong (above)"
}

# 1. set by hand
seg gw1 1 >/dev/null || xt_fail "ipsecctl cluster segments 1 on gw1"
seg gw2 2 >/dev/null || xt_fail "ipsecctl cluster segments 2 on gw2"
send 0
sleep 0.5
# rounds so far, per node, as the segment it owned in each round (3: both)
check 1 2
seg gw2 --json > "$XT_DIR/seg2.json"
[ "$(dp_json "$XT_DIR/seg2.json" "j['segments'][0]['foreign']")" -eq $((n1 * PKTS)) ] ||
	xt_fail "gw2's XDP program did not drop segment 1's $((n1 * PKTS)) frames: $(cat "$XT_DIR/seg2.json")"
xt_log "by hand: gw1 decrypted segment 1, gw2 segment 2, $((NPEER * PKTS)) packets once each"

# Outbound: the inside host sends PKTS datagrams to each peer's site through the cluster's inside
# address, also at a multicast MAC so both nodes see every one; each must be protected once, by the
# owner of the peer's segment, and left to it by the other (cluster_foreign).
xt_exec h ip neigh replace 10.1.0.1 lladdr 01:00:5e:00:00:02 dev br1 nud permanent
xt_exec h ip route replace 172.16.0.0/24 via 10.1.0.1
xt_exec h "$PYTHON" -c "
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for n in range($PKTS):
    for i in range(10, 10 + $NPEER):
        s.sendto(b'y' * 64, ('172.16.0.%d' % i, 9))
    time.sleep(0.01)
" || xt_fail "the inside sender failed"
sleep 0.5
counts gw1 out > "$XT_DIR/o1"; counts gw2 out > "$XT_DIR/o2"
"$PYTHON" - "$XT_DIR/segs" "$XT_DIR/o1" "$XT_DIR/o2" "$PKTS" <<'PY' || xt_fail "outbound per-SA counters wrong (above)"
import sys
seg = dict(map(int, l.split()) for l in open(sys.argv[1]))
c = [dict(map(int, l.split()) for l in open(p) if l.strip()) for p in sys.argv[2:4]]
pkts, bad = int(sys.argv[4]), 0
for i, s in sorted(seg.items()):
    got = [c[0].get(i, 0), c[1].get(i, 0)]
    want = [pkts if s == 1 else 0, pkts if s == 2 else 0]
    if got != want:
        print('to 172.16.0.%d (segment %d): gw1 %d gw2 %d, want %d %d' % (i, s, got[0], got[1], want[0], want[1]))
        bad = 1
sys.exit(bad)
PY
for n in 1 2; do
	seg "gw$n" --json > "$XT_DIR/seg$n.json"
	other=$(( n == 1 ? n2 : n1 ))
	[ "$(dp_json "$XT_DIR/seg$n.json" "j['cluster_foreign']")" -eq $((other * PKTS)) ] ||
		xt_fail "gw$n did not leave $((other * PKTS)) outbound packets to the other node: $(cat "$XT_DIR/seg$n.json")"
done
xt_log "outbound: each of $((NPEER * PKTS)) packets protected once, by its peer's segment's owner"

# 2. from the ha plugin
for n in 1 2; do
	me=10.255.0.$n other=10.255.0.$((3 - n))
	ike_dirs "gw$n" "$(dp_sadb_of "gw$n")"
	ike_sconf "gw$n" "load = random nonce openssl pem pkcs1 pubkey hmac kdf gcm socket-default kernel-netlink vici ha" \
		"xipsecd_ctl = $XT_DIR/gw$n.sock" \
		"plugins { ha { local = $me" "remote = $other" "segment_count = 2" "fifo_interface = no" \
		"heartbeat_delay = 200" "heartbeat_timeout = 1000 } }"
	ike_start "gw$n" --no-load
done
# the plugin splits the segments by node (strcmp of the sync addresses): 2 to gw1, 1 to gw2
xt_wait 10 sh -c "'$CTL' --ctl '$XT_DIR/gw1.sock' cluster segments | grep -q 'owned: 2\$'" ||
	{ ike_logs; seg gw1; xt_fail "gw1 did not take segment 2 from the ha plugin"; }
xt_wait 10 sh -c "'$CTL' --ctl '$XT_DIR/gw2.sock' cluster segments | grep -q 'owned: 1\$'" ||
	{ ike_logs; seg gw2; xt_fail "gw2 did not take segment 1 from the ha plugin"; }
grep -q "using new jhash with updated init values" "$XT_DIR/iked-gw1.log" ||
	xt_log "note: the plugin did not log the jhash variant it chose"
send 1
sleep 0.5
check 1,2 2,1

# gw2 dies: its daemons are killed, gw1's plugin misses the heartbeat and takes every segment
# (both at once: the programs under the timeout(1) processes xt_bg recorded)
victims="$(pgrep -P "$(xt_pid iked-gw2)") $(pgrep -P "$(xt_pid xipsecd-gw2)")"
t0=$(date +%s%N)
# shellcheck disable=SC2086
kill -KILL $victims
xt_wait 5 sh -c "'$CTL' --ctl '$XT_DIR/gw1.sock' cluster segments | grep -q 'owned: 1,2\$'" ||
	{ ike_logs; seg gw1; xt_fail "gw1 did not take segment 1 after gw2 died"; }
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
xt_log "gw1 owns both segments ${ms} ms after gw2 was killed"
[ "$ms" -le 3000 ] || xt_fail "failover took $ms ms (more than 3 s)"
xt_stop iked-gw2
xt_stop xipsecd-gw2
rm -f "$XT_DIR/xipsecd-gw2.pid"   # dead by design: dp_finish checks the clean stop of the others
send 2
sleep 0.5
check 1,2,3 2,1,0
ike_check_logs
dp_finish
exit 0
