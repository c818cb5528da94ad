#!/usr/bin/env bash
# tests/netns/test_dp_fault.sh: faults under traffic, through an AES-GCM tunnel (h1 - gw1 - gw2 - h2):
#  1. kill -9 of gw1's xipsecd under a ping flood, then a restart: traffic resumes, and the capture
#     between the gateways never shows one ESP sequence number twice under one SPI (rule 1: the
#     restarted instance resumes above the reservation recorded in the SADB);
#  2. replacing the SA pair (new SAs installed - inbound first -, then the old ones deleted) under a
#     continuous ping loses no packet;
#  3. a flood of bad-ICV ESP packets injected on the link between the gateways (from the bridge): every
#     bad packet is dropped as an ICV failure, and the throughput of a TCP transfer with the flood as a
#     fraction of without is printed, five times, for a flood as fast as the generator goes and for
#     one paced to 200k packets/s (several times the transfer's own packet rate), with the medians,
#     and gw2's CPU time per forged packet (figures, not pass criteria: they depend on the machine). The flood comes from bench/fwd-gen
#     (AF_XDP) when built, else from a slower scapy loop.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool socat ping ss tcpdump tshark
. "$top_srcdir/tests/netns/test_dp_common.sh"

dp_topo 1
dp_tunnel gcm 4 1 0x1001 0x1002
dp_start gw1
dp_start gw2
dp_ping h1 10.2.0.2

# ---- 1. kill -9 and restart under traffic
dp_capture_start kill sw s1
xt_bg h1 flood1 ping -q -i 0.005 -c 1000 -W 2 10.2.0.2
sleep 1.5
xt_stop xipsecd-gw1 KILL
xt_exec gw1 ip link show in1 | grep -q xdp || xt_fail "the killed instance's XDP program should still be attached"
dp_start gw1
xt_wait 20 sh -c "! kill -0 $(xt_pid flood1) 2>/dev/null" || xt_fail "flood ping did not finish"
dp_ping h1 10.2.0.2
dp_capture_stop kill
timeout 120 tshark -r "$XT_DIR/kill.pcap" -Y 'esp.spi==0x1001' -T fields -e esp.sequence > "$XT_DIR/seq1"
n=$(wc -l < "$XT_DIR/seq1")
[ "$n" -gt 300 ] || xt_fail "only $n ESP packets of gw1 captured"
dup=$(sort -n "$XT_DIR/seq1" | uniq -d | head -3)
[ -z "$dup" ] || xt_fail "sequence numbers sent twice across kill -9/restart: $dup"
# the restart shows as a jump over the unused rest of the reserved block
jump=$("$PYTHON" -c "
import sys
s = [int(x) for x in open(sys.argv[1])]
print(max(b - a for a, b in zip(s, s[1:])))" "$XT_DIR/seq1")
xt_log "kill -9/restart: $n ESP packets from gw1, no sequence number twice, largest jump $jump"

# ---- 2. SA pair replacement under traffic, zero loss
xt_bg h1 flood2 ping -i 0.01 -c 500 -W 2 10.2.0.2
sleep 1.5
k1=$(dp_sa_keys gcm 0x1101); k2=$(dp_sa_keys gcm 0x1102)
# shellcheck disable=SC2086
{
dp_ctl gw1 sa in 0x1102 esp tunnel 192.0.2.2 192.0.2.1 reqid 1 ${k2#* }
dp_ctl gw2 sa in 0x1101 esp tunnel 192.0.2.1 192.0.2.2 reqid 1 ${k1#* }
sleep 0.2
dp_ctl gw1 sa out 0x1101 esp tunnel 192.0.2.1 192.0.2.2 reqid 1 ${k1#* }
dp_ctl gw2 sa out 0x1102 esp tunnel 192.0.2.2 192.0.2.1 reqid 1 ${k2#* }
}
sleep 0.5
dp_ctl gw1 del 0x1001 esp 192.0.2.2
dp_ctl gw2 del 0x1002 esp 192.0.2.1
sleep 0.5
dp_ctl gw1 del 0x1002 esp 192.0.2.1
dp_ctl gw2 del 0x1001 esp 192.0.2.2
xt_wait 30 grep -q "packets transmitted" "$XT_DIR/flood2.log" || xt_fail "replacement ping did not finish"
grep -q " 0% packet loss" "$XT_DIR/flood2.log" ||
	xt_fail "packets lost during SA replacement: $(grep 'packet loss' "$XT_DIR/flood2.log")"
timeout 30 "$DP_TESTCTL" "$DP_SADB_gw2" rt 0x1101 esp 192.0.2.2 | grep -q "^packets=[1-9]" ||
	xt_fail "traffic did not move to the new SA"
xt_log "SA pair replaced under traffic: $(grep 'packet loss' "$XT_DIR/flood2.log")"

# ---- 3. bad-ICV flood
# The gateways run the optimised xipsecd for this part (bench/fwd-xipsecd: the same sources without
# the sanitisers), so the figure is the product's, not AddressSanitizer's. Where there are two CPUs
# the attacker gets one and the protected network the other, in both measurements: the generator
# runs on the last CPU (a flood's source is the attacker's machine, and its copy-mode transmit and
# the veth receive it drives run there), while both gateways and both TCP ends are confined to the
# first. Otherwise the transfer alone would spread over both CPUs and the flooded one would not,
# and the figure would measure the generator rather than the gateway.
FAST="$top_builddir/bench/fwd-xipsecd"
PIN=() ncpu=$(nproc)
if [ "$ncpu" -ge 2 ]; then
	PIN=(taskset -c "$((ncpu - 1))")
	taskset -pc 0 $$ > /dev/null # what this shell starts from here on inherits it
fi
if [ -x "$FAST" ]; then
	XIPSECD=$FAST
fi
if [ -x "$FAST" ] || [ "$ncpu" -ge 2 ]; then
	for gw in gw1 gw2; do xt_stop "xipsecd-$gw"; done
	dp_start gw1
	dp_start gw2
	dp_ping h1 10.2.0.2
fi
timed_tcp() { # prints milliseconds for a 20 MB transfer h1 -> h2, or "failed" (run in $(...): an
	      # xt_fail inside only ends the subshell, so the caller must look at what it printed)
	local t0 t1
	t0=$(date +%s%N)
	( XT_TIMEOUT=8 dp_tcp h1 h2 10.2.0.2 20000000 ) >&2 || { echo failed; return 0; }
	t1=$(date +%s%N)
	echo $(( (t1 - t0) / 1000000 ))
}
icv() { timeout 30 "$DP_TESTCTL" "$DP_SADB_gw2" rt 0x1101 esp 192.0.2.2 | sed -n 's/^drop_icv=//p'; }
# gw2's xipsecd: CPU time (user + system, clock ticks) so far, for its cost per forged packet
gw2_pid=$(for p in $(ip netns pids "$(xt_ns gw2)"); do [ "$(readlink "/proc/$p/exe")" = "$(readlink -f "$XIPSECD")" ] && echo "$p"; done | head -1)
cpu2() { awk '{print $14 + $15}' "/proc/$gw2_pid/stat" 2>/dev/null || echo 0; }
tck=$(getconf CLK_TCK)
mac2=$(xt_exec gw2 ip -br link show out2 | awk '{print $3}')
GEN="$top_builddir/bench/fwd-gen"
# flooded RATE: one transfer under a flood of bad-ICV ESP (RATE packets/s, or "max") injected from
# the bridge towards gw2; sets FL_MS (milliseconds, "failed" when the transfer did not complete) and
# FL_N (flood packets gw2 dropped as ICV failures meanwhile). Called in this shell (not in $(...)),
# so that the generator is registered for the cleanup and a failure ends the test.
flooded() {
	local rate=() before after
	[ "$1" = max ] || rate=(rate "$1")
	if [ -x "$GEN" ]; then
		# AF_XDP generator (C): several hundred thousand packets per second
		xt_bg sw badicv "${PIN[@]}" "$GEN" tx s2 "$mac2" 192.0.2.1 192.0.2.2 140 1 30 esp 0x1101 \
			"${rate[@]}"
	else
		xt_bg sw badicv "$PYTHON" -c "
import socket, os, time
import logging
logging.getLogger('scapy.runtime').setLevel(logging.ERROR)
from scapy.all import Ether, IP, ESP, Raw
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(('s2', 0))
# sequence numbers far above the window: they pass the replay check and fail the ICV
frames = [bytes(Ether(dst='$mac2')/IP(src='192.0.2.1', dst='192.0.2.2')/
          ESP(spi=0x1101, seq=1000000 + i)/Raw(os.urandom(120))) for i in range(4096)]
end = time.time() + 30
print('sending', flush=True)
while time.time() < end:
    for f in frames:
        s.send(f)
"
	fi
	xt_wait 30 grep -q sending "$XT_DIR/badicv.log" || xt_fail "the flood generator did not start"
	before=$(icv)
	# measure only once the flood is arriving
	xt_wait 20 sh -c "[ \"\$(timeout 30 '$DP_TESTCTL' '$DP_SADB_gw2' rt 0x1101 esp 192.0.2.2 |
		sed -n 's/^drop_icv=//p')\" -gt $((before + 1000)) ]" ||
		xt_fail "the bad-ICV flood does not reach gw2: $(cat "$XT_DIR/badicv.log")"
	before=$(icv)
	FL_C0=$(cpu2)
	FL_MS=$(timed_tcp)
	FL_C1=$(cpu2)
	after=$(icv)
	xt_stop badicv
	sleep 0.5 # the last flood packets drain before the next transfer
	FL_N=$((after - before))
	[ "$FL_N" -gt 1000 ] || xt_fail "the bad-ICV flood was not seen ($before -> $after ICV drops)"
}
ratio() { [ "$2" = failed ] && echo 0.00 || awk "BEGIN{printf \"%.2f\", $1/$2}"; }
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }
max_r=() slow_r=() max_pps=() slow_pps=() slow_us=()
for i in 1 2 3 4 5; do
	c0=$(cpu2)
	base=$(timed_tcp)
	c1=$(cpu2)
	[ "$base" != failed ] || xt_fail "the TCP transfer without a flood failed"
	flooded max
	max_r+=("$(ratio "$base" "$FL_MS")")
	[ "$FL_MS" = failed ] && FL_MS=8000
	max_pps+=("$((FL_N * 1000 / FL_MS))")
	flooded 200000
	slow_r+=("$(ratio "$base" "$FL_MS")")
	[ "$FL_MS" = failed ] && FL_MS=8000
	slow_pps+=("$((FL_N * 1000 / FL_MS))")
	# gw2's CPU during the flooded transfer less during the one alone (the same 20 MB), per
	# forged packet: what one costs the gateway
	slow_us+=("$(awk "BEGIN{printf \"%.2f\", (($FL_C1 - $FL_C0) - ($c1 - $c0)) * 1e6 / $tck / $FL_N}")")
	xt_log "bad-ICV flood round $i: 20 MB TCP ${base} ms alone; throughput fraction ${max_r[-1]} under ~${max_pps[-1]} bad packets/s (as fast as the generator goes), ${slow_r[-1]} under ~${slow_pps[-1]}/s (paced to 200k/s), gw2 CPU ${slow_us[-1]} us per forged packet"
done
xt_log "bad-ICV flood, medians of 5: throughput fraction $(median "${max_r[@]}") under ~$(median "${max_pps[@]}") bad packets/s; $(median "${slow_r[@]}") under ~$(median "${slow_pps[@]}") bad packets/s (every one dropped as an ICV failure); gw2 CPU per forged packet $(median "${slow_us[@]}") us"
dp_ping h1 10.2.0.2
dp_finish
exit 0
