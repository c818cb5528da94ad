# bench/peers_lib/tunnels.py: the tunnels bench/peers compares, each between gw1 and gw2 of the sizing
# study's topology (bench/sizing_lib/netns.py: h1 - gw1 - bridge - gw2 - h2 on single-queue veths),
# carrying h1 <-> h2: xipsecd (ESP AES-GCM-128, ESP AES-CBC-128/HMAC-SHA256, its bypass path), plain
# kernel forwarding, wireguard-go configured with wg, and strongSwan's charon with kernel-libipsec (its
# own user-space ESP behind a TUN device). A tunnel is brought up for its turn and taken down after it,
# so only one of them ever holds the gateways; each one names the daemons whose CPU time is charged
# to it. Everything a tunnel creates (processes, keys, configuration, interfaces) is under the
# topology's per-run id and goes with down() or the topology's close().
import os
import shutil
import subprocess
import time

from sizing_lib import netns

WG_PORT = 51820
# kernel-libipsec's TUN device has a fixed MTU of 1400: the smallest of the tunnels'
LIBIPSEC_MTU = 1400
WG_MTU = 1420


def xipsecd_cpus():
    """Where xipsecd's workers go: gw1 on the first half of the CPUs this process may use, gw2 on the
    second, as two gateways on machines of their own would be (xipsecd(8), --cpus: busy work on one
    host gets CPUs of its own). The peers' daemons are not pinned; the scheduler spreads them over
    all the CPUs. With one CPU both share it. Returns {gw: CPU list}."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return {"gw1": str(cpus[0]), "gw2": str(cpus[0])}
    half = len(cpus) // 2
    return {"gw1": ",".join(map(str, cpus[:half])), "gw2": ",".join(map(str, cpus[half:]))}


# (tunnel id, description); the xipsecd ones keep xipsecd up across their turns of one round
TUNNELS = [
    ("kernel", "plain kernel forwarding, no tunnel"),
    ("xipsecd-bypass", "xipsecd, bypass policies (no ESP)"),
    ("xipsecd-gcm", "xipsecd, ESP AES-GCM-128, 1 worker"),
    ("xipsecd-cbc", "xipsecd, ESP AES-CBC-128/HMAC-SHA256, 1 worker"),
    ("wireguard", "wireguard-go (ChaCha20-Poly1305), configured with wg"),
    ("strongswan", "strongSwan charon + kernel-libipsec, ESP AES-GCM-128 in UDP (TUN MTU 1400)"),
]
TUNNEL_IDS = [t for t, _ in TUNNELS]
XIPSECD_TRANSFORM = {"xipsecd-bypass": "bypass", "xipsecd-gcm": "esp-aes-gcm-128",
                     "xipsecd-cbc": "esp-aes-cbc-128-sha256"}
CHARON = "/usr/lib/ipsec/charon"
LIBIPSEC_PLUGIN = "/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so"
SWANCTL = "/usr/sbin/swanctl"


def base(tunnel):
    """The tunnel a variant id (xipsecd-gcm:NAME, xipsecd run with a variant's extra options) is of."""
    return tunnel.split(":", 1)[0]


def missing(tunnel):
    """What this machine lacks to run tunnel (a sentence), or None."""
    need = {"wireguard": [("wireguard-go", "wireguard-go"), ("wg", "wireguard-tools")],
            "strongswan": [(CHARON, "strongswan-charon"), (LIBIPSEC_PLUGIN, "libcharon-extra-plugins"),
                           (SWANCTL, "strongswan-swanctl"), ("unshare", "util-linux")]}.get(tunnel, [])
    for prog, pkg in need:
        found = os.path.exists(prog) if prog.startswith("/") else shutil.which(prog)
        if not found:
            return "%s not found (Debian package %s)" % (prog, pkg)
    if tunnel in ("wireguard", "strongswan") and not os.path.exists("/dev/net/tun"):
        return "no /dev/net/tun"
    return None


class Gateways:
    """The topology with one tunnel up at a time: up(tunnel) / down()."""

    def __init__(self, builddir, tmp, variants=None):
        self.t = netns.Topo(builddir, tmp, queues=1, tag="pe")
        self.tmp = tmp
        self.cur = None
        # variant name -> xipsecd's extra options (bench/peers --variant); "" is xipsecd as it is
        self.variants = dict(variants or {})
        self.variants[""] = []
        self.xipsecd_up = None     # the variant xipsecd runs as, None when it is down
        self.sysfs_set = []        # interface settings a variant made, with their defaults
        self.t.build()
        # the interface names carry a short form of the run id: wireguard-go's control sockets
        # (/var/run/wireguard/NAME.sock) are shared by every namespace
        self.wgname = {gw: "wg%s%s" % (self.t.id[-4:], gw[-1]) for gw in ("gw1", "gw2")}

    # ---- helpers
    def forwarding(self, on):
        for gw in ("gw1", "gw2"):
            self.t.run(gw, ["sysctl", "-qw", "net.ipv4.ip_forward=%d" % (1 if on else 0)])

    def daemons(self):
        """{gw: pid} of the processes that carry the current tunnel (empty for kernel forwarding)."""
        if self.cur is not None and base(self.cur) in XIPSECD_TRANSFORM:
            return {gw: self.t.gw_pid(gw) for gw in ("gw1", "gw2")}
        if self.cur == "wireguard":
            return {gw: self._child("wg-" + gw) for gw in ("gw1", "gw2")}
        if self.cur == "strongswan":
            return {gw: self._child("charon-" + gw) for gw in ("gw1", "gw2")}
        return {}

    def _child(self, name):
        # nsenter and timeout execute in place; timeout forks the command (unshare and sh exec in place)
        ppid = self.t.procs[name][0].pid
        kids = open("/proc/%d/task/%d/children" % (ppid, ppid)).read().split()
        if len(kids) != 1:
            raise netns.NetnsError("%s: %d processes under its timeout" % (name, len(kids)))
        return int(kids[0])

    def check(self):
        """The tunnel carries traffic both ways (ping h1 -> h2), or NetnsError."""
        if not self.t.wait_for(10, lambda: self.t.ping(count=1)):
            raise netns.NetnsError("tunnel %s: no ping from h1 to h2" % self.cur)

    # ---- one tunnel up
    def up(self, tunnel):
        if self.cur == tunnel:
            return
        variant = tunnel.split(":", 1)[1] if ":" in tunnel else ""
        if self.cur is not None and not (base(tunnel) in XIPSECD_TRANSFORM and self.xipsecd_up == variant):
            self.down()
        self.cur = tunnel
        # Path MTUs learnt through the last tunnel are forgotten: h1 keeps an xipsecd-gcm tunnel's
        # 1446 for ten minutes, and TCP through the bypass path or the kernel would carry 1394-byte
        # segments instead of 1448-byte ones (and a tunnel with less room, inherited by GCM, worse).
        # So are the TCP metrics the last tunnel's connections left (slow-start threshold, cwnd,
        # RTT, kept per destination until flushed): each tunnel's TCP starts from the same state,
        # not from whatever the tunnel run before it taught the hosts.
        for ns in ("h1", "h2", "gw1", "gw2"):
            self.t.run(ns, ["ip", "route", "flush", "cache"], check=False)
            self.t.run(ns, ["ip", "tcp_metrics", "flush", "all"], check=False)
            self.t.run(ns, ["ip", "-6", "tcp_metrics", "flush", "all"], check=False)
        if tunnel == "kernel":
            self.forwarding(True)
        elif base(tunnel) in XIPSECD_TRANSFORM:
            self._xipsecd(XIPSECD_TRANSFORM[base(tunnel)], variant)
        elif tunnel == "wireguard":
            self._wireguard()
        elif tunnel == "strongswan":
            self._strongswan()
        else:
            raise netns.NetnsError("unknown tunnel %s" % tunnel)
        self.check()

    def down(self):
        t = self.t
        if self.xipsecd_up is not None:
            for gw in ("gw1", "gw2"):
                t.stop("xipsecd-" + gw)
                if self.sysfs_set:
                    self._sysfs(gw, self.sysfs_set)
            self.sysfs_set = []
            self.xipsecd_up = None
            t.transform = None
        for gw in ("gw1", "gw2"):
            t.stop("wg-" + gw)
            t.stop("charon-" + gw)
            t.run(gw, ["ip", "link", "del", self.wgname[gw]], check=False)
        t.run("gw1", ["ip", "route", "replace", "10.2.0.0/24", "via", "192.0.2.2"])
        t.run("gw2", ["ip", "route", "replace", "10.1.0.0/24", "via", "192.0.2.1"])
        self.forwarding(False)
        self.cur = None

    def _sysfs(self, gw, settings):
        # ip netns exec mounts the namespace's own /sys
        n = gw[-1]
        for key, val in settings:
            for dev in ("in" + n, "out" + n):
                self.t.sh(["ip", "netns", "exec", self.t.ns(gw), "sh", "-c",
                           "echo %s > /sys/class/net/%s/%s" % (val, dev, key)])

    def _start_xipsecd(self, gw, extra):
        # netns.Topo.start_gw's command with the variant's options; a word sysfs:KEY=VALUE of them
        # is a setting of the gateway's two interfaces instead (e.g. napi_defer_hard_irqs=2), undone
        # with the tunnel; a word env:NAME=VALUE goes into xipsecd's environment; a word gw1:OPTION
        # or gw2:OPTION is an option of that gateway's xipsecd only (e.g. gw2:--cpus=1)
        t = self.t
        extra = [w.split(":", 1)[1] if w.startswith(("gw1:", "gw2:")) else w for w in extra
                 if not w.startswith(("gw1:", "gw2:")) or w.startswith(gw + ":")]
        sysfs = [w[6:].split("=", 1) for w in extra if w.startswith("sysfs:")]
        env = dict(w[4:].split("=", 1) for w in extra if w.startswith("env:"))
        extra = [w for w in extra if not w.startswith(("sysfs:", "env:"))]
        if sysfs:
            self._sysfs(gw, sysfs)
            self.sysfs_set = [(k, 0) for k, _ in sysfs]
        n = gw[-1]
        # the placement above, unless the variant chooses its own
        pin = [] if any(w.startswith(("--cpus", "--no-pin")) for w in extra) else ["--cpus", xipsecd_cpus()[gw]]
        cmd = [t.xipsecd, "--inside", "in" + n, "--outside", "out" + n, "--sadb", t.sadb[gw], "--ctl", t.sock(gw),
               "--tun", "none", "-v", "--workers", "1"] + pin + list(extra)
        p = t.bg(gw, "xipsecd-" + gw, cmd, env=env)
        if not t.wait_for(20, lambda: p.poll() is None and t.status(gw) is not None):
            raise netns.NetnsError("xipsecd on %s did not start: %s" % (gw, t.log_of("xipsecd-" + gw)[-2000:]))

    def _xipsecd(self, xf, variant):
        t = self.t
        if self.xipsecd_up is None:
            self.forwarding(False)   # only xipsecd forwards (a plaintext leak would show)
            t.set_transform("bypass")
            for gw in ("gw1", "gw2"):
                self._start_xipsecd(gw, self.variants[variant])
            self.xipsecd_up = variant
        t.set_transform(xf)
        if not t.wait_sadb():
            raise netns.NetnsError("xipsecd did not load the SAs of %s: %s" % (
                xf, t.refusal("gw1") or t.refusal("gw2") or "status shows another generation"))

    def _wireguard(self):
        t = self.t
        keys = {}
        for gw in ("gw1", "gw2"):
            priv = subprocess.run(["wg", "genkey"], capture_output=True, text=True, check=True).stdout.strip()
            pub = subprocess.run(["wg", "pubkey"], input=priv, capture_output=True, text=True,
                                 check=True).stdout.strip()
            path = os.path.join(self.tmp, "%s-%s.wgkey" % (t.id, gw))
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, (priv + "\n").encode())
            os.close(fd)
            t.files.append(path)
            keys[gw] = (path, pub)
        peer = {"gw1": ("gw2", "192.0.2.2", "10.2.0.0/24"), "gw2": ("gw1", "192.0.2.1", "10.1.0.0/24")}
        for gw in ("gw1", "gw2"):
            dev = self.wgname[gw]
            t.files.append("/var/run/wireguard/%s.sock" % dev)
            try:   # one of an earlier round's wireguard-go, should it not have removed it
                os.unlink("/var/run/wireguard/%s.sock" % dev)
            except OSError:
                pass
            t.bg(gw, "wg-" + gw, ["wireguard-go", "-f", dev], env={"LOG_LEVEL": "error"})
            sock = "/var/run/wireguard/%s.sock" % dev
            if not t.wait_for(10, lambda: os.path.exists(sock)):
                raise netns.NetnsError("wireguard-go on %s did not start: %s" % (gw, t.log_of("wg-" + gw)[-500:]))
        for gw in ("gw1", "gw2"):
            dev = self.wgname[gw]
            other, addr, net = peer[gw]
            t.run(gw, ["wg", "set", dev, "private-key", keys[gw][0], "listen-port", str(WG_PORT),
                       "peer", keys[other][1], "endpoint", "%s:%d" % (addr, WG_PORT), "allowed-ips", net])
            t.run(gw, ["ip", "link", "set", dev, "mtu", str(WG_MTU), "up"])
            t.run(gw, ["ip", "route", "replace", net, "dev", dev])
        self.forwarding(True)

    def _strongswan(self):
        t = self.t
        nets = {"gw1": ("192.0.2.1", "192.0.2.2", "10.1.0.0/24", "10.2.0.0/24"),
                "gw2": ("192.0.2.2", "192.0.2.1", "10.2.0.0/24", "10.1.0.0/24")}
        for gw in ("gw1", "gw2"):
            d = os.path.join(self.tmp, "%s-swan-%s" % (t.id, gw))
            os.makedirs(os.path.join(d, "run"), exist_ok=True)
            me, peer, mine, theirs = nets[gw]
            with open(os.path.join(d, "strongswan.conf"), "w") as f:
                f.write("""charon {
  load = random nonce openssl x509 revocation constraints pubkey pkcs1 pkcs8 pem hmac kdf gcm socket-default kernel-libipsec kernel-netlink vici
  plugins {
    vici {
      socket = unix://%s/run/charon.vici
    }
  }
  filelog {
    stderr {
      default = 0
    }
  }
}
swanctl {
  load = pem pkcs1 pkcs8 x509 revocation constraints pubkey openssl random
}
""" % d)
            with open(os.path.join(d, "swanctl.conf"), "w") as f:
                f.write("""connections {
  peers {
    version = 2
    local_addrs = %s
    remote_addrs = %s
    proposals = aes128gcm16-prfsha256-ecp256
    local {
      auth = psk
      id = %s
    }
    remote {
      auth = psk
      id = %s
    }
    children {
      net {
        local_ts = %s
        remote_ts = %s
        esp_proposals = aes128gcm16
      }
    }
  }
}
secrets {
  ike-peers {
    id-1 = 192.0.2.1
    id-2 = 192.0.2.2
    secret = "bench/peers key: not a real secret 0123456789"
  }
}
""" % (me, peer, me, peer, mine, theirs))
            # the stock charon writes /var/run/charon.pid: a private mount namespace with its own /run
            try:
                os.unlink(os.path.join(d, "run", "charon.vici"))
            except OSError:
                pass
            t.bg(gw, "charon-" + gw, ["unshare", "-m", "--propagation", "private", "sh", "-c",
                                      "mount -t tmpfs tmpfs /run && exec %s" % CHARON],
                 env={"STRONGSWAN_CONF": os.path.join(d, "strongswan.conf")})
            vici = os.path.join(d, "run", "charon.vici")
            # until the new daemon answers (a socket file can outlive the daemon of an earlier round)
            if not t.wait_for(10, lambda: os.path.exists(vici) and self._swanctl_ok(d, "--stats")):
                raise netns.NetnsError("charon on %s did not start: %s" % (gw, t.log_of("charon-" + gw)[-500:]))
            self._swanctl(gw, d, "--load-all", "--file", os.path.join(d, "swanctl.conf"))
        self.forwarding(True)
        d1 = os.path.join(self.tmp, "%s-swan-gw1" % t.id)
        self._swanctl("gw1", d1, "--initiate", "--child", "net")
        # kernel-libipsec installs its routes (table 220, through its TUN device) once the SA is up
        time.sleep(0.2)

    def _swanctl_ok(self, d, *args):
        try:
            return subprocess.run([SWANCTL] + list(args) + ["--uri", "unix://%s/run/charon.vici" % d],
                                  capture_output=True, timeout=10,
                                  env=dict(os.environ, STRONGSWAN_CONF=os.path.join(d, "strongswan.conf"))
                                  ).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def _swanctl(self, gw, d, *args):
        r = subprocess.run([SWANCTL] + list(args) + ["--uri", "unix://%s/run/charon.vici" % d],
                           capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, STRONGSWAN_CONF=os.path.join(d, "strongswan.conf")))
        if r.returncode != 0:
            raise netns.NetnsError("swanctl %s on %s: exit %d: %s" % (args[0], gw, r.returncode,
                                                                      (r.stderr or r.stdout).strip()[-500:]))
        return r.stdout

    def close(self):
        try:
            if self.cur is not None:
                self.down()
        finally:
            self.t.close()
