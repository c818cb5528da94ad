# tests/netns/test_dp_common.sh: the topology and helpers shared by xipsecd's netns tests (sourced
# after tests/netns/lib.sh; not a test itself):
#
#   h1 (10.1.0.2, fd01::2) -- gw1 [in1 | out1] -- sw -- [out2 | in2] gw2 -- h2 (10.2.0.2, fd02::2)
#                          192.0.2.1, fd00::1      bridge   192.0.2.2, fd00::2
# sw is a plain bridge between the gateways: the place to capture what travels between them
# (AF_XDP transmits bypass the packet taps of the gateways' own interfaces, and XDP takes received
# frames before them).
# dp_topo [QUEUES]     build it (veths with QUEUES queues; checksum offload off on senders)
# dp_start GW [ARGS]   start xipsecd on gw1/gw2 (in a background job with a timeout), wait until up
# dp_stats_of GW       the counters view its xipsecd writes (what the exporter and xipsec-snmpd read)
# dp_ipv4_only         IPv6 off in every namespace: the kernels' own IPv6 chatter (MLD, router
#                      solicitations) would reach the dataplanes without a policy and blur exact counts
# dp_status GW         its control socket's JSON
# dp_ctl GW ARGS...    dp_testctl on the gateway's SADB
# dp_sadb_default      after dp_topo: the gateways' SADBs in the programs' default directory
# dp_bypass_all        bypass policies both ways on both gateways (v4 and v6)

DP_BUILD=${top_builddir:?}
XIPSECD="$DP_BUILD/dataplane/xipsecd/xipsecd"
DP_TESTCTL="$DP_BUILD/tests/tools/dp_testctl"
[ -x "$XIPSECD" ] || xt_skip "xipsecd not built"
[ -x "$DP_TESTCTL" ] || xt_skip "dp_testctl not built"
XIPSECD_ASAN=${ASAN_OPTIONS:-}
export ASAN_OPTIONS="${XIPSECD_ASAN:+$XIPSECD_ASAN:}detect_leaks=1:abort_on_error=0"

# xt_sadb registers the file for cleanup: call it in this shell, not in a $(...) subshell
dp_sadb() { xt_sadb "$1" > "$XT_DIR/sadb-path"; eval "DP_SADB_$1=\$(cat \"\$XT_DIR/sadb-path\")"; }

dp_topo() {
	local q=${1:-1} ns
	for ns in h1 gw1 sw gw2 h2; do
		xt_ns_add "$ns"
		# no duplicate address detection: link-local addresses would stay tentative ~1 s
		xt_exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	done
	xt_veth h1 eth0 gw1 in1 "$q"
	xt_veth gw1 out1 sw s1 "$q"
	xt_veth sw s2 gw2 out2 "$q"
	xt_exec sw ip link add br0 type bridge
	xt_exec sw ip link set s1 master br0
	xt_exec sw ip link set s2 master br0
	xt_exec sw ip link set br0 up
	# a host with br_netfilter loaded would run every bridged frame through its firewall hooks
	xt_exec sw sysctl -qw net.bridge.bridge-nf-call-iptables=0 net.bridge.bridge-nf-call-ip6tables=0 \
		net.bridge.bridge-nf-call-arptables=0 2>/dev/null || true
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
	# doc/platform.md: partial checksums from a sender's offload survive AF_XDP forwarding.
	xt_exec h1 ethtool -K eth0 tx off >/dev/null
	xt_exec h2 ethtool -K eth0 tx off >/dev/null
	dp_sadb gw1
	dp_sadb gw2
}

dp_sadb_of() { eval "printf '%s' \"\$DP_SADB_$1\""; }

# dp_sadb_default: the gateways' SADBs in /run/xipsec, the directory every program's default SADB
# lives in (made 0700 by the first of them), for the demos, which show the product as installed; two
# gateways on one machine need one name each there. Removed at cleanup like xt_sadb's.
dp_sadb_default() {
	local gw p
	for gw in gw1 gw2; do
		p=/run/xipsec/xipsec-$XT_ID-$gw.sadb
		XT_FILES+=("$p")
		eval "DP_SADB_$gw=\$p"
	done
}

dp_ctl() {
	local gw=$1; shift
	timeout 30 "$DP_TESTCTL" "$(dp_sadb_of "$gw")" "$@" >/dev/null || xt_fail "dp_testctl $gw $*"
}

dp_stats_of() { printf '%s' "$XT_DIR/stats-$1/view"; }

dp_ipv4_only() {
	local ns
	for ns in h1 gw1 sw gw2 h2; do
		xt_exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	done
}

dp_start() {
	local gw=$1 n; n=${gw#gw}; shift
	xt_bg "$gw" "xipsecd-$gw" "$XIPSECD" --inside "in$n" --outside "out$n" \
		--sadb "$(dp_sadb_of "$gw")" --ctl "$XT_DIR/$gw.sock" --stats "$(dp_stats_of "$gw")" "$@"
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
	local src=$1 dns=$2 daddr=$3 bytes=$4 port=${DP_PORT:-$((5000 + RANDOM % 1000))} tag
	tag=$port-$BASHPID
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

# dp_finish: stop every xipsecd with SIGTERM and check each shut down cleanly and sanitizer-clean.
dp_finish() {
	local gw log
	for gw in gw1 gw2 gw3; do
		[ -n "$(xt_pid "xipsecd-$gw")" ] || continue
		xt_stop "xipsecd-$gw" TERM
		log="$XT_DIR/xipsecd-$gw.log"
		grep -q "notice: stopped" "$log" || { cat "$log" >&2; xt_fail "xipsecd on $gw did not stop cleanly"; }
		if grep -q "AddressSanitizer\|runtime error\|LeakSanitizer" "$log"; then
			cat "$log" >&2; xt_fail "sanitizer report from xipsecd on $gw"
		fi
	done
}

# Keys derived from the SPI, so each SA has its own and the test can rebuild them for tshark.
dp_key() { local spi=$1 len=$2 k=""; while [ ${#k} -lt $((len * 2)) ]; do k="$k$(printf '%08x' $((spi * 2654435761 % 4294967296)))a5"; done; printf '%s' "${k:0:$((len * 2))}"; }

# dp_sa_keys XFORM SPI: the dp_testctl arguments of transform XFORM (gcm, gcm256, cbc, ah) for SPI
dp_sa_keys() {
	case $1 in
	gcm) printf 'esp enc aes-gcm-16 %s' "$(dp_key "$2" 20)";;
	gcm256) printf 'esp enc aes-gcm-16 %s' "$(dp_key "$2" 36)";;
	cbc) printf 'esp enc aes-cbc %s auth hmac-sha256-128 %s' "$(dp_key "$2" 16)" "$(dp_key $(($2 + 1)) 32)";;
	ah) printf 'ah auth hmac-sha256-128 %s' "$(dp_key "$2" 32)";;
	*) xt_fail "unknown transform $1";;
	esac
}

# dp_tunnel XFORM 4|6 REQID SPI1 SPI2 [natt]: tunnel-mode SAs and policies between the two sites:
# gw1 -> gw2 under SPI1, gw2 -> gw1 under SPI2.
dp_tunnel() {
	local xf=$1 fam=$2 reqid=$3 spi1=$4 spi2=$5 natt=${6:-} n1 n2 o1 o2 p k1 k2 encap=""
	if [ "$fam" = 4 ]; then n1=10.1.0.0/24 n2=10.2.0.0/24 o1=192.0.2.1 o2=192.0.2.2
	else n1=fd01::/64 n2=fd02::/64 o1=fd00::1 o2=fd00::2; fi
	[ -n "$natt" ] && encap="encap 4500 4500"
	k1=$(dp_sa_keys "$xf" "$spi1"); k2=$(dp_sa_keys "$xf" "$spi2")
	p=${k1%% *}   # esp | ah
	# shellcheck disable=SC2086
	{
	dp_ctl gw1 policy out protect "$n1" "$n2" reqid "$reqid" "$p" tunnel "$o1" "$o2"
	dp_ctl gw1 policy fwd protect "$n2" "$n1" reqid "$reqid" "$p" tunnel "$o2" "$o1"
	dp_ctl gw2 policy out protect "$n2" "$n1" reqid "$reqid" "$p" tunnel "$o2" "$o1"
	dp_ctl gw2 policy fwd protect "$n1" "$n2" reqid "$reqid" "$p" tunnel "$o1" "$o2"
	dp_ctl gw1 sa in "$spi2" "$p" tunnel "$o2" "$o1" reqid "$reqid" ${k2#* } $encap
	dp_ctl gw2 sa in "$spi1" "$p" tunnel "$o1" "$o2" reqid "$reqid" ${k1#* } $encap
	dp_ctl gw1 sa out "$spi1" "$p" tunnel "$o1" "$o2" reqid "$reqid" ${k1#* } $encap
	dp_ctl gw2 sa out "$spi2" "$p" tunnel "$o2" "$o1" reqid "$reqid" ${k2#* } $encap
	}
}

# dp_capture_start NAME GW IF / dp_capture_stop NAME: a pcap of an interface in $XT_DIR/NAME.pcap.
# --immediate-mode: without it libpcap hands tcpdump whole ring blocks (when full or after its
# timeout), and a capture stopped within that time writes only what it was handed ("247 received
# by filter", 4 captured).
dp_capture_start() {
	xt_bg "$2" "cap-$1" tcpdump -n -U --immediate-mode -s 0 -i "$3" -w "$XT_DIR/$1.pcap"
	xt_wait 10 test -s "$XT_DIR/cap-$1.log" || true
	sleep 0.5
}
dp_capture_stop() { sleep 0.3; xt_stop "cap-$1" INT; }

# dp_only_ipsec PCAP: every IP packet in the capture is ESP, AH or ESP-in-UDP (or ARP, ND, IGMP/MLD and
# other link-local multicast of the kernels); prints the number of ESP/AH packets. tshark reads the
# outermost headers.
dp_only_ipsec() {
	timeout 120 tshark -r "$1" -E occurrence=f -T fields -e frame.number -e ip.proto -e ipv6.nxt -e ipv6.dst \
		-e udp.srcport -e udp.dstport -e icmpv6.type -e arp.opcode -e ip.dst 2>/dev/null |
	awk -F'\t' '
	$8 != "" { next }                                    # ARP
	$2 == 50 || $2 == 51 || $3 == 50 || $3 == 51 { n++; next }
	($2 == 17 || $3 == 17) && ($5 == 4500 || $6 == 4500) { n++; next }
	$3 == 58 && $7 >= 133 && $7 <= 137 { next }          # neighbour discovery
	$4 ~ /^ff02:/ { next }                               # MLD and other link-local multicast
	$9 ~ /^224\.0\.0\./ { next }                          # IGMP and other IPv4 link-local multicast
	$2 == "" && $3 == "" { next }                        # not IP
	{ print "plaintext between the gateways: frame " $1 " proto " $2 $3 > "/dev/stderr"; bad = 1 }
	END { if (bad) exit 1; print n + 0 }'
}

# dp_inner PCAP TSHARK-ARGS: one line per frame, innermost headers after decryption:
# esp.spi esp.sequence ah.spi ah.sequence icmp.type ip.src ip.dst ipv6.src tcp.len
dp_inner() {
	local pcap=$1; shift
	eval "timeout 120 tshark -r '$pcap' -d udp.port==4500,udpencap $* -E occurrence=l -T fields -e esp.spi \
		-e esp.sequence -e ah.spi -e ah.sequence -e icmp.type -e ip.src -e ip.dst -e ipv6.src \
		-e tcp.len" 2>/dev/null
}

# dp_tshark_rows GW: the tshark esp_sa rows of GW's SAs: `ipsecctl export wireshark --tshark`
dp_tshark_args() {
	local ctl="$DP_BUILD/ipsecctl/ipsecctl" gw=$1
	[ -x "$ctl" ] || xt_skip "ipsecctl not built (needed to export keys for tshark)"
	timeout 30 "$ctl" --sadb "$(dp_sadb_of "$gw")" export wireshark --tshark
}

# dp_bench_tools NAME: the benchmarks' programs (bench/fwd.sh, handoff.sh, mip6-bench): XIPSECD becomes
# bench/fwd-xipsecd (xipsecd without sanitizers) when built, GEN and SINK bench/fwd-gen and its XDP
# counter; skips when those are missing, warns when XIPSECD has AddressSanitizer in it.
dp_bench_tools() {
	[ -x "$top_builddir/bench/fwd-xipsecd" ] && XIPSECD="$top_builddir/bench/fwd-xipsecd"
	GEN="$top_builddir/bench/fwd-gen"
	SINK="$top_builddir/bench/fwd_sink.bpf.o"
	[ -x "$GEN" ] && [ -f "$SINK" ] || xt_skip "bench/fwd-gen or bench/fwd_sink.bpf.o not built"
	if nm "$XIPSECD" 2>/dev/null | grep -q __asan_init; then
		echo "$1: WARNING: $XIPSECD is built with AddressSanitizer: figures are not representative" >&2
	fi
}
