# tests/netns/test_dp_frag_send.py: plays the peer gateway for test_dp_frag.sh and sends an ESP packet
# that was fragmented on the path: scapy's SecurityAssociation (nobody here wrote it) encrypts a UDP
# datagram with the SA's keys, scapy's fragment()/fragment6() cut the outer packet, and the fragments
# go out as Ethernet frames towards the gateway.
#   usage: test_dp_frag_send.py IFACE DST_MAC FAMILY OUTER_SRC OUTER_DST SPI KEYHEX SEQ
#                               INNER_SRC INNER_DST PORT TAG SIZE FRAGSIZE MODE [natt] [only=I,J..]
# MODE: inorder | reverse | overlap (a copy of fragment 1 moved 8 bytes back, sent after fragment 0:
# RFC 5722 says the datagram is abandoned). natt: ESP-in-UDP on port 4500 (RFC 3948). only: send
# just these fragments (the IV comes from SEQ, so two runs build the same fragments). Prints one line per fragment sent (offset, length, MF).
import logging, sys

logging.getLogger('scapy.runtime').setLevel(logging.ERROR)
from scapy.all import (Ether, IP, IPv6, IPv6ExtHdrFragment, UDP, ESP, Raw, fragment, fragment6,
                       sendp)
from scapy.layers.ipsec import SecurityAssociation


def main():
    (iface, dmac, fam, osrc, odst, spi, key, seq, isrc, idst, port, tag, size, fragsize,
     mode) = sys.argv[1:16]
    opts = sys.argv[16:]
    natt = 'natt' in opts
    only = None
    for o in opts:
        if o.startswith('only='):
            only = [int(i) for i in o[5:].split(',')]
    spi, seq, port, size, fragsize = int(spi, 0), int(seq), int(port), int(size), int(fragsize)
    body = (tag.encode() + b':') * (size // (len(tag) + 1) + 1)
    body = body[:size]
    if fam == '4':
        hdr, inner = IP(src=osrc, dst=odst), IP(src=isrc, dst=idst, ttl=64)
    else:
        hdr, inner = IPv6(src=osrc, dst=odst), IPv6(src=isrc, dst=idst, hlim=64)
    inner = inner / UDP(sport=40000, dport=port) / Raw(body)
    sa = SecurityAssociation(ESP, spi=spi, crypt_algo='AES-GCM', crypt_key=bytes.fromhex(key),
                             tunnel_header=hdr,
                             nat_t_header=UDP(sport=4500, dport=4500) if natt else None)
    outer = sa.encrypt(inner, seq_num=seq, iv=seq.to_bytes(8, 'big'))
    if fam == '4':
        o4 = IP(bytes(outer))
        if natt:
            # scapy serialises nat_t_header before ESP is attached: its UDP length says 8; the
            # datagram's own length is what a receiver reads (RFC 768), and the checksum may be 0
            o4[UDP].len, o4[UDP].chksum, o4.len, o4.chksum = len(o4[UDP]), 0, None, None
            o4 = IP(bytes(o4))
        frags = fragment(o4, fragsize=fragsize)
    else:
        o6 = IPv6(bytes(outer))
        esp = bytes(o6.payload)
        pkt = IPv6(src=o6.src, dst=o6.dst, hlim=64) / IPv6ExtHdrFragment(nh=50, id=0x5eed0000 + seq) / Raw(esp)
        frags = fragment6(pkt, fragsize)
    frags = [f.__class__(bytes(f)) for f in frags]
    if len(frags) < 2:
        sys.exit('the packet was not fragmented')
    if mode == 'reverse':
        frags = frags[::-1]
    elif mode == 'overlap':
        bad = frags[1].copy()
        if fam == '4':
            bad.frag -= 1
            bad.chksum = None
        else:
            bad[IPv6ExtHdrFragment].offset -= 1
        frags = [frags[0], bad.__class__(bytes(bad))] + frags[1:]
    if only is not None:
        frags = [frags[i] for i in only]
    for f in frags:
        if fam == '4':
            print('frag offset %d len %d mf %d' % (f.frag * 8, len(f), int(f.flags.MF)))
        else:
            h = f[IPv6ExtHdrFragment]
            print('frag offset %d len %d m %d nh %d' % (h.offset * 8, len(f), h.m, h.nh))
        sendp(Ether(dst=dmac) / f, iface=iface, verbose=False)
    print('sent', len(frags), flush=True)


if __name__ == '__main__':
    main()
