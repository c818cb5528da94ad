#!/usr/bin/python3
# tests/oracle/test_ah_icv_pad.py: regression test of an interoperability bug the oracle work found
# (it was an expected failure until libesp commit 5ded428 fixed it).
#
# RFC 4302 §3.3.3.2.1: when the ICV needs padding (AH over IPv6 with HMAC-SHA256-128, -SHA384-192,
# -SHA512-256 or AES-GMAC: the header is padded to 64 bits) "the content of the padding field is
# arbitrarily selected by the sender" and "these padding bytes are included in the ICV calculation".
# Only the ICV itself counts as zeros (§3.3.3.1). scapy (and Linux's ah6_input, which zeroes only
# icv_trunc_len bytes) verify with the padding as received; our engine used to zero the padding
# before verifying, so a peer that sends non-zero padding was rejected with an ICV failure.
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oraclelib import Xform, Engine, Report, OUTER, BACKENDS, DriverError  # noqa: E402
from scapyutil import IPv6, AH, raw, inner_packets, parse_ip, scapy_sa  # noqa: E402

R = Report('AH ICV padding (RFC 4302 §3.3.3.2.1)')
SPI = 0x2222


def main():
    eng = Engine()
    try:
        for auth in ('sha256', 'sha384', 'sha512'):
            xf = Xform('ah', 'none', 0, auth)
            for mode in ('tunnel', 'transport'):
                inner = inner_packets(6, mode == 'transport')[1]
                th = IPv6(src=OUTER[6][0], dst=OUTER[6][1]) if mode == 'tunnel' else None
                sa = scapy_sa(xf, SPI, tunnel_hdr=th)
                p = parse_ip(raw(sa.encrypt(parse_ip(inner), seq_num=5)))
                n = xf.icv_len()
                pad = p[AH].icv[n:] or p[AH].padding
                if not pad:
                    R.fail(auth, 'scapy built no ICV padding: the case does not test anything')
                    continue
                # Same packet, sender-chosen padding 0xa5..., signed by scapy (which keeps the
                # padding in the ICV input as the RFC says) and verified by scapy first.
                p[AH].icv = b'\0' * n
                p[AH].padding = b'\xa5' * len(pad)
                p = sa.auth_algo.sign(p, xf.akey)
                wire = raw(p)
                sa.decrypt(parse_ip(wire))  # raises if scapy itself disagrees
                ctx = '%s %s IPv6, %d padding bytes 0xa5' % (xf.name, mode, len(pad))
                for b in BACKENDS:
                    if eng.sa(dir='in', mode=mode, src=OUTER[6][0] if mode == 'tunnel' else '::1',
                              dst=OUTER[6][1] if mode == 'tunnel' else '::2', spi=SPI, backend=b,
                              **xf.sa_args()) is None:
                        continue
                    r = eng.burst([wire])[0]
                    if r[0] != 'ok':
                        R.fail(ctx + ' ' + b, 'dropped (%s) a packet scapy verifies:\n  %s' % (r[1], wire.hex()))
                    else:
                        R.check_eq(ctx + ' ' + b, 'inner packet', r[3], inner if mode == 'tunnel' else r[3])
        eng.close()
    except DriverError as ex:
        R.fail('driver', str(ex))
    sys.exit(R.finish())


if __name__ == '__main__':
    main()
