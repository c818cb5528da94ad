#!/usr/bin/python3
# tests/netns/test_dp_frag_recv.py: the receiver behind the inner hosts of test_dp_frag*.sh (not a
# test itself). Listens on UDP port 7000 over IPv4 and IPv6 and prints, for each datagram,
# "got TAG LENGTH ok|corrupt SOURCE": senders fill a datagram with "TAG:" repeated, so any byte lost,
# moved or changed on the way (fragmentation, reassembly, decryption) shows as "corrupt".
# Prints "ready" once bound; exits after 60 s without traffic.
import select
import socket

s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s4.bind(('0.0.0.0', 7000))
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s6.bind(('::', 7000))
print('ready', flush=True)
while True:
    r, _, _ = select.select([s4, s6], [], [], 60)
    if not r:
        break
    for s in r:
        d, a = s.recvfrom(65535)
        tag = d.split(b':')[0].decode()
        ok = d == ((tag.encode() + b':') * len(d))[:len(d)]
        print('got', tag, len(d), 'ok' if ok else 'corrupt', a[0], flush=True)
