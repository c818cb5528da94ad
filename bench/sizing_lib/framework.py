# bench/sizing_lib/framework.py: the sizing study's driver. It owns the command line of bench/sizing,
# the run directory (RUN/log.txt, RUN/<table>.csv, RUN/results.json, RUN/plots/), the Context every
# section measures through (tables, figures, meta, progress), the order of the sections (each runs
# only if its module imports), the progress line ("point n of N, elapsed, estimated time left") and
# `bench/sizing check RUN`, which re-reads a run directory and verifies it: every table has its CSV
# and the CSV holds the table's rows, every plot exists as a valid PNG and SVG carrying its series
# labels, and each section's own check() recomputes its derived figures.
import argparse
import csv
import datetime
import importlib
import json
import math
import os
import pathlib
import platform
import subprocess
import sys
import time
import traceback
import xml.etree.ElementTree as ET

SECTIONS = ["dataplane", "wire", "lossfree", "scale", "ike", "ikescale", "model", "mip6"]


def _round(v):
    """Floats kept to 6 significant digits, so the CSV and results.json hold the same numbers."""
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return None
        if v == 0:
            return 0.0
        return float("%.6g" % v)
    return v


class Context:
    def __init__(self, run_dir, srcdir, builddir, quick=False, argv=None):
        self.quick = bool(quick)
        self.run_dir = pathlib.Path(run_dir)
        self.srcdir = pathlib.Path(srcdir)
        self.builddir = pathlib.Path(builddir)
        self.tables = {}
        self.meta = {}
        self.plots = {}        # stem -> {"labels": [...]} of every figure saved
        self.total = 0
        self.done = 0
        self.start = time.monotonic()
        self.section = None
        self.failures = []     # the current section's failed sub-runs (fail())
        self._tty = sys.stderr.isatty()
        self._progress_shown = False
        (self.run_dir / "plots").mkdir(parents=True, exist_ok=True)
        self._logf = open(self.run_dir / "log.txt", "a", encoding="utf-8")

    # ---- progress and log
    def _fmt(self, s):
        s = int(s + 0.5)
        return "%d:%02d" % (s // 60, s % 60)

    def tick(self, label=""):
        self.done += 1
        el = time.monotonic() - self.start
        left = el / self.done * max(self.total - self.done, 0) if self.done else 0
        line = "point %d of %d, elapsed %s, estimated time left %s  %s" % (
            self.done, self.total, self._fmt(el), self._fmt(left), label)
        self._logf.write(line + "\n")
        self._logf.flush()
        if self._tty:
            sys.stderr.write("\r\x1b[K" + line[:150])
            self._progress_shown = True
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def log(self, msg):
        if self._progress_shown:
            sys.stderr.write("\r\x1b[K")
            self._progress_shown = False
        stamp = time.strftime("%H:%M:%S")
        sys.stderr.write("sizing: %s\n" % msg)
        sys.stderr.flush()
        self._logf.write("%s %s\n" % (stamp, msg))
        self._logf.flush()

    def fail(self, msg):
        """A sub-run of the current section failed: logged, and the section's status says so (a
        section with a failed sub-run is not "ok", whatever its tables hold)."""
        self.failures.append(msg)
        self.log("%s: FAILED: %s" % (self.section, msg))

    # ---- results
    def table(self, name, columns, rows, caption="", expect=None):
        """Table NAME of this run. EXPECT is the number of rows the section's plan asked for (None:
        at least one): `check` fails on a table holding fewer, so a sub-run that measured nothing
        cannot pass for a result."""
        columns = list(columns)
        rows = [[_round(v) for v in r] for r in rows]
        for r in rows:
            if len(r) != len(columns):
                raise ValueError("table %s: row %r has %d values for %d columns" % (name, r, len(r), len(columns)))
        self.tables[name] = {"columns": columns, "rows": rows, "caption": caption}
        self.meta.setdefault("expected_rows", {})[name] = 1 if expect is None else int(expect)
        write_csv(self.run_dir / (name + ".csv"), columns, rows)
        self.save_results()
        return self.tables[name]

    def savefig(self, fig, stem):
        import matplotlib.pyplot as plt
        labels = []
        for ax in fig.get_axes():
            leg = ax.get_legend()
            if leg is not None:
                labels += [t.get_text() for t in leg.get_texts()]
        labels = [x for x in dict.fromkeys(labels) if x and not x.startswith("_")]
        d = self.run_dir / "plots"
        fig.savefig(d / (stem + ".png"), dpi=90)
        fig.savefig(d / (stem + ".svg"))
        plt.close(fig)
        self.plots[stem] = {"labels": labels}
        self.save_results()

    def save_results(self):
        out = {"meta": dict(self.meta, plots=self.plots), "tables": self.tables}
        tmp = self.run_dir / "results.json.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1, sort_keys=True)
        os.replace(tmp, self.run_dir / "results.json")


def write_csv(path, columns, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow(["" if v is None else v for v in r])


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        rd = csv.reader(f)
        cols = next(rd)
        return cols, [r for r in rd]


def load_run(run_dir):
    """(meta, tables) of a run directory, as the sections left them (for plan and check)."""
    with open(pathlib.Path(run_dir) / "results.json", encoding="utf-8") as f:
        j = json.load(f)
    return j.get("meta", {}), j.get("tables", {})


def rows_as_dicts(table):
    cols = table["columns"]
    return [dict(zip(cols, r)) for r in table["rows"]]


def machine_meta():
    m = {"machine": platform.node(), "kernel": platform.release(), "arch": platform.machine(),
         "ncpus": os.cpu_count(), "python": platform.python_version()}
    try:
        info = open("/proc/cpuinfo").read()
        for line in info.splitlines():
            k, _, v = line.partition(":")
            k = k.strip()
            if k == "model name" and "cpu_model" not in m:
                m["cpu_model"] = v.strip()
            elif k == "flags" and "cpu_flags" not in m:
                fl = v.split()
                m["cpu_flags"] = [x for x in fl if x in ("aes", "avx", "avx2", "avx512f", "sha_ni", "vaes",
                                                          "vpclmulqdq", "pclmulqdq", "ssse3", "sse4_2")]
        mhz = [float(line.split(":")[1]) for line in info.splitlines() if line.startswith("cpu MHz")]
        if mhz:
            m["mhz"] = sum(mhz) / len(mhz)
    except OSError:
        pass
    try:
        src = pathlib.Path(__file__).resolve().parent.parent.parent
        r = subprocess.run(["git", "-C", str(src), "describe", "--always", "--dirty"], capture_output=True,
                           text=True, timeout=10)
        if r.returncode == 0:
            m["xipsec_commit"] = r.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    for tool, args in (("iperf3", ["--version"]), ("tcpdump", ["--version"])):
        try:
            out = subprocess.run([tool] + args, capture_output=True, text=True, timeout=10)
            m.setdefault("versions", {})[tool] = (out.stdout or out.stderr).splitlines()[0].strip()
        except (OSError, IndexError, subprocess.TimeoutExpired):
            pass
    return m


def import_section(name):
    try:
        return importlib.import_module("sizing_lib." + name)
    except ImportError as e:
        if e.name and e.name.startswith("sizing_lib." + name):
            return None
        raise


def default_builddir(srcdir):
    b = os.environ.get("top_builddir")
    return pathlib.Path(b) if b else srcdir / "build" / "release"


def cmd_run(args, srcdir):
    from sizing_lib import report as report_mod
    out = pathlib.Path(args.out or datetime.datetime.now().strftime("sizing-%Y%m%d-%H%M%S"))
    out.mkdir(parents=True, exist_ok=True)
    builddir = pathlib.Path(args.build) if args.build else default_builddir(srcdir)
    ctx = Context(out.resolve(), srcdir, builddir.resolve(), quick=args.quick)
    if args.sizes:
        try:
            ctx.sizes = sorted({int(x) for x in args.sizes.split(",") if x})
        except ValueError:
            ctx.sizes = []
        if not ctx.sizes or min(ctx.sizes) < 1 or max(ctx.sizes) > 65507:
            sys.stderr.write("sizing: --sizes: expected send sizes in bytes (1-65507), e.g. 1400,32768; got '%s'\n"
                             % args.sizes)
            return 2
    only = [s for s in (args.only or "").split(",") if s]
    for s in only:
        if s not in SECTIONS:
            sys.stderr.write("sizing: --only: unknown section '%s' (sections: %s)\n" % (s, ", ".join(SECTIONS)))
            return 2
    ctx.meta.update(machine_meta())
    ctx.meta.update({"command": " ".join([sys.argv[0]] + sys.argv[1:]), "quick": ctx.quick,
                     "builddir": str(ctx.builddir), "start": datetime.datetime.utcnow().isoformat() + "Z",
                     "sections": {}})
    again = None
    if only and (out / "results.json").exists():
        # --only into an existing run: those sections are measured again, the others' tables kept
        # (a section's tables are named after it), and the run says which were re-measured when
        meta, tables = load_run(out)
        if not meta.get("sections") or bool(meta.get("quick")) != ctx.quick:
            sys.stderr.write("sizing: %s holds a run of another mode (or none): measure into a new directory\n"
                             % out)
            return 2
        mine = lambda n: any(n == s or n.startswith(s + "_") for s in only)
        ctx.plots = meta.pop("plots", {})
        ctx.tables = {k: v for k, v in tables.items() if not mine(k)}
        meta["expected_rows"] = {k: v for k, v in meta.get("expected_rows", {}).items() if not mine(k)}
        again = {"sections": only, "command": ctx.meta["command"], "start": ctx.meta["start"],
                 "builddir": ctx.meta["builddir"]}
        meta.setdefault("remeasured", []).append(again)
        ctx.meta = meta
    mods = []
    for name in SECTIONS:
        if only and name not in only:
            continue
        m = import_section(name)
        if m is None:
            ctx.log("section %s: not available (no module sizing_lib.%s)" % (name, name))
            continue
        mods.append(m)
    counts = {}
    for m in mods:
        counts[m.NAME] = int(m.points(ctx))
    ctx.total = sum(counts.values())
    ctx.log("run directory %s; %d points in sections %s" % (out, ctx.total, ", ".join(counts)))
    est = {m.NAME: m.seconds(ctx) for m in mods if hasattr(m, "seconds")}
    if est:
        ctx.log("estimated duration: %s (%s)" % (ctx._fmt(sum(est.values())), ", ".join(
            "%s %s" % (k, ctx._fmt(v)) for k, v in est.items())))
        ctx.meta["estimate_s"] = {k: round(v) for k, v in est.items()}
    rc = 0
    for m in mods:
        ctx.section = m.NAME
        ctx.failures = []
        t0 = time.monotonic()
        try:
            m.run(ctx)
            status = "ok" if not ctx.failures else "failed: " + "; ".join(ctx.failures)
            rc = rc or (1 if ctx.failures else 0)
        except KeyboardInterrupt:
            raise
        except Exception as e:  # one section's failure is reported, the others still run
            status = "failed: %s" % e
            ctx.log("section %s failed: %s\n%s" % (m.NAME, e, traceback.format_exc()))
            rc = 1
        # a section that ended early or left points out: the estimate stays honest
        later = mods[mods.index(m) + 1:]
        ctx.total = ctx.done + sum(counts[x.NAME] for x in later)
        ctx.meta["sections"][m.NAME] = {"status": status, "secs": round(time.monotonic() - t0, 1),
                                        "points": counts[m.NAME]}
        ctx.save_results()
    end = {"end": datetime.datetime.utcnow().isoformat() + "Z", "elapsed_s": round(time.monotonic() - ctx.start, 1)}
    (again if again is not None else ctx.meta).update(end)
    ctx.save_results()
    if again is not None:
        mods = [m for m in (import_section(n) for n in SECTIONS if n in ctx.meta["sections"]) if m is not None]
    report_mod.write(ctx, mods)
    ctx.save_results()
    ctx.log("done in %s: %s" % (ctx._fmt(time.monotonic() - ctx.start), out / "report.html"))
    return rc


def cmd_report(run_dir, srcdir):
    """`bench/sizing report RUN_DIR`: a model change applied to a stored run. Each section that has a
    rederive(ctx) recomputes its model's columns from the run's measurements (nothing is measured
    again, and no measured column changes), then report.md, report.html and the plots are written
    again; results.json records when. `check` then holds the run to the model as it is now."""
    from sizing_lib import report as report_mod
    meta, tables = load_run(run_dir)
    if not meta.get("sections"):
        sys.stderr.write("sizing: %s: no sections in results.json\n" % run_dir)
        return 2
    ctx = Context(pathlib.Path(run_dir).resolve(), srcdir, meta.get("builddir", "."), quick=meta.get("quick"))
    ctx.plots = meta.pop("plots", {})
    ctx.meta, ctx.tables = meta, tables
    mods = [m for m in (import_section(n) for n in SECTIONS if n in meta["sections"]) if m is not None]
    for m in mods:
        if hasattr(m, "rederive"):
            ctx.section = m.NAME
            m.rederive(ctx)
    ctx.meta["rederived"] = datetime.datetime.utcnow().isoformat() + "Z"
    ctx.log("model columns recomputed from the measurements; report written again")
    report_mod.write(ctx, mods)
    ctx.save_results()
    return 0


# ---- check
PNG_SIG = b"\x89PNG\r\n\x1a\n"


def check_png(path):
    """None if path is a whole PNG: signature, IHDR first with a non-empty size, every chunk's CRC
    right, IEND last."""
    import zlib
    try:
        b = open(path, "rb").read()
    except OSError as e:
        return "plot %s: %s" % (path, e.strerror)
    if len(b) < 33 or b[:8] != PNG_SIG or b[12:16] != b"IHDR":
        return "plot %s: not a PNG (no signature or IHDR chunk)" % path
    w, h = int.from_bytes(b[16:20], "big"), int.from_bytes(b[20:24], "big")
    if w == 0 or h == 0:
        return "plot %s: PNG of %dx%d pixels" % (path, w, h)
    i = 8
    while i + 12 <= len(b):
        n = int.from_bytes(b[i:i + 4], "big")
        kind = b[i + 4:i + 8]
        if i + 12 + n > len(b):
            break
        if zlib.crc32(b[i + 4:i + 8 + n]) != int.from_bytes(b[i + 8 + n:i + 12 + n], "big"):
            return "plot %s: chunk %r at byte %d has a bad CRC" % (path, kind, i)
        if kind == b"IEND":
            return None
        i += 12 + n
    return "plot %s: PNG truncated (no IEND chunk)" % path


def check_svg(path, labels):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        return ["plot %s: not a valid SVG: %s" % (path, e)]
    if not root.tag.endswith("svg"):
        return ["plot %s: root element is %s, not svg" % (path, root.tag)]
    text = " ".join("".join(el.itertext()) for el in root.iter())
    return ["plot %s: series label '%s' missing" % (path, lab) for lab in labels if lab not in text]


def check_run(run_dir):
    run_dir = pathlib.Path(run_dir)
    errs = []
    try:
        meta, tables = load_run(run_dir)
    except (OSError, ValueError) as e:
        return ["results.json: %s" % e]
    for name, t in tables.items():
        p = run_dir / (name + ".csv")
        if not p.exists():
            errs.append("table %s: %s missing" % (name, p))
            continue
        cols, rows = read_csv(p)
        if cols != t["columns"]:
            errs.append("table %s: CSV columns %s differ from results.json's %s" % (name, cols, t["columns"]))
            continue
        if len(rows) != len(t["rows"]):
            errs.append("table %s: CSV has %d rows, results.json %d" % (name, len(rows), len(t["rows"])))
            continue
        for i, (a, b) in enumerate(zip(rows, t["rows"])):
            if [str(x) for x in a] != ["" if x is None else str(x) for x in b]:
                errs.append("table %s: row %d differs between CSV and results.json" % (name, i + 1))
                break
    # a section whose sub-run measured nothing, or less than its plan, is not a result
    expected = meta.get("expected_rows", {})
    for name, t in tables.items():
        want = expected.get(name, 1)
        if len(t["rows"]) < want:
            errs.append("table %s: %s where the plan asked for %d row(s)" % (
                name, "empty" if not t["rows"] else "%d row(s)" % len(t["rows"]), want))
    plots = meta.get("plots", {})
    for stem, p in plots.items():
        e = check_png(run_dir / "plots" / (stem + ".png"))
        if e:
            errs.append(e)
        errs += check_svg(run_dir / "plots" / (stem + ".svg"), p.get("labels", []))
    for f in ("report.md", "report.html"):
        if not (run_dir / f).exists():
            errs.append("%s missing" % f)
    html = (run_dir / "report.html").read_text(encoding="utf-8") if (run_dir / "report.html").exists() else ""
    md = (run_dir / "report.md").read_text(encoding="utf-8") if (run_dir / "report.md").exists() else ""
    for stem in plots:
        if html and "plots/%s.svg" % stem not in html:
            errs.append("report.html does not show plot %s" % stem)
        if md and "plots/%s.png" % stem not in md:
            errs.append("report.md does not show plot %s" % stem)
    import re
    for ref in set(re.findall(r'plots/([A-Za-z0-9_.-]+)\.(?:svg|png)', html + md)):
        if ref not in plots:
            errs.append("report refers to plot %s, which results.json does not list" % ref)
    for name in tables:
        if html and ('id="table-%s"' % name) not in html:
            errs.append("report.html lacks table %s" % name)
    for name, st in meta.get("sections", {}).items():
        m = import_section(name)
        if m is None:
            continue
        if st.get("status") != "ok":
            errs.append("section %s did not finish: %s" % (name, st.get("status")))
            continue
        try:
            errs += ["%s: %s" % (name, e) for e in m.check(run_dir)]
        except Exception as e:
            errs.append("section %s: check raised %s" % (name, e))
    return errs


HELP = """\
bench/sizing: the sizing study of xipsecd and xipsec-iked (run as root).

  bench/sizing [--quick | --full] [--out DIR] [--build BUILDDIR] [--only SECTION,...]
  bench/sizing plan RUN_DIR [options]     the sizing calculator (bench/sizing plan --help)
  bench/sizing --only SECTION,... --out RUN_DIR   into an existing run: those sections measured again,
                                          the others' tables kept, the report says which and when
  bench/sizing check RUN_DIR              re-verify a run directory: it fails on a table holding fewer
                                          rows than the plan asked for and on a failed sub-run
  bench/sizing report RUN_DIR             a model change applied to a stored run: the model's columns
                                          recomputed from its measurements, the report written again

Sections, in this order: dataplane (throughput, CPU and service demand against send size per
transform, TCP and UDP streams, 1 and 2 workers; request/response rate and latency; one-way versus
two-way; burst size), wire (bytes on the wire per message; request/response latency with 0 %% and 1 %%
random loss), lossfree (RFC 2544: the highest rate with < 0.1 %% loss per transform, packet size and
worker count, and CPU per packet there), scale (SADB load, memory and xipsecd start time for 1 to
100,000 tunnels, memory per Mobile IPv6 binding, forwarding spread over 1 to 100,000 tunnels with 1
worker and over 10,000 with 2, and the calculator's predictions checked), ike (SA negotiation),
ikescale (against stock charon: 10,000 IKE SAs from scratch, CHILD SAs per second with up to 10,000
installed, a new IKE SA vs a CHILD SA vs an IKE rekey per DH group), model (a cost model fitted to the
measurements), mip6 (the home agent).
A run directory holds report.md, report.html, results.json, one CSV per table and plots/ (PNG+SVG).
--quick is a reduced matrix, one repetition a point (about 3 minutes, the test suite's run); --full
(the default) repeats every point 3 times for the figures' error bars and takes about 90 minutes on 2
cores. The estimated duration is printed before the run starts.
Service demand is netperf's: microseconds of a gateway's CPU per KB (1024 bytes) of application data.
BUILDDIR defaults to $top_builddir or ./build/release; use a build without sanitizers.
"""


def main(argv):
    srcdir = pathlib.Path(__file__).resolve().parent.parent.parent
    if argv and argv[0] == "check":
        if len(argv) != 2:
            sys.stderr.write("usage: bench/sizing check RUN_DIR\n")
            return 2
        errs = check_run(argv[1])
        for e in errs:
            print("check: " + e)
        print("check: %s: %s" % (argv[1], "consistent" if not errs else "%d problem(s)" % len(errs)))
        return 1 if errs else 0
    if argv and argv[0] == "report":
        if len(argv) != 2:
            sys.stderr.write("usage: bench/sizing report RUN_DIR\n")
            return 2
        return cmd_report(argv[1], srcdir)
    if argv and argv[0] == "plan":
        m = import_section("plan")
        if m is None:
            sys.stderr.write("sizing: the sizing calculator (sizing_lib.plan) is not available\n")
            return 2
        return m.main(argv[1:])
    ap = argparse.ArgumentParser(prog="bench/sizing", description=HELP,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="reduced matrix, short points (the test suite's run)")
    mode.add_argument("--full", action="store_true", help="the whole matrix, every point repeated (the default)")
    ap.add_argument("--out", help="run directory (default ./sizing-YYYYmmdd-HHMMSS)")
    ap.add_argument("--build", help="build directory (default $top_builddir or ./build/release)")
    ap.add_argument("--only", help="comma-separated sections: " + ",".join(SECTIONS))
    ap.add_argument("--sizes", help="the dataplane section's send sizes, e.g. 1400,32768 (default: its matrix)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        sys.stderr.write("sizing: needs root (network namespaces, AF_XDP)\n")
        return 77
    return cmd_run(args, srcdir)
