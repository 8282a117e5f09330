# SPDX-License-Identifier: GPL-2.0
"""opbench_plots - matplotlib figures of an analysis (opbench_data.analyse).

Every figure is written as PNG and SVG, sized to stay readable when pasted
at 800 pixels wide, and titled with kernel, flavours and accelerator:
    overhead.{png,svg}      overhead against N (log2), one line per
                            benchmark and flavour
    zero-ops.{png,svg}      every flavour at N=0 against baseline, boot by boot
    per-op.{png,svg}        cost per operation per walk (slope b), as the
                            report prints it
    residuals.{png,svg}     what the straight line a + b x N leaves, per N
    sweep-<bench>.{png,svg} figure against N, one line per flavour
    tcmalloc-events.{png,svg}  the TCMalloc model: cost per event, legacy
                            against operations (tcmalloc_model.py's figures)
Every figure is the analysis' own (boot-level) number: the plots, the
report and the notebook show the same values. The headline figures
(overhead, zero-ops, per-op) show what the report's headline table
quotes (the analysis' g["headline"]): not the variants, which have their
own sections, and not what the run's unit does not quote (migrate under
icount), which they name at their foot. Each series has its own
colour and marker (COLOURS, MARKERS); legends stand right of the axes and
benchmark names read horizontally, so that no text covers another
(tests/test_plots.py).
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import tcmalloc_model as tm  # noqa: E402
from opbench_stats import CONFIDENCE_TEXT as CONF  # noqa: E402

DPI = 100
SIZE = (8, 5)		# 800 x 500 pixels at DPI
# One colour and one marker per series, fixed (matplotlib's default cycle
# has ten colours; a default run draws eleven series). The lengths are
# coprime, so (colour, marker) stays unique up to 20 x 17 series.
COLOURS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple",
           "tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan",
           "black", "navy", "darkgoldenrod", "maroon", "yellowgreen",
           "deeppink", "indigo", "darkslategray", "darkturquoise", "olive"]
MARKERS = ["o", "s", "^", "v", "D", "<", ">", "p", "h", "*", "X", "P", "d",
           "8", "H", "x", "+"]
STYLES = ["-", "--", ":", "-."]
# Rows of the headline bar and box plots, inches per bar or box: above the
# height of a tick label and of an annotation.
ROW = 0.19


def colour(i):
    return COLOURS[i % len(COLOURS)]


def marker(i):
    return MARKERS[i % len(MARKERS)]


def title(a, what):
    k = a["header"]["kernel"]
    return "%s\nLinux %s, %s, accel %s" % (
        what, k.get("source_version", "?"), " / ".join(a["flavours"]),
        a["accel"])


def save(fig, outdir, name):
    paths = []
    for ext in ("png", "svg"):
        p = os.path.join(outdir, "%s.%s" % (name, ext))
        fig.savefig(p, dpi=DPI)
        paths.append(p)
    plt.close(fig)
    return paths


def label(g):
    return g["bench"] if g["op_type"] == "null" else \
        "%s (%s)" % (g["bench"], g["op_type"])


def headline(a):
    """The groups the headline plots show: what the report's headline table
    quotes (opbench_data.analyse decides, as g["headline"]: not migrate
    under icount, not the variants), in the analysis' order."""
    return [g for g in a["groups"] if g["headline"]]


def excluded_note(a):
    """The groups left out of a headline plot, as a line under it."""
    names = [label(g) for g in a["groups"] if g.get("headline_excluded")]
    return ("not quoted under %s, left out: %s" % (
        a["unit"], ", ".join(names))) if names else ""


def series_index(a):
    """{(bench, op_type, reg, flavour): i}: one colour and marker per
    benchmark and flavour with a sweep of N, the same in overhead and
    residuals."""
    keys = []
    for g in a["groups"]:
        for fl in a["flavours"]:
            if g["vs_zero"].get(fl) or fl in g["cost"]:
                keys.append((g["bench"], g["op_type"], g["reg"], fl))
    return {k: i for i, k in enumerate(keys)}


def outside_legend(ax, fontsize=8):
    """The legend right of the axes, where it hides neither data nor
    labels; tight_layout makes room for it."""
    n = len(ax.get_legend_handles_labels()[1])
    return ax.legend(fontsize=fontsize, loc="upper left",
                     bbox_to_anchor=(1.01, 1), borderaxespad=0,
                     ncol=1 + (n - 1) // 22 if n else 1)


def note(fig, text):
    """A line at the foot of the figure (tight_layout leaves it room when
    rect's bottom is raised)."""
    if text:
        fig.text(0.01, 0.01, text, fontsize=8, ha="left", va="bottom")
        return 0.04
    return 0


def overhead(a, outdir):
    """Overhead against N=0 on every flavour with operations, log2 N,
    symlog y: one colour and marker per benchmark and flavour, line style
    per flavour; what the headline does not quote is left out."""
    fig, ax = plt.subplots(figsize=SIZE)
    drawn = 0
    idx = series_index(a)
    for g in headline(a):
        for j, fl in enumerate(a["flavours"]):
            rows = g["vs_zero"].get(fl)
            if not rows:
                continue
            i = idx[(g["bench"], g["op_type"], g["reg"], fl)]
            ns = [r["nr_ops"] for r in rows]
            d = np.array([r["diff"] for r in rows])
            lo = np.array([(r["diff_ci"] or [r["diff"]] * 2)[0]
                           for r in rows])
            hi = np.array([(r["diff_ci"] or [r["diff"]] * 2)[1]
                           for r in rows])
            ax.plot(ns, d, marker=marker(i), ls=STYLES[j % len(STYLES)],
                    color=colour(i), label="%s, %s" % (label(g), fl), ms=5)
            ax.fill_between(ns, lo, hi, color=colour(i), alpha=0.15, lw=0)
            drawn += 1
    ax.set_xscale("log", base=2)
    ax.set_yscale("symlog", linthresh=100)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("operations registered per thread (N)")
    ax.set_ylabel("%s per loop, N minus N=0 (symlog)" % a["unit"])
    ax.set_title(title(a, "Overhead of N operations against N=0, %s "
                       "CI bands (boot-level)" % CONF), fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    if drawn:
        outside_legend(ax)
    else:
        ax.text(0.5, 0.5, "no sweep of N in this run",
                ha="center", transform=ax.transAxes)
    fig.tight_layout(rect=(0, note(fig, excluded_note(a)), 1, 1))
    return save(fig, outdir, "overhead")


def rows_figure(nrows, per_row):
    """A figure with one row per benchmark, per_row bars or boxes in each,
    tall enough that no two rows' labels touch."""
    h = max(SIZE[1], 1.8 + ROW * max(1, nrows) * max(1, per_row))
    return plt.subplots(figsize=(SIZE[0], h))


def zero_ops(a, outdir):
    """Distributions at N=0, each flavour relative to the reference median:
    one row per benchmark (names read horizontally), one box and one
    marker per flavour."""
    flavours = a["flavours"]
    rows = []
    for g in headline(a):
        cells = {c["flavour"]: c for c in g["cells"] if c["nr_ops"] == 0}
        if cells.get(a["reference"]):
            rows.append((g, cells))
    fig, ax = rows_figure(len(rows), len(flavours))
    step = 0.8 / max(1, len(flavours))
    labelled = set()
    for y, (g, cells) in enumerate(rows):
        ref = cells[a["reference"]]
        for j, fl in enumerate(flavours):
            c = cells.get(fl)
            if not c:
                continue
            rel = (np.array(list(c["per_boot"].values())) / ref["value"]
                   - 1) * 100
            pos = y - 0.4 + step * (j + 0.5)
            ax.boxplot(rel, positions=[pos], widths=step * 0.8, vert=False,
                       patch_artist=True, showfliers=False,
                       boxprops={"facecolor": colour(j), "alpha": 0.4},
                       medianprops={"color": colour(j)})
            jitter = np.linspace(-step * 0.2, step * 0.2, len(rel))
            ax.plot(rel, pos + jitter, ls="none", marker=marker(j),
                    color=colour(j), ms=4, label=None if fl in labelled
                    else fl)
            labelled.add(fl)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label(g) for g, _ in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_xlabel("%% against %s at N=0 (one point per boot's median)"
                  % a["reference"])
    if labelled:
        outside_legend(ax, fontsize=9)
    ax.set_title(title(a, "No operation registered: every flavour "
                       "against %s" % a["reference"]), fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout(rect=(0, note(fig, excluded_note(a)), 1, 1))
    return save(fig, outdir, "zero-ops")


def per_op(a, outdir):
    """Slope b per operation per walk, with its CI, per benchmark/flavour:
    one row per benchmark, one bar per flavour, its value written after
    its interval."""
    groups = [g for g in headline(a) if g["cost"]]
    fls = [f for f in a["flavours"] if any(f in g["cost"] for g in groups)]
    fig, ax = rows_figure(len(groups), len(fls))
    step = 0.8 / max(1, len(fls))
    ends = [0.0]
    labelled = set()
    for y, g in enumerate(groups):
        for j, fl in enumerate(fls):
            m = g["cost"].get(fl)
            if not m:
                continue
            # Per walk where the benchmark declares its walks per loop.
            s = g["per_walk"].get(fl) or {"value": m["b"], "ci": m["b_ci"]}
            b = s["value"]
            bci = s["ci"] or [b, b]
            pos = y - 0.4 + step * (j + 0.5)
            ax.barh(pos, b, step * 0.9,
                    xerr=[[b - bci[0]], [bci[1] - b]], capsize=3,
                    color=colour(a["flavours"].index(fl)),
                    label=None if fl in labelled else fl)
            labelled.add(fl)
            end = max(b, bci[1])
            # Flavours that measured different N were fitted over their
            # own (the designs section compares them on the N they share):
            # the bar says over which.
            txt = "%.1f" % b
            if g.get("common_ns") or g.get("fit_from"):
                txt += " (N=%d..%d)" % (m["ns"][0], m["ns"][-1])
            ax.annotate(txt, (end, pos), ha="left", va="center",
                        fontsize=8, xytext=(4, 0),
                        textcoords="offset points")
            ends += [bci[0], end]
    ax.set_yticks(range(len(groups)))
    ax.set_yticklabels([label(g) for g in groups])
    ax.set_ylim(max(len(groups), 1) - 0.5, -0.5)
    if not groups:
        ax.text(0.5, 0.5, "no cost model in this run (fewer than two N "
                ">= 1)", ha="center", transform=ax.transAxes)
    # Room after the longest bar for its value.
    lo, hi = min(ends), max(ends)
    span = (hi - lo) or 1.0
    ax.set_xlim(min(0, lo - 0.05 * span), hi + 0.18 * span)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_xlabel("%s per operation per walk (slope b)" % a["unit"])
    ax.set_title(title(a, "Cost of one operation in one walk, %s CI"
                       % CONF),
                 fontsize=10)
    if fls:
        outside_legend(ax, fontsize=9)
    else:
        ax.text(0.5, 0.5, "no cost model in this run", ha="center",
                transform=ax.transAxes)
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout(rect=(0, note(fig, excluded_note(a)), 1, 1))
    return save(fig, outdir, "per-op")


def sweep(a, outdir, g):
    """Median time against N, one line per flavour, with the fitted lines."""
    fig, ax = plt.subplots(figsize=SIZE)
    for j, fl in enumerate(a["flavours"]):
        cells = [c for c in g["cells"] if c["flavour"] == fl]
        if not cells:
            continue
        c0 = colour(j)
        ns = np.array([max(c["nr_ops"], 0.5) for c in cells])
        med = np.array([c["value"] for c in cells])
        lo = np.array([(c["ci"] or [c["value"]] * 2)[0] for c in cells])
        hi = np.array([(c["ci"] or [c["value"]] * 2)[1] for c in cells])
        ax.errorbar(ns, med, yerr=[med - lo, hi - med], fmt=marker(j),
                    color=c0, ms=4, capsize=2, label=fl)
        m = g["cost"].get(fl)
        if m:
            # a + b x N is a curve on log axes: draw it through many points.
            xs = np.geomspace(m["ns"][0], m["ns"][-1], 200)
            ax.plot(xs, m["a"] + m["b"] * xs, "-", color=c0, lw=1,
                    label="%s fit: b = %.1f" % (fl, m["b"]))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("operations registered per thread (N; N=0 drawn at 0.5)")
    ax.set_ylabel("%s per loop (%s)" % (a["unit"], g["loop"]))
    ax.set_title(title(a, "%s: time against N" % label(g)), fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    outside_legend(ax, fontsize=9)
    fig.tight_layout(rect=(0, note(fig, "a + b x N fitted per boot on "
                                        "N >= 1; see residuals.png"), 1, 1))
    name = "sweep-%s" % g["bench"]
    if g["op_type"] != "null":
        name += "-" + g["op_type"]
    return save(fig, outdir, name)


def residuals(a, outdir):
    """Residual of a + b x N at each N, relative to the fit, per benchmark
    and flavour: a straight line on log axes hides a step; this does not."""
    fig, ax = plt.subplots(figsize=SIZE)
    drawn = 0
    idx = series_index(a)
    for g in a["groups"]:
        for j, fl in enumerate(a["flavours"]):
            m = g["cost"].get(fl)
            if not m:
                continue
            i = idx[(g["bench"], g["op_type"], g["reg"], fl)]
            rel = {int(n): v for n, v in m["residuals_rel"].items()}
            ns = sorted(rel)
            r = [100 * rel[n] for n in ns]
            ax.plot(ns, r, marker=marker(i), ls=STYLES[j % len(STYLES)],
                    color=colour(i), ms=5, label="%s, %s" % (label(g), fl))
            drawn += 1
    ax.set_xscale("log", base=2)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("operations registered per thread (N)")
    ax.set_ylabel("residual of a + b x N, % of the fitted value")
    ax.set_title(title(a, "What the straight line leaves, per N (mean "
                       "over boots)"), fontsize=10)
    ax.grid(True, alpha=0.3)
    if drawn:
        outside_legend(ax)
    else:
        ax.text(0.5, 0.5, "no cost model in this run", ha="center",
                transform=ax.transAxes)
    fig.tight_layout()
    return save(fig, outdir, "residuals")


def tcmalloc_events(t, a, outdir):
    """Cost per event, legacy against ops, with intervals: one panel per
    flavour, bars per event, and ops less legacy (paired) written over
    each pair."""
    evs = [e for e in t["events"] if e["quoted"] and e["what"] != "syscall"]
    if not evs:
        return []
    fls = [f for f in t["flavours"] if any(e["flavour"] == f for e in evs)]
    fig, axes = plt.subplots(1, len(fls), figsize=(8, 5), squeeze=False,
                             sharey=True)
    for ax, fl in zip(axes[0], fls):
        names = [w for w in tm.EVENTS
                 if any(e["what"] == w and e["flavour"] == fl for e in evs)]
        x = np.arange(len(names))
        for i, mode in enumerate(tm.MODES):
            vals, lo, hi = [], [], []
            for w in names:
                e = next((e for e in evs if e["what"] == w and e["mode"] == mode
                          and e["flavour"] == fl), None)
                v = e["cost"] if e else np.nan
                vals.append(v)
                c = e["ci"] if e and e["ci"] else [v, v]
                lo.append(v - c[0])
                hi.append(c[1] - v)
            if all(np.isnan(vals)):
                continue
            ax.bar(x + (i - 0.5) * 0.4, vals, 0.4, yerr=[lo, hi], capsize=3,
                   label=mode, color=tm.COLOURS[mode])
        # The difference that matters, ops less legacy in the same boots,
        # written over each pair of bars.
        for j, w in enumerate(names):
            d = next((m for m in t["modes"] if m["what"] == w
                      and m["flavour"] == fl), None)
            top = max((e["ci"][1] for e in evs if e["what"] == w
                       and e["flavour"] == fl and e["ci"]), default=None)
            if d and d["diff"] is not None and top is not None:
                ax.annotate("ops %+.0f" % d["diff"], (x[j], top),
                            textcoords="offset points", xytext=(0, 4),
                            ha="center", fontsize=8)
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=30)
        ax.set_title("%s kernel" % fl)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("%s per event, beyond one pair" % a["unit"])
    for ax in axes[0]:
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
    fig.suptitle(title(a, "TCMalloc model: cost per event, legacy "
                       "against operations (%s CI)" % CONF), fontsize=9)
    fig.tight_layout()
    return save(fig, outdir, "tcmalloc-events")


def design_slopes(d, a, outdir):
    """The three designs: the walk's slope per operation per walk for each
    benchmark, with intervals, and the registration round trip against the
    number of operations held."""
    benches = [b for b in ("switch", "signal", "preempt")
               if any(s["bench"] == b for s in d["slopes"])]
    reg = [r for r in d["register"] if r["cells"]]
    if not benches and not reg:
        return []
    fig, axes = plt.subplots(1, 2 if reg else 1, figsize=(10 if reg else 6,
                                                          4.5), squeeze=False)
    ax = axes[0][0]
    x = np.arange(len(benches))
    width = 0.8 / len(d["flavours"])
    for i, fl in enumerate(d["flavours"]):
        vals, lo, hi = [], [], []
        for b in benches:
            s = next((s for s in d["slopes"] if s["bench"] == b
                      and s["flavour"] == fl), None)
            v = s["value"] if s else np.nan
            c = s["ci"] if s and s["ci"] else [v, v]
            vals.append(v)
            lo.append(v - c[0])
            hi.append(c[1] - v)
        pos = x + (i - (len(d["flavours"]) - 1) / 2) * width
        ax.bar(pos, vals, width, yerr=[lo, hi], capsize=3,
               color=d.get("colours", {}).get(fl), label="%s (%s)" % (
                   fl, d["names"][fl]))
        for p, v in zip(pos, vals):
            if not np.isnan(v):
                ax.annotate("%.1f" % v, (p, v), textcoords="offset points",
                            xytext=(0, 3), ha="center", fontsize=7)
            else:
                ax.annotate("no\nslope", (p, 0), textcoords="offset points",
                            xytext=(0, 3), ha="center", fontsize=6,
                            color=d.get("colours", {}).get(fl))
    ax.set_xticks(x)
    ax.set_xticklabels(benches)
    ax.set_ylabel("%s per operation per walk" % a["unit"])
    ax.set_title("slope of the walk (%s CI)" % CONF, fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.35)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    if reg:
        ax = axes[0][1]
        for j, r in enumerate(reg):
            ns = [c["nr_ops"] for c in r["cells"]]
            vals = [c["value"] for c in r["cells"]]
            ax.plot([max(n, 0.5) for n in ns], vals, marker=marker(j),
                    color=d.get("colours", {}).get(r["flavour"]),
                    label=r["flavour"])
        ax.set_xscale("log", base=2)
        ax.set_xlabel("operations held (N; N = 0 drawn at 0.5)")
        ax.set_ylabel("%s per register + unregister" % a["unit"])
        ax.set_title("registration round trip", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title(a, "three designs of the walk%s" % (
        " (instructions under icount, not time)" if a["accel"] == "icount"
        else "")), fontsize=9)
    fig.tight_layout()
    return save(fig, outdir, "design-slopes")


def plot_all(a, outdir):
    os.makedirs(outdir, exist_ok=True)
    paths = []
    paths += overhead(a, outdir)
    paths += zero_ops(a, outdir)
    paths += per_op(a, outdir)
    paths += residuals(a, outdir)
    for g in a["groups"]:
        if len({c["nr_ops"] for c in g["cells"]}) > 1:
            paths += sweep(a, outdir, g)
    if a.get("tcmalloc"):
        paths += tcmalloc_events(a["tcmalloc"], a, outdir)
    if a.get("designs"):
        paths += design_slopes(a["designs"], a, outdir)
    return paths
