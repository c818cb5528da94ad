#!/usr/bin/python3
# tests/oracle/test_scapy_mip6.py: libmip6 (mobility/) against scapy 2.5.0's Mobile IPv6 layers
# (scapy.layers.inet6), an implementation nobody here wrote:
#  (a) scapy builds Binding Updates (IPv6 [/ hop-by-hop] / Destination Options with the Home Address
#      option / MIP6MH_BU with mobility options in random mixes, scapy's padding and checksum, the
#      Mobile Network Prefix option of RFC 3963 among them); our parser must accept each with the
#      very fields scapy put in;
#  (b) scapy builds broken ones (checksum, payload proto, header length, MH type, HAO placement and
#      address, option alignment and length, fragments, truncation, ...); each must be dropped with
#      its own reason;
#  (c) our home agent answers scapy's Binding Updates; scapy dissects each Binding Acknowledgement
#      and it is checked field by field (addresses, type 2 routing header, status, sequence,
#      lifetime, K, Binding Refresh Advice), and the checksum scapy recomputes equals ours; the
#      script proves it notices a flipped byte anywhere in our BAs.
# The driver is tests/oracle/mip6_drv.c.
import os
import random
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oraclelib import Report  # noqa: E402
from scapy.compat import raw  # noqa: E402
from scapy.layers.inet import UDP  # noqa: E402
from scapy.layers.inet6 import (IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting,  # noqa: E402
                                IPv6ExtHdrFragment, HAO, Pad1, PadN, HBHOptUnknown, MIP6MH_BU,
                                MIP6MH_BA, MIP6MH_Generic, MIP6OptAltCoA, MIP6OptBRAdvice,
                                MIP6OptNonceIndices, MIP6OptUnknown, MIP6OptMobNetPrefix)

HA = '2001:db8::1'
MNS = {'2001:db8::100': 11, '2001:db8::101': 21, '2001:db8::102': 31}
COAS = ['2001:db8:77::5', '2001:db8:88::6', '2001:db8:99::7']
MAX_UNITS = 900      # 3600 s, the driver's configuration
REFRESH_UNITS = 250  # 1000 s

R = Report('scapy Mobile IPv6 oracle')


class Drv:
    def __init__(self):
        top = os.environ.get('top_builddir') or os.path.join(os.path.dirname(__file__), '..', '..')
        path = os.path.join(top, 'tests', 'oracle', 'mip6_drv')
        if not os.access(path, os.X_OK):
            print('mip6_drv not built at %s (make check builds it)' % path)
            sys.exit(99)
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        proc = self.p

        def expired(signum, frame):
            proc.kill()
            print('FAIL: timed out (ORACLE_TIMEOUT)')
            sys.stdout.flush()
            os._exit(1)
        signal.signal(signal.SIGALRM, expired)
        signal.alarm(int(os.environ.get('ORACLE_TIMEOUT', '900')))

    def ask(self, line):
        self.p.stdin.write(line + '\n')
        self.p.stdin.flush()
        r = self.p.stdout.readline()
        if not r:
            raise SystemExit('mip6_drv died (exit %s) after: %s' % (self.p.wait(), line[:200]))
        r = r.rstrip('\n')
        if r.startswith('fatal'):
            raise SystemExit('mip6_drv: %s' % r)
        return r

    def parse(self, pkt):
        f = self.ask('parse ' + raw(pkt).hex()).split()
        if f[0] == 'drop':
            return ('drop', f[1])
        return ('ok', f[1], dict(kv.split('=', 1) for kv in f[2:]))

    def bu(self, sa, now, pkt):
        f = self.ask('bu %d %d %s' % (sa, now, raw(pkt).hex())).split()
        if f[0] == 'drop':
            return ('drop', f[1])
        return ('ba', int(f[1]), f[2], int(f[3]), bytes.fromhex(f[4]))

    def close(self):
        self.p.stdin.write('quit\n')
        self.p.stdin.close()
        rc = self.p.wait(timeout=30)
        if rc != 0:
            raise SystemExit('mip6_drv exited with %d (a sanitizer report is above)' % rc)


def rand_addr(rnd, prefix='2001:db8:%x::' % 0x55):
    return prefix + '%x:%x' % (rnd.randrange(1, 0xffff), rnd.randrange(1, 0xffff))


def mk_bu(src, hoa, seq, flags7, reserved, lifetime, opts, hbh=False, dst=HA, **kw):
    """A Binding Update as scapy builds it; flags7 is scapy's 7-bit flags field (A = 0x40 ...)."""
    p = IPv6(src=src, dst=dst)
    if hbh:
        p = p / IPv6ExtHdrHopByHop()
    if hoa:
        p = p / IPv6ExtHdrDestOpt(options=[HAO(hoa=hoa)])
    return p / MIP6MH_BU(seq=seq, flags=flags7, reserved=reserved, mhtime=lifetime, options=opts, **kw)


A, H, L, K, M, RR = 0x40, 0x20, 0x10, 0x08, 0x04, 0x02


def part_a(drv, rnd):
    """Good Binding Updates in random mixes: every field as scapy put it."""
    for i in range(400):
        seq, flags7, res9, life = rnd.randrange(65536), rnd.randrange(128), rnd.randrange(512), rnd.randrange(65536)
        src = rand_addr(rnd)
        hoa = rand_addr(rnd, '2001:db8::') if rnd.random() < 0.8 else None
        alt = rand_addr(rnd) if rnd.random() < 0.7 else None
        opts = []
        pool = [lambda: MIP6OptUnknown(otype=rnd.choice([8, 20, 42, 200]), odata=bytes(rnd.randrange(256) for _ in range(rnd.randrange(9)))),
                lambda: MIP6OptBRAdvice(rinter=rnd.randrange(65536)),
                lambda: MIP6OptNonceIndices(olen=4, hni=rnd.randrange(65536), coni=rnd.randrange(65536)),
                lambda: MIP6OptMobNetPrefix(plen=rnd.randrange(1, 129), prefix=rand_addr(rnd, '2001:db8:%x::' % rnd.randrange(0x100, 0x200)))]
        for _ in range(rnd.randrange(3)):
            opts.append(rnd.choice(pool)())
        mnp = ','.join('%s/%d' % (o.prefix, o.plen) for o in opts if isinstance(o, MIP6OptMobNetPrefix)) or '-'
        if alt:
            opts.insert(rnd.randrange(len(opts) + 1), MIP6OptAltCoA(acoa=alt))
        p = mk_bu(src, hoa, seq, flags7, res9, life, opts, hbh=rnd.random() < 0.2)
        ctx = 'bu %d' % i
        got = drv.parse(p)
        if got[0] != 'ok' or got[1] != 'binding-update':
            R.fail(ctx, 'scapy BU %s not accepted: %s' % (p.summary(), got))
            continue
        f = got[2]
        want = {'seq': str(seq), 'flags': str(flags7 << 9 | res9), 'lifetime': str(life),
                'hao': hoa or '-', 'altcoa': alt or '-', 'rh2': '-', 'mnp': mnp,
                'mhlen': str(len(raw(p[MIP6MH_BU])))}
        bad = {k: (f.get(k), v) for k, v in want.items() if f.get(k) != v}
        if bad:
            R.fail(ctx, 'fields differ (ours, scapy): %s in %s' % (bad, p.summary()))
        else:
            R.ok()


def fix_len(pkt):
    return IPv6(raw(pkt))


def part_b(drv, rnd):
    """Broken Binding Updates: each dropped with its own reason."""
    hoa, src, alt = '2001:db8::100', COAS[0], COAS[0]
    base = lambda **kw: mk_bu(src, hoa, 5, A | H, 0, 100, [MIP6OptAltCoA(acoa=alt)], **kw)  # noqa: E731
    good = raw(base())
    cases = []
    p = base()
    p[MIP6MH_BU].cksum = IPv6(good)[MIP6MH_BU].cksum ^ 0x1234
    cases.append(('checksum off', p, 'bad-checksum'))
    # the pseudo-header's source must be the home address: a checksum over the care-of address fails
    p = IPv6(src=src, dst=HA) / IPv6ExtHdrDestOpt(options=[HAO(hoa=hoa)]) / MIP6MH_BU(seq=5, flags=A | H, mhtime=1)
    wrong = IPv6(src=src, dst=HA) / MIP6MH_BU(seq=5, flags=A | H, mhtime=1)
    p[MIP6MH_BU].cksum = IPv6(raw(wrong))[MIP6MH_BU].cksum
    cases.append(('checksum over the care-of address', p, 'bad-checksum'))
    cases.append(('payload proto 6', base(nh=6), 'bad-payload-proto'))
    cases.append(('header length beyond the payload', base(len=7), 'bad-header-length'))
    g = IPv6(src=src, dst=HA) / IPv6ExtHdrDestOpt(options=[HAO(hoa=hoa)]) / MIP6MH_Generic(mhtype=42, msg=b'\0' * 10)
    cases.append(('MH type 42', g, 'unknown-mh-type'))
    g = IPv6(src=src, dst=HA) / MIP6MH_Generic(mhtype=5, msg=b'\0' * 2)
    cases.append(('BU of 8 bytes', g, 'bad-header-length'))
    p = IPv6(src=src, dst=HA) / IPv6ExtHdrDestOpt(autopad=0, options=[Pad1(), Pad1(), HAO(hoa=hoa), PadN(optdata=b'')]) / \
        MIP6MH_BU(seq=5, flags=A | H, mhtime=1)
    cases.append(('HAO at offset 4', p, 'bad-home-address-option'))
    p = IPv6(src=src, dst=HA) / IPv6ExtHdrDestOpt(options=[HAO(hoa=hoa), HAO(hoa=hoa)]) / MIP6MH_BU(seq=5, flags=A | H, mhtime=1)
    cases.append(('two HAOs', p, 'bad-home-address-option'))
    p = IPv6(src=src, dst=HA) / IPv6ExtHdrDestOpt(options=[HAO(hoa=hoa)]) / \
        IPv6ExtHdrRouting(type=2, addresses=[hoa], segleft=0) / MIP6MH_BU(seq=5, flags=A | H, mhtime=1)
    cases.append(('HAO before a routing header', p, 'bad-home-address-option'))
    for bad in ('ff02::1', 'fe80::1', '::1'):
        cases.append(('home address %s' % bad, mk_bu(src, bad, 5, A | H, 0, 1, []), 'home-address-not-unicast'))
    p = IPv6(src=src, dst=HA) / IPv6ExtHdrDestOpt(options=[HAO(hoa=hoa), HBHOptUnknown(otype=0xc3, optdata=b'ab')]) / \
        MIP6MH_BU(seq=5, flags=A | H, mhtime=1)
    cases.append(('destination option 0xc3', p, 'bad-ipv6-option'))
    p = IPv6(src=src, dst=HA) / IPv6ExtHdrRouting(type=2, addresses=[hoa], segleft=2) / MIP6MH_BU(seq=5, flags=A | H, mhtime=1)
    cases.append(('type 2 routing header, segments left 2', p, 'bad-type2-routing-header'))
    p = IPv6(src=src, dst=HA) / IPv6ExtHdrRouting(type=0, addresses=[hoa], segleft=1) / MIP6MH_BU(seq=5, flags=A | H, mhtime=1)
    cases.append(('type 0 routing header with segments left', p, 'bad-routing-header'))
    p = mk_bu(src, hoa, 5, A | H, 0, 1, [MIP6OptAltCoA(acoa=alt), PadN(optdata=b'')], autopad=0)
    cases.append(('Alternate CoA at offset 12', p, 'bad-mobility-option-alignment'))
    p = mk_bu(src, hoa, 5, A | H, 0, 1, [MIP6OptUnknown(otype=3, odata=b'\x20' * 15)])
    cases.append(('Alternate CoA of 15 bytes', p, 'bad-mobility-option'))
    p = mk_bu(src, hoa, 5, A | H, 0, 1, [MIP6OptAltCoA(acoa=alt), MIP6OptAltCoA(acoa=alt)])
    cases.append(('two Alternate CoAs', p, 'bad-mobility-option'))
    p = mk_bu(src, hoa, 5, A | H, 0, 1, [MIP6OptUnknown(otype=42, odata=b'x' * 2, olen=20)])
    cases.append(('an option past the message', p, 'bad-mobility-option'))
    p = IPv6(src=src, dst=HA) / IPv6ExtHdrDestOpt(options=[HAO(hoa=hoa)]) / IPv6ExtHdrFragment(m=1, id=7) / \
        MIP6MH_BU(seq=5, flags=A | H, mhtime=1)
    cases.append(('a fragment', p, 'fragment'))
    cases.append(('UDP', IPv6(src=src, dst=HA) / UDP(sport=1, dport=2), 'not-mobility-header'))
    cases.append(('truncated by 3 bytes', good[:-3], 'truncated'))
    cases.append(('IPv6 header only', good[:39], 'truncated'))
    p = bytearray(good)
    p[0] = 0x45
    cases.append(('version 4', bytes(p), 'not-ipv6'))
    for name, pkt, want in cases:
        got = drv.parse(pkt)
        if got == ('drop', want):
            R.ok()
        else:
            R.fail(name, 'expected drop %s, got %s' % (want, got))
    # and the base itself passes (the cases above differ from it in one way each)
    if drv.parse(base())[0] != 'ok':
        R.fail('base', 'the unbroken BU is not accepted')


def check_ba(ctx, ba, bu_src, hoa, status, seq, units, k, refresh):
    """Dissect our BA with scapy and check it field by field; the checksum scapy computes over the
    same packet must equal ours."""
    p = IPv6(ba)
    errs = []

    def want(what, ours, theirs):
        if ours != theirs:
            errs.append('%s: ours %r, expected %r' % (what, ours, theirs))
    want('version', p.version, 6)
    want('traffic class', p.tc, 0)
    want('flow label', p.fl, 0)
    want('hop limit', p.hlim, 64)
    want('payload length', p.plen, len(ba) - 40)
    want('source', p.src, HA)
    want('destination', p.dst, bu_src)
    rh = p.getlayer(IPv6ExtHdrRouting)
    if bu_src != hoa:
        if rh is None:
            errs.append('no routing header')
        else:
            want('routing type', rh.type, 2)
            want('segments left', rh.segleft, 1)
            want('routing header length', rh.len, 2)
            want('routing reserved', rh.reserved, 0)
            want('routing address', list(rh.addresses), [hoa])
            want('routing next header', rh.nh, 135)
    elif rh is not None:
        errs.append('a routing header to the home address itself')
    m = p.getlayer(MIP6MH_BA)
    if m is None:
        errs.append('scapy sees no BA: %s' % p.summary())
    else:
        want('payload proto', m.nh, 59)
        want('MH reserved', m.res, 0)
        want('status', m.status, status)
        want('sequence', m.seq, seq)
        want('lifetime', m.mhtime, units)
        want('K', bool(int(m.flags) & 4), k)
        want('other flags', int(m.flags) & 3, 0)
        want('reserved', m.res2, 0)
        want('MH length', (m.len + 1) * 8, len(raw(m)))
        bra = [o for o in m.options if isinstance(o, MIP6OptBRAdvice)]
        want('refresh advice', bra[0].rinter if bra else None, refresh)
        ours = m.cksum
        q = IPv6(ba)
        del q[MIP6MH_BA].cksum
        theirs = IPv6(raw(q))[MIP6MH_BA].cksum
        want('checksum (scapy recomputed)', ours, theirs)
    if errs:
        R.fail(ctx, '; '.join(errs) + '\n  BA %s' % ba.hex())
    else:
        R.ok()


def hoa_of(pkt):
    """The Home Address option's address, or the source when there is none."""
    if pkt.haslayer(IPv6ExtHdrDestOpt):
        for o in pkt[IPv6ExtHdrDestOpt].options:
            if isinstance(o, HAO):
                return o.hoa
    return pkt[IPv6].src


def part_c(drv, rnd):
    """Our home agent answers scapy's Binding Updates; scapy checks our BAs."""
    for hoa, sa in MNS.items():
        if drv.ask('mn %s %d' % (hoa, sa)) != 'ok':
            raise SystemExit('mip6_drv refused mn %s' % hoa)
    hoa, sa = '2001:db8::100', 11
    expected = []  # (ctx, bu packet, sa, now, status, change, seq in BA, units, k, refresh)

    def refresh_of(units):
        return min(REFRESH_UNITS, units - 1) if units > 1 else None

    def run(ctx, pkt, sa_, now, status, change, seq, units, k, refresh):
        got = drv.bu(sa_, now, pkt)
        if got[0] != 'ba':
            R.fail(ctx, 'dropped (%s), expected a BA with status %d' % (got[1], status))
            return None
        if got[1] != status or got[2] != change:
            R.fail(ctx, 'status %d change %s, expected %d %s' % (got[1], got[2], status, change))
            return None
        check_ba(ctx, got[4], pkt[IPv6].src, hoa_of(pkt), status, seq, units, k, refresh)
        return got

    def bu(src, seq, flags7, life, alt=None, h=hoa):
        return mk_bu(src, h, seq, flags7, 0, life, [MIP6OptAltCoA(acoa=alt or src)])

    script = [
        ('new', bu(COAS[0], 10, A | H | K, 100), sa, 1000, 0, 'new', 10, 100, True, refresh_of(100)),
        ('refresh capped at 900 units, A clear', bu(COAS[0], 11, H, 5000), sa, 2000, 0, 'refresh', 11, MAX_UNITS, False, refresh_of(MAX_UNITS)),
        ('move', bu(COAS[1], 12, A | H, 60), sa, 3000, 0, 'move', 12, 60, False, refresh_of(60)),
        ('sequence equal', bu(COAS[1], 12, A | H, 60), sa, 3100, 135, 'none', 12, 0, False, None),
        ('sequence behind', bu(COAS[1], 65000, A | H, 60), sa, 3200, 135, 'none', 12, 0, False, None),
        ('H clear with a binding', bu(COAS[1], 13, A, 60), sa, 3300, 139, 'none', 13, 0, False, None),
        ('care-of address on the home link', bu(COAS[1], 13, A | H, 60, alt='2001:db8::77'), sa, 3400, 128, 'none', 13, 0, False, None),
        ('lifetime 1: no refresh advice', bu(COAS[1], 13, A | H, 1), sa, 3500, 0, 'refresh', 13, 1, False, None),
        ('deregistration', bu(COAS[1], 14, A | H, 0), sa, 4000, 0, 'delete', 14, 0, False, None),
        ('deregistration without a binding', bu(COAS[1], 15, A | H, 0), sa, 4100, 133, 'none', 15, 0, False, None),
        ('H clear without a binding', bu(COAS[2], 1, A, 60, h='2001:db8::101'), 21, 5000, 131, 'none', 1, 0, False, None),
        ('mobile router', bu(COAS[2], 1, A | H | RR, 60, h='2001:db8::101'), 21, 5000, 140, 'none', 1, 0, False, None),
        ('at home: deregistration to the home address', mk_bu('2001:db8::102', None, 1, A | H, 0, 30, []), 31, 6000, 133, 'none', 1, 0, False, None),
    ]
    for e in script:
        run(*e)
    # Those that must not be answered at all.
    drops = [
        ('unprotected', bu(COAS[0], 20, A | H, 60), 0, 'unprotected'),
        ('someone else\'s SA', bu(COAS[0], 20, A | H, 60), 21, 'wrong-sa'),
        ('unknown home address', bu(COAS[0], 20, A | H, 60, h='2001:db8::999'), 11, 'unknown-home-address'),
        ('not to the home agent', mk_bu(COAS[0], hoa, 20, A | H, 0, 60, [], dst='2001:db8::2'), 11, 'not-for-home-agent'),
        ('multicast care-of address', bu(COAS[0], 20, A | H, 60, alt='ff0e::1'), 11, 'care-of-not-unicast'),
    ]
    for ctx, pkt, sa_, want in drops:
        got = drv.bu(sa_, 7000, pkt)
        if got == ('drop', want):
            R.ok()
        else:
            R.fail(ctx, 'expected drop %s, got %s' % (want, got[:4]))
    # Random registrations of three mobile nodes: granted lifetimes, sequence numbers that wrap.
    seqs = {h: rnd.randrange(65536) for h in MNS}
    bound = {h: None for h in MNS}
    expires = {h: 0 for h in MNS}
    now = 10 ** 7
    seen = {}
    for i in range(300):
        h = rnd.choice(list(MNS))
        coa = rnd.choice(COAS)
        life = rnd.choice([0, 1, 2, 50, 899, 900, 901, 65535, rnd.randrange(1, 65536)])
        stale = rnd.random() < 0.15
        seq = (seqs[h] - rnd.randrange(0, 32769)) % 65536 if stale else (seqs[h] + rnd.randrange(1, 32768)) % 65536
        flags7 = A | H | (K if rnd.random() < 0.5 else 0)
        pkt = bu(coa, seq, flags7, life, h=h)
        now += 1000
        # A binding past its expiry (never reaped here) no longer holds its sequence number, but
        # still counts as the forwarding state to refresh, move or delete.
        live = bound[h] is not None and expires[h] > now
        if live and stale:
            st, ch, bseq, units = 135, 'none', seqs[h], 0
        elif life == 0:
            if bound[h] is None:
                st, ch, bseq, units = 133, 'none', seq, 0
            else:
                st, ch, bseq, units = 0, 'delete', seq, 0
        else:
            units = min(life, MAX_UNITS)
            st, bseq = 0, seq
            ch = 'new' if bound[h] is None else ('refresh' if bound[h] == coa else 'move')
        k = bool(flags7 & K)
        got = run('random %d' % i, pkt, MNS[h], now, st, ch, bseq, units, k,
                  refresh_of(units) if st == 0 and units else None)
        key = '%d/%s%s' % (st, ch, '' if live or bound[h] is None else ' (expired binding)')
        seen[key] = seen.get(key, 0) + 1
        if got and st == 0:
            seqs[h] = seq
            bound[h] = None if ch == 'delete' else coa
            expires[h] = now + units * 4000
        elif got and st == 133:
            seqs[h] = seq  # no binding: the next number is free anyway
    print('random registrations (status/change: count): %s' % ', '.join('%s: %d' % kv for kv in sorted(seen.items())))
    # Self-test: a flipped byte anywhere in our BA must be noticed.
    for off in (0, 3, 7, 8, 30, 40, 42, 44, 50, 63, 64, 65, 66, 68, 70, 72, 75, 77, 79):
        saved = (R.checks, R.failures, R.max_print)
        R.max_print = 0
        drv.ask('break %d' % off)
        seqs[hoa] = (seqs[hoa] + 1) % 65536
        pkt = bu(COAS[0], seqs[hoa], A | H, 100)
        got = drv.bu(11, now + 1000 + off, pkt)
        drv.ask('break -1')
        if got[0] == 'ba':
            check_ba('self-test', got[4], COAS[0], hoa, 0, seqs[hoa], 100, False, refresh_of(100))
        caught = R.failures - saved[1]
        R.checks, R.failures, R.max_print = saved
        if caught:
            R.ok()
        else:
            R.fail('self-test', 'a flipped byte at offset %d of our BA went unnoticed' % off)


def main():
    rnd = random.Random(int(os.environ.get('ORACLE_SEED', '6275')))
    drv = Drv()
    part_a(drv, rnd)
    part_b(drv, rnd)
    part_c(drv, rnd)
    drv.close()
    return R.finish()


if __name__ == '__main__':
    sys.exit(main())
