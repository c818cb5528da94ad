#!/bin/bash
# tests/netns/test_metrics_tunnel.sh: per-tunnel metrics that survive rekeys, on a live exporter.
# Two gateways run xipsec-iked and xipsecd on one SADB each (topology of test_dp_common.sh); gw1's
# CHILD SA "net" of connection "v2" rekeys every 4 s, and once more on `swanctl --rekey`, under a
# UDP stream h1 -> h2, while gw1's exporter (`ipsecctl metrics --listen`) is scraped every 0.3 s.
# Over the scrape series:
#  - the SAs change (at least three outbound SPIs seen) but xipsec_tunnel_{packets,bytes,drops}_total
#    keep one series per direction for the CHILD SA name (connection="v2", child="net" and its reqid),
#    and their values never go down; at the end, the outbound packets count at least every datagram
#    the stream sent;
#  - every per-SA series of the tunnel's SAs carries the connection, child and reqid labels, in
#    every scrape (also while charon's list-sas skips the IKE SA being rekeyed; an SPI reserved
#    for a rekey, a larval SA of reqid 0, belongs to no tunnel yet);
#  - each SA has exactly one xipsec_sa_state{state} at 1;
#  - every total equals the sum of its parts: xipsec_drops_total{reason} is the SAs' drops plus the
#    workers' SA-less drops for that reason, and a tunnel counts at least its current SAs;
#  - xipsec_build_info is there, and promtool lints every scrape.
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
xt_require ethtool ping curl promtool
ike_require
. "$top_srcdir/tests/netns/test_dp_common.sh"
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
PORT=9788

dp_topo 1
ike_dirs gw1 "$DP_SADB_gw1"
ike_dirs gw2 "$DP_SADB_gw2"
ike_swanctl gw1 192.0.2.1 192.0.2.2 conn v2 2 aes128gcm16-prfsha256-x25519 \
	child net 10.1.0.0/24 10.2.0.0/24 aes128gcm16 rekey_time=4s life_time=60s rand_time=0s
ike_swanctl gw2 192.0.2.2 192.0.2.1 conn v2 2 aes128gcm16-prfsha256-x25519 \
	child net 10.2.0.0/24 10.1.0.0/24 aes128gcm16 rekey_time=60s life_time=90s rand_time=0s
for gw in gw1 gw2; do ike_sconf "$gw" "delete_rekeyed_delay = 2"; done
ike_start gw1
ike_start gw2
dp_start gw1
dp_start gw2
ike_ctl gw1 --initiate --ike v2 --child net >/dev/null || { ike_logs; xt_fail "initiate failed"; }
dp_ping h1 10.2.0.2

xt_bg gw1 exporter "$CTL" --sadb "$DP_SADB_gw1" metrics --listen "127.0.0.1:$PORT" --min-interval 0 \
	--stats "$(dp_stats_of gw1)" \
	--ike-run-dir "$XT_DIR/gw1/run"
xt_wait 10 xt_exec gw1 curl -sf -o /dev/null --max-time 10 "http://127.0.0.1:$PORT/metrics" ||
	{ cat "$XT_DIR/exporter.log" >&2; xt_fail "the exporter does not answer"; }

mkdir -p "$XT_DIR/scrapes"
xt_bg gw1 scraper bash -c "i=100000; while [ ! -e '$XT_DIR/scrapes/stop' ]; do
	curl -sf --max-time 10 -o '$XT_DIR/scrapes/'\$i.txt http://127.0.0.1:$PORT/metrics; i=\$((i + 1)); sleep 0.3; done"
( sleep 6; ike_ctl gw1 --rekey --child net >/dev/null ) &
forced=$!
res=$(ike_udp_stream h1 h2 10.2.0.2 12 200)
wait "$forced" || xt_fail "swanctl --rekey --child net failed"
sleep 1
touch "$XT_DIR/scrapes/stop"
sleep 1
xt_stop scraper
set -- $res
sent=$2
xt_log "UDP stream: $res"

for f in "$XT_DIR"/scrapes/1*.txt; do
	[ -s "$f" ] || continue
	promtool check metrics < "$f" || xt_fail "promtool lint of $f failed"
done

"$PYTHON" - "$XT_DIR/scrapes" "$sent" <<'EOF' || xt_fail "the scrape series breaks a rule (above)"
import glob, re, sys
from collections import defaultdict

line_re = re.compile(r'^([a-z_0-9]+)(?:\{(.*)\})? (\d+)$')
label_re = re.compile(r'([a-z_]+)="((?:[^"\\]|\\.)*)"')
scrapes = []
for path in sorted(glob.glob(sys.argv[1] + "/1*.txt")):
    samples = []
    for l in open(path):
        if l.startswith("#") or not l.strip():
            continue
        m = line_re.match(l.strip())
        assert m, "unparsed line in %s: %s" % (path, l)
        samples.append((m.group(1), dict(label_re.findall(m.group(2) or "")), int(m.group(3))))
    if samples:
        scrapes.append((path, samples))
sent = int(sys.argv[2])
fail = []
if len(scrapes) < 20:
    fail.append("only %d scrapes" % len(scrapes))
last = {}
spis_out = set()
reqids = set()
seen_sa, named_sa, unnamed, early = set(), set(), [], []
for path, samples in scrapes:
    tun = defaultdict(list)
    for name, lab, v in samples:
        if name.startswith("xipsec_tunnel_") and lab.get("child") == "net":
            tun[(name, lab["dir"])].append((lab, v))
    for fam in ("xipsec_tunnel_packets_total", "xipsec_tunnel_bytes_total", "xipsec_tunnel_drops_total"):
        for d in ("in", "out"):
            s = tun.get((fam, d), [])
            if len(s) != 1:
                fail.append("%s: %d series of %s{child=net,dir=%s}" % (path, len(s), fam, d))
                continue
            lab, v = s[0]
            if lab["connection"] != "v2":
                fail.append("%s: %s connection=%r" % (path, fam, lab["connection"]))
            reqids.add(lab["reqid"])
            if v < last.get((fam, d), 0):
                fail.append("%s: %s{dir=%s} went down: %d -> %d" % (path, fam, d, last[(fam, d)], v))
            last[(fam, d)] = v
    # per SA: the names, one state at 1; a tunnel counts at least its SAs of the moment
    cur = defaultdict(int)
    state_ones = defaultdict(int)
    for name, lab, v in samples:
        if name == "xipsec_sa_packets_total":
            sa = (lab["spi"], lab["dir"])
            # list-sas leaves out an IKE SA busy with a rekey, and lists a rekey's new CHILD SA
            # only once the exchange is done: the exporter keeps the names it knows (by SA, by
            # reqid), so an SA has no names only before any scrape named its tunnel
            # (an inbound SPI xipsec-iked reserves for a rekey is a larval SA of reqid 0 until
            # the CHILD SA is installed: of no tunnel yet)
            if lab["reqid"] == "0":
                continue
            seen_sa.add(sa)
            if lab["connection"] != "v2" or lab["child"] != "net" or lab["reqid"] not in reqids:
                (unnamed if reqids else early).append("%s: SA %s labelled %s" % (path, sa, lab))
                continue
            named_sa.add(sa)
            cur[lab["dir"]] += v
            if lab["dir"] == "out":
                spis_out.add(lab["spi"])
        if name == "xipsec_sa_state":
            state_ones[lab["spi"], lab["dir"]] += v
    for k, n in state_ones.items():
        if n != 1:
            fail.append("%s: SA %s has %d states at 1" % (path, k, n))
    for d, v in cur.items():
        t = tun.get(("xipsec_tunnel_packets_total", d), [({}, 0)])[0][1]
        if t < v:
            fail.append("%s: tunnel %s packets %d < its SAs' %d" % (path, d, t, v))
    # totals are the sums of their parts
    parts = defaultdict(int)
    totals = {}
    for name, lab, v in samples:
        if name in ("xipsec_sa_drops_total", "xipsec_worker_drops_total"):
            parts[lab["reason"]] += v
        elif name == "xipsec_drops_total":
            totals[lab["reason"]] = v
    for r, v in totals.items():
        if v != parts[r]:
            fail.append("%s: xipsec_drops_total{reason=%s} %d != parts %d" % (path, r, v, parts[r]))
    if not any(name == "xipsec_build_info" and v == 1 and lab.get("version") for name, lab, v in samples):
        fail.append("%s: no xipsec_build_info" % path)
for sa in sorted(seen_sa - named_sa):
    fail.append("SA %s never had the tunnel's names" % (sa,))
fail += unnamed
for u in early:
    print("(before the first names) " + u, file=sys.stderr)
if len(reqids) != 1:
    fail.append("reqids %s: expected one" % sorted(reqids))
if len(spis_out) < 3:
    fail.append("outbound SPIs seen %s: expected at least 3 (two rekeys)" % sorted(spis_out))
if last.get(("xipsec_tunnel_packets_total", "out"), 0) < sent:
    fail.append("tunnel out packets %d < %d datagrams sent" % (last.get(("xipsec_tunnel_packets_total", "out"), 0), sent))
for f in fail[:20]:
    print(f, file=sys.stderr)
print("%d scrapes, outbound SPIs %s, last %s" % (len(scrapes), sorted(spis_out), sorted(last.items())), file=sys.stderr)
sys.exit(1 if fail else 0)
EOF

xt_stop exporter
grep -q "AddressSanitizer\|runtime error\|LeakSanitizer" "$XT_DIR/exporter.log" &&
	{ cat "$XT_DIR/exporter.log" >&2; xt_fail "sanitizer report from the exporter"; }
dp_finish
ike_check_logs
xt_log "PASS: one xipsec_tunnel_* series per direction for CHILD SA net across rekeys, never down"
exit 0
