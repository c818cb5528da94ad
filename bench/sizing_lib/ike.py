# bench/sizing_lib/ike.py: the sizing study's SA negotiation section. Two xipsec-iked in network
# namespaces (bench/sizing_lib/ike_peers.sh, built from the IKE netns tests' helpers) are timed over
# VICI by bench/ike-bench-vici, as the HP-UX IPSec sizing paper times its SA negotiations: IKEv1 Main
# Mode and Quick Mode (with and without PFS), IKEv2 IKE_SA (IKE_SA_INIT + IKE_AUTH) and
# CREATE_CHILD_SA (with and without PFS), per DH group and authentication method, repetitions
# interleaved so that drift on the shared machine spreads over every point; the time to bring up N
# CHILD SAs under maxqm = m (the paper's tuning chart: N Quick Modes on ceil(N/m) Main Modes) and the
# CHILD SAs installed per second; negotiation times with 0 % and 1 % random loss (nftables on the
# responder) with the retransmissions they cost; the bytes and packets of each exchange on the wire,
# and the CPU cycles of initiator and responder per exchange. The IKE packets are captured on the
# initiator's interface for the whole session and attributed to the operation whose time window holds
# them; a retransmission is a request the initiator sent a second time (byte-identical UDP payload).
import hashlib
import math
import os
import queue
import statistics
import subprocess
import threading
import time

from sizing_lib import plotting

NAME = "ike"
TITLE = "SA negotiation"

GROUP_NAMES = {"modp2048": "MODP-2048", "ecp256": "ECP-256", "curve25519": "Curve25519"}
AUTH_NAMES = {"psk": "PSK", "rsa": "RSA-3072", "ecdsa": "ECDSA-256"}
EXCHANGES = [  # id, label
    ("v1_mm", "IKEv1 Main Mode"),
    ("v1_qm", "IKEv1 Quick Mode"),
    ("v1_qm_pfs", "IKEv1 Quick Mode, PFS"),
    ("v2_ike", "IKEv2 IKE_SA (INIT+AUTH)"),
    ("v2_child", "IKEv2 CREATE_CHILD_SA"),
    ("v2_child_pfs", "IKEv2 CREATE_CHILD_SA, PFS"),
]
EXCH_LABEL = dict(EXCHANGES)
# ISAKMP/IKEv2 exchange types (RFC 2408 / RFC 7296)
EXCH_TYPES = {2: "Main Mode", 4: "Aggressive Mode", 5: "Informational (v1)", 32: "Quick Mode",
              34: "IKE_SA_INIT", 35: "IKE_AUTH", 36: "CREATE_CHILD_SA", 37: "INFORMATIONAL"}
DELETES = (5, 37)
HP_MM_S, HP_QM_S = 0.509, 0.004
# charon's defaults (strongswan.conf charon.retransmit_*): try n waits timeout * base^n
RETRANSMIT_TIMEOUT, RETRANSMIT_BASE, RETRANSMIT_TRIES = 4.0, 1.8, 5


# At most this many renewals per maxqm point (1,000 Main Modes take about 15 s here; a renewal that
# waits for a retransmission costs 4 s more).
MAX_RENEWALS = 1000


def maxqm_points(p):
    return [(m, n) for m in p["maxqm"] for n in p["n"] if n / m <= MAX_RENEWALS]


def plan(quick):
    if quick:
        return {"auths": ["psk"], "groups": ["modp2048", "ecp256"], "reps": 3, "nchild": 2,
                "maxqm": [1, 10], "n": [1, 10], "maxqm_reps": 1, "loss_n": 10}
    return {"auths": ["psk", "ecdsa", "rsa"], "groups": ["modp2048", "ecp256", "curve25519"], "reps": 7,
            "nchild": 4, "maxqm": [1, 10, 100], "n": [1, 10, 100, 1000], "maxqm_reps": 3, "loss_n": 150}


LOSS_TICK = 10  # loss rounds per progress point
# the responder's addresses in ike_peers.sh: 10.9.0.2, 10.9.0.(20+j) per DH group, 10.9.0.40 (maxqm)
RESPONDER_ADDRS = {"10.9.0.2", "10.9.0.40"} | {"10.9.0.%d" % (20 + j) for j in range(10)}


def points(ctx):
    p = plan(ctx.quick)
    n = len(p["auths"]) * p["reps"] * len(p["groups"])
    n += len(maxqm_points(p)) * p["maxqm_reps"]
    n += math.ceil(p["loss_n"] / LOSS_TICK)
    return n


def seconds(ctx):
    """Estimated duration, from runs on the 2-core development VM: a session's start (certificates,
    daemons), about 1.6 s per repetition of one group (both IKE versions, deletions and SADB clean-up
    included), the maxqm bring-ups (a Main Mode about 18 ms, a Quick Mode 5 ms), and a loss round
    about 0.45 s plus the retransmission timeouts it hits (about 0.2 s per round on average)."""
    p = plan(ctx.quick)
    t = 5.0 * len(p["auths"]) + 1.6 * len(p["auths"]) * p["reps"] * len(p["groups"])
    t += p["maxqm_reps"] * sum(n / m * 0.018 + n * 0.005 + 1.0 for m, n in maxqm_points(p))
    t += p["loss_n"] * 0.65
    return t


# ---- statistics shared by run() and check()
def quantile(v, q):
    """Linear interpolation between order statistics (numpy's default), q in [0, 1]."""
    s = sorted(v)
    if not s:
        return float("nan")
    x = (len(s) - 1) * q
    lo = int(math.floor(x))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (x - lo)


def _num(x):
    return float(x) if x not in ("", None) else float("nan")


class Session:
    """One run of a gateways script of this package (ike_peers.sh, ikescale_peers.sh): started with
    ARGS, its "ready ..." line's words in self.ready, then driven line by line (cmd); its standard
    error goes to RUN/LOGNAME."""

    def __init__(self, ctx, script, args, logname, start_timeout=180):
        self.logpath = ctx.run_dir / logname
        self.log = open(self.logpath, "w")
        self.p = subprocess.Popen([str(ctx.srcdir / "bench" / "sizing_lib" / script), str(ctx.builddir)] +
                                  [str(a) for a in args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.log, text=True, bufsize=1)
        self.q = queue.Queue()
        threading.Thread(target=self._reader, daemon=True).start()
        line = self._line(start_timeout)
        if not line or not line.startswith("ready "):
            self.close()
            raise RuntimeError("the IKE gateways did not start (%s): %s" % (self.logpath, self._tail()))
        self.ready = line.split()[1:]

    def _reader(self):
        for line in self.p.stdout:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def _line(self, timeout):
        try:
            return self.q.get(timeout=timeout)
        except queue.Empty:
            return None

    def _tail(self):
        self.log.flush()
        try:
            return " | ".join(open(self.logpath).read().splitlines()[-6:])
        except OSError:
            return "?"

    def cmd(self, line, timeout=600):
        """(rc, output lines) of one command."""
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = []
        end = time.monotonic() + timeout
        while True:
            ln = self._line(max(end - time.monotonic(), 0.1))
            if ln is None:
                raise RuntimeError("IKE gateways: no answer to '%s' (%s): %s" % (line[:60], self.logpath, self._tail()))
            if ln.startswith("= "):
                return int(ln[2:]), out
            out.append(ln)

    def cpu(self):
        rc, out = self.cmd("cpu")
        _, a, b = out[0].split()
        return int(a), int(b)

    def vici(self, args, timeout=600, verb="vici"):
        """(rc, [(kind, µs)], output) of one bench/ike-bench-vici run."""
        rc, out = self.cmd(verb + " " + args, timeout)
        vals = []
        for ln in out:
            w = ln.split()
            if len(w) >= 2 and w[0] in ("ike", "child", "bringup", "up", "rekey") and w[1].isdigit():
                vals.append((w[0], int(w[1])))
        return rc, vals, out

    def close(self):
        try:
            if self.p.poll() is None:
                self.p.stdin.write("quit\n")
                self.p.stdin.flush()
                self.p.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            self.p.terminate()   # the script's traps still clean up namespaces and daemons
            self.p.wait(timeout=30)
        self.log.close()


class Peers(Session):
    """One session of ike_peers.sh: the two daemons and the capture."""

    def __init__(self, ctx, auth, groups, nchild, maxqm_children, cap):
        super().__init__(ctx, "ike_peers.sh", [auth, ",".join(groups), nchild, maxqm_children, cap],
                         "ike-peers-%s.log" % auth)
        self.uri, self.status, _pida, _pidb, mhz = self.ready
        self.mhz = float(mhz)


def read_capture(cap):
    """[(epoch, src, ip_len, exchange type, payload digest)] of the IKE packets in a pcap file."""
    out = subprocess.run(["tshark", "-n", "-r", str(cap), "-T", "fields", "-E", "separator=,",
                          "-e", "frame.time_epoch", "-e", "ip.src", "-e", "ip.len", "-e", "isakmp.exchangetype",
                          "-e", "udp.payload"], capture_output=True, text=True, timeout=600)
    pk = []
    for ln in out.stdout.splitlines():
        f = ln.split(",")
        if len(f) < 5 or not f[3]:
            continue
        pk.append((float(f[0]), f[1], int(f[2]), int(f[3].split(",")[0], 0),
                   hashlib.sha1(f[4].encode()).hexdigest()))
    return pk


class Windows:
    """Time windows of the operations of a session, for attributing captured packets to them."""

    def __init__(self):
        self.w = []   # (t0, t1, key dict, ops)

    def add(self, t0, t1, key, ops):
        self.w.append((t0, t1, key, ops))

    def attribute(self, packets):
        """For each window: {exchange type: [packets, bytes]}, and the initiator's retransmissions in its
        negotiation exchanges (the responder answering a retransmitted request again is not counted)."""
        res = []
        j = 0
        pk = sorted(packets)
        for t0, t1, key, ops in sorted(self.w, key=lambda x: x[0]):
            while j < len(pk) and pk[j][0] < t0:
                j += 1
            k = j
            types, seen, retr = {}, set(), 0
            while k < len(pk) and pk[k][0] <= t1:
                _, src, ln, et, dig = pk[k]
                t = types.setdefault(et, [0, 0])
                t[0] += 1
                t[1] += ln
                if (src, dig) in seen and et not in DELETES and src not in RESPONDER_ADDRS:
                    retr += 1
                seen.add((src, dig))
                k += 1
            res.append((key, ops, types, retr))
        return res


def _timed(peers, windows, key, args, ops):
    """Runs one vici command inside a recorded window; (rc, values, cpu deltas ns)."""
    a0, b0 = peers.cpu()
    t0 = time.time()
    rc, vals, out = peers.vici(args)
    t1 = time.time()
    a1, b1 = peers.cpu()
    windows.add(t0, t1, key, ops)
    return rc, vals, (a1 - a0, b1 - b0), out


def run(ctx):
    p = plan(ctx.quick)
    mhz = float(ctx.meta.get("mhz") or 0)
    neg_raw, mq_raw, loss_raw, wire_acc = [], [], [], {}
    retr_total = {}
    for auth in p["auths"]:
        cap = ctx.run_dir / ("ike-%s.pcap" % auth)
        with_mq = max(p["n"]) if auth == "psk" else 0
        peers = Peers(ctx, auth, p["groups"], p["nchild"] + 1, with_mq, cap)
        mhz = mhz or peers.mhz
        win = Windows()
        try:
            _negotiations(ctx, peers, win, auth, p, neg_raw)
            if auth == "psk":
                _maxqm(ctx, peers, win, p, mq_raw)
                _loss(ctx, peers, win, p, loss_raw)
        finally:
            peers.close()
        for key, ops, types, retr in win.attribute(read_capture(cap)):
            if key.get("kind") == "neg":
                acc = wire_acc.setdefault((auth, key["group"], key["exch"]), {"ops": 0, "types": {}})
                acc["ops"] += ops
                for et, (n, b) in types.items():
                    t = acc["types"].setdefault(et, [0, 0])
                    t[0] += n
                    t[1] += b
            elif key.get("kind") == "maxqm":
                mq_raw[key["row"]][-1] = retr
            elif key.get("kind") == "loss":
                loss_raw[key["row"]][-1] = retr
                loss_raw[key["row"]][-2] = sum(n for et, (n, b) in types.items() if et not in DELETES)
            retr_total[key.get("kind")] = retr_total.get(key.get("kind"), 0) + retr
        try:
            os.unlink(cap)   # bulky; the tables hold what it showed
        except OSError:
            pass
    ctx.meta["ike"] = {"mhz": mhz, "plan": p, "retransmit": [RETRANSMIT_TIMEOUT, RETRANSMIT_BASE, RETRANSMIT_TRIES],
                       "retransmissions_seen": retr_total}
    _tables(ctx, neg_raw, mq_raw, loss_raw, wire_acc, mhz)
    _plots(ctx)


def _negotiations(ctx, peers, win, auth, p, raw):
    """Reps outermost: every (group, exchange) once per repetition."""
    for rep in range(p["reps"]):
        for g in p["groups"]:
            for v, ike_exch, q, qp in ((1, "v1_mm", "v1_qm", "v1_qm_pfs"), (2, "v2_ike", "v2_child", "v2_child_pfs")):
                conn = "v%d-%s" % (v, g)
                # the IKE SA alone (its deletion included in the CPU figures)
                rc, vals, cpu, out = _timed(peers, win, {"kind": "neg", "group": g, "exch": ike_exch},
                                            "ike %s 1" % conn, 1)
                if rc != 0 or not vals:
                    raise RuntimeError("%s %s: %s" % (auth, conn, " ".join(out)[-300:]))
                raw.append([auth, g, ike_exch, rep, 0, vals[0][1], cpu[0], cpu[1]])
                # an IKE SA to carry the CHILD SAs (its first CHILD SA rides on it, untimed), then
                # CHILD SAs without and with PFS
                rc, _, _, out = _timed(peers, win, {"kind": "setup"}, "child %s q1" % conn, 1)
                if rc != 0:
                    raise RuntimeError("%s %s q1: %s" % (auth, conn, " ".join(out)[-300:]))
                for exch, prefix in ((q, "q"), (qp, "p")):
                    names = " ".join("%s%d" % (prefix, i) for i in range(2, p["nchild"] + 2)) if prefix == "q" else \
                        " ".join("p%d" % i for i in range(1, p["nchild"] + 1))
                    rc, vals, cpu, out = _timed(peers, win, {"kind": "neg", "group": g, "exch": exch},
                                                "child %s %s" % (conn, names), p["nchild"])
                    if rc != 0 or len(vals) != p["nchild"]:
                        raise RuntimeError("%s %s %s: %s" % (auth, conn, names, " ".join(out)[-300:]))
                    for i, (_, us) in enumerate(vals):
                        raw.append([auth, g, exch, rep, i, us, cpu[0] / len(vals), cpu[1] / len(vals)])
                _timed(peers, win, {"kind": "delete"}, "terminate %s" % conn, 1)
            peers.cmd("flush")
            ctx.tick("ike %s %s rep %d" % (auth, g, rep + 1))


def _maxqm(ctx, peers, win, p, raw):
    for rep in range(p["maxqm_reps"]):
        for m, n in maxqm_points(p):
            rc, _ = peers.cmd("maxqm %d" % m)
            if rc != 0:
                raise RuntimeError("ipsecctl ike maxqm set %d failed (%s)" % (m, peers.logpath))
            _, out = peers.cmd("status main_modes")
            mm0 = int(out[0]) if out and out[0].isdigit() else 0
            names = " ".join("m%d" % i for i in range(1, n + 1))
            rc, vals, cpu, out = _timed(peers, win, {"kind": "maxqm", "row": len(raw)},
                                        "bringup %s mq %s" % (peers.status, names), n)
            tot = [us for k, us in vals if k == "bringup"]
            if rc != 0 or not tot:
                raise RuntimeError("maxqm %d, %d CHILD SAs: %s" % (m, n, " ".join(out)[-300:]))
            _, out = peers.cmd("status main_modes")
            mm1 = int(out[0]) if out and out[0].isdigit() else 0
            raw.append([m, n, rep, tot[0], mm1 - mm0, cpu[0], cpu[1], 0])
            peers.cmd("vici terminate mq")
            if peers.cmd("flush")[0] != 0:
                raise RuntimeError("maxqm %d, %d CHILD SAs: the SADBs did not empty after terminate" % (m, n))
            ctx.tick("ike maxqm %d N=%d" % (m, n))
    peers.cmd("maxqm 0")


def _loss(ctx, peers, win, p, raw):
    """0 % and 1 % loss alternate round by round; IKEv1 Main Mode and IKEv2 IKE_SA, first group."""
    g = p["groups"][0]
    for i in range(p["loss_n"]):
        for pct in (0, 1):
            peers.cmd("loss %d" % pct)
            for exch, conn in (("v1_mm", "v1-%s" % g), ("v2_ike", "v2-%s" % g)):
                row = [pct, exch, i, None, 0, 0, 0, 0]   # loss_pct exchange i ms ok deleted packets retransmits
                raw.append(row)
                rc, vals, _, out = _timed(peers, win, {"kind": "loss", "row": len(raw) - 1}, "ike %s 1" % conn, 1)
                # established (the initiate answered) and deleted again (the terminate answered): an IKEv2
                # DELETE whose reply is lost is retransmitted to a responder that already forgot the SA,
                # until the initiator gives up, longer than the terminate waits
                ok = bool(vals)
                row[3] = vals[0][1] / 1000 if vals else None
                row[4] = 1 if ok else 0
                row[5] = 1 if rc == 0 else 0
                if rc != 0:
                    ctx.log("ike loss %d %%, %s, round %d: %s" % (pct, conn, i, " ".join(
                        o for o in out if not o.startswith("ike "))[-200:]))
                if not ok:
                    peers.cmd("vici terminate %s" % conn)
        if (i + 1) % LOSS_TICK == 0 or i + 1 == p["loss_n"]:
            ctx.tick("ike loss round %d" % (i + 1))
    peers.cmd("loss 0")


NEG_COLS = ["auth", "group", "exchange", "n", "ms_median", "ms_p10", "ms_p90", "ms_min", "ms_max",
            "mcycles_init", "mcycles_resp"]
MQ_COLS = ["maxqm", "n_child", "reps", "secs", "secs_min", "secs_max", "main_modes", "main_modes_hp",
           "child_per_s", "mcycles_init_per_child", "mcycles_resp_per_child", "retransmits"]
LOSS_COLS = ["loss_pct", "exchange", "n", "failed", "ms_median", "ms_p90", "ms_p99", "ms_max",
             "retransmitted", "retransmissions", "delete_failed"]


def summarize(neg_raw, mq_raw, loss_raw, mhz):
    """The summary tables from the raw rows (run() and check() share this)."""
    by = {}
    for a, g, e, rep, i, us, ca, cb in neg_raw:
        by.setdefault((a, g, e), []).append((float(us), float(ca), float(cb)))
    order = {e: k for k, (e, _) in enumerate(EXCHANGES)}
    neg = []
    for (a, g, e) in sorted(by, key=lambda k: (list(AUTH_NAMES).index(k[0]), list(GROUP_NAMES).index(k[1]), order[k[2]])):
        v = by[(a, g, e)]
        ms = [x[0] / 1000 for x in v]
        neg.append([a, g, e, len(v), statistics.median(ms), quantile(ms, .1), quantile(ms, .9), min(ms), max(ms),
                    sum(x[1] for x in v) / len(v) * mhz / 1e9, sum(x[2] for x in v) / len(v) * mhz / 1e9])
    mq = []
    byq = {}
    for m, n, rep, us, mm, ca, cb, retr in mq_raw:
        byq.setdefault((int(m), int(n)), []).append((float(us) / 1e6, int(mm), float(ca), float(cb), int(retr)))
    for (m, n) in sorted(byq):
        v = byq[(m, n)]
        secs = statistics.median(x[0] for x in v)
        mq.append([m, n, len(v), secs, min(x[0] for x in v), max(x[0] for x in v),
                   statistics.median(x[1] for x in v), math.ceil(n / m), n / secs,
                   sum(x[2] for x in v) / len(v) / n * mhz / 1e9, sum(x[3] for x in v) / len(v) / n * mhz / 1e9,
                   sum(x[4] for x in v)])
    loss = []
    byl = {}
    for pct, e, i, ms, ok, deleted, pk, retr in loss_raw:
        byl.setdefault((int(pct), e), []).append((_num(ms), int(ok), int(retr), int(deleted)))
    for (pct, e) in sorted(byl, key=lambda k: (k[0], order[k[1]])):
        v = byl[(pct, e)]
        ms = [x[0] for x in v if x[1]]
        loss.append([pct, e, len(v), sum(1 for x in v if not x[1]),
                     statistics.median(ms) if ms else None, quantile(ms, .9), quantile(ms, .99), max(ms) if ms else None,
                     sum(1 for x in v if x[2] > 0), sum(x[2] for x in v), sum(1 for x in v if not x[3])])
    return neg, mq, loss


def _tables(ctx, neg_raw, mq_raw, loss_raw, wire_acc, mhz):
    ctx.table("ike_negotiation_raw", ["auth", "group", "exchange", "rep", "seq", "us", "cpu_ns_init", "cpu_ns_resp"],
              neg_raw, "One row per timed exchange: time from the VICI request to charon's reply (SA established "
              "and installed); CPU of initiator and responder over the request (a CHILD series' CPU shared "
              "equally among its CHILD SAs; an IKE SA's includes its deletion).")
    neg, mq, loss = summarize(neg_raw, mq_raw, loss_raw, mhz)
    ctx.table("ike_negotiation", NEG_COLS, neg,
              "Time per exchange (median, p10/p90, min/max over the interleaved repetitions) and CPU "
              "megacycles per exchange of initiator and responder, at %.0f MHz." % mhz)
    ctx.table("ike_maxqm_raw", ["maxqm", "n_child", "rep", "us", "main_modes", "cpu_ns_init", "cpu_ns_resp",
                                "retransmits"], mq_raw,
              "One row per bring-up of N CHILD SAs (IKEv1, PSK) one after the other under maxqm; "
              "requests the initiator sent again meanwhile, seen on the wire (no loss is configured).")
    ctx.table("ike_maxqm", MQ_COLS, mq,
              "Time to bring up N CHILD SAs under maxqm (IKEv1, PSK, %s): Main Modes counted by the "
              "daemon and HP's ceil(N/maxqm); CHILD SAs installed per second." % GROUP_NAMES[plan(ctx.quick)["groups"][0]])
    ctx.table("ike_loss_raw", ["loss_pct", "exchange", "i", "ms", "ok", "deleted", "packets", "retransmits"], loss_raw,
              "One row per negotiation under loss (0 % and 1 % alternating): established (ok), deleted again "
              "(deleted), packets of its exchanges seen on the initiator's interface and the requests the "
              "initiator sent again.")
    ctx.table("ike_loss", LOSS_COLS, loss,
              "Negotiation time with random loss on the responder (both directions): the tail and the "
              "retransmissions (negotiations with at least one; requests the initiator sent again); "
              "failed: not established within 20 s; delete_failed: its deletion not answered within 20 s.")
    wire = []
    order = {e: k for k, (e, _) in enumerate(EXCHANGES)}
    for (a, g, e) in sorted(wire_acc, key=lambda k: (list(AUTH_NAMES).index(k[0]), list(GROUP_NAMES).index(k[1]), order[k[2]])):
        acc = wire_acc[(a, g, e)]
        for et in sorted(acc["types"]):
            n, b = acc["types"][et]
            wire.append([a, g, e, EXCH_TYPES.get(et, str(et)), acc["ops"], n / acc["ops"], b / acc["ops"]])
    ctx.table("ike_wire", ["auth", "group", "exchange", "message_exchange", "ops", "packets_per_op", "bytes_per_op"],
              wire, "IKE packets and IP bytes (from the IP header on) per operation on the wire, by exchange type (an IKE SA's row "
              "includes its deletion, INFORMATIONAL).")


def _plots(ctx):
    plt = plotting.pyplot()
    neg = [dict(zip(NEG_COLS, r)) for r in ctx.tables["ike_negotiation"]["rows"]]
    series = list(dict.fromkeys((r["auth"], r["group"]) for r in neg))
    fig, ax = plt.subplots(figsize=(11, 5))
    width = 0.8 / max(len(series), 1)
    for k, (a, g) in enumerate(series):
        xs, ys, lo, hi = [], [], [], []
        for x, (e, _) in enumerate(EXCHANGES):
            r = [r for r in neg if (r["auth"], r["group"], r["exchange"]) == (a, g, e)]
            if r:
                xs.append(x + (k - len(series) / 2 + .5) * width)
                ys.append(r[0]["ms_median"])
                lo.append(r[0]["ms_median"] - r[0]["ms_p10"])
                hi.append(r[0]["ms_p90"] - r[0]["ms_median"])
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label="%s %s" % (AUTH_NAMES[a], GROUP_NAMES[g]))
    ax.set_xticks(range(len(EXCHANGES)))
    ax.set_xticklabels([lab.replace("IKEv2 ", "IKEv2\n").replace("IKEv1 ", "IKEv1\n").replace(", ", "\n")
                        for _, lab in EXCHANGES], fontsize=8)
    ax.set_ylabel("ms per exchange (median, p10-p90)")
    ax.set_title("SA negotiation time per exchange, DH group and authentication")
    ax.legend(fontsize=7, ncol=3)
    ctx.savefig(fig, "ike_negotiation")

    mq = [dict(zip(MQ_COLS, r)) for r in ctx.tables["ike_maxqm"]["rows"]]
    # time alone hides maxqm where the Quick Modes dominate (two lines on top of each other): the
    # Main Modes each maxqm cost are drawn next to it, against HP's ceil(N/maxqm)
    fig, (ax, axm) = plt.subplots(1, 2, figsize=(12, 5))
    styles = ["-", "--", ":", "-."]
    for k, m in enumerate(sorted({r["maxqm"] for r in mq})):
        pts = sorted((r for r in mq if r["maxqm"] == m), key=lambda r: r["n_child"])
        n = [r["n_child"] for r in pts]
        plotting.line(ax, n, [r["secs"] for r in pts], [(r["secs_min"], r["secs_max"]) for r in pts],
                      label="maxqm %d" % m, linestyle=styles[k % len(styles)])
        c = axm.plot(n, [r["main_modes"] for r in pts], marker="o", linestyle=styles[k % len(styles)],
                     label="maxqm %d, counted" % m)[0]
        axm.plot(n, [r["main_modes_hp"] for r in pts], marker="s", markerfacecolor="none", linestyle="none",
                 color=c.get_color(), label="maxqm %d, ceil(N/maxqm)" % m)
    for a in (ax, axm):
        a.set_xscale("log")
        a.set_xlabel("CHILD SAs brought up (N)")
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    ax.set_yscale("log")
    axm.set_yscale("log")
    ax.set_ylabel("seconds (median, bars min-max)")
    axm.set_ylabel("Main Modes negotiated")
    ax.set_title("Time to bring up N CHILD SAs (IKEv1)", fontsize=10)
    axm.set_title("Main Modes it took", fontsize=10)
    ctx.savefig(fig, "ike_maxqm")

    raw = ctx.tables["ike_loss_raw"]["rows"]
    fig, ax = plt.subplots(figsize=(7, 5))
    for pct in (0, 1):
        for e in ("v1_mm", "v2_ike"):
            v = sorted(r[3] for r in raw if r[0] == pct and r[1] == e and r[4])
            if v:
                c = ax.step(v, [(i + 1) / len(v) for i in range(len(v))], where="post",
                            label="%s, %d %% loss" % (EXCH_LABEL[e], pct))[0]
                # the spread the other figures show as bars: p10 and p90 marked on the curve
                ax.plot([quantile(v, .1), quantile(v, .9)], [.1, .9], linestyle="none", marker="|",
                        markersize=12, color=c.get_color())
    ax.set_xscale("log")
    ax.set_xlabel("negotiation time, ms")
    ax.set_ylabel("fraction of negotiations")
    ax.set_title("Negotiation time with random loss (CDF, p10 and p90 marked): retransmissions after %.0f s" %
                 RETRANSMIT_TIMEOUT, fontsize=9)
    ax.legend(fontsize=8)
    ctx.savefig(fig, "ike_loss")


def _get(ctx_tables, name):
    t = ctx_tables.get(name)
    return [dict(zip(t["columns"], r)) for r in t["rows"]] if t else []


def report(ctx, rep):
    neg = _get(ctx.tables, "ike_negotiation")
    mhz = ctx.meta.get("ike", {}).get("mhz", 0)
    rep.para("Two xipsec-iked in network namespaces, A initiating, B responding; every exchange timed "
             "from the VICI request to charon's reply, which comes once the SA is established and "
             "installed in the SADB. ESP proposals AES-GCM-128, IKE proposals AES-128/SHA-256 with the "
             "group shown. Repetitions interleaved. CPU cycles = the daemon's CPU time (all threads) x "
             "%.0f MHz. An IKE SA's CPU includes its deletion." % mhz)
    rep.heading("Negotiation time per exchange", 3)
    rep.table("ike_negotiation")
    rep.plot("ike_negotiation", "Median time per exchange; whiskers p10-p90.")

    def med(a, g, e):
        r = [x for x in neg if (x["auth"], x["group"], x["exchange"]) == (a, g, e)]
        return r[0]["ms_median"] if r else None
    lines = []
    for g in GROUP_NAMES:
        mm, qm, qmp = med("psk", g, "v1_mm"), med("psk", g, "v1_qm"), med("psk", g, "v1_qm_pfs")
        if mm and qm:
            lines.append("- PSK, %s: Main Mode %.2f ms, Quick Mode %.2f ms (%.2f ms with PFS): Main Mode / "
                         "Quick Mode = %.1fx (%.1fx with PFS)" % (GROUP_NAMES[g], mm, qm, qmp or 0, mm / qm,
                                                                mm / qmp if qmp else 0))
    if lines:
        rep.para("\n".join(lines) + "\n\nHP-UX A.02.00 (550 MHz PA-RISC, PSK): 0.509 s / 0.004 s = %.0fx." %
                 (HP_MM_S / HP_QM_S))
    rep.heading("maxqm: N CHILD SAs on ceil(N/maxqm) Main Modes", 3)
    rep.table("ike_maxqm")
    rep.plot("ike_maxqm", "Time to bring up N CHILD SAs one after the other, one line per maxqm.")
    rep.para("xipsec-iked renews the ISAKMP SA as soon as the m-th CHILD SA is up, so its count is "
             "floor(N/m) + 1 where N is a multiple of m (one renewal more than HP's ceil(N/m)): the "
             "bring-up time includes that last Main Mode.")
    rep.heading("Negotiation under loss", 3)
    rep.table("ike_loss")
    rep.plot("ike_loss", "Distribution of negotiation times with 0 % and 1 % random loss.")
    rep.para("charon retransmits a request after %.0f s, then after %.1f x the previous wait, %d times "
             "(%s s after the first send); a lost message costs one timeout, so the tail of the 1 %% "
             "series sits at +%.0f s while most negotiations never see a loss. Retransmissions are "
             "counted on the wire (a message seen a second time, byte for byte)." % (
                 RETRANSMIT_TIMEOUT, RETRANSMIT_BASE, RETRANSMIT_TRIES,
                 ", ".join("%.1f" % sum(RETRANSMIT_TIMEOUT * RETRANSMIT_BASE ** k for k in range(n + 1))
                           for n in range(RETRANSMIT_TRIES)), RETRANSMIT_TIMEOUT))
    mq = _get(ctx.tables, "ike_maxqm")
    if mq:
        best = max(mq, key=lambda r: (int(r["n_child"]), int(r["maxqm"])))
        rep.para("CHILD SAs installed per second (both SADBs), one after the other: %.0f/s with maxqm %d over %d "
                 "CHILD SAs (%.2f ms per CHILD SA on average, Main Modes included)." %
                 (float(best["child_per_s"]), int(best["maxqm"]), int(best["n_child"]),
                  1000 / float(best["child_per_s"])))
    retr = sum(int(r["retransmits"]) for r in mq)
    mms = sum(int(r["main_modes"]) for r in mq)
    if retr:
        rep.para("%d of the %d Main Modes of the maxqm series waited for a retransmission (%.0f s) although "
                 "no loss was configured: a reply was lost on the way or inside a daemon (its log at --debug 2 "
                 "says which: \"IKE_SA checkout not successful\" is a reply that came before its IKE SA was "
                 "registered)." % (retr, mms, RETRANSMIT_TIMEOUT))
    lossr = _get(ctx.tables, "ike_loss")
    dfail = sum(int(r["delete_failed"]) for r in lossr if int(r["loss_pct"]) > 0)
    if dfail:
        rep.para("%d deletion(s) under loss were not answered within 20 s: when the reply to an IKEv2 DELETE "
                 "is lost, the responder has already removed the SA and ignores the retransmitted request, "
                 "so the initiator retransmits until it gives up (%.0f s with charon's defaults)." %
                 (dfail, sum(RETRANSMIT_TIMEOUT * RETRANSMIT_BASE ** k for k in range(RETRANSMIT_TRIES + 1))))
    rep.heading("Bytes on the wire", 3)
    rep.table("ike_wire")
    wire = _get(ctx.tables, "ike_wire")

    def tot(a, g, e, skip_delete=True):
        v = [r for r in wire if (r["auth"], r["group"], r["exchange"]) == (a, g, e)
             and not (skip_delete and r["message_exchange"] in ("INFORMATIONAL", "Informational (v1)"))]
        return sum(float(r["bytes_per_op"]) for r in v), sum(float(r["packets_per_op"]) for r in v)
    lines = []
    for a, g in dict.fromkeys((r["auth"], r["group"]) for r in wire):
        parts = []
        for e, lab in (("v1_mm", "Main Mode"), ("v1_qm", "Quick Mode"), ("v2_ike", "IKEv2 IKE_SA"),
                       ("v2_child", "CREATE_CHILD_SA"), ("v2_child_pfs", "CREATE_CHILD_SA with PFS")):
            b, n = tot(a, g, e)
            if n:
                parts.append("%s %.0f bytes in %.0f packets" % (lab, b, n))
        lines.append("- %s, %s: %s" % (AUTH_NAMES.get(a, a), GROUP_NAMES.get(g, g), "; ".join(parts)))
    if lines:
        rep.para("Per IKE SA and per CHILD SA (IP bytes, deletions not counted):\n" + "\n".join(lines))


def compare_summaries(want, got):
    """check()'s comparison, shared with the IKE-at-scale section: each summary table as its CSV holds
    it (GOT: name -> rows of strings) against the rows recomputed from the raw tables (WANT)."""
    errs = []
    for name, w in want.items():
        g = got[name]
        if len(g) != len(w):
            errs.append("%s: %d rows, the raw rows give %d" % (name, len(g), len(w)))
            continue
        for a, b in zip(g, w):
            for x, y in zip(a, b):
                if isinstance(y, str):
                    if x != y:
                        errs.append("%s: %s where the raw rows give %s" % (name, x, y))
                elif y is None or (isinstance(y, float) and math.isnan(y)):
                    if x not in ("", "nan"):
                        errs.append("%s: %s where the raw rows give nothing" % (name, x))
                elif abs(float(x) - y) > 1e-4 * max(abs(y), 1e-9) + 1e-9:
                    errs.append("%s %s: %s, recomputed %.6g" % (name, a[:3], x, y))
    return errs


def csv_rows(run_dir, name):
    """The rows of RUN_DIR/NAME.csv as strings, its header left out (what check() reads back)."""
    import csv
    with open(os.path.join(run_dir, name + ".csv"), newline="") as f:
        r = csv.reader(f)
        next(r)
        return list(r)


def check(run_dir):
    import json
    errs = []

    def rows(name):
        return csv_rows(run_dir, name)
    try:
        meta = json.load(open(os.path.join(run_dir, "results.json")))["meta"]
        mhz = float(meta["ike"]["mhz"])
        neg_raw = [[r[0], r[1], r[2], int(r[3]), int(r[4]), float(r[5]), float(r[6]), float(r[7])]
                   for r in rows("ike_negotiation_raw")]
        mq_raw = [[int(r[0]), int(r[1]), int(r[2]), float(r[3]), int(r[4]), float(r[5]), float(r[6]), int(r[7])]
                  for r in rows("ike_maxqm_raw")]
        loss_raw = [[int(r[0]), r[1], int(r[2]), _num(r[3]), int(r[4]), int(r[5]), int(r[6]), int(r[7])]
                    for r in rows("ike_loss_raw")]
        got = {n: rows(n) for n in ("ike_negotiation", "ike_maxqm", "ike_loss")}
    except (OSError, KeyError, ValueError, IndexError) as e:
        return ["cannot read the section's tables: %s" % e]
    want = dict(zip(("ike_negotiation", "ike_maxqm", "ike_loss"), summarize(neg_raw, mq_raw, loss_raw, mhz)))
    errs += compare_summaries(want, got)
    for r in got["ike_maxqm"]:
        m, n, mm = int(r[0]), int(r[1]), float(r[6])
        if mm not in (math.ceil(n / m), n // m + 1):
            errs.append("ike_maxqm: maxqm %d, %d CHILD SAs took %g Main Modes (expected %d or %d)" %
                        (m, n, mm, math.ceil(n / m), n // m + 1))
    return errs
