# SPDX-License-Identifier: GPL-2.0
"""Every plot the analysis draws is readable at its saved size (issue 28).

Each figure of opbench_plots.plot_all is rendered (fig.canvas.draw()) as it
is saved, and checked:
  - no two visible texts overlap: tick labels, axis labels, titles, legend
    entries, annotations (window extents; touching is allowed, empty
    strings are ignored), and every text lies inside the figure;
  - within each axes no two series (legend entries) share (colour, marker);
  - the headline plots (overhead, zero-ops, per-op) leave out what the
    report does not quote under the run's unit (migrate under icount),
    and show it where the report quotes it (tcg).
On the synthetic run (tests/data/make-synthetic-run.py), on its walker plan
(the four flavours and the designs' figure) and on a run shaped like make
bench's default plan (microbench/plans/default.plan): the synthetic
records spread over its fourteen benchmarks and variants, the sweep of N
0, 1, 2, ..., 2048 and the TCMalloc model, the crowded case.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import TOP
from test_analysis import DATA, rewrite, synthetic

sys.path.insert(0, os.path.join(TOP, "analysis"))
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.container import Container  # noqa: E402

import opbench_data  # noqa: E402
import opbench_plots  # noqa: E402

HEADLINE = ("overhead", "zero-ops", "per-op")
# How far (pixels) a text may overlap another or the figure's edge: rounding.
SLACK = 0.5


# Checks of one figure ------------------------------------------------------

def _visible(t):
    return t.get_visible() and bool(t.get_text().strip())


def _tick_labels(axis):
    """The tick labels drawn: those of ticks inside the view interval (the
    axis keeps more Tick objects than it draws)."""
    out = []
    for tick in axis._update_ticks():
        for t in (tick.label1, tick.label2):
            if tick.get_visible() and t.get_visible():
                out.append(t)
    return out


def _legend_texts(leg):
    if leg is None or not leg.get_visible():
        return []
    return list(leg.get_texts()) + [leg.get_title()]


def texts(fig):
    """(what, Text) of every text the figure shows."""
    out = []
    if fig._suptitle is not None:
        out.append(("suptitle", fig._suptitle))
    out += [("figure text", t) for t in fig.texts]
    for leg in fig.legends:
        out += [("figure legend", t) for t in _legend_texts(leg)]
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        w = "axes %d " % i
        out += [(w + "x tick label", t) for t in _tick_labels(ax.xaxis)]
        out += [(w + "y tick label", t) for t in _tick_labels(ax.yaxis)]
        out += [(w + "x label", ax.xaxis.label),
                (w + "y label", ax.yaxis.label),
                (w + "x offset", ax.xaxis.get_offset_text()),
                (w + "y offset", ax.yaxis.get_offset_text()),
                (w + "title", ax.title), (w + "left title", ax._left_title),
                (w + "right title", ax._right_title)]
        out += [(w + "text", t) for t in ax.texts]
        out += [(w + "legend", t) for t in _legend_texts(ax.get_legend())]
    seen = set()
    uniq = []
    for w, t in out:
        if _visible(t) and id(t) not in seen:
            seen.add(id(t))
            uniq.append((w, t))
    return uniq


def text_problems(fig):
    """Overlapping texts and texts outside the figure, as sentences."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    boxes = [(w, t.get_text(), t.get_window_extent(r)) for w, t in texts(fig)]
    fb = fig.bbox
    out = []
    for w, s, b in boxes:
        if (b.x0 < fb.x0 - SLACK or b.y0 < fb.y0 - SLACK or
                b.x1 > fb.x1 + SLACK or b.y1 > fb.y1 + SLACK):
            out.append("%s %r outside the figure (%s)" % (w, s, b.bounds))
    for i, (w1, s1, b1) in enumerate(boxes):
        for w2, s2, b2 in boxes[i + 1:]:
            dx = min(b1.x1, b2.x1) - max(b1.x0, b2.x0)
            dy = min(b1.y1, b2.y1) - max(b1.y0, b2.y0)
            if dx > SLACK and dy > SLACK:
                out.append("%s %r overlaps %s %r" % (w1, s1, w2, s2))
    return out


def _handle_style(h):
    """(colour, marker) of a legend handle: a line, an error bar, a bar
    series, a patch or a collection."""
    if isinstance(h, Container):
        kids = [k for k in h.get_children() if k is not None]
        lines = [k for k in kids if isinstance(k, matplotlib.lines.Line2D)]
        h = lines[0] if lines else kids[0]
    if isinstance(h, matplotlib.lines.Line2D):
        m = h.get_marker()
        return (mcolors.to_hex(h.get_color()),
                None if m in (None, "", " ", "None", "none") else str(m))
    if isinstance(h, matplotlib.patches.Patch):
        return (mcolors.to_hex(h.get_facecolor()), h.get_hatch())
    if isinstance(h, matplotlib.collections.Collection):
        fc = h.get_facecolor()
        c = fc[0] if len(fc) else h.get_edgecolor()[0]
        return (mcolors.to_hex(c), type(h).__name__)
    raise AssertionError("unknown legend handle %r" % h)


def series(fig):
    """Per axes, [(label, (colour, marker))] of its legend's series."""
    out = []
    for ax in fig.axes:
        hs, ls = ax.get_legend_handles_labels()
        out.append([(lab, _handle_style(h)) for h, lab in zip(hs, ls)])
    return out


def series_problems(fig):
    out = []
    for i, ss in enumerate(series(fig)):
        seen = {}
        for lab, style in ss:
            if style in seen:
                out.append("axes %d: %r and %r share colour and marker %s"
                           % (i, seen[style], lab, style))
            seen.setdefault(style, lab)
    return out


def named(fig):
    """What the figure names as data: tick labels and legend entries (not
    the note that says what was left out)."""
    return [t.get_text() for w, t in texts(fig)
            if "tick label" in w or "legend" in w]


def render(a, outdir, monkeypatch):
    """plot_all, each figure checked as it is saved: {name: facts}."""
    seen = {}

    def check(fig, od, name):
        # Checked as drawn at the saved size; not written (savefig is
        # test_analysis' business, and the slow half of the time).
        fig.set_dpi(opbench_plots.DPI)
        seen[name] = {"text": text_problems(fig),
                      "series": series_problems(fig),
                      "nseries": [len(s) for s in series(fig)],
                      "named": named(fig)}
        plt.close(fig)
        return [os.path.join(od, "%s.%s" % (name, e))
                for e in ("png", "svg")]
    with monkeypatch.context() as m:
        m.setattr(opbench_plots, "save", check)
        paths = opbench_plots.plot_all(a, outdir)
    assert sorted(paths) == sorted(
        os.path.join(outdir, "%s.%s" % (n, e)) for n in seen
        for e in ("png", "svg"))
    return seen


# Runs ----------------------------------------------------------------------

SWEEP = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
# microbench/plans/default.plan's BENCHES, as records name them:
# (bench, op_type, reg, layout, waker_ops, N, the synthetic bench copied,
# extra per loop and per N).
DEFAULT = [
    ("syscall", "null", "own", "packed", False, SWEEP, "syscall", 0, 0),
    ("switch", "null", "own", "packed", False, SWEEP, "switch", 0, 0),
    ("preempt", "null", "own", "packed", False, SWEEP, "switch", -1400, -45),
    ("preempt", "null", "own", "packed", True, [0, 1, 64, 2048], "switch",
     -1400, 0),
    ("preempt", "null", "own", "scattered", False, [0, 1, 64, 2048],
     "switch", -1400, -44),
    ("switch", "null", "own", "scattered", False, [0, 1, 2048], "switch",
     0, 2),
    ("signal", "null", "own", "packed", False, SWEEP, "switch", -2300, -45),
    ("migrate", "cpu", "own", "packed", False, SWEEP, "switch", 9000, 30),
    ("syscall", "null", "legacy", "packed", False, [0], "syscall", 3, 0),
    ("switch", "null", "legacy", "packed", False, [0], "switch", 20, 0),
    ("signal", "null", "legacy", "packed", False, [0], "switch", -2280, 0),
    ("syscall", "null", "glibc", "packed", False, [0, 1], "syscall", 1, 0),
    ("switch", "null", "glibc", "packed", False, [0, 1], "switch", 8, 1),
    ("signal", "null", "glibc", "packed", False, [0, 1], "switch", -2290, 0),
]
METRICS = ("tsc_median", "tsc_p10", "tsc_p90", "tsc_mean")


def default_records(recs):
    """One boot's synthetic records spread over DEFAULT: every benchmark
    and variant, N up to 2048 (N above 64 copied from 64, its walks
    added), every gate passed."""
    by = {}
    for r in recs:
        if r["kind"] in ("sample", "gate", "unsupported"):
            by.setdefault((r["bench"], r["nr_ops"]), []).append(r)
    out = [r for r in recs if r["kind"] == "clock"]
    for bench, op_type, reg, layout, waker, ns, src, extra, per_n in DEFAULT:
        for n in ns:
            n_src = min(n, 64)
            for r in by[(src, n_src)]:
                r = dict(r, bench=bench, op_type=op_type, reg=reg,
                         nr_ops=n)
                if layout != "packed":
                    r["layout"] = layout
                if waker:
                    r["waker_ops"] = True
                if r["kind"] == "sample":
                    walk = 90.4 * (n - n_src) if src == "switch" and n_src \
                        else 0
                    for k in METRICS:
                        r[k] = round(r[k] + extra + per_n * n + walk, 3)
                    r.update(valid=True, why="", missed=0,
                             walked=r["walked"] and r["counted"])
                elif r["kind"] == "gate":
                    r.update(resets_expected=n if src == "switch" else 0,
                             resets_seen=n if src == "switch" else 0)
                out.append(r)
    return out


TCM_COST = {"pair": 600, "recovery": 350, "syscall": 260, "signal": 2200,
            "fence": 900, "preempt": 3100, "migrate": 9500}


def tcmodel_records(rng, boot, ops):
    """A boot's tcmodel.json (microbench/tcmodel.c): both modes, every
    event, four samples each."""
    out = [{"kind": "clock", "clock": "tsc", "insns": 200000,
            "ticks": 200000, "ticks_per_insn": 1.0, "ns_per_tick": 1.0}]
    shift = rng.normal(0, 0.5)
    for what, cost in TCM_COST.items():
        for mode in ("legacy", "ops"):
            if mode == "ops" and not ops:
                out.append({"kind": "tcm-unsupported", "what": what,
                            "mode": mode, "why": "no RSEQ operations"})
                continue
            v = cost + (TCM_COST["pair"] if what != "pair" else 0) + (
                -12 if mode == "ops" else 0)
            for s in range(4):
                out.append({"kind": "tcm", "what": what, "mode": mode,
                            "sample": s, "valid": True, "timed": True,
                            "why": "", "tsc_median": round(
                                v + shift + rng.normal(0, 1.5), 3),
                            "events": 1000, "recoveries": 0, "stale": 0,
                            "slow": 0, "aborts": 0})
    return out


def default_run(tmp_path, accel):
    d = synthetic(tmp_path, accel)
    rng = np.random.default_rng(28)
    for boot in sorted(os.listdir(d)):
        if not boot.startswith("boot-"):
            continue
        rewrite(d, boot, default_records)
        with open(os.path.join(d, boot, "tcmodel.json"), "w") as f:
            for r in tcmodel_records(rng, boot, boot.endswith("-ops")):
                f.write(json.dumps(r) + "\n")
    return d


def walker_run(tmp_path, accel):
    """The walker plan (baseline, ops, rfc, resident), and the
    registration round trip (bench "register") copied from syscall, for
    the designs' figure."""
    d = str(tmp_path / "walker")
    subprocess.run(["/usr/bin/python3",
                    os.path.join(DATA, "make-synthetic-run.py"), d,
                    "--accel", accel, "--plan", "walker"], check=True)

    def register(recs):
        reg = [dict(r, bench="register", **{k: r[k] + 900 + r["nr_ops"]
                                            for k in METRICS if k in r})
               for r in recs if r.get("bench") == "syscall"]
        return recs + reg
    for boot in sorted(os.listdir(d)):
        if boot.startswith("boot-"):
            rewrite(d, boot, register)
    return d


RUNS = {"synthetic": synthetic, "default": default_run,
        "walker": walker_run}
CASES = [("synthetic", "icount"), ("synthetic", "tcg"),
         ("default", "icount"), ("default", "tcg"), ("walker", "icount")]


@pytest.fixture(scope="module", params=CASES, ids=["-".join(c)
                                                   for c in CASES])
def plotted(request, tmp_path_factory):
    """(analysis, {figure: facts}) of one case, plotted once."""
    plan, accel = request.param
    tmp = tmp_path_factory.mktemp("%s-%s" % (plan, accel))
    run = opbench_data.load(RUNS[plan](tmp, accel))
    a = opbench_data.analyse(run)
    mp = pytest.MonkeyPatch()
    try:
        figs = render(a, str(tmp / "plots"), mp)
    finally:
        mp.undo()
    return plan, accel, a, figs


# Tests ---------------------------------------------------------------------

def test_no_text_overlaps_or_outside(plotted):
    _, _, _, figs = plotted
    bad = {n: f["text"] for n, f in figs.items() if f["text"]}
    assert not bad, "\n".join("%s: %s" % (n, "\n    ".join(p))
                              for n, p in sorted(bad.items()))


def test_series_distinct_colour_and_marker(plotted):
    _, _, _, figs = plotted
    bad = {n: f["series"] for n, f in figs.items() if f["series"]}
    assert not bad, bad


def test_crowded_case_is_crowded(plotted):
    """The default-shaped run draws what make bench draws: the headline
    benchmarks' overhead (migrate left out under icount, the variants in
    their own sections), the TCMalloc figure, and the plots keep their
    names."""
    plan, accel, a, figs = plotted
    names = set(figs)
    assert {"overhead", "zero-ops", "per-op", "residuals"} <= names
    sweeps = {"sweep-" + g["bench"] + ("" if g["op_type"] == "null" else
                                       "-" + g["op_type"])
              for g in a["groups"]
              if len({c["nr_ops"] for c in g["cells"]}) > 1}
    assert names - {"overhead", "zero-ops", "per-op", "residuals",
                    "tcmalloc-events", "design-slopes"} == sweeps
    if plan == "synthetic":
        assert names == {"overhead", "zero-ops", "per-op", "residuals",
                         "sweep-switch", "sweep-syscall"}
    if plan == "default":
        assert "tcmalloc-events" in names
        # One series per headline benchmark and flavour with operations;
        # migrate adds one where it is quoted (tcg).
        drawn = [(g["bench"], fl) for g in a["groups"] if g["headline"]
                 for fl in a["flavours"] if g["vs_zero"].get(fl)]
        assert len(drawn) >= 4
        assert figs["overhead"]["nseries"] == [len(drawn)]
        assert any(b == "migrate" for b, _ in drawn) == (accel != "icount")
        assert figs["residuals"]["nseries"] == [8]
        assert "sweep-preempt+waker-ops" in names
    if plan == "walker":
        assert "design-slopes" in names


def test_headline_plots_leave_out_what_is_not_quoted(plotted):
    """The report's decision (the analysis' headline_excluded), not one of
    the plots' own: migrate is not quoted under icount, it is under
    tcg."""
    plan, accel, a, figs = plotted
    excluded = [g for g in a["groups"] if g["headline_excluded"]]
    for name in HEADLINE:
        for g in excluded:
            assert opbench_plots.label(g) not in figs[name]["named"], name
    if plan != "default":
        assert not excluded
        return
    assert {g["bench"] for g in excluded} == (
        {"migrate"} if accel == "icount" else set())
    for name in HEADLINE:
        shown = any("migrate" in s for s in figs[name]["named"])
        assert shown == (accel != "icount"), name
    # Shown (not quoted) elsewhere: its own sweep and the residuals.
    assert "sweep-migrate-cpu" in figs
    assert any("migrate" in s for s in figs["residuals"]["named"])


def test_headline_plots_show_what_the_headline_table_quotes(plotted):
    """One field decides both: the benchmarks in the headline plots are
    those of the report's headline table (the analysis' mission rows),
    the variants (+scattered, +waker-ops) left to their sections."""
    plan, _, a, figs = plotted
    quoted = {opbench_plots.label(g) for g in a["groups"]
              if any(m["bench"] == g["bench"] and m["op_type"] == g["op_type"]
                     and m["reg"] == g["reg"] for m in a["mission"])}
    for name in HEADLINE:
        shown = {opbench_plots.label(g) for g in a["groups"]
                 if any(opbench_plots.label(g) in s
                        for s in figs[name]["named"])}
        assert shown <= quoted, (name, shown - quoted)
    variants = [g for g in a["groups"] if "+" in g["bench"]]
    if plan == "default":
        assert variants
    for g in variants:
        assert not g["headline"]
