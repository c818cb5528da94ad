#!/usr/bin/env bash
# tests/netns/test_dp_stats.sh: the dataplane stats area of the SADB as ipsecctl shows it. gw2 runs
# xipsecd with one inbound SA and no policy at all; gw1's kernel (no xipsecd there) sends it ESP
# under an SPI gw2 does not know (scapy) and plaintext pings for which gw2 has no policy.
# `ipsecctl --json show stats` on gw2 must count exactly those drops under bad_spi / no_policy as
# SA-less drops (the SA's own counters stay zero), totals = per-SA + SA-less, and worker 0's rx
# counter must have seen them; xipsecd --status agrees.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool ping
. "$top_srcdir/tests/netns/test_dp_common.sh"
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
"$PYTHON" -c "import scapy.layers.ipsec" 2>/dev/null || xt_skip "scapy not available for $PYTHON"

N_ESP=7 N_PING=4

dp_topo 1
# IPv4 only: the kernels' own IPv6 chatter (MLD reports, router solicitations to link-local
# multicast) would reach gw2's dataplane without a policy and blur the exact counts below.
dp_ipv4_only
# The SA that exists: SPI 8192 (0x2000); the ESP below uses 0x2001.
k=$(dp_sa_keys gcm 8192)
dp_ctl gw2 sa in 8192 esp tunnel 192.0.2.1 192.0.2.2 reqid 1 ${k#* }
dp_start gw2
stats() { timeout 30 "$CTL" --sadb "$(dp_sadb_of gw2)" --json show stats > "$XT_DIR/stats.json" ||
	xt_fail "ipsecctl show stats failed"; }
stats
[ "$(dp_json "$XT_DIR/stats.json" "j['stats']['dataplane']['workers']")" = 1 ] ||
	xt_fail "dataplane record not set up: $(cat "$XT_DIR/stats.json")"
[ "$(dp_json "$XT_DIR/stats.json" "j['stats']['dataplane']['pid'] > 0")" = True ] ||
	xt_fail "no dataplane pid: $(cat "$XT_DIR/stats.json")"

# Let gw1 learn gw2's MAC first (ARP stays with gw2's kernel), so every frame below is the test's.
xt_exec gw1 ping -q -c 1 -W 2 192.0.2.2 >/dev/null || xt_fail "gw1 cannot reach gw2"
stats
base_rx=$(dp_json "$XT_DIR/stats.json" "j['stats']['workers'][0]['rx_packets']")

xt_exec gw1 "$PYTHON" - "$N_ESP" <<'PY' || xt_fail "scapy could not send ESP"
import sys
from scapy.all import IP, Raw, send, conf
from scapy.layers.ipsec import ESP
conf.verb = 0
n = int(sys.argv[1])
send([IP(src="192.0.2.1", dst="192.0.2.2") / ESP(spi=0x2001, seq=i + 1) / Raw(b"\x00" * 64)
      for i in range(n)])
PY
# Plaintext through gw2 towards h2 without any policy on gw2. A ping gets no answer.
xt_exec gw1 ping -q -c "$N_PING" -i 0.1 -W 1 10.2.0.2 >/dev/null && xt_fail "ping without policy got through"

want="j['stats']['no_sa_drops']['bad_spi'] == $N_ESP and j['stats']['no_sa_drops']['no_policy'] == $N_PING"
xt_wait 10 sh -c "timeout 30 '$CTL' --sadb '$(dp_sadb_of gw2)' --json show stats > '$XT_DIR/stats.json' &&
	[ \"\$('$PYTHON' -c \"import json; j=json.load(open('$XT_DIR/stats.json')); print($want)\")\" = True ]" ||
	xt_fail "SA-less drops not counted: $(cat "$XT_DIR/stats.json")"
sleep 0.5
stats
chk() { [ "$(dp_json "$XT_DIR/stats.json" "$1")" = True ] || xt_fail "$2: $(cat "$XT_DIR/stats.json")"; }
chk "j['stats']['drops']['bad_spi'] == $N_ESP and j['stats']['drops']['no_policy'] == $N_PING" \
	"totals by reason differ from what was sent"
chk "j['stats']['sa_drops']['bad_spi'] == 0 and j['stats']['packets'] == 0" "the SA was charged"
chk "all(v == 0 for k, v in j['stats']['drops'].items() if k not in ('bad_spi', 'no_policy'))" \
	"drops under other reasons"
chk "j['stats']['drops_total'] == $((N_ESP + N_PING))" "drops_total"
chk "all(j['stats']['drops'][k] == j['stats']['sa_drops'][k] + j['stats']['no_sa_drops'][k] for k in j['stats']['drops'])" \
	"totals are not per-SA + SA-less"
chk "j['stats']['workers'][0]['drops'] == j['stats']['no_sa_drops']" "one worker holds every SA-less drop"
chk "j['stats']['workers'][0]['rx_packets'] - $base_rx >= $((N_ESP + N_PING))" "worker rx packets"
chk "j['stats']['workers'][0]['rx_bytes'] > 0 and j['stats']['dataplane']['rx_packets'] == j['stats']['workers'][0]['rx_packets']" \
	"worker rx bytes / dataplane sum"
# The control socket's view of the same worker agrees.
dp_status gw2 > "$XT_DIR/st2.json"
[ "$(dp_json "$XT_DIR/st2.json" "j['worker'][0]['drops'].get('bad_spi', 0)")" = "$N_ESP" ] ||
	xt_fail "--status disagrees: $(cat "$XT_DIR/st2.json")"
# The text form names the reasons and the worker.
timeout 30 "$CTL" --sadb "$(dp_sadb_of gw2)" show stats > "$XT_DIR/stats.txt" || xt_fail "show stats (text)"
grep -q "no SA for SPI *$N_ESP (SAs 0, no SA $N_ESP)" "$XT_DIR/stats.txt" || xt_fail "text: $(cat "$XT_DIR/stats.txt")"
grep -q "^  worker 0: rx [1-9]" "$XT_DIR/stats.txt" || xt_fail "text worker: $(cat "$XT_DIR/stats.txt")"
dp_finish
exit 0
