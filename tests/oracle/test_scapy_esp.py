#!/usr/bin/python3
# tests/oracle/test_scapy_esp.py: our ESP engine against scapy 2.5.0's ESP (scapy.layers.ipsec), an
# implementation nobody here wrote, for every ESP transform scapy has, tunnel (4-in-4, 6-in-6,
# 4-in-6, 6-in-4) and transport (IPv4, IPv6 with extension headers), with and without ESN, with and
# without NAT-T (RFC 3948), on every crypto backend that offers the transform:
#  (a) our encrypt -> scapy decrypts to the same inner packet, the HMAC ICV is checked with Python's
#      hmac, the outer header is checked field by field, and scapy re-encrypting the same inner
#      packet with our IV and sequence number gives our packet byte for byte (padding included);
#      every backend gives the same bytes;
#  (b) scapy encrypts (random IVs) -> we decrypt to the same inner packet; a replay of it and a
#      copy with one ciphertext byte flipped are dropped with the right reason.
# GMAC (scapy has none) is in test_gmac.py. Env: ORACLE_QUICK=1 for a smaller matrix.
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oraclelib import Xform, Engine, Report, BACKENDS, OUTER, INNER, DriverError, hexdiff  # noqa: E402
from scapyutil import (IP, IPv6, UDP, ESP, raw, inner_packets, parse_ip, scapy_sa,  # noqa: E402
                       esp_icv, refresh, strip_natt, fix_natt_scapy, dstopt_placement_differs,
                       IPv6ExtHdrHopByHop, IPOption_Router_Alert)

SPI = 0x1234abcd

XFORMS = [
    Xform('esp', 'aes-gcm', 16, 'none'),
    Xform('esp', 'aes-gcm', 32, 'none'),
    Xform('esp', 'chacha', 32, 'none'),
    Xform('esp', 'aes-cbc', 16, 'sha1'),
    Xform('esp', 'aes-cbc', 16, 'sha256'),
    Xform('esp', 'aes-cbc', 16, 'sha384'),
    Xform('esp', 'aes-cbc', 16, 'sha512'),
    Xform('esp', 'aes-cbc', 32, 'sha1'),
    Xform('esp', 'aes-cbc', 32, 'sha256'),
    Xform('esp', 'aes-cbc', 32, 'sha384'),
    Xform('esp', 'aes-cbc', 32, 'sha512'),
    Xform('esp', 'aes-ctr', 16, 'sha1'),
    Xform('esp', 'aes-ctr', 16, 'sha256'),
    Xform('esp', 'aes-ctr', 32, 'sha512'),
    Xform('esp', '3des', 24, 'sha1'),
    Xform('esp', '3des', 24, 'md5'),
    Xform('esp', 'null', 0, 'sha1'),
    Xform('esp', 'null', 0, 'sha256'),
    Xform('esp', 'null', 0, 'sha384'),
    Xform('esp', 'null', 0, 'sha512'),
    Xform('esp', 'null', 0, 'md5'),
]

# (mode, inner family, outer family)
LAYOUTS = [('tunnel', 4, 4), ('tunnel', 6, 6), ('tunnel', 4, 6), ('tunnel', 6, 4),
           ('transport', 4, 4), ('transport', 6, 6)]

R = Report('scapy ESP oracle')
coverage = {}


def note(direction, xf, mode, ifam, ofam, esn, natt, backend):
    key = (direction, xf.name)
    coverage.setdefault(key, set()).add((mode, ifam, ofam, esn, natt, backend))


def sa_addr(mode, ifam, ofam):
    return OUTER[ofam] if mode == 'tunnel' else INNER[ifam]


def iv_len(xf):
    return {'aes-cbc': 16, '3des': 8, 'null': 0}.get(xf.enc, 8)


def outbound(eng, xf, mode, ifam, ofam, esn, natt, ctx):
    src, dst = sa_addr(mode, ifam, ofam)
    inners = inner_packets(ifam, mode == 'transport', seed=len(ctx))
    # ESN: start 2 below a 2^32 boundary so the burst crosses it (high bits 1 -> 2).
    first = 0x1fffffffe if esn else 0x10 + len(ctx)
    outs = {}
    for b in BACKENDS:
        got = eng.sa(dir='out', mode=mode, src=src, dst=dst, spi=SPI, esn=int(esn),
                     natt='4500:4500' if natt else None, seq=first, backend=b, **xf.sa_args())
        if got is None:
            continue
        res = eng.burst(inners)
        bad = [r for r in res if r[0] != 'ok']
        if bad:
            R.fail(ctx + ' ' + b, 'outbound dropped packets: %s' % bad)
            continue
        outs[b] = res
        note('out', xf, mode, ifam, ofam, esn, natt, b)
    if not outs:
        R.fail(ctx, 'no backend accepted the transform')
        return
    ref_b = next(iter(outs))
    ref = outs[ref_b]
    for b, res in outs.items():
        if b == ref_b:
            continue
        for i, (r0, r1) in enumerate(zip(ref, res)):
            R.check_eq('%s pkt %d' % (ctx, i), 'backend %s vs %s output' % (b, ref_b), r1[3], r0[3], ref_b)

    n_icv = xf.icv_len()
    ivl = iv_len(xf)
    hmac_esn = esn and xf.auth != 'none'
    sa_dec = scapy_sa(xf, SPI, tunnel_hdr=IP() if mode == 'tunnel' else None, esn=esn,
                      with_auth=not hmac_esn)
    for i, r in enumerate(ref):
        pctx = '%s pkt %d (%d bytes inner)' % (ctx, i, len(inners[i]))
        try:
            seq, fam, pkt = r[1], r[2], r[3]
            hi, lo = seq >> 32, seq & 0xffffffff
            if seq != first + i or fam != AF(ofam if mode == 'tunnel' else ifam):
                R.fail(pctx, 'sequence number %#x family %d, expected %#x' % (seq, fam, first + i))
                continue
            p = parse_ip(pkt)
            inner = parse_ip(inners[i])
            # Outer header, field by field (tunnel); transport keeps the original header.
            if mode == 'tunnel':
                want_tos = inner.tos if ifam == 4 else inner.tc  # DSCP copied, ECN copied (RFC 6040)
                if ofam == 4:
                    want_df = ifam == 6 or bool(inner.flags.DF)
                    okh = (p.version == 4 and p.src == src and p.dst == dst and p.ttl == 64 and
                           p.tos == want_tos and bool(p.flags.DF) == want_df and not p.flags.MF and
                           p.frag == 0 and p.ihl == 5 and p.len == len(pkt) and
                           p.proto == (17 if natt else 50))
                    okh = okh and raw(IP(pkt))[:20] == raw(refresh(IP(pkt)))[:20]  # checksum
                else:
                    okh = (p.version == 6 and p.src == src and p.dst == dst and p.hlim == 64 and
                           p.tc == want_tos and p.plen == len(pkt) - 40 and p.nh == (17 if natt else 50))
                if not okh:
                    R.fail(pctx, 'outer header wrong: %s' % p.summary())
                    continue
            if natt:
                u = p[UDP]
                want_ck = raw(refresh(parse_ip(pkt)))  # scapy recomputes the IPv6 UDP checksum
                if (u.sport != 4500 or u.dport != 4500 or u.len != len(raw(u)) or
                        (p.version == 4 and u.chksum != 0) or (p.version == 6 and want_ck != pkt)):
                    R.fail(pctx, 'NAT-T UDP header wrong: %s\n%s' % (u.summary(), hexdiff(pkt, want_ck)))
                    continue
                p = strip_natt(p)
            e = p[ESP]
            if e.spi != SPI or e.seq != lo:
                R.fail(pctx, 'ESP header spi %#x seq %#x' % (e.spi, e.seq))
                continue
            if hmac_esn:
                eb = raw(e)
                want = esp_icv(xf, eb[:-n_icv], hi, True)
                if not R.check_eq(pctx, 'HMAC ICV with ESN (Python hmac)', eb[-n_icv:], want, 'hmac'):
                    continue
                e.data = e.data[:-n_icv]
                p = refresh(p)
            try:
                dec = sa_dec.decrypt(p, esn=hi)
            except Exception as ex:  # scapy raises IPSecIntegrityError on a bad ICV
                R.fail(pctx, 'scapy could not decrypt our packet: %r\n  ours: %s...' % (ex, pkt.hex()[:160]))
                continue
            R.check_eq(pctx, 'inner packet after scapy decrypt', inners[i], raw(dec), 'scapy')
            if mode == 'transport' and dstopt_placement_differs(inners[i]):
                continue  # scapy puts ESP after the destination options, we before: both valid
            # Same inner packet, our IV and sequence number, our outer header: scapy's packet must be ours.
            iv = raw(parse_ip(pkt)[ESP])[8:8 + ivl] if ivl else b''
            th = None
            if mode == 'tunnel':
                th = parse_ip(pkt).copy()
                th.remove_payload()
            sa_enc = scapy_sa(xf, SPI, tunnel_hdr=th, natt=natt, esn=esn, with_auth=not hmac_esn)
            q = scapy_encrypt(sa_enc, inner, lo, hi, iv)
            if hmac_esn:
                q[ESP].data += esp_icv(xf, raw(q[ESP]), hi, True)
                q = refresh(q)
            if natt:
                q = fix_natt_scapy(q)
            R.check_eq(pctx, 'whole packet vs scapy re-encryption with our IV', pkt, raw(q), 'scapy')
        except Exception as ex:  # garbage from a broken engine must fail, not crash
            R.fail(pctx, 'exception while checking: %r' % ex)


def scapy_encrypt(sa, pkt, lo, hi, iv=None):
    """scapy 2.5.0 QUIRK: encrypt(seq_num=0) silently uses the SA's counter instead (`seq_num or
    self.seq_num`), and with ESN the low half of a valid 64-bit number can be 0: set the counter."""
    sa.seq_num = lo
    return sa.encrypt(pkt, seq_num=lo, iv=iv, esn=hi)


def AF(fam):
    return 2 if fam == 4 else 10


def inbound(eng, xf, mode, ifam, ofam, esn, natt, ctx, variant):
    src, dst = sa_addr(mode, ifam, ofam)
    inners = inner_packets(ifam, mode == 'transport', seed=len(ctx) + 1)
    hmac_esn = esn and xf.auth != 'none'
    n_icv = xf.icv_len()
    th = None
    if mode == 'tunnel':
        th = IP(src=src, dst=dst, ttl=50) if ofam == 4 else IPv6(src=src, dst=dst, hlim=50)
        if ofam == 6 and variant == 1:
            th = th / IPv6ExtHdrHopByHop()  # an extension header before ESP in the outer packet
        if ofam == 4 and variant == 1:
            th.options = [IPOption_Router_Alert()]  # an outer IPv4 header with options
    # Variant 1: the NAT changed the source port (only the destination port says ESP-in-UDP).
    sa = scapy_sa(xf, SPI, tunnel_hdr=th, natt=natt, esn=esn, with_auth=not hmac_esn,
                  natt_sport=61234 if variant == 1 else 4500)
    if esn:
        # Replay-window high-bit inference (RFC 4303 A.2): variant 0 has the window straddle a 2^32
        # boundary (a number just below it belongs to the previous subspace), variant 1 a top near
        # the end of a subspace and numbers that wrapped into the next one.
        if variant == 0:
            top = 0x200000003
            seqs = [0x1fffffff0, 0x200000001, 0x200000004, 0x1fffffc10, 0x200000100, 0x200000005, 0x200000006]
        else:
            top = 0x1ffffff00
            seqs = [0x1ffffff01, 0x200000010, 0x1fffffef0, 0x200000011, 0x200000012, 0x200000013, 0x1ffffff02]
    else:
        top = 0 if variant == 0 else 5000
        seqs = [top + 1, top + 3, top + 2, top + 1000, top + 7, top + 8, top + 9]
    seqs = seqs[:len(inners)]
    wire = []
    for inner, s in zip(inners, seqs):
        q = scapy_encrypt(sa, parse_ip(inner), s & 0xffffffff, s >> 32)
        if hmac_esn:
            q[ESP].data += esp_icv(xf, raw(q[ESP]), s >> 32, True)
            q = refresh(q)
        if natt:
            q = fix_natt_scapy(q)
        wire.append(raw(q))
    any_backend = False
    for b in BACKENDS:
        got = eng.sa(dir='in', mode=mode, src=src, dst=dst, spi=SPI, esn=int(esn),
                     natt='4500:4500' if natt else None, top=top, backend=b, **xf.sa_args())
        if got is None:
            continue
        any_backend = True
        note('in', xf, mode, ifam, ofam, esn, natt, b)
        bctx = '%s %s' % (ctx, b)
        res = eng.burst(wire)
        for i, r in enumerate(res):
            pctx = '%s pkt %d seq %#x' % (bctx, i, seqs[i])
            if r[0] != 'ok':
                R.fail(pctx, 'dropped (%s) a packet scapy encrypted: %s...' % (r[1], wire[i].hex()[:160]))
                continue
            if r[1] != seqs[i]:
                R.fail(pctx, 'reported sequence number %#x' % r[1])
                continue
            R.check_eq(pctx, 'inner packet after our decrypt', r[3], inners[i], 'original')
        # Negative checks on the same SA: a replay, and a flipped byte in the last ciphertext
        # byte before the ICV (the next-header byte under the cipher or the HMAC).
        tam = bytearray(wire[1])
        tam[len(tam) - n_icv - 1] ^= 0x40
        fresh_seq = max(seqs) + 1
        q = scapy_encrypt(sa, parse_ip(inners[0]), fresh_seq & 0xffffffff, fresh_seq >> 32)
        if hmac_esn:
            q[ESP].data += esp_icv(xf, raw(q[ESP]), fresh_seq >> 32, True)
            q = refresh(q)
        if natt:
            q = fix_natt_scapy(q)
        tam2 = bytearray(raw(q))
        tam2[len(tam2) - n_icv - 1] ^= 0x40
        st0 = eng.rt()
        neg = eng.burst([wire[0], bytes(tam2), raw(q)])
        want = [('replay', 'a replay'), ('icv', 'a flipped ciphertext byte'), (None, 'the untampered packet')]
        for (w, what), r in zip(want, neg):
            if w is None:
                if r[0] != 'ok':
                    R.fail(bctx, '%s was dropped (%s) after a tampered copy was' % (what, r[1]))
                else:
                    R.ok()
            elif r[0] != 'drop' or r[1] != w:
                R.fail(bctx, '%s: expected drop %s, got %s' % (what, w, r[:2]))
            else:
                R.ok()
        st1 = eng.rt()
        if st1['top'] != max(st0['top'], fresh_seq):
            R.fail(bctx, 'replay top %#x after the negative checks, expected %#x' % (st1['top'], fresh_seq))
    if not any_backend:
        R.fail(ctx, 'no backend accepted the transform')


def seq_overflow(eng):
    """Without ESN the 32-bit counter must not wrap (RFC 4303 §3.3.3): the last number is sent,
    the next packet is refused with SEQ_OVERFLOW."""
    xf = XFORMS[0]
    inners = inner_packets(4, False)[:3]
    eng.sa(dir='out', mode='tunnel', src=OUTER[4][0], dst=OUTER[4][1], spi=SPI, seq=0xfffffffe, **xf.sa_args())
    res = eng.burst(inners)
    got = [(r[0], r[1]) for r in res]
    if got != [('ok', 0xfffffffe), ('ok', 0xffffffff), ('drop', 'seq_overflow')]:
        R.fail('seq overflow', 'expected ok, ok, drop seq_overflow; got %s' % got)
    else:
        R.ok()


def fixed_iv(eng):
    """The engine's test hook esp_sa_opts.iv_fn (oracle_drv iv=): the packet carries exactly the IV
    given, and scapy encrypting with that IV produces our packet."""
    for xf, iv in ((XFORMS[4], bytes(range(0xa0, 0xb0))), (XFORMS[0], bytes(range(0x10, 0x18))),
                   (XFORMS[14], bytes(range(0x30, 0x38)))):
        ctx = 'fixed iv %s' % xf.name
        src, dst = OUTER[4]
        inner = inner_packets(4, False)[1]
        eng.sa(dir='out', mode='tunnel', src=src, dst=dst, spi=SPI, seq=9, iv=iv.hex(), **xf.sa_args())
        r = eng.burst([inner])[0]
        if r[0] != 'ok':
            R.fail(ctx, 'dropped: %s' % (r,))
            continue
        p = parse_ip(r[3])
        th = p.copy()
        th.remove_payload()
        if raw(p[ESP])[8:8 + len(iv)] != iv:
            R.fail(ctx, 'the packet does not carry the IV given: %s' % raw(p[ESP])[8:8 + len(iv)].hex())
            continue
        q = scapy_encrypt(scapy_sa(xf, SPI, tunnel_hdr=th), parse_ip(inner), 9, 0, iv)
        R.check_eq(ctx, 'packet vs scapy with the same IV', r[3], raw(q), 'scapy')


def big_burst(eng):
    """More than ESP_BURST_MAX (64) packets in one call: the engine works in chunks and must still
    return every good packet first in original order (oracle_drv checks the partition) with the
    right result: 150 outbound packets decrypted by scapy, then 150 scapy packets inbound with every
    7th tampered and every 11th a copy of the one before (a replay), on each backend."""
    for xf in (XFORMS[0], XFORMS[4]):
        src, dst = OUTER[6]
        base = inner_packets(4, False)
        inners = [base[i % len(base)] for i in range(150)]
        for b in BACKENDS:
            ctx = 'big burst %s %s' % (xf.name, b)
            if eng.sa(dir='out', mode='tunnel', src=src, dst=dst, spi=SPI, seq=100, backend=b, **xf.sa_args()) is None:
                continue
            sa = scapy_sa(xf, SPI, tunnel_hdr=IP())
            res = eng.burst(inners)
            bad = 0
            for i, r in enumerate(res):
                try:
                    if r[0] != 'ok' or r[1] != 100 + i or raw(sa.decrypt(parse_ip(r[3]))) != inners[i]:
                        bad += 1
                except Exception:
                    bad += 1
            if bad:
                R.fail(ctx, '%d of 150 outbound packets wrong' % bad)
            else:
                R.ok()
            sa = scapy_sa(xf, SPI, tunnel_hdr=IPv6(src=src, dst=dst))
            wire, want = [], []
            for i in range(150):
                if i % 11 == 10:
                    wire.append(wire[-1])
                    want.append('replay' if want[-1] == 'ok' else want[-1] if want[-1] == 'icv' else 'replay')
                    continue
                w = bytearray(raw(scapy_encrypt(sa, parse_ip(inners[i]), 1 + i, 0)))
                if i % 7 == 3:
                    w[-3] ^= 0x10
                    want.append('icv')
                else:
                    want.append('ok')
                wire.append(bytes(w))
            eng.sa(dir='in', mode='tunnel', src=src, dst=dst, spi=SPI, backend=b, **xf.sa_args())
            got = [r[0] if r[0] == 'ok' else r[1] for r in eng.burst(wire)]
            outs_ok = all(r == w for r, w in zip(got, want))
            if not outs_ok:
                R.fail(ctx, 'inbound results differ at %s' % [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w][:8])
            else:
                R.ok()


def outer_fields(eng):
    """SA options that shape the outer header (checked on scapy's parse of our packets) and RFC 6040
    ECN decapsulation (expected values from RFC 6040 §4.2 Figure 4, not from the engine):
    fixed DSCP, TTL, DF set/clear/copy, compatibility mode (no ECN), DSCP copied on decapsulation."""
    xf = XFORMS[0]
    src, dst = OUTER[4]
    s4, d4 = INNER[4]
    # (SA options, inner tos, inner DF, expected outer tos, outer DF, outer TTL)
    cases = [({'dscp': 46}, 0x02, True, (46 << 2) | 2, True, 64),
             ({'ttl': 17}, 0xb9, False, 0xb9, False, 17),
             ({'flags': 0x20}, 0x00, False, 0x00, True, 64),     # SADB_SAF_DF_SET
             ({'flags': 0x10}, 0x00, True, 0x00, False, 64),     # SADB_SAF_DF_CLEAR
             ({'flags': 0x08}, 0xbb, True, 0xb8, True, 64)]      # SADB_SAF_NO_ECN: Not-ECT outside
    for opts, tos, df, wtos, wdf, wttl in cases:
        ctx = 'outer header %s' % opts
        inner = raw(IP(src=s4, dst=d4, tos=tos, flags='DF' if df else 0) / UDP(sport=1, dport=2) / b'x')
        eng.sa(dir='out', mode='tunnel', src=src, dst=dst, spi=SPI, **dict(xf.sa_args(), **opts))
        r = eng.burst([inner])[0]
        try:
            p = parse_ip(r[3])
            got = (p.tos, bool(p.flags.DF), p.ttl)
        except Exception as ex:
            R.fail(ctx, 'no packet (%s, %r)' % (r[:2], ex))
            continue
        if got != (wtos, wdf, wttl):
            R.fail(ctx, 'outer (tos, DF, TTL) = %s, expected %s' % (got, (wtos, wdf, wttl)))
        else:
            R.ok()
    # Decapsulation: (outer ECN, inner ECN) -> inner ECN or None for a drop (RFC 6040 Figure 4).
    table = {(0, 0): 0, (0, 1): 1, (0, 2): 2, (0, 3): 3, (1, 0): 0, (1, 1): 1, (1, 2): 1, (1, 3): 3,
             (2, 0): 0, (2, 1): 1, (2, 2): 2, (2, 3): 3, (3, 0): None, (3, 1): 3, (3, 2): 3, (3, 3): 3}
    for decap_dscp in (False, True):
        wire, want = [], []
        for i, ((o, inn), res) in enumerate(sorted(table.items())):
            inner = raw(IP(src=s4, dst=d4, tos=(10 << 2) | inn) / UDP(sport=1, dport=2) / b'y')
            sa = scapy_sa(xf, SPI, tunnel_hdr=IP(src=src, dst=dst, tos=(34 << 2) | o))
            wire.append(raw(scapy_encrypt(sa, parse_ip(inner), 1 + i, 0)))
            want.append(None if res is None else ((34 if decap_dscp else 10) << 2) | res)
        eng.sa(dir='in', mode='tunnel', src=src, dst=dst, spi=SPI, flags=0x04 if decap_dscp else 0, **xf.sa_args())
        for (key, w), r in zip(sorted(table.items()), eng.burst(wire)):
            ctx = 'decap ECN outer %d inner %d decap_dscp=%d' % (key[0], key[1], decap_dscp)
            got = parse_ip(r[3]).tos if r[0] == 'ok' else None
            wt = want[sorted(table).index(key)]
            if got != wt:
                R.fail(ctx, 'inner tos %s, expected %s (%s)' % (got, wt, r[:2]))
            elif r[0] == 'ok' and raw(IP(r[3]))[:20] != raw(refresh(IP(r[3])))[:20]:
                R.fail(ctx, 'inner IPv4 checksum not updated after the ECN/DSCP change')
            else:
                R.ok()


def tfc(eng):
    """TFC padding (RFC 4303 §2.7): our tunnel packets padded to 300 bytes decrypt in scapy to the
    inner packet followed by zeros; scapy's packets carrying zeros after the inner packet (what a TFC
    sender emits) decrypt with us to exactly the inner packet."""
    for xf in (XFORMS[0], XFORMS[4], XFORMS[16]):
        for ifam, ofam in ((4, 4), (6, 6), (4, 6)):
            ctx = 'tfc %s %d-in-%d' % (xf.name, ifam, ofam)
            src, dst = OUTER[ofam]
            inners = inner_packets(ifam, False)[:3]
            if eng.sa(dir='out', mode='tunnel', src=src, dst=dst, spi=SPI, seq=7, tfc=300, **xf.sa_args()) is None:
                R.fail(ctx, 'SA refused')
                continue
            sa = scapy_sa(xf, SPI, tunnel_hdr=IP())
            for i, r in enumerate(eng.burst(inners)):
                try:
                    if r[0] != 'ok':
                        R.fail(ctx, 'outbound dropped: %s' % (r,))
                        continue
                    d = raw(sa.decrypt(parse_ip(r[3])))
                    n = len(inners[i])
                    if d[:n] != inners[i] or any(d[n:]) or len(d) < 300:
                        R.fail('%s pkt %d' % (ctx, i), 'scapy got %d bytes, want the inner %d bytes + zeros to >= 300:\n%s'
                               % (len(d), n, hexdiff(d[:n], inners[i])))
                    else:
                        R.ok()
                except Exception as ex:
                    R.fail('%s pkt %d' % (ctx, i), 'exception %r' % ex)
            th = IP(src=src, dst=dst) if ofam == 4 else IPv6(src=src, dst=dst)
            sa = scapy_sa(xf, SPI, tunnel_hdr=th)
            wire = [raw(scapy_encrypt(sa, parse_ip(inn + bytes(64 + 7 * i)), 1 + i, 0)) for i, inn in enumerate(inners)]
            eng.sa(dir='in', mode='tunnel', src=src, dst=dst, spi=SPI, **xf.sa_args())
            for i, r in enumerate(eng.burst(wire)):
                if r[0] != 'ok':
                    R.fail(ctx, 'inbound dropped a TFC-padded packet: %s' % (r[:2],))
                else:
                    R.check_eq('%s in pkt %d' % (ctx, i), 'inner packet (TFC zeros cut off)', r[3], inners[i])


def main():
    t0 = time.time()
    quick = os.environ.get('ORACLE_QUICK') == '1'
    eng = Engine()
    try:
        seq_overflow(eng)
        fixed_iv(eng)
        big_burst(eng)
        outer_fields(eng)
        tfc(eng)
        for xf in (XFORMS[0], XFORMS[4]):
            R.selftest(eng, lambda: (outbound(eng, xf, 'tunnel', 4, 6, True, True, 'selftest out'),
                                     inbound(eng, xf, 'transport', 6, 6, True, False, 'selftest in', 0)),
                       (0, 33, 2**31 - 1))
        k = 0
        for xf in XFORMS:
            for (mode, ifam, ofam) in LAYOUTS:
                for esn in (False, True):
                    for natt in (False, True):
                        k += 1
                        if quick and k % 5:
                            continue
                        ctx = '%s %s %d-in-%d esn=%d natt=%d' % (xf.name, mode, ifam, ofam, esn, natt)
                        if mode == 'transport':
                            ctx = '%s transport IPv%d esn=%d natt=%d' % (xf.name, ifam, esn, natt)
                        outbound(eng, xf, mode, ifam, ofam, esn, natt, ctx)
                        inbound(eng, xf, mode, ifam, ofam, esn, natt, ctx, k % 2)
        eng.close()
    except DriverError as ex:
        R.fail('driver', str(ex))
    # Coverage summary: transforms x (mode, families, esn, natt) x backends per direction.
    for d in ('out', 'in'):
        print('direction %s:' % ('ours->scapy' if d == 'out' else 'scapy->ours'))
        for xf in XFORMS:
            c = coverage.get((d, xf.name), set())
            bks = sorted({x[5] for x in c})
            combos = len({x[:5] for x in c})
            print('  %-28s %2d mode/family/esn/natt combinations, backends %s' % (xf.name, combos, ','.join(bks)))
    print('elapsed %.1f s' % (time.time() - t0))
    sys.exit(R.finish())


if __name__ == '__main__':
    main()
