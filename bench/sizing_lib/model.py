# bench/sizing_lib/model.py: the sizing study's cost model, in the MoonSec paper's form (CPU cycles =
# a + b * connections + c * packets, where a DTLS handshake cost 368 packets). It fits, by least
# squares over the dataplane section's repetitions (dataplane_stream_raw), each gateway's CPU cycles
# (cpu_us x MHz) per transform against the seconds it ran, the packets and the application bytes it
# carried: cycles = c_sec * secs + c_packet * packets + c_byte * bytes; and takes the cycles per IKE SA
# and per CHILD SA from the negotiation section (ike_negotiation). From these it prints the ratios the
# sources print: handshake / packet next to MoonSec's 368x, Main Mode / Quick Mode time next to HP-UX's
# 0.509 s / 0.004 s, ECDHE versus MODP key exchange (MoonSec: about 4x), and the ciphers' cost per byte
# (ChaCha20-Poly1305 versus AES-GCM versus AES-CBC-HMAC; MoonSec found ChaCha20 cheapest without AES
# instructions), with whether this CPU has them. check() refits from the CSVs and compares.
import csv
import math
import os

NAME = "model"
TITLE = "Cost model"

MOONSEC = {"a": 5761437, "conn": 2326558, "packet": 6323}
HP_MM_S, HP_QM_S = 0.509, 0.004
FIT_COLS = ["transform", "gateway", "n", "terms", "c_sec", "c_packet", "c_byte", "r2", "cycles_1400B"]
IKE_COLS = ["auth", "group", "what", "cycles_resp", "cycles_init"]
RATIO_COLS = ["ratio", "value", "reference", "detail"]
CIPHERS = [("esp-chacha20-poly1305", "ChaCha20-Poly1305"), ("esp-aes-gcm-128", "AES-GCM-128"),
           ("esp-aes-cbc-128-sha1", "AES-CBC-128 + HMAC-SHA1"), ("esp-aes-cbc-128-sha256", "AES-CBC-128 + HMAC-SHA256")]


def points(ctx):
    return 1


def seconds(ctx):
    return 1.0


def _f(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def fit_dataplane(raw):
    """[FIT_COLS row] per (transform, gateway) from dataplane_stream_raw rows (dicts)."""
    import numpy as np
    by = {}
    for r in raw:
        for gw in ("gw1", "gw2"):
            # a repetition that delivered nothing measured no transfer (its CPU went to lost packets)
            pt = _fitted(r, gw)
            if pt is not None:
                by.setdefault((r["transform"], gw), []).append(pt)
    out = []
    for (tr, gw) in sorted(by):
        pts = by[(tr, gw)]
        A = np.array([p[0] for p in pts], dtype=float)
        y = np.array([p[1] for p in pts], dtype=float)
        # all three terms when the points separate them, else packets and bytes, else bytes alone
        # (one send size: packets and bytes move together)
        for cols, name in (([0, 1, 2], "secs+packets+bytes"), ([1, 2], "packets+bytes"), ([2], "bytes")):
            sub = A[:, cols]
            if len(pts) >= len(cols) and np.linalg.matrix_rank(sub, tol=1e-9 * max(np.abs(sub).max(), 1)) == len(cols):
                coef, *_ = np.linalg.lstsq(sub, y, rcond=None)
                break
        else:
            continue
        c = [0.0, 0.0, 0.0]
        for k, v in zip(cols, coef):
            c[k] = float(v)
        pred = A @ np.array(c)
        ss = float(((y - y.mean()) ** 2).sum())
        r2 = 1 - float(((y - pred) ** 2).sum()) / ss if ss > 0 else 1.0
        out.append([tr, gw, len(pts), name, c[0], c[1], c[2], r2, c[1] + 1400 * c[2]])
    return out


def ike_costs(neg, mhz_unused=None):
    """[IKE_COLS row]: cycles per IKE SA and per CHILD SA from ike_negotiation rows (dicts)."""
    what = {"v2_ike": "IKEv2 IKE_SA", "v2_child": "IKEv2 CHILD_SA", "v2_child_pfs": "IKEv2 CHILD_SA, PFS",
            "v1_mm": "IKEv1 Main Mode", "v1_qm": "IKEv1 Quick Mode", "v1_qm_pfs": "IKEv1 Quick Mode, PFS"}
    out = []
    for r in neg:
        if r["exchange"] in what:
            out.append([r["auth"], r["group"], what[r["exchange"]], _f(r["mcycles_resp"]) * 1e6,
                        _f(r["mcycles_init"]) * 1e6])
    return out


def ratios(fit, neg, flags):
    """[RATIO_COLS row] from the fit rows and ike_negotiation rows (dicts)."""
    rows = []
    fitd = {(r[0], r[1]): r for r in fit}
    negd = {(r["auth"], r["group"], r["exchange"]): r for r in neg}
    aes = "aes" in (flags or [])
    # handshake / packet
    pkt_tr = next((t for t in ("esp-aes-gcm-128", "esp-aes-cbc-128-sha1", "esp-chacha20-poly1305")
                   if (t, "gw1") in fitd and fitd[(t, "gw1")][5] > 0), None)
    for g in ("ecp256", "curve25519", "modp2048"):
        ike = negd.get(("psk", g, "v2_ike"))
        if ike and pkt_tr:
            pc = fitd[(pkt_tr, "gw1")][5]
            hs = _f(ike["mcycles_resp"]) * 1e6
            rows.append(["handshake/packet (%s, %s)" % (g, pkt_tr), hs / pc, MOONSEC["conn"] / MOONSEC["packet"],
                         "IKEv2 IKE_SA (responder, PSK) %.0f cycles / %.0f cycles per packet (encrypting gateway); "
                         "MoonSec: %d / %d" % (hs, pc, MOONSEC["conn"], MOONSEC["packet"])])
        child = negd.get(("psk", g, "v2_child"))
        if child and pkt_tr:
            cc = _f(child["mcycles_resp"]) * 1e6
            rows.append(["CHILD SA/packet (%s, %s)" % (g, pkt_tr), cc / pc, None,
                         "IKEv2 CREATE_CHILD_SA without PFS (responder) %.0f cycles / %.0f cycles per packet" % (cc, pc)])
    for g in ("modp2048", "ecp256", "curve25519"):
        mm, qm = negd.get(("psk", g, "v1_mm")), negd.get(("psk", g, "v1_qm"))
        if mm and qm and _f(qm["ms_median"]) > 0:
            rows.append(["Main Mode/Quick Mode time (%s)" % g, _f(mm["ms_median"]) / _f(qm["ms_median"]),
                         HP_MM_S / HP_QM_S, "%.2f ms / %.2f ms; HP-UX A.02.00: 0.509 s / 0.004 s" %
                         (_f(mm["ms_median"]), _f(qm["ms_median"]))])
    for ec in ("ecp256", "curve25519"):
        for ex in ("v2_ike", "v1_mm"):
            m, e = negd.get(("psk", "modp2048", ex)), negd.get(("psk", ec, ex))
            if m and e and _f(e["mcycles_resp"]) > 0:
                rows.append(["MODP-2048/%s cycles (%s)" % (ec, ex), _f(m["mcycles_resp"]) / _f(e["mcycles_resp"]), 4.0,
                             "responder, PSK: %.2f / %.2f Mcycles; MoonSec: ECDHE ~4x cheaper than DHE" %
                             (_f(m["mcycles_resp"]), _f(e["mcycles_resp"]))])
    base = fitd.get(("esp-aes-gcm-128", "gw1"))
    for tr, label in CIPHERS:
        r = fitd.get((tr, "gw1"))
        if r and base and base[8] > 0 and tr != "esp-aes-gcm-128":
            rows.append(["%s/AES-GCM-128 cycles per 1400-byte packet" % label, r[8] / base[8], None,
                         "%.0f / %.0f cycles (fit: c_packet + 1400 c_byte, encrypting gateway); AES instructions %s" %
                         (r[8], base[8], "present" if aes else "absent")])
    return rows


def run(ctx):
    raw = ctx.tables.get("dataplane_stream_raw")
    raw_d = [dict(zip(raw["columns"], r)) for r in raw["rows"]] if raw else []
    fit = fit_dataplane(raw_d)
    t = ctx.tables.get("ike_negotiation")
    neg = [dict(zip(t["columns"], r)) for r in t["rows"]] if t else []
    flags = ctx.meta.get("cpu_flags", [])
    ctx.meta["model"] = {"aes_ni": "aes" in flags, "dataplane_rows": len(raw_d), "ike_rows": len(neg)}
    ctx.table("model_dataplane_fit", FIT_COLS, fit,
              "Least squares per transform and gateway (gw1 encrypts, gw2 decrypts) over dataplane_stream_raw "
              "(repetitions that delivered no bytes left out): "
              "cycles = c_sec x secs + c_packet x packets + c_byte x application bytes (fewer terms where the "
              "points do not separate them); cycles_1400B = c_packet + 1400 c_byte.", expect=1 if raw_d else 0)
    ctx.table("model_ike", IKE_COLS, ike_costs(neg),
              "CPU cycles per IKE SA and per CHILD SA, the MoonSec form's per-connection term (means over the "
              "exchanges of ike_negotiation; an IKE SA's include its deletion).", expect=1 if neg else 0)
    ctx.table("model_ratios", RATIO_COLS, ratios(fit, neg, flags),
              "The model's ratios next to the published ones (reference column: MoonSec or HP-UX).",
              expect=1 if raw_d and neg else 0)
    if fit:
        _plot(ctx, raw_d, fit)
    ctx.tick("model fit")


def _fitted(d, gw):
    """(secs, packets, bytes), cycles of one repetition for gateway GW, or None when fit_dataplane
    leaves it out (a repetition that delivered nothing, or a missing figure)."""
    cyc = _f(d.get("cpu_us_" + gw)) * _f(d.get("mhz"))
    x = (_f(d.get("secs")), _f(d.get("packets")), _f(d.get("bytes")))
    if all(math.isfinite(v) for v in x + (cyc,)) and x[2] > 0:
        return x, cyc
    return None


def _plot(ctx, raw_d, fit):
    """Measured against fitted cycles of the encrypting gateway, for the repetitions the fit used
    only; the ones it left out are counted in the title, not drawn where a fit they were not part of
    would put them."""
    from sizing_lib import plotting
    plt = plotting.pyplot()
    fig, ax = plt.subplots(figsize=(7, 6))
    lo, hi = float("inf"), 0
    left_out = 0
    for r in fit:
        tr, gw = r[0], r[1]
        if gw != "gw1":
            continue
        xs, ys = [], []
        for d in raw_d:
            if d["transform"] != tr:
                continue
            pt = _fitted(d, gw)
            if pt is None:
                left_out += 1
                continue
            (secs, packets, nbytes), y = pt
            p = r[4] * secs + r[5] * packets + r[6] * nbytes
            if y > 0 and p > 0:
                xs.append(y)
                ys.append(p)
        if xs:
            ax.scatter(xs, ys, s=12, label=tr)
            lo, hi = min(lo, min(xs), min(ys)), max(hi, max(xs), max(ys))
    left_out += sum(1 for d in raw_d if not any(r[0] == d["transform"] and r[1] == "gw1" for r in fit))
    if hi > 0:
        ax.plot([lo, hi], [lo, hi], color="grey", lw=1, label="fit = measured")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured cycles (encrypting gateway)")
    ax.set_ylabel("fitted cycles")
    ax.set_title("Cost model against the %d repetitions it was fitted to\n(%d left out of the fit: "
                 "delivered nothing; not drawn)" % (sum(1 for d in raw_d) - left_out, left_out), fontsize=10)
    ax.legend(fontsize=7)
    ctx.savefig(fig, "model_fit")


def report(ctx, rep):
    m = ctx.meta.get("model", {})
    rep.para("The MoonSec paper fits cost(c, p) = 5,761,437 + 2,326,558 c + 6,323 p CPU cycles for c "
             "connections and p packets: a handshake costs 368 packets. The same form here: per transform "
             "and gateway a fit over the dataplane's repetitions, and the cycles per IKE SA and CHILD SA of "
             "the negotiation section. AES instructions on this CPU: **%s**." % ("yes" if m.get("aes_ni") else "no"))
    rep.para("c_sec is what a gateway spends per second of the run whatever it carries (waiting for "
             "packets, timers); c_packet and c_byte are the MoonSec form's per-packet term, split into a part "
             "per packet and a part per byte. The bypass rows are the forwarding path without cryptography: "
             "a transform's cost above them is its cryptography's.")
    if not m.get("dataplane_rows"):
        rep.para("No dataplane measurements in this run: the per-packet and per-byte terms are absent.")
    rep.table("model_dataplane_fit")
    if "model_fit" in getattr(ctx, "plots", {}):
        rep.plot("model_fit", "Each repetition the fit used: its measured cycles against the fit's; the "
                 "repetitions the fit left out (nothing delivered) are counted in the title, not drawn.")
    rep.table("model_ike")
    rep.table("model_ratios")


def _csv(run_dir, name):
    p = os.path.join(str(run_dir), name + ".csv")
    if not os.path.exists(p):
        return None
    with open(p, newline="") as f:
        rd = csv.reader(f)
        cols = next(rd)
        return [dict(zip(cols, r)) for r in rd]


def check(run_dir):
    import json
    errs = []
    meta = json.load(open(os.path.join(str(run_dir), "results.json"))).get("meta", {})
    raw = _csv(run_dir, "dataplane_stream_raw") or []
    neg = _csv(run_dir, "ike_negotiation") or []
    want = {"model_dataplane_fit": fit_dataplane(raw), "model_ike": ike_costs(neg),
            "model_ratios": ratios(fit_dataplane(raw), neg, meta.get("cpu_flags", []))}
    for name, w in want.items():
        got = _csv(run_dir, name)
        if got is None:
            errs.append("%s.csv missing" % name)
            continue
        if len(got) != len(w):
            errs.append("%s: %d rows, recomputed %d" % (name, len(got), len(w)))
            continue
        for g, r in zip(got, w):
            for k, y in zip(g, r):
                x = g[k]
                if isinstance(y, str):
                    if x != y:
                        errs.append("%s: %s where the fit gives %s" % (name, x, y))
                elif y is None:
                    if x != "":
                        errs.append("%s: %s where the fit gives nothing" % (name, x))
                elif not abs(_f(x) - y) <= 1e-3 * abs(y) + 1e-6:
                    errs.append("%s %s %s: %s, recomputed %.6g" % (name, list(g.values())[0], k, x, y))
    return errs
