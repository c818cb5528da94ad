#!/usr/bin/env bash
# tests/netns/test_sadb_default.sh: the default SADB, /run/xipsec/xipsec.sadb, in every program that
# opens it, with no --sadb and no $XIPSEC_SADB. The test runs in a mount namespace of its own with a
# tmpfs on /run, so the machine's /run/xipsec is never touched (its network namespaces live there
# too, and go with it). `ipsecctl --new-keys load` makes /run/xipsec (0700, root) and the SADB (0600);
# xipsecd runs on it, `xipsecd --status` (on its default control socket) and `ipsecctl show` read
# it; xipsec-iked, when built, opens it too. Then a /run/xipsec someone else made first, owned by
# uid 65534 or with mode 0777, is refused by ipsecctl, xipsecd and xipsec-iked with a message naming
# the directory, what was found and what is expected, and nothing is made in it.
if [ -z "${XT_PRIVATE_RUN:-}" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (a mount namespace)"; exit 77; }
	command -v unshare >/dev/null || { echo "SKIP: unshare missing"; exit 77; }
	XT_PRIVATE_RUN=1 exec unshare -m --propagation private -- "$BASH" "$0" "$@"
fi
mount -t tmpfs -o mode=0755,size=16m xipsec-test-run /run || { echo "FAIL: tmpfs on /run"; exit 1; }
unset XIPSEC_SADB
. "$top_srcdir/tests/netns/lib.sh"
xt_require nsenter stat
. "$top_srcdir/tests/netns/test_dp_common.sh"
CTL="$top_builddir/ipsecctl/ipsecctl"
IKED="$top_builddir/ike/xipsec-iked"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
RUN_DIR=/run/xipsec
SADB=$RUN_DIR/xipsec.sadb

dp_topo 1
cat > "$XT_DIR/gw1.conf" <<'CONF'
esp tunnel from 10.1.0.0/24 to 10.2.0.0/24 local 192.0.2.1 peer 192.0.2.2 spi 0x1000:0x1001 \
    enc aes128gcm16 key 0x0102030405060708090a0b0c0d0e0f1011121314:0x2122232425262728292a2b2c2d2e2f3031323334
CONF

# ipsecctl: the directory and the SADB made where nothing was, ours and closed to others.
timeout 30 "$CTL" --new-keys load "$XT_DIR/gw1.conf" || xt_fail "ipsecctl load with the default SADB"
[ "$(stat -c '%F %u %a' "$RUN_DIR")" = "directory 0 700" ] ||
	xt_fail "$RUN_DIR is $(stat -c '%F %u %a' "$RUN_DIR"), expected a directory of uid 0, mode 700"
[ "$(stat -c '%F %u %a' "$SADB")" = "regular file 0 600" ] ||
	xt_fail "$SADB is $(stat -c '%F %u %a' "$SADB"), expected a regular file of uid 0, mode 600"
timeout 30 "$CTL" show sa > "$XT_DIR/show.out" || xt_fail "ipsecctl show with the default SADB"
grep -q 0x00001000 "$XT_DIR/show.out" || { cat "$XT_DIR/show.out" >&2; xt_fail "ipsecctl show lists no SA 0x1000"; }

# xipsecd on the default SADB and its default control socket, read by `xipsecd --status`.
xt_bg gw1 xipsecd-gw1 "$XIPSECD" --inside in1 --outside out1 --tun none
xt_wait 20 "$XIPSECD" --status > /dev/null ||
	{ cat "$XT_DIR/xipsecd-gw1.log" >&2; xt_fail "xipsecd with the default SADB did not start"; }
sas=$("$XIPSECD" --status | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["sas"])')
[ "$sas" = 2 ] || xt_fail "xipsecd --status: $sas SAs, expected the 2 ipsecctl loaded"
dp_finish
xt_log "ok: ipsecctl load/show, xipsecd and xipsecd --status on $SADB"

iked_conf() { # the daemon's strongswan.conf: no connection, its own run directory
	mkdir -p "$XT_DIR/iked/conf" "$XT_DIR/iked/run"
	printf 'xipsec-iked {\n}\n' > "$XT_DIR/iked/conf/strongswan.conf"
}
if [ -x "$IKED" ]; then
	iked_conf
	xt_bg gw1 iked "$IKED" --conf-dir "$XT_DIR/iked/conf" --run-dir "$XT_DIR/iked/run"
	xt_wait 10 test -S "$XT_DIR/iked/run/charon.vici" ||
		{ cat "$XT_DIR/iked.log" >&2; xt_fail "xipsec-iked with the default SADB did not start"; }
	xt_stop iked
	xt_log "ok: xipsec-iked on $SADB"
fi

# A /run/xipsec made first by someone else: refused by every program, nothing made in it.
refused() { # refused WHAT LOG: the program failed and said why
	grep -q "$RUN_DIR: .*expected a directory owned by uid 0 with mode 0700" "$2" ||
		{ cat "$2" >&2; xt_fail "$1: no clear refusal of $RUN_DIR ($how)"; }
}
for how in "uid 65534" "mode 0777"; do
	rm -rf "$RUN_DIR"
	mkdir -m 0700 "$RUN_DIR"
	case $how in
	uid*) chown 65534 "$RUN_DIR" ;;
	mode*) chmod 0777 "$RUN_DIR" ;;
	esac
	timeout 30 "$CTL" --new-keys load "$XT_DIR/gw1.conf" > "$XT_DIR/ctl.log" 2>&1 &&
		xt_fail "ipsecctl load used a $RUN_DIR with $how"
	refused "ipsecctl load" "$XT_DIR/ctl.log"
	timeout 30 "$CTL" show > "$XT_DIR/show.log" 2>&1 && xt_fail "ipsecctl show used a $RUN_DIR with $how"
	refused "ipsecctl show" "$XT_DIR/show.log"
	xt_exec gw1 "$XIPSECD" --inside in1 --outside out1 --tun none --ctl "" > "$XT_DIR/dp.log" 2>&1 &&
		xt_fail "xipsecd ran on a $RUN_DIR with $how"
	refused xipsecd "$XT_DIR/dp.log"
	if [ -x "$IKED" ]; then
		xt_exec gw1 "$IKED" --conf-dir "$XT_DIR/iked/conf" --run-dir "$XT_DIR/iked/run" \
			> "$XT_DIR/iked-bad.log" 2>&1 && xt_fail "xipsec-iked ran on a $RUN_DIR with $how"
		refused xipsec-iked "$XT_DIR/iked-bad.log"
	fi
	[ -z "$(ls -A "$RUN_DIR")" ] || xt_fail "something was made in a $RUN_DIR with $how: $(ls -A "$RUN_DIR")"
	xt_log "ok: a $RUN_DIR with $how refused by every program"
done
rm -rf "$RUN_DIR"
exit 0
