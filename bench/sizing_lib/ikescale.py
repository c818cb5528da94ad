# bench/sizing_lib/ikescale.py: the sizing study's IKE at scale, between xipsec-iked (A) and stock
# strongSwan charon (B) in network namespaces (bench/sizing_lib/ikescale_peers.sh), timed over VICI
# by bench/ike-bench-vici:
#  - N IKE SAs brought up from scratch (B initiating, IKEv2, PSK, the first group; a few VICI
#    connections in parallel), none deleted: IKE SAs per second over the run and the time each
#    further bin of them took as N grows, with both daemons' CPU and resident memory per IKE SA;
#  - CHILD SAs per second created on existing IKE SAs (A initiating, several IKE SAs in parallel,
#    CHILD SAs back to back on each) in rounds, each on top of every CHILD SA the rounds before
#    installed, up to the plan's total (the SADB made with room for them). 10,000 in a full run, not
#    100,000: the peer is what stops it. These kernels have no XFRM, so stock charon keeps its SAs in
#    kernel-libipsec, whose policies are a list walked for every one added: 5,000 CHILD SAs on top of
#    5,000 took 91 s against 17 s on top of none, 11 ms of charon's CPU per CHILD SA against 2.4 ms of
#    xipsec-iked's (whose SADB had room for far more);
#  - the costs a planner sets against "session resumption" (IKEv2 has none in strongSwan): per DH
#    group, a new IKE SA with its first CHILD SA (its deletion included in the CPU), a CHILD SA on an
#    existing IKE SA, and an IKE SA rekey (timed until charon's ike-rekey event), side by side, the
#    repetitions interleaved over the groups; operations per second and CPU per operation.
import math
import statistics
import time

from sizing_lib import ike, plotting

NAME = "ikescale"
TITLE = "IKE at scale: IKE SAs and CHILD SAs by the thousand, new SA vs CHILD SA vs rekey"

GROUPS = ["curve25519", "ecp256"]
OPS = [("new_ike", "new IKE SA + first CHILD SA"), ("child", "CHILD SA on an existing IKE SA"),
       ("ike_rekey", "IKE SA rekey")]
OP_LABEL = dict(OPS)
# B's VICI connections initiating in parallel: charon's 16 threads, each blocked initiate holding
# one, leave too few for the exchanges themselves beyond about 6
UP_P = 4


def plan(quick):
    if quick:
        return {"ike_n": 200, "bin": 50, "rate_conns": 4, "rate_k": 10, "round_conns": 2, "ops_n": 5, "reps": 3}
    return {"ike_n": 10000, "bin": 1000, "rate_conns": 10, "rate_k": 1000, "round_conns": 2, "ops_n": 20,
            "reps": 5}


def rounds(p):
    return [(first, min(first + p["round_conns"] - 1, p["rate_conns"]))
            for first in range(1, p["rate_conns"] + 1, p["round_conns"])]


def points(ctx):
    p = plan(ctx.quick)
    return 1 + len(rounds(p)) + p["reps"]


def seconds(ctx):
    """Estimated from runs on the 2-core development VM: the gateways' start (about 2 s, plus the
    connections' load, about 1 s per 10,000 CHILD SA configurations), IKE SAs at about 400/s, a
    CHILD SA about 3.4 ms plus 3.3 µs per CHILD SA installed before (the peer's list), and a
    repetition of the operations about 15 ms per operation."""
    p = plan(ctx.quick)
    nchild = p["rate_conns"] * p["rate_k"]
    per_round = p["round_conns"] * p["rate_k"]
    child = sum(per_round * (3.4e-3 + 3.3e-6 * k * per_round) for k in range(len(rounds(p))))
    return 3 + nchild / 10000.0 + p["ike_n"] / 400.0 + child + p["reps"] * len(GROUPS) * 3 * p["ops_n"] * 0.015


def run(ctx):
    p = plan(ctx.quick)
    cap = max(65536, 4 * p["rate_conns"] * (p["rate_k"] + 1) + 1024)
    s = ike.Session(ctx, "ikescale_peers.sh", [",".join(GROUPS), p["rate_conns"], p["rate_k"], p["ops_n"], cap],
                    "ikescale-peers.log", start_timeout=300 + p["rate_conns"] * p["rate_k"] / 200)
    uri_a, uri_b, sadb, _pa, _pb, mhz = s.ready
    ops_raw, child_raw, up = [], [], None
    try:
        for rep in range(p["reps"]):
            for g in GROUPS:
                _ops(s, g, rep, p["ops_n"], ops_raw)
            ctx.tick("ikescale: operations, repetition %d" % (rep + 1))
        installed = 0
        for first, last in rounds(p):
            # the SADB holds what the rounds before left and nothing of the operations' deleted SAs: a
            # deletion still under way would be counted against the round
            _settle(s, 2 * installed)
            a0, b0 = s.cpu()
            rc, vals, out = s.vici("rate %d-%d %d %s" % (first, last, p["rate_k"], sadb), timeout=1800)
            a1, b1 = s.cpu()
            span = [o.split() for o in out if o.startswith("rate ")]
            if rc or not span:
                raise RuntimeError("CHILD SAs on r%d..r%d: %s" % (first, last, " ".join(out)[-300:]))
            n, us = int(span[0][1]), int(span[0][2])
            # each IKE SA's first CHILD SA came with it, before the timed span
            installed += last - first + 1
            child_raw.append([first, last, installed, n, us, a1 - a0, b1 - b0])
            installed += n
            ctx.tick("ikescale: %d CHILD SAs in %.2f s over %d installed" % (n, us / 1e6, installed - n))
        _, rss0 = s.cmd("rss")
        a0, b0 = s.cpu()
        rc, vals, out = s.vici("up %d %d s" % (UP_P, p["ike_n"]), timeout=1800, verb="vicib")
        a1, b1 = s.cpu()
        _, rss1 = s.cmd("rss")
        ups = [us for k, us in vals if k == "up"]
        if rc or len(ups) != p["ike_n"]:
            raise RuntimeError("%d IKE SAs from scratch: %d came up: %s" % (p["ike_n"], len(ups), " ".join(
                o for o in out if not o.startswith("up "))[-300:]))
        ra, rb = (int(x) for x in rss0[0].split()[1:])
        ra1, rb1 = (int(x) for x in rss1[0].split()[1:])
        up = [p["ike_n"], UP_P, max(ups), a1 - a0, b1 - b0, ra1 - ra, rb1 - rb]
        ctx.tick("ikescale: %d IKE SAs in %.2f s" % (p["ike_n"], max(ups) / 1e6))
    except RuntimeError:
        rc, out = s.cmd("logs")
        ctx.log("ikescale: the daemons' last complaints:\n  " + "\n  ".join(out))
        raise
    finally:
        s.close()
    ctx.meta["ikescale"] = {"plan": p, "mhz": float(mhz), "up_parallel": UP_P}
    _tables(ctx, p, ops_raw, child_raw, ups if up else [], up)
    _plots(ctx)


def _settle(s, want, secs=60):
    end = time.monotonic() + secs
    while True:
        _, out = s.cmd("nsa")
        n = int(out[0]) if out and out[0].isdigit() else -1
        if n == want:
            return
        if time.monotonic() > end:
            raise RuntimeError("xipsec-iked's SADB holds %d SAs, %d expected" % (n, want))
        time.sleep(0.1)


def _ops(s, g, rep, n, raw):
    conn = "x-%s" % g

    def timed(args, op, kind):
        a0, b0 = s.cpu()
        rc, vals, out = s.vici(args)
        a1, b1 = s.cpu()
        v = [us for k, us in vals if k == kind]
        if rc or len(v) != n:
            raise RuntimeError("%s, %s: %s" % (g, OP_LABEL[op], " ".join(out)[-300:]))
        raw.extend([g, op, rep, i, us, (a1 - a0) / n, (b1 - b0) / n] for i, us in enumerate(v))
    timed("ike %s %d c1" % (conn, n), "new_ike", "ike")
    rc, _, out = s.vici("child %s c1" % conn)
    if rc:
        raise RuntimeError("%s: the IKE SA for the CHILD SAs: %s" % (g, " ".join(out)[-300:]))
    timed("child %s %s" % (conn, " ".join("c%d" % i for i in range(2, n + 2))), "child", "child")
    timed("rekey %s %d" % (conn, n), "ike_rekey", "rekey")
    s.vici("terminate %s" % conn)


OPS_RAW = ["group", "op", "rep", "seq", "us", "cpu_ns_a", "cpu_ns_b"]
OPS_COLS = ["group", "op", "n", "per_s", "per_s_min", "per_s_max", "ms_median", "ms_p10", "ms_p90",
            "cpu_ms_a", "cpu_ms_b"]
CHILD_RAW = ["first_ike", "last_ike", "installed_before", "child_sas", "us", "cpu_ns_a", "cpu_ns_b"]
CHILD_COLS = ["installed_before", "ike_sas", "child_sas", "secs", "per_s", "cpu_ms_a_per_child", "cpu_ms_b_per_child"]
UP_COLS = ["ike_sas", "parallel", "secs", "per_s", "cpu_ms_a_per_ike", "cpu_ms_b_per_ike", "rss_kb_a_per_1000",
           "rss_kb_b_per_1000"]
CURVE_COLS = ["ike_sas", "secs", "secs_for_bin", "bin_per_s"]


def summarize(ops_raw, child_raw, up_row, ups, binsize):
    """The summary tables from the raw rows (run() and check() share this)."""
    ops = []
    for g in GROUPS:
        for op, _ in OPS:
            rs = [r for r in ops_raw if r[0] == g and r[1] == op]
            if not rs:
                continue
            ms = [float(r[4]) / 1000 for r in rs]
            # operations per second of each repetition (its operations one after the other)
            per_rep = [sum(1 for r in rs if int(r[2]) == k) / (sum(float(r[4]) for r in rs if int(r[2]) == k) / 1e6)
                       for k in sorted({int(r[2]) for r in rs})]
            ops.append([g, op, len(rs), statistics.median(per_rep), min(per_rep), max(per_rep), statistics.median(ms),
                        ike.quantile(ms, .1), ike.quantile(ms, .9),
                        sum(float(r[5]) for r in rs) / len(rs) / 1e6, sum(float(r[6]) for r in rs) / len(rs) / 1e6])
    child = [[int(r[2]), int(r[1]) - int(r[0]) + 1, int(r[3]), float(r[4]) / 1e6, int(r[3]) / (float(r[4]) / 1e6),
              float(r[5]) / int(r[3]) / 1e6, float(r[6]) / int(r[3]) / 1e6] for r in child_raw]
    up, curve = [], []
    if up_row:
        n, par, us, ca, cb, ra, rb = up_row
        up = [[int(n), int(par), float(us) / 1e6, int(n) / (float(us) / 1e6), float(ca) / int(n) / 1e6,
               float(cb) / int(n) / 1e6, float(ra) / int(n) * 1000, float(rb) / int(n) * 1000]]
        t = sorted(float(x) for x in ups)
        last = 0
        for k in list(range(binsize, len(t), binsize)) + [len(t)]:
            dt = (t[k - 1] - (t[last - 1] if last else 0.0)) / 1e6
            curve.append([k, t[k - 1] / 1e6, dt, (k - last) / dt if dt > 0 else None])
            last = k
    return ops, child, up, curve


def _tables(ctx, p, ops_raw, child_raw, ups, up_row):
    ctx.table("ikescale_ops_raw", OPS_RAW, ops_raw, "One row per operation: time from the VICI request to charon's "
              "reply (to its ike-rekey event for a rekey); CPU ns of A (xipsec-iked) and B (stock charon) over "
              "the series, shared equally among its operations (a new IKE SA's includes its deletion).",
              expect=len(GROUPS) * len(OPS) * p["reps"] * p["ops_n"])
    ctx.table("ikescale_up_raw", ["seq", "us"], [[i + 1, u] for i, u in enumerate(sorted(ups))],
              "The time since the start at which each IKE SA of the bring-up was established, in order.",
              expect=p["ike_n"])
    ctx.table("ikescale_child_raw", CHILD_RAW, child_raw, "One row per round of CHILD SAs: the IKE SAs r<first>.."
              "r<last> (each brought up with its first CHILD SA before the span), the CHILD SAs installed "
              "before, the span until A's SADB held them all, and both daemons' CPU.", expect=len(rounds(p)))
    ops, child, up, curve = summarize(ops_raw, child_raw, up_row, ups, p["bin"])
    mhz = ctx.meta["ikescale"]["mhz"]
    ctx.table("ikescale_ops", OPS_COLS, ops, "Per DH group: a new IKE SA with its first CHILD SA, a CHILD SA on "
              "an existing IKE SA and an IKE SA rekey, one after the other (xipsec-iked initiating, stock charon "
              "responding): operations per second (median and min-max of the %d repetitions), time per operation "
              "(median, p10/p90) and CPU ms per operation of each daemon (x %.0f MHz for cycles)." % (p["reps"], mhz),
              expect=len(GROUPS) * len(OPS))
    ctx.table("ikescale_child", CHILD_COLS, child, "CHILD SAs created on existing IKE SAs, %d IKE SAs in parallel "
              "with CHILD SAs back to back on each, round after round on top of the ones installed before: CHILD "
              "SAs per second (until A's SADB holds both SAs of each) and CPU ms per CHILD SA." % p["round_conns"],
              expect=len(rounds(p)))
    ctx.table("ikescale_up", UP_COLS, up, "N IKE SAs (IKEv2, PSK, %s) brought up from scratch, stock charon "
              "initiating over %d VICI connections in parallel, xipsec-iked responding, none deleted: IKE SAs per "
              "second over the run, CPU ms per IKE SA and resident memory per 1,000 IKE SAs of each daemon." % (
                  ike.GROUP_NAMES[GROUPS[0]], UP_P), expect=1)
    ctx.table("ikescale_up_curve", CURVE_COLS, curve, "The bring-up as N grows: the time at which the N-th IKE SA "
              "was up and the time the last %d took (the bin), as IKE SAs per second." % p["bin"],
              expect=math.ceil(p["ike_n"] / p["bin"]))


def _rows(ctx, name):
    t = ctx.tables.get(name)
    return [dict(zip(t["columns"], r)) for r in t["rows"]] if t else []


def _plots(ctx):
    plt = plotting.pyplot()
    ops = _rows(ctx, "ikescale_ops")
    fig, (ax, axc) = plt.subplots(1, 2, figsize=(12, 5))
    width = 0.8 / len(GROUPS)
    for k, g in enumerate(GROUPS):
        xs = [x + (k - len(GROUPS) / 2 + .5) * width for x in range(len(OPS))]
        r = [next((o for o in ops if o["group"] == g and o["op"] == op), None) for op, _ in OPS]
        plotting.bars(ax, xs, [o["per_s"] if o else None for o in r], width,
                      [(o["per_s_min"], o["per_s_max"]) if o else None for o in r], label=ike.GROUP_NAMES[g])
        plotting.bars(axc, xs, [o["cpu_ms_a"] if o else None for o in r], width, None,
                      label="%s, xipsec-iked" % ike.GROUP_NAMES[g], fmt="%.2f")
    for a in (ax, axc):
        a.set_xticks(range(len(OPS)))
        a.set_xticklabels([lab.replace(" + ", "\n+ ").replace(" on ", "\non ") for _, lab in OPS], fontsize=8)
        a.legend(fontsize=8)
        a.grid(alpha=0.3, axis="y")
    ax.set_ylabel("operations per second (median, bars min-max of the repetitions)")
    axc.set_ylabel("xipsec-iked CPU ms per operation")
    ax.set_title("New IKE SA vs CHILD SA vs IKE rekey, one after the other", fontsize=10)
    axc.set_title("CPU per operation (initiator)", fontsize=10)
    plotting.from_zero(ax, axc)
    ctx.savefig(fig, "ikescale_ops")

    curve = _rows(ctx, "ikescale_up_curve")
    child = _rows(ctx, "ikescale_child")
    fig, (ax, axc) = plt.subplots(1, 2, figsize=(12, 5))
    if curve:
        xs = [r["ike_sas"] for r in curve]
        plotting.line(ax, xs, [r["secs_for_bin"] for r in curve], label="seconds for the last bin of IKE SAs")
        for r in curve:
            if plotting.ok(r["secs_for_bin"]):
                ax.annotate("%.2f s" % r["secs_for_bin"], (r["ike_sas"], r["secs_for_bin"]), fontsize=7,
                            textcoords="offset points", xytext=(0, 5), ha="center")
    ax.set_xlabel("IKE SAs up (N)")
    ax.set_ylabel("seconds per bin of %s IKE SAs" % (
        "{:,}".format(int(curve[0]["ike_sas"])) if curve else "?"))
    ax.set_title("IKE SAs from scratch: time per bin as N grows", fontsize=10)
    if child:
        xs = [r["installed_before"] for r in child]
        plotting.line(axc, xs, [r["per_s"] for r in child], label="CHILD SAs per second")
        for r in child:
            axc.annotate("%.0f/s" % r["per_s"], (r["installed_before"], r["per_s"]), fontsize=7,
                         textcoords="offset points", xytext=(0, 5), ha="center")
    axc.set_xlabel("CHILD SAs installed before the round")
    axc.set_ylabel("CHILD SAs per second")
    axc.set_title("CHILD SAs on existing IKE SAs, round after round", fontsize=10)
    for a in (ax, axc):
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    plotting.from_zero(ax, axc)
    ctx.savefig(fig, "ikescale_scale")


def report(ctx, rep):
    p = ctx.meta.get("ikescale", {}).get("plan") or plan(ctx.quick)
    rep.para("xipsec-iked (A) against stock strongSwan charon (B, kernel-libipsec) in network namespaces; IKEv2, "
             "PSK, IKE proposal AES-128/SHA-256 with the group shown, ESP AES-GCM-128. Both daemons have an IKE SA "
             "table of 1,024 rows in 16 segments; A's per-address half-open limit and cookies are raised out of "
             "the way, since B's one address stands for thousands of peers.")
    rep.heading("IKE SAs from scratch", 3)
    rep.table("ikescale_up")
    up = _rows(ctx, "ikescale_up")
    curve = _rows(ctx, "ikescale_up_curve")
    if up:
        u = up[0]
        rep.para("%s IKE SAs up in %.1f s: %.0f IKE SAs per second; %.2f ms of xipsec-iked's CPU and %.2f ms of "
                 "charon's per IKE SA; %.0f KB of xipsec-iked's resident memory per 1,000 IKE SAs." % (
                     "{:,}".format(int(u["ike_sas"])), u["secs"], u["per_s"], u["cpu_ms_a_per_ike"],
                     u["cpu_ms_b_per_ike"], u["rss_kb_a_per_1000"]))
    if len(curve) >= 2:
        rep.para("The first bin of %s took %.2f s, the last %.2f s (%.0f and %.0f IKE SAs per second)." % (
            "{:,}".format(int(curve[0]["ike_sas"])), curve[0]["secs_for_bin"], curve[-1]["secs_for_bin"],
            curve[0]["bin_per_s"] or 0, curve[-1]["bin_per_s"] or 0))
    rep.table("ikescale_up_curve")
    rep.heading("CHILD SAs on existing IKE SAs, with many installed", 3)
    rep.table("ikescale_child")
    child = _rows(ctx, "ikescale_child")
    if child:
        last = child[-1]
        rep.para("The last round: %s CHILD SAs at %.0f per second on top of %s installed (the largest this run "
                 "reached: %s CHILD SAs, %s SAs in xipsec-iked's SADB). Compare the two daemons' CPU per CHILD SA: "
                 "stock charon keeps its SAs in kernel-libipsec (no XFRM in these kernels), whose policy list is "
                 "walked for every one added, and becomes the limit as they grow." % (
                     "{:,}".format(int(last["child_sas"])), last["per_s"], "{:,}".format(int(last["installed_before"])),
                     "{:,}".format(int(last["installed_before"] + last["child_sas"])),
                     "{:,}".format(int(2 * (last["installed_before"] + last["child_sas"])))))
    rep.plot("ikescale_scale", "Left: seconds per bin of IKE SAs as N grows. Right: CHILD SAs per second against "
             "the CHILD SAs installed before each round.")
    rep.heading("New IKE SA, CHILD SA, IKE rekey (the \"resumption\" row)", 3)
    rep.para("IKEv2 in strongSwan has no session resumption (RFC 5723): what a returning peer costs is a new IKE SA "
             "with its first CHILD SA; the cheaper paths are a CHILD SA on an IKE SA that is still up and an IKE SA "
             "rekey. %d operations of each, %d repetitions interleaved over the groups." % (p["ops_n"], p["reps"]))
    rep.table("ikescale_ops")
    ops = _rows(ctx, "ikescale_ops")
    lines = []
    for g in GROUPS:
        r = {o["op"]: o for o in ops if o["group"] == g}
        if len(r) == len(OPS):
            lines.append("- %s: %s" % (ike.GROUP_NAMES[g], "; ".join(
                "%s %.0f/s (%.2f ms CPU of xipsec-iked, %.2f ms of charon)" % (
                    OP_LABEL[op], r[op]["per_s"], r[op]["cpu_ms_a"], r[op]["cpu_ms_b"]) for op, _ in OPS)))
    if lines:
        rep.para("\n".join(lines))
    rep.plot("ikescale_ops", "Operations per second (median, bars min-max) and xipsec-iked's CPU per operation.")


def check(run_dir):
    import json
    import os

    def rows(name):
        return ike.csv_rows(run_dir, name)
    try:
        meta = json.load(open(os.path.join(run_dir, "results.json")))["meta"]["ikescale"]
        ops_raw = rows("ikescale_ops_raw")
        child_raw = rows("ikescale_child_raw")
        ups = [float(r[1]) for r in rows("ikescale_up_raw")]
        up = rows("ikescale_up")
        got = {n: rows(n) for n in ("ikescale_ops", "ikescale_child", "ikescale_up", "ikescale_up_curve")}
    except (OSError, KeyError, ValueError, IndexError) as e:
        return ["cannot read the section's tables: %s" % e]
    errs = []
    up_row = None
    if up:
        u = up[0]
        n = int(u[0])
        # the raw figures back from the summary's (the span is the last IKE SA's time)
        up_row = [n, int(u[1]), max(ups) if ups else 0, float(u[4]) * n * 1e6, float(u[5]) * n * 1e6,
                  float(u[6]) * n / 1000, float(u[7]) * n / 1000]
        if len(ups) != n:
            errs.append("ikescale_up: %d IKE SAs, ikescale_up_raw holds %d" % (n, len(ups)))
    want = dict(zip(("ikescale_ops", "ikescale_child", "ikescale_up", "ikescale_up_curve"),
                    summarize(ops_raw, child_raw, up_row, ups, int(meta["plan"]["bin"]))))
    return errs + ike.compare_summaries(want, got)
