#!/usr/bin/env bash
# tests/netns/test_dp_frag_mq.sh: fragments of one ESP datagram arriving on different RX queues, so
# at different workers of gw1 (two queues, two workers): the reassembly table is shared, and the
# datagram is reassembled, decrypted and delivered whole. The queues are chosen by the sender: the
# bridge's port towards gw1 maps TX queue N to CPU N (XPS), veth delivers TX queue N to RX queue N
# in native XDP mode, and scapy sends fragment 0 from CPU 0 and the others from CPU 1.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool taskset nproc
. "$top_srcdir/tests/netns/test_dp_common.sh"
"$PYTHON" -c 'import scapy.layers.ipsec' 2>/dev/null || xt_skip "scapy missing for $PYTHON"
[ "$(nproc)" -ge 2 ] || xt_skip "needs 2 CPUs to put fragments on two queues"

dp_topo 2
dp_tunnel gcm 4 1 0x6001 0x6002
dp_tunnel gcm 6 2 0x6003 0x6004
dp_start gw1 --workers 2
dp_status gw1 | grep -q '"workers":2' || xt_fail "gw1 does not run 2 workers"
grep -q "out1: native XDP attach failed" "$XT_DIR/xipsecd-gw1.log" &&
	xt_skip "XDP not in native mode on out1 (generic mode puts everything on queue 0)"
timeout 10 ip netns exec "$(xt_ns sw)" sh -c \
	'echo 1 > /sys/class/net/s1/queues/tx-0/xps_cpus && echo 2 > /sys/class/net/s1/queues/tx-1/xps_cpus' ||
	xt_fail "cannot set XPS on s1"

xt_bg h1 rx "$PYTHON" "$top_srcdir/tests/netns/test_dp_frag_recv.py"
xt_wait 10 grep -q ready "$XT_DIR/rx.log" || xt_fail "receiver did not start"
mac=$(xt_exec gw1 ip -o link show out1 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
rxq() { dp_status gw1 > "$XT_DIR/st.json"; dp_json "$XT_DIR/st.json" "' '.join(str(w['rx_outside']) for w in j['worker'])"; }
# send TAG FAMILY CPU FRAGMENTS: the same datagram built in each call, these fragments sent (IPv6:
# 1200 bytes, so that the inner packet fits in1's MTU of 1500 and needs no "packet too big")
send() {
	local osrc=192.0.2.2 odst=192.0.2.1 spi=0x6002 isrc=10.2.0.2 idst=10.1.0.2 size=2500 fs=1000
	[ "$2" = 6 ] && { osrc=fd00::2 odst=fd00::1 spi=0x6004 isrc=fd02::2 idst=fd01::2 size=1200 fs=500; }
	xt_exec sw taskset -c "$3" "$PYTHON" "$top_srcdir/tests/netns/test_dp_frag_send.py" br0 "$mac" \
		"$2" "$osrc" "$odst" "$spi" "$(dp_key "$spi" 20)" 7 "$isrc" "$idst" 7000 "$1" "$size" "$fs" \
		inorder "only=$4" >> "$XT_DIR/send-$1.log" 2>&1 ||
		{ cat "$XT_DIR/send-$1.log" >&2; xt_fail "scapy sender $1 failed"; }
}
for fam in 4 6; do
	read -r a0 a1 <<< "$(rxq)"
	send "mq$fam" "$fam" 0 0
	send "mq$fam" "$fam" 1 1,2
	xt_wait 10 grep -q "^got mq$fam [0-9]* ok" "$XT_DIR/rx.log" ||
		{ rxq; cat "$XT_DIR/send-mq$fam.log" "$XT_DIR/rx.log" "$XT_DIR/st.json" >&2; xt_fail "IPv$fam: datagram split over two queues not delivered"; }
	read -r b0 b1 <<< "$(rxq)"
	# worker 0 took fragment 0, worker 1 the other two (nothing else arrives at the outside)
	[ "$((b0 - a0))" = 1 ] && [ "$((b1 - a1))" = 2 ] ||
		xt_fail "IPv$fam: fragments per worker $((b0 - a0)) / $((b1 - a1)), want 1 / 2: $(cat "$XT_DIR/st.json")"
	xt_log "IPv$fam: fragment 0 on worker 0, fragments 1-2 on worker 1, delivered whole"
done
n=$(dp_json "$XT_DIR/st.json" "sum(w['reasm_packets'] for w in j['worker'])")
[ "$n" = 2 ] || xt_fail "reassembled $n datagrams, want 2"
xt_stop rx
dp_finish
exit 0
