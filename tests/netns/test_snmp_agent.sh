#!/usr/bin/env bash
# tests/netns/test_snmp_agent.sh: xipsec-snmpd serves gw2's counters under XIPSEC-MIB through a real
# Net-SNMP master agent. gw2 runs snmpd on 127.0.0.1:1161 inside its namespace (private config and
# persistent directory, AgentX on a private socket) with the access policy of xipsec-snmpd(8):
# SNMPv3 only, authPriv (SHA + AES) user, read-only view of the xipsec subtree; plus, for this test
# only, a read-write user, to show that the subagent itself refuses SET. Traffic is known: exactly
# N_PING pings h1 -> h2 through the AES-GCM tunnel and N_NOPOL plaintext pings to gw2 without a
# policy. Over SNMP (MIB names resolved with snmpd/mib/): every SA's packet and octet counters equal the
# SADB's (ipsecctl), the Prometheus export's and N_PING, the drop-reason table counts the no_policy
# drops as ipsecctl does, the scalars and the worker table agree, the remaining lifetimes exist
# exactly where limits are set;
# v1/v2c, authNoPriv and wrong keys are refused, SET is notWritable; the subagent reconnects when
# snmpd restarts and stops cleanly on SIGTERM. The subagent runs as its unit runs it: an unprivileged
# user (uid and gid MON, no capability) in the group of gw2's counters view and of the AgentX
# socket, which cannot open the SADB (its figures come from the view, never from the keys' file).
# SPIs of 2^31 and more (every one IKE allocates)
# are rows like the others: 0x80000000, 0xc0000001 and 0xffffffff walk in order and answer a GET.
# Notifications reach snmptrapd through the master (v2c trap sink, 127.0.0.1:1162): an SA added
# (xipsecSaUp), deleted (xipsecSaDown), and the dataplane stopped (xipsecDataplaneDown).
. "$top_srcdir/tests/netns/lib.sh"
xt_require ip ethtool ping snmpd snmptrapd snmpget snmpwalk snmpbulkwalk snmpset snmptranslate
. "$top_srcdir/tests/netns/test_dp_common.sh"
CTL="$top_builddir/ipsecctl/ipsecctl"
AGENT="$top_builddir/snmpd/xipsec-snmpd"
[ -x "$CTL" ] || xt_skip "ipsecctl not built"
[ -x "$AGENT" ] || xt_skip "xipsec-snmpd not built (configure found no libsnmp-dev)"

N_PING=7 N_NOPOL=3 MON=64999
MIBDIRS="$top_srcdir/snmpd/mib/ietf:$top_srcdir/snmpd/mib"
SD="$XT_DIR/snmp"
SOCK="$SD/agentx.sock"
PORT=1161 TRAP_PORT=1162
USER=xsmon AUTH=xs-auth-pass-1 PRIV=xs-priv-pass-1
V3="-v3 -l authPriv -u $USER -a SHA -A $AUTH -x AES -X $PRIV"
mkdir -p "$SD/persist"
# the monitoring user passes through the test's directory to the view and the AgentX socket
chmod 0711 "$XT_DIR"
# Net-SNMP's client tools keep state in a persistent directory too, and say so on stderr the first
# time they create its cert_indexes/ (on a fresh machine /var/lib/snmp has none): they get one of
# the test's own, already made, so that their stderr carries only what the module causes, and the
# machine's /var/lib/snmp is not written.
export SNMP_PERSISTENT_DIR="$SD/client"
mkdir -p "$SD/client/cert_indexes"

# The MIB loads in Net-SNMP (names below resolve through it) and translates without complaint.
snmptranslate -m XIPSEC-MIB -M "$MIBDIRS" -Tp XIPSEC-MIB::xipsecMIB > "$SD/tp.txt" 2> "$SD/tp.err" ||
	xt_fail "snmptranslate -Tp: $(cat "$SD/tp.err")"
[ ! -s "$SD/tp.err" ] || xt_fail "snmptranslate complained: $(cat "$SD/tp.err")"
grep -q 'Counter64 xipsecSaPackets(11)' "$SD/tp.txt" || xt_fail "no xipsecSaPackets in -Tp: $(head "$SD/tp.txt")"
# added to the default MIB list the way an operator would: whatever the system's own modules lack
# (Debian main ships no IETF MIBs), nothing is said about XIPSEC-MIB
snmptranslate -m +XIPSEC-MIB -M "+$MIBDIRS" -Tp > "$SD/tp-all.txt" 2> "$SD/tp-all.err" ||
	xt_fail "snmptranslate -m +XIPSEC-MIB -Tp: $(tail -5 "$SD/tp-all.err")"
grep -q 'xipsecSaPackets' "$SD/tp-all.txt" || xt_fail "-m +XIPSEC-MIB: no xipsecSaPackets in the tree"
! grep -i 'xipsec' "$SD/tp-all.err" || xt_fail "-m +XIPSEC-MIB: complaints about the module"
[ "$(snmptranslate -m XIPSEC-MIB -M "$MIBDIRS" -On XIPSEC-MIB::xipsecSaPackets)" = .1.3.6.1.4.1.32473.1.2.1.11 ] ||
	xt_fail "xipsecSaPackets has another OID"

dp_topo 1
# IPv4 only: the kernels' IPv6 chatter would reach the dataplanes without a policy and blur the exact
# drop counts below.
dp_ipv4_only
# An inbound SA with lifetimes that no traffic uses (its limits show as remaining lifetime), and
# one with the highest SPI there is.
printf 'sa esp tunnel from 192.0.2.1 to 192.0.2.2 spi 0x3000 in reqid 9 enc aes128gcm16 key %s %s\n' \
	0x0102030405060708090a0b0c0d0e0f1011121314 'soft time 1h packets 1000 hard time 2h bytes 5000000' > "$XT_DIR/lt.conf"
printf 'sa esp tunnel from 192.0.2.1 to 192.0.2.2 spi 0xffffffff in reqid 11 enc aes128gcm16 key %s\n' \
	0x2122232425262728292a2b2c2d2e2f3031323334 >> "$XT_DIR/lt.conf"
timeout 30 "$CTL" --sadb "$(dp_sadb_of gw2)" --new-keys -f "$XT_DIR/lt.conf" || xt_fail "ipsecctl -f lt.conf"
# gw1 -> gw2 under SPI 0xc0000001, gw2 -> gw1 under 0x80000000: above 2^31, as IKE allocates them
SPI_IN=3221225473 SPI_OUT=2147483648 SPI_TOP=4294967295
dp_tunnel gcm 4 1 $SPI_IN $SPI_OUT
dp_start gw1
dp_start gw2 --stats-group "$MON"

cat > "$SD/snmpd.conf" <<EOF
agentaddress udp:127.0.0.1:$PORT
master agentx
agentXSocket $SOCK
agentXPerms 0660 0750 0 $MON
agentXTimeout 5
createUser $USER SHA "$AUTH" AES "$PRIV"
rouser -s usm $USER priv .1.3.6.1.4.1.32473
# test only: a user allowed to write, so that a refused SET is the subagent's doing
createUser xsadmin SHA "xs-admin-auth-1" AES "xs-admin-priv-1"
rwuser -s usm xsadmin priv .1.3.6.1.4.1.32473
# the subagent's notifications go where the master's configuration says: here, v2c to snmptrapd
trap2sink udp:127.0.0.1:$TRAP_PORT xstrap
EOF
echo "authCommunity log xstrap" > "$SD/snmptrapd.conf"
xt_bg gw2 snmptrapd env SNMP_PERSISTENT_DIR="$SD/trap-persist" MIBS= \
	snmptrapd -f -C -c "$SD/snmptrapd.conf" -On -Lf "$SD/traps.log" udp:127.0.0.1:$TRAP_PORT
xt_wait 10 grep -q "NET-SNMP version" "$SD/traps.log" || xt_fail "snmptrapd did not start"
# how many notifications N (xipsecNotifications.N) snmptrapd received
traps() { grep -o "OID: \.1\.3\.6\.1\.4\.1\.32473\.0\.$1\b" "$SD/traps.log" | wc -l; }
snmpd_start() {
	xt_bg gw2 snmpd env SNMP_PERSISTENT_DIR="$SD/persist" MIBS= \
		snmpd -f -C -c "$SD/snmpd.conf" -Lf "$SD/snmpd-$1.log" -p "$SD/snmpd.pid"
	xt_wait 10 test -S "$SOCK" || { cat "$SD/snmpd-$1.log" >&2; xt_fail "snmpd did not open $SOCK"; }
}
snmpd_start 1
xt_exec gw2 setpriv --reuid "$MON" --regid "$MON" --clear-groups "$PYTHON" -c 'import os, sys; os.open(sys.argv[1], os.O_RDONLY)' \
	"$(dp_sadb_of gw2)" 2>&1 | grep -q PermissionError || xt_fail "the monitoring user can open the SADB"
xt_bg gw2 snmp-agent setpriv --reuid "$MON" --regid "$MON" --clear-groups --inh-caps=-all \
	"$AGENT" --agentx-socket "$SOCK" --stats "$(dp_stats_of gw2)" --no-ike --ping 1 \
	--notify 1 ${XS_AGENT_DEBUG:-}
xt_wait 10 grep -q "subagent connected" "$XT_DIR/snmp-agent.log" ||
	{ cat "$XT_DIR/snmp-agent.log" >&2; xt_fail "xipsec-snmpd did not connect"; }

snmp() { # snmp CMD [-OPTIONS...] OIDS...: a v3 authPriv request in gw2, MIB names via snmpd/mib/
	local cmd=$1 opts=(); shift
	while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do opts+=("$1"); shift; done
	xt_exec gw2 "$cmd" $V3 -m XIPSEC-MIB -M "$MIBDIRS" -t 3 -r 1 "${opts[@]}" "127.0.0.1:$PORT" "$@"
}
val() { snmp snmpget -OqvU "$@"; }   # the value(s) only

# Known traffic: exactly N_PING echo requests and replies through the tunnel; N_NOPOL plaintext pings
# from gw1's own kernel to h2, for which gw2 has no policy (they get no answer).
xt_exec h1 ping -q -c "$N_PING" -i 0.1 -W 2 10.2.0.2 >/dev/null || xt_fail "ping through the tunnel failed"
xt_exec gw1 ping -q -c "$N_NOPOL" -i 0.1 -W 1 10.2.0.2 >/dev/null && xt_fail "ping without policy got through"
sleep 1.5   # the counters settle and the subagent's 1 s cache expires

# the SADB's own view (ipsecctl) of the same counters
sa_json() { timeout 30 "$CTL" --sadb "$(dp_sadb_of gw2)" --json show sa "$1" > "$XT_DIR/sa-$1.json" ||
	xt_fail "ipsecctl show sa $1"; }
ctl_c() { dp_json "$XT_DIR/sa-$1.json" "j['sas'][0]['counters']['$2']"; }
# gw2: inbound SPI_IN (dst 192.0.2.2), outbound SPI_OUT (dst 192.0.2.1); the index ends in the
# destination's InetAddressType (ipv4) and InetAddress (length 4, then the octets)
for row in "$SPI_IN inbound 192.0.2.2" "$SPI_OUT outbound 192.0.2.1"; do
	set -- $row
	sa_json "$1"
	idx="$1.$2.esp.ipv4.4.${3//./.}"
	got=$(val "xipsecSaPackets.$idx" "xipsecSaOctets.$idx" "xipsecSaDrops.$idx" "xipsecSaState.$idx" \
		"xipsecSaMode.$idx" "xipsecSaReqid.$idx" | tr '\n' ' ')
	read -r pk oc dr st mo rq <<< "$got"
	[ "$pk" = "$(ctl_c "$1" packets)" ] || xt_fail "SA $1: SNMP packets $pk, SADB $(ctl_c "$1" packets)"
	[ "$pk" = "$N_PING" ] || xt_fail "SA $1: $pk packets, $N_PING pings sent"
	[ "$oc" = "$(ctl_c "$1" bytes)" ] || xt_fail "SA $1: SNMP octets $oc, SADB $(ctl_c "$1" bytes)"
	[ "$oc" -ge $((N_PING * 84)) ] || xt_fail "SA $1: $oc octets for $N_PING pings"
	# the Prometheus export reads the same collection layer: the same number
	prom=$(timeout 30 "$CTL" --sadb "$(dp_sadb_of gw2)" metrics --no-ike |
		awk -v s="$(printf 'spi="0x%08x"' "$1")" '$1 ~ /^xipsec_sa_packets_total\{/ && index($1, s) { print $2 }')
	[ "$prom" = "$pk" ] || xt_fail "SA $1: SNMP packets $pk, ipsecctl metrics '$prom'"
	[ "$dr" = 0 ] && [ "$st" = mature ] && [ "$mo" = tunnel ] && [ "$rq" = 1 ] ||
		xt_fail "SA $1: drops/state/mode/reqid: $got"
done

# The whole SA table: one row per SA, in the index's order, each row's index answering a
# GET; the unused one with its limits, the others without.
for walk in snmpwalk snmpbulkwalk; do
	snmp $walk -On xipsecSaPackets > "$SD/walk-packets.txt" || xt_fail "$walk of xipsecSaPackets"
	want=".1.3.6.1.4.1.32473.1.2.1.11.12288.1.50.1.4.192.0.2.2
.1.3.6.1.4.1.32473.1.2.1.11.$SPI_OUT.2.50.1.4.192.0.2.1
.1.3.6.1.4.1.32473.1.2.1.11.$SPI_IN.1.50.1.4.192.0.2.2
.1.3.6.1.4.1.32473.1.2.1.11.$SPI_TOP.1.50.1.4.192.0.2.2"
	[ "$(cut -d' ' -f1 "$SD/walk-packets.txt")" = "$want" ] ||
		xt_fail "$walk of the SA table: $(cat "$SD/walk-packets.txt")"
done
for o in $(cut -d' ' -f1 "$SD/walk-packets.txt"); do
	snmp snmpget -On "$o" "${o/.1.2.1.11./.1.2.1.25.}" "${o/.1.2.1.11./.1.2.1.24.}" > "$SD/get.txt" ||
		xt_fail "GET $o"
	! grep -q "No Such" "$SD/get.txt" || xt_fail "GET of a walked row: $(cat "$SD/get.txt")"
done
# InetAddress has no display hint (its form depends on its type): Net-SNMP shows the octets
src=$(snmp snmpget -OqvU "xipsecSaSrcAddressType.$SPI_IN.inbound.esp.ipv4.4.192.0.2.2" \
	"xipsecSaSrcAddress.$SPI_IN.inbound.esp.ipv4.4.192.0.2.2" | tr '\n' ' ')
src=${src//[ \"]/}; [ "$src" = ipv4C0000201 ] || xt_fail "source address: $src"
[ "$(val xipsecSaCount.0 xipsecPolicyCount.0 xipsecWorkerCount.0 xipsecDataplaneUp.0 xipsecSadbUp.0 \
	xipsecIkeUp.0 | tr '\n' ' ')" = "4 2 1 true true false " ] || xt_fail "scalars: $(snmp snmpwalk xipsecGlobals)"
lt=12288.inbound.esp.ipv4.4.192.0.2.2
read -r hs ss sp hb <<< "$(val xipsecSaHardSecondsLeft.$lt xipsecSaSoftSecondsLeft.$lt \
	xipsecSaSoftPacketsLeft.$lt xipsecSaHardOctetsLeft.$lt | tr '\n' ' ')"
[ "$hs" -gt 7000 ] && [ "$hs" -le 7200 ] && [ "$ss" -gt 3400 ] && [ "$ss" -le 3600 ] &&
	[ "$sp" = 1000 ] && [ "$hb" = 5000000 ] || xt_fail "remaining lifetime: $hs $ss $sp $hb"
snmp snmpget xipsecSaHardSecondsLeft.$SPI_IN.inbound.esp.ipv4.4.192.0.2.2 | grep -q "No Such Instance" ||
	xt_fail "an SA without a time limit has a remaining time"
snmp snmpwalk xipsecSaHardSecondsLeft > "$SD/walk-hard.txt" || xt_fail "walk of a sparse column"
[ "$(grep -c . "$SD/walk-hard.txt")" = 1 ] && grep -q "\.12288\.inbound" "$SD/walk-hard.txt" ||
	xt_fail "sparse column walk: $(cat "$SD/walk-hard.txt")"

# Drops by reason, as ipsecctl counts them.
timeout 30 "$CTL" --sadb "$(dp_sadb_of gw2)" --json show stats > "$XT_DIR/stats.json" || xt_fail "show stats"
np=$(dp_json "$XT_DIR/stats.json" "j['stats']['drops']['no_policy']")
[ "$np" = "$N_NOPOL" ] || xt_fail "ipsecctl counts $np no_policy drops, $N_NOPOL sent"
[ "$(val 'xipsecDropPackets."no_policy"' 'xipsecDropNoSaPackets."no_policy"' 'xipsecDropSaPackets."no_policy"' \
	| tr '\n' ' ')" = "$np $np 0 " ] || xt_fail "no_policy row: $(snmp snmpget 'xipsecDropPackets."no_policy"')"
[ "$(val xipsecDropsTotal.0)" = "$(dp_json "$XT_DIR/stats.json" "j['stats']['drops_total']")" ] ||
	xt_fail "xipsecDropsTotal differs from ipsecctl's drops_total"
snmp snmpbulkwalk xipsecDropPackets > "$SD/walk-drops.txt" || xt_fail "walk of xipsecDropPackets"
[ "$(wc -l < "$SD/walk-drops.txt")" = "$(dp_json "$XT_DIR/stats.json" "len(j['stats']['drops'])")" ] ||
	xt_fail "drop table rows: $(wc -l < "$SD/walk-drops.txt")"
# worker 0 received at least the tunnel's and the plaintext packets and sent the tunnel's
read -r wrx wtx <<< "$(val xipsecWorkerRxPackets.0 xipsecWorkerTxPackets.0 | tr '\n' ' ')"
[ "$wrx" -ge $((2 * N_PING + N_NOPOL)) ] && [ "$wtx" -ge $((2 * N_PING)) ] || xt_fail "worker 0: rx $wrx tx $wtx"

# Access policy: v1 and v2c communities, authNoPriv and wrong keys get nothing; SET is refused by
# the subagent even for a user the master lets write.
for v in 1 2c; do
	xt_exec gw2 snmpget -v "$v" -c public -t 1 -r 0 "127.0.0.1:$PORT" .1.3.6.1.4.1.32473.1.1.2.0 \
		> "$SD/v$v.out" 2>&1 && xt_fail "SNMPv$v community read answered: $(cat "$SD/v$v.out")"
	grep -q "Timeout" "$SD/v$v.out" || xt_fail "SNMPv$v: $(cat "$SD/v$v.out")"
done
xt_exec gw2 snmpget -v3 -l authNoPriv -u "$USER" -a SHA -A "$AUTH" -t 2 -r 0 "127.0.0.1:$PORT" \
	.1.3.6.1.4.1.32473.1.1.2.0 > "$SD/anp.out" 2>&1
grep -q "Gauge32" "$SD/anp.out" && xt_fail "authNoPriv read answered: $(cat "$SD/anp.out")"
xt_exec gw2 snmpget -v3 -l authPriv -u "$USER" -a SHA -A wrong-auth-pass -x AES -X "$PRIV" -t 2 -r 0 \
	"127.0.0.1:$PORT" .1.3.6.1.4.1.32473.1.1.2.0 > "$SD/wrong.out" 2>&1 &&
	xt_fail "a wrong authentication key was accepted: $(cat "$SD/wrong.out")"
xt_exec gw2 snmpset -v3 -l authPriv -u xsadmin -a SHA -A xs-admin-auth-1 -x AES -X xs-admin-priv-1 \
	-t 3 -r 0 "127.0.0.1:$PORT" .1.3.6.1.4.1.32473.1.2.1.7.$SPI_IN.1.50.1.4.192.0.2.2 u 5 > "$SD/set.out" 2>&1 &&
	xt_fail "SET accepted: $(cat "$SD/set.out")"
grep -q "notWritable" "$SD/set.out" || xt_fail "SET: $(cat "$SD/set.out")"
[ "$(val xipsecSaReqid.$SPI_IN.inbound.esp.ipv4.4.192.0.2.2)" = 1 ] || xt_fail "SET changed the reqid"

# Notifications: none for the SAs there when the subagent started; one xipsecSaUp when an SA is
# added, one xipsecSaDown when it is deleted, each naming the SA's row.
[ "$(traps 1)" = 0 ] && [ "$(traps 2)" = 0 ] || xt_fail "notifications for no change: $(cat "$SD/traps.log")"
new=4294967294   # 0xfffffffe
printf 'sa esp tunnel from 192.0.2.1 to 192.0.2.2 spi 0xfffffffe in reqid 12 enc aes128gcm16 key %s\n' \
	0x4142434445464748494a4b4c4d4e4f5051525354 > "$XT_DIR/new.conf"
timeout 30 "$CTL" --sadb "$(dp_sadb_of gw2)" --new-keys -f "$XT_DIR/new.conf" || xt_fail "ipsecctl -f new.conf"
# snmptrapd writes a notification's variables on one line
xt_wait 10 grep -q "32473\.0\.1	.*32473\.1\.2\.1\.24\.$new\.1\.50\.1\.4\.192\.0\.2\.2 = INTEGER: 1	" "$SD/traps.log" ||
	xt_fail "no xipsecSaUp for the new SA: $(cat "$SD/traps.log")"
timeout 30 "$CTL" --sadb "$(dp_sadb_of gw2)" sa delete esp 0xfffffffe dst 192.0.2.2 || xt_fail "sa delete"
xt_wait 10 grep -q "32473\.0\.2	.*32473\.1\.2\.1\.7\.$new\.1\.50\.1\.4\.192\.0\.2\.2 = Gauge32: 12	" "$SD/traps.log" ||
	xt_fail "no xipsecSaDown for the deleted SA: $(cat "$SD/traps.log")"
[ "$(traps 1)" = 1 ] && [ "$(traps 2)" = 1 ] || xt_fail "one notification per change: $(cat "$SD/traps.log")"

# The master agent restarts: the subagent (same process) reconnects within its ping interval.
agent_pid=$(pgrep -P "$(xt_pid snmp-agent)" -f xipsec-snmpd)
xt_stop snmpd TERM
rm -f "$SOCK"
snmpd_start 2
xt_wait 15 sh -c "[ \$(grep -c 'subagent connected' '$XT_DIR/snmp-agent.log') -ge 2 ]" ||
	{ cat "$XT_DIR/snmp-agent.log" >&2; xt_fail "xipsec-snmpd did not reconnect"; }
[ "$(pgrep -P "$(xt_pid snmp-agent)" -f xipsec-snmpd)" = "$agent_pid" ] || xt_fail "the subagent restarted"
xt_wait 10 sh -c "[ \"\$(timeout 10 nsenter --net=/run/netns/$(xt_ns gw2) snmpget $V3 -m XIPSEC-MIB -M '$MIBDIRS' \
	-t 2 -r 0 -OqvU 127.0.0.1:$PORT xipsecSaPackets.$SPI_IN.inbound.esp.ipv4.4.192.0.2.2)\" = $N_PING ]" ||
	xt_fail "no answer after the master's restart"

# The dataplane stops: its hold on the SADB goes, and xipsecDataplaneDown says so.
xt_stop xipsecd-gw2 TERM
xt_wait 10 sh -c "[ \$(grep -o 'OID: .1.3.6.1.4.1.32473.0.4' '$SD/traps.log' | wc -l) = 1 ]" ||
	xt_fail "no xipsecDataplaneDown: $(cat "$SD/traps.log")"
grep -q "32473.1.1.7.0 = INTEGER: 2" "$SD/traps.log" || xt_fail "xipsecDataplaneDown: $(cat "$SD/traps.log")"

xt_stop snmp-agent TERM
grep -q "stopped by signal 15" "$XT_DIR/snmp-agent.log" ||
	{ cat "$XT_DIR/snmp-agent.log" >&2; xt_fail "xipsec-snmpd did not stop cleanly"; }
if grep -q "AddressSanitizer\|runtime error\|LeakSanitizer" "$XT_DIR/snmp-agent.log"; then
	cat "$XT_DIR/snmp-agent.log" >&2; xt_fail "sanitizer report from xipsec-snmpd"
fi
xt_stop snmpd TERM
xt_stop snmptrapd TERM
dp_finish
exit 0
