# bench/sizing_lib/scale.py: the sizing study's cost of many tunnels before any packet: for N tunnels
# (N site-to-site SA pairs, each with its two policies, written by `ipsecctl load` from one
# configuration file; and N policies alone), the time the SADB load takes, the SADB's resident
# memory, xipsecd's start time (until its status reports all 2N SAs) and its resident memory. Memory
# per tunnel, per policy and per SA come from the differences against the smallest N, so what every
# SADB and every xipsecd costs anyway is not charged to the tunnels. The tunnels are AES-CBC-128 +
# HMAC-SHA-256 (a counter-mode cipher would need a sequence mark each, a cost of its own) to
# 10.128.0.0/9 /32s, one each; they carry no traffic here. Every SADB is made with the capacity the
# largest N needs (ipsecctl init max-sa, max-policy).
import os
import subprocess
import tempfile
import time

from sizing_lib import dataplane, netns, plotting

NAME = "scale"
TITLE = "Many tunnels: SADB load, memory, start time"

COLS = ["what", "n", "load_s", "sadb_kb", "xipsecd_start_s", "xipsecd_rss_kb"]
PER = ["what", "per", "sadb_bytes", "xipsecd_bytes"]


def plan(quick):
    return {"n": [1, 1000]} if quick else {"n": [1, 100, 10000, 100000]}


def points(ctx):
    return 2 * len(plan(ctx.quick)["n"])


def seconds(ctx):
    return sum(4 + n / 2000.0 for n in plan(ctx.quick)["n"]) * 2 + 8


def _dst(i):
    return "10.%d.%d.%d/32" % (128 + (i >> 16), (i >> 8) & 255, i & 255)


def write_conf(path, n, tunnels):
    """N tunnels (SA pairs with their policies) or N bypass policies."""
    with open(path, "w") as f:
        for i in range(n):
            if tunnels:
                k = [os.urandom(m).hex() for m in (16, 16, 32, 32)]
                f.write("esp tunnel from 10.1.0.0/24 to %s local 192.0.2.1 peer 192.0.2.2 spi 0x%x:0x%x "
                        "enc aes128 auth sha256 key 0x%s:0x%s authkey 0x%s:0x%s\n" % (
                            _dst(i), 0x100000 + 2 * i, 0x100001 + 2 * i, k[0], k[1], k[2], k[3]))
            else:
                f.write("policy out from 10.1.0.0/24 to %s bypass\n" % _dst(i))


def resident_kb(path):
    """Kilobytes of the file that are allocated (a shared-memory SADB is sparse until written)."""
    return os.stat(path).st_blocks * 512 / 1024.0


def rss_kb(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return float(line.split()[1])
    return float("nan")


def run(ctx):
    p = plan(ctx.quick)
    ctx.meta["scale_plan"] = p
    ipsecctl = os.path.join(str(ctx.builddir), "ipsecctl", "ipsecctl")
    tmp = tempfile.mkdtemp(prefix="sizing-scale-", dir="/tmp")
    rows = []
    t = None
    cap = max(65536, 2 * max(p["n"]))
    try:
        t = netns.Topo(ctx.builddir, tmp, queues=1, tag="sc")
        t.build()
        for what in ("tunnels", "policies"):
            for n in p["n"]:
                conf = os.path.join(tmp, "scale.conf")
                write_conf(conf, n, what == "tunnels")
                sadb = t.sadb["gw1"]
                t.stop("xipsecd-gw1")
                try:
                    os.unlink(sadb)
                except FileNotFoundError:
                    pass
                # one capacity for every N (the largest needs it), so that the differences between
                # N are the tunnels' and not a larger table's
                r = subprocess.run([ipsecctl, "--sadb", sadb, "init", "max-sa", str(cap), "max-policy", str(cap)],
                                   capture_output=True, text=True, timeout=120, env=t.env)
                if r.returncode:
                    raise netns.NetnsError("ipsecctl init max-sa %d: %s" % (cap, r.stderr[-300:]))
                t0 = time.monotonic()
                r = subprocess.run([ipsecctl, "--sadb", sadb, "load", conf], capture_output=True, text=True,
                                   timeout=1800, env=t.env)
                load_s = time.monotonic() - t0
                os.unlink(conf)
                if r.returncode:
                    ctx.fail("ipsecctl load of %d %s exited %d: %s" % (n, what, r.returncode, r.stderr[-300:]))
                    ctx.tick("scale: %d %s: failed" % (n, what))
                    continue
                want = 2 * n if what == "tunnels" else 0
                t0 = time.monotonic()
                t.start_gw("gw1", wait=600)
                ok = t.wait_for(600, lambda: (t.status("gw1") or {}).get("sas", -1) == want)
                start_s = time.monotonic() - t0
                if not ok:
                    ctx.fail("xipsecd did not report %d SAs with %d %s" % (want, n, what))
                    ctx.tick("scale: %d %s: failed" % (n, what))
                    continue
                rows.append([what, n, load_s, resident_kb(sadb), start_s, rss_kb(t.gw_pid("gw1"))])
                ctx.tick("scale: %d %s: load %.2f s, xipsecd up in %.2f s" % (n, what, load_s, start_s))
    finally:
        if t:
            t.close()
        try:
            os.rmdir(tmp)
        except OSError:
            pass
    t = ctx.table("scale", COLS, rows, "N tunnels (an SA pair and its two policies each) or N policies loaded by "
                  "ipsecctl into a new SADB: load time, the SADB's allocated kilobytes, xipsecd's start time until its "
                  "status shows every SA, and its resident memory", expect=2 * len(p["n"]))
    ctx.table("scale_memory", PER, per_item(dataplane._dicts(t)), "bytes per tunnel and per policy: the "
              "difference between the largest and the smallest N over their difference; per SA: a tunnel's less "
              "its two policies, halved", expect=3)


def per_item(rows):
    out = {}
    for what in ("tunnels", "policies"):
        r = sorted((x for x in rows if x["what"] == what), key=lambda x: x["n"])
        if len(r) >= 2 and r[-1]["n"] > r[0]["n"]:
            dn = r[-1]["n"] - r[0]["n"]
            out[what] = ((r[-1]["sadb_kb"] - r[0]["sadb_kb"]) * 1024 / dn,
                         (r[-1]["xipsecd_rss_kb"] - r[0]["xipsecd_rss_kb"]) * 1024 / dn)
    res = []
    if "tunnels" in out:
        res.append(["tunnel (2 SAs, 2 policies)", "tunnel", out["tunnels"][0], out["tunnels"][1]])
    if "policies" in out:
        res.append(["policy", "policy", out["policies"][0], out["policies"][1]])
    if "tunnels" in out and "policies" in out:
        res.append(["SA", "SA", (out["tunnels"][0] - 2 * out["policies"][0]) / 2,
                    (out["tunnels"][1] - 2 * out["policies"][1]) / 2])
    return res


def report(ctx, rep):
    rows = dataplane._dicts(ctx.tables.get("scale", {"columns": [], "rows": []}))
    per = dataplane._dicts(ctx.tables.get("scale_memory", {"columns": [], "rows": []}))
    rep.para("The cost of many tunnels before any packet: N site-to-site tunnels (AES-CBC-128 + HMAC-SHA-256, an SA "
             "pair and its two policies each) or N policies written by `ipsecctl load` into a new SADB, then xipsecd "
             "started on it. Forwarding with traffic spread over many SAs is not measured by this section.")
    big = max((r for r in rows if r["what"] == "tunnels"), key=lambda r: r["n"], default=None)
    figs = []
    if big:
        figs.append("%s tunnels: SADB load %.2f s, xipsecd up with every SA in %.2f s, %.0f MB resident" % (
            "{:,}".format(big["n"]), big["load_s"], big["xipsecd_start_s"], big["xipsecd_rss_kb"] / 1024))
    figs += ["per %s: %.0f bytes of SADB, %.0f bytes of xipsecd" % (r["per"], r["sadb_bytes"], r["xipsecd_bytes"])
             for r in per]
    if figs:
        rep.para("In this run:\n" + "\n".join("- " + f for f in figs))
    if rows:
        plt = plotting.pyplot()
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        for what in ("tunnels", "policies"):
            s = sorted((r for r in rows if r["what"] == what), key=lambda r: r["n"])
            plotting.line(axes[0], [r["n"] for r in s], [r["load_s"] for r in s], label="%s: SADB load" % what)
            plotting.line(axes[0], [r["n"] for r in s], [r["xipsecd_start_s"] for r in s],
                          label="%s: xipsecd start" % what, linestyle="--")
            plotting.line(axes[1], [r["n"] for r in s], [r["xipsecd_rss_kb"] / 1024 for r in s],
                          label="%s: xipsecd resident" % what)
            plotting.line(axes[1], [r["n"] for r in s], [r["sadb_kb"] / 1024 for r in s],
                          label="%s: SADB allocated" % what, linestyle="--")
        for ax, lab in zip(axes, ("seconds", "MB")):
            ax.set_xscale("log")
            ax.set_xlabel("N")
            ax.set_ylabel(lab)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
            plotting.from_zero(ax)
        fig.suptitle("N tunnels or policies: load and start time, memory (one measurement each)", fontsize=10)
        fig.tight_layout()
        ctx.savefig(fig, "scale")
        rep.plot("scale", "SADB load time, xipsecd start time and memory against the number of tunnels or policies")
    rep.table("scale_memory")
    rep.table("scale")


def check(run_dir):
    from sizing_lib import framework
    meta, tables = framework.load_run(run_dir)
    if "scale" not in tables or "scale_memory" not in tables:
        return ["table scale or scale_memory missing"]
    want = [[framework._round(v) for v in r] for r in per_item(dataplane._dicts(tables["scale"]))]
    return dataplane._compare("scale_memory", tables["scale_memory"]["rows"], want, 2)
