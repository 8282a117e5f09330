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
report and the notebook show the same values.
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import tcmalloc_model as tm  # noqa: E402

DPI = 100
SIZE = (8, 5)		# 800 x 500 pixels at DPI
COLOURS = plt.rcParams["axes.prop_cycle"].by_key()["color"]


def title(a, run, what):
    k = next((b["kernel"] for b in run["boots"] if b["kernel"]), {})
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


STYLES = ["-", "--", ":", "-."]


def overhead(a, run, outdir):
    """Overhead against N=0 on every flavour with operations, log2 N,
    symlog y: colour per benchmark, line style per flavour."""
    fig, ax = plt.subplots(figsize=SIZE)
    drawn = 0
    fls = [f for f in a["flavours"] if any(g["vs_zero"].get(f)
                                          for g in a["groups"])]
    for i, g in enumerate(a["groups"]):
        for j, fl in enumerate(fls):
            rows = g["vs_zero"].get(fl)
            if not rows:
                continue
            ns = [r["nr_ops"] for r in rows]
            d = np.array([r["diff"] for r in rows])
            lo = np.array([(r["diff_ci"] or [r["diff"]] * 2)[0]
                           for r in rows])
            hi = np.array([(r["diff_ci"] or [r["diff"]] * 2)[1]
                           for r in rows])
            c = COLOURS[i % len(COLOURS)]
            ax.plot(ns, d, "o" + STYLES[j % len(STYLES)], color=c,
                    label="%s, %s" % (label(g), fl), ms=4)
            ax.fill_between(ns, lo, hi, color=c, alpha=0.2, lw=0)
            drawn += 1
    ax.set_xscale("log", base=2)
    ax.set_yscale("symlog", linthresh=100)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("operations registered per thread (N)")
    ax.set_ylabel("%s per loop, N minus N=0 (symlog)" % a["unit"])
    ax.set_title(title(a, run, "Overhead of N operations against N=0, 95% "
                       "CI bands (boot-level)"), fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    if drawn:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no sweep of N in this run",
                ha="center", transform=ax.transAxes)
    fig.tight_layout()
    return save(fig, outdir, "overhead")


def zero_ops(a, run, outdir):
    """Distributions at N=0, each flavour relative to the reference median."""
    fig, ax = plt.subplots(figsize=SIZE)
    ticks, names = [], []
    x = 0
    flavours = a["flavours"]
    for g in a["groups"]:
        cells = {c["flavour"]: c for c in g["cells"] if c["nr_ops"] == 0}
        ref = cells.get(a["reference"])
        if not ref:
            continue
        for j, fl in enumerate(flavours):
            c = cells.get(fl)
            if not c:
                continue
            rel = (np.array(list(c["per_boot"].values())) / ref["value"]
                   - 1) * 100
            pos = x + j * 0.8 / max(1, len(flavours))
            ax.boxplot(rel, positions=[pos], widths=0.6 / len(flavours),
                       patch_artist=True, showfliers=False,
                       boxprops={"facecolor": COLOURS[j % len(COLOURS)],
                                 "alpha": 0.5})
            jitter = np.linspace(-0.08, 0.08, len(rel))
            ax.plot(pos + jitter, rel, ".", color=COLOURS[j % len(COLOURS)],
                    ms=4)
        ticks.append(x + 0.4 * (len(flavours) - 1) / len(flavours))
        names.append(label(g))
        x += 1
    ax.set_xticks(ticks)
    ax.set_xticklabels(names)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_ylabel("%% against %s at N=0 (one point per boot's median)"
                  % a["reference"])
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLOURS[j % len(COLOURS)],
                             alpha=0.5) for j in range(len(flavours))]
    ax.legend(handles, flavours, fontsize=9)
    ax.set_title(title(a, run, "No operation registered: every flavour "
                       "against %s" % a["reference"]), fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return save(fig, outdir, "zero-ops")


def per_op(a, run, outdir):
    """Slope b per operation per walk, with its CI, per benchmark/flavour."""
    fig, ax = plt.subplots(figsize=SIZE)
    names, x = [], 0
    fls = [f for f in a["flavours"] if any(f in g["cost"]
                                          for g in a["groups"])]
    width = 0.8 / max(1, len(fls))
    for g in a["groups"]:
        if not g["cost"]:
            continue
        walks = g["walks_per_loop"] or 1
        for j, fl in enumerate(fls):
            m = g["cost"].get(fl)
            if not m:
                continue
            b = m["b"] / walks
            bci = m["b_ci"] or [m["b"]] * 2
            err = [[b - bci[0] / walks], [bci[1] / walks - b]]
            ax.bar(x + j * width, b, width, yerr=err, capsize=3,
                   color=COLOURS[j % len(COLOURS)],
                   label=fl if x == 0 else None)
            ax.annotate("%.1f" % b, (x + j * width, b), ha="center",
                        va="bottom", fontsize=8, xytext=(0, 3),
                        textcoords="offset points")
        names.append(label(g))
        x += 1
    ax.set_xticks([i + width * (len(fls) - 1) / 2 for i in range(x)])
    ax.set_xticklabels(names)
    ax.set_ylabel("%s per operation per walk (slope b)" % a["unit"])
    ax.set_title(title(a, run, "Cost of one operation in one walk, 95% CI"),
                 fontsize=10)
    if fls:
        ax.legend(fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return save(fig, outdir, "per-op")


def sweep(a, run, outdir, g):
    """Median time against N, one line per flavour, with the fitted lines."""
    fig, ax = plt.subplots(figsize=SIZE)
    for j, fl in enumerate(a["flavours"]):
        cells = [c for c in g["cells"] if c["flavour"] == fl]
        if not cells:
            continue
        c0 = COLOURS[j % len(COLOURS)]
        ns = np.array([max(c["nr_ops"], 0.5) for c in cells])
        med = np.array([c["value"] for c in cells])
        lo = np.array([(c["ci"] or [c["value"]] * 2)[0] for c in cells])
        hi = np.array([(c["ci"] or [c["value"]] * 2)[1] for c in cells])
        ax.errorbar(ns, med, yerr=[med - lo, hi - med], fmt="o", color=c0,
                    ms=4, capsize=2, label=fl)
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
    ax.text(0.01, 0.01, "a + b x N fitted per boot on N >= 1; see "
            "residuals.png", transform=ax.transAxes, fontsize=8)
    ax.set_title(title(a, run, "%s: time against N" % label(g)), fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=9)
    fig.tight_layout()
    name = "sweep-%s" % g["bench"]
    if g["op_type"] != "null":
        name += "-" + g["op_type"]
    return save(fig, outdir, name)


def residuals(a, run, outdir):
    """Residual of a + b x N at each N, relative to the fit, per benchmark
    and flavour: a straight line on log axes hides a step; this does not."""
    fig, ax = plt.subplots(figsize=SIZE)
    drawn = 0
    for i, g in enumerate(a["groups"]):
        for j, (fl, m) in enumerate(sorted(g["cost"].items())):
            rel = {int(n): v for n, v in m["residuals_rel"].items()}
            ns = sorted(rel)
            r = [100 * rel[n] for n in ns]
            ax.plot(ns, r, "o" + STYLES[j % len(STYLES)],
                    color=COLOURS[i % len(COLOURS)], ms=4,
                    label="%s, %s" % (label(g), fl))
            drawn += 1
    ax.set_xscale("log", base=2)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("operations registered per thread (N)")
    ax.set_ylabel("residual of a + b x N, % of the fitted value")
    ax.set_title(title(a, run, "What the straight line leaves, per N (mean "
                       "over boots)"), fontsize=10)
    ax.grid(True, alpha=0.3)
    if drawn:
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no cost model in this run", ha="center",
                transform=ax.transAxes)
    fig.tight_layout()
    return save(fig, outdir, "residuals")


def tcmalloc_events(t, a, run, outdir):
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
    fig.suptitle(title(a, run, "TCMalloc model: cost per event, legacy "
                       "against operations (95% CI)"), fontsize=9)
    fig.tight_layout()
    return save(fig, outdir, "tcmalloc-events")


DESIGN_COLOURS = {"ops": "tab:blue", "resident": "tab:green",
                  "rfc": "tab:red"}


def design_slopes(d, a, run, outdir):
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
               color=DESIGN_COLOURS.get(fl), label="%s (%s)" % (
                   fl, d["names"][fl]))
        for p, v in zip(pos, vals):
            if not np.isnan(v):
                ax.annotate("%.1f" % v, (p, v), textcoords="offset points",
                            xytext=(0, 3), ha="center", fontsize=7)
            else:
                ax.annotate("no\nslope", (p, 0), textcoords="offset points",
                            xytext=(0, 3), ha="center", fontsize=6,
                            color=DESIGN_COLOURS.get(fl))
    ax.set_xticks(x)
    ax.set_xticklabels(benches)
    ax.set_ylabel("%s per operation per walk" % a["unit"])
    ax.set_title("slope of the walk (95% CI)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.35)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    if reg:
        ax = axes[0][1]
        for r in reg:
            ns = [c["nr_ops"] for c in r["cells"]]
            vals = [c["value"] for c in r["cells"]]
            ax.plot([max(n, 0.5) for n in ns], vals, marker="o",
                    color=DESIGN_COLOURS.get(r["flavour"]),
                    label=r["flavour"])
        ax.set_xscale("log", base=2)
        ax.set_xlabel("operations held (N; N = 0 drawn at 0.5)")
        ax.set_ylabel("%s per register + unregister" % a["unit"])
        ax.set_title("registration round trip", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title(a, run, "three designs of the walk%s" % (
        " (instructions under icount, not time)" if a["accel"] == "icount"
        else "")), fontsize=9)
    fig.tight_layout()
    return save(fig, outdir, "design-slopes")


def plot_all(a, run, outdir):
    os.makedirs(outdir, exist_ok=True)
    paths = []
    paths += overhead(a, run, outdir)
    paths += zero_ops(a, run, outdir)
    paths += per_op(a, run, outdir)
    paths += residuals(a, run, outdir)
    for g in a["groups"]:
        if len({c["nr_ops"] for c in g["cells"]}) > 1:
            paths += sweep(a, run, outdir, g)
    if a.get("tcmalloc"):
        paths += tcmalloc_events(a["tcmalloc"], a, run, outdir)
    if a.get("designs"):
        paths += design_slopes(a["designs"], a, run, outdir)
    return paths
