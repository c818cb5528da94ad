# tests/netns/test_dp_common.sh: the topology and helpers shared by xipsecd's netns tests (sourced
# after tests/netns/lib.sh; not a test itself):
#
#   h1 (10.1.0.2, fd01::2) -- gw1 [in1 | out1] -- (192.0.2.1/.2, fd00::1/::2) -- [out2 | in2] gw2 -- h2
#                                                                                (10.2.0.2, fd02::2)
# dp_topo [QUEUES]     build it (veths with QUEUES queues; checksum offload off on senders)
# dp_start GW [ARGS]   start xipsecd on gw1/gw2 (in a background job with a timeout), wait until up
# dp_status GW         its control socket's JSON
# dp_ctl GW ARGS...    dp_testctl on the gateway's SADB
# dp_bypass_all        bypass policies both ways on both gateways (v4 and v6)

DP_BUILD=${top_builddir:?}
XIPSECD="$DP_BUILD/dataplane/xipsecd"
DP_TESTCTL="$DP_BUILD/dataplane/dp_testctl"
[ -x "$XIPSECD" ] || xt_skip "xipsecd not built"
[ -x "$DP_TESTCTL" ] || xt_skip "dp_testctl not built"
XIPSECD_ASAN=${ASAN_OPTIONS:-}
export ASAN_OPTIONS="${XIPSECD_ASAN:+$XIPSECD_ASAN:}detect_leaks=1:abort_on_error=0"

dp_sadb() { xt_sadb "$1"; }

dp_topo() {
	local q=${1:-1} ns
	for ns in h1 gw1 gw2 h2; do
		xt_ns_add "$ns"
		# no duplicate address detection: link-local addresses would stay tentative ~1 s
		xt_exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	done
	xt_veth h1 eth0 gw1 in1 "$q"
	xt_veth gw1 out1 gw2 out2 "$q"
	xt_veth gw2 in2 h2 eth0 "$q"
	xt_exec h1 ip addr add 10.1.0.2/24 dev eth0
	xt_exec h1 ip -6 addr add fd01::2/64 dev eth0 nodad
	xt_exec h1 ip route add default via 10.1.0.1
	xt_exec h1 ip -6 route add default via fd01::1
	xt_exec gw1 ip addr add 10.1.0.1/24 dev in1
	xt_exec gw1 ip -6 addr add fd01::1/64 dev in1 nodad
	xt_exec gw1 ip addr add 192.0.2.1/24 dev out1
	xt_exec gw1 ip -6 addr add fd00::1/64 dev out1 nodad
	xt_exec gw1 ip route add 10.2.0.0/24 via 192.0.2.2
	xt_exec gw1 ip -6 route add fd02::/64 via fd00::2
	xt_exec gw2 ip addr add 10.2.0.1/24 dev in2
	xt_exec gw2 ip -6 addr add fd02::1/64 dev in2 nodad
	xt_exec gw2 ip addr add 192.0.2.2/24 dev out2
	xt_exec gw2 ip -6 addr add fd00::2/64 dev out2 nodad
	xt_exec gw2 ip route add 10.1.0.0/24 via 192.0.2.1
	xt_exec gw2 ip -6 route add fd01::/64 via fd00::1
	xt_exec h2 ip addr add 10.2.0.2/24 dev eth0
	xt_exec h2 ip -6 addr add fd02::2/64 dev eth0 nodad
	xt_exec h2 ip route add default via 10.2.0.1
	xt_exec h2 ip -6 route add default via fd02::1
	# The gateways' kernels never forward: only xipsecd does (a plaintext leak would show).
	for ns in gw1 gw2; do
		xt_exec "$ns" sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0
	done
	# platform.md: partial checksums from a sender's offload survive AF_XDP forwarding.
	xt_exec h1 ethtool -K eth0 tx off >/dev/null
	xt_exec h2 ethtool -K eth0 tx off >/dev/null
	DP_SADB_gw1=$(dp_sadb gw1)
	DP_SADB_gw2=$(dp_sadb gw2)
}

dp_sadb_of() { eval "printf '%s' \"\$DP_SADB_$1\""; }

dp_ctl() {
	local gw=$1; shift
	"$DP_TESTCTL" "$(dp_sadb_of "$gw")" "$@" >/dev/null || xt_fail "dp_testctl $gw $*"
}

dp_start() {
	local gw=$1 n; n=${gw#gw}; shift
	xt_bg "$gw" "xipsecd-$gw" "$XIPSECD" --inside "in$n" --outside "out$n" \
		--sadb "$(dp_sadb_of "$gw")" --ctl "$XT_DIR/$gw.sock" "$@"
	xt_wait 20 "$XIPSECD" --status --ctl "$XT_DIR/$gw.sock" ||
		{ cat "$XT_DIR/xipsecd-$gw.log" >&2; xt_fail "xipsecd on $gw did not start"; }
}

dp_status() { "$XIPSECD" --status --ctl "$XT_DIR/$1.sock"; }

dp_bypass_all() {
	local gw
	for gw in gw1 gw2; do
		dp_ctl "$gw" policy out bypass 0.0.0.0/0 0.0.0.0/0
		dp_ctl "$gw" policy fwd bypass 0.0.0.0/0 0.0.0.0/0
		dp_ctl "$gw" policy out bypass ::/0 ::/0
		dp_ctl "$gw" policy fwd bypass ::/0 ::/0
	done
}

# dp_json FILE EXPR: evaluate a python expression over the JSON in FILE (bound to j)
dp_json() { "$PYTHON" -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

# dp_tcp SRC DST_NS DSTADDR BYTES: send BYTES random bytes over TCP from SRC to DSTADDR (in DST_NS)
# and compare what arrived.
dp_tcp() {
	local src=$1 dns=$2 daddr=$3 bytes=$4 port=$((5000 + RANDOM % 1000)) tag=$RANDOM
	head -c "$bytes" /dev/urandom > "$XT_DIR/tcp-$tag.in"
	xt_bg "$dns" "tcp-sink-$tag" socat -u "TCP6-LISTEN:$port,reuseaddr,ipv6only=0" \
		"OPEN:$XT_DIR/tcp-$tag.out,creat,trunc"
	xt_wait 10 xt_exec "$dns" sh -c "ss -ltn | grep -q ':$port '" || xt_fail "TCP sink did not start"
	case $daddr in *:*) daddr="[$daddr]";; esac
	xt_exec "$src" socat -u "OPEN:$XT_DIR/tcp-$tag.in" "TCP:$daddr:$port,connect-timeout=10" ||
		xt_fail "TCP transfer to $daddr failed"
	xt_wait 20 cmp -s "$XT_DIR/tcp-$tag.in" "$XT_DIR/tcp-$tag.out" ||
		xt_fail "TCP data to $daddr differs ($(stat -c %s "$XT_DIR/tcp-$tag.out") of $bytes bytes)"
	xt_stop "tcp-sink-$tag"
	rm -f "$XT_DIR/tcp-$tag.in" "$XT_DIR/tcp-$tag.out"
}

# dp_udp SRC DST_NS DSTADDR N: N numbered datagrams; all must arrive intact (lossless veths, slow
# enough sender).
dp_udp() {
	local src=$1 dns=$2 daddr=$3 n=$4 port=$((6000 + RANDOM % 1000)) fam=AF_INET
	case $daddr in *:*) fam=AF_INET6;; esac
	xt_bg "$dns" "udp-sink-$port" "$PYTHON" -c "
import socket, sys
s = socket.socket(socket.$fam, socket.SOCK_DGRAM)
s.bind(('::' if socket.$fam == socket.AF_INET6 else '0.0.0.0', $port))
s.settimeout(15)
got = set()
while len(got) < $n:
    d, _ = s.recvfrom(2000)
    i = int(d[:8])
    assert d == (b'%08d' % i) * 100, 'corrupt datagram'
    got.add(i)
print('all', len(got))
"
	sleep 0.3
	xt_exec "$src" "$PYTHON" -c "
import socket, time
s = socket.socket(socket.$fam, socket.SOCK_DGRAM)
for i in range($n):
    s.sendto((b'%08d' % i) * 100, ('$daddr', $port))
    time.sleep(0.002)
" || xt_fail "UDP send failed"
	xt_wait 20 grep -q "^all $n" "$XT_DIR/udp-sink-$port.log" ||
		{ cat "$XT_DIR/udp-sink-$port.log" >&2; xt_fail "UDP to $daddr: not all $n datagrams arrived"; }
	xt_stop "udp-sink-$port"
}

# dp_ping SRC DST [ARGS]: a few pings that must all come back
dp_ping() {
	local src=$1 dst=$2; shift 2
	xt_exec "$src" ping -q -c 5 -i 0.1 -W 2 "$@" "$dst" >/dev/null ||
		xt_fail "ping $dst from $src failed"
}
