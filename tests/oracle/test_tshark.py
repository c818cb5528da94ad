#!/usr/bin/python3
# tests/oracle/test_tshark.py: tshark 4.0's ESP dissector (Wireshark's own ESP code and libgcrypt), a
# third reader of our packets: our outbound ESP packets go to a pcap, tshark decrypts them with the
# keys given in its esp_sa table and checks the ICV (esp.icv_good), and the inner UDP ports and payload
# it shows must be the ones we sent. AES-GCM-128/256, AES-CBC with HMAC-SHA1/256/384/512, AES-CTR,
# 3DES (SHA1, MD5), NULL; tunnel 4-in-4, 6-in-6, 4-in-6, 6-in-4, transport v4/v6; NAT-T (UDP 4500).
# tshark 4.0 has no ChaCha20-Poly1305, GMAC or ESN in its esp_sa table (those are covered by
# test_scapy_esp.py and test_gmac.py).
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oraclelib import Xform, Engine, Report, OUTER, INNER, DriverError  # noqa: E402
from scapyutil import IP, IPv6, UDP, Raw, raw, payload  # noqa: E402

R = Report('tshark ESP oracle')

GCM = 'AES-GCM with 16 octet ICV [RFC4106]'
CASES = [  # (transform, tshark encryption, tshark authentication)
    (Xform('esp', 'aes-gcm', 16, 'none'), GCM, 'NULL'),
    (Xform('esp', 'aes-gcm', 32, 'none'), GCM, 'NULL'),
    (Xform('esp', 'aes-cbc', 16, 'sha256'), 'AES-CBC [RFC3602]', 'HMAC-SHA-256-128 [RFC4868]'),
    (Xform('esp', 'aes-cbc', 32, 'sha1'), 'AES-CBC [RFC3602]', 'HMAC-SHA-1-96 [RFC2404]'),
    (Xform('esp', 'aes-cbc', 16, 'sha384'), 'AES-CBC [RFC3602]', 'HMAC-SHA-384-192 [RFC4868]'),
    (Xform('esp', 'aes-cbc', 32, 'sha512'), 'AES-CBC [RFC3602]', 'HMAC-SHA-512-256 [RFC4868]'),
    (Xform('esp', 'aes-ctr', 16, 'sha256'), 'AES-CTR [RFC3686]', 'HMAC-SHA-256-128 [RFC4868]'),
    (Xform('esp', 'aes-ctr', 32, 'sha1'), 'AES-CTR [RFC3686]', 'HMAC-SHA-1-96 [RFC2404]'),
    (Xform('esp', '3des', 24, 'sha1'), 'TripleDES-CBC [RFC2451]', 'HMAC-SHA-1-96 [RFC2404]'),
    (Xform('esp', '3des', 24, 'md5'), 'TripleDES-CBC [RFC2451]', 'HMAC-MD5-96 [RFC2403]'),
    (Xform('esp', 'null', 0, 'sha256'), 'NULL', 'HMAC-SHA-256-128 [RFC4868]'),
    (Xform('esp', 'null', 0, 'md5'), 'NULL', 'HMAC-MD5-96 [RFC2403]'),
]
LAYOUTS = [('tunnel', 4, 4, False), ('tunnel', 6, 6, False), ('tunnel', 4, 6, False),
           ('tunnel', 6, 4, False), ('transport', 4, 4, False), ('transport', 6, 6, False),
           ('tunnel', 4, 4, True), ('transport', 6, 6, True)]


def udp_inner(fam, n, sport, dport):
    s, d = INNER[fam]
    ip = IP(src=s, dst=d, flags='DF') if fam == 4 else IPv6(src=s, dst=d)
    return raw(ip / UDP(sport=sport, dport=dport) / Raw(payload(n, sport)))


def write_pcap(path, pkts):
    with open(path, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 101))  # LINKTYPE_RAW
        for i, p in enumerate(pkts):
            f.write(struct.pack('<IIII', 1700000000 + i, 0, len(p), len(p)))
            f.write(p)


def run(eng, cases, layouts, tmp):
    """Encrypt with our engine, decrypt with tshark; returns nothing, records checks in R."""
    pkts, expect, uats = [], [], []
    spi = 0x7000
    for xf, t_enc, t_auth in cases:
        for mode, ifam, ofam, natt in layouts:
            spi += 1
            src, dst = OUTER[ofam] if mode == 'tunnel' else INNER[ifam]
            ctx = '%s %s %d-in-%d natt=%d' % (xf.name, mode, ifam, ofam, natt)
            if eng.sa(dir='out', mode=mode, src=src, dst=dst, spi=spi, natt='4500:4500' if natt else None,
                      **xf.sa_args()) is None:
                R.fail(ctx, 'the engine refused the SA')
                continue
            inners = [(udp_inner(ifam, n, sp, dp), sp, dp, n) for n, sp, dp in
                      ((0, 12345, 53), (37, 4000, 4001), (1300, 5000, 5001))]
            for r, (inn, sp, dp, n) in zip(eng.burst([i[0] for i in inners]), inners):
                if r[0] != 'ok':
                    R.fail(ctx, 'outbound dropped: %s' % (r,))
                    continue
                pkts.append(r[3])
                expect.append((ctx, spi, sp, dp, payload(n, sp), inn, natt))
            uats.append('uat:esp_sa:"IPv%d","%s","%s","0x%08x","%s","0x%s","%s","0x%s"' % (
                ofam, src, dst, spi, t_enc, (xf.ekey + xf.salt).hex(), t_auth, xf.akey.hex()))
    cap = os.path.join(tmp, 'ours.pcap')
    write_pcap(cap, pkts)
    cmd = ['tshark', '-n', '-r', cap, '-o', 'esp.enable_encryption_decode:TRUE',
           '-o', 'esp.enable_authentication_check:TRUE']
    for u in uats:
        cmd += ['-o', u]
    cmd += ['-T', 'fields', '-E', 'separator=|', '-e', 'frame.number', '-e', 'esp.spi', '-e', 'esp.icv_good',
            '-e', 'udp.srcport', '-e', 'udp.dstport', '-e', 'udp.payload']
    env = dict(os.environ, HOME=tmp, XDG_CONFIG_HOME=tmp)  # no user profile: only our esp_sa table
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    if out.returncode != 0:
        R.fail('tshark', 'exit %d: %s' % (out.returncode, out.stderr[-2000:]))
        return
    lines = [ln for ln in out.stdout.split('\n') if ln]
    if len(lines) != len(expect):
        R.fail('tshark', '%d packets written, %d read back' % (len(expect), len(lines)))
    for ln, (ctx, spi, sp, dp, pl, inn, natt) in zip(lines, expect):
        f = ln.split('|')
        # With NAT-T the outer UDP header comes first: the inner UDP header is the last occurrence;
        # tshark leaves out an empty payload, so the inner payload is the second one if any.
        occ = f[5].split(',') if f[5] else []
        ipl = (occ[1] if len(occ) > 1 else '') if natt else (occ[0] if occ else '')
        got = (f[1], f[2], f[3].split(',')[-1], f[4].split(',')[-1], ipl)
        want = ('0x%08x' % spi, '1', str(sp), str(dp), pl.hex())
        if got != want:
            R.fail('%s frame %s' % (ctx, f[0]), 'tshark read (spi, icv_good, sport, dport, payload) = %s,\n'
                   '  expected %s\n  (the inner packet sent was %s)' % (
                       tuple(x[:80] for x in got), tuple(x[:80] for x in want), inn.hex()[:120]))
        else:
            R.ok()


def main():
    t0 = time.time()
    if not shutil.which('tshark'):
        print('tshark is not installed (Debian package tshark)')
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix='xipsec-tshark-')
    eng = Engine()
    try:
        R.selftest(eng, lambda: run(eng, CASES[:3], LAYOUTS[:2], tmp), (0, 50, 2**31 - 1))
        run(eng, CASES, LAYOUTS, tmp)
        eng.close()
    except DriverError as ex:
        R.fail('driver', str(ex))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print('%d transforms x %d layouts (tunnel 4-in-4, 6-in-6, 4-in-6, 6-in-4, transport v4/v6, NAT-T '
          'tunnel v4 and transport v6) x 3 packets decrypted by tshark; elapsed %.1f s' % (
              len(CASES), len(LAYOUTS), time.time() - t0))
    sys.exit(R.finish())


if __name__ == '__main__':
    main()
