# scripts/demo-common.sh: what both demos (scripts/demo-ike, scripts/demo-dataplane) show the same way,
# sourced after tests/netns/lib.sh and tests/netns/test_dp_common.sh: the wire between the gateways,
# and one line of explanation for every drop counter of a gateway that is not zero.

# demo_wire PCAP: the first IKE and ESP frames of a capture between the gateways, every frame counted
# by protocol, and the proof that no IP packet crossed in the clear: everything but IKE is ESP, or
# the kernels' own ARP and neighbour discovery (dp_only_ipsec fails the demo otherwise).
demo_wire() {
	local pcap=$1 esp
	timeout 60 tshark -r "$pcap" -Y 'isakmp or esp' 2>/dev/null | head -n 8
	echo "frames by protocol:"
	timeout 60 tshark -r "$pcap" -T fields -e _ws.col.Protocol 2>/dev/null | sort | uniq -c | sort -rn |
		awk '$2 == "ISAKMP" { what = " (IKE, UDP 500)" }
		     $2 == "ESP" { what = " (the tunnel)" }
		     $2 == "ARP" { what = " (the gateways\047 kernels: address resolution)" }
		     $2 == "ICMPv6" { what = " (the gateways\047 kernels: neighbour discovery)" }
		     { printf "  %6d %s%s\n", $1, $2, what; what = "" }'
	timeout 60 tshark -r "$pcap" -Y 'not isakmp' -w "$pcap.noike" 2>/dev/null
	esp=$(dp_only_ipsec "$pcap.noike") || xt_fail "plaintext between the gateways (above)"
	echo "no plaintext: every IP packet between the gateways is IKE or ESP ($esp ESP)"
}

# demo_drops GW HOST PCAP DST...: one line for each drop counter of GW that is not zero, with the
# evidence: for packets too big for the tunnel, the ICMP errors that reached HOST (captured on its
# link in PCAP) and the path MTU HOST now has for each DST. A reason this demo does not expect is
# named as such (packets without a policy among them: xipsecd's TUN device has no link-local
# address, so the gateway's kernel sends no router solicitations into it).
demo_drops() {
	local gw=$1 host=$2 pcap=$3 stats icmp pmtu d
	shift 3
	stats=$("$CTL" --sadb "$(dp_sadb_of "$gw")" --json show stats)
	icmp=$(timeout 60 tshark -r "$pcap" -Y '(icmp.type == 3 && icmp.code == 4) || icmpv6.type == 2' \
		2>/dev/null | wc -l)
	pmtu=$(for d in "$@"; do
		printf '%s %s; ' "$d" "$(xt_exec "$host" ip route get "$d" | grep -o 'mtu [0-9]*' || echo 'no cached mtu')"
	done)
	echo "$stats" |
	DEMO_HOST=$host DEMO_ICMP=$icmp DEMO_PMTU=${pmtu%; } \
	"$PYTHON" -c '
import json, os, sys, textwrap
e = os.environ
drops = {k: v for k, v in json.load(sys.stdin)["stats"]["drops"].items() if v}
why = {
    "mtu": "packets too big for the tunnel: %(DEMO_HOST)s sent full-size packets that do not fit "
           "once ESP is added; xipsecd dropped each and answered with an ICMP error (%(DEMO_ICMP)s "
           "\"fragmentation needed\"/\"packet too big\" reached %(DEMO_HOST)s), and %(DEMO_HOST)s now "
           "sends smaller ones (its path MTU: %(DEMO_PMTU)s). This is path MTU discovery working.",
}
if not drops:
    print("no drops")
for reason, n in drops.items():
    text = why.get(reason, "not expected in this demo (ipsecctl(8) says what the reason means)")
    print(textwrap.fill("%s %d: %s" % (reason, n, text % e), 100, initial_indent="  ",
                        subsequent_indent="    "))
'
}
