#!/usr/bin/env bash
# tests/netns/test_dp_readd.sh: SAs deleted and added again 1,000 times under continuous traffic
# never repeat a nonce. gw1 (two workers, so two engine objects share each outbound SA) loads a
# manual AES-GCM tunnel with `ipsecctl -F -f` a thousand times, alternating between two files that
# use the same key under two SPIs (0x1000 and 0x1002); each load deletes the SAs (their slots wait
# for xipsecd's release before reuse) and adds new instances, whose numbers are leased above the
# key's mark. A UDP stream from h1 and pings from h2 run all the while. The capture between the
# gateways must show every (SPI, sequence) once, and, since both SPIs carry one key, every
# sequence number (the GCM nonce with the salt) once across both SPIs. After the loads the inbound
# SA the SADB holds must accept the peer's next packets: its replay window starts at its
# predecessor's exact top, which a reload may not push up (then 200 more loads while xipsecd reads
# the SADB slowly, through a test hook, so that a reload lands in the middle of its reads).
. "$top_srcdir/tests/netns/lib.sh"
xt_require tcpdump tshark ping nproc
. "$top_srcdir/tests/netns/test_dp_common.sh"
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
ROUNDS=${XIPSEC_READD_ROUNDS:-1000}

export XIPSEC_STATE_DIR="$XT_DISK_DIR/state"
K1=0x0102030405060708090a0b0c0d0e0f1011121314
K2=0x2122232425262728292a2b2c2d2e2f3031323334
dp_topo 2
for spi in 0x1000 0x1002; do
	cat > "$XT_DIR/gw1-$spi.conf" <<CONF
esp tunnel from 10.1.0.0/24 to 10.2.0.0/24 local 192.0.2.1 peer 192.0.2.2 \\
    spi $spi:0x1001 enc aes128gcm16 key $K1:$K2
CONF
done
cat > "$XT_DIR/gw2.conf" <<CONF
esp tunnel from 10.2.0.0/24 to 10.1.0.0/24 local 192.0.2.2 peer 192.0.2.1 \\
    spi 0x1001:0x1000 enc aes128gcm16 key $K2:$K1
CONF
timeout 30 "$CTL" --new-keys --sadb "$(dp_sadb_of gw1)" -f "$XT_DIR/gw1-0x1000.conf" || xt_fail "load gw1"
timeout 30 "$CTL" --new-keys --sadb "$(dp_sadb_of gw2)" -f "$XT_DIR/gw2.conf" || xt_fail "load gw2"
# gw2 also accepts the second SPI (a test tool: ipsecctl refuses two SAs with one key)
dp_ctl gw2 sa in 0x1002 esp tunnel 192.0.2.1 192.0.2.2 reqid 0 enc aes-gcm-16 "${K1#0x}"
dp_start gw1 --workers 2
dp_start gw2 --workers 2

dp_capture_start readd sw s1
# The stream: numbered datagrams for as long as the loads go on (bounded by the background timeout).
xt_bg h1 stream "$PYTHON" -c "
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
i = 0
end = time.time() + 240
while time.time() < end:
    for k in range(8):
        s.sendto(b'%08d' % i, ('10.2.0.2', 9))
        i += 1
    time.sleep(0.001)
"
xt_bg h2 pings ping -i 0.01 -w 240 10.1.0.2
# in_used: a ping from h1 answered, and the inbound SA the SADB holds now has accepted packets (the
# reply could also pass an older SA that xipsecd still holds for a moment; a window started above
# the peer's counter would keep the peer out for 4,096 packets)
in_used() {
	xt_exec h1 ping -c 1 -W 1 10.2.0.2 >/dev/null || return 1
	timeout 10 "$CTL" --sadb "$(dp_sadb_of gw1)" --json show sa > "$XT_DIR/sa-now.json" || return 1
	[ "$(dp_json "$XT_DIR/sa-now.json" \
		"sum(s['counters']['packets'] for s in j['sas'] if s['dir'] == 'in')")" -gt 0 ]
}
# loads N: N flush + load rounds on gw1, then its traffic back within 10 s (the last load's SAs are
# in use once xipsecd has read them and leased their numbers: within seconds, however loaded the
# machine)
loads() {
	local i spi t0 t1 t2
	t0=$(date +%s)
	for i in $(seq "$1"); do
		spi=0x1000; [ $((i % 2)) -eq 1 ] && spi=0x1002
		timeout 30 "$CTL" --sadb "$(dp_sadb_of gw1)" -F -f "$XT_DIR/gw1-$spi.conf" 2>"$XT_DIR/load.err" ||
			{ cat "$XT_DIR/load.err" >&2; xt_fail "round $i: ipsecctl -F -f gw1-$spi.conf"; }
	done
	t1=$(date +%s)
	t2=$(date +%s%N)
	xt_wait 10 in_used || {
		tail -20 "$XT_DIR/xipsecd-gw1.log" >&2; timeout 10 "$CTL" --sadb "$(dp_sadb_of gw1)" show >&2
		xt_fail "no traffic after $1 loads${2:-}"; }
	xt_log "$1 flush + load rounds${2:-} in $((t1 - t0)) s; traffic after the last within $(( ($(date +%s%N) - t2) / 1000000 )) ms"
}
loads "$ROUNDS"
# A sync that reads the SADB while a reload changes it can see an SA a flush just deleted beside its
# successor (same SPI, same key): xipsecd must drop the older, or lease it, and start the
# successor's window at the older's ceiling. The hook makes every sync read every slot and pause
# after each inbound SA it reads, so that reloads land inside most reads.
xt_stop xipsecd-gw1
XIPSEC_TEST_SYNC_PAUSE_MS=10 dp_start gw1 --workers 2
loads 200 " with reads paused in the middle"
xt_stop stream
xt_stop pings
dp_capture_stop readd

timeout 300 tshark -r "$XT_DIR/readd.pcap" -Y 'esp && !icmp && ip.src == 192.0.2.1' -T fields -e esp.spi \
	-e esp.sequence > "$XT_DIR/out.txt"
timeout 300 tshark -r "$XT_DIR/readd.pcap" -Y 'esp && !icmp && ip.src == 192.0.2.2' -T fields -e esp.spi \
	-e esp.sequence > "$XT_DIR/back.txt"
for spi in 0x00001000 0x00001002; do
	n=$(grep -c "^$spi" "$XT_DIR/out.txt")
	[ "$n" -ge 1000 ] || xt_fail "SPI $spi: only $n ESP packets from gw1"
	xt_log "SPI $spi: $n packets"
done
dup=$(sort "$XT_DIR/out.txt" "$XT_DIR/back.txt" | uniq -d | head -3)
[ -z "$dup" ] || xt_fail "(SPI, sequence) sent twice: $dup"
dup=$(cut -f2 "$XT_DIR/out.txt" | sort | uniq -d | head -3)
[ -z "$dup" ] || xt_fail "key K1 sent sequence (nonce) twice across its SPIs: $dup"
xt_log "$(wc -l < "$XT_DIR/out.txt") ESP packets under K1, every nonce once; $(wc -l < "$XT_DIR/back.txt") back under K2"
timeout 30 "$CTL" --sadb "$(dp_sadb_of gw1)" --json show sa > "$XT_DIR/sa1.json"
dp_finish
exit 0
