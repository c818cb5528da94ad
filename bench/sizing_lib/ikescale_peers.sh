#!/bin/bash
# bench/sizing_lib/ikescale_peers.sh: the two IKE gateways of the sizing study's IKE-at-scale section
# (bench/sizing_lib/ikescale.py): A runs xipsec-iked on an SADB made with room for CAP SAs and
# policies, B stock strongSwan charon (tests/netns/ike_common.sh's interoperability peer, with
# kernel-libipsec: these kernels have no XFRM) with reuse_ikesa = no, so that every initiate of its connection "s" makes a new IKE SA towards
# A (10.9.0.2 -> 10.9.0.1, IKEv2, PSK, the first DH group of GROUPS). A initiates everything else
# towards B's one responder connection "gw" (10.9.0.2, every group, a CHILD SA configuration that
# narrows to each /32 pair asked for, as a remote-access gateway's does):
#   x-G    (from 10.9.0.(10+j) for group j of GROUPS) with CHILD SAs c1..c(RESUME+1)
#   r1..rP (from 10.9.0.(100+p), the first group) with CHILD SAs c1..c(K+1): the CHILD SA rate rounds
#          (swanctl loads one connection per VICI message and charon takes at most 512 KiB: K CHILD SAs
#          of about 130 bytes each keep a connection under it up to K = 4,000)
# A's selectors are /32s in 10.128.0.0/11 (CHILD SA n of the rate connections 10.(128 + n / 65536).
# (n / 256 % 256).(n % 256), those of x-G from 10.(150 + j).0.1), B's the whole 10.160.0.0/11:
# kernel-libipsec routes each CHILD SA from a local address inside B's selector (10.160.0.1 on B's
# loopback), one address for all rather than one per CHILD SA.
# Both daemons get an IKE SA table of 1,024 rows in 16 segments (charon's default of one row is a
# list walked for every message, which is not how a gateway for thousands of peers is configured).
#
# usage: ikescale_peers.sh BUILDDIR GROUPS P K RESUME CAP
# Prints "ready URI_A URI_B SADB_A PID_A PID_B MHZ" once both daemons have their connections, then
# reads commands:
#   vici ARGS...   bench/ike-bench-vici against A
#   vicib ARGS...  bench/ike-bench-vici against B
#   cpu            "cpu NS_A NS_B": CPU time (ns) both daemons' threads used so far
#   rss            "rss KB_A KB_B": both daemons' resident memory
#   nsa            the mature SAs A's SADB holds
#   logs           the daemons' last complaints (errors, failures, retransmissions), for a failure's report
#   quit
# every reply ends with a line "= RC" (0 = the command succeeded).
set -u
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
top_builddir=$(cd "$1" && pwd) || { echo "ikescale_peers: no build directory $1" >&2; exit 2; }
GROUPS_=$2 P=$3 K=$4 RESUME=$5 CAP=$6
export top_srcdir top_builddir
# lib.sh's time limits: every background process (the daemons) and every command
# shellcheck disable=SC2034
XT_BG_TIMEOUT=7200
# shellcheck disable=SC2034
XT_TIMEOUT=60
. "$top_srcdir/tests/netns/lib.sh"
. "$top_srcdir/tests/netns/ike_common.sh"
ike_require
VICI="$top_builddir/bench/ike-bench-vici"
IPSECCTL="$top_builddir/ipsecctl/ipsecctl"
[ -x "$VICI" ] || xt_fail "$VICI not built"
[ -x "$IPSECCTL" ] || xt_fail "$IPSECCTL not built"
[ -x /usr/lib/ipsec/charon ] || xt_fail "stock charon (/usr/lib/ipsec/charon, Debian's strongswan-charon) is not installed"
[ "$P" -le 150 ] || xt_fail "at most 150 rate connections (10.9.0.101-250)"
[ "$K" -le 4000 ] || xt_fail "at most 4,000 CHILD SAs per rate connection (charon takes a connection of at most 512 KiB)"
ike_pair
for s in A B; do ike_dirs $s; done
# SA and policy room for every CHILD SA of the run (the default capacity is 65,536)
"$IPSECCTL" --sadb "$(ike_sadb A)" init max-sa "$CAP" max-policy "$CAP" >&2 || xt_fail "ipsecctl init max-sa $CAP failed"

IFS=, read -r -a groups <<< "$GROUPS_"
for j in "${!groups[@]}"; do ip -n "$(xt_ns A)" addr add "10.9.0.$((10 + j))/24" dev va; done
for p in $(seq 1 "$P"); do echo "addr add 10.9.0.$((100 + p))/24 dev va"; done > "$XT_DIR/a-addrs"
xt_exec A ip -batch "$XT_DIR/a-addrs" || xt_fail "cannot add A's addresses"
# no IPv6 on the link (its address appearing late is an event charon reacts to mid-run)
xt_exec A sysctl -qw net.ipv6.conf.va.disable_ipv6=1
xt_exec B sysctl -qw net.ipv6.conf.vb.disable_ipv6=1
xt_exec B ip addr add 10.160.0.1/32 dev lo

# one identity pair for all: unique = never, or the INITIAL_CONTACT of a peer's first IKE SA makes the
# other side delete every IKE SA of that identity, even one being set up in parallel
ids=(id=gw-a peer_id=gw-b unique=never)
spec=(conn s 2 "aes128-sha256-${groups[0]}" "${ids[@]}")
for j in "${!groups[@]}"; do
	spec+=(conn "x-${groups[$j]}" 2 "aes128-sha256-${groups[$j]}" local_addrs="10.9.0.$((10 + j))" "${ids[@]}")
	for i in $(seq 1 $((RESUME + 1))); do
		spec+=(child "c$i" "10.$((150 + j)).$((i / 256)).$((i % 256))/32" 10.160.0.0/11 aes128gcm16)
	done
done
ike_swanctl A 10.9.0.1 10.9.0.2 "${spec[@]}"
# the rate connections: up to 150 x 1,001 CHILD SAs, written by awk (a shell string that long is
# copied at every append); swanctl merges this second connections section with the first
awk -v P="$P" -v K="$K" -v prop="aes128-sha256-${groups[0]}" 'BEGIN {
	print "connections {"
	for (p = 1; p <= P; p++) {
		printf "  r%d {\n    version = 2\n    local_addrs = 10.9.0.%d\n    remote_addrs = 10.9.0.2\n", p, 100 + p
		printf "    proposals = %s\n    unique = never\n    local {\n      auth = psk\n      id = gw-a\n    }\n", prop
		printf "    remote {\n      auth = psk\n      id = gw-b\n    }\n    children {\n"
		for (k = 1; k <= K + 1; k++) {
			n = (p - 1) * (K + 1) + k - 1
			printf "      c%d {\n        local_ts = 10.%d.%d.%d/32\n        remote_ts = 10.160.0.0/11\n        esp_proposals = aes128gcm16\n      }\n",
				k, 128 + int(n / 65536), int(n / 256) % 256, n % 256
		}
		print "    }\n  }"
	}
	print "}"
}' >> "$XT_DIR/A/conf/swanctl.conf"
allprop=aes128-sha256
for g in "${groups[@]}"; do allprop+="-$g"; done
ike_swanctl B 10.9.0.2 10.9.0.1 conn s 2 "aes128-sha256-${groups[0]}" id=gw-b peer_id=gw-a unique=never \
	conn gw 2 "$allprop" remote_addrs=%any id=gw-b peer_id=gw-a unique=never child net 10.160.0.0/11 10.128.0.0/11 aes128gcm16

table=("ikesa_table_size = 1024" "ikesa_table_segments = 16")
# B's one address stands for thousands of peers: A's limit of half-open IKE SAs per peer address
# (charon's block_threshold, 5) would drop B's parallel IKE_SA_INITs, and past 10 half-open IKE SAs
# in all or 3 from one address (cookie_threshold, cookie_threshold_ip) A asks every peer for a cookie, a round trip more per IKE SA whose retried
# request was lost now and then (a 4 s retransmission): the figures are the setup's own cost, the
# DoS defences off
# maxqm = 0: the rate rounds put 1,000 CHILD SAs on one IKE SA (xipsec-iked's default renews it after 100)
ike_sconf A "${table[@]}" "maxqm = 0" "block_threshold = 1000000" "cookie_threshold = 1000000" "cookie_threshold_ip = 1000000"
ike_start A --no-load
# the connections loaded here, with a wait that grows with them (ike_start's is for small files)
STRONGSWAN_CONF="$XT_DIR/A/conf/strongswan.conf" timeout $((60 + P * K / 500)) "$IKE_SWANCTL" --load-all \
	--file "$XT_DIR/A/conf/swanctl.conf" --uri "unix://$XT_DIR/A/run/charon.vici" > "$XT_DIR/swanctl-A.log" 2>&1 ||
	{ tail -5 "$XT_DIR/swanctl-A.log" >&2; xt_fail "loading A's swanctl.conf failed"; }
ike_start_stock B "${table[@]}" "reuse_ikesa = no"
URIA="unix://$XT_DIR/A/run/charon.vici"
URIB="unix://$XT_DIR/B/run/charon.vici"
PIDA=$(cat "$XT_DIR/A/run/xipsec-iked.pid")
# B's charon: the process named charon under the one lib.sh started (timeout, nsenter, unshare, sh)
charon_of() { local c; for c in $(pgrep -P "$1"); do [ "$(cat /proc/"$c"/comm)" = charon ] && echo "$c"; charon_of "$c"; done; }
PIDB=$(charon_of "$(xt_pid charon-B)" | head -1)
[ -n "$PIDB" ] || xt_fail "stock charon's process not found under $(xt_pid charon-B)"
mhz=$(awk -F: '/^cpu MHz/ { printf "%.0f\n", $2; exit }' /proc/cpuinfo)
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' /proc/"$1"/status 2>/dev/null; }

echo "ready $URIA $URIB $(ike_sadb A) $PIDA $PIDB $mhz"
while read -r cmd args; do
	rc=0
	case $cmd in
	vici) # shellcheck disable=SC2086
		"$VICI" "$URIA" $args 2>&1 || rc=$? ;;
	vicib) # shellcheck disable=SC2086
		"$VICI" "$URIB" $args 2>&1 || rc=$? ;;
	cpu) echo "cpu $(cpu_ns "$PIDA") $(cpu_ns "$PIDB")" ;;
	rss) echo "rss $(rss_kb "$PIDA") $(rss_kb "$PIDB")" ;;
	nsa) ike_dump A | wc -l ;;
	logs) for f in iked-A charon-B; do grep -iE "error|fail|retransmit|invalid|giving up|unable" "$XT_DIR/$f.log" | tail -8 | sed "s/^/$f: /"; done ;;
	quit) echo "= 0"; break ;;
	*) echo "unknown command $cmd"; rc=2 ;;
	esac
	echo "= $rc"
done
exit 0
