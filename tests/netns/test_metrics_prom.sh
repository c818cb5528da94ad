#!/usr/bin/env bash
# tests/netns/test_metrics_prom.sh: `ipsecctl metrics` end to end, scraped by Debian's real
# Prometheus server. Both gateways run xipsecd with an ESP tunnel; an exporter per gateway
# (`ipsecctl metrics --listen`, in a namespace of its own with only loopback) serves the counters
# view its xipsecd publishes, and Prometheus scrapes both every second (storage in the test's temp dir). After exactly N pings
# h1 -> h2, Prometheus' HTTP API must show both targets up and, for each SA the pings crossed, the
# per-SA packet counter ipsecctl reads from the SADB (which must itself have grown by exactly N).
# Also: the exporter refuses what is not GET /metrics (405, 404, 400) and keeps serving; its
# output passes promtool's lint; --textfile replaces a file atomically and leaves no temporary.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool ping curl prometheus promtool
. "$top_srcdir/tests/netns/test_dp_common.sh"
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"

N=9 SPI1=0x1000 SPI2=0x2000 PORT1=9786 PORT2=9787 PROM=9090

dp_topo 1
dp_ipv4_only
dp_tunnel gcm 4 1 $SPI1 $SPI2
dp_start gw1
dp_start gw2
xt_ns_add mon

# The exporters first: Prometheus' first scrape should find them.
xt_bg mon exp-gw1 "$CTL" metrics --stats "$(dp_stats_of gw1)" --listen "127.0.0.1:$PORT1" \
	--ike-run-dir "$XT_DIR/no-iked"
xt_bg mon exp-gw2 "$CTL" metrics --listen "127.0.0.1:$PORT2" --stats "$(dp_stats_of gw2)" \
	--ike-run-dir "$XT_DIR/no-iked"
get() { xt_exec mon curl -sf --max-time 10 "$@"; }
for p in $PORT1 $PORT2; do
	xt_wait 10 get -o /dev/null "http://127.0.0.1:$p/metrics" ||
		{ cat "$XT_DIR"/exp-gw*.log >&2; xt_fail "exporter on port $p does not answer"; }
done

cat > "$XT_DIR/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: xipsec
    static_configs:
      - targets: ['127.0.0.1:$PORT1']
        labels: {gw: gw1}
      - targets: ['127.0.0.1:$PORT2']
        labels: {gw: gw2}
EOF
promtool check config "$XT_DIR/prometheus.yml" >/dev/null || xt_fail "promtool rejects the test's config"
xt_bg mon prometheus prometheus --config.file="$XT_DIR/prometheus.yml" \
	--storage.tsdb.path="$XT_DIR/prom-data" --web.listen-address="127.0.0.1:$PROM" \
	--log.level=warn
xt_wait 60 get -o /dev/null "http://127.0.0.1:$PROM/-/ready" ||
	{ cat "$XT_DIR/prometheus.log" >&2; xt_fail "prometheus did not become ready"; }

# promql EXPR: the query's result vector as JSON
promql() { get -G "http://127.0.0.1:$PROM/api/v1/query" --data-urlencode "query=$1"; }
# promval EXPR: the value of its single sample ("none" when there is not exactly one)
promval() {
	promql "$1" | "$PYTHON" -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if len(r) == 1 else "none")'
}
targets_up() {
	get "http://127.0.0.1:$PROM/api/v1/targets" | "$PYTHON" -c '
import json, sys
t = json.load(sys.stdin)["data"]["activeTargets"]
ok = sorted(x["labels"]["gw"] for x in t if x["health"] == "up" and x["labels"]["job"] == "xipsec")
sys.exit(0 if ok == ["gw1", "gw2"] else 1)'
}
xt_wait 30 targets_up || { get "http://127.0.0.1:$PROM/api/v1/targets" >&2; xt_fail "targets not up"; }

# ipsecctl's reading of an SA's packet counter: sa_packets GW SPI
sa_packets() {
	timeout 30 "$CTL" --sadb "$(dp_sadb_of "$1")" --json show sa "$2" > "$XT_DIR/sa.json" ||
		xt_fail "ipsecctl show sa $2 on $1 failed"
	dp_json "$XT_DIR/sa.json" "j['sas'][0]['counters']['packets']"
}

# One warm-up ping so that every neighbour is resolved, then exactly N.
xt_exec h1 ping -q -c 1 -W 2 10.2.0.2 >/dev/null || xt_fail "no path h1 -> h2"
sleep 0.5
b11=$(sa_packets gw1 $SPI1) b21=$(sa_packets gw2 $SPI1) b22=$(sa_packets gw2 $SPI2) b12=$(sa_packets gw1 $SPI2)
xt_exec h1 ping -q -c "$N" -i 0.1 -W 2 10.2.0.2 >/dev/null || xt_fail "$N pings h1 -> h2 failed"
sleep 0.5
# gw/SA/direction: the echo requests go out of gw1 and into gw2 under SPI1, the replies back
# under SPI2.
check_sa() {
	local gw=$1 spi=$2 dir=$3 base=$4 now q v
	now=$(sa_packets "$gw" "$spi")
	[ "$now" = $((base + N)) ] || xt_fail "$gw SA $spi ($dir): SADB counter $now, expected $base + $N"
	q=$(printf 'xipsec_sa_packets_total{gw="%s",spi="0x%08x",dir="%s",proto="esp"}' "$gw" "$spi" "$dir")
	for _ in $(seq 60); do
		v=$(promval "$q")
		[ "$v" = "$now" ] && return 0
		sleep 0.25
	done
	xt_fail "Prometheus has $q = $v, the SADB $now"
}
check_sa gw1 $SPI1 out "$b11"
check_sa gw2 $SPI1 in "$b21"
check_sa gw2 $SPI2 out "$b22"
check_sa gw1 $SPI2 in "$b12"
# promis EXPR VALUE: the query gives VALUE within 10 s (a scrape that ran over the 1 s timeout
# on a loaded machine makes up 0 for that one scrape)
promis() {
	local v i
	for i in $(seq 40); do
		v=$(promval "$1")
		[ "$v" = "$2" ] && return 0
		sleep 0.25
	done
	xt_fail "Prometheus has $1 = $v, expected $2"
}
promis 'up{job="xipsec",gw="gw1"}' 1
promis 'xipsec_dataplane_up{gw="gw2"}' 1
promis 'xipsec_sadb_sas{gw="gw1"}' 2
promis 'xipsec_ike_up{gw="gw1"}' 0
v=$(promval 'sum(xipsec_worker_rx_packets_total{gw="gw2"})')
[ "$v" != none ] && [ "$v" -ge $((2 * N)) ] || xt_fail "gw2 worker rx packets $v < $((2 * N))"

# Anything but GET /metrics is refused, and the exporter goes on serving.
code() { xt_exec mon curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }
[ "$(code -X POST "http://127.0.0.1:$PORT1/metrics")" = 405 ] || xt_fail "POST /metrics not 405"
[ "$(code "http://127.0.0.1:$PORT1/")" = 404 ] || xt_fail "GET / not 404"
[ "$(code -X 'BAD METHOD' "http://127.0.0.1:$PORT1/metrics")" = 400 ] || xt_fail "a malformed request line is not 400"
reply=$(printf 'NOT HTTP AT ALL\r\n\r\n' | xt_exec mon nc -q 2 -w 5 127.0.0.1 $PORT1 | head -1 | tr -d '\r')
[ "$reply" = "HTTP/1.1 400 Bad Request" ] || xt_fail "garbage got '$reply'"
get -D "$XT_DIR/headers" -o "$XT_DIR/scrape.txt" "http://127.0.0.1:$PORT1/metrics" || xt_fail "exporter stopped serving"
grep -qi '^Content-Type: text/plain; version=0.0.4' "$XT_DIR/headers" || xt_fail "content type: $(cat "$XT_DIR/headers")"
promtool check metrics < "$XT_DIR/scrape.txt" || xt_fail "promtool lint of the exposition failed"

# --textfile: the file is replaced whole, with the collector-readable mode, and no temporary stays.
tf="$XT_DIR/textfile/xipsec.prom"
mkdir -p "$XT_DIR/textfile"
echo stale > "$tf"
timeout 30 "$CTL" --sadb "$(dp_sadb_of gw1)" metrics --no-ike --textfile "$tf" || xt_fail "--textfile failed"
# a manual SA: no connection or CHILD SA name
grep -q "^xipsec_sa_packets_total{spi=\"0x00001000\",proto=\"esp\",dir=\"out\",local=\"192.0.2.1\",peer=\"192.0.2.2\",connection=\"\",child=\"\",reqid=\"[0-9]*\"} $((b11 + N))\$" "$tf" ||
	xt_fail "textfile lacks the SA counter: $(grep sa_packets "$tf")"
[ "$(stat -c %a "$tf")" = 644 ] || xt_fail "textfile mode $(stat -c %a "$tf")"
[ "$(ls "$XT_DIR/textfile")" = xipsec.prom ] || xt_fail "temporary files left: $(ls "$XT_DIR/textfile")"

for e in exp-gw1 exp-gw2; do
	xt_stop "$e"
	grep -q "AddressSanitizer\|runtime error\|LeakSanitizer" "$XT_DIR/$e.log" &&
		{ cat "$XT_DIR/$e.log" >&2; xt_fail "sanitizer report from the exporter $e"; }
done
xt_stop prometheus
dp_finish
exit 0
