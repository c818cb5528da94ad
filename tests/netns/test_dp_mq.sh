#!/usr/bin/env bash
# tests/netns/test_dp_mq.sh: two workers on two-queue veths. Several TCP flows each way through an
# AES-GCM tunnel (IPv4) and a bypassed IPv6 path spread over both queues; every flow's data arrives
# intact, and both workers of both gateways received and sent packets on both interfaces (so both
# queues carried traffic and the outbound SA was used by two workers at once without a repeated
# sequence number, nor an outer IPv4 ID twice - checked in the capture).
#
# Which queue of the next gateway a frame reaches is the environment's choice, so the test makes it
# explicit: ESP carries no ports, and without XPS the bridge leaves a frame on the queue it was
# received on (skb_tx_hash follows a recorded RX queue; a flow hash of the outer addresses alone
# when none is recorded), so where one SA's ESP lands depends on the sending side (measured: 64 % /
# 36 % over the two queues; test_dp_handoff.sh forces it onto one). With XPS on the bridge ports
# (TX queue N <- CPU N), the queue follows the CPU that forwarded the frame, which is the CPU of the
# sending gateway's worker (the test pins worker N to CPU N with --cpus 0,1; AF_XDP copy-mode
# transmit runs in the worker's own system call), and veth delivers TX queue N to RX
# queue N in native XDP mode. So gateway worker N's ESP reaches the peer's worker N. The plaintext
# flows from the hosts still spread by their own flow hashes (18 flows: both queues in practice).
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool socat ping ss tcpdump tshark nproc
. "$top_srcdir/tests/netns/test_dp_common.sh"
[ "$(nproc)" -ge 2 ] || xt_skip "needs 2 CPUs for two pinned workers"

dp_topo 2
dp_tunnel gcm 4 1 0x5001 0x5002
for gw in gw1 gw2; do
	dp_ctl "$gw" policy out bypass ::/0 ::/0
	dp_ctl "$gw" policy fwd bypass ::/0 ::/0
done
dp_start gw1 --workers 2 --cpus 0,1
dp_start gw2 --workers 2 --cpus 0,1
dp_status gw1 | grep -q '"workers":2' || xt_fail "gw1 does not run 2 workers"
for gw in gw1 gw2; do
	grep -q "native XDP attach failed" "$XT_DIR/xipsecd-$gw.log" &&
		xt_skip "XDP not in native mode on $gw (generic mode puts everything on queue 0)"
done
for port in s1 s2; do
	timeout 10 ip netns exec "$(xt_ns sw)" sh -c "echo 1 > /sys/class/net/$port/queues/tx-0/xps_cpus &&
		echo 2 > /sys/class/net/$port/queues/tx-1/xps_cpus" || xt_fail "cannot set XPS on $port"
done

dp_capture_start mq sw s1
dp_ping h1 10.2.0.2
dp_ping h1 fd02::2
pids=()
for i in 1 2 3 4 5 6; do
	# distinct ports per flow (RANDOM would repeat in the subshells)
	DP_PORT=$((7000 + i * 10)) dp_tcp h1 h2 10.2.0.2 1000000 & pids+=($!)
	DP_PORT=$((7001 + i * 10)) dp_tcp h2 h1 10.1.0.2 1000000 & pids+=($!)
	DP_PORT=$((7002 + i * 10)) dp_tcp h1 h2 fd02::2 500000 & pids+=($!)
done
fails=0
for j in "${pids[@]}"; do wait "$j" || fails=$((fails + 1)); done
[ "$fails" -eq 0 ] || xt_fail "$fails parallel transfers failed"
dp_capture_stop mq

for gw in gw1 gw2; do
	dp_status "$gw" > "$XT_DIR/$gw.json"
	for w in 0 1; do
		for k in rx_inside rx_outside tx_inside tx_outside protect unprotect; do
			v=$(dp_json "$XT_DIR/$gw.json" "j['worker'][$w]['$k']")
			[ "$v" -gt 0 ] || xt_fail "$gw worker $w: $k = 0 (traffic not on both queues): $(cat "$XT_DIR/$gw.json")"
		done
	done
	xt_log "$gw: $(dp_json "$XT_DIR/$gw.json" "[(w['rx_inside'], w['rx_outside']) for w in j['worker']]") (rx inside/outside per worker)"
done
dup=$(timeout 120 tshark -r "$XT_DIR/mq.pcap" -Y esp -T fields -e esp.spi -e esp.sequence | sort | uniq -d | head -3)
[ -z "$dup" ] || xt_fail "sequence numbers sent twice: $dup"
# Each worker's object of the outbound SA takes outer IPv4 IDs from its own part of the space
# (RFC 6864 §4.1): no ID twice between one pair of gateways (fewer packets than either part holds).
n=$(timeout 120 tshark -r "$XT_DIR/mq.pcap" -Y 'esp && ip' -T fields -e ip.src -e ip.dst -e ip.id | wc -l)
dup=$(timeout 120 tshark -r "$XT_DIR/mq.pcap" -Y 'esp && ip' -T fields -e ip.src -e ip.dst -e ip.id |
	sort | uniq -d | head -3)
[ -z "$dup" ] || xt_fail "outer IPv4 IDs sent twice (of $n ESP packets): $dup"
xt_log "$n ESP packets, every outer IPv4 ID once per direction"
dp_finish
exit 0
