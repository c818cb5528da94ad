#!/usr/bin/env bash
# bench/handoff.sh: one inbound SA's throughput with the hand-off of inbound crypto between workers
# (dataplane/xipsecd/dp_handoff.c). The topology of bench/fwd.sh (h1 - gw1 - sw - gw2 - h2, 2-queue
# veths); XPS on the bridge port towards gw2 (and on h2) puts all of the SA's ESP on gw2's queue 0, as
# a NIC's RSS does with one SA (ESP has no ports). bench/fwd-gen sends 1400-byte UDP on two queues
# from h1; gw1 (two workers) encrypts, gw2 decrypts with one worker ("1"), with two workers without
# hand-off ("2-off": the second one idles) and with two workers with hand-off ("2"); h2 counts what
# arrives. The three run interleaved (gw2 restarted before each point, the SA and its window kept in
# the SADB), so that a change of the machine's load hits them alike: REPS rounds (HO_REPS, default 5)
# of one point each of FWD_SECS s after FWD_WARM s, per transform; the medians of delivered pps and
# Mbit/s, and of the share of the SA's packets gw2's second worker decrypted (hand-off counters of
# the control socket). HO_DEBUG=1: gw2's worker counters after each point on standard error.
#
#   bench/handoff.sh [BUILDDIR]        (as root; BUILDDIR default: the top build directory)
# Figures are I/O-bound and noisy on veth with 2 cores, the generator sharing them (doc/platform.md):
# compare within one run. Uses bench/fwd-xipsecd (built without sanitizers) when present.
set -u
here=$(cd "$(dirname "$0")" && pwd)
export top_srcdir=${top_srcdir:-$(cd "$here/.." && pwd)}
export top_builddir=${1:-${top_builddir:-$PWD}}
export PYTHON=${PYTHON:-/usr/bin/python3}
WARM=${FWD_WARM:-1}
SECS=${FWD_SECS:-3}
REPS=${HO_REPS:-5}
[ "$(id -u)" -eq 0 ] || { echo "handoff.sh: needs root" >&2; exit 77; }

. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/test_dp_common.sh"
dp_bench_tools handoff.sh
XT_BG_TIMEOUT=1800
out="$XT_DIR/rows"

dp_topo 2
timeout 10 ip netns exec "$(xt_ns sw)" sh -c "echo 3 > /sys/class/net/s2/queues/tx-0/xps_cpus &&
	echo 0 > /sys/class/net/s2/queues/tx-1/xps_cpus" || xt_fail "cannot set XPS on s2"
# h2's own packets (pings, ARP replies) to gw2's queue 0 as well: one worker serves no queue 1
timeout 10 ip netns exec "$(xt_ns h2)" sh -c "echo 3 > /sys/class/net/eth0/queues/tx-0/xps_cpus &&
	echo 0 > /sys/class/net/eth0/queues/tx-1/xps_cpus" || xt_fail "cannot set XPS on h2"
dp_start gw1 --workers 2
dmac=$(xt_exec gw1 ip -br link show in1 | awk '{print $3}')

gw2_run() { # CONFIG: gw2 (re)started in that configuration
	local args
	case $1 in
	1) args=(--workers 1);;
	2-off) args=(--workers 2 --no-handoff);;
	*) args=(--workers 2);;
	esac
	xt_stop xipsecd-gw2 TERM
	dp_start gw2 "${args[@]}"
	dp_ping h1 10.2.0.2     # gw2 learns h2's address before the sink drops everything on h2
}

point() { # CONFIG XFORM
	local c=$1 xf=$2 res pkts bytes secs share
	dp_status gw2 > "$XT_DIR/st0.json"
	xt_bg h2 sink "$GEN" rx eth0 "$SINK" "$WARM" "$SECS"
	xt_wait 10 grep -q ready "$XT_DIR/sink.log" || xt_fail "sink did not start: $(cat "$XT_DIR/sink.log")"
	xt_bg h1 gen "$GEN" tx eth0 "$dmac" 10.1.0.2 10.2.0.2 1400 2 "$(echo "$WARM + $SECS + 0.5" | bc)"
	xt_wait 30 sh -c "[ \$(wc -w < '$XT_DIR/sink.log') -ge 4 ]" || xt_fail "no sink result"
	xt_wait 20 sh -c "grep -qv sending '$XT_DIR/gen.log'" || xt_fail "no generator result"
	res=$(tail -1 "$XT_DIR/sink.log"); read -r pkts bytes secs <<< "$res"
	xt_stop sink; xt_stop gen
	dp_status gw2 > "$XT_DIR/st.json"
	[ -n "${HO_DEBUG:-}" ] && dp_json "$XT_DIR/st.json" "[dict((k, w[k]) for k in ('rx_outside', 'unprotect', 'handoff_jobs', 'handoff_pkts', 'handoff_back', 'handoff_done', 'drops')) for w in j['worker']]" >&2
	# of the packets gw2 decrypted in this point, those its worker 1 decrypted for worker 0
	share=$("$PYTHON" -c "
import json, sys
a, b = (json.load(open(f))['worker'] for f in sys.argv[1:])
d = lambda k, i: b[i][k] - a[i][k]
u = sum(d('unprotect', i) for i in range(len(b)))
print(100.0 * d('handoff_done', 1) / u if len(b) > 1 and u else 0)" "$XT_DIR/st0.json" "$XT_DIR/st.json")
	awk -v c="$c" -v x="$xf" -v p="$pkts" -v b="$bytes" -v t="$secs" -v s="$share" 'BEGIN {
		printf "%s\t%s\t%.0f\t%.1f\t%.1f\n", c, x, p / t, (b - 14 * p) * 8 / t / 1e6, s }' >> "$out"
}

for xf in gcm cbc; do
	dp_ctl gw1 flush; dp_ctl gw2 flush
	dp_tunnel "$xf" 4 1 $((0x9001)) $((0x9002))
	for gw in gw1 gw2; do dp_ctl "$gw" policy out bypass ::/0 ::/0; done
	for r in $(seq "$REPS"); do
		for c in 1 2-off 2; do
			gw2_run "$c"
			point "$c" "$xf"
		done
	done
done
dp_finish

echo "one inbound SA, all its ESP on one queue of gw2: ${REPS} interleaved rounds of ${SECS} s points (after ${WARM} s), 1400-byte IP packets, medians"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (on $(nproc) CPUs; the generator and gw1 share them)"
awk -F'\t' '
function median(s,   a, n, i, j, t) {
  n = split(s, a, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ k = $1 SUBSEP $2; if (!(k in pps)) order[++n] = k; pps[k] = pps[k] " " $3; mbps[k] = mbps[k] " " $4; share[k] = share[k] " " $5 }
END {
  printf "%-22s %-5s %12s %10s %14s\n", "gw2", "xform", "pps", "Mbit/s", "worker 1 share"
  for (i = 1; i <= n; i++) {
    split(order[i], f, SUBSEP)
    name = f[1] == "1" ? "1 worker" : f[1] == "2-off" ? "2 workers, no hand-off" : "2 workers, hand-off"
    printf "%-22s %-5s %12.0f %10.1f %13.1f%%\n", name, f[2], median(pps[order[i]]), median(mbps[order[i]]), median(share[order[i]])
  }
}' "$out"
exit 0
