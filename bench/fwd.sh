#!/usr/bin/env bash
# bench/fwd.sh: the forwarding benchmark. Through two xipsecd gateways in
# namespaces (h1 - gw1 - sw - gw2 - h2), an AF_XDP generator on h1 (bench/fwd-gen tx) sends UDP
# flows of 64-byte and 1400-byte IP packets as fast as it can; an XDP program on h2 counts what
# arrives (bench/fwd-gen rx). For bypass (xipsecd without IPsec), AES-GCM-128 and
# AES-CBC-128 + HMAC-SHA256-128 tunnels, with 1 and 2 workers (2-queue veths), all in one run:
# delivered pps and Mbit/s (IP bytes), the ratio to bypass, and the dataplane's CPU time per packet
# (user + system time of both xipsecd processes over the measurement, per packet per gateway).
#
#   bench/fwd.sh [BUILDDIR]        (as root; BUILDDIR default: the top build directory)
# Figures are I/O-bound and noisy on veth with 2 cores (doc/platform.md): compare ratios within one run.
# The CPU time includes kernel work done in xipsecd's context: copy-mode transmit runs the receiving
# veth's NAPI inline, so a gateway's sendto also pays for the bridge hop and the next XDP program.
# Uses bench/fwd-xipsecd (built without sanitizers) when present.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export top_srcdir=${top_srcdir:-$(cd "$here/.." && pwd)}
export top_builddir=${1:-${top_builddir:-$PWD}}
export PYTHON=${PYTHON:-/usr/bin/python3}
WARM=${FWD_WARM:-1}
SECS=${FWD_SECS:-3}

if [ "${FWD_INNER:-}" = "" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "fwd.sh: needs root" >&2; exit 77; }
	out=$(mktemp)
	trap 'rm -f "$out"' EXIT
	for w in 1 2; do
		FWD_INNER=$w timeout 600 bash "$0" "$top_builddir" >> "$out" || { echo "fwd.sh: run with $w worker(s) failed" >&2; exit 1; }
	done
	echo "xipsecd forwarding benchmark: ${SECS} s per point after ${WARM} s warm-up; IP packet sizes"
	awk -F'\t' '
	{ key = $1 "/" $3; pps[$1, $2, $3] = $4; mbps[$1, $2, $3] = $5; ns[$1, $2, $3] = $6; sent[$1,$2,$3] = $7
	  rows[++n] = $1 SUBSEP $2 SUBSEP $3 }
	END {
	  printf "%-8s %-9s %5s %12s %10s %9s %12s %12s\n", "workers", "mode", "size", "pps", "Mbit/s", "vs bypass", "ns/pkt/gw", "offered pps"
	  for (i = 1; i <= n; i++) {
	    split(rows[i], k, SUBSEP)
	    b = pps[k[1], "bypass", k[3]]
	    printf "%-8s %-9s %5s %12.0f %10.1f %9s %12.0f %12.0f\n", k[1], k[2], k[3], pps[k[1],k[2],k[3]], mbps[k[1],k[2],k[3]],
	      (b > 0 ? sprintf("%.2f", pps[k[1],k[2],k[3]] / b) : "-"), ns[k[1],k[2],k[3]], sent[k[1],k[2],k[3]]
	  }
	}' "$out"
	exit 0
fi

# ---- one worker count: its own namespaces, cleaned up by lib.sh
W=$FWD_INNER
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/test_dp_common.sh"
dp_bench_tools fwd.sh
XT_BG_TIMEOUT=600

dp_topo "$W"
dp_bypass_all
dp_start gw1 --workers "$W"
dp_start gw2 --workers "$W"
dp_ping h1 10.2.0.2     # gw2 learns h2's address before the sink drops everything on h2
dmac=$(xt_exec gw1 ip -br link show in1 | awk '{print $3}')

cpu_ticks() { # user+system clock ticks of both xipsecd processes
	local gw p t=0
	for gw in gw1 gw2; do
		p=$(pgrep -P "$(xt_pid "xipsecd-$gw")" | head -1)
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo "$t"
}

point() { # MODE SIZE
	local mode=$1 size=$2 c0 c1 res pkts bytes secs sent hz
	hz=$(getconf CLK_TCK)
	xt_bg h2 sink "$GEN" rx eth0 "$SINK" "$WARM" "$SECS"
	xt_wait 10 grep -q ready "$XT_DIR/sink.log" || xt_fail "sink did not start: $(cat "$XT_DIR/sink.log")"
	xt_bg h1 gen "$GEN" tx eth0 "$dmac" 10.1.0.2 10.2.0.2 "$size" "$W" "$(echo "$WARM + $SECS + 0.5" | bc)"
	sleep "$WARM"
	c0=$(cpu_ticks)
	sleep "$SECS"
	c1=$(cpu_ticks)
	xt_wait 20 sh -c "[ \$(wc -w < '$XT_DIR/sink.log') -ge 4 ]" || xt_fail "no sink result"
	xt_wait 20 sh -c "grep -qv sending '$XT_DIR/gen.log'" || xt_fail "no generator result"
	res=$(tail -1 "$XT_DIR/sink.log"); read -r pkts bytes secs <<< "$res"
	sent=$(grep -v sending "$XT_DIR/gen.log" | tail -1)
	xt_stop sink; xt_stop gen
	awk -v w="$W" -v m="$mode" -v s="$size" -v p="$pkts" -v b="$bytes" -v t="$secs" -v c=$((c1 - c0)) \
	    -v hz="$hz" -v sent="$sent" -v all="$(echo "$WARM + $SECS + 0.5" | bc)" 'BEGIN {
		pps = p / t; mbps = (b - 14 * p) * 8 / t / 1e6
		nspkt = p > 0 ? c / hz * 1e9 / p / 2 : 0
		printf "%s\t%s\t%s\t%.0f\t%.1f\t%.0f\t%.0f\n", w, m, s, pps, mbps, nspkt, sent / all }'
}

for mode in bypass gcm cbc; do
	for gw in gw1 gw2; do dp_ctl "$gw" flush; done
	case $mode in
	bypass) dp_bypass_all;;
	*) dp_tunnel "$mode" 4 1 $((0x9001)) $((0x9002))
	   for gw in gw1 gw2; do dp_ctl "$gw" policy out bypass ::/0 ::/0; done;;
	esac
	sleep 0.2
	dp_ping h1 10.2.0.2
	for size in 64 1400; do
		point "$mode" "$size"
	done
done
dp_finish
exit 0
