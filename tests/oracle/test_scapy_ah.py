#!/usr/bin/python3
# tests/oracle/test_scapy_ah.py: our AH engine against scapy 2.5.0's AH (scapy.layers.ipsec) for
# HMAC-MD5-96, HMAC-SHA1-96, HMAC-SHA256-128, -SHA384-192 and -SHA512-256, tunnel (4-in-4, 6-in-6,
# 4-in-6, 6-in-4) and transport (IPv4 with a mutable and an immutable option, IPv6 with hop-by-hop,
# destination options and routing headers), with and without ESN, on every backend:
#  (a) our packet -> scapy verifies the ICV (mutable fields zeroed its own way, RFC 4302 §3.3.3.1) and
#      gives back the inner packet; scapy building the same packet (AH has no IV) gives ours byte
#      for byte, ICV and IPv6 8-byte alignment padding included; all backends agree;
#  (b) scapy's packets (with the mutable fields then changed, as routers would) -> we verify and
#      decapsulate them; a replay and a flipped payload byte are dropped.
# AH with AES-GMAC (scapy has none) is in test_gmac.py.
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oraclelib import Xform, Engine, Report, BACKENDS, OUTER, INNER, DriverError  # noqa: E402
from scapyutil import (IP, IPv6, AH, raw, inner_packets, parse_ip, scapy_sa,  # noqa: E402
                       dstopt_placement_differs, IPv6ExtHdrHopByHop, IPOption_Router_Alert, IPOption_RR)

SPI = 0x0badcafe
XFORMS = [Xform('ah', 'none', 0, a) for a in ('md5', 'sha1', 'sha256', 'sha384', 'sha512')]
LAYOUTS = [('tunnel', 4, 4), ('tunnel', 6, 6), ('tunnel', 4, 6), ('tunnel', 6, 4),
           ('transport', 4, 4), ('transport', 6, 6)]
R = Report('scapy AH oracle')
coverage = {}


def sa_addr(mode, ifam, ofam):
    return OUTER[ofam] if mode == 'tunnel' else INNER[ifam]


def scapy_encrypt(sa, pkt, lo, hi):
    # scapy 2.5.0 QUIRK: seq_num=0 falls back to the SA's counter (`seq_num or self.seq_num`).
    sa.seq_num = lo
    return sa.encrypt(pkt, seq_num=lo, esn=hi)


def mangle_mutable(b):
    """Change what routers may change on the way (RFC 4302 §3.3.3.1): TTL/hop limit, DSCP/ECN,
    the IPv6 flow label (AH excludes it), IPv4 DF and checksum. The ICV must still verify."""
    p = parse_ip(b)
    if p.version == 4:
        p.ttl = max(1, p.ttl - 3)
        p.tos ^= 0x20  # DSCP only: an ECN change has its own rules (RFC 6040) and tests
        p.flags = 'DF'
        del p.chksum
    else:
        p.hlim = max(1, p.hlim - 3)
        p.tc ^= 0x20
        p.fl ^= 0x5a5a5
    return raw(p)


def outbound(eng, xf, mode, ifam, ofam, esn, ctx):
    src, dst = sa_addr(mode, ifam, ofam)
    inners = inner_packets(ifam, mode == 'transport', seed=len(ctx))
    first = 0x1fffffffe if esn else 0x20 + len(ctx)
    outs = {}
    for b in BACKENDS:
        if eng.sa(dir='out', mode=mode, src=src, dst=dst, spi=SPI, esn=int(esn), seq=first, backend=b,
                  **xf.sa_args()) is None:
            continue
        res = eng.burst(inners)
        bad = [r for r in res if r[0] != 'ok']
        if bad:
            R.fail(ctx + ' ' + b, 'outbound dropped packets: %s' % bad)
            continue
        outs[b] = res
        coverage.setdefault(('out', xf.name), set()).add((mode, ifam, ofam, esn, b))
    if not outs:
        R.fail(ctx, 'no backend accepted the transform')
        return
    ref_b = next(iter(outs))
    ref = outs[ref_b]
    for b, res in outs.items():
        for i, (r0, r1) in enumerate(zip(ref, res)):
            if b != ref_b:
                R.check_eq('%s pkt %d' % (ctx, i), 'backend %s vs %s output' % (b, ref_b), r1[3], r0[3], ref_b)
    for i, r in enumerate(ref):
        pctx = '%s pkt %d (%d bytes inner)' % (ctx, i, len(inners[i]))
        try:
            seq, pkt = r[1], r[3]
            hi, lo = seq >> 32, seq & 0xffffffff
            if seq != first + i:
                R.fail(pctx, 'sequence number %#x, expected %#x' % (seq, first + i))
                continue
            p = parse_ip(pkt)
            inner = parse_ip(inners[i])
            if mode == 'tunnel':
                want_tos = inner.tos if ifam == 4 else inner.tc
                if ofam == 4:
                    okh = (p.src == src and p.dst == dst and p.ttl == 64 and p.tos == want_tos and
                           p.proto == 51 and p.len == len(pkt) and
                           bool(p.flags.DF) == (ifam == 6 or bool(inner.flags.DF)))
                else:
                    okh = (p.src == src and p.dst == dst and p.hlim == 64 and p.tc == want_tos and
                           p.nh == 51 and p.plen == len(pkt) - 40)
                if not okh:
                    R.fail(pctx, 'outer header wrong: %s' % p.summary())
                    continue
            a = p[AH]
            if a.spi != SPI or a.seq != lo:
                R.fail(pctx, 'AH header spi %#x seq %#x' % (a.spi, a.seq))
                continue
            th = None
            if mode == 'tunnel':
                th = p.copy()
                th.remove_payload()
            sa = scapy_sa(xf, SPI, tunnel_hdr=th, esn=esn)
            try:
                # scapy 2.5.0 QUIRK: bind_layers(AH, IP, nh=IPPROTO_IP) binds next header 0, not 4,
                # so an AH tunnel payload comes back as Raw: compare bytes.
                dec = sa.decrypt(parse_ip(pkt), esn=hi)
            except Exception as ex:
                R.fail(pctx, 'scapy rejected our packet: %r\n  ours: %s...' % (ex, pkt.hex()[:160]))
                continue
            R.check_eq(pctx, 'inner packet after scapy verify', inners[i], raw(dec), 'scapy')
            if mode == 'transport' and dstopt_placement_differs(inners[i]):
                continue  # scapy puts AH after the destination options, we before: both valid
            q = scapy_encrypt(sa, inner, lo, hi)
            R.check_eq(pctx, 'whole packet vs scapy AH of the same packet', pkt, raw(q), 'scapy')
        except Exception as ex:  # garbage from a broken engine must fail, not crash
            R.fail(pctx, 'exception while checking: %r' % ex)


def inbound(eng, xf, mode, ifam, ofam, esn, ctx, variant):
    src, dst = sa_addr(mode, ifam, ofam)
    inners = inner_packets(ifam, mode == 'transport', seed=len(ctx) + 1)
    th = None
    if mode == 'tunnel':
        th = IP(src=src, dst=dst, ttl=50) if ofam == 4 else IPv6(src=src, dst=dst, hlim=50)
        if ofam == 6 and variant == 1:
            th = th / IPv6ExtHdrHopByHop()  # an extension header before AH in the outer packet
        if ofam == 4 and variant == 1:
            # Outer IPv4 options: router alert (immutable) and record route (mutable, zeroed).
            th.options = [IPOption_Router_Alert(), IPOption_RR(routers=['203.0.113.9', '203.0.113.10'])]
    sa = scapy_sa(xf, SPI, tunnel_hdr=th, esn=esn)
    if esn:
        top = 0x300000002 if variant == 0 else 0x2fffffff0
        seqs = ([0x2fffffff8, 0x300000001, 0x300000005, 0x2fffffe00, 0x300000100, 0x300000006, 0x300000007]
                if variant == 0 else
                [0x2fffffff1, 0x300000002, 0x2ffffffe0, 0x300000003, 0x300000004, 0x300000005, 0x2fffffff2])
    else:
        top = 0 if variant == 0 else 77777
        seqs = [top + 1, top + 3, top + 2, top + 1000, top + 7, top + 8, top + 9]
    seqs = seqs[:len(inners)]
    wire = [mangle_mutable(raw(scapy_encrypt(sa, parse_ip(inn), s & 0xffffffff, s >> 32)))
            for inn, s in zip(inners, seqs)]
    fresh = max(seqs) + 1
    good_fresh = raw(scapy_encrypt(sa, parse_ip(inners[0]), fresh & 0xffffffff, fresh >> 32))
    tam = bytearray(good_fresh)
    tam[-1] ^= 0x01
    any_b = False
    for b in BACKENDS:
        if eng.sa(dir='in', mode=mode, src=src, dst=dst, spi=SPI, esn=int(esn), top=top, backend=b,
                  **xf.sa_args()) is None:
            continue
        any_b = True
        coverage.setdefault(('in', xf.name), set()).add((mode, ifam, ofam, esn, b))
        bctx = '%s %s' % (ctx, b)
        res = eng.burst(wire)
        for i, r in enumerate(res):
            pctx = '%s pkt %d seq %#x' % (bctx, i, seqs[i])
            if r[0] != 'ok':
                R.fail(pctx, 'dropped (%s) a packet scapy built: %s...' % (r[1], wire[i].hex()[:160]))
                continue
            if r[1] != seqs[i]:
                R.fail(pctx, 'reported sequence number %#x' % r[1])
                continue
            if mode == 'tunnel':
                R.check_eq(pctx, 'inner packet after our AH verify', r[3], inners[i], 'original')
            else:
                want = parse_ip(inners[i])
                got = parse_ip(r[3])
                # Transport: the header keeps what routers changed (TTL, TOS, DF, flow label).
                R.check_eq(pctx, 'payload after our AH verify', raw(got.payload), raw(want.payload), 'original')
        neg = eng.burst([wire[0], bytes(tam), good_fresh])
        for (w, what), r in zip([('replay', 'a replay'), ('icv', 'a flipped payload byte'),
                                 (None, 'the untampered packet')], neg):
            if (w is None and r[0] == 'ok') or (w is not None and r[0] == 'drop' and r[1] == w):
                R.ok()
            else:
                R.fail(bctx, '%s: expected %s, got %s' % (what, w or 'ok', r[:2]))
    if not any_b:
        R.fail(ctx, 'no backend accepted the transform')


def main():
    t0 = time.time()
    eng = Engine()
    try:
        R.selftest(eng, lambda: (outbound(eng, XFORMS[2], 'tunnel', 6, 4, True, 'selftest out'),
                                 inbound(eng, XFORMS[2], 'transport', 4, 4, False, 'selftest in', 1)),
                   (0, 30, 2**31 - 1))
        k = 0
        for xf in XFORMS:
            for (mode, ifam, ofam) in LAYOUTS:
                for esn in (False, True):
                    k += 1
                    if mode == 'tunnel':
                        ctx = '%s tunnel %d-in-%d esn=%d' % (xf.name, ifam, ofam, esn)
                    else:
                        ctx = '%s transport IPv%d esn=%d' % (xf.name, ifam, esn)
                    outbound(eng, xf, mode, ifam, ofam, esn, ctx)
                    inbound(eng, xf, mode, ifam, ofam, esn, ctx, k % 2)
        eng.close()
    except DriverError as ex:
        R.fail('driver', str(ex))
    for d in ('out', 'in'):
        print('direction %s:' % ('ours->scapy' if d == 'out' else 'scapy->ours'))
        for xf in XFORMS:
            c = coverage.get((d, xf.name), set())
            print('  %-22s %2d mode/family/esn combinations, backends %s' % (
                xf.name, len({x[:4] for x in c}), ','.join(sorted({x[4] for x in c}))))
    print('elapsed %.1f s' % (time.time() - t0))
    sys.exit(R.finish())


if __name__ == '__main__':
    main()
