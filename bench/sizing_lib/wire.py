# bench/sizing_lib/wire.py: the sizing study's wire section, after the SNMP study's method: what each
# transform puts on the wire per message, measured from packets captured on the link between the
# gateways (tcpdump on the bridge port gw1 sends into) for UDP messages of several payload sizes,
# next to the unprotected size and the overhead the RFCs' formats predict; and TCP request/response
# latency with 0 % and 1 % random loss on that link (tc netem where the kernel has it, else an
# nftables bridge rule `numgen random mod 100 < 1 drop`).
import os
import struct
import subprocess
import tempfile
import time

from sizing_lib import dataplane, netns, plotting

NAME = "wire"
TITLE = "Bytes on the wire and latency under loss"

# (ESP IV bytes, cipher block (padding unit; at least 4), ICV bytes) or ("ah", ICV bytes)
FORMAT = {
    "esp-aes-cbc-128-sha1": (16, 16, 12), "esp-aes-cbc-128-sha256": (16, 16, 16), "esp-3des-sha1": (8, 8, 12),
    "esp-aes-gcm-128": (8, 4, 16), "esp-aes-gcm-256": (8, 4, 16), "esp-chacha20-poly1305": (8, 4, 16),
    "esp-null-sha1": (0, 4, 12), "esp-aes-cbc-128": (16, 16, 0), "ah-md5": ("ah", 12), "ah-sha1": ("ah", 12),
}

OVERHEAD = ["transform", "payload", "messages", "packets_per_msg", "ip_bytes_per_msg", "frame_bytes_per_msg",
            "plain_ip_bytes", "overhead_bytes", "overhead_pct", "expected_overhead"]
LOSS_RAW = ["transform", "loss_pct", "rep", "secs", "transactions", "mean_us", "p50_us", "p90_us", "p99_us",
            "max_us"]
LOSS = ["transform", "loss_pct", "n", "tps", "mean_us", "p50_us", "p90_us", "p99_us", "max_us"]


def plan(quick):
    if quick:
        return {"transforms": ["bypass", "esp-aes-gcm-128", "esp-aes-cbc-128-sha256", "ah-sha1"],
                "payloads": [64, 1024], "messages": 20, "loss_transforms": ["bypass", "esp-aes-gcm-128"],
                "loss": [0, 1], "loss_reps": 1, "loss_secs": 1}
    return {"transforms": list(netns.TRANSFORM_IDS), "payloads": [16, 64, 256, 1024, 1400], "messages": 50,
            "loss_transforms": list(netns.TRANSFORM_IDS), "loss": [0, 1], "loss_reps": 3, "loss_secs": 2}


def _count(p, xs):
    return len(xs) + p["loss_reps"] * len(p["loss"]) * len([x for x in p["loss_transforms"] if x in xs])


def points(ctx):
    p = plan(ctx.quick)
    return _count(p, p["transforms"])


def seconds(ctx):
    p = plan(ctx.quick)
    cap = len(p["transforms"]) * (len(p["payloads"]) * (p["messages"] * 0.004 + 0.4) + 1.5)
    return cap + p["loss_reps"] * len(p["loss"]) * len(p["loss_transforms"]) * (p["loss_secs"] + 0.4) + 4


def expected_overhead(xf, payload):
    """Bytes a tunnel-mode SA adds to an IPv4/UDP message of this payload that fits one packet."""
    if xf == "bypass":
        return 0
    f = FORMAT[xf]
    inner = 20 + 8 + payload
    if f[0] == "ah":
        return 20 + ((12 + f[1] + 3) // 4) * 4
    iv, blk, icv = f
    pad = (-(inner + 2)) % blk
    return 20 + 8 + iv + pad + 2 + icv


def read_pcap(path):
    """[(time, frame length, IP total length)] of an Ethernet pcap."""
    out = []
    with open(path, "rb") as f:
        h = f.read(24)
        if len(h) < 24:
            return out
        magic = struct.unpack("<I", h[:4])[0]
        end = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
        nano = magic in (0xa1b23c4d, 0x4d3cb2a1)
        while True:
            rh = f.read(16)
            if len(rh) < 16:
                break
            sec, frac, incl, orig = struct.unpack(end + "IIII", rh)
            data = f.read(incl)
            if len(data) < 18 or data[12:14] != b"\x08\x00":
                continue
            out.append((sec + frac / (1e9 if nano else 1e6), orig, struct.unpack(">H", data[16:18])[0]))
    return out


SENDER = r"""
import socket, sys, time
sizes = [int(x) for x in sys.argv[1].split(",")]
n = int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for size in sizes:
    for i in range(n):
        s.sendto(b"w" * size, ("10.2.0.2", 9))
        time.sleep(0.003)
    time.sleep(0.4)
"""


def capture(b, xf, payloads, n, tmp):
    t = b.t
    pcap = os.path.join(tmp, "%s-%s.pcap" % (t.id, xf))
    t.files.append(pcap)
    filt = "ip and dst host 10.2.0.2" if xf == "bypass" else "dst host 192.0.2.2 and (ip proto 50 or ip proto 51)"
    cap = t.bg("sw", "cap", ["tcpdump", "-n", "-U", "--immediate-mode", "-s", "256", "-Q", "in", "-i", "s1",
                             "-w", pcap, filt])
    t.wait_for(5, lambda: "listening" in t.log_of("cap"))
    time.sleep(0.3)
    t.run("h1", ["/usr/bin/python3", "-c", SENDER, ",".join(map(str, payloads)), str(n)], timeout=60)
    time.sleep(0.3)
    t.stop("cap", sig=2)
    del cap
    pk = read_pcap(pcap)
    # one cluster per payload size, separated by the sender's pauses
    groups, last = [], None
    for ts, flen, iplen in pk:
        if last is None or ts - last > 0.2:
            groups.append([])
        groups[-1].append((flen, iplen))
        last = ts
    if len(groups) != len(payloads):
        raise netns.NetnsError("%s: %d bursts of packets captured for %d payload sizes" % (xf, len(groups), len(payloads)))
    return groups


def run(ctx):
    p = plan(ctx.quick)
    ctx.meta["wire_plan"] = p
    tmp = tempfile.mkdtemp(prefix="sizing-wire-", dir="/tmp")
    b = None
    try:
        b = dataplane.Bench(ctx, tmp, 1)
        usable = []
        for xf in p["transforms"]:
            try:
                b.use(xf)
                usable.append(xf)
            except netns.NetnsError as e:
                ctx.meta.setdefault("refused_transforms", {})[xf] = str(e).split(": exit 2: ")[-1]
        ctx.total -= _count(p, p["transforms"]) - _count(p, usable)
        rows, base = [], {}
        for xf in usable:
            b.use(xf)
            groups = capture(b, xf, p["payloads"], p["messages"], tmp)
            for size, g in zip(p["payloads"], groups):
                n = p["messages"]
                ipb = sum(x[1] for x in g) / n
                frb = sum(x[0] for x in g) / n
                if xf == "bypass":
                    base[size] = ipb
                plain = 20 + 8 + size
                ref = base.get(size, plain)
                over = ipb - ref
                rows.append([xf, size, n, len(g) / n, ipb, frb, plain, over, over / ref * 100,
                             expected_overhead(xf, size) if len(g) == n else None])
            ctx.tick("%s: bytes on the wire captured" % xf)
        ctx.table("wire_overhead", OVERHEAD, rows,
                  "per UDP message of `payload` bytes: IP packets and bytes captured between the gateways (IP "
                  "header onwards; frame bytes add Ethernet), the unprotected size, the overhead against bypass "
                  "and the overhead the ESP/AH formats predict (messages that fit one packet)",
                  expect=len(usable) * len(p["payloads"]))
        # latency under loss
        how = loss_method(b)
        ctx.meta["loss_method"] = how
        raw = []
        lx = [x for x in p["loss_transforms"] if x in usable]
        for rep in range(1, p["loss_reps"] + 1):
            for loss in p["loss"]:
                set_loss(b, how, loss)
                try:
                    for xf in lx:
                        b.use(xf)
                        j = b.rr_safe(p["loss_secs"])
                        if j is None:
                            ctx.fail("%s TCP RR with %d %% loss, rep %d" % (xf, loss, rep))
                            ctx.tick("%s TCP RR with %d %% loss: failed" % (xf, loss))
                            continue
                        raw.append([xf, loss, rep, j["secs"], j["transactions"], j["mean_us"], j["p50_us"],
                                    j["p90_us"], j["p99_us"], j["max_us"]])
                        ctx.tick("%s TCP RR with %d %% loss: p99 %.0f µs" % (xf, loss, j["p99_us"]))
                finally:
                    set_loss(b, how, 0)
        t = ctx.table("wire_rr_loss_raw", LOSS_RAW, raw, "TCP request/response (1 byte each way) with random "
                      "loss on the link between the gateways, one row per repetition",
                      expect=p["loss_reps"] * len(p["loss"]) * len(lx))
        ctx.table("wire_rr_loss", LOSS, derive_loss(dataplane._dicts(t)),
                  "medians: transactions per second and latency percentiles (µs) with 0 % and 1 % loss",
                  expect=len(p["loss"]) * len(lx))
    finally:
        if b:
            b.close()
        try:
            os.rmdir(tmp)
        except OSError:
            pass


def loss_method(b):
    t = b.t
    r = t.run("sw", ["tc", "qdisc", "add", "dev", "s1", "root", "netem", "loss", "0%"], check=False)
    if r.returncode == 0:
        t.run("sw", ["tc", "qdisc", "del", "dev", "s1", "root"], check=False)
        return "netem"
    return "nftables"


def set_loss(b, how, pct):
    t = b.t
    if how == "netem":
        for dev in ("s1", "s2"):
            t.run("sw", ["tc", "qdisc", "del", "dev", dev, "root"], check=False)
            if pct:
                t.run("sw", ["tc", "qdisc", "add", "dev", dev, "root", "netem", "loss", "%d%%" % pct])
        return
    t.run("sw", ["nft", "delete", "table", "bridge", "sizing_loss"], check=False)
    if pct:
        rules = ("table bridge sizing_loss {\n chain loss {\n  type filter hook forward priority 0; policy accept;\n"
                 "  numgen random mod 100 < %d drop\n }\n}\n" % pct)
        r = subprocess.run(["nsenter", "--net=/run/netns/" + t.ns("sw"), "nft", "-f", "-"], input=rules,
                           capture_output=True, text=True, timeout=30)
        if r.returncode:
            raise netns.NetnsError("nft: %s" % r.stderr.strip())


def derive_loss(raw):
    groups = {}
    for r in raw:
        groups.setdefault((r["transform"], r["loss_pct"]), []).append(r)
    med = dataplane._med
    return [[xf, loss, len(rs), med([r["transactions"] / r["secs"] for r in rs]), med([r["mean_us"] for r in rs]),
             med([r["p50_us"] for r in rs]), med([r["p90_us"] for r in rs]), med([r["p99_us"] for r in rs]),
             med([r["max_us"] for r in rs])] for (xf, loss), rs in groups.items()]


def _plots(ctx):
    plt = plotting.pyplot()
    out = []
    ov = dataplane._dicts(ctx.tables["wire_overhead"]) if "wire_overhead" in ctx.tables else []
    if ov:
        xs = [x for x in netns.TRANSFORM_IDS if any(r["transform"] == x for r in ov) and x != "bypass"]
        sizes = sorted({r["payload"] for r in ov})
        fig, axes = plt.subplots(1, 2, figsize=(13, 5))
        wd = 0.8 / len(sizes)
        for k, size in enumerate(sizes):
            vals = [next((r["overhead_bytes"] for r in ov if r["transform"] == x and r["payload"] == size), None)
                    for x in xs]
            plotting.bars(axes[0], [i + k * wd for i in range(len(xs))], vals, wd, label="%d B payload" % size)
        axes[0].set_xticks([i + wd * (len(sizes) - 1) / 2 for i in range(len(xs))])
        axes[0].set_xticklabels(xs, rotation=30, ha="right", fontsize=8)
        axes[0].set_ylabel("bytes added per message")
        axes[0].legend(fontsize=8)
        axes[0].grid(axis="y", alpha=0.3)
        for x in xs:
            s = sorted([r for r in ov if r["transform"] == x], key=lambda r: r["payload"])
            axes[1].plot([r["payload"] for r in s], [r["overhead_pct"] for r in s], marker="o", label=x)
        axes[1].set_xscale("log")
        axes[1].set_xlabel("UDP payload (bytes)")
        axes[1].set_ylabel("overhead (% of the unprotected IP bytes)")
        axes[1].legend(fontsize=7)
        axes[1].grid(alpha=0.3)
        axes[1].set_ylim(bottom=0)
        fig.suptitle("Bytes on the wire per message, measured between the gateways (no spread: every message "
                     "of a size carries the same bytes)", fontsize=10)
        fig.tight_layout()
        ctx.savefig(fig, "wire_overhead")
        out.append(("wire_overhead", "overhead per message per transform and payload size"))
    ls = dataplane._dicts(ctx.tables["wire_rr_loss"]) if "wire_rr_loss" in ctx.tables else []
    if ls:
        xs = [x for x in netns.TRANSFORM_IDS if any(r["transform"] == x for r in ls)]
        combos = [(loss, col) for loss in sorted({r["loss_pct"] for r in ls}) for col in ("p50_us", "p99_us")]
        fig, ax = plt.subplots(figsize=(12, 5))
        wd = 0.8 / len(combos)
        raw = dataplane._dicts(ctx.tables.get("wire_rr_loss_raw", {"columns": [], "rows": []}))
        for k, (loss, col) in enumerate(combos):
            vals = [next((r[col] for r in ls if r["transform"] == x and r["loss_pct"] == loss), None) for x in xs]
            sp = plotting.spread(raw, lambda r: (r["transform"], r["loss_pct"]), lambda r, c=col: r[c])
            plotting.bars(ax, [i + k * wd for i in range(len(xs))], vals, wd, [sp.get((x, loss)) for x in xs],
                          label="%s, %d %% loss" % (col[:3], loss))
        ax.set_xticks([i + wd * (len(combos) - 1) / 2 for i in range(len(xs))])
        ax.set_xticklabels(xs, rotation=30, ha="right", fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("request/response latency (µs)")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        ax.set_title("TCP request/response latency with 0 % and 1 % random loss between the gateways; "
                     "bars min-max", fontsize=10)
        fig.tight_layout()
        ctx.savefig(fig, "wire_rr_loss")
        out.append(("wire_rr_loss", "request/response latency (p50, p99) with and without loss"))
    return out


def report(ctx, rep):
    rep.para("Bytes on the wire: %d UDP messages per payload size from h1 to h2, captured with tcpdump on the "
             "bridge port gw1 sends into. `ip_bytes_per_msg` counts from the outer IP header (all fragments of a "
             "message); `overhead_bytes` is against bypass; `expected_overhead` is what the formats predict for a "
             "tunnel-mode SA (outer IPv4 header, ESP header, IV, padding to the cipher block, pad length and next "
             "header, ICV; for AH its header and ICV). A message that no longer fits the link's MTU once protected "
             "is sent as two packets." % ctx.meta.get("wire_plan", {}).get("messages", 0))
    stems = _plots(ctx)
    for s, c in stems:
        if s == "wire_overhead":
            rep.plot(s, c)
    rep.table("wire_overhead")
    rep.para("Latency under loss: TCP request/response (1 byte each way, one transaction outstanding) while the "
             "link between the gateways drops packets at random (%s, both directions). A lost segment costs a "
             "retransmission timeout, which shows in the upper percentiles, not the median." %
             ctx.meta.get("loss_method", "?"))
    for s, c in stems:
        if s == "wire_rr_loss":
            rep.plot(s, c)
    rep.table("wire_rr_loss")
    rep.table("wire_rr_loss_raw")


def check(run_dir):
    from sizing_lib import framework
    meta, tables = framework.load_run(run_dir)
    errs = []
    for n in ("wire_overhead", "wire_rr_loss_raw", "wire_rr_loss"):
        if n not in tables:
            errs.append("table %s missing" % n)
    if errs:
        return errs
    ov = dataplane._dicts(tables["wire_overhead"])
    base = {r["payload"]: r["ip_bytes_per_msg"] for r in ov if r["transform"] == "bypass"}
    for r in ov:
        if r["transform"] == "bypass" and abs(r["ip_bytes_per_msg"] - r["plain_ip_bytes"] * r["packets_per_msg"]) > \
                20 * r["packets_per_msg"]:
            errs.append("wire_overhead: bypass %d B: %s bytes per message, unprotected size %s" % (
                r["payload"], r["ip_bytes_per_msg"], r["plain_ip_bytes"]))
        ref = base.get(r["payload"], r["plain_ip_bytes"])
        if not dataplane._close(r["overhead_bytes"], framework._round(r["ip_bytes_per_msg"] - ref)):
            errs.append("wire_overhead: %s %d B: overhead %s is not bytes minus bypass (%s)" % (
                r["transform"], r["payload"], r["overhead_bytes"], r["ip_bytes_per_msg"] - ref))
        if r["packets_per_msg"] == 1 and r["expected_overhead"] is not None and \
                abs(r["overhead_bytes"] - r["expected_overhead"]) > 0.01:
            errs.append("wire_overhead: %s %d B: %s bytes added per message, the format predicts %s" % (
                r["transform"], r["payload"], r["overhead_bytes"], r["expected_overhead"]))
    cols, rows = framework.read_csv(os.path.join(run_dir, "wire_rr_loss_raw.csv"))
    raw = [dict(zip(cols, [v if c == "transform" else float(v) for c, v in zip(cols, r)])) for r in rows]
    for r in raw:
        r["loss_pct"] = int(r["loss_pct"])
    want = [[framework._round(v) for v in r] for r in derive_loss(raw)]
    errs += dataplane._compare("wire_rr_loss", tables["wire_rr_loss"]["rows"], want, 2)
    return errs
