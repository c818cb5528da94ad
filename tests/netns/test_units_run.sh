#!/usr/bin/env bash
# tests/netns/test_units_run.sh: the installed systemd units' commands carry traffic. Each gateway of
# the netns topology gets its own `make install DESTDIR=...` root with its own xipsec.env and
# ipsec.conf; the test runs the ExecStart and ExecReload lines read out of the installed unit files,
# expanded as systemd does (the environment file's KEY=value lines; ${VAR} one argument, $VAR split
# at blanks), inside the unit's CapabilityBoundingSet, NoNewPrivileges and LimitMEMLOCK (setpriv,
# prlimit), so the capability list is checked too. Installed paths named on the command lines are
# taken from the DESTDIR root, and XIPSEC_XDP_OBJ in the environment file points at the root's XDP
# program (the installed xipsecd looks for it in $pkglibdir, which a DESTDIR install does not fill:
# checked first). At first boot the keys have no sequence mark: xipsecd refuses them until the
# operator runs `ipsecctl --new-keys reload` once. Then: a ping through the tunnel; a reload of a
# changed ipsec.conf (a second, IPv6 tunnel) keeps the first tunnel's SAs and their counters; a
# reload of a broken file fails and changes nothing; xipsecd stops cleanly.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ping setpriv prlimit
. "$top_srcdir/tests/netns/test_dp_common.sh"
. "$top_srcdir/tests/netns/units_common.sh"

K1=0x0102030405060708090a0b0c0d0e0f1011121314
K2=0x2122232425262728292a2b2c2d2e2f3031323334
K3=0x4142434445464748494a4b4c4d4e4f5051525354
K4=0x6162636465666768696a6b6c6d6e6f7071727374
tun4() { # tun4 GW: the IPv4 tunnel, as GW writes it
	if [ "$1" = gw1 ]; then printf 'esp tunnel from 10.1.0.0/24 to 10.2.0.0/24 local 192.0.2.1 peer 192.0.2.2 spi 0x1000:0x1001 enc aes128gcm16 key %s:%s\n' $K1 $K2
	else printf 'esp tunnel from 10.2.0.0/24 to 10.1.0.0/24 local 192.0.2.2 peer 192.0.2.1 spi 0x1001:0x1000 enc aes128gcm16 key %s:%s\n' $K2 $K1; fi
}
tun6() {
	if [ "$1" = gw1 ]; then printf 'esp tunnel from fd01::/64 to fd02::/64 local fd00::1 peer fd00::2 spi 0x2000:0x2001 enc aes128gcm16 key %s:%s\n' $K3 $K4
	else printf 'esp tunnel from fd02::/64 to fd01::/64 local fd00::2 peer fd00::1 spi 0x2001:0x2000 enc aes128gcm16 key %s:%s\n' $K4 $K3; fi
}

dp_topo 1
for gw in gw1 gw2; do
	unit_root "$gw"
	tun4 "$gw" > "$XT_DIR/root-$gw$sysconfdir/xipsec/ipsec.conf"
done

# Without XIPSEC_XDP_OBJ the installed xipsecd loads $pkglibdir/xipsec_xdp.o, never the build tree's.
if [ ! -e "$pkglibdir/xipsec_xdp.o" ]; then
	r=$XT_DIR/root-gw1
	xt_exec gw1 env XIPSEC_SADB="$(dp_sadb_of gw1)" "$r$sbindir/xipsecd" --inside in1 --outside out1 \
		--ctl "" --tun none > "$XT_DIR/noobj.log" 2>&1 && xt_fail "xipsecd started without its XDP program"
	grep -qF "cannot open XDP object $pkglibdir/xipsec_xdp.o" "$XT_DIR/noobj.log" ||
		{ cat "$XT_DIR/noobj.log" >&2; xt_fail "the installed xipsecd did not look for $pkglibdir/xipsec_xdp.o"; }
	xt_log "ok: the installed xipsecd looks for $pkglibdir/xipsec_xdp.o"
fi

# First boot: the state directory holds no sequence mark yet, and a missing mark may be a lost one,
# so xipsecd sends nothing under the keys xipsec-load.service loads ...
for gw in gw1 gw2; do unit_start_xipsecd "$gw"; done
for gw in gw1 gw2; do
	unit_run "$gw" xipsec-load.service ExecStart ||
		{ cat "$XT_DIR/$gw-xipsec-load.service-ExecStart.log" >&2; xt_fail "xipsec-load.service on $gw"; }
done
xt_wait 5 grep -q "spi 0x00001000.*no sequence mark" "$XT_DIR/xipsecd-gw1.log" ||
	{ tail -5 "$XT_DIR/xipsecd-gw1.log" >&2; xt_fail "xipsecd used a key with no mark that nobody said was new"; }
# ... until the operator says once that they are new (README, ipsecctl(8)); the marks then exist.
new_keys() { # new_keys GW: `ipsecctl --new-keys reload /etc/xipsec/ipsec.conf` by hand
	unit_ctl "$1" -v --new-keys reload "$XT_DIR/root-$1$sysconfdir/xipsec/ipsec.conf" ||
		{ cat "$XT_DIR/$1-ipsecctl.log" >&2; xt_fail "ipsecctl --new-keys reload on $1"; }
}
for gw in gw1 gw2; do new_keys "$gw"; done
dp_ping h1 10.2.0.2
xt_log "ok: ping through the tunnel keyed by xipsec-load.service, once the keys were said to be new"

sa_packets() { timeout 30 "$XT_DIR/root-gw1$sbindir/ipsecctl" --sadb "$(dp_sadb_of gw1)" --json show sa "$1" |
	"$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["sas"][0]["counters"]["packets"])'; }
before=$(sa_packets 0x1000)
[ "$before" -ge 5 ] || xt_fail "SA 0x1000 counted $before packets for 5 pings"

# `systemctl reload xipsecd` with a second tunnel added: the first keeps its SAs and counters.
for gw in gw1 gw2; do
	{ tun4 "$gw"; tun6 "$gw"; } > "$XT_DIR/root-$gw$sysconfdir/xipsec/ipsec.conf"
	unit_run "$gw" xipsecd.service ExecReload ||
		{ cat "$XT_DIR/$gw-xipsecd.service-ExecReload.log" >&2; xt_fail "xipsecd.service's ExecReload on $gw"; }
	grep -q "SAs: 2 kept, 0 updated, 2 added" "$XT_DIR/$gw-xipsecd.service-ExecReload.log" ||
		{ cat "$XT_DIR/$gw-xipsecd.service-ExecReload.log" >&2; xt_fail "reload on $gw did not keep the IPv4 SAs"; }
done
after=$(sa_packets 0x1000)
[ "$after" -ge "$before" ] || xt_fail "SA 0x1000's counter went from $before to $after across the reload"
# The IPv6 tunnel's keys have no marks either (its outbound sequence, its inbound window): said
# new by hand, both its SAs are updated.
for gw in gw1 gw2; do
	new_keys "$gw"
	grep -q "SAs: 2 kept, 2 updated, 0 added" "$XT_DIR/$gw-ipsecctl.log" ||
		{ cat "$XT_DIR/$gw-ipsecctl.log" >&2; xt_fail "--new-keys reload on $gw"; }
done
dp_ping h1 10.2.0.2
dp_ping h1 fd02::2
xt_log "ok: reload added the IPv6 tunnel, kept the IPv4 one (0x1000: $before packets before, $after after)"

# A broken file: the reload fails, nothing changes.
echo "esp tunnel from 10.1.7.0/24 nonsense" >> "$XT_DIR/root-gw1$sysconfdir/xipsec/ipsec.conf"
unit_run gw1 xipsecd.service ExecReload && xt_fail "reload of a broken ipsec.conf succeeded"
grep -q "ipsec.conf:3:.*nothing was changed" <(tr '\n' ' ' < "$XT_DIR/gw1-xipsecd.service-ExecReload.log") ||
	{ cat "$XT_DIR/gw1-xipsecd.service-ExecReload.log" >&2; xt_fail "broken file's message"; }
dp_ping h1 10.2.0.2
dp_ping h1 fd02::2
xt_log "ok: a broken ipsec.conf was refused and changed nothing"

# An environment file without interfaces: xipsecd says which option is empty.
r=$XT_DIR/root-gw1
sed -i 's/^XIPSECD_INSIDE=.*/XIPSECD_INSIDE=/' "$r$sysconfdir/xipsec/xipsec.env"
mapfile -d '' argv < <(unit_argv "$r" "$(unit_lines "$r" xipsecd.service ExecStart)")
xt_exec gw1 "${argv[@]}" > "$XT_DIR/noif.log" 2>&1 && xt_fail "xipsecd started without --inside"
grep -q "xipsecd: --inside: no interface name given" "$XT_DIR/noif.log" ||
	{ cat "$XT_DIR/noif.log" >&2; xt_fail "no message about the empty XIPSECD_INSIDE"; }

dp_finish
# no log line of any of the programs shows a key
for k in $K1 $K2 $K3 $K4; do
	if grep -rqiF "${k#0x}" "$XT_DIR"/*.log; then
		grep -rliF "${k#0x}" "$XT_DIR"/*.log >&2; xt_fail "a key appears in a log"
	fi
done
xt_log "ok: units' commands ran with their capability bounding sets; no key in any log"
