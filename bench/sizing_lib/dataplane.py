# bench/sizing_lib/dataplane.py: the sizing study's dataplane section, in the layout of the HP-UX IPSec
# sizing paper (netperf's method): for every transform, TCP and UDP streams (iperf3) from h1 to h2
# through the two xipsecd gateways at send sizes from 64 B to 32 KB, with 1 and 2 workers: throughput,
# packets per second on the link between the gateways, each gateway's xipsecd CPU time, the machine's
# softirq share and the service demand (µs of a gateway's CPU per KB transferred); request/response
# rate and latency with one transaction outstanding (bench/sizing-rr); one-way against two-way (both
# directions at once); throughput against the dataplane's burst size (xipsecd --batch). Every
# measurement is repeated, repetitions interleaved (rep 1 of every point, then rep 2, ...), and the
# derived tables hold medians with the spread (min/max) kept.
import json
import os
import statistics
import subprocess
import tempfile
import time

from sizing_lib import netns, plotting

NAME = "dataplane"
TITLE = "Dataplane throughput, CPU utilisation and service demand"

FAMILIES = [
    ("esp-cbc-hmac", "ESP-CBC/HMAC", ["esp-aes-cbc-128-sha1", "esp-aes-cbc-128-sha256", "esp-3des-sha1"]),
    ("aead", "AEAD", ["esp-aes-gcm-128", "esp-aes-gcm-256", "esp-chacha20-poly1305"]),
    ("ah", "AH", ["ah-md5", "ah-sha1"]),
    ("null-legacy", "NULL/legacy", ["esp-null-sha1", "esp-aes-cbc-128"]),
]

STREAM_RAW = ["transform", "test", "send_size", "workers", "rep", "secs", "bytes", "packets", "cpu_us_gw1",
              "cpu_us_gw2", "softirq_us", "mhz"]
STREAM = ["transform", "test", "send_size", "workers", "n", "mbps", "mbps_min", "mbps_max", "pps", "cpu_pct_gw1",
          "cpu_pct_gw2", "softirq_pct", "sd_gw1", "sd_gw2"]
RR_RAW = ["transform", "workers", "rep", "req", "resp", "secs", "transactions", "mean_us", "p50_us", "p90_us",
          "p99_us", "cpu_us_gw1", "cpu_us_gw2"]
RR = ["transform", "workers", "req", "resp", "n", "tps", "tps_min", "tps_max", "mean_us", "p50_us", "p90_us",
      "p99_us", "sd_tran_gw1", "sd_tran_gw2"]
TW_RAW = ["transform", "mode", "workers", "rep", "secs", "bytes_fwd", "bytes_rev", "cpu_us_gw1", "cpu_us_gw2"]
TW = ["transform", "mode", "workers", "n", "mbps", "mbps_min", "mbps_max", "mbps_fwd", "mbps_rev", "cpu_pct_gw1",
      "cpu_pct_gw2", "sd_gw1", "sd_gw2"]
BATCH_RAW = ["transform", "test", "send_size", "batch", "rep", "secs", "bytes", "packets", "cpu_us_gw1",
             "cpu_us_gw2"]
BATCH = ["transform", "test", "send_size", "batch", "n", "mbps", "mbps_min", "mbps_max", "pps", "cpu_pct_gw1",
         "cpu_pct_gw2", "sd_gw1", "sd_gw2"]


def plan(quick):
    if quick:
        return {"transforms": ["bypass", "esp-aes-gcm-128", "esp-aes-cbc-128-sha256", "ah-sha1"],
                "sizes": [64, 32768], "tests": ["tcp_stream", "udp_stream"], "workers": [1], "reps": 1,
                "secs": 1, "rr_reps": 1, "rr_secs": 1, "tw_transforms": ["bypass", "esp-aes-gcm-128"],
                "tw_workers": [1], "tw_reps": 1, "batch": [1, 64], "batch_transforms": ["esp-aes-gcm-128"],
                "batch_tests": [("udp_stream", 64)], "batch_reps": 1}
    return {"transforms": list(netns.TRANSFORM_IDS), "sizes": [64, 256, 1024, 1400, 4096, 16384, 32768],
            "tests": ["tcp_stream", "udp_stream"], "workers": [1, 2], "reps": 3, "secs": 1,
            "rr_reps": 3, "rr_secs": 1, "tw_transforms": list(netns.TRANSFORM_IDS), "tw_workers": [1, 2],
            "tw_reps": 3, "batch": [1, 2, 4, 8, 16, 32, 64], "batch_transforms": ["bypass", "esp-aes-gcm-128"],
            "batch_tests": [("tcp_stream", 32768), ("udp_stream", 64)], "batch_reps": 3}


def _plan(ctx):
    """The plan, with the send sizes of --sizes when given."""
    p = plan(ctx.quick)
    if getattr(ctx, "sizes", None):
        p["sizes"] = list(ctx.sizes)
    return p


def _count(p, xs):
    """Progress points of plan p when the transforms xs are measured."""
    n = p["reps"] * len(p["workers"]) * len(xs) * len(p["sizes"]) * len(p["tests"])
    n += p["rr_reps"] * len(xs)
    n += p["tw_reps"] * len(p["tw_workers"]) * len([x for x in p["tw_transforms"] if x in xs]) * 2
    n += p["batch_reps"] * len(p["batch"]) * len([x for x in p["batch_transforms"] if x in xs]) * len(p["batch_tests"])
    return n


def points(ctx):
    p = _plan(ctx)
    return _count(p, p["transforms"])


def seconds(ctx):
    """A rough duration (the framework prints the total before it starts): ~0.2 s of set-up per point."""
    p = _plan(ctx)
    xs = p["transforms"]
    n_stream = p["reps"] * len(p["workers"]) * len(xs) * len(p["sizes"]) * len(p["tests"])
    n_tw = p["tw_reps"] * len(p["tw_workers"]) * len(p["tw_transforms"]) * 2
    n_b = p["batch_reps"] * len(p["batch"]) * len(p["batch_transforms"]) * len(p["batch_tests"])
    return (n_stream + n_tw + n_b) * (p["secs"] + 0.2) + p["rr_reps"] * len(xs) * (p["rr_secs"] + 0.3) + \
        p["batch_reps"] * len(p["batch"]) * 1.5 + 8


# ---- derived figures (shared with check(), which recomputes them from the raw tables)
def _med(xs):
    xs = [x for x in xs if x == x]      # without NaN: a service demand of nothing carried
    return statistics.median(xs) if xs else float("nan")


def _sd(cpu_us, nbytes):
    return cpu_us / (nbytes / 1024.0) if nbytes > 0 else float("nan")


def derive_stream(raw, ncpus):
    groups = {}
    for r in raw:
        groups.setdefault((r["transform"], r["test"], r["send_size"], r["workers"]), []).append(r)
    out = []
    for (xf, test, size, w), rs in groups.items():
        mb = [r["bytes"] * 8 / r["secs"] / 1e6 for r in rs]
        out.append([xf, test, size, w, len(rs), _med(mb), min(mb), max(mb),
                    _med([r["packets"] / r["secs"] for r in rs]),
                    _med([r["cpu_us_gw1"] / (r["secs"] * 1e6) * 100 for r in rs]),
                    _med([r["cpu_us_gw2"] / (r["secs"] * 1e6) * 100 for r in rs]),
                    _med([r["softirq_us"] / (r["secs"] * 1e6 * ncpus) * 100 for r in rs]),
                    _med([_sd(r["cpu_us_gw1"], r["bytes"]) for r in rs]),
                    _med([_sd(r["cpu_us_gw2"], r["bytes"]) for r in rs])])
    return out


def derive_rr(raw):
    groups = {}
    for r in raw:
        groups.setdefault((r["transform"], r["workers"], r["req"], r["resp"]), []).append(r)
    out = []
    for (xf, w, q, s), rs in groups.items():
        tps = [r["transactions"] / r["secs"] for r in rs]
        out.append([xf, w, q, s, len(rs), _med(tps), min(tps), max(tps), _med([r["mean_us"] for r in rs]),
                    _med([r["p50_us"] for r in rs]), _med([r["p90_us"] for r in rs]),
                    _med([r["p99_us"] for r in rs]),
                    _med([r["cpu_us_gw1"] / r["transactions"] for r in rs if r["transactions"]]),
                    _med([r["cpu_us_gw2"] / r["transactions"] for r in rs if r["transactions"]])])
    return out


def derive_tw(raw):
    groups = {}
    for r in raw:
        groups.setdefault((r["transform"], r["mode"], r["workers"]), []).append(r)
    out = []
    for (xf, mode, w), rs in groups.items():
        tot = [(r["bytes_fwd"] + r["bytes_rev"]) * 8 / r["secs"] / 1e6 for r in rs]
        out.append([xf, mode, w, len(rs), _med(tot), min(tot), max(tot),
                    _med([r["bytes_fwd"] * 8 / r["secs"] / 1e6 for r in rs]),
                    _med([r["bytes_rev"] * 8 / r["secs"] / 1e6 for r in rs]),
                    _med([r["cpu_us_gw1"] / (r["secs"] * 1e6) * 100 for r in rs]),
                    _med([r["cpu_us_gw2"] / (r["secs"] * 1e6) * 100 for r in rs]),
                    _med([_sd(r["cpu_us_gw1"], r["bytes_fwd"] + r["bytes_rev"]) for r in rs]),
                    _med([_sd(r["cpu_us_gw2"], r["bytes_fwd"] + r["bytes_rev"]) for r in rs])])
    return out


def derive_batch(raw):
    groups = {}
    for r in raw:
        groups.setdefault((r["transform"], r["test"], r["send_size"], r["batch"]), []).append(r)
    out = []
    for (xf, test, size, b), rs in groups.items():
        mb = [r["bytes"] * 8 / r["secs"] / 1e6 for r in rs]
        out.append([xf, test, size, b, len(rs), _med(mb), min(mb), max(mb),
                    _med([r["packets"] / r["secs"] for r in rs]),
                    _med([r["cpu_us_gw1"] / (r["secs"] * 1e6) * 100 for r in rs]),
                    _med([r["cpu_us_gw2"] / (r["secs"] * 1e6) * 100 for r in rs]),
                    _med([_sd(r["cpu_us_gw1"], r["bytes"]) for r in rs]),
                    _med([_sd(r["cpu_us_gw2"], r["bytes"]) for r in rs])])
    return out


def _dicts(t):
    return [dict(zip(t["columns"], r)) for r in t["rows"]]


# ---- measurement
class Bench:
    """One topology (1 or 2 queues) with its two gateways and the traffic servers on the hosts."""

    def __init__(self, ctx, tmp, queues):
        self.ctx = ctx
        self.t = netns.Topo(ctx.builddir, tmp, queues=queues, tag="q%d" % queues)
        self.rr = os.path.join(str(ctx.builddir), "bench", "sizing-rr")
        self.queues = queues
        t = self.t
        t.build()
        t.start_gw("gw1", queues)
        t.start_gw("gw2", queues)
        self.servers()

    def servers(self):
        t = self.t
        t.bg("h2", "iperf-h2", ["iperf3", "-s", "-p", "5201"])
        t.bg("h1", "iperf-h1", ["iperf3", "-s", "-p", "5202"])
        t.bg("h2", "rr-h2", [self.rr, "server", "7000"])
        if not t.wait_for(10, lambda: "ready" in t.log_of("rr-h2")):
            raise netns.NetnsError("sizing-rr server did not start: " + t.log_of("rr-h2"))
        time.sleep(0.2)

    def use(self, xf):
        t = self.t
        if t.transform == xf:
            return True
        t.set_transform(xf)
        if not t.wait_sadb() or not t.ping():
            raise netns.NetnsError("transform %s: no traffic through the tunnel (%s)" % (
                xf, t.refusal("gw1") or t.refusal("gw2") or "ping failed"))
        return True

    def snap(self):
        t = self.t
        return {"c1": t.gw_cpu_us("gw1"), "c2": t.gw_cpu_us("gw2"), "sirq": netns.cpu_softirq_us(),
                "p1": t.link_packets("sw", "s1"), "p2": t.link_packets("sw", "s2"), "t": time.monotonic()}

    def iperf(self, src, dst_addr, port, test, size, secs):
        cmd = ["iperf3", "-c", dst_addr, "-p", str(port), "-t", str(secs), "-l", str(size), "-J"]
        if test == "udp_stream":
            cmd += ["-u", "-b", "0"]
        return cmd

    def _parse(self, out, what):
        try:
            j = json.loads(out)
        except ValueError:
            raise netns.NetnsError("%s: iperf3 gave no JSON: %s" % (what, out[-300:]))
        if j.get("error"):
            raise netns.NetnsError("%s: iperf3: %s" % (what, j["error"]))
        s = j["end"]["sum_received"]
        return int(s["bytes"]), float(s["seconds"])

    def restart_servers(self):
        for n in ("iperf-h2", "iperf-h1", "rr-h2"):
            self.t.stop(n, wait=2)
        self.servers()

    def stream(self, test, size, secs):
        """One point; a stuck iperf3 (its end-of-test exchange can starve behind a UDP flood) is
        retried once after restarting the servers; None if that fails too."""
        for attempt in (1, 2):
            try:
                return self._stream(test, size, secs)
            except (netns.NetnsError, subprocess.TimeoutExpired) as e:
                self.ctx.log("%s %s %d B: %s%s" % (self.t.transform, test, size, str(e)[:200],
                                                   "; retrying" if attempt == 1 else "; point left out"))
                self.restart_servers()
        return None

    def _stream(self, test, size, secs):
        t = self.t
        a = self.snap()
        r = t.run("h1", self.iperf("h1", "10.2.0.2", 5201, test, size, secs), timeout=secs + 15, check=False)
        b = self.snap()
        nbytes, s = self._parse(r.stdout, "%s %s %d" % (t.transform, test, size))
        return {"secs": s, "bytes": nbytes, "packets": b["p1"] - a["p1"], "cpu_us_gw1": b["c1"] - a["c1"],
                "cpu_us_gw2": b["c2"] - a["c2"], "softirq_us": b["sirq"] - a["sirq"], "mhz": netns.cpu_mhz()}

    def twoway(self, secs, size=32768):
        """TCP streams h1 -> h2 and h2 -> h1 at once."""
        t = self.t
        a = self.snap()
        env = dict(os.environ)
        ps = []
        for src, dst, port in (("h1", "10.2.0.2", 5201), ("h2", "10.1.0.2", 5202)):
            cmd = ["nsenter", "--net=/run/netns/" + t.ns(src), "timeout", str(secs + 30)] + \
                self.iperf(src, dst, port, "tcp_stream", size, secs)
            ps.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
        try:
            outs = [p.communicate(timeout=secs + 20)[0] for p in ps]
        finally:
            for p in ps:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        b = self.snap()
        (bf, sf), (br, sr) = [self._parse(o, "%s two-way" % t.transform) for o in outs]
        return {"secs": max(sf, sr), "bytes_fwd": bf, "bytes_rev": br, "cpu_us_gw1": b["c1"] - a["c1"],
                "cpu_us_gw2": b["c2"] - a["c2"]}

    def rr_safe(self, secs, req=1, resp=1):
        """rr_point, or None (logged, servers restarted) when it fails."""
        try:
            return self.rr_point(secs, req, resp)
        except (netns.NetnsError, subprocess.TimeoutExpired) as e:
            self.ctx.log("%s request/response: %s; point left out" % (self.t.transform, str(e)[:200]))
            self.restart_servers()
            return None

    def rr_point(self, secs, req=1, resp=1):
        t = self.t
        a = self.snap()
        r = t.run("h1", [self.rr, "client", "10.2.0.2", "7000", str(req), str(resp), str(secs)],
                  timeout=secs + 30, check=False)
        b = self.snap()
        try:
            j = json.loads(r.stdout)
        except ValueError:
            raise netns.NetnsError("%s: sizing-rr: %s" % (t.transform, (r.stderr or r.stdout)[-300:]))
        j.update({"cpu_us_gw1": b["c1"] - a["c1"], "cpu_us_gw2": b["c2"] - a["c2"]})
        return j

    def close(self):
        self.t.close()


def _backends(ctx, b, xf):
    bk = ctx.meta.setdefault("crypto_backend", {})
    if xf != "bypass" and xf not in bk:
        bk[xf] = {gw: b.t.backends(gw) for gw in ("gw1", "gw2")}


def run(ctx):
    p = _plan(ctx)
    ncpus = os.cpu_count() or 1
    ctx.meta["dataplane_plan"] = {k: v for k, v in p.items()}
    refused = ctx.meta.setdefault("refused_transforms", {})
    tmp = tempfile.mkdtemp(prefix="sizing-", dir="/tmp")
    benches = {}
    try:
        for w in sorted(set(p["workers"] + p["tw_workers"] + [1])):
            benches[w] = Bench(ctx, tmp, w)
        if benches[1].t.asan():
            ctx.log("WARNING: %s is built with AddressSanitizer: figures are not representative" % benches[1].t.xipsecd)
            ctx.meta["asan"] = True
        ctx.meta["xipsecd"] = benches[1].t.xipsecd
        # which transforms the SADB and the engine take at all
        usable = []
        for xf in p["transforms"]:
            try:
                benches[1].use(xf)
                _backends(ctx, benches[1], xf)
                usable.append(xf)
            except netns.NetnsError as e:
                refused[xf] = str(e).split(": exit 2: ")[-1]
                ctx.log("transform %s left out: %s" % (xf, refused[xf]))
        ctx.total -= _count(p, p["transforms"]) - _count(p, usable)

        raw = []
        for rep in range(1, p["reps"] + 1):
            for w in p["workers"]:
                for xf in usable:
                    benches[w].use(xf)
                    for test in p["tests"]:
                        for size in p["sizes"]:
                            m = benches[w].stream(test, size, p["secs"])
                            if m is None:
                                ctx.fail("%s %s %d B, %d worker(s), rep %d" % (xf, test, size, w, rep))
                                ctx.tick("%s %s %d B, %d worker(s), rep %d: failed" % (xf, test, size, w, rep))
                                continue
                            raw.append([xf, test, size, w, rep, m["secs"], m["bytes"], m["packets"],
                                        m["cpu_us_gw1"], m["cpu_us_gw2"], m["softirq_us"], m["mhz"]])
                            ctx.tick("%s %s %d B, %d worker(s), rep %d: %.0f Mb/s" % (
                                xf, test, size, w, rep, m["bytes"] * 8 / m["secs"] / 1e6))
        n_stream = len(p["workers"]) * len(usable) * len(p["tests"]) * len(p["sizes"])
        t = ctx.table("dataplane_stream_raw", STREAM_RAW, raw,
                      "one row per repetition: application bytes the receiver got, IP packets gw1 sent on its "
                      "outside interface, CPU µs of each xipsecd, machine softirq µs", expect=n_stream * p["reps"])
        ctx.table("dataplane_stream", STREAM, derive_stream(_dicts(t), ncpus),
                  "medians over the repetitions; cpu_pct in % of one CPU; softirq_pct of the whole machine; "
                  "sd = µs of that gateway's CPU per KB transferred", expect=n_stream)

        rr = []
        for rep in range(1, p["rr_reps"] + 1):
            for xf in usable:
                benches[1].use(xf)
                j = benches[1].rr_safe(p["rr_secs"])
                if j is None:
                    ctx.fail("%s TCP RR rep %d" % (xf, rep))
                    ctx.tick("%s TCP RR rep %d: failed" % (xf, rep))
                    continue
                rr.append([xf, 1, rep, 1, 1, j["secs"], j["transactions"], j["mean_us"], j["p50_us"], j["p90_us"],
                           j["p99_us"], j["cpu_us_gw1"], j["cpu_us_gw2"]])
                ctx.tick("%s TCP RR rep %d: %.0f/s, p50 %.0f µs" % (xf, rep, j["rate"], j["p50_us"]))
        t = ctx.table("dataplane_rr_raw", RR_RAW, rr, "TCP request/response (1-byte request and response, one "
                      "transaction outstanding), one row per repetition", expect=p["rr_reps"] * len(usable))
        ctx.table("dataplane_rr", RR, derive_rr(_dicts(t)),
                  "medians: transactions per second, latency percentiles (µs), CPU µs per transaction per gateway",
                  expect=len(usable))

        tw = []
        tw_x = [x for x in p["tw_transforms"] if x in usable]
        for rep in range(1, p["tw_reps"] + 1):
            for w in p["tw_workers"]:
                for xf in tw_x:
                    benches[w].use(xf)
                    m = benches[w].stream("tcp_stream", 32768, p["secs"])
                    if m is None:
                        ctx.fail("%s one-way, %d worker(s), rep %d" % (xf, w, rep))
                        ctx.tick("%s one-way: failed" % xf)
                        ctx.tick("%s two-way: not run" % xf)
                        continue
                    tw.append([xf, "one-way", w, rep, m["secs"], m["bytes"], 0, m["cpu_us_gw1"], m["cpu_us_gw2"]])
                    ctx.tick("%s one-way, %d worker(s), rep %d" % (xf, w, rep))
                    try:
                        m = benches[w].twoway(p["secs"])
                    except (netns.NetnsError, subprocess.TimeoutExpired) as e:
                        ctx.fail("%s two-way, %d worker(s), rep %d: %s" % (xf, w, rep, str(e)[:200]))
                        benches[w].restart_servers()
                        ctx.tick("%s two-way: failed" % xf)
                        continue
                    tw.append([xf, "two-way", w, rep, m["secs"], m["bytes_fwd"], m["bytes_rev"], m["cpu_us_gw1"],
                               m["cpu_us_gw2"]])
                    ctx.tick("%s two-way, %d worker(s), rep %d" % (xf, w, rep))
        t = ctx.table("dataplane_twoway_raw", TW_RAW, tw, "TCP streams of 32 KB sends: h1 -> h2 alone (one-way) "
                      "and h1 -> h2 with h2 -> h1 at the same time (two-way), one row per repetition",
                      expect=p["tw_reps"] * len(p["tw_workers"]) * len(tw_x) * 2)
        ctx.table("dataplane_twoway", TW, derive_tw(_dicts(t)),
                  "medians; mbps is both directions together; sd per KB of both directions",
                  expect=len(p["tw_workers"]) * len(tw_x) * 2)

        bt = []
        b1 = benches[1]
        bx = [x for x in p["batch_transforms"] if x in usable]
        try:
            for rep in range(1, p["batch_reps"] + 1):
                for n in p["batch"]:
                    b1.t.restart_gws(1, n)
                    if b1.t.status("gw1").get("batch") != n:
                        raise netns.NetnsError("xipsecd --batch %d not in effect: %s" % (n, b1.t.status("gw1")))
                    b1.t.transform = None
                    for xf in bx:
                        b1.use(xf)
                        for test, size in p["batch_tests"]:
                            m = b1.stream(test, size, p["secs"])
                            if m is None:
                                ctx.fail("%s %s %d B, burst %d, rep %d" % (xf, test, size, n, rep))
                                ctx.tick("%s %s %d B, burst %d: failed" % (xf, test, size, n))
                                continue
                            bt.append([xf, test, size, n, rep, m["secs"], m["bytes"], m["packets"], m["cpu_us_gw1"],
                                       m["cpu_us_gw2"]])
                            ctx.tick("%s %s %d B, burst %d, rep %d" % (xf, test, size, n, rep))
        finally:
            b1.t.restart_gws(1, None)
        n_batch = len(p["batch"]) * len(bx) * len(p["batch_tests"])
        t = ctx.table("dataplane_batch_raw", BATCH_RAW, bt, "streams against xipsecd's burst size (--batch), "
                      "1 worker, one row per repetition", expect=n_batch * p["batch_reps"])
        ctx.table("dataplane_batch", BATCH, derive_batch(_dicts(t)), "medians against the burst size", expect=n_batch)
    finally:
        for b in benches.values():
            b.close()
        try:
            os.rmdir(tmp)
        except OSError:
            pass


# ---- report
def _series(rows, **kw):
    return sorted([r for r in rows if all(r[k] == v for k, v in kw.items())], key=lambda r: r["send_size"])


def _size_label(n):
    return "%dK" % (n // 1024) if n >= 1024 and n % 1024 == 0 else str(n)


def _raw_spread(ctx, name, key_cols, value):
    """{point key: (min, max)} of value(row) over the repetitions of raw table NAME."""
    raw = _dicts(ctx.tables.get(name, {"columns": [], "rows": []}))
    return plotting.spread(raw, lambda r: tuple(r[c] for c in key_cols), value)


def _delivered(r):
    """A stream point that delivered data (an unthrottled UDP flood of fragmenting sends can deliver
    nothing through a tunnel: that point has no rate and no service demand, it is not a zero)."""
    return plotting.ok(r["mbps"]) and r["mbps"] > 0


# the stream figures' panels: table column, axis label, the same value from one raw repetition
STREAM_PANELS = (
    ("mbps", "throughput (Mb/s)", lambda r: r["bytes"] * 8 / r["secs"] / 1e6 if r["bytes"] > 0 else None),
    ("cpu_pct_gw1", "gw1 CPU (% of one CPU)", lambda r: r["cpu_us_gw1"] / (r["secs"] * 1e6) * 100),
    ("sd_gw1", "gw1 service demand (µs/KB)", lambda r: _sd(r["cpu_us_gw1"], r["bytes"])),
)
STREAM_KEY = ("transform", "test", "send_size", "workers")


def _plots(ctx):
    plt = plotting.pyplot()
    st = _dicts(ctx.tables["dataplane_stream"])
    spreads = {col: _raw_spread(ctx, "dataplane_stream_raw", STREAM_KEY, fn) for col, _, fn in STREAM_PANELS}
    stems = []
    workers = sorted({r["workers"] for r in st})
    w0 = workers[0] if workers else 1
    for fid, ftitle, members in FAMILIES:
        xs = ["bypass"] + [m for m in members if any(r["transform"] == m for r in st)]
        if len(xs) < 2:
            continue
        fig, axes = plt.subplots(2, 3, figsize=(14, 7.5))
        nothing = []
        for i, test in enumerate(("tcp_stream", "udp_stream")):
            for j, (col, lab, _) in enumerate(STREAM_PANELS):
                ax = axes[i][j]
                for xf in xs:
                    s = _series(st, transform=xf, test=test, workers=w0)
                    if not s:
                        continue
                    # CPU was spent whether or not anything arrived; rate and demand need delivered data
                    ys = [r[col] if col == "cpu_pct_gw1" or _delivered(r) else None for r in s]
                    gone = plotting.line(ax, [r["send_size"] for r in s], ys,
                                         [spreads[col].get(tuple(r[k] for k in STREAM_KEY)) for r in s], label=xf,
                                         linestyle="--" if xf == "bypass" else "-")
                    if col == "mbps":
                        nothing += gone
                        plotting.missing(ax, gone, "delivered nothing (no rate)")
                ax.set_xscale("log", base=2)
                sz = sorted({r["send_size"] for r in st})
                ax.set_xticks(sz)
                ax.set_xticklabels([_size_label(x) for x in sz], fontsize=8)
                ax.set_xlabel("send size (bytes)")
                ax.set_ylabel(lab)
                ax.set_title("%s, %s" % (test, lab.split(" (")[0]), fontsize=9)
                ax.grid(alpha=0.3)
                plotting.from_zero(ax)
        axes[0][0].legend(fontsize=8)
        if nothing:
            axes[1][0].legend(fontsize=7)
        fig.suptitle("%s: throughput, CPU utilisation and service demand against send size (%d worker); "
                     "bars: min-max over the repetitions" % (ftitle, w0), fontsize=10)
        fig.tight_layout()
        stem = "dataplane_family_" + fid
        ctx.savefig(fig, stem)
        stems.append((stem, "%s, with the bypass baseline: throughput, CPU of the encrypting gateway and its "
                      "service demand against send size; top TCP stream, bottom UDP stream; a red x marks a "
                      "send size where nothing arrived (no rate, not a zero)" % ftitle))
    # comparative bars at the largest send size (32 KB)
    big = max([r["send_size"] for r in st] or [0])
    xs = [x for x in netns.TRANSFORM_IDS if any(r["transform"] == x for r in st)]
    if xs:
        fig, ax = plt.subplots(figsize=(12, 5))
        wd = 0.8 / max(len(workers), 1)
        for k, w in enumerate(workers):
            pts = [next((r for r in st if r["transform"] == x and r["test"] == "tcp_stream" and
                         r["send_size"] == big and r["workers"] == w), None) for x in xs]
            plotting.bars(ax, [i + k * wd for i in range(len(xs))], [r["mbps"] if r else None for r in pts], wd,
                          [(r["mbps_min"], r["mbps_max"]) if r else None for r in pts],
                          label="%d worker%s" % (w, "s" if w > 1 else ""))
        ax.set_xticks([i + wd * (len(workers) - 1) / 2 for i in range(len(xs))])
        ax.set_xticklabels(xs, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("throughput (Mb/s; median, bars min-max)")
        ax.set_title("Comparative TCP throughput at %d-byte sends" % big)
        ax.legend()
        ax.grid(axis="y", alpha=0.3)
        plotting.from_zero(ax)
        fig.tight_layout()
        ctx.savefig(fig, "dataplane_compare_32k")
        stems.append(("dataplane_compare_32k", "comparative TCP stream throughput at %d-byte sends, with the "
                      "min-max of the repetitions" % big))
    tw = _dicts(ctx.tables.get("dataplane_twoway", {"columns": [], "rows": []}))
    if tw:
        xs = [x for x in netns.TRANSFORM_IDS if any(r["transform"] == x for r in tw)]
        ws = sorted({r["workers"] for r in tw})
        tw_key = ("transform", "mode", "workers")
        sp = {"mbps": _raw_spread(ctx, "dataplane_twoway_raw", tw_key,
                                  lambda r: (r["bytes_fwd"] + r["bytes_rev"]) * 8 / r["secs"] / 1e6),
              "sd_gw1": _raw_spread(ctx, "dataplane_twoway_raw", tw_key,
                                    lambda r: _sd(r["cpu_us_gw1"], r["bytes_fwd"] + r["bytes_rev"]))}
        fig, axes = plt.subplots(1, 2, figsize=(13, 5))
        combos = [(m, w) for w in ws for m in ("one-way", "two-way")]
        wd = 0.8 / len(combos)
        for k, (m, w) in enumerate(combos):
            for ax, col in zip(axes, ("mbps", "sd_gw1")):
                pts = [next((r for r in tw if r["transform"] == x and r["mode"] == m and r["workers"] == w), None)
                       for x in xs]
                plotting.bars(ax, [i + k * wd for i in range(len(xs))], [r[col] if r else None for r in pts], wd,
                              [sp[col].get((x, m, w)) for x in xs],
                              label="%s, %d worker%s" % (m, w, "s" if w > 1 else ""),
                              fmt="%.0f" if col == "mbps" else "%.2f")
        for ax, lab in zip(axes, ("throughput, both directions (Mb/s)", "gw1 service demand (µs/KB)")):
            ax.set_xticks([i + wd * (len(combos) - 1) / 2 for i in range(len(xs))])
            ax.set_xticklabels(xs, rotation=30, ha="right", fontsize=8)
            ax.set_ylabel(lab)
            ax.grid(axis="y", alpha=0.3)
            plotting.from_zero(ax)
        axes[0].legend(fontsize=8)
        fig.suptitle("One-way against two-way (both directions at once), TCP, 32 KB sends; bars min-max")
        fig.tight_layout()
        ctx.savefig(fig, "dataplane_twoway")
        stems.append(("dataplane_twoway", "one-way against two-way: total throughput and service demand"))
    rr = _dicts(ctx.tables.get("dataplane_rr", {"columns": [], "rows": []}))
    if rr:
        rr_key = ("transform", "workers", "req", "resp")
        fig, axes = plt.subplots(1, 2, figsize=(13, 5))
        xs = [r["transform"] for r in rr]
        plotting.bars(axes[0], list(range(len(xs))), [r["tps"] for r in rr], 0.8,
                      [(r["tps_min"], r["tps_max"]) for r in rr], label="transactions/s")
        for k, (col, lab) in enumerate((("p50_us", "p50"), ("p90_us", "p90"), ("p99_us", "p99"))):
            sp = _raw_spread(ctx, "dataplane_rr_raw", rr_key, lambda r, c=col: r[c])
            plotting.bars(axes[1], [i + k * 0.27 for i in range(len(xs))], [r[col] for r in rr], 0.27,
                          [sp.get(tuple(r[c] for c in rr_key)) for r in rr], label=lab)
        for ax, lab in zip(axes, ("transactions per second", "latency (µs)")):
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels(xs, rotation=30, ha="right", fontsize=8)
            ax.set_ylabel(lab)
            ax.legend(fontsize=8)
            ax.grid(axis="y", alpha=0.3)
            plotting.from_zero(ax)
        fig.suptitle("TCP request/response, 1-byte messages, one transaction outstanding; bars min-max")
        fig.tight_layout()
        ctx.savefig(fig, "dataplane_rr")
        stems.append(("dataplane_rr", "request/response rate and latency percentiles per transform"))
    bt = _dicts(ctx.tables.get("dataplane_batch", {"columns": [], "rows": []}))
    if bt:
        b_key = ("transform", "test", "send_size", "batch")
        b_val = {"mbps": lambda r: r["bytes"] * 8 / r["secs"] / 1e6, "pps": lambda r: r["packets"] / r["secs"],
                 "sd_gw1": lambda r: _sd(r["cpu_us_gw1"], r["bytes"])}
        sp = {c: _raw_spread(ctx, "dataplane_batch_raw", b_key, fn) for c, fn in b_val.items()}
        fig, axes = plt.subplots(1, 3, figsize=(14, 4.5))
        keys = sorted({(r["transform"], r["test"], r["send_size"]) for r in bt})
        for key in keys:
            s = sorted([r for r in bt if (r["transform"], r["test"], r["send_size"]) == key], key=lambda r: r["batch"])
            lab = "%s %s %d B" % key
            for ax, col in zip(axes, ("mbps", "pps", "sd_gw1")):
                plotting.line(ax, [r["batch"] for r in s], [r[col] for r in s],
                              [sp[col].get(tuple(r[c] for c in b_key)) for r in s], label=lab)
        for ax, lab in zip(axes, ("throughput (Mb/s)", "packets/s between the gateways", "gw1 service demand (µs/KB)")):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("burst size (xipsecd --batch)")
            ax.set_ylabel(lab)
            ax.grid(alpha=0.3)
            plotting.from_zero(ax)
        axes[0].legend(fontsize=8)
        fig.suptitle("Throughput against the dataplane's burst size (1 worker); bars min-max")
        fig.tight_layout()
        ctx.savefig(fig, "dataplane_batch")
        stems.append(("dataplane_batch", "throughput, packet rate and service demand against the burst size"))
    return stems


SD_TEXT = (
    "**How to read service demand.** Service demand is netperf's figure: the CPU time a gateway spends "
    "per KB (1024 bytes) of application data it carries, in microseconds (`sd = CPU µs / (bytes / 1024)`). "
    "Throughput alone says little on a shared, I/O-bound machine: two transforms can both fill the link "
    "while one of them costs twice the CPU. Service demand is what sizing needs: a gateway that must carry "
    "R KB/s of traffic with transform T needs about `R × sd(T)` µs of CPU per second, i.e. "
    "`R × sd(T) / 10^6` CPUs, at the send size (packet size) of that traffic. Lower is better. It falls with "
    "the send size while the per-packet cost dominates (small sends: many packets per KB) and flattens "
    "where the per-byte cost of the cipher and MAC takes over; the gap between a transform's curve and "
    "the bypass curve is the cost of IPsec itself. The CPU here is xipsecd's own (user + system time of "
    "its threads, which includes the kernel's copy-mode AF_XDP transmit in its context); the softirq "
    "column is the machine's interrupt-side share, which the veths charge to whoever runs them.")


def report(ctx, rep):
    if "dataplane_stream" not in ctx.tables:
        rep.para("No dataplane measurements.")
        return
    p = ctx.meta.get("dataplane_plan", {})
    rep.para("Two xipsecd gateways in network namespaces (h1 - gw1 - bridge - gw2 - h2, veths), manually keyed "
             "tunnel-mode SAs, iperf3 streams from h1 to h2 (%s s per point, %s repetitions, interleaved: rep 1 "
             "of every point, then rep 2, ...); medians with min/max. xipsecd binary: `%s`. Throughput is "
             "application data received; CPU is each gateway's xipsecd (user+system) in %% of one CPU; "
             "packets are IP packets gw1 sent towards gw2." % (p.get("secs"), p.get("reps"), ctx.meta.get("xipsecd")))
    rep.para("UDP streams are unthrottled (`iperf3 -u -b 0`): the sender offers more than the gateways carry and "
             "the figures are what arrives. Sends beyond the MTU leave h1 as IP fragments; once protected each "
             "fragment needs two packets, and with the gateway's receive ring overflowing almost every datagram "
             "loses one of its fragments, so the largest UDP sends can deliver next to nothing through a tunnel "
             "while bypass still carries them (service demand is then left empty).")
    if ctx.meta.get("asan"):
        rep.para("**Warning:** the dataplane was built with AddressSanitizer: the figures are not representative.")
    ref = ctx.meta.get("refused_transforms", {})
    if ref:
        rep.para("Transforms left out (the SADB or the engine refuses them):\n" +
                 "\n".join("- `%s`: %s" % (k, v) for k, v in ref.items()))
    bk = ctx.meta.get("crypto_backend", {})
    if bk:
        rep.para("Crypto backend xipsecd chose per transform (timed at the first SA, per direction):\n" +
                 "\n".join("- `%s`: gw1 %s, gw2 %s" % (x, ", ".join("%s %s" % kv for kv in sorted(v.get("gw1", {}).items())),
                                                      ", ".join("%s %s" % kv for kv in sorted(v.get("gw2", {}).items())))
                           for x, v in bk.items()))
    rep.para(SD_TEXT)
    stems = _plots(ctx)
    for stem, cap in stems:
        if stem.startswith("dataplane_family_"):
            rep.plot(stem, cap)
    rep.table("dataplane_stream")
    for stem, cap in stems:
        if stem == "dataplane_compare_32k":
            rep.plot(stem, cap)
    rep.heading("Request/response", 3)
    rep.para("TCP request/response as netperf's TCP_RR: a 1-byte request, a 1-byte response, one transaction "
             "outstanding (bench/sizing-rr); the rate is the inverse of the round trip through both gateways. "
             "sd_tran is CPU µs per transaction.")
    for stem, cap in stems:
        if stem == "dataplane_rr":
            rep.plot(stem, cap)
    rep.table("dataplane_rr")
    rep.heading("One-way against two-way", 3)
    rep.para("Two-way runs a second TCP stream from h2 to h1 at the same time: each gateway encrypts one "
             "direction and decrypts the other. With the same CPUs, the total is what the gateways carry "
             "when both directions are loaded.")
    for stem, cap in stems:
        if stem == "dataplane_twoway":
            rep.plot(stem, cap)
    rep.table("dataplane_twoway")
    rep.heading("Burst size", 3)
    rep.para("xipsecd takes at most --batch packets from an RX ring at a time and hands them to the ESP engine "
             "in one call (default 64). Smaller bursts spread the fixed costs (ring access, engine call, "
             "transmit wake-up) over fewer packets.")
    for stem, cap in stems:
        if stem == "dataplane_batch":
            rep.plot(stem, cap)
    rep.table("dataplane_batch")
    rep.table("dataplane_stream_raw")
    rep.table("dataplane_rr_raw")
    rep.table("dataplane_twoway_raw")
    rep.table("dataplane_batch_raw")


# ---- check
def _close(a, b):
    if isinstance(a, str) or isinstance(b, str):
        return str(a) == str(b)
    a, b = float(a or 0), float(b or 0)
    return abs(a - b) <= 2e-5 * max(abs(a), abs(b)) + 1e-9


def _compare(name, got, want, key_cols):
    errs = []
    gi = {tuple(r[:key_cols]): r for r in want}
    if len(got) != len(want):
        errs.append("%s: %d rows, recomputed from the raw table %d" % (name, len(got), len(want)))
    for r in got:
        w = gi.get(tuple(r[:key_cols]))
        if w is None:
            errs.append("%s: row %s has no raw repetitions" % (name, r[:key_cols]))
            continue
        for i, (a, b) in enumerate(zip(r, w)):
            if not _close(a, b):
                errs.append("%s: %s: column %d is %s, recomputed %s" % (name, r[:key_cols], i, a, b))
    return errs


def check(run_dir):
    from sizing_lib import framework
    meta, tables = framework.load_run(run_dir)
    errs = []
    need = ["dataplane_stream_raw", "dataplane_stream", "dataplane_rr_raw", "dataplane_rr", "dataplane_twoway_raw",
            "dataplane_twoway", "dataplane_batch_raw", "dataplane_batch"]
    for n in need:
        if n not in tables:
            errs.append("table %s missing" % n)
    if errs:
        return errs
    if tables["dataplane_stream_raw"]["columns"] != STREAM_RAW or tables["dataplane_stream"]["columns"] != STREAM:
        errs.append("dataplane_stream(_raw) columns differ from the contract's")
        return errs
    # recomputed from the CSV (what a reader of the run has), rounded as the tables are
    def raw_rows(n):
        cols, rows = framework.read_csv(os.path.join(run_dir, n + ".csv"))
        out = []
        for r in rows:
            d = {}
            for c, v in zip(cols, r):
                try:
                    d[c] = int(v)
                except ValueError:
                    try:
                        d[c] = float(v)
                    except ValueError:
                        d[c] = v
            out.append(d)
        return out
    ncpus = meta.get("ncpus") or 1
    rnd = framework._round
    for name, raw, fn, k in (("dataplane_stream", "dataplane_stream_raw", lambda r: derive_stream(r, ncpus), 4),
                             ("dataplane_rr", "dataplane_rr_raw", derive_rr, 4),
                             ("dataplane_twoway", "dataplane_twoway_raw", derive_tw, 3),
                             ("dataplane_batch", "dataplane_batch_raw", derive_batch, 4)):
        want = [[rnd(v) for v in r] for r in fn(raw_rows(raw))]
        errs += _compare(name, tables[name]["rows"], want, k)
    st = _dicts(tables["dataplane_stream"])
    present = {r["transform"] for r in st}
    plan_x = meta.get("dataplane_plan", {}).get("transforms", [])
    for x in plan_x:
        if x not in present and x not in meta.get("refused_transforms", {}):
            errs.append("transform %s neither measured nor reported as refused" % x)
    for x in present:
        if x not in netns.TRANSFORM_IDS:
            errs.append("unknown transform id %s" % x)
        if x != "bypass" and x not in meta.get("crypto_backend", {}):
            errs.append("no crypto backend recorded for %s" % x)
    for r in st:
        # (a UDP flood of datagrams that fragment can lose nearly all of them: a measured result)
        if r["test"] == "tcp_stream" and r["mbps"] <= 0:
            errs.append("dataplane_stream: %s %s %s B: no throughput" % (r["transform"], r["test"], r["send_size"]))
        if not (r["mbps_min"] <= r["mbps"] <= r["mbps_max"]):
            errs.append("dataplane_stream: %s: median outside min/max" % r["transform"])
    return errs
