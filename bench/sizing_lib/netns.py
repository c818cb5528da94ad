# bench/sizing_lib/netns.py: the gateways the sizing study measures, in network namespaces (the
# layout of tests/netns/test_dp_common.sh, ported so python can keep it up while it measures):
#   h1 (10.1.0.2) -- gw1 [in1 | out1] -- sw (bridge: s1, s2) -- [out2 | in2] gw2 -- h2 (10.2.0.2)
# with veths of 1 or 2 queues, one xipsecd per gateway, the transforms of the study as tunnel-mode
# SAs written with dp_testctl, and the counters a point reads (xipsecd's CPU time, the bridge ports'
# packet counts, the machine's softirq time). Everything it creates (namespaces, processes, SADB
# files) carries a per-run id and is removed by close(), which also runs at exit and on SIGTERM/SIGINT.
import atexit
import glob
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

# id -> (protocol, dp_testctl key arguments as (kind, alg, key bytes)); kind "enc" or "auth"
TRANSFORMS = {
    "bypass": None,
    "esp-aes-cbc-128-sha1": ("esp", [("enc", "aes-cbc", 16), ("auth", "hmac-sha1-96", 20)]),
    "esp-aes-cbc-128-sha256": ("esp", [("enc", "aes-cbc", 16), ("auth", "hmac-sha256-128", 32)]),
    "esp-3des-sha1": ("esp", [("enc", "3des-cbc", 24), ("auth", "hmac-sha1-96", 20)]),
    "esp-aes-gcm-128": ("esp", [("enc", "aes-gcm-16", 20)]),
    "esp-aes-gcm-256": ("esp", [("enc", "aes-gcm-16", 36)]),
    "esp-chacha20-poly1305": ("esp", [("enc", "chacha20-poly1305", 36)]),
    "esp-null-sha1": ("esp", [("enc", "null", 0), ("auth", "hmac-sha1-96", 20)]),
    "ah-md5": ("ah", [("auth", "hmac-md5-96", 16)]),
    "ah-sha1": ("ah", [("auth", "hmac-sha1-96", 20)]),
    "esp-aes-cbc-128": ("esp", [("enc", "aes-cbc", 16), ("auth", "none", 0)]),
}
TRANSFORM_IDS = list(TRANSFORMS)

_live = []


def _cleanup_all():
    for t in list(_live):
        t.close()


def _on_signal(signum, frame):
    raise SystemExit(128 + signum)


atexit.register(_cleanup_all)
for _s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(_s, _on_signal)


class NetnsError(RuntimeError):
    pass


def private_state_dir(prefix):
    """A new directory D under /var/tmp (mode 0700) with D/state (0700) for XIPSEC_STATE_DIR: xipsecd
    refuses a state directory on tmpfs, and a section's marks must not outlive it or meet another's.
    The caller removes D."""
    d = tempfile.mkdtemp(prefix=prefix, dir="/var/tmp")
    os.mkdir(os.path.join(d, "state"), 0o700)
    return d


def cpu_softirq_us():
    """Machine-wide softirq time in µs (/proc/stat is not per namespace)."""
    with open("/proc/stat") as f:
        v = f.readline().split()
    return int(v[7]) * 1e6 / os.sysconf("SC_CLK_TCK")


def cpu_steal():
    """Per CPU (steal, all) ticks from /proc/stat: the time the host ran something else while this
    guest's CPU wanted to run, and the whole time."""
    out = []
    with open("/proc/stat") as f:
        for line in f:
            v = line.split()
            if v and v[0].startswith("cpu") and v[0] != "cpu":
                t = [int(x) for x in v[1:9]]
                out.append((t[7], sum(t)))
    return out


def steal_pct(a, b):
    """Per CPU steal in % between two cpu_steal() readings."""
    return [round(100.0 * (sb - sa) / (tb - ta), 1) if tb > ta else 0.0
            for (sa, ta), (sb, tb) in zip(a, b)]


def cpu_mhz():
    try:
        mhz = [float(x.split(":")[1]) for x in open("/proc/cpuinfo") if x.startswith("cpu MHz")]
        return sum(mhz) / len(mhz) if mhz else 0.0
    except OSError:
        return 0.0


def proc_cpu_us(pid):
    """User+system time of every thread of pid in µs: the scheduler's run time per thread
    (/proc/PID/task/*/schedstat, ns), the quantity of /proc/PID/stat's utime+stime at a finer grain."""
    tot = 0
    for p in glob.glob("/proc/%d/task/*/schedstat" % pid):
        try:
            tot += int(open(p).read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    if tot:
        return tot / 1000.0
    v = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) * 1e6 / os.sysconf("SC_CLK_TCK")


class Topo:
    def __init__(self, builddir, tmpdir, queues=1, tag=""):
        self.builddir = str(builddir)
        self.tmp = str(tmpdir)
        self.queues = queues
        # $SIZING_RUN_ID (a caller's name for the run, e.g. a test that cleans up after a killed run)
        base = os.environ.get("SIZING_RUN_ID") or "sz%d" % os.getpid()
        self.id = "%s-%04x%s" % (base, int.from_bytes(os.urandom(2), "big"), tag)
        # the sequence marks of manually keyed SAs in a directory of this topology's own, whatever
        # the caller's environment holds: handed to its processes only (never through os.environ,
        # where a later section would find it after close() removed it). On a disk (/var/tmp): a
        # state directory on tmpfs is refused, and the run's directory may be on one.
        self.state_dir = private_state_dir("xipsec-%s." % self.id)
        self.env = dict(os.environ, XIPSEC_STATE_DIR=os.path.join(self.state_dir, "state"))
        self.namespaces = []
        self.procs = {}          # name -> (Popen, logfile)
        self.files = []
        self.closed = False
        x = os.path.join(self.builddir, "bench", "fwd-xipsecd")
        self.xipsecd = x if os.access(x, os.X_OK) else os.path.join(self.builddir, "dataplane", "xipsecd", "xipsecd")
        self.testctl = os.path.join(self.builddir, "tests", "tools", "dp_testctl")
        for p in (self.xipsecd, self.testctl):
            if not os.access(p, os.X_OK):
                raise NetnsError("%s not built (build directory %s)" % (p, self.builddir))
        self.sadb = {gw: "/dev/shm/xipsec-%s-%s.sadb" % (self.id, gw) for gw in ("gw1", "gw2")}
        self.files += list(self.sadb.values())
        self.transform = None
        self._gwpid = {}
        _live.append(self)

    def asan(self):
        try:
            out = subprocess.run(["nm", self.xipsecd], capture_output=True, text=True, timeout=30).stdout
            return "__asan_init" in out
        except (OSError, subprocess.TimeoutExpired):
            return False

    # ---- namespaces and commands
    def ns(self, n):
        return "%s-%s" % (self.id, n)

    def sh(self, cmd, timeout=60, check=True):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self.env)
        if check and r.returncode != 0:
            raise NetnsError("%s: exit %d: %s" % (" ".join(cmd), r.returncode, (r.stderr or r.stdout).strip()))
        return r

    def run(self, n, cmd, timeout=60, check=True):
        # timeout(1) as well: the command ends even if this process is killed while it runs
        return self.sh(["nsenter", "--net=/run/netns/" + self.ns(n), "timeout", "--kill-after=2", str(timeout + 1)] +
                       list(cmd), timeout=timeout + 5, check=check)

    def bg(self, n, name, cmd, env=None):
        log = os.path.join(self.tmp, "%s-%s.log" % (self.id, name))
        f = open(log, "w")
        e = dict(self.env)
        e.update(env or {})
        # the timeout outlives any run, and ends the process should this one be killed outright
        p = subprocess.Popen(["nsenter", "--net=/run/netns/" + self.ns(n), "timeout", "--kill-after=5",
                              "3600"] + list(cmd), stdout=f,
                             stderr=subprocess.STDOUT, env=e, start_new_session=True)
        f.close()
        self.procs[name] = (p, log)
        self.files.append(log)
        return p

    def log_of(self, name):
        try:
            return open(self.procs[name][1]).read()
        except (KeyError, OSError):
            return ""

    def stop(self, name, sig=signal.SIGTERM, wait=5):
        p, _ = self.procs.pop(name, (None, None))
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(wait)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(5)

    def wait_for(self, secs, fn):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            if fn():
                return True
            time.sleep(0.05)
        return False

    # ---- the topology (tests/netns/test_dp_common.sh's dp_topo)
    def build(self):
        q = str(self.queues)
        for n in ("h1", "gw1", "sw", "gw2", "h2"):
            self.sh(["ip", "netns", "add", self.ns(n)])
            self.namespaces.append(self.ns(n))
            self.sh(["ip", "-n", self.ns(n), "link", "set", "lo", "up"])
            self.run(n, ["sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"])
        for a, ia, b, ib in (("h1", "eth0", "gw1", "in1"), ("gw1", "out1", "sw", "s1"),
                             ("sw", "s2", "gw2", "out2"), ("gw2", "in2", "h2", "eth0")):
            self.sh(["ip", "link", "add", ia, "netns", self.ns(a), "numtxqueues", q, "numrxqueues", q, "type", "veth",
                     "peer", "name", ib, "netns", self.ns(b), "numtxqueues", q, "numrxqueues", q])
            self.sh(["ip", "-n", self.ns(a), "link", "set", ia, "up"])
            self.sh(["ip", "-n", self.ns(b), "link", "set", ib, "up"])
        sw = ["ip", "-n", self.ns("sw")]
        self.sh(sw + ["link", "add", "br0", "type", "bridge"])
        self.sh(sw + ["link", "set", "s1", "master", "br0"])
        self.sh(sw + ["link", "set", "s2", "master", "br0"])
        self.sh(sw + ["link", "set", "br0", "up"])
        self.run("sw", ["sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=0",
                        "net.bridge.bridge-nf-call-ip6tables=0"], check=False)
        addrs = [("h1", "eth0", "10.1.0.2/24"), ("gw1", "in1", "10.1.0.1/24"), ("gw1", "out1", "192.0.2.1/24"),
                 ("gw2", "out2", "192.0.2.2/24"), ("gw2", "in2", "10.2.0.1/24"), ("h2", "eth0", "10.2.0.2/24")]
        for n, dev, a in addrs:
            self.sh(["ip", "-n", self.ns(n), "addr", "add", a, "dev", dev])
        for n, dst, via in (("h1", "default", "10.1.0.1"), ("h2", "default", "10.2.0.1"),
                            ("gw1", "10.2.0.0/24", "192.0.2.2"), ("gw2", "10.1.0.0/24", "192.0.2.1")):
            self.sh(["ip", "-n", self.ns(n), "route", "add", dst, "via", via])
        for n in ("gw1", "gw2"):   # only xipsecd forwards (a plaintext leak would show)
            self.run(n, ["sysctl", "-qw", "net.ipv4.ip_forward=0", "net.ipv6.conf.all.forwarding=0"])
        # doc/platform.md: partial checksums from a sender's offload survive AF_XDP forwarding
        self.run("h1", ["ethtool", "-K", "eth0", "tx", "off"])
        self.run("h2", ["ethtool", "-K", "eth0", "tx", "off"])
        self.bypass_all()

    # ---- xipsecd
    def ctl(self, gw, *args):
        return self.sh([self.testctl, self.sadb[gw]] + [str(a) for a in args], timeout=30)

    def start_gw(self, gw, workers=None, batch=None, env=None, wait=20):
        """xipsecd on GW; ENV: variables of its own (e.g. XIPSEC_CRYPTO, OPENSSL_ia32cap); WAIT: the
        seconds it may take to answer its status (a large SADB takes longer)."""
        n = gw[-1]
        cmd = [self.xipsecd, "--inside", "in" + n, "--outside", "out" + n, "--sadb", self.sadb[gw],
               "--ctl", self.sock(gw), "--tun", "none", "-v"]
        if workers:
            cmd += ["--workers", str(workers)]
        if batch:
            cmd += ["--batch", str(batch)]
        p = self.bg(gw, "xipsecd-" + gw, cmd, env)
        if not self.wait_for(wait, lambda: p.poll() is None and self.status(gw) is not None):
            raise NetnsError("xipsecd on %s did not start: %s" % (gw, self.log_of("xipsecd-" + gw)[-2000:]))
        return p

    def sock(self, gw):
        return os.path.join(self.tmp, "%s-%s.sock" % (self.id, gw))

    def status(self, gw):
        r = subprocess.run([self.xipsecd, "--status", "--ctl", self.sock(gw)], capture_output=True, text=True,
                           timeout=10)
        if r.returncode != 0 or not r.stdout.strip():
            return None
        try:
            return json.loads(r.stdout)
        except ValueError:
            return None

    def restart_gws(self, workers=None, batch=None):
        for gw in ("gw1", "gw2"):
            self.stop("xipsecd-" + gw)
        for gw in ("gw1", "gw2"):
            self.start_gw(gw, workers, batch)

    def gw_pid(self, gw):
        # nsenter and timeout execute in place; timeout forks the command: xipsecd is its only child
        ppid = self.procs["xipsecd-" + gw][0].pid
        if gw not in self._gwpid or self._gwpid[gw][0] != ppid:
            kids = open("/proc/%d/task/%d/children" % (ppid, ppid)).read().split()
            if len(kids) != 1:
                raise NetnsError("xipsecd on %s: %d processes under its timeout" % (gw, len(kids)))
            self._gwpid[gw] = (ppid, int(kids[0]))
        return self._gwpid[gw][1]

    def gw_cpu_us(self, gw):
        return proc_cpu_us(self.gw_pid(gw))

    def link_packets(self, n, dev, direction="rx"):
        r = self.sh(["ip", "-n", self.ns(n), "-s", "-j", "link", "show", "dev", dev])
        j = json.loads(r.stdout)[0]
        return int(j["stats64"][direction]["packets"])

    # ---- policies and SAs
    def flush(self):
        for gw in ("gw1", "gw2"):
            self.ctl(gw, "flush")

    def bypass_all(self):
        for gw in ("gw1", "gw2"):
            for d in ("out", "fwd"):
                self.ctl(gw, "policy", d, "bypass", "0.0.0.0/0", "0.0.0.0/0")
                self.ctl(gw, "policy", d, "bypass", "::/0", "::/0")

    def set_transform(self, xf, base=0x1000):
        """Tunnel-mode SAs of transform xf between the sites (gw1 -> gw2 under base+1, back under
        base+2), as dp_tunnel does; bypass: bypass policies only."""
        self.flush()
        self.transform = xf
        if xf == "bypass":
            self.bypass_all()
            return
        proto, keys = TRANSFORMS[xf]
        n1, n2, o1, o2 = "10.1.0.0/24", "10.2.0.0/24", "192.0.2.1", "192.0.2.2"

        def kargs():
            a = []
            for kind, alg, n in keys:
                a += [kind, alg, os.urandom(n).hex() if n else "0x"]
            return a
        k1, k2 = kargs(), kargs()
        s1, s2 = base + 1, base + 2
        self.ctl("gw1", "policy", "out", "protect", n1, n2, "reqid", 1, proto, "tunnel", o1, o2)
        self.ctl("gw1", "policy", "fwd", "protect", n2, n1, "reqid", 1, proto, "tunnel", o2, o1)
        self.ctl("gw2", "policy", "out", "protect", n2, n1, "reqid", 1, proto, "tunnel", o2, o1)
        self.ctl("gw2", "policy", "fwd", "protect", n1, n2, "reqid", 1, proto, "tunnel", o1, o2)
        self.ctl("gw1", "sa", "in", s2, proto, "tunnel", o2, o1, "reqid", 1, *k2)
        self.ctl("gw2", "sa", "in", s1, proto, "tunnel", o1, o2, "reqid", 1, *k1)
        self.ctl("gw1", "sa", "out", s1, proto, "tunnel", o1, o2, "reqid", 1, *k1)
        self.ctl("gw2", "sa", "out", s2, proto, "tunnel", o2, o1, "reqid", 1, *k2)
        for gw in ("gw1", "gw2"):
            self.ctl(gw, "policy", "out", "bypass", "::/0", "::/0")

    def wait_sadb(self, secs=10):
        """Until both dataplanes have loaded the SADB's newest generation (their status says it)."""
        def ok():
            g = [self.status(gw) for gw in ("gw1", "gw2")]
            return all(s is not None for s in g) and all(s.get("sas", 0) == (0 if self.transform == "bypass" else 2)
                                                         for s in g)
        return self.wait_for(secs, ok)

    def ping(self, src="h1", dst="10.2.0.2", count=3):
        r = self.run(src, ["ping", "-q", "-c", str(count), "-i", "0.05", "-W", "2", dst], check=False, timeout=20)
        return r.returncode == 0

    def backends(self, gw):
        """{direction: backend} of the SAs xipsecd on gw logged last ("crypto backend X")."""
        out = {}
        for line in self.log_of("xipsecd-" + gw).splitlines():
            if "crypto backend" in line and "(" in line:
                d = "out" if "(out," in line else "in"
                out[d] = line.rsplit("crypto backend", 1)[1].strip()
        return out

    def refusal(self, gw):
        lines = [x for x in self.log_of("xipsecd-" + gw).splitlines() if "engine refuses it" in x]
        return lines[-1].split("engine refuses it:", 1)[1].strip() if lines else None

    # ---- cleanup
    def close(self):
        if self.closed:
            return
        self.closed = True
        for name in list(self.procs):
            self.stop(name)
        for n in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)
        for f in self.files:
            try:
                os.unlink(f)
            except OSError:
                pass
        shutil.rmtree(self.state_dir, ignore_errors=True)
        if self in _live:
            _live.remove(self)
