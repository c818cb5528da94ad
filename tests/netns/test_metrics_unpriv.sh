#!/usr/bin/env bash
# tests/netns/test_metrics_unpriv.sh: monitoring without keys (doc/architecture.md rule 10). Both
# gateways run xipsecd with an AES-GCM tunnel; gw2's publishes its counters view with the group of
# an unprivileged monitoring user (uid and gid MON, numbers no account uses). That user runs the
# exporter (`ipsecctl metrics --listen`, reading the view) and, after exactly N pings h1 -> h2, it
# serves the same per-SA figures (packets, bytes, drops, state, creation time) and worker counters
# as root's one-shot `ipsecctl metrics` reading the SADB. The same user cannot open the SADB
# (EACCES), the exporter maps no SADB, and no 8 consecutive bytes of any key loaded in the test are
# anywhere in the view file; the view is 0640 with the monitoring group in a 2750 directory.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool ping curl setpriv
. "$top_srcdir/tests/netns/test_dp_common.sh"
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"

N=9 SPI1=0x1000 SPI2=0x2000 PORT=9788 MON=64999
# the monitoring user: no capability, no supplementary group but its own
as_mon() { xt_exec gw2 setpriv --reuid "$MON" --regid "$MON" --clear-groups --inh-caps=-all "$@"; }
# The test's directory holds the SADBs (0600, root's): the monitoring user may pass through it to
# reach the views, and nothing more.
chmod 0711 "$XT_DIR"

dp_topo 1
dp_ipv4_only
dp_tunnel gcm 4 1 $SPI1 $SPI2
dp_start gw1
dp_start gw2 --stats-group "$MON"
VIEW=$(dp_stats_of gw2)
SADB=$(dp_sadb_of gw2)

# The files: the view 0640 root:MON in a 2750 root:MON directory.
[ "$(stat -c '%a %u %g %F' "$VIEW")" = "640 0 $MON regular file" ] || xt_fail "view: $(stat -c '%a %u %g %F' "$VIEW")"
[ "$(stat -c '%a %u %g' "$(dirname "$VIEW")")" = "2750 0 $MON" ] ||
	xt_fail "view's directory: $(stat -c '%a %u %g' "$(dirname "$VIEW")")"

# The SADB is closed to the monitoring user: opening it is refused by the kernel, and so is
# ipsecctl's reading of it.
as_mon "$PYTHON" -c '
import errno, os, sys
try:
    os.open(sys.argv[1], os.O_RDONLY)
except OSError as e:
    sys.exit(0 if e.errno == errno.EACCES else 1)
sys.exit(1)' "$SADB" || xt_fail "the monitoring user opened the SADB (or failed otherwise than EACCES)"
out=$(as_mon "$CTL" --sadb "$SADB" show sa 2>&1) && xt_fail "the monitoring user read the SADB: $out"
case $out in *"cannot open SADB"*) ;; *) xt_fail "ipsecctl as the monitoring user: '$out'" ;; esac

xt_bg gw2 exporter setpriv --reuid "$MON" --regid "$MON" --clear-groups --inh-caps=-all \
	"$CTL" metrics --stats "$VIEW" --listen "127.0.0.1:$PORT" --no-ike --min-interval 0
get() { xt_exec gw2 curl -sf --max-time 10 "http://127.0.0.1:$PORT/metrics"; }
xt_wait 10 get -o /dev/null || { cat "$XT_DIR/exporter.log" >&2; xt_fail "the exporter does not answer"; }
exp_pid=$(pgrep -P "$(xt_pid exporter)" -f "$CTL")
[ -n "$exp_pid" ] && [ "$(stat -c %u "/proc/$exp_pid")" = "$MON" ] || xt_fail "the exporter is not the monitoring user's"
! grep -qF "$SADB" "/proc/$exp_pid/maps" || xt_fail "the exporter maps the SADB"

xt_exec h1 ping -q -c "$N" -i 0.1 -W 2 10.2.0.2 >/dev/null || xt_fail "ping through the tunnel failed"

# figures FILE: the lines that must agree, without the view's own age and the lifetimes' seconds
# (both follow the clock)
figures() {
	grep -E '^xipsec_(sa_(packets|bytes|drops)_total|sa_state|sa_(created|last_used)_timestamp_seconds|worker_[a-z_]*_total|drops_total|sadb_sas|sadb_changes_total|dataplane_up|dataplane_workers)[{ ]' |
		sort
}
root_figures() { timeout 30 "$CTL" --sadb "$SADB" metrics --no-ike | figures; }
same() {
	get > "$XT_DIR/mon.prom" && root_figures > "$XT_DIR/root.txt" &&
		figures < "$XT_DIR/mon.prom" > "$XT_DIR/mon.txt" && cmp -s "$XT_DIR/root.txt" "$XT_DIR/mon.txt"
}
# the view follows within SADB_STATS_INTERVAL_MS; counters no longer move once the pings are done
xt_wait 10 same || { diff "$XT_DIR/root.txt" "$XT_DIR/mon.txt" >&2; xt_fail "the exporter and the SADB disagree"; }
for spi in $SPI1 $SPI2; do
	v=$(awk -v s="$(printf 'spi="0x%08x"' "$spi")" '$1 ~ /^xipsec_sa_packets_total\{/ && index($1, s) { print $2 }' \
		"$XT_DIR/mon.txt")
	[ "$v" = "$N" ] || xt_fail "SA $spi: the unprivileged exporter shows '$v' packets, $N pings sent"
done
grep -q '^xipsec_sadb_up 1$' "$XT_DIR/mon.prom" || xt_fail "the exporter says the view is down"
age=$(awk '$1 == "xipsec_stats_age_seconds" { print $2 }' "$XT_DIR/mon.prom")
[ -n "$age" ] && [ "$age" -le 2 ] || xt_fail "xipsec_stats_age_seconds '$age'"

# No key byte in the view: no run of 8 bytes of any key of the SADB (salts included).
"$PYTHON" - "$VIEW" "$(dp_key $SPI1 20)" "$(dp_key $SPI2 20)" <<'EOF' || xt_fail "key bytes in the view"
import sys
view = open(sys.argv[1], "rb").read()
for k in sys.argv[2:]:
    key = bytes.fromhex(k)
    for i in range(len(key) - 7):
        if key[i:i + 8] in view:
            sys.exit(f"bytes {i}..{i + 7} of key {k} at offset {view.find(key[i:i + 8])}")
EOF

# xipsecd gone: the view stays, and says so (dataplane down, age growing).
xt_stop xipsecd-gw2 TERM
sleep 2.2
get > "$XT_DIR/mon-after.prom" || xt_fail "no scrape with xipsecd stopped"
grep -q '^xipsec_dataplane_up 0$' "$XT_DIR/mon-after.prom" || xt_fail "dataplane still up after xipsecd stopped"
age=$(awk '$1 == "xipsec_stats_age_seconds" { print $2 }' "$XT_DIR/mon-after.prom")
[ -n "$age" ] && [ "$age" -ge 2 ] || xt_fail "xipsec_stats_age_seconds '$age' with xipsecd stopped"
xt_stop exporter TERM
grep -q "ERROR: \(Address\|Undefined\|Leak\)Sanitizer\|runtime error:" "$XT_DIR/exporter.log" &&
	{ cat "$XT_DIR/exporter.log" >&2; xt_fail "sanitizer report from the exporter"; }
dp_finish
exit 0
