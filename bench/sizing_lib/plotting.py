# bench/sizing_lib/plotting.py: what every figure of the sizing study shares, so that no figure can
# mislead in its own way: matplotlib set up headless with text kept as text in the SVG (check reads the
# series labels), the spread of a point over its repetitions (min-max) from a raw table, lines and bars
# drawn with that spread as error bars, a missing value (a failed point) drawn as a marked gap that says
# so instead of a zero, bars carrying their values, and linear value axes starting at 0.
import math


def pyplot():
    """matplotlib.pyplot, headless, SVG text as text."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt
    return plt


def ok(v):
    """A value that can be drawn: a finite number (None, NaN and the empty CSV cell are missing)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def spread(rows, key, value):
    """{key(row): (min, max)} of value(row) over the rows (the repetitions of each point); rows whose
    value is missing are left out."""
    out = {}
    for r in rows:
        v = value(r)
        if not ok(v):
            continue
        k = key(r)
        lo, hi = out.get(k, (v, v))
        out[k] = (min(lo, v), max(hi, v))
    return out


def _yerr(ys, spans):
    lo = [max(y - s[0], 0.0) if s else 0.0 for y, s in zip(ys, spans)]
    hi = [max(s[1] - y, 0.0) if s else 0.0 for y, s in zip(ys, spans)]
    return [lo, hi]


def line(ax, xs, ys, spans=None, label=None, **kw):
    """A series with its repetitions' min-max as error bars. Points whose value is missing are not
    drawn (the line breaks there); returns their x positions, for missing()."""
    keep = [i for i, y in enumerate(ys) if ok(y)]
    gone = [xs[i] for i in range(len(xs)) if i not in keep]
    x = [xs[i] for i in keep]
    y = [ys[i] for i in keep]
    s = [spans[i] if spans else None for i in keep]
    if x:
        ax.errorbar(x, y, yerr=_yerr(y, s), marker="o", capsize=3, label=label, **kw)
    return gone


def missing(ax, xs, why, color="red"):
    """Marks points that have no value at the foot of the axis, with WHY in the legend (a failed or
    empty point is not a zero)."""
    if not xs:
        return
    ax.plot(xs, [0.0] * len(xs), linestyle="none", marker="x", markersize=9, color=color, clip_on=False,
            transform=ax.get_xaxis_transform(), label=why)


def bars(ax, xs, vals, width, spans=None, label=None, fmt="%.0f", **kw):
    """Bars with min-max error bars and their value written on them; a missing value gets no bar and
    "n/a" in its place."""
    keep = [i for i, v in enumerate(vals) if ok(v)]
    x = [xs[i] for i in keep]
    y = [vals[i] for i in keep]
    s = [spans[i] if spans else None for i in keep]
    if x:
        b = ax.bar(x, y, width, yerr=_yerr(y, s) if spans else None, capsize=2, label=label, **kw)
        ax.bar_label(b, labels=[fmt % v for v in y], fontsize=6, rotation=90, padding=2)
    for i in range(len(xs)):
        if i not in keep:
            ax.text(xs[i], 0.01, "n/a", ha="center", va="bottom", fontsize=6, rotation=90, color="red",
                    transform=ax.get_xaxis_transform())


def from_zero(*axes):
    """Linear value axes start at 0: a scale that starts at 38 % makes 2 % look like a factor."""
    for ax in axes:
        if ax.get_yscale() == "linear":
            ax.set_ylim(bottom=0)
