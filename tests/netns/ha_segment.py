# tests/netns/ha_segment.py: the segment (1..COUNT) of each peer address, written apart from the
# product's hash (dataplane/xipsecd/xdp_segment.h) to check it: the kernel's jhash_1word (Linux >= 4.1,
# initval 0) and reciprocal_scale, as CLUSTERIP's hashmode sourceip computes it and strongSwan's ha
# plugin expects. An IPv6 address counts as 0, as the plugin's host2int makes it.
#   python3 ha_segment.py COUNT ADDR...   prints "ADDR SEGMENT" per address
import ipaddress
import sys

M = 0xffffffff


def rol(x, k):
    return ((x << k) | (x >> (32 - k))) & M


def final(a, b, c):
    c ^= b; c = (c - rol(b, 14)) & M; a ^= c; a = (a - rol(c, 11)) & M
    b ^= a; b = (b - rol(a, 25)) & M; c ^= b; c = (c - rol(b, 16)) & M
    a ^= c; a = (a - rol(c, 4)) & M; b ^= a; b = (b - rol(a, 14)) & M
    c ^= b; c = (c - rol(b, 24)) & M
    return c


def segment(addr, count):
    ip = ipaddress.ip_address(addr)
    a = int(ip) if ip.version == 4 else 0
    iv = (0xdeadbeef + 4) & M
    return ((final((a + iv) & M, iv, iv) * count) >> 32) + 1


if __name__ == '__main__':
    n = int(sys.argv[1])
    for addr in sys.argv[2:]:
        print(addr, segment(addr, n))
