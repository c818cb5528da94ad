# bench/sizing_lib/scale.py: the sizing study's cost of many tunnels before any packet: for N tunnels
# (N site-to-site SA pairs, each with its two policies, written by `ipsecctl load` from one
# configuration file; and N policies alone), the time the SADB load takes, the SADB's resident
# memory, xipsecd's start time (until its status reports all 2N SAs) and its resident memory. Memory
# per tunnel, per policy and per SA come from the differences against the smallest N, so what every
# SADB and every xipsecd costs anyway is not charged to the tunnels. The tunnels are AES-CBC-128 +
# HMAC-SHA-256 (a counter-mode cipher would need a sequence mark each, a cost of its own) to
# 10.128.0.0/9 /32s, one each; they carry no traffic here. Every SADB is made with the capacity the
# largest N needs (ipsecctl init max-sa, max-policy).
# Then forwarding over many SAs: the same tunnels loaded into both gateways (gw2's mirrored), routed
# to h2, and bench/fwd-gen's 64-byte packets spread round-robin over the N tunnels' destinations (one
# packet each in turn, so every SA and policy carries an even share): the rate one worker forwards
# under an unpaced flood and each gateway's xipsecd CPU per packet it encrypted or decrypted, for every
# N, and with two workers over many tunnels (the plan's mw_n, the traffic spread over both workers'
# queues by its many destinations) next to one worker's over the same N: the 2-worker efficiency with
# many SAs, which `bench/sizing plan` uses for a large tunnel count (the lossfree section's is one SA's).
# After each N's floods, paced trials at the plan's ladder of rates: a worker's CPU per packet falls as
# its rate rises (at a low rate each wake-up carries a few packets; the timers cost the same every
# second), so the CPU per second against the packet rate is a line (COST, least squares over the
# floods and the paced trials), whose slope is the cost of a packet and whose intercept the cost of a
# second. These tunnels are AES-GCM, the transform the loss-free rates measure in every run; manual keys
# need their sequence and replay marks, so they are loaded with --new-keys (their keys are random)
# and xipsecd leases the marks in one batch as it starts, in the topology's own state directory. And the
# study's predictions checked: configurations that were not the calculator's inputs (so many tunnels,
# the worker count, the mix), each measured with the lossfree section's RFC 2544 search over the
# loaded tunnels, repeated, and predicted by both of the calculator's models: its CPU model (the
# CPU per packet that steps 2-3 of `bench/sizing plan` size cores with, plan.ns_per_packet: the
# 64-byte line at N tunnels with that many workers, what a larger packet costs more over N (from the
# 1400-byte lines at other counts), and the line's cost of a second spread over the rate), at the
# rate measured, against the encrypting gateway's CPU per packet in the passing trials; and its
# packet-rate model (plan.worker_capacity: the loss-free rate of one tunnel; plan.tunnel_factor:
# times the rate the floods carried over N over the 64-byte loss-free rate of one tunnel; the
# 2-worker floods' efficiency for several workers), against the loss-free rate. More than 15 % apart
# is flagged, and which way. The Mobile IPv6 rows: the home agent's memory per binding
# (bench/mip6-bench-mem) and its two SAs.
import os
import subprocess
import tempfile
import time

from sizing_lib import dataplane, framework, lossfree, netns, plan as calc, plotting

NAME = "scale"
TITLE = "Many tunnels: SADB load, memory, start time"

COLS = ["what", "n", "load_s", "sadb_kb", "xipsecd_start_s", "xipsecd_rss_kb"]
PER = ["what", "per", "sadb_bytes", "xipsecd_bytes"]
MIP6 = ["mobile_nodes", "ha_bytes"]
FWD_RAW = ["n", "workers", "size", "rep", "secs", "sent", "received", "protected_gw1", "unprotected_gw2", "cpu_us_gw1",
           "cpu_us_gw2", "target_pps"]
# a line through each gateway's CPU seconds per second against the packets per second it handled, over
# the floods and the paced trials of one (N, workers): the cost of a packet and the cost of a second
COST = ["n", "workers", "size", "points", "pps_min", "pps_max", "ns_per_pkt_gw1", "ms_per_s_gw1", "ns_per_pkt_gw2",
        "ms_per_s_gw2"]
FWD = ["n", "workers", "size", "reps", "pps", "pps_min", "pps_max", "loss_pct", "ns_per_pkt_gw1", "ns_per_pkt_gw2"]
PREDICTED = ["tunnels", "workers", "size", "reps", "predicted_ns", "ns_basis", "measured_ns", "measured_ns_min",
             "measured_ns_max", "error_ns_pct", "verdict_ns", "predicted_pps", "basis", "measured_pps",
             "measured_pps_min", "measured_pps_max", "bound", "error_pct", "verdict"]
WORKERS = ["n", "pps_1", "pps_2", "pps_2_min", "pps_2_max", "efficiency", "efficiency_min", "efficiency_max"]
COST_CAPTION = ("per N tunnels, worker count and packet size, the line through each gateway's xipsecd CPU per "
                "second against the packets per second it encrypted (gw1: the floods and the paced trials) or "
                "decrypted (gw2: the paced trials with less than 1 % loss): ns_per_pkt, its slope, is what a packet "
                "costs; ms_per_s, its intercept, what the workers spend each second whatever the rate (wake-ups, "
                "timers); CPU per packet at a rate R is ns_per_pkt + ms_per_s x 1e6 / R")
COST_LOSS_MAX = 0.01   # the decrypting gateway's lines: paced trials that lost less than this
FWD_XF = calc.FLOOD_TRANSFORM   # the forwarding tunnels' transform (write_conf's with a peer)


def plan(quick):
    """The section's plan. ladder: the paced 64-byte trials after each count's floods, in packets per
    second per worker, from below to above the rates the predictions run at: with the flood they give
    the line of CPU against the packet rate (COST); ladder_1400: the tunnel counts (of fwd_n) where the
    same rates are paced with 1400-byte packets too, with one worker: what a large packet costs more
    than a small one over that many tunnels."""
    if quick:
        # the prediction at 1,000 tunnels stands for the full run's two, in the time the test allows
        return {"n": [1, 1000], "fwd_n": [1, 1000], "mw_n": [1000], "fwd_reps": 1, "fwd_secs": 0.3, "steps": 3,
                "ladder": [30000, 60000], "ladder_1400": [1], "predict": [(1000, 1, "1400")], "predict_reps": 1}
    # floods at every power of ten the predictions fall between: the cost per packet does not grow
    # evenly in log(N) (the caches are outgrown at one count, not gradually)
    # the 1400-byte ladder at tunnel counts either side of the predictions', never at theirs
    return {"n": [1, 100, 10000, 100000], "fwd_n": [1, 100, 1000, 10000, 100000], "mw_n": [1000, 10000],
            "fwd_reps": 3, "fwd_secs": 2.0, "steps": 7, "ladder": [25000, 50000, 100000],
            "ladder_1400": [1, 1000, 100000],
            "predict": [(1000, 2, "imix"), (10000, 1, "1400")], "predict_reps": 3}


def worker_counts(p):
    """The rigs beyond one worker's: those of the predictions and the 2-worker floods."""
    return sorted(({w for _, w, _ in p["predict"]} | ({2} if p["mw_n"] else set())) - {1})


def points(ctx):
    p = plan(ctx.quick)
    return 2 * len(p["n"]) + 1 + (len(p["fwd_n"]) + len(p["mw_n"])) * p["fwd_reps"] * (1 + len(p["ladder"])) + \
        len(p["ladder_1400"]) * p["fwd_reps"] * len(p["ladder"]) + len(p["predict"]) * p["predict_reps"]


def seconds(ctx):
    p = plan(ctx.quick)
    # the memory rows start xipsecd twice per N; forwarding loads both gateways (and their replay marks)
    loads = sum(4 + n / 2000.0 for n in p["n"]) * 2 + sum(3 + n / 1000.0 for n in p["fwd_n"] + p["mw_n"] +
                                                          [n for n, _, _ in p["predict"]])
    trials = ((len(p["fwd_n"]) + len(p["mw_n"])) * p["fwd_reps"] * (1 + len(p["ladder"])) +
              len(p["ladder_1400"]) * p["fwd_reps"] * len(p["ladder"]) +
              len(p["predict"]) * p["predict_reps"] * (p["steps"] + 1)) * (p["fwd_secs"] + 1.2)
    return loads + trials + 8 * (1 + len(worker_counts(p)))


def _dst(i):
    return "10.%d.%d.%d/32" % (128 + (i >> 16), (i >> 8) & 255, i & 255)


def write_conf(path, n, tunnels, peer_path=None):
    """N tunnels (SA pairs with their policies) or N bypass policies; PEER_PATH: the same tunnels
    seen from gw2 (its outbound SA is gw1's inbound), for forwarding through both, in AES-GCM (the
    study's transform of reference, which the loss-free rates the predictions start from measure)."""
    peer = open(peer_path, "w") if peer_path else None
    with open(path, "w") as f:
        for i in range(n):
            if not tunnels:
                f.write("policy out from 10.1.0.0/24 to %s bypass\n" % _dst(i))
                continue
            s1, s2 = 0x100000 + 2 * i, 0x100001 + 2 * i
            if peer:
                k = [os.urandom(20).hex() for _ in range(2)]
                tun = "esp tunnel from %s to %s local %s peer %s spi 0x%x:0x%x enc aes128gcm16 key 0x%s:0x%s\n"
                f.write(tun % ("10.1.0.0/24", _dst(i), "192.0.2.1", "192.0.2.2", s1, s2, k[0], k[1]))
                peer.write(tun % (_dst(i), "10.1.0.0/24", "192.0.2.2", "192.0.2.1", s2, s1, k[1], k[0]))
                continue
            k = [os.urandom(m).hex() for m in (16, 16, 32, 32)]
            f.write("esp tunnel from 10.1.0.0/24 to %s local 192.0.2.1 peer 192.0.2.2 spi 0x%x:0x%x enc aes128 auth "
                    "sha256 key 0x%s:0x%s authkey 0x%s:0x%s\n" % (_dst(i), s1, s2, k[0], k[1], k[2], k[3]))
    if peer:
        peer.close()


def new_sadb(t, ipsecctl, gw, cap, conf=None, new_keys=False):
    """GW's SADB made anew with capacity CAP (its xipsecd stopped) and CONF loaded into it; the
    seconds the load took. NEW_KEYS: the keys were never used (they are random), so xipsecd may make
    the replay windows' marks in the topology's state directory and let traffic in."""
    sadb = t.sadb[gw]
    t.stop("xipsecd-" + gw)
    try:
        os.unlink(sadb)
    except FileNotFoundError:
        pass
    r = subprocess.run([ipsecctl, "--sadb", sadb, "init", "max-sa", str(cap), "max-policy", str(cap)],
                       capture_output=True, text=True, timeout=120, env=t.env)
    if r.returncode:
        raise netns.NetnsError("ipsecctl init max-sa %d: %s" % (cap, r.stderr[-300:]))
    if conf is None:
        return 0.0
    t0 = time.monotonic()
    r = subprocess.run([ipsecctl, "--sadb", sadb] + (["--new-keys"] if new_keys else []) + ["load", conf],
                       capture_output=True, text=True, timeout=1800, env=t.env)
    if r.returncode:
        raise netns.NetnsError("ipsecctl load on %s exited %d: %s" % (gw, r.returncode, r.stderr[-300:]))
    return time.monotonic() - t0


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
    rows, fwd_raw, pred, trials, mip6 = [], [], [], [], []
    rig = None
    cap = max(65536, 2 * max(p["n"] + p["fwd_n"] + p["mw_n"] + [n for n, _, _ in p["predict"]]))
    try:
        # one worker's rig: the memory rows use its gw1 alone, then forwarding both gateways
        rig = lossfree.Rig(ctx, tmp, 1, tag="sc")
        t = rig.t
        for what in ("tunnels", "policies"):
            for n in p["n"]:
                conf = os.path.join(tmp, "scale.conf")
                write_conf(conf, n, what == "tunnels")
                sadb = t.sadb["gw1"]
                # one capacity for every N (the largest needs it), so that the differences between
                # N are the tunnels' and not a larger table's
                try:
                    load_s = new_sadb(t, ipsecctl, "gw1", cap, conf)
                except netns.NetnsError as e:
                    ctx.fail("%d %s: %s" % (n, what, e))
                    ctx.tick("scale: %d %s: failed" % (n, what))
                    continue
                finally:
                    os.unlink(conf)
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
        mip6 = home_agent_memory(ctx)
        # a forwarding failure is the section's, but the memory rows above stay measured
        try:
            forwarding(ctx, rig, ipsecctl, cap, tmp, fwd_raw, pred, trials)
            for w in worker_counts(p):
                rig.close()
                rig = None
                rig = lossfree.Rig(ctx, tmp, w, tag="sc%d" % w)
                forwarding(ctx, rig, ipsecctl, cap, tmp, fwd_raw, pred, trials)
        except netns.NetnsError as e:
            ctx.fail("forwarding over many tunnels: %s" % e)
    finally:
        if rig:
            rig.close()
        try:
            os.rmdir(tmp)
        except OSError:
            pass
    t = ctx.table("scale", COLS, rows, "N tunnels (an SA pair and its two policies each) or N policies loaded by "
                  "ipsecctl into a new SADB: load time, the SADB's allocated kilobytes, xipsecd's start time until its "
                  "status shows every SA, and its resident memory", expect=2 * len(p["n"]))
    m = ctx.table("scale_mip6", MIP6, mip6, "the home agent's own memory (binding cache, mobile node table and "
                  "index) with N mobile nodes registered, from bench/mip6-bench-mem", expect=2)
    ctx.table("scale_memory", PER, per_item(dataplane._dicts(t), dataplane._dicts(m)), "bytes per tunnel and per "
              "policy: the difference between the largest and the smallest N over their difference; per SA: a "
              "tunnel's less its two policies, halved; per Mobile IPv6 binding: the home agent's state per mobile "
              "node (the same difference) and its two transport SAs", expect=4)
    ctx.table("scale_fwd_raw", FWD_RAW, fwd_raw, "each 64-byte trial spread round-robin over N tunnels, unpaced "
              "(a flood: target_pps empty) or paced at target_pps: packets sent and received, the packets gw1's "
              "xipsecd encrypted and gw2's decrypted, and their CPU microseconds",
              expect=((len(p["fwd_n"]) + len(p["mw_n"])) * (1 + len(p["ladder"])) +
                      len(p["ladder_1400"]) * len(p["ladder"])) * p["fwd_reps"])
    ctx.table("scale_fwd", FWD, derive_fwd(dataplane._dicts(ctx.tables["scale_fwd_raw"])), "forwarding with the "
              "traffic spread evenly over N tunnels (N SA pairs and 2N policies, %s): packets per second the workers "
              "forward under an unpaced flood (median, min-max), the loss, and each gateway's xipsecd CPU ns per "
              "packet it encrypted or decrypted" % FWD_XF, expect=len(p["fwd_n"]) + len(p["mw_n"]))
    ctx.table("scale_workers", WORKERS, derive_workers(dataplane._dicts(ctx.tables["scale_fwd_raw"])),
              "1 and 2 workers over the same N tunnels in this run: the 2-worker rate and its efficiency, the "
              "2-worker rate over twice one worker's (median; min-max over the 2-worker repetitions against the "
              "1-worker median)", expect=len(p["mw_n"]))
    ctx.table("scale_cost", COST, derive_cost(dataplane._dicts(ctx.tables["scale_fwd_raw"])), COST_CAPTION,
              expect=len(p["fwd_n"]) + len(p["mw_n"]) + len(p["ladder_1400"]))
    ctx.table("scale_predict_trials", ["tunnels"] + lossfree.TRIALS, trials, "every trial of the binary searches "
              "over the loaded tunnels (the lossfree section's columns)",
              expect=2 * len(p["predict"]) * p["predict_reps"])
    ctx.table("scale_predicted", PREDICTED, pred, "configurations that were not the calculator's inputs, measured "
              "over that many tunnels (reps binary searches; median, min-max): the encrypting gateway's CPU per "
              "packet in the passing trials next to the calculator's CPU model (predicted_ns), and the loss-free "
              "rate next to its packet-rate model (predicted_pps); more than %d %% apart: flagged" % (
                  lossfree.PREDICT_TOLERANCE * 100), expect=len(p["predict"]))


def load_tunnels(ctx, rig, ipsecctl, cap, tmp, n):
    """N tunnels into both gateways' new SADBs (gw2's mirrored), their xipsecd started on them; the
    generator then spreads its packets over the N destinations."""
    t = rig.t
    c1, c2 = os.path.join(tmp, "fwd-gw1.conf"), os.path.join(tmp, "fwd-gw2.conf")
    write_conf(c1, n, True, c2)
    try:
        for gw, conf in (("gw1", c1), ("gw2", c2)):
            new_sadb(t, ipsecctl, gw, cap, conf, new_keys=True)
    finally:
        os.unlink(c1)
        os.unlink(c2)
    for gw in ("gw1", "gw2"):
        t.start_gw(gw, rig.workers, wait=600)
    if not t.wait_for(600, lambda: all((t.status(gw) or {}).get("sas", -1) == 2 * n for gw in ("gw1", "gw2"))):
        raise netns.NetnsError("xipsecd did not report %d SAs on both gateways" % (2 * n))
    t.transform = FWD_XF
    rig.dst, rig.flows = _dst(0).split("/")[0], n


def forwarding(ctx, rig, ipsecctl, cap, tmp, raw, pred, trials):
    """On RIG: with one worker, the unpaced floods over every N of the plan; then the predictions of
    the plan at RIG's worker count."""
    p = plan(ctx.quick)
    t, w = rig.t, rig.workers
    # the tunnels' inner destinations: gw1 sends them to gw2, gw2 to h2 (its permanent neighbour)
    t.run("gw1", ["ip", "route", "replace", "10.128.0.0/9", "via", "192.0.2.2"])
    t.run("gw2", ["ip", "route", "replace", "10.128.0.0/9", "via", "10.2.0.2"])
    # gw2 known to gw1 before the first packet: a flood's first trial starts without neighbour drops
    t.run("gw1", ["ip", "neigh", "replace", "192.0.2.2", "lladdr", rig.mac("gw2", "out2"), "dev", "out1", "nud",
                  "permanent"])
    queue = [("flood", n, None) for n in (p["fwd_n"] if w == 1 else p["mw_n"] if w == 2 else [])]
    queue += [("predict", n, (size, pw)) for n, pw, size in p["predict"] if pw == w]
    loaded = None
    for kind, n, arg in queue:
        if n != loaded:
            load_tunnels(ctx, rig, ipsecctl, cap, tmp, n)
            loaded = n
        if kind == "flood":
            # the floods, then the ladder's paced trials: the packets each gateway's xipsecd handled
            # (its status), not only those h2 received: under a flood a gateway also works on packets
            # the next hop drops
            for rep in range(1, p["fwd_reps"] + 1):
                steps = [(64, None)] + [(64, x * w) for x in p["ladder"]]
                steps += [(1400, x) for x in p["ladder"] if w == 1 and n in p["ladder_1400"]]
                for size, pps in steps:
                    c0 = [worked(t, gw) for gw in ("gw1", "gw2")]
                    r = rig.trial(str(size), p["fwd_secs"], pps)
                    c1 = [worked(t, gw) for gw in ("gw1", "gw2")]
                    raw.append([n, w, size, rep, p["fwd_secs"], r["sent"], r["received"], c1[0][0] - c0[0][0],
                                c1[1][1] - c0[1][1], r["cpu_us_gw1"], r["cpu_us_gw2"], pps])
                    ctx.tick("scale: %d B over %d tunnel(s), %d worker(s), %s, rep %d: %.0f pps forwarded, %.1f %% "
                             "lost" % (size, n, w, "paced at %d pps" % pps if pps else "flood", rep, r["delivered"],
                                       r["loss"] * 100))
            continue
        size, pw = arg
        pred.append(predict_one(ctx, rig, n, size, pw, p, trials, raw))
        r = dict(zip(PREDICTED, pred[-1]))
        ctx.tick("scale: %d tunnels, %d worker(s), %s: CPU per packet predicted %.0f ns, measured %s; rate "
                 "predicted %.0f pps, measured %.0f pps" % (n, pw, size, r["predicted_ns"] or 0,
                                                            _ns(r["measured_ns"]), r["predicted_pps"] or 0,
                                                            r["measured_pps"]))


def worked(t, gw):
    """(packets protected, packets unprotected) by GW's xipsecd so far, over its workers."""
    ws = (t.status(gw) or {}).get("worker", [])
    return sum(x.get("protect", 0) for x in ws), sum(x.get("unprotect", 0) for x in ws)


def _raw_dicts(raw):
    return [dict(zip(FWD_RAW, r)) for r in raw]


def model_rate(lf, fwd, wk, n, size, workers):
    """The calculator's packet-rate model (step 7 of `bench/sizing plan`) for (FWD_XF, SIZE, WORKERS)
    over N tunnels: the lossfree table's rate (one tunnel) times plan.tunnel_factor (the rate the 1-worker
    floods FWD, derive_fwd rows, carried over N); for several workers over many tunnels one worker's
    times the workers at the efficiency the 2-worker floods WK (derive_workers rows) measured over many
    tunnels, else the lossfree table's at that worker count. (pps, basis) or None."""
    eff = calc.many_sa_efficiency({"scale_workers": {"columns": WORKERS, "rows": [[r[c] for c in WORKERS]
                                                                                  for r in wk]}}, n)
    many = workers > 1 and eff is not None
    model = calc.worker_capacity(lf, FWD_XF, size, 1 if many else workers)
    if model is None:
        return None
    pps, basis = model
    if many:
        pps *= workers * eff[1]
        basis += " x %d workers at the efficiency %.2f of the floods over %s tunnels" % (workers, eff[1],
                                                                                     "{:,}".format(eff[0]))
    f = calc.tunnel_factor(fwd, lf, n)
    if f is None:
        return pps, basis + "; tunnel count not in the model (no flood over many tunnels)"
    return pps * f[0], basis + "; " + f[1]


def model_ns(cost, n, size, workers, rate):
    """The calculator's CPU per packet of the encrypting gateway for (FWD_XF, SIZE, WORKERS) over N
    tunnels at RATE packets per second (plan.ns_per_packet, from the lines COST, derive_cost rows);
    (ns, basis) or None."""
    return calc.ns_per_packet(cost, size, workers, n, rate) if rate else None


def predict_one(ctx, rig, n, size, workers, p, trials, raw):
    """One PREDICTED row: the loss-free rate searched predict_reps times over the N tunnels loaded on
    RIG, with the encrypting gateway's CPU per packet in each passing trial, and the calculator's
    rate for (FWD_XF, SIZE, WORKERS) and its CPU per packet at the rate measured, from the lossfree
    table and the trials so far (RAW)."""
    lf = dataplane._dicts(ctx.tables.get("lossfree", {"columns": [], "rows": []}))
    # the trials as their tables will hold them (raw rows rounded, then derived and rounded), so that
    # check and report, which start from the stored raw rows, find the same figures
    rnd = lambda rows: [[framework._round(v) for v in r] for r in rows]
    rd = _raw_dicts(rnd(raw))
    fwd = [dict(zip(FWD, r)) for r in rnd(derive_fwd(rd))]
    cost = [dict(zip(COST, r)) for r in rnd(derive_cost(rd))]
    wk = [dict(zip(WORKERS, r)) for r in rnd(derive_workers(rd))]
    runs = []
    for rep in range(1, p["predict_reps"] + 1):
        mine = []
        lo, _gen, bound, best = lossfree.search(ctx, rig, FWD_XF, "auto", size, workers, rep,
                                                {"secs": p["fwd_secs"], "steps": p["steps"]}, mine)
        trials += [[n] + r for r in mine]
        ns = best["cpu_us_gw1"] * 1e3 / best["received"] if best and best["received"] else None
        runs.append((lo, bound, ns))
    rates = [framework._round(r[0]) for r in runs]
    nss = [framework._round(r[2]) for r in runs if r[2] is not None]
    bound = "generator" if any(r[1] == "generator" for r in runs) else (
        "none" if dataplane._med(rates) == 0 else "gateway")
    measured = [len(runs), dataplane._med(nss) if nss else None, min(nss) if nss else None,
                max(nss) if nss else None, dataplane._med(rates), min(rates), max(rates), bound]
    return predicted_row(n, workers, size, model_ns(cost, n, size, workers, measured[4]),
                         model_rate(lf, fwd, wk, n, size, workers), measured)


def _verdict(err, bound, cost=False):
    """ERR: predicted against measured, in %. A rate predicted above the measurement is optimistic,
    a cost (COST) predicted below it."""
    if bound != "gateway":
        return "%s-bound" % bound
    if err is None:
        return "not measured"
    if abs(err) <= lossfree.PREDICT_TOLERANCE * 100:
        return "within %d %%" % (lossfree.PREDICT_TOLERANCE * 100)
    return "outside %d %%, %s: %s" % (lossfree.PREDICT_TOLERANCE * 100, "below" if err < 0 else "above",
                                      "optimistic" if (err < 0) == cost else "conservative")


def predicted_row(n, workers, size, ns_model, model, measured):
    """A PREDICTED row from the two models' (value, basis) or None and the measured columns (reps,
    ns median/min/max, pps median/min/max, bound). The CPU model is conservative when it predicts
    more CPU than measured, the rate model when it predicts fewer packets."""
    reps, ns, ns_lo, ns_hi, pps, pps_lo, pps_hi, bound = measured
    ns_err = (ns_model[0] - ns) / ns * 100 if ns_model and ns else None
    err = (model[0] - pps) / pps * 100 if model and pps else None
    ns_verdict = _verdict(ns_err, bound, cost=True)
    return [n, workers, size, reps,
            ns_model[0] if ns_model else None,
            ns_model[1] if ns_model else "no lines of CPU against the rate (scale_cost) for %s" % size,
            ns, ns_lo, ns_hi, ns_err, ns_verdict if ns_model else "not predicted",
            model[0] if model else None,
            model[1] if model else "no lossfree rate of %s at %s B for 1 worker" % (FWD_XF, size),
            pps, pps_lo, pps_hi, bound, err, _verdict(err, bound) if model else "not predicted"]


def _measured(r):
    return [r["reps"], r["measured_ns"], r["measured_ns_min"], r["measured_ns_max"], r["measured_pps"],
            r["measured_pps_min"], r["measured_pps_max"], r["bound"]]


def rederive(ctx):
    """`bench/sizing report`: scale_cost's lines again from the run's raw trials, and scale_predicted's
    predictions, errors and verdicts from the run's tables, as the models compute them now; the
    measured columns are kept."""
    raw = ctx.tables.get("scale_fwd_raw")
    if raw and "target_pps" in raw["columns"]:
        ctx.table("scale_cost", COST, derive_cost(dataplane._dicts(raw)), COST_CAPTION,
                  expect=ctx.meta.get("expected_rows", {}).get("scale_cost"))
    t = ctx.tables.get("scale_predicted")
    if not t:
        return
    lf = dataplane._dicts(ctx.tables.get("lossfree", {"columns": [], "rows": []}))
    fwd, cost, wk = [dataplane._dicts(ctx.tables.get(n, {"columns": [], "rows": []}))
                     for n in ("scale_fwd", "scale_cost", "scale_workers")]
    out = [predicted_row(r["tunnels"], r["workers"], r["size"],
                         model_ns(cost, r["tunnels"], r["size"], r["workers"], r["measured_pps"]),
                         model_rate(lf, fwd, wk, r["tunnels"], r["size"], r["workers"]), _measured(r))
           for r in dataplane._dicts(t)]
    ctx.table("scale_predicted", PREDICTED, out, t.get("caption", ""),
              expect=ctx.meta.get("expected_rows", {}).get("scale_predicted"))


def floods(raw):
    """The unpaced rows of RAW (dicts of FWD_RAW)."""
    return [r for r in raw if r.get("target_pps") in (None, "", 0)]


def derive_fwd(raw):
    raw = floods(raw)
    out = []
    for n, w in sorted({(r["n"], r["workers"]) for r in raw}):
        rs = [r for r in raw if (r["n"], r["workers"]) == (n, w)]
        pps = [r["received"] / r["secs"] for r in rs]
        ns = [[r["cpu_us_gw%d" % g] * 1e3 / r[k] for r in rs if r[k]]
              for g, k in ((1, "protected_gw1"), (2, "unprotected_gw2"))]
        out.append([n, w, rs[0]["size"], len(rs), dataplane._med(pps), min(pps), max(pps),
                    dataplane._med([max(0.0, 1 - r["received"] / r["sent"]) * 100 if r["sent"] else 100.0
                                    for r in rs]),
                    dataplane._med(ns[0]) if ns[0] else None, dataplane._med(ns[1]) if ns[1] else None])
    return out


def derive_cost(raw):
    """COST rows: per (N, workers, packet size), the least-squares line through each gateway's xipsecd
    CPU per second (ns/s) against the packets per second it encrypted (gw1: the floods and the paced
    trials) or decrypted (gw2: the paced trials with less than COST_LOSS_MAX loss): its slope is what
    a packet costs, its intercept what the workers spend per second whatever the rate (the wake-ups
    that a low rate pays for a few packets each, the timers). Only with two rates or more."""
    out = []
    for n, w, size in sorted({(r["n"], r["workers"], int(r["size"])) for r in raw}):
        rs = [r for r in raw if (r["n"], r["workers"], int(r["size"])) == (n, w, size) and r["secs"]]
        row, rates = [], []
        for g, k in ((1, "protected_gw1"), (2, "unprotected_gw2")):
            # the decrypting gateway only where it lost nothing: under overload its CPU also pays for
            # packets it then drops (a flood over one tunnel costs it 4 us a decrypted packet, the
            # loss-free trials 2.7)
            pts = [(r[k] / r["secs"], r["cpu_us_gw%d" % g] * 1e3 / r["secs"]) for r in rs
                   if r[k] and (g == 1 or _paced_loss_free(r))]
            fit = _line(pts)
            row += [fit[0], fit[1] / 1e6] if fit else [None, None]
            if g == 1:
                rates = [x for x, _ in pts]
        if rates and row[0] is not None:
            out.append([n, w, size, len(rates), min(rates), max(rates)] + row)
    return out


def _paced_loss_free(r):
    """A paced trial (of FWD_RAW) that lost less than COST_LOSS_MAX."""
    return r.get("target_pps") not in (None, "", 0) and r["received"] >= r["sent"] * (1 - COST_LOSS_MAX)


def _line(pts):
    """(slope, intercept) of the least-squares line through PTS [(x, y)], or None without two x."""
    if len({x for x, _ in pts}) < 2:
        return None
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    a = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    return a, my - a * mx


def derive_workers(raw):
    """WORKERS rows: every N forwarded with both 1 and 2 workers."""
    raw = floods(raw)
    out = []
    for n in sorted({r["n"] for r in raw if r["workers"] == 2}):
        one = [r["received"] / r["secs"] for r in raw if (r["n"], r["workers"]) == (n, 1)]
        two = [r["received"] / r["secs"] for r in raw if (r["n"], r["workers"]) == (n, 2)]
        if not one or not two or not dataplane._med(one):
            continue
        p1 = dataplane._med(one)
        out.append([n, p1, dataplane._med(two), min(two), max(two), dataplane._med(two) / (2 * p1),
                    min(two) / (2 * p1), max(two) / (2 * p1)])
    return out


def home_agent_memory(ctx):
    """MIP6 rows: the home agent's bytes with 1 and with 10,000 mobile nodes registered (bench/mip6-bench-mem,
    one timed exchange: only its set-up matters here)."""
    mem = os.path.join(str(ctx.builddir), "bench", "mip6-bench-mem")
    r = subprocess.run([mem, "-r", "1", "-n", "1", "-t", "gcm"], capture_output=True, text=True, timeout=300)
    if r.returncode:
        ctx.fail("bench/mip6-bench-mem exited %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
        return []
    rows = []
    for line in r.stdout.splitlines():
        f = line.replace(":", " ").split()
        if line.startswith("# home agent state for") and len(f) >= 9 and f[5].isdigit() and f[8].isdigit():
            rows.append([int(f[5]), int(f[8])])
    ctx.tick("scale: Mobile IPv6 home agent memory for %s mobile nodes" % ", ".join(str(x[0]) for x in rows))
    return rows


def per_item(rows, mip6=()):
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
        sa = ((out["tunnels"][0] - 2 * out["policies"][0]) / 2, (out["tunnels"][1] - 2 * out["policies"][1]) / 2)
        res.append(["SA", "SA", sa[0], sa[1]])
        m = sorted(mip6, key=lambda x: x["mobile_nodes"])
        if len(m) >= 2 and m[-1]["mobile_nodes"] > m[0]["mobile_nodes"]:
            ha = (m[-1]["ha_bytes"] - m[0]["ha_bytes"]) / (m[-1]["mobile_nodes"] - m[0]["mobile_nodes"])
            res.append(["Mobile IPv6 binding (its state and 2 transport SAs)", "binding", 2 * sa[0], ha + 2 * sa[1]])
    return res


def report(ctx, rep):
    rows = dataplane._dicts(ctx.tables.get("scale", {"columns": [], "rows": []}))
    per = dataplane._dicts(ctx.tables.get("scale_memory", {"columns": [], "rows": []}))
    rep.para("The cost of many tunnels before any packet: N site-to-site tunnels (AES-CBC-128 + HMAC-SHA-256, an SA "
             "pair and its two policies each) or N policies written by `ipsecctl load` into a new SADB, then xipsecd "
             "started on it.")
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
        _log_axes(axes, ("seconds", "MB"), "N")
        fig.suptitle("N tunnels or policies: load and start time, memory (one measurement each)", fontsize=10)
        fig.tight_layout()
        ctx.savefig(fig, "scale")
        rep.plot("scale", "SADB load time, xipsecd start time and memory against the number of tunnels or policies")
    rep.table("scale_memory")
    rep.table("scale")
    report_fwd(ctx, rep)


def report_fwd(ctx, rep):
    p = ctx.meta.get("scale_plan", {})
    fwd = dataplane._dicts(ctx.tables.get("scale_fwd", {"columns": [], "rows": []}))
    rep.para("Forwarding over many SAs: the same tunnels (%s) loaded into both gateways, and bench/fwd-gen's 64-byte "
             "packets sent to the N tunnels' destinations in turn, one packet each, as fast as it goes for %s s (%s "
             "repetition(s)); gw2 routes them to h2's sink. The rate is what the workers forward under that flood, the "
             "CPU per packet each gateway's xipsecd time over the packets it encrypted or decrypted (its own "
             "counters)." % (
                 FWD_XF, p.get("fwd_secs"), p.get("fwd_reps")))
    if fwd:
        rep.para("In this run:\n" + "\n".join("- %s tunnel(s), %d worker(s): %s packets/s (%.1f %% lost), %s ns of gw1 "
                                               "and %s ns of gw2 CPU per packet" % (
                                                   "{:,}".format(r["n"]), r["workers"], "{:,.0f}".format(r["pps"]),
                                                   r["loss_pct"],
                                                   _ns(r["ns_per_pkt_gw1"]), _ns(r["ns_per_pkt_gw2"])) for r in fwd))
        plt = plotting.pyplot()
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        for w in sorted({r["workers"] for r in fwd}):
            fw = [r for r in fwd if r["workers"] == w]
            xs = [r["n"] for r in fw]
            style = "-" if w == 1 else ":"
            plotting.line(axes[0], xs, [r["pps"] for r in fw], [(r["pps_min"], r["pps_max"]) for r in fw],
                          label="packets/s forwarded (%d worker%s, 64 B)" % (w, "s" if w > 1 else ""), linestyle=style)
            for r in fw:
                axes[0].annotate("{:,.0f}".format(r["pps"]), (r["n"], r["pps"]), fontsize=7, textcoords="offset points",
                                 xytext=(0, 5), ha="center")
            plotting.line(axes[1], xs, [r["ns_per_pkt_gw1"] for r in fw], label="gw1 (encrypts) ns/packet, %d w" % w,
                          linestyle=style)
            plotting.line(axes[1], xs, [r["ns_per_pkt_gw2"] for r in fw], label="gw2 (decrypts) ns/packet, %d w" % w,
                          linestyle="--" if w == 1 else "-.")
        _log_axes(axes, ("packets per second", "xipsecd CPU ns per packet"), "tunnels the traffic is spread over")
        fig.suptitle("64-byte packets spread round-robin over N tunnels: rate and CPU per packet", fontsize=10)
        fig.tight_layout()
        ctx.savefig(fig, "scale_fwd")
        rep.plot("scale_fwd", "forwarding rate (median, bars min-max) and CPU per packet against the number of tunnels "
                 "the traffic is spread over, with one worker and with two")
    wk = dataplane._dicts(ctx.tables.get("scale_workers", {"columns": [], "rows": []}))
    if wk:
        rep.para("Two workers over many tunnels, next to one worker over the same tunnels in this run (the lossfree "
                 "section's 2-worker efficiency is one SA's; `bench/sizing plan` takes this one for a large tunnel "
                 "count):\n" + "\n".join(
                     "- %s tunnels: 1 worker %s packets/s, 2 workers %s packets/s: efficiency %.2f (%.2f-%.2f)" % (
                         "{:,}".format(r["n"]), "{:,.0f}".format(r["pps_1"]), "{:,.0f}".format(r["pps_2"]),
                         r["efficiency"], r["efficiency_min"], r["efficiency_max"]) for r in wk))
        rep.table("scale_workers")
    report_cost(ctx, rep)
    pr = dataplane._dicts(ctx.tables.get("scale_predicted", {"columns": [], "rows": []}))
    if pr:
        def what(r):
            return "%s tunnels, %d worker(s), %s" % ("{:,}".format(r["tunnels"]), r["workers"],
                                                    "IMIX" if r["size"] == "imix" else r["size"] + " B")

        def err(v):
            return "%+.0f %%" % v if plotting.ok(v) else "no error"
        rep.para("The predictions checked: configurations that were not the calculator's inputs, each measured "
                 "over that many tunnels by %s RFC 2544 search(es) of %s steps (median, min-max). The CPU model "
                 "(what `bench/sizing plan` sizes cores with): a worker's CPU per second is a line in its packet "
                 "rate (`scale_cost`), so the CPU per packet is the cost of a packet plus the cost of a second "
                 "spread over the rate: the 64-byte line with that worker count over N tunnels (log-interpolated "
                 "between the counts measured), plus what a packet of the size's mean costs more than a 64-byte one "
                 "over N tunnels (the 1400-byte lines' cost of a packet over the 64-byte lines' at the counts "
                 "measured with both, log-interpolated in N, linear in the bytes; never at the predictions' "
                 "counts), and the line's cost of a second spread over the rate measured. Against the encrypting "
                 "gateway's CPU per packet in the passing trials:\n" % (p.get("predict_reps", 1), p.get("steps")) +
                 "\n".join("- %s: predicted %s ns per packet, measured %s ns (%s-%s; %s: %s)" % (
                     what(r), _ns(r["predicted_ns"]), _ns(r["measured_ns"]), _ns(r["measured_ns_min"]),
                     _ns(r["measured_ns_max"]), err(r["error_ns_pct"]), r["verdict_ns"]) for r in pr) +
                 "\n\nThe packet-rate model (step 7 of the plan: the lossfree section's rate for one tunnel at that "
                 "size, times the rate the 1-worker floods carried over N tunnels over the 64-byte loss-free rate "
                 "of one tunnel, and for two workers over many tunnels one worker's times two at the 2-worker "
                 "floods' efficiency) against the loss-free rate:\n" + "\n".join(
                     "- %s: predicted %s pps, measured %s pps (%s-%s; %s: %s)" % (
                         what(r), "{:,.0f}".format(r["predicted_pps"]) if plotting.ok(r["predicted_pps"]) else "n/a",
                         "{:,.0f}".format(r["measured_pps"]), "{:,.0f}".format(r["measured_pps_min"]),
                         "{:,.0f}".format(r["measured_pps_max"]), err(r["error_pct"]), r["verdict"])
                     for r in pr))
    rep.table("scale_predicted")
    rep.table("scale_fwd")
    rep.table("scale_fwd_raw")
    rep.table("scale_predict_trials")


def report_cost(ctx, rep):
    """The lines of CPU against the packet rate (scale_cost), drawn through the trials they fit."""
    cost = dataplane._dicts(ctx.tables.get("scale_cost", {"columns": [], "rows": []}))
    raw = dataplane._dicts(ctx.tables.get("scale_fwd_raw", {"columns": [], "rows": []}))
    if not cost:
        return
    p = ctx.meta.get("scale_plan", {})
    rates = lambda k: ", ".join("{:,}".format(x) for x in p.get(k, []))
    rep.para("CPU against the packet rate: after each tunnel count's floods, 64-byte trials paced at %s "
             "packets/s per worker, and with one worker over %s tunnel(s) 1400-byte trials at the same rates. "
             "A worker's CPU per second is close to a line in the packets it handles: the slope is what a "
             "packet costs, the intercept what the workers spend each second whatever the rate (a wake-up at a "
             "low rate carries a few packets; the timers tick the same). So the CPU per packet falls as the "
             "rate rises, and a CPU per packet measured at one rate is not the one at another; `bench/sizing "
             "plan` and the CPU model of the predictions take both terms (the decrypting gateway's lines only "
             "through the trials with less than %.0f %% loss: under overload it also spends CPU on what it "
             "drops):\n" % (rates("ladder"), rates("ladder_1400"), COST_LOSS_MAX * 100) + "\n".join(
                 "- %s tunnel(s), %d worker(s), %d B: %s ns per packet and %s ms per second (gw1, encrypting); "
                 "%s ns and %s ms (gw2, decrypting); %d trials from %s to %s packets/s" % (
                     "{:,}".format(r["n"]), r["workers"], r["size"], _ns(r["ns_per_pkt_gw1"]), _ms(r["ms_per_s_gw1"]),
                     _ns(r["ns_per_pkt_gw2"]), _ms(r["ms_per_s_gw2"]), r["points"], "{:,.0f}".format(r["pps_min"]),
                     "{:,.0f}".format(r["pps_max"])) for r in cost))
    plt = plotting.pyplot()
    fig, ax = plt.subplots(1, 1, figsize=(8, 5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, r in enumerate(cost):
        c = colours[i % len(colours)]
        pts = [(x["protected_gw1"] / x["secs"], x["cpu_us_gw1"] / x["secs"] / 1e3) for x in raw
               if (x["n"], x["workers"], int(x["size"])) == (r["n"], r["workers"], r["size"]) and x["secs"] and
               x["protected_gw1"]]
        lab = "%s tunnel(s), %d worker(s), %d B" % ("{:,}".format(r["n"]), r["workers"], r["size"])
        ax.scatter([x for x, _ in pts], [y for _, y in pts], s=12, color=c,
                   marker="o" if r["workers"] == 1 else "^" if r["size"] == 64 else "s")
        xs = [0, r["pps_max"]]
        ax.plot(xs, [(r["ns_per_pkt_gw1"] * x / 1e6 + r["ms_per_s_gw1"]) for x in xs], color=c,
                linestyle=":" if r["workers"] > 1 else "-" if r["size"] == 64 else "--",
                label=lab + ": %.0f ns/pkt + %.0f ms/s" % (r["ns_per_pkt_gw1"], r["ms_per_s_gw1"]))
    ax.set_xlabel("packets per second gw1 encrypted")
    ax.set_ylabel("gw1 xipsecd CPU, ms per second")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_xlim(left=0)
    plotting.from_zero(ax)
    fig.suptitle("CPU against the packet rate over N tunnels (floods and paced trials; lines: least squares)",
                 fontsize=10)
    fig.tight_layout()
    ctx.savefig(fig, "scale_cost")
    rep.plot("scale_cost", "the encrypting gateway's CPU per second against its packet rate, each trial a point, "
             "per tunnel count and worker count, with the line fitted through them")
    rep.table("scale_cost")


def _ms(v):
    return "%.1f" % v if plotting.ok(v) else "n/a"


def _log_axes(axes, ylabels, xlabel):
    """The section's plots: N on a log scale, values from zero."""
    for ax, lab in zip(axes, ylabels):
        ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(lab)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        plotting.from_zero(ax)


def _ns(v):
    return "%.0f" % v if plotting.ok(v) else "n/a"


def check(run_dir):
    from sizing_lib import framework
    meta, tables = framework.load_run(run_dir)
    if "scale" not in tables or "scale_memory" not in tables:
        return ["table scale or scale_memory missing"]
    want = [[framework._round(v) for v in r] for r in per_item(dataplane._dicts(tables["scale"]),
                                                                dataplane._dicts(tables.get("scale_mip6", {
                                                                    "columns": MIP6, "rows": []})))]
    errs = dataplane._compare("scale_memory", tables["scale_memory"]["rows"], want, 2)
    need = ("scale_fwd_raw", "scale_fwd", "scale_predicted", "scale_predict_trials")
    errs += ["table %s missing" % n for n in need if n not in tables]
    if any(n not in tables for n in need):
        return errs
    want = [[framework._round(v) for v in r] for r in derive_fwd(dataplane._dicts(tables["scale_fwd_raw"]))]
    errs += dataplane._compare("scale_fwd", tables["scale_fwd"]["rows"], want, 2)
    if "scale_workers" in tables:
        want = [[framework._round(v) for v in r] for r in derive_workers(dataplane._dicts(tables["scale_fwd_raw"]))]
        errs += dataplane._compare("scale_workers", tables["scale_workers"]["rows"], want, 1)
    if "scale_cost" in tables:
        want = [[framework._round(v) for v in r] for r in derive_cost(dataplane._dicts(tables["scale_fwd_raw"]))]
        errs += dataplane._compare("scale_cost", tables["scale_cost"]["rows"], want, 3)
    # a tunnel count nothing crossed is a dead tunnel, not a figure
    errs += ["scale_fwd: nothing forwarded over %s tunnel(s)" % r["n"] for r in dataplane._dicts(tables["scale_fwd"])
             if not r["pps"]]
    lf = dataplane._dicts(tables.get("lossfree", {"columns": [], "rows": []}))
    trials = dataplane._dicts(tables["scale_predict_trials"])
    fwd = dataplane._dicts(tables["scale_fwd"])
    cost, wk = [dataplane._dicts(tables.get(n, {"columns": [], "rows": []})) for n in ("scale_cost", "scale_workers")]
    for r in dataplane._dicts(tables["scale_predicted"]):
        model = model_rate(lf, fwd, wk, r["tunnels"], r["size"], r["workers"])
        if model is None:
            errs.append("scale_predicted %s tunnels: no lossfree rate to predict from" % r["tunnels"])
            continue
        want = [framework._round(v) for v in predicted_row(
            r["tunnels"], r["workers"], r["size"],
            model_ns(cost, r["tunnels"], r["size"], r["workers"], r["measured_pps"]), model, _measured(r))]
        errs += dataplane._compare("scale_predicted", [list(r.values())], [want], 4)
        # generator-bound: a lower bound, said so by the verdict; none: no rate passed at all
        if r["bound"] == "none":
            errs.append("scale_predicted %s tunnels: no paced rate passed" % r["tunnels"])
            continue
        if r["measured_ns"] is None:
            errs.append("scale_predicted %s tunnels: no CPU per packet measured" % r["tunnels"])
        # each repetition's loss-free rate is the highest its trials passed at: every repetition
        # passed one, and the fastest and the slowest repetition must each be one
        best = {}
        for t in trials:
            if t["step"] > 0 and t["pass"] and (t["tunnels"], t["workers"], t["size"]) == (
                    r["tunnels"], r["workers"], r["size"]):
                best[t["rep"]] = max(best.get(t["rep"], 0), min(t["target_pps"], t["offered_pps"]))
        errs += ["scale_predicted %s tunnels: repetition %d passed no rate" % (r["tunnels"], rep)
                 for rep in range(1, r["reps"] + 1) if r["bound"] == "gateway" and rep not in best]
        for v in (r["measured_pps_min"], r["measured_pps_max"]):
            if r["bound"] == "gateway" and not any(abs(b - v) <= v * 1e-5 for b in best.values()):
                errs.append("scale_predicted %s tunnels: %s pps is not a repetition's loss-free rate" % (
                    r["tunnels"], v))
    return errs
