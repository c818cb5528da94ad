# bench/peers_lib/measure.py: what bench/peers measures on each tunnel and how its table is made. A
# round brings every tunnel up in turn (round-robin, so slow drifts of a shared machine touch them all
# alike) and runs on it: one TCP flow (iperf3), UDP floods of 64-byte and 1372-byte datagrams
# (`iperf3 -u -b 0`; 1372 B is the largest payload whose 1400-byte IP packet fits every tunnel's MTU,
# kernel-libipsec's TUN being the smallest), and a ping RTT series. Each point records the bytes h2's
# iperf3 received, the packets h2's interface received, the tunnel daemons' CPU time on each gateway
# (user+system of all threads, and user alone, from /proc) and the machine's softirq time. The table
# holds the medians over the rounds per tunnel and test, and per row the ratio xipsecd/peer (the
# median of the per-round ratios) against the xipsecd tunnel of its kind: ESP AES-GCM-128 for the
# tunnels that encrypt, the bypass path for plain kernel forwarding.
import json
import os
import re
import statistics
import subprocess
import time

from sizing_lib import netns

UDP_BIG = 1372
TESTS = [("tcp", "TCP, one flow"), ("udp64", "UDP 64 B"), ("udp%d" % UDP_BIG, "UDP %d B" % UDP_BIG),
         ("ping", "ping RTT")]
TEST_IDS = [t for t, _ in TESTS]
# the xipsecd row each tunnel's ratios are taken against
REFERENCE = {"kernel": "xipsecd-bypass", "wireguard": "xipsecd-gcm", "strongswan": "xipsecd-gcm"}
RAW = ["round", "tunnel", "test", "secs", "bytes", "packets", "cpu_us_gw1", "cpu_us_gw2", "user_us_gw1",
       "user_us_gw2", "softirq_us", "rtt_ms"]
COLS = ["tunnel", "test", "n", "mbps", "pps", "cpu_us_pkt", "cpu_us_pkt_gw1", "cpu_us_pkt_gw2", "user_us_pkt",
        "softirq_us_pkt", "rtt_ms", "ref", "ratio_pps", "ratio_cpu_pkt", "ratio_rtt"]
TICK = os.sysconf("SC_CLK_TCK")


def user_us(pid):
    """User time of every thread of pid in µs (/proc/PID/stat's utime, clock ticks)."""
    v = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(v[11]) * 1e6 / TICK


class Meter:
    def __init__(self, gws, log):
        self.g = gws
        self.t = gws.t
        self.log = log
        self.servers()

    def servers(self):
        self.t.bg("h2", "iperf-h2", ["iperf3", "-s", "-p", "5201"])
        time.sleep(0.3)

    def restart_servers(self):
        self.t.stop("iperf-h2", wait=2)
        self.servers()

    def snap(self):
        pids = self.g.daemons()
        s = {"t": time.monotonic(), "sirq": netns.cpu_softirq_us(), "rx": self.t.link_packets("h2", "eth0")}
        for gw in ("gw1", "gw2"):
            p = pids.get(gw)
            s["c" + gw] = netns.proc_cpu_us(p) if p else 0.0
            s["u" + gw] = user_us(p) if p else 0.0
        return s

    def point(self, test, secs):
        """One measurement of test on the current tunnel: a RAW row's fields, or None (logged) when
        iperf3 fails twice (a UDP flood can starve its end-of-test exchange)."""
        if test == "ping":
            return self.ping(secs)
        for attempt in (1, 2):
            try:
                return self._iperf(test, secs)
            except (netns.NetnsError, subprocess.TimeoutExpired) as e:
                self.log("%s %s: %s%s" % (self.g.cur, test, str(e)[:200],
                                          "; retrying" if attempt == 1 else "; point left out"))
                self.restart_servers()
        return None

    def _iperf(self, test, secs):
        cmd = ["iperf3", "-c", "10.2.0.2", "-p", "5201", "-t", str(secs), "-J"]
        if test.startswith("udp"):
            cmd += ["-u", "-b", "0", "-l", test[3:]]
        a = self.snap()
        r = self.t.run("h1", cmd, timeout=secs + 15, check=False)
        b = self.snap()
        try:
            j = json.loads(r.stdout)
        except ValueError:
            raise netns.NetnsError("iperf3 gave no JSON: %s" % (r.stdout or r.stderr)[-300:])
        if j.get("error"):
            raise netns.NetnsError("iperf3: %s" % j["error"])
        s = j["end"]["sum_received"] if "sum_received" in j["end"] else j["end"]["sum"]
        return self._row(a, b, secs=float(s["seconds"]), nbytes=int(s["bytes"]))

    def _row(self, a, b, secs, nbytes, rtt=0.0):
        return {"secs": secs, "bytes": nbytes, "packets": b["rx"] - a["rx"],
                "cpu_us_gw1": b["cgw1"] - a["cgw1"], "cpu_us_gw2": b["cgw2"] - a["cgw2"],
                "user_us_gw1": b["ugw1"] - a["ugw1"], "user_us_gw2": b["ugw2"] - a["ugw2"],
                "softirq_us": b["sirq"] - a["sirq"], "rtt_ms": rtt}

    def ping(self, secs):
        n = max(10, int(secs * 20))
        a = self.snap()
        r = self.t.run("h1", ["ping", "-q", "-c", str(n), "-i", "0.05", "-W", "2", "10.2.0.2"],
                       timeout=n * 0.05 + 10, check=False)
        b = self.snap()
        m = re.search(r"= [\d.]+/([\d.]+)/", r.stdout)
        got = re.search(r"(\d+) received", r.stdout)
        if not m or not got or int(got.group(1)) == 0:
            self.log("%s ping: %s; point left out" % (self.g.cur, (r.stdout or r.stderr).strip()[-200:]))
            return None
        return self._row(a, b, secs=b["t"] - a["t"], nbytes=0, rtt=float(m.group(1)))


# ---- the table
def _med(xs):
    xs = [x for x in xs if x is not None and x == x]
    return statistics.median(xs) if xs else None


def _per_pkt(r, key):
    return r[key] / r["packets"] if r["packets"] > 0 else None


def _figures(r, has_daemon):
    """The derived figures of one raw row."""
    f = {"mbps": r["bytes"] * 8 / r["secs"] / 1e6 if r["secs"] > 0 else None,
         "pps": r["packets"] / r["secs"] if r["secs"] > 0 else None,
         "softirq_us_pkt": _per_pkt(r, "softirq_us"), "rtt_ms": r["rtt_ms"] or None}
    if has_daemon:
        f["cpu_us_pkt_gw1"] = _per_pkt(r, "cpu_us_gw1")
        f["cpu_us_pkt_gw2"] = _per_pkt(r, "cpu_us_gw2")
        f["cpu_us_pkt"] = (f["cpu_us_pkt_gw1"] + f["cpu_us_pkt_gw2"]) / 2 if r["packets"] > 0 else None
        f["user_us_pkt"] = (_per_pkt(r, "user_us_gw1") + _per_pkt(r, "user_us_gw2")) / 2 if r["packets"] > 0 else None
    else:
        for k in ("cpu_us_pkt_gw1", "cpu_us_pkt_gw2", "cpu_us_pkt", "user_us_pkt"):
            f[k] = None
    return f


def _ratio(a, b):
    return a / b if a is not None and b else None


def table(raw):
    """Rows of COLS from the RAW rows (dicts), tunnels and tests in the order they were run."""
    fig = {}
    order = []
    for r in raw:
        k = (r["tunnel"], r["test"])
        if k not in fig:
            order.append(k)
        fig.setdefault(k, {})[r["round"]] = _figures(r, r["tunnel"] != "kernel")
    rows = []
    for tun, test in order:
        per = fig[(tun, test)]
        row = {"tunnel": tun, "test": test, "n": len(per)}
        for k in ("mbps", "pps", "cpu_us_pkt", "cpu_us_pkt_gw1", "cpu_us_pkt_gw2", "user_us_pkt", "softirq_us_pkt",
                  "rtt_ms"):
            row[k] = _med([f[k] for f in per.values()])
        if test != "ping":
            row["rtt_ms"] = None
        else:
            for k in ("mbps", "pps", "cpu_us_pkt", "cpu_us_pkt_gw1", "cpu_us_pkt_gw2", "user_us_pkt",
                      "softirq_us_pkt"):
                row[k] = None
        # a variant of xipsecd is compared with xipsecd as it is
        ref = tun.split(":", 1)[0] if ":" in tun else REFERENCE.get(tun)
        row["ref"] = ref if ref and (ref, test) in fig else None
        row["ratio_pps"] = row["ratio_cpu_pkt"] = row["ratio_rtt"] = None
        if row["ref"]:
            rp = fig[(ref, test)]
            both = [rd for rd in per if rd in rp]
            if test == "ping":
                row["ratio_rtt"] = _med([_ratio(rp[rd]["rtt_ms"], per[rd]["rtt_ms"]) for rd in both])
            else:
                row["ratio_pps"] = _med([_ratio(rp[rd]["pps"], per[rd]["pps"]) for rd in both])
                if tun != "kernel":
                    row["ratio_cpu_pkt"] = _med([_ratio(rp[rd]["cpu_us_pkt"], per[rd]["cpu_us_pkt"]) for rd in both])
        rows.append([row[c] for c in COLS])
    return rows


def fmt(v, width):
    if v is None:
        s = "-"
    elif isinstance(v, str):
        s = v
    elif isinstance(v, int):
        s = str(v)
    elif abs(v) >= 1000:
        s = "%.0f" % v
    elif abs(v) >= 10:
        s = "%.1f" % v
    else:
        s = "%.3g" % v
    return s.rjust(width)


HEAD = [("tunnel", 18), ("test", 9), ("n", 2), ("Mbit/s", 8), ("pkt/s", 8), ("cpu/pkt", 8), ("gw1", 7),
        ("gw2", 7), ("user/pkt", 8), ("sirq/pkt", 8), ("rtt ms", 7), ("ref", 15), ("x/p pps", 7), ("x/p cpu", 7),
        ("x/p rtt", 7)]


def text(rows):
    out = [" ".join(h.rjust(w) if i > 1 else h.ljust(w) for i, (h, w) in enumerate(HEAD))]
    for r in rows:
        out.append(" ".join((str(v).ljust(w) if i < 2 else fmt(v, w)) for i, (v, (_, w)) in enumerate(zip(r, HEAD))))
    return "\n".join(out)


def check(doc):
    """Problems with a bench/peers result (its JSON document): a list of sentences (empty = fine).
    The table is complete for the tunnels and tests that ran, and its numbers are sane: no speed
    is asserted, only that each tunnel carried traffic and each figure is in a physical range."""
    errs = []
    meta = doc.get("meta", {})
    cols = doc.get("columns")
    if cols != COLS:
        return ["columns %s, expected %s" % (cols, COLS)]
    rows = [dict(zip(COLS, r)) for r in doc.get("rows", [])]
    raw = doc.get("raw", [])
    got = {(r["tunnel"], r["test"]) for r in rows}
    for tun in meta.get("tunnels", []):
        for test in meta.get("tests", []):
            if (tun, test) not in got:
                errs.append("no row for %s %s" % (tun, test))
    for r in rows:
        k = "%s %s" % (r["tunnel"], r["test"])
        if r["n"] < 1 or r["n"] > meta.get("rounds", 0):
            errs.append("%s: %s rounds, ran %s" % (k, r["n"], meta.get("rounds")))
        if r["test"] == "ping":
            if not r["rtt_ms"] or not 0 < r["rtt_ms"] < 1000:
                errs.append("%s: RTT %s ms" % (k, r["rtt_ms"]))
            continue
        if not r["mbps"] or r["mbps"] <= 0 or r["mbps"] > 1e6:
            errs.append("%s: %s Mbit/s" % (k, r["mbps"]))
        if not r["pps"] or r["pps"] <= 0 or r["pps"] > 1e8:
            errs.append("%s: %s packets/s" % (k, r["pps"]))
        if r["tunnel"] != "kernel":
            c, u = r["cpu_us_pkt"], r["user_us_pkt"]
            if c is None or not 0 < c < 1e5:
                errs.append("%s: %s µs of daemon CPU per packet" % (k, c))
            elif u is None or u < 0 or u > c * 1.05 + 20:
                # user time comes in clock ticks: allowed a tick's slack over user+system
                errs.append("%s: user time per packet %s above the total %s" % (k, u, c))
        if r["test"].startswith("udp"):
            size = int(r["test"][3:])
            # what h2's iperf3 received can't exceed what h2's interface took in
            if r["pps"] and r["mbps"] and r["mbps"] * 1e6 / 8 / size > r["pps"] * 1.05:
                errs.append("%s: %s datagrams/s received but %s packets/s on h2's interface" % (
                    k, r["mbps"] * 1e6 / 8 / size, r["pps"]))
        if r["ref"] and r["ratio_pps"] is not None and not 0 < r["ratio_pps"] < 1e4:
            errs.append("%s: ratio %s" % (k, r["ratio_pps"]))
    recomputed = table(raw)
    if json.dumps(recomputed, sort_keys=True) != json.dumps(doc.get("rows"), sort_keys=True):
        errs.append("the table differs from the one its raw rows give")
    return errs
