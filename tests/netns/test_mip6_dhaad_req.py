#!/usr/bin/env python3
# tests/netns/test_mip6_dhaad_req.py: a mobile node away from home asking for its home agents (RFC 6275
# section 11.4.1), played by scapy's ICMPv6HAADRequest/ICMPv6HAADReply for test_mip6_dhaad.sh.
#
#   test_mip6_dhaad_req.py IFACE COA ANYCAST
#
# Sends one DHAAD Request from COA out of IFACE to ANYCAST (the home prefix's Home-Agents anycast
# address) with a random identifier, and prints as JSON what came back within 2 s: every ICMPv6
# packet of type 145 to COA, each with its source, identifier, the checksum scapy computes
# against the one received, and the addresses in the order they were listed.
import json
import random
import sys
import time

from scapy.all import AsyncSniffer, conf, send
from scapy.layers.inet6 import IPv6, ICMPv6HAADReply, ICMPv6HAADRequest

conf.verb = 0
iface, coa, anycast = sys.argv[1:4]
ident = random.randrange(1, 0xffff)
sn = AsyncSniffer(iface=iface, filter="icmp6 and ip6[40] == 145")
sn.start()
time.sleep(0.5)  # the capture socket is open before the request leaves
send(IPv6(src=coa, dst=anycast) / ICMPv6HAADRequest(id=ident), iface=iface)
time.sleep(2)
replies = []
for p in sn.stop():
    if ICMPv6HAADReply not in p or p[IPv6].dst != coa:
        continue
    r = p[ICMPv6HAADReply]
    again = IPv6(bytes(p[IPv6]))
    again[ICMPv6HAADReply].cksum = None
    replies.append({"src": p[IPv6].src, "id_ok": r.id == ident, "code": r.code,
                    "cksum_ok": IPv6(bytes(again))[ICMPv6HAADReply].cksum == r.cksum,
                    "addresses": list(r.addresses)})
print(json.dumps(replies))
