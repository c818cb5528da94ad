# tests/oracle/oraclelib.py: shared helpers of the oracle tests: the pipe to oracle_drv (our engine),
# the transform table with deterministic keys, hex diffs of mismatching packets and the failure
# bookkeeping. Test code only; run by /usr/bin/python3 (Debian's, which has scapy and cryptography).
import os
import random
import signal
import subprocess
import sys

def _sadb_numbers():
    """The transform numbers as sadb/sadb.h defines them (read from the header, so the scripts follow
    it when a number changes), by the names used here."""
    import re
    top = os.environ.get('top_srcdir') or os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
    text = open(os.path.join(top, 'sadb', 'sadb.h')).read()

    def num(name):
        m = re.search(r'\b%s\s*=\s*(\d+)' % name, text)
        if not m:
            raise SystemExit('sadb.h has no %s' % name)
        return int(m.group(1))
    enc = {'none': 'NONE', '3des': '3DES_CBC', 'null': 'NULL', 'aes-cbc': 'AES_CBC', 'aes-ctr': 'AES_CTR',
           'aes-gcm': 'AES_GCM16', 'aes-gmac': 'AES_GMAC', 'chacha': 'CHACHA20_POLY1305'}
    auth = {'none': 'NONE', 'md5': 'HMAC_MD5_96', 'sha1': 'HMAC_SHA1_96', 'sha256': 'HMAC_SHA256_128',
            'sha384': 'HMAC_SHA384_192', 'sha512': 'HMAC_SHA512_256', 'gmac128': 'AES_128_GMAC',
            'gmac256': 'AES_256_GMAC'}
    return ({k: num('SADB_ENC_' + v) for k, v in enc.items()},
            {k: num('SADB_AUTH_' + v) for k, v in auth.items()})


ENC, AUTH = _sadb_numbers()
AUTH_KEY_LEN = {'none': 0, 'md5': 16, 'sha1': 20, 'sha256': 32, 'sha384': 48, 'sha512': 64}
AUTH_ICV = {'none': 0, 'md5': 12, 'sha1': 12, 'sha256': 16, 'sha384': 24, 'sha512': 32}
SCAPY_AUTH = {'md5': 'HMAC-MD5-96', 'sha1': 'HMAC-SHA1-96', 'sha256': 'SHA2-256-128',
              'sha384': 'SHA2-384-192', 'sha512': 'SHA2-512-256'}
SCAPY_ENC = {'aes-gcm': 'AES-GCM', 'aes-cbc': 'AES-CBC', 'aes-ctr': 'AES-CTR', '3des': '3DES',
             'null': 'NULL', 'chacha': 'CHACHA20-POLY1305'}
HASHLIB = {'md5': 'md5', 'sha1': 'sha1', 'sha256': 'sha256', 'sha384': 'sha384', 'sha512': 'sha512'}
SALTED = ('aes-gcm', 'aes-gmac', 'aes-ctr', 'chacha')
BACKENDS = ('ipsecmb', 'openssl', 'sodium', 'native')

# Outer (tunnel) endpoints per family, inner hosts per family.
OUTER = {4: ('192.0.2.1', '198.51.100.2'), 6: ('2001:db8::1', '2001:db8:ffff::2')}
INNER = {4: ('10.1.0.1', '10.2.0.2'), 6: ('fd00:1::1', 'fd00:2::2')}


class Xform:
    """One transform with deterministic keys derived from its name."""

    def __init__(self, proto, enc, enc_key_len, auth):
        self.proto, self.enc, self.enc_key_len, self.auth = proto, enc, enc_key_len, auth
        self.name = '%s %s%s/%s' % (proto, enc, '-%d' % (enc_key_len * 8) if enc_key_len and enc not in
                                    ('3des', 'chacha') else '', auth)
        rnd = random.Random(self.name)
        self.ekey = bytes(rnd.randrange(256) for _ in range(enc_key_len))
        self.salt = bytes(rnd.randrange(256) for _ in range(4)) if enc in SALTED else b''
        akl = AUTH_KEY_LEN.get(auth, 0)
        if auth in ('gmac128', 'gmac256'):
            akl = 20 if auth == 'gmac128' else 36  # AES key + salt (RFC 4543 keying material)
        self.akey = bytes(rnd.randrange(256) for _ in range(akl))
        if enc == '3des':
            # Avoid weak 3DES keys (K1 == K2 or K2 == K3): cryptography refuses them.
            self.ekey = bytes((b | 1) ^ (i * 17 & 0xfe) for i, b in enumerate(self.ekey))

    def sa_args(self):
        a = {'proto': self.proto, 'enc': ENC[self.enc], 'auth': AUTH[self.auth]}
        if self.ekey:
            a['ekey'] = self.ekey.hex()
        if self.salt:
            a['salt'] = self.salt.hex()
        if self.akey:
            a['akey'] = self.akey.hex()
        return a

    def icv_len(self):
        if self.enc in ('aes-gcm', 'chacha', 'aes-gmac') or self.auth.startswith('gmac'):
            return 16
        return AUTH_ICV[self.auth]

    def legacy(self):
        return self.enc == '3des' or self.auth == 'md5'


class DriverError(Exception):
    pass


class Engine:
    """A running oracle_drv: our engine behind a line protocol (see oracle_drv.c)."""

    def __init__(self):
        top = os.environ.get('top_builddir') or os.path.join(os.path.dirname(__file__), '..', '..')
        path = os.path.join(top, 'tests', 'oracle', 'oracle_drv')
        if not os.access(path, os.X_OK):
            print('oracle_drv not built at %s (make check builds it)' % path)
            sys.exit(99)
        self.p = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  bufsize=1 << 20)
        # A hung driver must not hang make check: the whole script gets ORACLE_TIMEOUT seconds.
        proc = self.p

        def expired(signum, frame):
            proc.kill()
            proc.wait(timeout=10)
            print('FAIL: timed out after %s s (ORACLE_TIMEOUT)' % os.environ.get('ORACLE_TIMEOUT', '900'))
            sys.stdout.flush()
            os._exit(1)
        signal.signal(signal.SIGALRM, expired)
        signal.alarm(int(os.environ.get('ORACLE_TIMEOUT', '900')))

    def _ask(self, line, nlines=1):
        self.p.stdin.write(line + '\n')
        self.p.stdin.flush()
        out = []
        for _ in range(nlines):
            r = self.p.stdout.readline()
            if not r:
                raise DriverError('oracle_drv died (exit %s) after: %s' % (self.p.wait(), line[:200]))
            r = r.rstrip('\n')
            if r.startswith('fatal'):
                raise DriverError('oracle_drv: %s' % r)
            out.append(r)
        return out

    def sa(self, **kw):
        """Create the SA; returns the backend name, or None if refused with ENOTSUP (95)."""
        args = ' '.join('%s=%s' % (k, v) for k, v in kw.items() if v is not None)
        r = self._ask('sa ' + args)[0].split()
        if r[0] == 'ok':
            return r[1]
        if r[1] == '95':
            return None
        raise DriverError('esp_sa_create failed with errno %s for: %s' % (r[1], args))

    def burst(self, pkts):
        """Run a burst; per packet ('ok', seq, family, bytes) or ('drop', reason, mtu)."""
        res = []
        for r in self._ask('pkt ' + ' '.join(bytes(p).hex() for p in pkts), len(pkts)):
            f = r.split()
            if f[0] == 'ok':
                res.append(('ok', int(f[1]), int(f[2]), bytes.fromhex(f[3]) if len(f) > 3 else b''))
            else:
                res.append(('drop', f[1], int(f[2])))
        return res

    def rt(self):
        f = self._ask('rt')[0].split()
        return {'top': int(f[1]), 'packets': int(f[2]), 'bytes': int(f[3]), 'drops': int(f[4])}

    def set_break(self, n):
        self._ask('break %d' % n)

    def close(self):
        try:
            self.p.stdin.write('quit\n')
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        rc = self.p.wait(timeout=30)
        if rc != 0:
            raise DriverError('oracle_drv exited with %d (a sanitizer report is above)' % rc)


def hexdiff(a, b, label_a='ours', label_b='oracle'):
    """Text showing where two byte strings differ, with the bytes around the first differences."""
    a, b = bytes(a), bytes(b)
    lines = ['lengths: %s %d, %s %d' % (label_a, len(a), label_b, len(b))]
    diffs = [i for i in range(min(len(a), len(b))) if a[i] != b[i]]
    if len(a) != len(b):
        diffs.append(min(len(a), len(b)))
    shown = 0
    last = -100
    for i in diffs:
        if i < last + 16:
            continue
        lo = max(0, i - 8)
        lines.append('  first difference at byte %d:' % i if shown == 0 else '  difference at byte %d:' % i)
        lines.append('    %-7s %5d: %s' % (label_a, lo, a[lo:i + 24].hex(' ')))
        lines.append('    %-7s %5d: %s' % (label_b, lo, b[lo:i + 24].hex(' ')))
        last = i
        shown += 1
        if shown == 4:
            lines.append('  (%d differing bytes in all)' % len(diffs))
            break
    return '\n'.join(lines)


class Report:
    """Counts checks and failures; each failure is printed with its context."""

    def __init__(self, name):
        self.name, self.checks, self.failures = name, 0, 0
        self.max_print = int(os.environ.get('ORACLE_MAX_FAILURES', '30'))

    def ok(self):
        self.checks += 1

    def fail(self, ctx, msg):
        self.checks += 1
        self.failures += 1
        if self.failures <= self.max_print:
            print('FAIL [%s] %s' % (ctx, msg))
            sys.stdout.flush()

    def check_eq(self, ctx, what, ours, theirs, label_b='oracle'):
        if bytes(ours) == bytes(theirs):
            self.ok()
            return True
        self.fail(ctx, '%s differs:\n%s' % (what, hexdiff(ours, theirs, 'ours', label_b)))
        return False

    def selftest(self, eng, run, offsets):
        """Prove the checks can fail: with the driver corrupting one byte of every packet it
        returns (each offset in turn), run() must record failures."""
        for off in offsets:
            saved = (self.checks, self.failures, self.max_print)
            self.max_print = 0
            eng.set_break(off)
            try:
                run()
            finally:
                eng.set_break(-1)
            caught = self.failures - saved[1]
            self.checks, self.failures, self.max_print = saved
            if caught == 0:
                self.fail('self-test', 'a flipped byte at offset %d of the engine output went unnoticed' % off)
            else:
                self.ok()
                print('self-test: a flipped byte at offset %d of every engine output: %d failures caught' % (off, caught))

    def finish(self):
        print('%s: %d checks, %d failures' % (self.name, self.checks, self.failures))
        if self.checks == 0:
            print('no checks ran: failing')
            return 1
        return 1 if self.failures else 0


def ip_version(b):
    return b[0] >> 4
