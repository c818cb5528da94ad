# tests/oracle/scapyutil.py: scapy-side helpers of the oracle tests: inner test packets, scapy
# SecurityAssociation objects for our transforms, and the work-arounds for scapy 2.5.0's quirks
# (each one explained where it is handled). Test code only.
import hashlib
import hmac
import struct
import warnings

warnings.filterwarnings('ignore')
import logging  # noqa: E402
logging.getLogger('scapy.runtime').setLevel(logging.ERROR)

from scapy.all import (IP, IPv6, UDP, TCP, ICMP, Raw, IPv6ExtHdrHopByHop,  # noqa: E402
                       IPv6ExtHdrDestOpt, IPv6ExtHdrRouting, ICMPv6EchoRequest, raw)
from scapy.layers.inet import IPOption_Router_Alert, IPOption_RR  # noqa: E402
from scapy.layers.ipsec import SecurityAssociation, ESP, AH  # noqa: E402

from oraclelib import INNER, SCAPY_AUTH, SCAPY_ENC, HASHLIB, AUTH_ICV  # noqa: E402


def payload(n, seed):
    return bytes((seed * 13 + i * 5) & 0xff for i in range(n))


def inner_packets(fam, transport, seed=0):
    """Inner IP packets (bytes) of family fam: several protocols and sizes (0 to 1300 bytes of
    payload), ECN/DSCP marks, DF set and clear, and in transport mode the headers that must stay in
    front of ESP/AH (IPv4 options, IPv6 hop-by-hop/destination options/routing headers)."""
    s, d = INNER[fam]
    out = []
    if fam == 4:
        out.append(IP(src=s, dst=d, tos=0, id=0x1234, flags='DF', ttl=63) /
                   UDP(sport=12345, dport=53) / Raw(b''))
        out.append(IP(src=s, dst=d, tos=0xba, id=0x2345, flags=0, ttl=9) /
                   TCP(sport=40000, dport=443, flags='PA', seq=7) / Raw(payload(37, seed)))
        out.append(IP(src=s, dst=d, tos=0x01, id=0x3456, flags='DF') / ICMP(id=5, seq=6) /
                   Raw(payload(250, seed + 1)))
        out.append(IP(src=s, dst=d, tos=0x48, id=0x4567) / UDP(sport=4000, dport=4001) /
                   Raw(payload(1300, seed + 2)))
        if transport:
            # Router alert is immutable, record route mutable (zeroed for AH's ICV, RFC 4302 A.1).
            out.append(IP(src=s, dst=d, id=0x5678, options=[IPOption_Router_Alert(),
                                                            IPOption_RR(routers=['192.0.2.77'])]) /
                       UDP(sport=1, dport=2) / Raw(payload(5, seed + 3)))
    else:
        out.append(IPv6(src=s, dst=d, tc=0, fl=0x12345, hlim=63) / UDP(sport=12345, dport=53) /
                   Raw(b''))
        out.append(IPv6(src=s, dst=d, tc=0xba, hlim=9) / TCP(sport=40000, dport=443, flags='PA') /
                   Raw(payload(37, seed)))
        out.append(IPv6(src=s, dst=d, tc=0x01) / ICMPv6EchoRequest(id=5, seq=6, data=payload(250, seed)))
        out.append(IPv6(src=s, dst=d, tc=0x48) / UDP(sport=4000, dport=4001) / Raw(payload(1300, seed + 2)))
        out.append(IPv6(src=s, dst=d) / IPv6ExtHdrHopByHop() / UDP(sport=1, dport=2) /
                   Raw(payload(9, seed + 3)))
        if transport:
            # ESP/AH goes after the routing header and before the destination options that follow
            # it (RFC 4303 §3.1.1); scapy's split_for_transport and our engine agree on this chain.
            # segleft=0: the packet is at its final destination (what AH's ICV is computed over).
            out.append(IPv6(src=s, dst=d) / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() /
                       IPv6ExtHdrRouting(addresses=['fd00:3::3'], segleft=0) / IPv6ExtHdrDestOpt() /
                       UDP(sport=3, dport=4) / Raw(payload(21, seed + 4)))
            # Destination options with no routing header: RFC 4303 §3.1.1 lets ESP/AH go either
            # side; our engine protects them (ESP first), scapy leaves them in clear (see
            # dstopt_placement_differs).
            out.append(IPv6(src=s, dst=d) / IPv6ExtHdrDestOpt() / UDP(sport=5, dport=6) / Raw(payload(3, seed + 5)))
    return [raw(p) for p in out]


def dstopt_placement_differs(inner):
    """True when scapy and our engine legitimately put ESP/AH at different places in this packet:
    IPv6 with a destination options header and no routing header."""
    p = parse_ip(inner)
    return p.version == 6 and p.haslayer(IPv6ExtHdrDestOpt) and not p.haslayer(IPv6ExtHdrRouting)


def parse_ip(b):
    return IP(b) if b[0] >> 4 == 4 else IPv6(b)


def scapy_sa(xf, spi, tunnel_hdr=None, natt=False, esn=False, with_auth=True, natt_sport=4500):
    """A scapy SA for transform xf. with_auth=False leaves integrity to the caller (see esp_icv)."""
    kw = {}
    if xf.proto == 'esp':
        kw['crypt_algo'] = SCAPY_ENC[xf.enc]
        kw['crypt_key'] = xf.ekey + xf.salt
        if xf.auth != 'none' and with_auth:
            kw['auth_algo'] = SCAPY_AUTH[xf.auth]
            kw['auth_key'] = xf.akey
        if natt:
            kw['nat_t_header'] = UDP(sport=natt_sport, dport=4500)
        proto = ESP
    else:
        kw['auth_algo'] = SCAPY_AUTH[xf.auth]
        kw['auth_key'] = xf.akey
        proto = AH
    return SecurityAssociation(proto, spi=spi, tunnel_header=tunnel_hdr, esn_en=esn, esn=0, **kw)


def esp_icv(xf, esp_wo_icv, hi, esn):
    """HMAC ICV of an ESP packet computed here with Python's hmac: scapy 2.5.0 QUIRK: its
    AuthAlgo.sign/verify ignore the ESN high bits for ESP (they are only appended for AH), so with
    ESN it computes an ICV that RFC 4303 §2.2.1 and §3.3.2.1 say is wrong (the high 32 bits are
    hashed after the Next Header field, without being sent)."""
    m = hmac.new(xf.akey, esp_wo_icv + (struct.pack('!I', hi) if esn else b''), HASHLIB[xf.auth])
    return m.digest()[:AUTH_ICV[xf.auth]]


def refresh(p):
    """Recompute the outer lengths and checksums of p (IP/IPv6 and a NAT-T UDP header; everything
    after ESP is opaque to scapy) and re-dissect it."""
    if p.version == 4:
        del p.len
        del p.chksum
    else:
        del p.plen
    if p.haslayer(UDP):
        del p[UDP].len
        if p.version == 6:
            del p[UDP].chksum
    return parse_ip(raw(p))


def strip_natt(p):
    """Turn ESP-in-UDP into plain ESP for scapy. scapy 2.5.0 QUIRK: _decrypt_esp in transport mode
    writes the next header into the UDP layer (IPv6: `encrypted.underlayer.nh`) and keeps the UDP
    header in the result, so its own NAT-T packets do not decrypt back in transport mode."""
    u = p[UDP]
    parent = u.underlayer
    esp = p[ESP].copy()
    parent.remove_payload()
    if isinstance(parent, IP):
        parent.proto = 50
    else:
        parent.nh = 50
    parent.add_payload(esp)
    if p.version == 4:
        del p.len
        del p.chksum
    else:
        del p.plen
    return parse_ip(raw(p))


def fix_natt_scapy(p):
    """scapy 2.5.0 QUIRKS when it encrypts with nat_t_header: the UDP checksum is always zero, also
    over IPv6 where RFC 8200 §8.1 forbids that (we compute it); over IPv4 the UDP length is frozen
    at 8 (the header is serialised before ESP is attached); and in IPv6 transport mode with
    extension headers the last extension header still names ESP (50) instead of UDP (17), so the
    packet does not even dissect as UDP."""
    if not p.haslayer(UDP):
        p = parse_ip(raw(p))
        lay = p
        while lay.payload is not None and not isinstance(lay.payload, ESP) and lay.payload.__class__.__name__ != 'NoPayload':
            lay = lay.payload
        # the header before the unparsed UDP+ESP bytes
        lay.nh = 17
        p = parse_ip(raw(p))
    u = p[UDP]
    del u.len
    parent = u.underlayer
    if isinstance(parent, IP):
        parent.proto = 17
    else:
        parent.nh = 17
    if p.version == 6:
        u.chksum = None
    return parse_ip(raw(p))


# scapy 2.5.0 QUIRK (a bug): when it signs an AH packet (zero_mutable_fields(sending=True)) it
# rotates the IPv6 routing header's address list even when Segments Left is already 0, i.e. when
# the packet is already as the final destination sees it (RFC 4302 §3.3.3.1.2.2 asks for the
# receiver's view); its own verify (sending=False) does not rotate, so scapy rejects its own
# packets. Rotate only when there are segments left.
import scapy.layers.ipsec as _ipsec  # noqa: E402
_orig_zero_mutable = _ipsec.zero_mutable_fields


def _zero_mutable_fields(pkt, sending=False):
    if sending and pkt.haslayer(IPv6ExtHdrRouting) and pkt[IPv6ExtHdrRouting].segleft == 0:
        sending = False
    return _orig_zero_mutable(pkt, sending=sending)


_ipsec.zero_mutable_fields = _zero_mutable_fields
