#!/usr/bin/env bash
# tests/netns/test_units_ike.sh: the installed xipsec-iked.service on both gateways of the netns
# topology, next to xipsecd.service and xipsec-load.service (tests/netns/units_common.sh: each
# gateway its own DESTDIR root, the units' command lines read out of the installed unit files and run
# inside their capability bounding sets). Each xipsec-iked runs in a mount namespace of its own with
# a fresh /run, as under systemd (its run directory is /run/xipsec-iked on both). Checks: an IKEv2
# tunnel from the installed swanctl.conf, initiated by gw1's start_action = start before gw2 is up,
# carries a ping; ExecReload (SIGHUP to $MAINPID, then swanctl
# --load-all) loads a connection added to swanctl.conf and leaves the tunnel up; SIGTERM stops the
# daemon cleanly and removes the SAs it negotiated from the SADB.
. "$top_srcdir/tests/netns/lib.sh"
xt_require ping setpriv prlimit unshare nsenter /usr/sbin/swanctl
. "$top_srcdir/tests/netns/test_dp_common.sh"
. "$top_srcdir/tests/netns/units_common.sh"
[ -x "$top_builddir/ike/xipsec-iked" ] || xt_skip "xipsec-iked not built (strongSwan headers missing?)"

swanctl_conf() { # swanctl_conf ME PEER MYNET PEERNET START [EXTRA]: an IKEv2 PSK tunnel
	cat <<CONF
connections {
    site {
        version = 2
        local_addrs = $1
        remote_addrs = $2
        proposals = aes128gcm16-prfsha256-x25519
        local {
            auth = psk
            id = $1
        }
        remote {
            auth = psk
            id = $2
        }
        children {
            net {
                local_ts = $3
                remote_ts = $4
                esp_proposals = aes128gcm16
                start_action = $5
            }
        }
    }
${6:-}
}
secrets {
    ike-site {
        id-1 = 192.0.2.1
        id-2 = 192.0.2.2
        secret = "xipsec test key: not a real secret 0123456789"
    }
}
CONF
}
EXTRA='    extra {
        version = 2
        remote_addrs = 192.0.2.9
        local {
            auth = psk
        }
        remote {
            auth = psk
        }
        children {
            x {
            }
        }
    }'

dp_topo 1
unit_root gw1 "XIPSEC_IKED_OPTIONS=\"--debug 1\""
unit_root gw2 "XIPSEC_IKED_OPTIONS=\"--debug 1\""
swanctl_conf 192.0.2.1 192.0.2.2 10.1.0.0/24 10.2.0.0/24 start > "$XT_DIR/root-gw1$sysconfdir/xipsec/iked/swanctl.conf"
swanctl_conf 192.0.2.2 192.0.2.1 10.2.0.0/24 10.1.0.0/24 none > "$XT_DIR/root-gw2$sysconfdir/xipsec/iked/swanctl.conf"
for gw in gw1 gw2; do
	unit_start_xipsecd "$gw"
	unit_run "$gw" xipsec-load.service ExecStart ||
		{ cat "$XT_DIR/$gw-xipsec-load.service-ExecStart.log" >&2; xt_fail "xipsec-load.service on $gw"; }
done

# xipsec-iked.service's ExecStart in a mount namespace with its own /run (RuntimeDirectory made);
# the daemon's pid (MAINPID) is timeout's child: nsenter, unshare and sh exec into it.
iked_pid() { pgrep -P "$(xt_pid "iked-$1")"; }
iked_ns() { local gw=$1; shift; nsenter --mount="/proc/$(iked_pid "$gw")/ns/mnt" "$@"; }
start_iked() {
	local gw=$1 root=$XT_DIR/root-$1 argv=()
	mapfile -d '' argv < <(unit_argv "$root" "$(unit_lines "$root" xipsec-iked.service ExecStart)")
	UNIT_ENV=(ASAN_OPTIONS="detect_leaks=1:check_printf=0"
		  LSAN_OPTIONS="suppressions=$top_srcdir/ike/lsan.supp:print_suppressions=0")
	unit_wrap "$root" xipsec-iked.service
	UNIT_ENV=()
	xt_bg "$gw" "iked-$gw" unshare -m --propagation private -- sh -c \
		'mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -m 0700 /run/xipsec-iked && exec "$@"' sh \
		"${WRAP[@]}" "${argv[@]}"
	xt_wait 15 iked_ns "$gw" test -S /run/xipsec-iked/charon.vici ||
		{ cat "$XT_DIR/iked-$gw.log" >&2; xt_fail "xipsec-iked.service's ExecStart on $gw did not start"; }
}
# swanctl on the daemon's VICI socket, as an operator would run it
swanctl_gw() { local gw=$1; shift; iked_ns "$gw" env STRONGSWAN_CONF="$XT_DIR/root-$gw$sysconfdir/xipsec/iked/strongswan.conf" \
	timeout 30 /usr/sbin/swanctl "$@" --uri unix:///run/xipsec-iked/charon.vici; }
# gw1 initiates by itself (start_action = start) when it loads swanctl.conf, before gw2 runs: its
# retransmission reaches gw2 once that has started, and no swanctl command is needed.
start_iked gw1
sleep 2
start_iked gw2
xt_wait 30 xt_exec h1 ping -c 1 -W 1 10.2.0.2 ||
	{ cat "$XT_DIR/iked-gw1.log" "$XT_DIR/iked-gw2.log" >&2; xt_fail "no IKE tunnel from the installed swanctl.conf"; }
dp_ping h1 10.2.0.2
# a capability the unit lacks shows as a refused netlink request or socket option
if grep -E "Operation not permitted|might require CAP_" "$XT_DIR"/iked-gw*.log; then
	xt_fail "xipsec-iked lacks a capability under xipsec-iked.service's bounding set"
fi
grep -q "initiating 'net'" "$XT_DIR/iked-gw1.log" || xt_fail "gw1 did not initiate by its start_action"
xt_log "ok: ping through the tunnel xipsec-iked.service negotiated by itself (start_action = start)"

# `systemctl reload xipsec-iked` after adding a connection: both ExecReload lines, in its namespace.
swanctl_conf 192.0.2.1 192.0.2.2 10.1.0.0/24 10.2.0.0/24 start "$EXTRA" > "$XT_DIR/root-gw1$sysconfdir/xipsec/iked/swanctl.conf"
UNIT_VARS=("MAINPID=$(iked_pid gw1)")
UNIT_PREFIX=(nsenter --mount="/proc/$(iked_pid gw1)/ns/mnt")
for i in 1 2; do
	unit_run gw1 xipsec-iked.service ExecReload "$i" ||
		{ cat "$XT_DIR/gw1-xipsec-iked.service-ExecReload.log" >&2; xt_fail "xipsec-iked.service's ExecReload $i"; }
done
UNIT_VARS=() UNIT_PREFIX=()
xt_wait 5 grep -q "SIGHUP: reloading" "$XT_DIR/iked-gw1.log" || xt_fail "ExecReload sent no SIGHUP to the daemon"
swanctl_gw gw1 --list-conns > "$XT_DIR/conns" 2>&1
grep -q "^extra:" "$XT_DIR/conns" || { cat "$XT_DIR/conns" >&2; xt_fail "the added connection was not loaded"; }
dp_ping h1 10.2.0.2
xt_log "ok: reload loaded the added connection; the tunnel stayed up"

ike_sas() { timeout 30 "$XT_DIR/root-gw1$sbindir/ipsecctl" --sadb "$(dp_sadb_of gw1)" --json show sa |
	"$PYTHON" -c 'import json,sys; print(sum(1 for s in json.load(sys.stdin)["sas"] if s["ike_id"]))'; }
[ "$(ike_sas)" -ge 2 ] || xt_fail "no negotiated SAs in gw1's SADB"
xt_stop iked-gw1 TERM
grep -q "shutting down" "$XT_DIR/iked-gw1.log" || { cat "$XT_DIR/iked-gw1.log" >&2; xt_fail "xipsec-iked did not stop cleanly"; }
if grep -q "AddressSanitizer\|runtime error\|LeakSanitizer" "$XT_DIR/iked-gw1.log"; then
	cat "$XT_DIR/iked-gw1.log" >&2; xt_fail "sanitizer report from xipsec-iked"
fi
[ "$(ike_sas)" -eq 0 ] || xt_fail "xipsec-iked left $(ike_sas) negotiated SAs in the SADB"
xt_stop iked-gw2 TERM
dp_finish
xt_log "ok: xipsec-iked.service ran with CapabilityBoundingSet=$(unit_lines "$XT_DIR/root-gw1" xipsec-iked.service CapabilityBoundingSet)"
