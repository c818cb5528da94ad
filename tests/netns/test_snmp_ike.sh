#!/usr/bin/env bash
# tests/netns/test_snmp_ike.sh: XIPSEC-MIB's SA table and notifications over IKE-negotiated SAs.
# Two gateways run xipsec-iked and xipsecd on one SADB each (topology of test_dp_common.sh) and
# negotiate CHILD SA "net" of connection "v2"; on gw1 a Net-SNMP master agent (127.0.0.1:1161, AgentX
# on a private socket, SNMPv3 authPriv read-only user) serves xipsec-snmpd's tables. Over SNMP:
#  - a walk of the SA table lists exactly the SPIs the SADB holds (`ipsecctl --json show sa`; charon
#    allocates them from 0xc0000000, so all are 2^31 and more), and a GET of each walked row's index
#    answers with that row, its reqid the SADB's;
#  - the master forwards the subagent's notifications as SNMPv3 authPriv traps (trapsess with a fixed
#    engine ID, which snmptrapd knows the user under): terminating the CHILD SA sends xipsecSaDown
#    for both of its SAs, initiating it again xipsecSaUp for both new ones, and nothing else.
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
xt_require ethtool ping snmpd snmptrapd snmpget snmpwalk
ike_require
. "$top_srcdir/tests/netns/test_dp_common.sh"
CTL="$top_builddir/ipsecctl/ipsecctl"
AGENT="$top_builddir/snmpd/xipsec-snmpd"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
[ -x "$AGENT" ] || xt_skip "xipsec-snmpd not built (configure found no libsnmp-dev)"

MIBDIRS="$top_srcdir/snmpd/mib/ietf:$top_srcdir/snmpd/mib"
SD="$XT_DIR/snmp"
SOCK="$SD/agentx.sock"
PORT=1161 TRAP_PORT=1162
USER=xsmon AUTH=xs-auth-pass-1 PRIV=xs-priv-pass-1
TUSER=xstrap TAUTH=xs-trap-auth-1 TPRIV=xs-trap-priv-1 ENGINE=0x8000b5e9030102030405
V3="-v3 -l authPriv -u $USER -a SHA -A $AUTH -x AES -X $PRIV"
mkdir -p "$SD/persist" "$SD/trap-persist" "$SD/client/cert_indexes"
# the client tools' persistent state stays in the run (see test_snmp_agent.sh)
export SNMP_PERSISTENT_DIR="$SD/client"

dp_topo 1
ike_dirs gw1 "$DP_SADB_gw1"
ike_dirs gw2 "$DP_SADB_gw2"
ike_swanctl gw1 192.0.2.1 192.0.2.2 conn v2 2 aes128gcm16-prfsha256-x25519 \
	child net 10.1.0.0/24 10.2.0.0/24 aes128gcm16
ike_swanctl gw2 192.0.2.2 192.0.2.1 conn v2 2 aes128gcm16-prfsha256-x25519 \
	child net 10.2.0.0/24 10.1.0.0/24 aes128gcm16
ike_start gw1
ike_start gw2
dp_start gw1
dp_start gw2
ike_ctl gw1 --initiate --ike v2 --child net >/dev/null || { ike_logs; xt_fail "initiate failed"; }
dp_ping h1 10.2.0.2

cat > "$SD/snmpd.conf" <<EOF
agentaddress udp:127.0.0.1:$PORT
master agentx
agentXSocket $SOCK
agentXTimeout 5
createUser $USER SHA "$AUTH" AES "$PRIV"
rouser -s usm $USER priv .1.3.6.1.4.1.32473
trapsess -v 3 -u $TUSER -l authPriv -a SHA -A $TAUTH -x AES -X $TPRIV -e $ENGINE udp:127.0.0.1:$TRAP_PORT
EOF
cat > "$SD/snmptrapd.conf" <<EOF
createUser -e $ENGINE $TUSER SHA $TAUTH AES $TPRIV
authUser log $TUSER priv
EOF
xt_bg gw1 snmptrapd env SNMP_PERSISTENT_DIR="$SD/trap-persist" MIBS= \
	snmptrapd -f -C -c "$SD/snmptrapd.conf" -On -Lf "$SD/traps.log" udp:127.0.0.1:$TRAP_PORT
xt_wait 10 grep -q "NET-SNMP version" "$SD/traps.log" || xt_fail "snmptrapd did not start"
xt_bg gw1 snmpd env SNMP_PERSISTENT_DIR="$SD/persist" MIBS= \
	snmpd -f -C -c "$SD/snmpd.conf" -Lf "$SD/snmpd.log" -p "$SD/snmpd.pid"
xt_wait 10 test -S "$SOCK" || { cat "$SD/snmpd.log" >&2; xt_fail "snmpd did not open $SOCK"; }
xt_bg gw1 snmp-agent "$AGENT" --agentx-socket "$SOCK" --stats "$(dp_stats_of gw1)" \
	--ike-run "$XT_DIR/gw1/run" --ping 1 --notify 1
xt_wait 10 grep -q "subagent connected" "$XT_DIR/snmp-agent.log" ||
	{ cat "$XT_DIR/snmp-agent.log" >&2; xt_fail "xipsec-snmpd did not connect"; }

snmp() { # snmp CMD [-OPTIONS...] OIDS...: a v3 authPriv request in gw1, MIB names via snmpd/mib/
	local cmd=$1 opts=(); shift
	while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do opts+=("$1"); shift; done
	xt_exec gw1 "$cmd" $V3 -m XIPSEC-MIB -M "$MIBDIRS" -t 3 -r 1 "${opts[@]}" "127.0.0.1:$PORT" "$@"
}
# sadb_spis: "SPI REQID" per SA of gw1's SADB, sorted
sadb_spis() {
	timeout 30 "$CTL" --sadb "$DP_SADB_gw1" --json show sa > "$XT_DIR/sas.json" || xt_fail "ipsecctl show sa"
	"$PYTHON" -c 'import json, sys
for s in json.load(open(sys.argv[1]))["sas"]: print(s["spi"], s["reqid"])' "$XT_DIR/sas.json" | sort
}
# how many notifications N (xipsecNotifications.N) snmptrapd received
traps() { grep -o "OID: \.1\.3\.6\.1\.4\.1\.32473\.0\.$1\b" "$SD/traps.log" | wc -l; }
# has_trap N SPI: notification N names SPI's row (snmptrapd writes a notification on one line)
has_trap() { grep -q "OID: \.1\.3\.6\.1\.4\.1\.32473\.0\.$1	.*\.32473\.1\.2\.1\.7\.$2\." "$SD/traps.log"; }
sleep 1.5   # the subagent's 1 s cache expires: the table is the SADB of now

# The SA table lists the SADB's SAs, no more, no fewer; each walked row answers a GET.
sadb_spis > "$SD/sadb.txt"
[ "$(wc -l < "$SD/sadb.txt")" = 2 ] || xt_fail "gw1's SADB: $(cat "$SD/sadb.txt")"
while read -r spi _; do
	[ "$spi" -ge 3221225472 ] || xt_fail "SPI $spi below 0xc0000000"
done < "$SD/sadb.txt"
snmp snmpwalk -On xipsecSaReqid > "$SD/walk.txt" || xt_fail "snmpwalk of xipsecSaReqid"
# .1.3.6.1.4.1.32473.1.2.1.7.SPI.DIR... = Gauge32: REQID -> "SPI REQID"
sed -n 's/^\.1\.3\.6\.1\.4\.1\.32473\.1\.2\.1\.7\.\([0-9]*\)\..* = Gauge32: \([0-9]*\)$/\1 \2/p' \
	"$SD/walk.txt" | sort > "$SD/walked.txt"
[ "$(wc -l < "$SD/walk.txt")" = "$(wc -l < "$SD/walked.txt")" ] || xt_fail "walk: $(cat "$SD/walk.txt")"
diff "$SD/sadb.txt" "$SD/walked.txt" >&2 || xt_fail "the SA table differs from the SADB (SPI, reqid)"
for o in $(cut -d' ' -f1 "$SD/walk.txt"); do
	spi=${o#.1.3.6.1.4.1.32473.1.2.1.7.}; spi=${spi%%.*}
	got=$(snmp snmpget -On "$o") || xt_fail "GET $o"
	[ "$got" = "$o = Gauge32: $(awk -v s="$spi" '$1 == s { print $2 }' "$SD/sadb.txt")" ] ||
		xt_fail "GET of row SPI $spi: $got"
done

# Notifications: none for the SAs there when the subagent started; terminating the CHILD SA takes
# both its SAs down, initiating it brings two new ones up.
[ "$(traps 1)" = 0 ] && [ "$(traps 2)" = 0 ] || xt_fail "notifications for no change: $(cat "$SD/traps.log")"
ike_ctl gw1 --terminate --child net >/dev/null || { ike_logs; xt_fail "terminate --child net failed"; }
xt_wait 10 ike_nsa gw1 0 || { ike_dump gw1 >&2; xt_fail "gw1 kept SAs after terminate"; }
while read -r spi _; do
	xt_wait 10 has_trap 2 "$spi" || xt_fail "no xipsecSaDown for SPI $spi: $(cat "$SD/traps.log")"
done < "$SD/sadb.txt"
ike_ctl gw1 --initiate --child net >/dev/null || { ike_logs; xt_fail "initiate --child net again failed"; }
xt_wait 10 ike_nsa gw1 2 || { ike_dump gw1 >&2; xt_fail "gw1 has no new SAs"; }
sadb_spis > "$SD/sadb2.txt"
while read -r spi _; do
	grep -q "^$spi " "$SD/sadb.txt" && xt_fail "SPI $spi again after initiate"
	xt_wait 10 has_trap 1 "$spi" || xt_fail "no xipsecSaUp for SPI $spi: $(cat "$SD/traps.log")"
done < "$SD/sadb2.txt"
dp_ping h1 10.2.0.2
sleep 1.5   # one more notify interval: nothing further comes
[ "$(traps 1)" = 2 ] && [ "$(traps 2)" = 2 ] || xt_fail "one notification per SA: $(cat "$SD/traps.log")"

xt_stop snmp-agent TERM
grep -q "stopped by signal 15" "$XT_DIR/snmp-agent.log" ||
	{ cat "$XT_DIR/snmp-agent.log" >&2; xt_fail "xipsec-snmpd did not stop cleanly"; }
if grep -q "AddressSanitizer\|runtime error\|LeakSanitizer" "$XT_DIR/snmp-agent.log"; then
	cat "$XT_DIR/snmp-agent.log" >&2; xt_fail "sanitizer report from xipsec-snmpd"
fi
xt_stop snmpd TERM
xt_stop snmptrapd TERM
dp_finish
ike_check_logs
exit 0
