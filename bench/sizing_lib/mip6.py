# bench/sizing_lib/mip6.py: the sizing study's Mobile IPv6 section, the two measurements of the HP
# paper's Mobile IPv6 chapter taken with bench/mip6-bench's parts: Binding Update/Acknowledgement
# exchanges per second (in memory through ESP for 1 and 10,000 mobile nodes, bench/mip6-bench-mem;
# in a full run also end to end against xipsecd's home agent, bench/mip6-bu-gen), and packets per
# second forwarded correspondent -> home agent -> mobile node through the home agent's ESP tunnel,
# next to a site-to-site ESP tunnel and bypass in the same run.
import os
import shutil
import subprocess

from sizing_lib import dataplane, netns, plotting

NAME = "mip6"
TITLE = "Mobile IPv6 home agent"

MEM = ["transform", "mobile_nodes", "exch_s", "ha_exch_s", "ha_esp_ns", "ha_mip6_ns", "mn_ns"]
FWD_RAW = ["path", "size", "rep", "pps", "mbps", "offered_ratio"]
FWD = ["path", "size", "n", "pps", "pps_min", "pps_max", "vs_bypass", "vs_site_to_site"]
E2E = ["mobile_nodes", "window", "phase", "answered", "lost", "seconds", "exch_s", "gen_cpu_pct"]
PATHS = ["bypass", "site-to-site", "home-agent"]
SIZES = [64, 1400]      # bench/mip6-bench's forwarding sizes (IP packet bytes)
MEM_ROWS = 4            # bench/mip6-bench-mem: 2 transforms x (1, 10,000 mobile nodes)


def plan(quick):
    if quick:
        return {"mem_args": ["-r", "3", "-n", "20000"], "reps": 1, "secs": 1, "warm": 1, "e2e": False}
    return {"mem_args": ["-r", "7"], "reps": 3, "secs": 3, "warm": 1, "e2e": True}


def points(ctx):
    return 3 if plan(ctx.quick)["e2e"] else 2


def seconds(ctx):
    p = plan(ctx.quick)
    fwd = 3 * 2 * p["reps"] * (p["secs"] + p["warm"] + 2.5) + 25
    return 10 + fwd + (150 if p["e2e"] else 0)


def _bench(ctx):
    return str(ctx.srcdir / "bench" / "mip6-bench")


def _inner(ctx, parts, p, timeout):
    """bench/mip6-bench's PARTS in its namespaces, with a state directory of this sub-run's own (the
    caller's XIPSEC_STATE_DIR may be gone or another section's); its output, or "" after ctx.fail()."""
    state = netns.private_state_dir("xipsec-sizing-mip6.")
    env = dict(os.environ, MIP6_INNER="1", MIP6_PARTS=parts, MIP6_REPS=str(p["reps"]), MIP6_SECS=str(p["secs"]),
               MIP6_WARM=str(p["warm"]), top_srcdir=str(ctx.srcdir), top_builddir=str(ctx.builddir),
               XIPSEC_STATE_DIR=os.path.join(state, "state"))
    try:
        r = subprocess.run(["bash", _bench(ctx), str(ctx.builddir)], env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        ctx.fail("bench/mip6-bench (%s) did not end within %d s" % (parts, timeout))
        return ""
    finally:
        shutil.rmtree(state, ignore_errors=True)
    if r.returncode != 0:
        ctx.fail("bench/mip6-bench (%s) exited %d: %s" % (parts, r.returncode, r.stderr.strip()[-400:]))
        return ""
    return r.stdout


def parse_mem(text):
    """bench/mip6-bench-mem's table: a 28-column transform name, then the numbers (its "#" lines, the
    home agent's memory, are the scale section's)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        f = line[28:].split()
        if len(f) < 6 or not f[0].isdigit():
            continue
        try:
            rows.append([line[:28].strip(), int(f[0])] + [float(x) for x in f[1:6]])
        except ValueError:
            continue
    return rows


def parse_fwd(text):
    reps, rows = {}, []
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) != 5 or f[0] not in PATHS:
            continue
        k = (f[0], int(f[1]))
        reps[k] = reps.get(k, 0) + 1
        rows.append([f[0], int(f[1]), reps[k], float(f[2]), float(f[3]), float(f[4])])
    return rows


def parse_e2e(text):
    rows = []
    for line in text.splitlines():
        f = line.split("\t")
        if len(f) >= 9 and f[0] == "e2e" and f[3] in ("register", "refresh"):
            try:
                rows.append([int(f[1]), int(f[2]), f[3], int(f[4]), int(f[5]), float(f[6]), float(f[7]),
                             float(f[8].rstrip("%"))])
            except ValueError:
                continue
    return rows


def derive_fwd(raw):
    groups = {}
    for r in raw:
        groups.setdefault((r["path"], r["size"]), []).append(r["pps"])
    med = {k: dataplane._med(v) for k, v in groups.items()}
    out = []
    for (path, size), v in sorted(groups.items(), key=lambda kv: (kv[0][1], PATHS.index(kv[0][0]))):
        b, s = med.get(("bypass", size)), med.get(("site-to-site", size))
        out.append([path, size, len(v), med[(path, size)], min(v), max(v),
                    med[(path, size)] / b if b else None,
                    med[(path, size)] / s if s and path == "home-agent" else None])
    return out


def run(ctx):
    p = plan(ctx.quick)
    ctx.meta["mip6_plan"] = p
    mem = os.path.join(str(ctx.builddir), "bench", "mip6-bench-mem")
    rows = []
    if os.access(mem, os.X_OK):
        try:
            r = subprocess.run([mem] + p["mem_args"], capture_output=True, text=True, timeout=600)
            rows = parse_mem(r.stdout) if r.returncode == 0 else []
            if r.returncode:
                ctx.fail("bench/mip6-bench-mem exited %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
        except subprocess.TimeoutExpired:
            ctx.fail("bench/mip6-bench-mem did not end within 600 s")
    else:
        ctx.fail("%s not built" % mem)
    ctx.table("mip6_bu_mem", MEM, rows, "Binding Update/Acknowledgement exchanges per second through ESP transport "
              "mode, in memory on one core: the whole loop (mobile node and home agent) and the home agent's share",
              expect=MEM_ROWS)
    ctx.tick("mip6: BU/BA exchanges in memory")
    raw = parse_fwd(_inner(ctx, "fwd", p, 900))
    t = ctx.table("mip6_fwd_raw", FWD_RAW, raw, "each forwarding point: IPv6 packets per second at the sink",
                  expect=len(PATHS) * len(SIZES) * p["reps"])
    ctx.table("mip6_fwd", FWD, derive_fwd(dataplane._dicts(t)), "IPv6 packets per second forwarded correspondent -> "
              "home agent -> mobile node (AES-GCM-16-128, one worker), median of the points, next to a site-to-site "
              "tunnel and bypass in the same run", expect=len(PATHS) * len(SIZES))
    ctx.tick("mip6: forwarding through the home agent's tunnel")
    if p["e2e"]:
        ctx.table("mip6_bu_e2e", E2E, parse_e2e(_inner(ctx, "e2e", p, 1200)),
                  "Binding Update/Acknowledgement exchanges end to end against "
                  "xipsecd's home agent (registration: new bindings, tunnel SAs migrated; refresh: the same care-of "
                  "address again)")
        ctx.tick("mip6: BU/BA exchanges end to end")


def _plot(ctx):
    plt = plotting.pyplot()
    fw = dataplane._dicts(ctx.tables["mip6_fwd"]) if "mip6_fwd" in ctx.tables else []
    if not fw:
        return None
    sizes = sorted({r["size"] for r in fw})
    fig, ax = plt.subplots(figsize=(8, 5))
    wd = 0.8 / len(PATHS)
    for k, path in enumerate(PATHS):
        pts = [next((r for r in fw if r["path"] == path and r["size"] == s), None) for s in sizes]
        plotting.bars(ax, [i + k * wd for i in range(len(sizes))], [r["pps"] if r else None for r in pts], wd,
                      [(r["pps_min"], r["pps_max"]) if r else None for r in pts], label=path)
    ax.set_xticks([i + wd for i in range(len(sizes))])
    ax.set_xticklabels(["%d B" % s for s in sizes])
    ax.set_ylabel("packets per second at the mobile node's side (median, bars min-max)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Forwarding correspondent -> home agent -> mobile node")
    fig.tight_layout()
    ctx.savefig(fig, "mip6_fwd")
    return "mip6_fwd"


def figures(tables):
    """The section's headline figures as sentences, from the run's tables (never written by hand: a
    figure in the text is the one in the table below it)."""
    out = []
    mem = dataplane._dicts(tables.get("mip6_bu_mem", {"columns": [], "rows": []}))
    for r in mem:
        out.append("%s, %s mobile node(s), in memory: %s exchanges/s (the home agent's share alone: %s/s)" % (
            r["transform"], "{:,}".format(int(r["mobile_nodes"])), "{:,.0f}".format(r["exch_s"]),
            "{:,.0f}".format(r["ha_exch_s"])))
    for r in dataplane._dicts(tables.get("mip6_bu_e2e", {"columns": [], "rows": []})):
        out.append("end to end, %s mobile node(s), window %d, %s: %s Binding Updates answered per second "
                   "(%d lost)" % ("{:,}".format(int(r["mobile_nodes"])), int(r["window"]),
                                  "registrations" if r["phase"] == "register" else "refreshes",
                                  "{:,.0f}".format(r["exch_s"]), int(r["lost"])))
    for r in dataplane._dicts(tables.get("mip6_fwd", {"columns": [], "rows": []})):
        if r["path"] == "home-agent" and r["vs_site_to_site"] is not None:
            out.append("forwarding through the home agent's tunnel, %d-byte packets: %s packets/s, %.2f of a "
                       "site-to-site tunnel's rate" % (r["size"], "{:,.0f}".format(r["pps"]), r["vs_site_to_site"]))
    return out


def report(ctx, rep):
    rep.para("The home agent's two measurements, as the HP-UX paper's Mobile IPv6 section takes them. Binding "
             "Update/Acknowledgement exchanges: in memory (libmip6's rules and binding cache with libesp, one "
             "core; 10,000 mobile nodes take turns in a shuffled order, so their SAs and bindings are not in "
             "cache)%s. Forwarding: IPv6 UDP packets from a correspondent on the home link to the home address, "
             "through xipsecd as home agent into the mobile node's ESP tunnel, next to a plain site-to-site ESP "
             "tunnel of the same transform and to bypass, in the same run; `vs_site_to_site` is the home agent's "
             "rate over the site-to-site tunnel's." % (
                 "; end to end, bench/mip6-bu-gen plays the mobile nodes against xipsecd through namespaces"
                 if "mip6_bu_e2e" in ctx.tables else ""))
    figs = figures(ctx.tables)
    if figs:
        rep.para("In this run:\n" + "\n".join("- " + f for f in figs))
    rep.table("mip6_bu_mem")
    if "mip6_bu_e2e" in ctx.tables:
        rep.table("mip6_bu_e2e")
    if _plot(ctx):
        rep.plot("mip6_fwd", "packets per second through the home agent's tunnel, a site-to-site tunnel and bypass")
    rep.table("mip6_fwd")
    rep.table("mip6_fwd_raw")


def check(run_dir):
    from sizing_lib import framework
    meta, tables = framework.load_run(run_dir)
    errs = [("table %s missing" % n) for n in ("mip6_bu_mem", "mip6_fwd_raw", "mip6_fwd") if n not in tables]
    if errs:
        return errs
    raw = dataplane._dicts(tables["mip6_fwd_raw"])
    want = [[framework._round(v) for v in r] for r in derive_fwd(raw)]
    have = [list(r) for r in tables["mip6_fwd"]["rows"]]
    if len(want) != len(have):
        errs.append("mip6_fwd: %d rows, the raw points give %d" % (len(have), len(want)))
    for w, h in zip(want, have):
        for c, a, b in zip(FWD, w, h):
            if not ((a is None and b is None) or (a is not None and b is not None and dataplane._close(a, b))):
                errs.append("mip6_fwd %s %s: %s is %s, the raw points give %s" % (h[0], h[1], c, b, a))
    for r in dataplane._dicts(tables["mip6_bu_mem"]):
        if r["exch_s"] <= 0 or r["ha_exch_s"] < r["exch_s"]:
            errs.append("mip6_bu_mem %s %s: the home agent's share (%s/s) is below the whole loop's (%s/s)" % (
                r["transform"], r["mobile_nodes"], r["ha_exch_s"], r["exch_s"]))
    # a phase the home agent answered nothing of is a sub-run that failed, not a rate of 0
    for r in dataplane._dicts(tables.get("mip6_bu_e2e", {"columns": [], "rows": []})):
        if not r["answered"]:
            errs.append("mip6_bu_e2e %s mobile node(s), window %s, %s: no Binding Update answered (%s lost)" % (
                r["mobile_nodes"], r["window"], r["phase"], r["lost"]))
    return errs
