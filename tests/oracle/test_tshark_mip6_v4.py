#!/usr/bin/python3
# tests/oracle/test_tshark_mip6_v4.py: libmip6's Dual Stack Mobile IPv6 part (mobility/mip6_v4.h,
# RFC 5555) against two readers nobody here wrote: scapy 2.5.0 builds Binding Updates with the IPv4
# Care-of Address and IPv4 Home Address options (as raw mobility options: scapy has no layer for
# them) and tshark 4.0's Mobile IPv6 dissector says what they hold; our parser must read the same.
# The home agent's answer, as if each had come over IPv4 (plain or UDP, with or without a NAT: the
# option's address against the outer source), is a Binding Acknowledgement: tshark must find in it
# NAT Detection with the F flag and refresh time and the IPv4 Address Acknowledgement's status our
# decision gave, and scapy must recompute the same MH checksum. The script proves it notices a
# flipped byte in the appended options. The driver is tests/oracle/mip6_v4_drv.c.
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oraclelib import Report  # noqa: E402
from scapy.compat import raw  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402
from scapy.layers.inet6 import IPv6, MIP6MH_BU, MIP6MH_BA, MIP6OptUnknown  # noqa: E402
from scapy.utils import wrpcap  # noqa: E402
import socket  # noqa: E402

R = Report('tshark DSMIPv6 oracle')
HA, HOA = '2001:db8:1::1', '2001:db8:1::100'


def v4coa(a):
    return MIP6OptUnknown(otype=32, odata=b'\0\0' + socket.inet_aton(a))


def v4hoa(a, plen, p=False):
    return MIP6OptUnknown(otype=29, odata=bytes([plen << 2 | (2 if p else 0), 0]) + socket.inet_aton(a))


# (name, options, outer source, udp, want: 'reg' or the refusal, nat, ack status or None)
CASES = [
    ('plain, no NAT', [v4coa('198.51.100.7')], '198.51.100.7', 0, 'reg', 0, None),
    ('UDP, no NAT', [v4coa('198.51.100.7')], '198.51.100.7', 1, 'reg', 0, None),
    ('UDP through a NAT', [v4coa('10.0.0.7')], '203.0.113.1', 1, 'reg', 1, None),
    ('plain through a NAT', [v4coa('10.0.0.7')], '203.0.113.1', 0, 'reg', 1, None),
    ('dynamic IPv4 home address', [v4coa('198.51.100.7'), v4hoa('0.0.0.0', 0)], '198.51.100.7', 1,
     'reg', 0, 132),
    ('static IPv4 home address', [v4hoa('192.0.2.9', 24), v4coa('10.0.0.7')], '203.0.113.1', 1,
     'reg', 1, 129),
    ('no care-of option', [], '198.51.100.7', 1, 'no-ipv4-coa-option', 0, None),
    ('multicast care-of', [v4coa('224.0.0.9')], '198.51.100.7', 1, 'ipv4-coa-not-unicast', 0, None),
]


class Drv:
    def __init__(self):
        top = os.environ.get('top_builddir') or os.path.join(os.path.dirname(__file__), '..', '..')
        path = os.path.join(top, 'tests', 'oracle', 'mip6_v4_drv')
        if not os.access(path, os.X_OK):
            print('mip6_v4_drv not built at %s (make check builds it)' % path)
            sys.exit(99)
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def bu(self, src4, udp, pkt):
        self.p.stdin.write('bu %s %d 40123 %s\n' % (src4, udp, raw(pkt).hex()))
        self.p.stdin.flush()
        r = self.p.stdout.readline().rstrip('\n')
        if not r or r.startswith('fatal'):
            raise SystemExit('mip6_v4_drv: %r (exit %s)' % (r, self.p.poll()))
        return r.split()

    def close(self):
        self.p.stdin.write('quit\n')
        self.p.stdin.close()
        if self.p.wait(timeout=30):
            raise SystemExit('mip6_v4_drv failed (a sanitizer report is above)')


def tshark(pkts, fields):
    """tshark's reading of the IPv6 packets pkts: per packet, {field: value or ''}."""
    d = tempfile.mkdtemp(prefix='mip6v4-')
    try:
        cap = os.path.join(d, 'c.pcap')
        wrpcap(cap, [Ether(src='02:00:00:00:00:01', dst='02:00:00:00:00:02') / IPv6(raw(p)) for p in pkts])
        cmd = ['tshark', '-n', '-r', cap, '-T', 'fields', '-E', 'separator=|', '-E', 'occurrence=f']
        for f in fields:
            cmd += ['-e', f]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if out.returncode:
            raise SystemExit('tshark exit %d: %s' % (out.returncode, out.stderr[-2000:]))
        return [dict(zip(fields, line.split('|'))) for line in out.stdout.splitlines()]
    finally:
        shutil.rmtree(d)


def tbool(v):
    return v in ('1', 'True', 'true')


def run(drv, flip=None):
    bus, bas, want = [], [], []
    for i, (name, opts, src4, udp, verdict, nat, ack) in enumerate(CASES):
        bu = IPv6(src=HOA, dst=HA) / MIP6MH_BU(seq=100 + i, flags=0x40 | 0x20, mhtime=150, options=opts)
        bus.append(bu)
        f = drv.bu(src4, udp, bu)
        if verdict != 'reg':
            if f[:2] != ['refused', verdict]:
                R.fail(name, 'want refused %s, got %s' % (verdict, ' '.join(f)))
            else:
                R.ok()
            continue
        if f[0] != 'reg':
            R.fail(name, 'want a registration, got %s' % ' '.join(f))
            continue
        kv = dict(x.split('=', 1) for x in f[1:-1])
        ba = bytearray(bytes.fromhex(f[-1]))
        if flip is not None and len(ba) > 56:
            ba[56 + flip % (len(ba) - 56)] ^= 1  # within the options after the BA (40 + 16)
        bas.append(bytes(ba))
        want.append((name, kv, opts, src4, udp, nat, ack, 100 + i))
    # tshark on the Binding Updates scapy built vs what our parser read
    seen = tshark(bus, ['mip6.ipv4coa.addr', 'mip6.ipv4ha.ha', 'mip6.ipv4ha.preflen'])
    kvs = {w[7]: w[1] for w in want}
    for i, (bu, t) in enumerate(zip(bus, seen)):
        kv = kvs.get(100 + i)
        if kv is None:
            continue
        name = CASES[i][0]
        if kv['v4coa'] != t['mip6.ipv4coa.addr']:
            R.fail(name, 'IPv4 care-of: ours %s, tshark %s' % (kv['v4coa'], t['mip6.ipv4coa.addr']))
        else:
            R.ok()
        if (kv['v4hoa'], kv['plen'] if kv['v4hoa'] != '-' else '') != \
           (t['mip6.ipv4ha.ha'] or '-', t['mip6.ipv4ha.preflen'] if kv['v4hoa'] != '-' else ''):
            R.fail(name, 'IPv4 home address: ours %s/%s, tshark %s/%s' % (kv['v4hoa'], kv['plen'],
                   t['mip6.ipv4ha.ha'], t['mip6.ipv4ha.preflen']))
        else:
            R.ok()
    # tshark and scapy on our acknowledgements
    seen = tshark(bas, ['mip6.ba.status', 'mip6.ba.seqnr', 'mip6.natd.f_flag', 'mip6.natd.refresh_t',
                        'mip6.ipv4aa.sts'])
    for ba, t, (name, kv, opts, src4, udp, nat, ack, seq) in zip(bas, seen, want):
        exp = {'mip6.ba.status': '0', 'mip6.ba.seqnr': str(seq)}
        if udp or nat:
            exp['mip6.natd.f_flag'] = 'nat' if nat else 'no-nat'
            exp['mip6.natd.refresh_t'] = '110' if nat else '0'
        else:
            exp['mip6.natd.f_flag'] = 'absent'
        exp['mip6.ipv4aa.sts'] = str(ack) if ack is not None else ''
        got = dict((k, t[k]) for k in exp)
        if 'mip6.natd.f_flag' in got:
            f = t['mip6.natd.f_flag']
            got['mip6.natd.f_flag'] = 'absent' if f == '' else ('nat' if tbool(f) else 'no-nat')
        if got != exp:
            R.fail(name, 'BA: want %s, tshark read %s' % (exp, got))
        else:
            R.ok()
        p = IPv6(ba)
        mh = p[MIP6MH_BA]
        ours = mh.cksum
        mh.cksum = None
        theirs = IPv6(raw(p))[MIP6MH_BA].cksum
        if ours != theirs:
            R.fail(name, 'MH checksum ours %#06x, scapy %#06x' % (ours, theirs))
        else:
            R.ok()


def main():
    if not shutil.which('tshark'):
        print('tshark not installed (scripts/install-deps installs it)')
        return 99
    drv = Drv()
    run(drv)
    # self-test: a flipped byte in the appended options must be noticed
    for off in (0, 2, 7, 10):
        saved = (R.checks, R.failures, R.max_print)
        R.max_print = 0
        run(drv, flip=off)
        caught = R.failures - saved[1]
        R.checks, R.failures, R.max_print = saved
        if caught:
            R.ok()
        else:
            R.fail('self-test', 'a flipped byte at option offset %d went unnoticed' % off)
    drv.close()
    return R.finish()


if __name__ == '__main__':
    sys.exit(main())
