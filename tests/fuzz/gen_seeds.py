#!/usr/bin/python3
# tests/fuzz/gen_seeds.py: writes the seed corpora of the libFuzzer targets into DIR/<target>/: valid
# packets for every SA of the fuzz table (tests/fuzz/fuzz_common.h: same keys, derived the same way)
# so the fuzzers start past the SPI, length and ICV checks. Protected packets come from our engine's
# outbound path through tests/oracle/oracle_drv (its correctness is the oracle tests' business); the
# plaintext-form seeds of fuzz_esp_plain and the inner packets of fuzz_roundtrip are built with scapy.
# Usage: gen_seeds.py DIR   (env top_builddir: where oracle_drv is)
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'oracle'))
from oraclelib import Engine, ENC, AUTH  # noqa: E402
from scapyutil import IP, IPv6, UDP, Raw, raw, inner_packets, parse_ip  # noqa: E402

# (proto, enc, key length, auth, auth key length, iv length, icv length): fz_xforms[] in fuzz_common.h
XFORMS = [(p, ENC[e], k, AUTH[a], ak, iv, icv) for p, e, k, a, ak, iv, icv in (
    ('esp', 'aes-gcm', 16, 'none', 0, 8, 16), ('esp', 'aes-gcm', 32, 'none', 0, 8, 16),
    ('esp', 'aes-gmac', 16, 'none', 0, 8, 16), ('esp', 'chacha', 32, 'none', 0, 8, 16),
    ('esp', 'aes-cbc', 16, 'sha1', 20, 16, 12), ('esp', 'aes-cbc', 32, 'sha256', 32, 16, 16),
    ('esp', 'aes-ctr', 16, 'sha256', 32, 8, 16), ('esp', '3des', 24, 'sha1', 20, 8, 12),
    ('esp', 'null', 0, 'sha256', 32, 0, 16), ('esp', 'null', 0, 'md5', 16, 0, 12),
    ('esp', 'aes-cbc', 16, 'sha512', 64, 16, 32), ('esp', 'aes-cbc', 16, 'sha384', 48, 16, 24),
    ('ah', 'none', 0, 'sha1', 20, 0, 12), ('ah', 'none', 0, 'sha384', 48, 0, 24),
    ('ah', 'none', 0, 'gmac128', 20, 8, 16), ('ah', 'none', 0, 'md5', 16, 0, 12))]
SALTED = (ENC['aes-gcm'], ENC['aes-gmac'], ENC['chacha'], ENC['aes-ctr'])
OUT_SRC, OUT_DST = '192.0.2.1', '198.51.100.2'


def sa_args(xf, tunnel, esn, natt, direction):
    proto, enc, klen, auth, aklen, _, _ = XFORMS[xf]
    a = {'dir': direction, 'proto': proto, 'mode': 'tunnel' if tunnel else 'transport',
         'spi': 0x100 + xf, 'enc': enc, 'auth': auth, 'esn': int(esn), 'src': OUT_SRC, 'dst': OUT_DST}
    if klen:
        a['ekey'] = bytes((0x11 * (xf + 1) + 7 * i) & 0xff for i in range(klen)).hex()
    if enc in SALTED:
        a['salt'] = 'cafebabe'
    if aklen:
        a['akey'] = bytes((0x33 + 5 * i + xf) & 0xff for i in range(aklen)).hex()
    if natt:
        a['natt'] = '4500:4500'
    return a


def cfg(xf, tunnel, esn, backend=0):
    return (xf % 12 if xf < 12 else xf - 12) | (16 if tunnel else 0) | (32 if esn else 0) | (backend << 6)


def write(d, name, data):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def plain_esp(xf, tunnel, natt, inner, seq):
    """A received ESP packet with its payload in plaintext and a zero ICV (fuzz_esp_plain fills it)."""
    _, _, _, _, _, ivl, icvl = XFORMS[xf]
    blk = 16 if XFORMS[xf][1] == ENC['aes-cbc'] else 8 if XFORMS[xf][1] == ENC['3des'] else 4
    p = parse_ip(inner)
    if tunnel:
        data, nh = inner, 4 if p.version == 4 else 41
        hdr = IP(src=OUT_SRC, dst=OUT_DST)
    else:
        data, nh = raw(p.payload), p.proto if p.version == 4 else p.nh
        hdr = p.copy()
        hdr.remove_payload()
    pad = -(len(data) + 2) % blk
    body = struct.pack('!II', 0x100 + xf, seq) + bytes(range(7, 7 + ivl)) + data + bytes(range(1, pad + 1)) + \
        bytes([pad, nh]) + bytes(icvl)
    if hdr.version == 4:
        hdr.proto = 17 if natt else 50
        del hdr.len
        del hdr.chksum
    else:
        hdr.nh = 17 if natt else 50
        del hdr.plen
    pkt = hdr / UDP(sport=4500, dport=4500, chksum=0) / Raw(body) if natt else hdr / Raw(body)
    return raw(pkt)


def reasm_seeds(out):
    """fuzz_reasm programs (see its op_* comments): a cfg byte, then operations."""
    d = os.path.join(out, 'fuzz_reasm')
    piece = lambda k, j, var=0: bytes([0 | var << 3, k, j])
    custom = lambda k, off, ln, fl: bytes([3, k]) + struct.pack('!HH', off, ln) + bytes([fl])
    plan = lambda k, total, pc, hdr: bytes([4, k]) + struct.pack('!H', total) + bytes([pc, hdr])
    adv = lambda a: bytes([5, a])
    whole = lambda k, mode=0, rot=0: bytes([7 | mode << 3, k, rot])
    seeds = {
        # the worker's table: IPv4 and IPv6 (with extension headers) datagrams, interleaved
        'worker-v4v6': b'\x00' + plan(0, 3000, 127, 0x25) + plan(1, 3000, 127, 0x0e) +
        b''.join(piece(0, j) + piece(1, 2 - j) for j in range(3)) + whole(4, 1) + whole(5, 2),
        'worker-esp-udp-ah': b'\x04' + whole(2) + whole(6, 3, 1) + whole(3) + whole(7, 1) + bytes([6]),
        # small tables: more datagrams than slots, fragment and byte limits
        'limits': b'\x01' + b''.join(piece(k, 0) for k in range(0, 20, 4)) + whole(8, 1) + whole(9) +
        plan(12, 5000, 0, 0) + whole(12),
        'frags2': b'\x03' + plan(0, 24, 0, 0) + whole(0) + whole(1) + whole(16, 1),
        # timeouts: a datagram older than the timeout, the periodic expiry
        'timeout': b'\x02' + piece(0, 0) + adv(0x80 | 9) + piece(0, 1) + adv(0xc0 | 1) + bytes([6]) +
        whole(0) + piece(1, 0) + adv(0xc0 | 2) + piece(5, 0),
        # an expiry whose clock lags the newest fragments' (read before the table's lock)
        'expire-lag': b'\x00' + piece(0, 0) + piece(1, 0) + bytes([6 | 5 << 3]) + whole(0) + whole(1),
        # duplicates (same bytes) and overlaps (other bytes, other ranges), both families
        'dup-overlap': b'\x00' + plan(0, 64, 3, 0) + plan(1, 64, 3, 0) + piece(0, 0) + piece(0, 0) +
        piece(0, 1, 2) + piece(1, 0) + piece(1, 0) + custom(1, 16, 32, 1) + whole(0) + whole(1, 4),
        # the largest datagrams, offsets near the end of the range, malformed fragments
        'big': b'\x00' + plan(0, 65515, 255, 0) + whole(0) + plan(1, 65495, 255, 0x05) + whole(1, 1) +
        custom(0, 0x1fff, 8, 0) + custom(1, 0xfff8, 9, 0),
        'malformed': b'\x00' + piece(0, 0) + custom(0, 1, 8, 1 | 1 << 3) + custom(1, 8, 8, 1 | 2 << 3) +
        custom(5, 0, 8, 1 | 3 << 3) + custom(4, 0, 8, 3 << 3) + custom(9, 0, 0, 1) + custom(0, 2, 7, 1) +
        custom(1, 0, 40, 0) + custom(4, 0, 40, 0x20 | 0x40),
    }
    for name, data in seeds.items():
        write(d, name, data)
    return len(seeds)


def main():
    out = sys.argv[1]
    n_reasm = reasm_seeds(out)
    eng = Engine()
    n = 0
    inners = inner_packets(4, True) + inner_packets(6, True)
    for xf in range(16):
        is_ah = xf >= 12
        for tunnel in (True, False):
            for esn in (False, True):
                for natt in ((False,) if is_ah else (False, True)):
                    c = cfg(xf, tunnel, esn)
                    # v4 and v6, with IPv4 options and IPv6 extension headers in transport mode.
                    pick = [0, 1, 5, 8] if tunnel else [1, 4, 6, 10]
                    if eng.sa(**sa_args(xf, tunnel, esn, natt, 'out')) is None:
                        continue
                    res = eng.burst([inners[i] for i in pick])
                    target = 'fuzz_ah_in' if is_ah else 'fuzz_udp_in' if natt else 'fuzz_esp_in'
                    for k, r in enumerate(res):
                        if r[0] != 'ok':
                            continue
                        name = 'x%02d-t%d-e%d-%d' % (xf, tunnel, esn, k)
                        write(os.path.join(out, target), name, bytes([c, 0, 4]) + r[3])
                        if is_ah:
                            write(os.path.join(out, 'fuzz_ah_plain'), name, bytes([c, 0]) + r[3])
                        if k < 2:
                            write(os.path.join(out, 'fuzz_parse'), '%s-%s' % (target, name), b'\x11\x94' + r[3])
                        n += 1
                    if not is_ah and not esn:
                        # A burst: six packets, one of them a replay of the first, one far ahead.
                        recs = b''
                        for k, (inn, sq) in enumerate(zip(inners[:3] + inners[5:8], (1, 2, 1, 3000, 4, 5))):
                            pkt = plain_esp(xf, tunnel, natt, inn, sq)
                            recs += struct.pack('!H', len(pkt)) + pkt
                        write(os.path.join(out, 'fuzz_burst'), 'x%02d-t%d-n%d' % (xf, tunnel, natt),
                              bytes([c, 1 if natt else 0]) + recs)
                        n += 1
                    if not is_ah:
                        for k, inn in enumerate(inners[:3] + inners[5:8]):
                            flags = (1 if natt else 0) | (2 if k % 2 else 0)
                            write(os.path.join(out, 'fuzz_esp_plain'), 'x%02d-t%d-e%d-n%d-%d' % (xf, tunnel, esn, natt, k),
                                  bytes([c, flags]) + plain_esp(xf, tunnel, natt, inn, 1 + k))
                            n += 1
                    for k, inn in enumerate(inners[:6] if tunnel else inners[4:6] + inners[10:]):
                        # flags: NAT-T, and on some seeds TFC padding (2) or a path MTU of 1280 (4)
                        # that the 1300-byte packets exceed.
                        fl = (1 if natt else 0) | (2 if k % 3 == 1 else 4 if k % 3 == 2 else 0)
                        write(os.path.join(out, 'fuzz_roundtrip'), 'x%02d-t%d-e%d-n%d-%d' % (xf, tunnel, esn, natt, k),
                              bytes([xf | (16 if tunnel else 0) | (32 if esn else 0), fl]) + inn)
                        n += 1
    eng.close()
    print('gen_seeds: %d seed files in %s' % (n + n_reasm, out))


if __name__ == '__main__':
    main()
