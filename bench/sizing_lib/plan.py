# bench/sizing_lib/plan.py: `bench/sizing plan`, the sizing calculator. From a measured run directory
# (results.json: the dataplane section's service demand per transform and send size, the negotiation
# section's cycles per IKE SA and CHILD SA) it follows the HP-UX IPSec sizing paper's "Applying
# Performance Data" steps for a forecast environment: the throughput to carry, its packet-size mix,
# the number of tunnels and the set-up rate give the CPU seconds per second (service demand at each
# size interpolated between the measured sizes, times the data rate; plus the IKE load), which the
# headroom turns into cores, and the ESP overhead per packet turns into the NIC bandwidth needed. Every
# CPU figure carries the spread of the repetitions it comes from (the fastest and slowest repetition
# give the low and high end), the packet rate is checked against the measured loss-free rates (with
# the measured scaling from 1 to 2 workers: one SA's from the lossfree section, or, for a tunnel count
# nearer the scale section's many tunnels than one, the scaling it measured over them; and what beyond
# 2 workers is extrapolated; and the rate the gateways carry over that many tunnels, from the scale
# section's floods: tunnel_factor). The CPU of step 3 adds what grows with the tunnels, from the scale
# section's lines of CPU against the packet rate: the cost of a packet over N tunnels beyond one
# tunnel's, and what each worker spends every second whatever the rate (tunnel_cost). Mobile IPv6 nodes
# add their Binding Update refreshes, and IPv6 outer headers and NAT-T add their bytes. It prints its
# arithmetic step by step, so that an operator can check (and redo) every figure; errors name what is
# wrong with the input.
import argparse
import json
import math
import os
import re
import sys

# ESP/AH overhead per packet, tunnel mode (RFC 4303 / RFC 4302): IV, cipher block for the padding,
# ICV; outer IPv4 header 20, ESP header 8 (SPI, sequence number), trailer 2 (pad length, next header).
TRANSFORM_OVERHEAD = {   # id: (protocol, IV, block, ICV)
    "bypass": (None, 0, 1, 0),
    "esp-aes-cbc-128-sha1": ("esp", 16, 16, 12),
    "esp-aes-cbc-128-sha256": ("esp", 16, 16, 16),
    "esp-3des-sha1": ("esp", 8, 8, 12),
    "esp-aes-gcm-128": ("esp", 8, 4, 16),
    "esp-aes-gcm-256": ("esp", 8, 4, 16),
    "esp-chacha20-poly1305": ("esp", 8, 4, 16),
    "esp-null-sha1": ("esp", 0, 4, 12),
    "esp-aes-cbc-128": ("esp", 16, 16, 0),
    "ah-md5": ("ah", 0, 1, 12),
    "ah-sha1": ("ah", 0, 1, 12),
}
INNER_HDR = 28     # IPv4 + UDP header of the inner packet around one send's application bytes
IPV6_EXTRA = 20    # an outer IPv6 header (40) instead of IPv4's (20)
NATT_EXTRA = 8     # RFC 3948: the UDP header (port 4500) in front of ESP
L2 = 38            # Ethernet header + FCS (18) + preamble and inter-frame gap (20): what the link carries
DEFAULT_MIX = "1400:100"


class PlanError(Exception):
    pass


def parse_rate(s, what):
    """bits per second from '2G', '500M', '1.5Gbit/s', '100000' (bit/s)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)(?:bit/s|bit|bps|b)?\s*", s)
    if not m:
        raise PlanError("%s '%s': not a rate (examples: 2G, 500M, 1.5Gbit/s, 100000 for bit/s)" % (what, s))
    v = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[m.group(2).lower()]
    if v <= 0:
        raise PlanError("%s '%s': must be more than 0" % (what, s))
    return v


def parse_mix(s):
    """[(size bytes, share of packets %)] from 'SIZE:SHARE,...'; the shares must sum to 100."""
    out = []
    for item in s.split(","):
        m = re.fullmatch(r"\s*([0-9]+)\s*:\s*([0-9]*\.?[0-9]+)\s*%?\s*", item)
        if not m:
            raise PlanError("--mix: '%s' is not SIZE:SHARE (bytes of application data per packet : %% of the "
                            "packets), e.g. 64:40,576:20,1400:40" % item)
        size, share = int(m.group(1)), float(m.group(2))
        if size <= 0:
            raise PlanError("--mix: size %d must be at least 1 byte" % size)
        out.append((size, share))
    total = sum(s for _, s in out)
    if abs(total - 100) > 1e-6:
        raise PlanError("--mix: the shares sum to %g %%, not 100 %% (%s)" % (total, s))
    return out


def load(run_dir):
    p = os.path.join(run_dir, "results.json")
    if not os.path.isdir(run_dir):
        raise PlanError("%s: no such run directory" % run_dir)
    try:
        with open(p, encoding="utf-8") as f:
            j = json.load(f)
    except FileNotFoundError:
        raise PlanError("%s: no results.json (not a bench/sizing run directory)" % run_dir)
    except ValueError as e:
        raise PlanError("%s: not valid JSON: %s" % (p, e))
    tables = j.get("tables", {})
    if "dataplane_stream" not in tables:
        raise PlanError("%s: no dataplane_stream table (the run did not measure the dataplane: run bench/sizing "
                        "without --only, or with --only dataplane)" % p)
    return j.get("meta", {}), tables


def rows(tables, name):
    t = tables.get(name)
    return [dict(zip(t["columns"], r)) for r in t["rows"]] if t else []


def interp(points, x, what="size"):
    """Linear interpolation in log(x) between measured (x, value) points; (value, note). WHAT: what x
    is, for the note (a size, a tunnel count)."""
    pts = sorted(points)
    if x <= pts[0][0]:
        return pts[0][1], ("below the smallest measured %s %d: its value" % (what, pts[0][0])) if x < pts[0][0] \
            else "measured"
    if x >= pts[-1][0]:
        return pts[-1][1], ("above the largest measured %s %d: its value" % (what, pts[-1][0])) if x > pts[-1][0] \
            else "measured"
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1:
            if x == x0:
                return y0, "measured"
            if x == x1:
                return y1, "measured"
            t = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return y0 + t * (y1 - y0), "between %d (%.3f) and %d (%.3f)" % (x0, y0, x1, y1)
    raise AssertionError("unreachable")


def wire_bytes(transform, size, mtu, extra=0):
    """(packets, bytes on the link) of one send of SIZE application bytes through TRANSFORM; EXTRA:
    bytes every protected packet carries beyond the IPv4 outer header (IPv6, NAT-T)."""
    proto, iv, block, icv = TRANSFORM_OVERHEAD.get(transform, ("esp", 16, 16, 16))

    def outer(inner):
        if proto is None:
            return inner
        if proto == "ah":
            return 20 + extra + 12 + icv + inner
        body = inner + 2
        body += (-body) % block
        return 20 + extra + 8 + iv + body + icv
    # the largest inner packet whose encapsulation fits the MTU; larger sends leave as several
    inner_max = mtu
    while inner_max > INNER_HDR + 1 and outer(inner_max) > mtu:
        inner_max -= 1
    per = inner_max - INNER_HDR
    n = max(1, math.ceil(size / per))
    total, left = 0, size
    for _ in range(n):
        chunk = min(left, per)
        left -= chunk
        total += outer(chunk + INNER_HDR) + L2
    return n, total


def fmt_rate(bps):
    for unit, f in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= f:
            return "%.3f %s" % (bps / f, unit)
    return "%.0f bit/s" % bps


def main(argv):
    ap = argparse.ArgumentParser(prog="bench/sizing plan", description=(
        "The sizing calculator: from a bench/sizing run's measured service demand and cost model, the "
        "cores and NIC bandwidth a gateway needs (the HP-UX IPSec sizing paper's 'Applying Performance "
        "Data' steps), with the arithmetic printed step by step."))
    ap.add_argument("run_dir", metavar="RUN_DIR", help="a bench/sizing run directory (results.json)")
    ap.add_argument("--throughput", required=True, metavar="RATE",
                    help="application data per second to encrypt (e.g. 2G, 500M, 1.5Gbit/s)")
    ap.add_argument("--transform", required=True, metavar="ID", help="transform id, e.g. esp-aes-gcm-128")
    ap.add_argument("--mix", default=DEFAULT_MIX, metavar="SIZE:SHARE,...",
                    help="application bytes per packet and %% of the packets (default " + DEFAULT_MIX + ")")
    ap.add_argument("--tunnels", type=int, default=0, metavar="N",
                    help="tunnels (one IKE SA and one CHILD SA each), rekeyed every --child-rekey / --ike-rekey s")
    ap.add_argument("--setups-per-s", type=float, default=0.0, metavar="R", help="new IKE SAs per second")
    ap.add_argument("--headroom", type=float, default=0.7, metavar="U",
                    help="highest CPU utilisation to plan for, 0 < U <= 1 (default 0.7)")
    ap.add_argument("--nic", metavar="RATE", help="line rate of one NIC (e.g. 10G)")
    ap.add_argument("--direction", choices=("encrypt", "both"), default="both",
                    help="both: RATE leaves encrypted and as much arrives encrypted (default); encrypt: one way")
    ap.add_argument("--ipv6", action="store_true", help="tunnels with IPv6 outer headers (20 bytes more each)")
    ap.add_argument("--nat-t", action="store_true", help="ESP in UDP (RFC 3948, 8 bytes more per packet)")
    ap.add_argument("--mip6-nodes", type=int, default=0, metavar="N", help="Mobile IPv6 nodes the home agent serves")
    ap.add_argument("--mip6-refresh", type=float, default=300, metavar="S",
                    help="seconds between a mobile node's Binding Updates (default 300)")
    ap.add_argument("--test", choices=("udp_stream", "tcp_stream"), default=None,
                    help="which measurement's service demand (default udp_stream if measured, else tcp_stream)")
    ap.add_argument("--workers", type=int, default=1, help="measured with this many xipsecd workers (default 1)")
    ap.add_argument("--group", default=None, help="DH group of the IKE costs (default ecp256 if measured)")
    ap.add_argument("--child-rekey", type=float, default=3600, metavar="S", help="CHILD SA rekey interval (3600)")
    ap.add_argument("--ike-rekey", type=float, default=14400, metavar="S", help="IKE SA rekey interval (14400)")
    ap.add_argument("--mtu", type=int, default=1500, help="link MTU (default 1500)")
    ap.add_argument("--mhz", type=float, default=None, help="clock of the target CPU (default: the measured one)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    try:
        plan(args, sys.stdout)
    except PlanError as e:
        sys.stderr.write("sizing plan: %s\n" % e)
        return 2
    return 0


def size_class(mean_app):
    """The loss-free measurement nearest a mix's mean packet (application bytes + inner IP/UDP)."""
    ip = mean_app + INNER_HDR
    return "64" if ip < 150 else ("imix" if ip < 900 else "1400")


def worker_capacity(lossfree_rows, transform, cls, workers):
    """Step 7's model of the packet rate WORKERS workers carry at size class CLS (64, imix, 1400) for
    TRANSFORM, as xipsecd chooses its crypto: the loss-free rate measured at that worker count, or one
    worker's times the workers at the measured 2-worker efficiency (linearly where that was not
    measured). The tunnel count is not in it. (pps, how it was found), or None without one worker's rate."""
    by_w = {int(r["workers"]): float(r["lossfree_pps"]) for r in lossfree_rows if r["transform"] == transform and
            r["size"] == cls and r["bound"] != "none" and r.get("crypto", "auto") == "auto"}
    if 1 not in by_w:
        return None
    if workers in by_w:
        return by_w[workers], "measured at %d worker(s)" % workers
    if 2 in by_w:
        eff = by_w[2] / (2 * by_w[1])
        return by_w[1] * workers * eff, "one worker's x %d at the 2-worker efficiency %.2f" % (workers, eff)
    return by_w[1] * workers, "one worker's x %d (scaling not measured: linear)" % workers


FLOOD_TRANSFORM = "esp-aes-gcm-128"   # the scale section's tunnels (its floods and paced trials)


def tunnel_factor(fwd_rows, lossfree_rows, tunnels):
    """(factor, note): what one tunnel's loss-free packet rate is multiplied by for TUNNELS tunnels.
    The rate the gateways carry over N tunnels is the scale section's 1-worker floods' delivered rate
    (64 B, FLOOD_TRANSFORM; log-interpolated between the counts flooded, the largest one's beyond
    them): under overload the pair passes what its slower gateway can, and that falls with N as each
    packet's SA, key schedule and counters leave the caches, for the decrypting gateway more than for
    the encrypting one. Over one tunnel the floods do not show it: all packets are one flow, and the
    decrypting gateway passes a small part of a flood over one SA, far below its loss-free rate. So
    the curve starts at the lossfree section's 64-byte rate over one tunnel, and the factor is the
    curve at TUNNELS over it. None without that rate or a flood over more than one tunnel."""
    one = [float(r["lossfree_pps"]) for r in lossfree_rows if r["transform"] == FLOOD_TRANSFORM and
           r["size"] == "64" and int(r["workers"]) == 1 and r["bound"] != "none" and
           r.get("crypto", "auto") == "auto" and float(r["lossfree_pps"]) > 0]
    pts = [(int(r["n"]), float(r["pps"])) for r in fwd_rows if int(r["workers"]) == 1 and int(r["n"]) > 1 and
           r.get("pps") not in (None, "") and float(r["pps"]) > 0]
    if not one or not pts:
        return None
    if tunnels <= 1:
        return 1.0, "1 tunnel: as measured"
    pps, how = interp([(1, one[0])] + pts, tunnels, "tunnel count")
    return pps / one[0], "x %.2f for %s tunnels (the rate the gateways carry over them, 64 B: %.0f pps over one " \
        "tunnel loss-free, %.0f pps here: %s)" % (pps / one[0], "{:,}".format(tunnels), one[0], pps, how)


# the mean IP bytes of the loss-free size classes (bench/fwd-gen's IMIX: 64, 576, 1400 B as 7:4:1)
CLASS_BYTES = {"64": 64.0, "imix": (7 * 64 + 4 * 576 + 1400) / 12.0, "1400": 1400.0}


def cost_lines(cost_rows, workers=1, size=64, gw=1):
    """{N: (ns per packet, ns per second)}: a gateway's lines of CPU against the packet rate (the scale
    section's scale_cost) with WORKERS workers and SIZE-byte packets; GW 1: the encrypting one, 2:
    the decrypting one."""
    a, b = "ns_per_pkt_gw%d" % gw, "ms_per_s_gw%d" % gw
    return {int(r["n"]): (float(r[a]), float(r[b]) * 1e6) for r in cost_rows
            if int(r["workers"]) == workers and int(r.get("size") or 64) == size and
            r.get(a) not in (None, "") and r.get(b) not in (None, "")}


def _line_at(lines, tunnels):
    """(ns per packet, ns per second, note) of LINES ({N: line}) at TUNNELS, log-interpolated between
    the counts measured (the nearest one's beyond them)."""
    a, how = interp([(n, v[0]) for n, v in lines.items()], tunnels, "tunnel count")
    b, _ = interp([(n, v[1]) for n, v in lines.items()], tunnels, "tunnel count")
    return a, b, how


def size_surcharge(cost_rows, tunnels, ip_bytes, gw=1):
    """(extra ns, note): what a packet of IP_BYTES costs gateway GW (cost_lines) beyond a 64-byte one
    over TUNNELS tunnels: the 1400-byte lines' cost of a packet less the 64-byte lines' at the counts
    measured with both (one worker), log-interpolated in the tunnels, linear in the bytes. It grows
    with the tunnels: the larger packets' buffers push more of the SAs' state out of the caches. None
    where no count has both."""
    big, small = cost_lines(cost_rows, 1, 1400, gw), cost_lines(cost_rows, 1, 64, gw)
    both = [(n, big[n][0] - small[n][0]) for n in big if n in small]
    if not both:
        return None
    d, how = interp(both, tunnels, "tunnel count")
    f = (ip_bytes - 64) / (1400 - 64)
    return f * d, "%+.0f ns for %.0f-byte packets (1400 B over 64 B, %.0f ns, x %.2f: %s)" % (
        f * d, ip_bytes, d, f, how)


def tunnel_cost(cost_rows, tunnels, ip_bytes=64, gw=1):
    """(extra ns per packet, extra ns per second, note) over TUNNELS tunnels with one worker beyond over
    the fewest tunnels measured (one: what step 2's service demand was measured over), from gateway
    GW's lines of scale_cost (1 encrypting, 2 decrypting): what a packet of IP_BYTES costs more (each
    packet's SA, its key schedule and counters are one more set of cache lines once the tunnels outgrow
    the caches; larger packets push more of them out), and what a worker spends more each second
    whatever the rate. A term the lines put below one tunnel's is noise between fits, and the plan
    takes no credit for it: 0. None without two counts."""
    lines = cost_lines(cost_rows, gw=gw)
    if len(lines) < 2:
        return None
    n0 = min(lines)
    a, b, how = _line_at(lines, tunnels)
    pkt, sec = a - lines[n0][0], b - lines[n0][1]
    note = "%+.0f ns per packet and %+.1f ms per second over %d tunnel(s) (the 64-byte lines of CPU against the " \
        "rate: %.0f ns per packet + %.1f ms per second over %d tunnel(s), %.0f ns + %.1f ms here: %s)" % (
            pkt, sec / 1e6, n0, lines[n0][0], lines[n0][1] / 1e6, n0, a, b / 1e6, how)
    s1, s0 = size_surcharge(cost_rows, tunnels, ip_bytes, gw), size_surcharge(cost_rows, n0, ip_bytes, gw)
    if ip_bytes > 64 and s1 and s0 and s1[0] != s0[0]:
        pkt += s1[0] - s0[0]
        note += "; %+.0f ns for %.0f-byte packets over them beyond over %d (%s)" % (s1[0] - s0[0], ip_bytes, n0,
                                                                                   s1[1])
    for v, what in ((pkt, "packet"), (sec, "second")):
        if v < 0:
            note += "; the cost of a %s below one tunnel's: taken as 0" % what
    return max(pkt, 0.0), max(sec, 0.0), note


def ns_per_packet(cost_rows, cls, workers, tunnels, rate):
    """The CPU model: the encrypting gateway's CPU ns per packet of FLOOD_TRANSFORM at size class CLS
    with WORKERS workers over TUNNELS tunnels at RATE packets per second. A gateway's CPU per second is
    a line in its packet rate (scale_cost): a cost per packet and a cost per second (the wake-ups a
    low rate pays for with a few packets each, the timers), so the CPU per packet falls as the rate
    rises: the 64-byte lines with WORKERS workers at TUNNELS (log-interpolated between the counts
    measured), their cost of a second spread over RATE, plus what a packet of CLS's mean size costs
    more than a 64-byte one over that many tunnels (size_surcharge). (ns, how it was found), or None."""
    lines, how = cost_lines(cost_rows, workers), ""
    if not lines:
        one = cost_lines(cost_rows)
        if not one:
            return None
        lines = {n: (a, b * workers) for n, (a, b) in one.items()}
        how = " (%d workers not measured: one worker's lines, each worker's cost of a second)" % workers
    if rate <= 0:
        return None
    a, b, where = _line_at(lines, tunnels)
    how = "%.0f ns per packet + %.1f ms per second, the 64-byte lines with %d worker(s) over %s tunnels%s (%s)" % (
        a, b / 1e6, workers, "{:,}".format(tunnels), how, where)
    extra = 0.0
    if cls != "64":
        sc = size_surcharge(cost_rows, tunnels, CLASS_BYTES[cls])
        if sc is None:
            return None
        extra, how = sc[0], how + "; " + sc[1]
    ns = a + extra + b / rate
    return ns, how + "; at %.0f pps: %.0f + %.0f + %.1f ms / %.0f = %.0f ns" % (rate, a, extra, b / 1e6, rate, ns)


def many_sa_efficiency(tables, tunnels):
    """(N, efficiency) of the scale section's 2-worker forwarding over N tunnels for a plan of TUNNELS
    tunnels, or None: the measured N nearest TUNNELS on a log scale, used when TUNNELS is nearer it
    than one tunnel (at least its square root), since a handful of tunnels scales as one SA does."""
    wk = [r for r in rows(tables, "scale_workers") if r.get("efficiency") not in (None, "")]
    if not wk or tunnels < 1:
        return None
    r = min(wk, key=lambda r: abs(math.log(tunnels) - math.log(float(r["n"]))))
    if math.log(tunnels) < math.log(float(r["n"])) / 2:
        return None
    return int(r["n"]), float(r["efficiency"])


def packet_step(p, tables, args, pps, avg):
    """Step 7: the packet rate against the measured loss-free rates; the worker count it needs (a
    sentence for the result line, or None without loss-free measurements)."""
    p("Step 7. Packet rate against the loss-free rates (RFC 2544, < 0.1 % loss)")
    # xipsecd's own choice of crypto backend (the OpenSSL rows are the study's comparison)
    lf = [r for r in rows(tables, "lossfree") if r["transform"] == args.transform and r["bound"] != "none" and
          r.get("crypto", "auto") == "auto"]
    if not lf:
        p("  not measured for %s in this run (no lossfree rows): the packet rate is not checked" % args.transform)
        return None
    cls = size_class(avg)
    by_w = {int(r["workers"]): r for r in lf if r["size"] == cls}
    if 1 not in by_w:
        p("  no 1-worker loss-free rate for %s at %s in this run" % (args.transform, cls))
        return None
    one = float(by_w[1]["lossfree_pps"])
    p("  packets per second through the gateway: %.0f (with both directions, the packets it encrypts and those it "
      "decrypts, against a loss-free rate measured one way)" % pps)
    p("  nearest measured packet size: %s (mean packet %.0f bytes + %d inner headers); 1 worker: %.0f pps loss-free "
      "(repetitions %.0f-%.0f%s)" % (cls, avg, INNER_HDR, one, float(by_w[1]["lossfree_pps_min"]),
                                      float(by_w[1]["lossfree_pps_max"]),
                                      ", a lower bound: the generator's limit" if by_w[1]["bound"] == "generator" else ""))
    eff = None
    if 2 in by_w:
        eff = float(by_w[2]["lossfree_pps"]) / (2 * one)
        p("  2 workers: %.0f pps measured, %.2f of twice one worker's" % (float(by_w[2]["lossfree_pps"]), eff))
    many = many_sa_efficiency(tables, args.tunnels)
    if many:
        p("  2 workers over %s tunnels (the scale section's 64-byte flood): %.2f of twice one worker's; used for "
          "the %s tunnels planned instead of %s" % ("{:,}".format(many[0]), many[1], "{:,}".format(args.tunnels),
                                                  "one SA's %.2f" % eff if eff is not None else "linear scaling"))
        eff = many[1]
    elif rows(tables, "scale_workers") and eff is not None and args.tunnels > 0:
        p("  (%s tunnels planned: nearer one SA than the scale section's 2-worker tunnels, one SA's efficiency "
          "is used)" % "{:,}".format(args.tunnels))
    tf = tunnel_factor(rows(tables, "scale_fwd"), rows(tables, "lossfree"), args.tunnels)
    if tf and tf[0] != 1.0:
        one *= tf[0]
        p("  over %s tunnels the gateways carry another rate than over one: %s; 1 worker: %.0f pps" % (
            "{:,}".format(args.tunnels), tf[1], one))
    elif not tf:
        p("  the tunnel count is not in this step (no flood over many tunnels, or no 64-byte loss-free rate of %s, "
          "in this run)" % FLOOD_TRANSFORM)
    need = pps / (one * args.headroom)
    if need <= 1:
        p("  %.0f / (%.0f x %.2f headroom) = %.2f of one worker: 1 worker" % (pps, one, args.headroom, need))
        return "1 worker (measured)"
    if eff is None:
        w = math.ceil(need - 1e-9)
        p("  %.2f workers at one worker's rate; scaling beyond 1 worker was not measured in this run: %d workers "
          "assumes linear scaling (extrapolated)" % (need, w))
        return "%d workers, extrapolated linearly (scaling not measured)" % w
    w = math.ceil(need / eff - 1e-9)
    p("  %.2f workers at one worker's rate / %.2f measured efficiency%s = %d workers%s" % (
        need, eff, " (many SAs)" if many else "", w,
        "" if w <= 2 else " (beyond the 2 measured: extrapolated at the 2-worker efficiency)"))
    return "%d worker(s)%s%s" % (w, " (measured)" if w <= 2 else ", extrapolated beyond the 2 measured",
                                 ", at the many-SA efficiency" if many else "")


def memory_step(p, tables, args):
    """Step 8: memory for the tunnels from the scale section's bytes per tunnel (SADB and xipsecd); the
    megabytes, or None when the run did not measure them."""
    p("Step 8. Memory for the tunnels")
    per = {r["per"]: r for r in rows(tables, "scale_memory")}
    if "tunnel" not in per:
        p("  not measured in this run (no scale_memory table): memory is not predicted")
        return None
    t = per["tunnel"]
    sadb, dp = float(t["sadb_bytes"]) * args.tunnels, float(t["xipsecd_bytes"]) * args.tunnels
    p("  %d tunnels x (%.0f bytes of SADB + %.0f bytes of xipsecd) = %.1f MB + %.1f MB" % (
        args.tunnels, float(t["sadb_bytes"]), float(t["xipsecd_bytes"]), sadb / 2 ** 20, dp / 2 ** 20))
    if args.mip6_nodes and "binding" in per:
        b = per["binding"]
        bs, bd = float(b["sadb_bytes"]) * args.mip6_nodes, float(b["xipsecd_bytes"]) * args.mip6_nodes
        p("  %d Mobile IPv6 bindings x (%.0f bytes of SADB + %.0f bytes of xipsecd: the home agent's state and "
          "2 transport SAs) = %.1f MB + %.1f MB" % (args.mip6_nodes, float(b["sadb_bytes"]), float(b["xipsecd_bytes"]),
                                                   bs / 2 ** 20, bd / 2 ** 20))
        sadb, dp = sadb + bs, dp + bd
    elif args.mip6_nodes:
        p("  Mobile IPv6 bindings: memory per binding not measured in this run; not included")
    return (sadb + dp) / 2 ** 20


def plan(args, out):
    def p(s=""):
        out.write(s + "\n")
    if not 0 < args.headroom <= 1:
        raise PlanError("--headroom %g: must be more than 0 and at most 1 (a utilisation, e.g. 0.7)" % args.headroom)
    if args.tunnels < 0 or args.setups_per_s < 0 or args.mip6_nodes < 0:
        raise PlanError("--tunnels, --setups-per-s and --mip6-nodes must not be negative")
    if args.mip6_refresh <= 0:
        raise PlanError("--mip6-refresh %g: must be more than 0 seconds" % args.mip6_refresh)
    if args.nat_t and TRANSFORM_OVERHEAD.get(args.transform, ("esp",))[0] == "ah":
        raise PlanError("--nat-t: AH cannot cross NAT (it authenticates the outer addresses); use ESP")
    rate = parse_rate(args.throughput, "--throughput")
    mix = parse_mix(args.mix)
    nic = parse_rate(args.nic, "--nic") if args.nic else None
    meta, tables = load(args.run_dir)
    stream = rows(tables, "dataplane_stream")
    known = sorted({r["transform"] for r in stream})
    if args.transform not in known:
        raise PlanError("transform '%s' was not measured in %s; measured: %s" %
                        (args.transform, args.run_dir, ", ".join(known)))
    tests = sorted({r["test"] for r in stream if r["transform"] == args.transform})
    test = args.test or ("udp_stream" if "udp_stream" in tests else tests[0])
    sel = [r for r in stream if r["transform"] == args.transform and r["test"] == test
           and int(r["workers"]) == args.workers and r.get("sd_gw1") not in (None, "")]
    if not sel:
        raise PlanError("no %s measurement of %s with %d worker(s) in %s (measured: %s)" % (
            test, args.transform, args.workers, args.run_dir,
            ", ".join(sorted({"%s/%s workers" % (r["test"], r["workers"]) for r in stream
                              if r["transform"] == args.transform}))))
    mhz_meas = float(meta.get("mhz") or meta.get("ike", {}).get("mhz") or 0)
    scale = 1.0
    p("Sizing plan from %s" % args.run_dir)
    p("  measured on: %s, %s MHz, %s CPUs" % (meta.get("cpu_model", "?"), "%.0f" % mhz_meas if mhz_meas else "?",
                                             meta.get("ncpus", "?")))
    if args.mhz:
        if not mhz_meas:
            raise PlanError("--mhz: the run does not record its CPU clock (meta mhz)")
        scale = mhz_meas / args.mhz
        p("  target CPU at %.0f MHz: service demand and cycles scaled by %.0f/%.0f = %.3f" %
          (args.mhz, mhz_meas, args.mhz, scale))
    p("")
    p("Step 1. The environment to size for")
    p("  throughput: %s of application data, %s" % (fmt_rate(rate),
                                                   "encrypted" if args.direction == "encrypt" else "encrypted and as much decrypted"))
    p("  transform: %s; packet mix (application bytes per packet : share of packets): %s" %
      (args.transform, ", ".join("%d:%g%%" % m for m in mix)))
    p("  tunnels: %d; new IKE SAs per second: %g; headroom: plan for at most %.0f %% CPU" %
      (args.tunnels, args.setups_per_s, args.headroom * 100))
    extra = (IPV6_EXTRA if args.ipv6 else 0) + (NATT_EXTRA if args.nat_t else 0)
    p("  outer headers: %s%s (%d bytes per packet beyond IPv4's)" % (
        "IPv6" if args.ipv6 else "IPv4", ", NAT-T (ESP in UDP)" if args.nat_t else "", extra))
    if args.mip6_nodes:
        p("  Mobile IPv6: %d mobile nodes, a Binding Update each every %g s" % (args.mip6_nodes, args.mip6_refresh))
    avg = sum(s * sh / 100 for s, sh in mix)
    p("  mean packet: %s = %.1f bytes" % (" + ".join("%d x %g%%" % (s, sh) for s, sh in mix), avg))
    p("")
    p("Step 2. Service demand at each size (%s, %d worker(s); microseconds of CPU per KB = 1024 bytes)" %
      (test, args.workers))
    gws = [("gw1", "encrypting")] + ([("gw2", "decrypting")] if args.direction == "both" else [])
    meas = {gw: [(int(r["send_size"]), float(r["sd_" + gw])) for r in sel
                 if r.get("sd_" + gw) not in (None, "") and float(r["sd_" + gw]) > 0] for gw, _ in gws}
    empty = sorted({int(r["send_size"]) for r in sel} - {s for s, _ in meas["gw1"]})
    if not meas["gw1"]:
        raise PlanError("%s: no %s measurement of %s delivered any data" % (args.run_dir, test, args.transform))
    p("  measured sizes: %s" % ", ".join(str(s) for s, _ in sorted(meas["gw1"])))
    if empty:
        p("  left out (no data delivered, no service demand): %s" % ", ".join(str(s) for s in empty))
    raw = [r for r in rows(tables, "dataplane_stream_raw") if r["transform"] == args.transform and
           r["test"] == test and int(r["workers"]) == args.workers and float(r["bytes"]) > 0]
    sd, spread = {}, {}
    for size, share in mix:
        for gw, role in gws:
            v, note = interp(meas[gw], size)
            sd[(size, gw)] = v * scale
            # the fastest and the slowest repetition at each measured size, interpolated the same way
            per = {}
            for r in raw:
                per.setdefault(int(r["send_size"]), []).append(float(r["cpu_us_" + gw]) / (float(r["bytes"]) / 1024))
            lo = interp([(k, min(x)) for k, x in per.items()], size)[0] if per else v
            hi = interp([(k, max(x)) for k, x in per.items()], size)[0] if per else v
            spread[(size, gw)] = (min(lo, v) * scale, max(hi, v) * scale)
            p("  %5d bytes, %s gateway: %.3f us/KB (%s%s)%s" % (
                size, role, v, note, "; repetitions %.3f-%.3f" % (min(lo, v), max(hi, v)) if per else "",
                "" if scale == 1 else " -> %.3f scaled" % (v * scale)))
    p("")
    p("Step 3. CPU seconds per second for the data")
    Bps = rate / 8
    p("  %s = %.0f bytes/s = %.1f KB/s" % (fmt_rate(rate), Bps, Bps / 1024))
    cpu_data, data_lo, data_hi = 0.0, 0.0, 0.0
    for size, share in mix:
        frac = size * share / 100 / avg
        for gw, role in gws:
            c = Bps * frac / 1024 * sd[(size, gw)] / 1e6
            cpu_data += c
            data_lo += Bps * frac / 1024 * spread[(size, gw)][0] / 1e6
            data_hi += Bps * frac / 1024 * spread[(size, gw)][1] / 1e6
            p("  %5d bytes (%.1f %% of the bytes), %s: %.1f KB/s x %.3f us/KB = %.4f CPU s/s" %
              (size, frac * 100, role, Bps * frac / 1024, sd[(size, gw)], c))
    # what grows with the tunnels (step 2's service demand is one tunnel's, at a high rate): the cost of
    # a packet, and what each worker spends every second whatever the rate
    grow = [(gw, role, tunnel_cost(rows(tables, "scale_cost"), args.tunnels, avg + INNER_HDR, int(gw[-1])))
            for gw, role in gws] if args.tunnels > 1 else []
    for gw, role, g in grow:
        if not g:
            continue
        # each gateway's own lines: over many tunnels decryption grows far more than encryption
        sends = Bps / avg
        c = (sends * g[0] + args.workers * g[1]) * scale / 1e9
        cpu_data += c
        data_lo += c
        data_hi += c
        p("  over %s tunnels, %s, more than over one: %s;" % ("{:,}".format(args.tunnels), role, g[2]))
        p("  %.0f packets/s x %.0f ns + %d worker(s) x %.1f ms per second = %.4f CPU s/s" % (
            sends, g[0] * scale, args.workers, g[1] * scale / 1e6, c))
    if args.tunnels > 1 and not any(g for _, _, g in grow) and rows(tables, "scale_cost"):
        p("  (what grows with the tunnels: the run's lines of CPU against the rate cover fewer than 2 tunnel "
          "counts)")
    elif args.tunnels > 1 and not rows(tables, "scale_cost"):
        p("  (what grows with the tunnels was not measured in this run: no scale section)")
    nrep = min([sum(1 for r in raw if int(r["send_size"]) == sz) for sz in {int(r["send_size"]) for r in raw}] or [0])
    if not nrep:
        p("  data: %.4f CPU seconds per second (no repetitions recorded in this run: the spread is unknown)" %
          cpu_data)
    else:
        p("  data: %.4f CPU seconds per second (from the repetitions' spread: %.4f-%.4f%s)" % (
            cpu_data, data_lo, data_hi, "" if nrep >= 3 else "; only %d repetition(s) per size: measure with "
            "--full" % nrep))
    p("")
    p("Step 4. IKE load")
    neg = rows(tables, "ike_negotiation")
    groups = sorted({r["group"] for r in neg if r["auth"] == "psk"})
    group = args.group or ("ecp256" if "ecp256" in groups else (groups[0] if groups else None))
    cpu_ike = 0.0
    if args.tunnels or args.setups_per_s:
        if not neg:
            raise PlanError("%s: no ike_negotiation table, needed for --tunnels/--setups-per-s (run the ike section)"
                            % args.run_dir)
        if group not in groups:
            raise PlanError("--group %s: not measured with PSK in %s; measured: %s" % (group, args.run_dir, ", ".join(groups)))

        def cyc(exch):
            r = [x for x in neg if (x["auth"], x["group"], x["exchange"]) == ("psk", group, exch)]
            if not r:
                raise PlanError("%s: no PSK %s %s row in ike_negotiation" % (args.run_dir, group, exch))
            return max(float(r[0]["mcycles_resp"]), float(r[0]["mcycles_init"])) * 1e6 * scale
        mhz = (args.mhz or mhz_meas)
        ike_c, child_c = cyc("v2_ike"), cyc("v2_child")
        p("  per IKEv2 IKE_SA (PSK, %s, the busier of initiator and responder): %.0f cycles; per CHILD SA "
          "rekey: %.0f cycles" % (group, ike_c, child_c))
        per_s_ike = args.setups_per_s + (args.tunnels / args.ike_rekey if args.tunnels else 0)
        per_s_child = args.tunnels / args.child_rekey if args.tunnels else 0
        p("  IKE SAs per second: %g new + %d tunnels / %g s rekey = %.4f/s; CHILD SA rekeys: %d / %g s = %.4f/s" %
          (args.setups_per_s, args.tunnels, args.ike_rekey, per_s_ike, args.tunnels, args.child_rekey, per_s_child))
        cpu_ike = (per_s_ike * ike_c + per_s_child * child_c) / (mhz * 1e6)
        p("  (%.4f x %.0f + %.4f x %.0f) cycles/s / %.0f MHz = %.4f CPU s/s" %
          (per_s_ike, ike_c, per_s_child, child_c, mhz, cpu_ike))
    else:
        p("  none given (--tunnels, --setups-per-s)")
    cpu_mip6 = 0.0
    if args.mip6_nodes:
        mem = [r for r in rows(tables, "mip6_bu_mem") if float(r["ha_exch_s"]) > 0]
        if not mem:
            raise PlanError("%s: no mip6_bu_mem table, needed for --mip6-nodes (run the mip6 section)" % args.run_dir)
        # the measurement with the node count nearest the plan's (10,000 nodes do not fit in cache),
        # and of those the slowest transform: the home agent's own SAs are not the tunnels' transform
        r = min(mem, key=lambda r: (abs(math.log(max(int(r["mobile_nodes"]), 1)) - math.log(args.mip6_nodes)),
                                    float(r["ha_exch_s"])))
        bu = args.mip6_nodes / args.mip6_refresh
        cpu_mip6 = bu / float(r["ha_exch_s"]) * scale
        p("  Mobile IPv6: %d nodes / %g s = %.2f Binding Updates/s; the home agent answers %.0f/s on one core "
          "(%s, %s nodes, in memory) -> %.6f CPU s/s" % (args.mip6_nodes, args.mip6_refresh, bu,
                                                         float(r["ha_exch_s"]), r["transform"], r["mobile_nodes"],
                                                         cpu_mip6))
    p("")
    p("Step 5. Headroom and result")
    total = cpu_data + cpu_ike + cpu_mip6
    cores = total / args.headroom
    need = max(1, math.ceil(cores - 1e-9))
    cores_lo = (data_lo + cpu_ike + cpu_mip6) / args.headroom
    cores_hi = (data_hi + cpu_ike + cpu_mip6) / args.headroom
    p("  %.4f + %.4f + %.4f = %.4f CPU s/s; / %.2f headroom = %.4f cores -> %d core(s)" %
      (cpu_data, cpu_ike, cpu_mip6, total, args.headroom, cores, need))
    p("  uncertainty carried from the repetitions: %.4f-%.4f cores -> %d-%d core(s)" % (
        cores_lo, cores_hi, max(1, math.ceil(cores_lo - 1e-9)), max(1, math.ceil(cores_hi - 1e-9))))
    ncpu = meta.get("ncpus")
    if ncpu:
        p("  (the measured machine has %s CPUs; one xipsecd worker per core)" % ncpu)
    p("")
    p("Step 6. NIC bandwidth (tunnel mode, %s outer header%s, %d-byte MTU, Ethernet framing %d bytes)" % (
        "IPv6" if args.ipv6 else "IPv4", " and NAT-T" if args.nat_t else "", args.mtu, L2))
    pps, wire = 0.0, 0.0
    for size, share in mix:
        n, b = wire_bytes(args.transform, size, args.mtu, extra)
        sends = Bps * (size * share / 100 / avg) / size
        pps += sends * n
        wire += sends * b * 8
        p("  %5d bytes: %d packet(s), %d bytes on the link per send (%.1f %% overhead); %.0f sends/s" %
          (size, n, b, (b - size) / size * 100, sends))
    p("  packets per second: %.0f; on the link: %s (%.1f %% more than the data)" %
      (pps, fmt_rate(wire), (wire / rate - 1) * 100))
    if nic:
        util = wire / nic
        p("  one %s NIC: %.1f %% utilised -> %d NIC(s) at %.0f %% headroom" %
          (fmt_rate(nic), util * 100, max(1, math.ceil(util / args.headroom - 1e-9)), args.headroom * 100))
    p("")
    workers = packet_step(p, tables, args, pps * (2 if args.direction == "both" else 1), avg)
    p("")
    mem_mb = memory_step(p, tables, args)
    p("")
    p("Result: %d core(s) (%.2f at %.0f %% utilisation; %.2f-%.2f from the repetitions' spread), %s of link "
      "bandwidth per direction%s.%s" % (need, cores, args.headroom * 100, cores_lo, cores_hi, fmt_rate(wire),
                                        ", %.1f MB of memory (step 8)" % mem_mb if mem_mb is not None else "",
                                      " The packet rate asks for %s: size for the larger of the two." % workers
                                      if workers else ""))
