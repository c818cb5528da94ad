#!/usr/bin/env bash
# tests/netns/test_mip6_dad.sh: Duplicate Address Detection for a home address before the home
# agent proxies it (RFC 6275 10.4.1, RFC 4862 5.4), on mip6_common.sh's bed with scapy's mobile node
# (test_mip6_mn.py); the host on the home link is cn's own Linux kernel, which answers a detecting
# solicitation for an address it holds. Checked:
#  1. cn holds the home address: the registration gets BA 134 (lifetime 0), no binding, no proxy
#     entry (`ip -6 neigh show proxy`), the tunnel SA left at home; the solicitation cn saw is
#     checked with scapy: from ::, to the solicited-node group (and its MAC), hop limit 255, target
#     the home address, no option, checksum right;
#  2. cn gives the address up: the next registration, with the L bit, is answered 0 no sooner than
#     the detection's wait, and while it waits the control socket answers (the binding listed, its
#     acknowledgement not yet sent): nothing waits on the control thread; proxy entries for the
#     home address and for the link-local address of its interface identifier;
#  3. a refresh of the bound home address skips the detection (answered at once, dad_started
#     unchanged);
#  4. deregistration removes both proxy entries; a new binding followed by xipsecd's stop leaves no
#     proxy entry and the home link's proxy_ndp and forwarding sysctls as they were;
#  5. xipsecd started again, a new binding, then the home agent record removed from the SADB
#     (ipsecctl flush all) while xipsecd runs: the same undone, no binding left, xipsecd still up.
set -u
XT_BG_TIMEOUT=90
DAD_MS=1500
MIP6_HA_OPTS="--mip6-dad-ms $DAD_MS"
. "$top_srcdir/tests/netns/mip6_common.sh"
# the home link's sysctls before xipsecd touched them are those of a fresh namespace
LL=fe80::100 # the link-local address with the home address's interface identifier

proxies() { xt_exec ha ip -6 neigh show proxy dev in0; }
has_proxy() { proxies | grep -qw "$1"; }
nbind() { b_json "len(j['bindings'])"; }

# ---- 1. a host on the home link uses the home address
xt_exec cn ip -6 addr add $HOA/64 dev eth0 nodad
dp_capture_start ns cn eth0
mn bu eth1 1 120
wait_ba 1
dp_capture_stop ns
ba_is 1 "b['status'] == 134 and b['seq'] == 1 and b['lifetime'] == 0 and b['dst'] == '$COA1' and b['esp_spi'] == 0x2000"
[ "$(nbind)" = 0 ] || xt_fail "a binding despite a duplicate home address: $(cat "$XT_DIR/b.json")"
! has_proxy $HOA || xt_fail "a proxy entry for a home address in use on the home link: $(proxies)"
ctl show | grep -A1 "spi 0x00003000" | grep -q "to $HOA" || xt_fail "the tunnel SA left home: $(ctl show)"
[ "$(cnt dad_failed)" = 1 ] || xt_fail "dad_failed is $(cnt dad_failed), not 1"
"$PYTHON" - "$XT_DIR/ns.pcap" "$HOA" <<'PY' || xt_fail "the home agent's Neighbor Solicitation is not a detection's"
import sys, logging
logging.getLogger('scapy.runtime').setLevel(logging.ERROR)
from scapy.all import rdpcap, Ether, IPv6
from socket import AF_INET6, inet_ntop, inet_pton
from scapy.layers.inet6 import ICMPv6ND_NS, in6_getnsma, in6_getnsmac
hoa = sys.argv[2]
ns = [p for p in rdpcap(sys.argv[1]) if ICMPv6ND_NS in p and p[ICMPv6ND_NS].tgt == hoa and p[IPv6].src == '::']
if not ns:
    sys.exit('no solicitation from :: for ' + hoa)
p = ns[0]
snm = inet_ntop(AF_INET6, in6_getnsma(inet_pton(AF_INET6, hoa)))
ok = (p[IPv6].dst == snm and p[Ether].dst == in6_getnsmac(inet_pton(AF_INET6, snm)) and p[IPv6].hlim == 255
      and p[ICMPv6ND_NS].code == 0 and len(bytes(p[ICMPv6ND_NS])) == 24)
c = p[ICMPv6ND_NS].cksum
q = IPv6(bytes(p[IPv6]))
del q[ICMPv6ND_NS].cksum
ok = ok and IPv6(bytes(q))[ICMPv6ND_NS].cksum == c
print(p.summary(), snm, ok)
sys.exit(0 if ok else 1)
PY

# ---- 2. the address given up: accepted after the wait, the control thread free meanwhile
xt_exec cn ip -6 addr del $HOA/64 dev eth0
t0=$(date +%s%N)
mn bu eth1 2 120 AHL
xt_wait 5 grep -q '"cmd": "bu".*"seq": 2' "$XT_DIR/mn.log" || xt_fail "the mobile node did not send BU 2"
pending() { [ "$(nbind)" = 1 ]; }
xt_wait 3 pending || xt_fail "the Binding Update was not decided"
[ "$(nba)" = 1 ] || xt_fail "BA 2 before the detection's wait ($DAD_MS ms) ended"
wait_ba 2
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
ba_is 2 "b['status'] == 0 and b['seq'] == 2 and b['lifetime'] == 120"
[ "$ms" -ge $((DAD_MS - 100)) ] || xt_fail "BA 2 after $ms ms, less than the detection's $DAD_MS ms"
has_proxy $HOA && has_proxy $LL || xt_fail "proxy entries for $HOA and (L bit) $LL missing: $(proxies)"
[ "$(cnt dad_ok)" = 1 ] && [ "$(cnt dad_started)" = 2 ] || xt_fail "DAD counters: $(cat "$XT_DIR/b.json")"
[ "$(cnt dad_ns_sent)" = 3 ] || xt_fail "solicitations sent: $(cnt dad_ns_sent), not 3 (one, then two with the L bit)"

# ---- 3. a refresh of a bound home address: no detection
t0=$(date +%s%N)
mn bu eth1 3 120 AHL
wait_ba 3
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
ba_is 3 "b['status'] == 0 and b['seq'] == 3"
[ "$(cnt dad_started)" = 2 ] || xt_fail "a refresh started a detection"
[ "$ms" -lt "$DAD_MS" ] || xt_fail "the refresh took $ms ms: it waited for a detection"

# ---- 4. what a binding set up is undone
mn bu eth1 4 0 AH
wait_ba 4
ba_is 4 "b['status'] == 0 and b['seq'] == 4"
! has_proxy $HOA && ! has_proxy $LL || xt_fail "proxy entries after deregistration: $(proxies)"
mn bu eth1 5 120 AHL
wait_ba 5
ba_is 5 "b['status'] == 0 and b['seq'] == 5"
has_proxy $HOA || xt_fail "no proxy entry for the new binding"
[ "$(xt_exec ha sysctl -n net.ipv6.conf.in0.proxy_ndp)" = 1 ] || xt_fail "proxy_ndp not set on the home link"
xt_stop xipsecd-ha TERM
! has_proxy $HOA && ! has_proxy $LL || xt_fail "proxy entries left after xipsecd stopped: $(proxies)"
[ "$(xt_exec ha sysctl -n net.ipv6.conf.in0.proxy_ndp)" = 0 ] && [ "$(xt_exec ha sysctl -n net.ipv6.conf.in0.forwarding)" = 0 ] ||
	xt_fail "the home link's sysctls not given back: proxy_ndp $(xt_exec ha sysctl -n net.ipv6.conf.in0.proxy_ndp), forwarding $(xt_exec ha sysctl -n net.ipv6.conf.in0.forwarding)"

# ---- 5. the home agent record removed while xipsecd runs: the same undone, xipsecd serving on
mip6_start_ha $MIP6_HA_OPTS
mn bu eth1 6 120 AHL
wait_ba 6
ba_is 6 "b['status'] == 0 and b['seq'] == 6"
has_proxy $HOA && has_proxy $LL || xt_fail "no proxy entries for the binding after the restart: $(proxies)"
[ "$(xt_exec ha sysctl -n net.ipv6.conf.in0.proxy_ndp)" = 1 ] || xt_fail "proxy_ndp not set on the home link after the restart"
ctl flush all || xt_fail "ipsecctl flush all"
undone() { ! has_proxy $HOA && ! has_proxy $LL && [ "$(xt_exec ha sysctl -n net.ipv6.conf.in0.proxy_ndp)" = 0 ] &&
	[ "$(xt_exec ha sysctl -n net.ipv6.conf.in0.forwarding)" = 0 ]; }
xt_wait 5 undone || xt_fail "the home agent record removed, the home link not given back: proxies $(proxies), proxy_ndp $(xt_exec ha sysctl -n net.ipv6.conf.in0.proxy_ndp), forwarding $(xt_exec ha sysctl -n net.ipv6.conf.in0.forwarding)"
"$XIPSECD" --status --ctl "$XT_DIR/ha.sock" >/dev/null || xt_fail "xipsecd stopped with its home agent record"
[ "$(b_json "len(j['bindings'])")" = 0 ] || xt_fail "bindings left without a home agent: $(cat "$XT_DIR/b.json")"

mn counts
sleep 0.3
grep -q '"bad": 0' "$XT_DIR/mn.log" || xt_fail "the mobile node could not decrypt something: $(grep '"ev": "bad"' "$XT_DIR/mn.log" | head -3)"
xt_log "DAD: a duplicate refused with 134 and no proxy entry, a free address bound after the wait without blocking, refreshes skip it, proxies and sysctls undone"
exit 0
