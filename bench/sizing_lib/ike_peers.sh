#!/bin/bash
# bench/sizing_lib/ike_peers.sh: the two IKE gateways of the sizing study's negotiation section
# (bench/sizing_lib/ike.py), built from the IKE netns tests' helpers (tests/netns/lib.sh and
# ike_common.sh, whose cleanup traps remove everything at exit) and driven by ike.py over stdin/stdout.
# A (initiator) and B (responder) run xipsec-iked with one authentication method AUTH (psk, rsa or
# ecdsa: certificates from strongSwan's pki); for every DH group G of GROUPS (swanctl names, comma
# separated) they have an IKEv1 connection v1-G and an IKEv2 connection v2-G with NCHILD CHILD SAs
# q1..qN (no PFS) and p1..pN (PFS with G); with MAXQM > 0 also an IKEv1 connection mq (first group)
# with CHILD SAs m1..mMAXQM for the maxqm series. Each group's connections use their own pair of
# addresses (charon picks an IKEv1 responder's connection by address before it sees an identity).
# A captures the IKE packets on its interface from start to quit (pcap file CAP).
#
# usage: ike_peers.sh BUILDDIR AUTH GROUPS NCHILD MAXQM CAP
# Prints "ready URI STATUS PID_A PID_B MHZ" once both daemons listen, then reads commands:
#   vici ARGS...   bench/ike-bench-vici URI ARGS (its output lines)
#   cpu            "cpu NS_A NS_B": CPU time (ns) both daemons' threads used so far
#   maxqm M        the initiator's maxqm set at run time (`ipsecctl ike maxqm set M`)
#   loss P         P % of B's IKE packets in either direction dropped at random (nftables); 0 = none
#   status KEY     a counter of A's status file
#   flush          wait until both SADBs are empty (after a terminate)
#   counters       the UDP/IP counters of both namespaces that are not zero
#   quit
# every reply ends with a line "= RC" (0 = the command succeeded).
set -u
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
top_builddir=$(cd "$1" && pwd) || { echo "ike_peers: no build directory $1" >&2; exit 2; }
AUTH=$2 GROUPS_=$3 NCHILD=$4 MAXQM=$5 CAP=$6
export top_srcdir top_builddir
# lib.sh's time limits: every background process (the daemons, the capture) and every command
# shellcheck disable=SC2034
XT_BG_TIMEOUT=3600
# shellcheck disable=SC2034
XT_TIMEOUT=60
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
ike_require
xt_require nft tcpdump
VICI="$top_builddir/bench/ike-bench-vici"
[ -x "$VICI" ] || xt_fail "$VICI not built"
ike_pair
for s in A B; do ike_dirs $s; done

IFS=, read -r -a groups <<< "$GROUPS_"
# addresses: group j: A 10.9.0.(10+j), B 10.9.0.(20+j); the maxqm connection: A 10.9.0.30, B 10.9.0.40
for j in "${!groups[@]}"; do
	ip -n "$(xt_ns A)" addr add "10.9.0.$((10 + j))/24" dev va
	ip -n "$(xt_ns B)" addr add "10.9.0.$((20 + j))/24" dev vb
done
ip -n "$(xt_ns A)" addr add 10.9.0.30/24 dev va
ip -n "$(xt_ns B)" addr add 10.9.0.40/24 dev vb
# no IPv6 on the link: its link-local address completing duplicate address detection a second or two
# after the link came up is an address event charon reacts to, in the middle of the first measurements
xt_exec A sysctl -qw net.ipv6.conf.va.disable_ipv6=1
xt_exec B sysctl -qw net.ipv6.conf.vb.disable_ipv6=1

case $AUTH in
psk) auth=() ;;
ecdsa|rsa)
	xt_require pki
	if [ "$AUTH" = ecdsa ]; then
		ike_certs A B
	else
		# ike_certs' RSA twin: a test CA and one RSA-3072 certificate per side
		p="$XT_DIR/pki"; mkdir -p "$p"
		pki --gen --type rsa --size 3072 --outform pem > "$p/ca.key" 2>>"$XT_DIR/pki.log" || xt_fail "pki --gen failed"
		pki --self --ca --lifetime 2 --in "$p/ca.key" --dn "C=CH, O=xipsec test, CN=xipsec test CA" \
			--outform pem > "$p/ca.crt" 2>>"$XT_DIR/pki.log" || xt_fail "pki --self failed"
		for s in A B; do
			d="$XT_DIR/$s/conf"; mkdir -p "$d/x509" "$d/x509ca" "$d/private"
			cp "$p/ca.crt" "$d/x509ca/"
			pki --gen --type rsa --size 3072 --outform pem > "$d/private/gw.key" 2>>"$XT_DIR/pki.log"
			pki --pub --in "$d/private/gw.key" 2>>"$XT_DIR/pki.log" |
				pki --issue --lifetime 2 --cacert "$p/ca.crt" --cakey "$p/ca.key" \
				--dn "C=CH, O=xipsec test, CN=gw-$s" --san "gw-$s" --outform pem > "$d/x509/gw.crt" 2>>"$XT_DIR/pki.log" ||
				xt_fail "pki --issue for $s failed"
		done
	fi
	auth=(auth=pubkey) ;;
*) xt_fail "unknown authentication $AUTH (psk, rsa, ecdsa)" ;;
esac

conf() { # SIDE MYBASE PEERBASE MYHOST PEERHOST MYID PEERID
	local side=$1 j g v i spec=() ids
	if [ "$AUTH" = psk ]; then ids=(id="$6" peer_id="$7"); else ids=(id="gw-$side" peer_id="gw-$([ "$side" = A ] && echo B || echo A)"); fi
	for j in "${!groups[@]}"; do
		g=${groups[$j]}
		for v in 1 2; do
			spec+=(conn "v$v-$g" "$v" "aes128-sha256-$g" local_addrs="10.9.0.$(($4 + j))"
				remote_addrs="10.9.0.$(($5 + j))" "${auth[@]}" "${ids[@]}")
			for i in $(seq 1 "$NCHILD"); do
				spec+=(child "q$i" "10.$(($2 + 2 * j + v - 1)).$i.0/24" "10.$(($3 + 2 * j + v - 1)).$i.0/24" aes128gcm16
				       child "p$i" "10.$(($2 + 2 * j + v - 1)).$((128 + i)).0/24" "10.$(($3 + 2 * j + v - 1)).$((128 + i)).0/24" "aes128gcm16-$g")
			done
		done
	done
	if [ "$MAXQM" -gt 0 ]; then
		spec+=(conn mq 1 "aes128-sha256-${groups[0]}" local_addrs="10.9.0.$(($4 + 20))"
			remote_addrs="10.9.0.$(($5 + 20))" "${auth[@]}" "${ids[@]}")
		for i in $(seq 1 "$MAXQM"); do
			spec+=(child "m$i" "10.$(($2 + 32 + i / 256)).$((i % 256)).0/24" "10.$(($3 + 32 + i / 256)).$((i % 256)).0/24" aes128gcm16)
		done
	fi
	ike_swanctl "$side" "$4" "$5" "${spec[@]}"
}
conf A 0 64 10 20 10.9.0.1 10.9.0.2
conf B 64 0 20 10 10.9.0.2 10.9.0.1
# maxqm 0: no limit until a "maxqm" command sets one; charon's retransmission timers stay at their
# defaults (4 s, base 1.8, 5 tries): they are what the loss series measures
for s in A B; do ike_sconf $s "maxqm = 0" "replay_window = 1024"; done

xt_bg A capture tcpdump -i va -n -s 0 -U --immediate-mode -B 8192 -w "$CAP" udp port 500 or udp port 4500
xt_wait 5 grep -q "listening on" "$XT_DIR/capture.log" || xt_fail "tcpdump did not start: $(cat "$XT_DIR/capture.log")"
IKE_DEBUG=${IKE_PEERS_DEBUG:-0} ike_start A
IKE_DEBUG=${IKE_PEERS_DEBUG:-0} ike_start B
URI="unix://$XT_DIR/A/run/charon.vici"
PIDA=$(cat "$XT_DIR/A/run/xipsec-iked.pid")
PIDB=$(cat "$XT_DIR/B/run/xipsec-iked.pid")
mhz=$(awk -F: '/^cpu MHz/ { printf "%.0f\n", $2; exit }' /proc/cpuinfo)
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

loss() {
	xt_exec B nft delete table inet sizing_loss 2>/dev/null
	[ "$1" -gt 0 ] || return 0
	xt_exec B nft -f - <<EOF
table inet sizing_loss {
	chain in { type filter hook input priority 0; udp dport { 500, 4500 } numgen random mod 100 < $1 drop; }
	chain out { type filter hook output priority 0; udp sport { 500, 4500 } numgen random mod 100 < $1 drop; }
}
EOF
}
flushed() { ike_nsa A 0 && ike_nsa B 0; }

echo "ready $URI $XT_DIR/A/run/status $PIDA $PIDB $mhz"
while read -r cmd args; do
	rc=0
	case $cmd in
	vici) # shellcheck disable=SC2086
		"$VICI" "$URI" $args 2>&1 || rc=$? ;;
	cpu) echo "cpu $(cpu_ns "$PIDA") $(cpu_ns "$PIDB")" ;;
	maxqm) XIPSEC_IKED_RUN="$XT_DIR/A/run" "$top_builddir/ipsecctl/ipsecctl" ike maxqm set "$args" >&2 || rc=$? ;;
	loss) loss "$args" || rc=$? ;;
	status) ike_status A "$args" ;;
	flush) xt_wait 20 flushed || rc=1 ;;
	counters) # the kernel's drop counters in both namespaces (a packet lost outside the loss series)
		for s in A B; do echo "$s $(xt_exec $s nstat -asz 2>/dev/null | awk '$2 != 0 && /Udp|IpExtInNoRoutes|IpInDiscards|IpInAddrErrors/ { printf "%s=%s ", $1, $2 }')"; done ;;
	quit) echo "= 0"; break ;;
	*) echo "unknown command $cmd"; rc=2 ;;
	esac
	echo "= $rc"
done
# the capture must hold every packet when ike.py reads it: stop tcpdump (SIGINT flushes) first,
# once the last packets have had time to come through its ring buffer
sleep 0.5
xt_stop capture INT
exit 0
