# bench/sizing_lib/report.py: the report writer. Sections describe their part through a Report
# (heading, para, table, plot); write() renders it twice: RUN/report.md (GitHub markdown, plots as
# PNG) and RUN/report.html (one self-contained page with a small stylesheet, plots as SVG by relative
# path, every table in full), after a header naming the machine, the build and the run's duration.
import html
import re


class Report:
    def __init__(self, ctx):
        self.ctx = ctx
        self.blocks = []     # (kind, payload)

    def heading(self, text, level=2):
        self.blocks.append(("h", (level, text)))

    def para(self, text):
        self.blocks.append(("p", text))

    def table(self, name):
        if name in self.ctx.tables:
            self.blocks.append(("t", name))

    def plot(self, stem, caption=""):
        if stem in self.ctx.plots:
            self.blocks.append(("f", (stem, caption)))


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
            return "%.4g" % v
        return ("%.3f" % v).rstrip("0").rstrip(".") if abs(v) < 100 else "%.1f" % v
    return str(v)


def _inline_html(text):
    t = html.escape(text)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    t = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", t)
    return t


def _para_html(text):
    lines = text.strip().splitlines()
    if lines and all(x.lstrip().startswith(("- ", "* ")) for x in lines):
        return "<ul>" + "".join("<li>%s</li>" % _inline_html(x.lstrip()[2:]) for x in lines) + "</ul>"
    return "<p>%s</p>" % _inline_html(" ".join(lines))


def write(ctx, mods):
    rep = Report(ctx)
    for m in mods:
        st = ctx.meta.get("sections", {}).get(m.NAME, {})
        rep.heading("%s (%s)" % (m.TITLE, m.NAME))
        if st.get("status", "ok") != "ok":
            rep.para("This section did not finish: %s. Its tables below are what it measured before." %
                     st.get("status"))
        try:
            m.report(ctx, rep)
        except Exception as e:  # the rest of the report is still written
            rep.para("The section's report failed: %s" % e)
            ctx.log("section %s: report failed: %s" % (m.NAME, e))
    meta = ctx.meta
    head = [("machine", meta.get("machine")), ("CPU", "%s, %s CPUs, %.0f MHz" % (
        meta.get("cpu_model"), meta.get("ncpus"), meta.get("mhz", 0))), ("kernel", meta.get("kernel")),
        ("build", meta.get("builddir")), ("command", meta.get("command")),
        ("start", meta.get("start")), ("elapsed", "%s s" % meta.get("elapsed_s")),
        ("mode", "quick (reduced matrix)" if ctx.quick else "full")]
    head += [("re-measured", "%s: %s to %s (%s s)" % (", ".join(r["sections"]), r.get("start"), r.get("end"),
                                                       r.get("elapsed_s"))) for r in meta.get("remeasured", [])]
    if meta.get("rederived"):
        head.append(("model applied again", "%s (bench/sizing report)" % meta["rederived"]))
    # markdown
    md = ["# xipsec sizing study", ""]
    md += ["| | |", "|---|---|"] + ["| %s | %s |" % (k, v) for k, v in head] + [""]
    for kind, x in rep.blocks:
        if kind == "h":
            md += ["#" * x[0] + " " + x[1], ""]
        elif kind == "p":
            md += [x.strip(), ""]
        elif kind == "t":
            t = ctx.tables[x]
            md += ["**Table `%s`.** %s (CSV: `%s.csv`)" % (x, t["caption"], x), ""]
            md.append("| " + " | ".join(t["columns"]) + " |")
            md.append("|" + "---|" * len(t["columns"]))
            md += ["| " + " | ".join(_cell(v) for v in r) + " |" for r in t["rows"]]
            md.append("")
        elif kind == "f":
            md += ["![%s](plots/%s.png)" % (x[1] or x[0], x[0]), "", "*%s* (plots/%s.svg)" % (x[1], x[0]), ""]
    (ctx.run_dir / "report.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    # html
    h = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'><title>xipsec sizing study</title>",
         "<style>body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}"
         "table{border-collapse:collapse;font-size:85%;margin:0.5em 0 1.5em}"
         "td,th{border:1px solid #bbb;padding:2px 6px;text-align:right}th{background:#eee}"
         "td:first-child{text-align:left}caption{text-align:left;font-weight:bold;padding:4px 0}"
         "figure{margin:1em 0}figcaption{font-style:italic}img{max-width:100%}"
         "details{margin-bottom:1em}</style></head><body>",
         "<h1>xipsec sizing study</h1>", "<table>"]
    h += ["<tr><th>%s</th><td style='text-align:left'>%s</td></tr>" % (html.escape(k), html.escape(str(v)))
          for k, v in head]
    h.append("</table>")
    for kind, x in rep.blocks:
        if kind == "h":
            h.append("<h%d>%s</h%d>" % (x[0], html.escape(x[1]), x[0]))
        elif kind == "p":
            h.append(_para_html(x))
        elif kind == "t":
            t = ctx.tables[x]
            big = len(t["rows"]) > 40
            if big:
                h.append("<details><summary>Table %s (%d rows)</summary>" % (html.escape(x), len(t["rows"])))
            h.append("<table id=\"table-%s\"><caption>%s: %s (<a href='%s.csv'>CSV</a>)</caption>" % (
                html.escape(x), html.escape(x), _inline_html(t["caption"]), html.escape(x)))
            h.append("<tr>" + "".join("<th>%s</th>" % html.escape(c) for c in t["columns"]) + "</tr>")
            for r in t["rows"]:
                h.append("<tr>" + "".join("<td>%s</td>" % html.escape(_cell(v)) for v in r) + "</tr>")
            h.append("</table>")
            if big:
                h.append("</details>")
        elif kind == "f":
            h.append("<figure><img src=\"plots/%s.svg\" alt=\"%s\"><figcaption>%s (<a href='plots/%s.png'>PNG"
                     "</a>)</figcaption></figure>" % (x[0], html.escape(x[1] or x[0]), html.escape(x[1]), x[0]))
    # tables no section showed are still in the report
    shown = {x for kind, x in rep.blocks if kind == "t"}
    rest = [n for n in ctx.tables if n not in shown]
    if rest:
        h.append("<h2>Other tables</h2>")
        for n in rest:
            t = ctx.tables[n]
            h.append("<table id=\"table-%s\"><caption>%s: %s</caption>" % (
                html.escape(n), html.escape(n), _inline_html(t["caption"])))
            h.append("<tr>" + "".join("<th>%s</th>" % html.escape(c) for c in t["columns"]) + "</tr>")
            for r in t["rows"]:
                h.append("<tr>" + "".join("<td>%s</td>" % html.escape(_cell(v)) for v in r) + "</tr>")
            h.append("</table>")
    h.append("</body></html>")
    (ctx.run_dir / "report.html").write_text("\n".join(h) + "\n", encoding="utf-8")
