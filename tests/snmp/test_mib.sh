#!/usr/bin/env bash
# tests/snmp/test_mib.sh: XIPSEC-MIB (snmpd/mib/XIPSEC-MIB.txt) is a clean SMIv2 module: libsmi's smilint
# finds nothing even at level 6 (every warning; it exits 0 either way, so its output is what counts), and Net-SNMP loads it from snmpd/mib/ with the IETF base modules of snmpd/mib/ietf/:
# every object of the module translates, and the OIDs the subagent registers and the notifications
# it sends (snmpd/snmp_mib.c) are the module's.
set -u
for c in smilint snmptranslate; do
	command -v "$c" >/dev/null || { echo "SKIP: needs $c (smitools, snmp)"; exit 77; }
done
mib="$top_srcdir/snmpd/mib"
# Net-SNMP's tools keep state in a persistent directory and say so on stderr the first time they
# create its cert_indexes/ (on a fresh machine, /var/lib/snmp has none): the test gives them a
# directory of its own, already made, so that their stderr carries only what the module causes.
SNMP_PERSISTENT_DIR=$(mktemp -d) || exit 1
export SNMP_PERSISTENT_DIR
trap 'rm -rf "$SNMP_PERSISTENT_DIR"' EXIT
mkdir "$SNMP_PERSISTENT_DIR/cert_indexes" || exit 1
out=$(SMIPATH="$mib/ietf:$mib" smilint -l 6 -s "$mib/XIPSEC-MIB.txt" 2>&1)
[ -z "$out" ] || { echo "FAIL: smilint -l 6:"; echo "$out"; exit 1; }
# the module really was read (a module smilint cannot find is an error too, but say it plainly)
SMIPATH="$mib/ietf:$mib" smidump -f identifiers "$mib/XIPSEC-MIB.txt" 2>/dev/null | grep -q xipsecSaDstAddress ||
	{ echo "FAIL: smilint did not read the module"; exit 1; }

tr() { snmptranslate -m XIPSEC-MIB -M "$mib/ietf:$mib" "$@"; }
err=$(tr -Tp XIPSEC-MIB::xipsecMIB 2>&1 >/dev/null)
[ -z "$err" ] || { echo "FAIL: snmptranslate: $err"; exit 1; }
n=$(tr -Tp XIPSEC-MIB::xipsecMIB 2>/dev/null | grep -c -- '-R-- ')
[ "$n" = 105 ] || { echo "FAIL: $n read-only objects in -Tp, the module has 105 (30 + 19 + 13 + 3 + 30 + 3 + 1 + 5 + 1)"; exit 1; }
# numeric OIDs the subagent registers, by name
while read -r name want; do
	got=$(tr -On "XIPSEC-MIB::$name" 2>&1)
	[ "$got" = "$want" ] || { echo "FAIL: $name is $got, the subagent serves $want"; exit 1; }
done <<'LIST'
xipsecMIB .1.3.6.1.4.1.32473
xipsecSaCount .1.3.6.1.4.1.32473.1.1.2
xipsecChildSaCount .1.3.6.1.4.1.32473.1.1.14
xipsecHomeAgentUp .1.3.6.1.4.1.32473.1.1.15
xipsecHomeAgentBindings .1.3.6.1.4.1.32473.1.1.16
xipsecHaBuReceived .1.3.6.1.4.1.32473.1.1.17
xipsecHaDadFailed .1.3.6.1.4.1.32473.1.1.29
xipsecHaExpired .1.3.6.1.4.1.32473.1.1.30
xipsecComplianceV5 .1.3.6.1.4.1.32473.2.1.5
xipsecHomeAgentGroup .1.3.6.1.4.1.32473.2.2.8
xipsecSaPackets .1.3.6.1.4.1.32473.1.2.1.11
xipsecSaHardPacketsLeft .1.3.6.1.4.1.32473.1.2.1.21
xipsecWorkerRxPackets .1.3.6.1.4.1.32473.1.3.1.2
xipsecWorkerDrops .1.3.6.1.4.1.32473.1.3.1.10
xipsecWorkerHandoffDecrypted .1.3.6.1.4.1.32473.1.3.1.14
xipsecDropNoSaPackets .1.3.6.1.4.1.32473.1.4.1.4
xipsecCompliance .1.3.6.1.4.1.32473.2.1.1
xipsecComplianceV2 .1.3.6.1.4.1.32473.2.1.2
xipsecSaSrcAddressType .1.3.6.1.4.1.32473.1.2.1.24
xipsecSaSrcAddress .1.3.6.1.4.1.32473.1.2.1.25
xipsecComplianceV3 .1.3.6.1.4.1.32473.2.1.3
xipsecComplianceV4 .1.3.6.1.4.1.32473.2.1.4
xipsecSaUp .1.3.6.1.4.1.32473.0.1
xipsecSaDown .1.3.6.1.4.1.32473.0.2
xipsecSaSoftExpired .1.3.6.1.4.1.32473.0.3
xipsecDataplaneDown .1.3.6.1.4.1.32473.0.4
xipsecNotificationGroup .1.3.6.1.4.1.32473.2.2.7
xipsecClusterUp .1.3.6.1.4.1.32473.1.5.1
xipsecClusterLeaseHeadroomMinSpi .1.3.6.1.4.1.32473.1.5.10
xipsecClusterForeign .1.3.6.1.4.1.32473.1.5.12
xipsecClusterMsgSent .1.3.6.1.4.1.32473.1.5.13
xipsecClusterTakeovers .1.3.6.1.4.1.32473.1.5.21
xipsecClusterSoloHardExpired .1.3.6.1.4.1.32473.1.5.23
xipsecClusterDropShort .1.3.6.1.4.1.32473.1.5.24
xipsecClusterDropMalformed .1.3.6.1.4.1.32473.1.5.30
xipsecClusterSegmentOwned .1.3.6.1.4.1.32473.1.6.1.2
xipsecClusterSegmentDropped .1.3.6.1.4.1.32473.1.6.1.4
xipsecClusterRoleChanged .1.3.6.1.4.1.32473.0.5
xipsecComplianceV6 .1.3.6.1.4.1.32473.2.1.6
xipsecClusterGroup .1.3.6.1.4.1.32473.2.2.9
xipsecHaBaStatusAcks .1.3.6.1.4.1.32473.1.7.1.2
xipsecHaNodeBuAccepted .1.3.6.1.4.1.32473.1.8.1.3
xipsecHaNodeBound .1.3.6.1.4.1.32473.1.8.1.7
xipsecHaNodeBaAcks .1.3.6.1.4.1.32473.1.9.1.2
xipsecComplianceV7 .1.3.6.1.4.1.32473.2.1.7
xipsecHomeAgentNodeGroup .1.3.6.1.4.1.32473.2.2.11
LIST
echo "PASS: XIPSEC-MIB"
