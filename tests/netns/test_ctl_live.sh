#!/usr/bin/env bash
# tests/netns/test_ctl_live.sh: `ipsecctl --json show` reports the dataplane's live counters,
# checked against an independent count: the ESP packets tcpdump saw between the
# gateways. Manual SAs are loaded with `ipsecctl load`; xipsecd carries pings in both directions.
# SIGHUP reloads xipsecd without stopping it: a ping through three of them loses nothing.
. "$top_srcdir/tests/netns/lib.sh"
xt_require tcpdump tshark ping
. "$top_srcdir/tests/netns/test_dp_common.sh"
CTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"

dp_topo 1
K1=0x0102030405060708090a0b0c0d0e0f1011121314
K2=0x2122232425262728292a2b2c2d2e2f3031323334
cat > "$XT_DIR/gw1.conf" <<CONF
esp tunnel from 10.1.0.0/24 to 10.2.0.0/24 local 192.0.2.1 peer 192.0.2.2 \\
    spi 0x1000:0x1001 enc aes128gcm16 key $K1:$K2
CONF
cat > "$XT_DIR/gw2.conf" <<CONF
esp tunnel from 10.2.0.0/24 to 10.1.0.0/24 local 192.0.2.2 peer 192.0.2.1 \\
    spi 0x1001:0x1000 enc aes128gcm16 key $K2:$K1
CONF
for n in 1 2; do
	dp_sadb "gw$n"
	timeout 30 "$CTL" --sadb "$(dp_sadb_of "gw$n")" --new-keys load "$XT_DIR/gw$n.conf" ||
		xt_fail "ipsecctl load on gw$n"
done
dp_start gw1
dp_start gw2

N=25
dp_capture_start live sw s1
xt_exec h1 ping -c "$N" -i 0.05 -W 2 10.2.0.2 >"$XT_DIR/ping.out" || { cat "$XT_DIR/ping.out" >&2; xt_fail "ping through the tunnel"; }
dp_capture_stop live

# Independent count: ESP packets per SPI on the wire, from the capture.
wire() { timeout 60 tshark -r "$XT_DIR/live.pcap" -Y "esp.spi == $1" 2>/dev/null | wc -l; }
w_out=$(wire 0x1000) w_in=$(wire 0x1001)
[ "$w_out" -ge "$N" ] && [ "$w_in" -ge "$N" ] || xt_fail "capture: $w_out ESP packets gw1->gw2, $w_in back (expected >= $N)"

# What ipsecctl reports, on both gateways.
for n in 1 2; do
	timeout 30 "$CTL" --sadb "$(dp_sadb_of "gw$n")" --json show sa > "$XT_DIR/show$n.json" ||
		xt_fail "ipsecctl --json show sa on gw$n"
done
"$PYTHON" - "$XT_DIR/show1.json" "$XT_DIR/show2.json" "$w_out" "$w_in" <<'PY' || xt_fail "ipsecctl counters disagree with the wire"
import json, sys
w = {0x1000: int(sys.argv[3]), 0x1001: int(sys.argv[4])}
bad = 0
for gw, path in (("gw1", sys.argv[1]), ("gw2", sys.argv[2])):
    doc = json.load(open(path))
    sas = doc["sas"] if isinstance(doc, dict) else doc
    for sa in sas:
        c = sa["counters"]
        drops = {k: v for k, v in c["drops"].items() if v}
        want = w[sa["spi"]]
        seen = c["packets"]
        print(f"{gw} {sa['dir']:3} spi {sa['spi_hex']}: ipsecctl packets {seen}, bytes {c['bytes']}, "
              f"wire {want}, drops {drops or 'none'}")
        if seen != want or c["bytes"] <= 0 or drops:
            bad = 1
        if sa["dir"] == "out" and c.get("seq_reserved", 0) < want:
            print(f"  sequence reservation {c.get('seq_reserved')} below the {want} packets sent"); bad = 1
sys.exit(bad)
PY

# SIGHUP is a reload: xipsecd reads the SADB, the interfaces and the routes again and stops nothing.
# A ping running through three SIGHUPs to each gateway loses no packet, and the same daemons answer.
pids() { for gw in gw1 gw2; do pgrep -P "$(xt_pid "xipsecd-$gw")"; done | tr '\n' ' '; }
before=$(pids)
[ "$(echo "$before" | wc -w)" = 2 ] || xt_fail "cannot find the two xipsecd processes ($before)"
xt_bg h1 hup-ping ping -c 100 -i 0.02 -W 2 10.2.0.2
sleep 0.3
for i in 1 2 3; do
	# shellcheck disable=SC2086
	kill -HUP $before
	sleep 0.4
done
xt_wait 20 grep -q "packets transmitted" "$XT_DIR/hup-ping.log" || xt_fail "the ping under SIGHUP did not finish"
grep -q " 0% packet loss" "$XT_DIR/hup-ping.log" ||
	xt_fail "packets lost across SIGHUP: $(grep 'packet loss' "$XT_DIR/hup-ping.log")"
[ "$(pids)" = "$before" ] || xt_fail "xipsecd restarted or stopped on SIGHUP (pids $before, now $(pids))"
for gw in gw1 gw2; do
	n=$(grep -c "SIGHUP: reading the SADB, the interfaces and the routes again" "$XT_DIR/xipsecd-$gw.log")
	[ "$n" = 3 ] || xt_fail "$gw: $n SIGHUP reloads logged, 3 sent"
done
dp_finish
xt_log "ok: ipsecctl's live counters match the $w_out + $w_in ESP packets on the wire; three SIGHUPs lost no packet"
