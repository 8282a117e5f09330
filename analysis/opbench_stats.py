# SPDX-License-Identifier: GPL-2.0
"""opbench_stats - the statistics of rseq-opbench, free of any file format.

The boot is the unit. Samples taken within one boot are not independent
replicates: under QEMU icount a boot repeats its own instruction counts
almost exactly, and what varies from run to run is the boot (memory layout,
timer phase, what the kernel did before the benchmark started). Pooling the
samples of several boots and treating them as independent makes every
interval far too narrow (pseudo-replication; the measurement review found a
slope interval covering the truth 20 % of the time).

Method: two-stage summary statistics. Stage one reduces every boot's samples
to that boot's median (for the cost model: that boot's own least-squares
line through its per-N medians). Stage two treats the k per-boot values as
the observations: estimates are their mean, intervals Student t with k - 1
degrees of freedom, comparisons Welch t with Welch-Satterthwaite degrees of
freedom. For a balanced design (same samples per boot) this is equivalent to
the random-intercept mixed model (the "summary statistics" approach of
multilevel analysis), and it stays valid whatever the within-boot
distribution is, since only the per-boot medians enter stage two.

Inputs are plain dicts: per_boot = {boot_id: [sample, ...]}, and for the
cost model cells = {N: {boot_id: [sample, ...]}}. Every returned value is a
float, int, str, list, dict or None, ready for json.dump.

Every resampling (only used where a single boot leaves no boot-to-boot
spread to work with) uses a generator seeded from the data's own key, so a
report is reproducible to the last digit.
"""
import math
import zlib

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
BOOTSTRAP = 4000
# Power the "detectable" figure promises: a true shift of that size is called
# a difference this often.
POWER = 0.80
# Fewer boots than this on a side: say so beside the verdict.
FEW_BOOTS = 3
# The A/A noise floor needs an estimate of the boot-to-boot spread.
MIN_AA_BOOTS = 3

METHOD = ("The boot is the unit: each boot's samples are reduced to that "
          "boot's median, and the per-boot medians (for the cost model, "
          "each boot's own least-squares a and b) are the observations "
          "(two-stage summary statistics, equivalent to a random-intercept "
          "mixed model for balanced designs). Intervals are Student t on "
          "the k per-boot values (k-1 df); comparisons are Welch t.")

_ALPHA = 1 - CONFIDENCE
_ONE_BOOT = ("only one boot: the boot-to-boot spread is unknown, so this "
             "interval (a bootstrap of the samples within that boot) is too "
             "narrow")


def rng_for(*key):
    """A generator seeded by a stable hash of key, not by call order."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _quantiles(boot):
    lo = _ALPHA / 2
    return (float(np.quantile(boot, lo)), float(np.quantile(boot, 1 - lo)))


def _bootstrap_medians(x, rng, n=BOOTSTRAP):
    """Bootstrap distribution of the median of the flat array x."""
    x = np.asarray(x, dtype=float)
    idx = rng.integers(0, len(x), size=(n, len(x)))
    return np.median(x[idx], axis=1)


def summary(x, key=()):
    """n, median and its percentile-bootstrap confidence interval.

    x is one flat array, taken as independent samples: use it for
    per-boot diagnostics (the samples of one boot), never to pool boots.
    """
    x = np.asarray(x, dtype=float)
    if len(x) == 0:
        return {"n": 0, "median": math.nan, "ci": (math.nan, math.nan)}
    b = _bootstrap_medians(x, rng_for("summary", *key))
    return {"n": len(x), "median": float(np.median(x)), "ci": _quantiles(b),
            "min": float(x.min()), "max": float(x.max())}


# Helpers ----------------------------------------------------------------

def _plain(v):
    """A boot id or N as a JSON-friendly Python scalar."""
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def _tq(q, df):
    """Student t quantile, as a float."""
    return float(stats.t.ppf(q, df))


def _arrays(per_boot):
    """[(boot, samples)] in sorted boot order, boots without samples left
    out."""
    out = []
    for b in sorted(per_boot):
        x = np.asarray(per_boot[b], dtype=float).ravel()
        if x.size:
            out.append((_plain(b), x))
    return out


def boot_medians(per_boot):
    """The median of every boot's samples, in sorted boot-id order.

    per_boot: {boot_id: [sample, ...]}; boots with no samples are skipped.
    """
    return [float(np.median(x)) for _, x in _arrays(per_boot)]


def _mean(v):
    """Mean of a list; exact when all values are equal (no rounding)."""
    v = np.asarray(v, dtype=float)
    if np.all(v == v[0]):
        return float(v[0])
    return float(v.mean())


def _sd(v):
    """Sample sd (ddof=1); exactly 0.0 when all values are equal."""
    v = np.asarray(v, dtype=float)
    if len(v) < 2:
        return None
    if np.all(v == v[0]):
        return 0.0
    return float(v.std(ddof=1))


def _t_interval(v):
    """mean, [lo, hi], se and sd of the per-boot values v (k >= 2), Student
    t with k - 1 df. Zero spread gives a zero-width interval."""
    k = len(v)
    m, sd = _mean(v), _sd(v)
    se = sd / math.sqrt(k)
    if se == 0:
        return m, [m, m], 0.0, 0.0
    h = _tq(1 - _ALPHA / 2, k - 1) * se
    return m, [m - h, m + h], se, sd


def _few_boots(k, what=""):
    if 1 < k < FEW_BOOTS:
        return ["only %d boots%s: the boot-to-boot spread rests on %d "
                "degree(s) of freedom; run %d or more boots"
                % (k, what, k - 1, FEW_BOOTS)]
    return []


# One configuration ------------------------------------------------------

def pooled_spread(cells):
    """The between-boot sd pooled over several cells of one benchmark and
    flavour: {"sd", "df", "cells"}, or None without a cell of two boots.

    cells: a list of {boot_id: [sample, ...]}. Each cell's per-boot medians
    are centred on their own mean; the squares are pooled over
    sum(k_i - 1) degrees of freedom. Under icount per-boot medians take a
    few discrete values, and five boots of one cell may all land on one of
    them: that cell's own sd is then 0, which says little. The family's
    pooled sd says more, and estimate() and compare() use the larger of the
    two (conservative)."""
    ss, df, n = 0.0, 0, 0
    for pb in cells:
        m = boot_medians(pb)
        if len(m) < 2:
            continue
        mu = _mean(m)
        ss += float(sum((x - mu) ** 2 for x in m))
        df += len(m) - 1
        n += 1
    if not df:
        return None
    return {"sd": math.sqrt(ss / df), "df": df, "cells": n}


def _spread_sd(own_sd, k, spread):
    """The sd and df an interval of k per-boot values uses: its own, or the
    family's pooled one when that is larger."""
    if spread and spread["sd"] > (own_sd or 0.0):
        return spread["sd"], float(spread["df"])
    return own_sd, float(k - 1)


def estimate(per_boot, key=(), spread=None):
    """The value of one cell with its confidence interval, boot as unit.

    per_boot: {boot_id: [sample, ...]}. value is the mean of the k per-boot
    medians, ci the Student t interval on them (k - 1 df), se = sd / sqrt(k)
    and sd_between the sd of the per-boot medians (ddof=1).

    k == 1: value is that boot's median and ci a percentile bootstrap of its
    samples (se the bootstrap sd); a warning says the interval is too narrow
    since the boot-to-boot spread is unknown. All boot medians equal (common
    under icount): ci [value, value], se 0. No samples at all: value, ci
    and se are None.
    """
    arr = _arrays(per_boot)
    meds = [float(np.median(x)) for _, x in arr]
    k, n = len(meds), int(sum(x.size for _, x in arr))
    out = {"k": k, "n": n, "boot_medians": meds,
           "method": "mean of per-boot medians, Student t interval "
                     "(k-1 df)", "warnings": []}
    if k == 0:
        out.update(value=None, ci=None, se=None, sd_between=None)
        out["warnings"].append("no samples")
        return out
    if k == 1:
        x = arr[0][1]
        b = _bootstrap_medians(x, rng_for("estimate", *key))
        lo, hi = _quantiles(b)
        out.update(value=meds[0], ci=[lo, hi],
                   se=float(b.std(ddof=1)) if x.size > 1 else 0.0,
                   sd_between=None,
                   method="median of one boot, percentile bootstrap of its "
                          "samples")
        out["warnings"].append(_ONE_BOOT)
        return out
    m, ci, se, sd = _t_interval(meds)
    use, df = _spread_sd(sd, k, spread)
    if use != sd:
        se = use / math.sqrt(k)
        h = _tq(1 - _ALPHA / 2, df) * se
        ci = [m - h, m + h]
        out["method"] += ("; sd from the benchmark's cells pooled (%d df), "
                          "larger than this cell's own" % df)
    out.update(value=m, ci=ci, se=se, sd_between=sd,
               identical=sd == 0, sd_used=use)
    out["warnings"] += _few_boots(k)
    return out


def aa_floor(per_boot):
    """A/A noise floor from boots of ONE kernel configuration.

    per_boot: {boot_id: [sample, ...]} of the reference (e.g. at N = 0).
    sd_between is the sd of the per-boot medians; the floor
        t(0.975, k - 1) * sd_between * sqrt(2)
    is the half-width of the 95 % prediction interval of the difference
    between two single boots of the same kernel: the largest difference two
    boots of one kernel show 95 % of the time. None with fewer than
    MIN_AA_BOOTS boots (with two boots the spread is one pair's difference,
    and its t factor is 12.7).
    """
    meds = boot_medians(per_boot)
    k = len(meds)
    if k < MIN_AA_BOOTS:
        return None
    sd = _sd(meds)
    floor = 0.0 if sd == 0 else \
        _tq(1 - _ALPHA / 2, k - 1) * sd * math.sqrt(2)
    return {"boots": k, "sd_between": sd, "floor": floor,
            "boot_medians": meds,
            "method": "t(0.975, k-1) x sd of per-boot medians x sqrt(2): "
                      "95 % prediction bound of the difference between two "
                      "single boots of one kernel"}


# Two configurations -----------------------------------------------------

def _welch(ref, val, floor=None, spread_ref=None, spread=None):
    """Core of compare and compare_slopes on per-boot values.

    ref, val: lists of per-boot values (medians, or slopes). spread_ref,
    spread: pooled_spread() of each side's family, or None. Returns the
    comparison dict without method/k/key-specific fields.
    """
    kr, k = len(ref), len(val)
    rv, v = _mean(ref), _mean(val)
    diff = v - rv
    warnings = []
    out = {"ref_value": rv, "value": v, "diff": diff,
           "noise_floor": floor}
    out["ratio"] = v / rv if rv != 0 else None
    if kr >= 2 and k >= 2:
        sr, dfr = _spread_sd(_sd(ref), kr, spread_ref)
        sv, dfv = _spread_sd(_sd(val), k, spread)
        vr, vv = sr ** 2 / kr, sv ** 2 / k
        se2 = vr + vv
        if se2 > 0:
            df = se2 ** 2 / ((vr ** 2 / dfr if vr else 0.0) +
                             (vv ** 2 / dfv if vv else 0.0))
        else:
            df = float(kr + k - 2)
    elif kr >= 2 or k >= 2:
        # One side has a single boot: assume it shares the other side's
        # boot-to-boot sd (the pooled-variance assumption); df from the
        # side that has a spread.
        s = _sd(ref) if kr >= 2 else _sd(val)
        se2 = s * s * (1.0 / kr + 1.0 / k)
        df = float((kr if kr >= 2 else k) - 1)
        warnings.append("one boot on the %s side: its boot-to-boot spread is "
                        "assumed equal to the other side's"
                        % ("reference" if kr < 2 else "compared"))
    else:
        warnings.append("one boot on each side: the boot-to-boot spread is "
                        "unknown, no interval and no verdict")
        out.update(diff_ci=None, se=None, df=None, p=None, ratio_ci=None,
                   detectable=None, verdict="none", warnings=warnings)
        return out
    se = math.sqrt(se2)
    if se == 0:
        dci = [diff, diff]
        p = 0.0 if diff != 0 else 1.0
        tc = tp = 0.0
    else:
        tc = _tq(1 - _ALPHA / 2, df)
        tp = _tq(POWER, df)
        dci = [diff - tc * se, diff + tc * se]
        p = float(2 * stats.t.sf(abs(diff) / se, df))
    # Ratio: delta method on log(v / rv), same df as the difference.
    if out["ratio"] is not None and out["ratio"] > 0:
        if kr >= 2 and k >= 2:
            sl2 = (sr / rv) ** 2 / kr + (sv / v) ** 2 / k
        else:
            sl2 = s * s * (1.0 / (kr * rv * rv) + 1.0 / (k * v * v))
        lr = math.log(out["ratio"])
        h = tc * math.sqrt(sl2)
        out["ratio_ci"] = [math.exp(lr - h), math.exp(lr + h)] if h else \
            [out["ratio"], out["ratio"]]
    else:
        out["ratio_ci"] = None
    near = min(abs(dci[0]), abs(dci[1]))
    if dci[0] > 0 or dci[1] < 0:
        if floor is not None and near <= floor:
            verdict = "noise"
        else:
            verdict = "difference"
    else:
        verdict = "none"
    if kr < FEW_BOOTS or k < FEW_BOOTS:
        warnings.append("fewer than %d boots (k=%d/%d): the interval rests "
                        "on a poorly known boot-to-boot spread"
                        % (FEW_BOOTS, kr, k))
    out.update(diff_ci=dci, se=se, df=df, p=p,
               detectable=(floor or 0.0) + (tc + tp) * se,
               verdict=verdict, warnings=warnings)
    return out


_COMPARE_METHOD = ("difference of means of per-boot medians, Welch t "
                   "interval and test (Welch-Satterthwaite df); ratio by the "
                   "delta method on the log ratio, same df")


def compare(ref_per_boot, per_boot, key=(), floor=None, spread_ref=None,
            spread=None):
    """Compare per_boot against the reference ref_per_boot, boot as unit.

    Both are {boot_id: [sample, ...]}. Every boot is reduced to its median;
    diff = value - ref_value (means of the per-boot medians) with a Welch t
    interval diff_ci, its se, Welch-Satterthwaite df and the two-sided Welch
    p (diff_ci excludes 0 exactly when p < 0.05). ratio = value / ref_value
    with ratio_ci from the delta method on log(ratio) with the same df
    (None when the values differ in sign or ref_value is 0).

    floor: an A/A noise floor (aa_floor(...)["floor"]) or None. verdict:
      "difference"  diff_ci excludes 0 and its near end is beyond the floor
      "noise"       diff_ci excludes 0 but its near end is within the floor
      "none"        diff_ci contains 0
    detectable: the smallest true shift this verdict rule calls a difference
    80 % of the time, (floor or 0) + (t(0.975, df) + t(0.80, df)) x se:
    the near end of the interval lies t(0.975) se below the estimate, and
    the estimate exceeds the truth minus t(0.80) se 80 % of the time.

    Zero spread on both sides: se 0, diff_ci [diff, diff], p 0 (diff != 0)
    or 1. One boot on one side only: that side is assumed to share the other
    side's boot-to-boot sd (pooled-variance t, df from the other side), with
    a warning. One boot on both sides (or no samples): diff_ci, se, df, p,
    ratio_ci and detectable are None and the verdict "none". Fewer than 3
    boots on either side: a warning.
    """
    mr, m = boot_medians(ref_per_boot), boot_medians(per_boot)
    kr, k = len(mr), len(m)
    if kr == 0 or k == 0:
        return {"k": [kr, k], "ref_value": _mean(mr) if kr else None,
                "value": _mean(m) if k else None, "diff": None,
                "diff_ci": None, "se": None, "df": None, "p": None,
                "ratio": None, "ratio_ci": None, "noise_floor": floor,
                "detectable": None, "verdict": "none",
                "warnings": ["no samples on the %s side"
                             % ("reference" if kr == 0 else "compared")],
                "method": _COMPARE_METHOD}
    out = {"k": [kr, k]}
    out.update(_welch(mr, m, floor, spread_ref, spread))
    out["method"] = _COMPARE_METHOD
    return out


_PAIRED_METHOD = ("mean of the per-boot differences of medians (both cells "
                  "measured in the same boots), Student t interval and test "
                  "(k-1 df); ratio interval: the difference's over the "
                  "reference value")


def paired_spread(ref_per_boot, cells):
    """pooled_spread() of the per-boot differences between each cell and
    the reference cell of the same boots."""
    diffs = []
    for pb in cells:
        d = _paired(ref_per_boot, pb)
        if len(d) >= 2:
            diffs.append({i: [x] for i, x in enumerate(d)})
    return pooled_spread(diffs)


def _paired(ref_per_boot, per_boot):
    r = dict(zip((b for b, _ in _arrays(ref_per_boot)),
                 boot_medians(ref_per_boot)))
    v = dict(zip((b for b, _ in _arrays(per_boot)), boot_medians(per_boot)))
    return [v[b] - r[b] for b in sorted(set(r) & set(v))]


def compare_paired(ref_per_boot, per_boot, key=(), spread=None):
    """Compare two cells measured in the same boots (N against N = 0 on one
    flavour): the boot effect they share cancels in each boot's difference.

    diff: the mean of the per-boot differences of medians, diff_ci its
    Student t interval (k - 1 df, k the boots both cells have), p the paired
    t test; ratio value / ref_value with ratio_ci the difference's interval
    over ref_value (the reference's own spread shared by both sides). No A/A floor applies: the spread between boots cancels.
    spread: paired_spread() over the family, used when larger than the
    pair's own sd. detectable: (t(0.975) + t(0.80)) x se. Fewer than two
    common boots: no interval, verdict "none".
    """
    d = _paired(ref_per_boot, per_boot)
    mr, m = boot_medians(ref_per_boot), boot_medians(per_boot)
    k = len(d)
    out = {"k": [len(mr), len(m)], "paired_boots": k,
           "ref_value": _mean(mr) if mr else None,
           "value": _mean(m) if m else None, "noise_floor": None,
           "method": _PAIRED_METHOD, "warnings": []}
    out["ratio"] = (out["value"] / out["ref_value"]
                    if out["ref_value"] else None)
    if k < 2:
        out.update(diff=_mean(d) if d else None, diff_ci=None, se=None,
                   df=None, p=None, ratio_ci=None, detectable=None,
                   verdict="none")
        out["warnings"].append("fewer than two boots measured both cells: "
                               "no interval")
        return out
    mean, _, _, sd = _t_interval(d)
    use, df = _spread_sd(sd, k, spread)
    se = use / math.sqrt(k)
    if se == 0:
        dci = [mean, mean]
        p = 0.0 if mean != 0 else 1.0
        tc = tp = 0.0
    else:
        tc, tp = _tq(1 - _ALPHA / 2, df), _tq(POWER, df)
        dci = [mean - tc * se, mean + tc * se]
        p = float(2 * stats.t.sf(abs(mean) / se, df))
    rv = out["ref_value"]
    out.update(diff=mean, diff_ci=dci, se=se, df=df, p=p,
               ratio_ci=[1 + dci[0] / rv, 1 + dci[1] / rv] if rv else None,
               detectable=(tc + tp) * se, identical=sd == 0,
               verdict="difference" if dci[0] > 0 or dci[1] < 0 else "none")
    out["warnings"] += _few_boots(k)
    return out


# Cost model -------------------------------------------------------------

def _ols(x, y):
    """Intercept, slope and R^2 of the least-squares line through (x, y)."""
    xm, ym = x.mean(), y.mean()
    sxx = ((x - xm) ** 2).sum()
    b = ((x - xm) * (y - ym)).sum() / sxx
    a = ym - b * xm
    ss_tot = float(((y - ym) ** 2).sum())
    ss_res = float(((y - a - b * x) ** 2).sum())
    return float(a), float(b), (1 - ss_res / ss_tot if ss_tot else 1.0)


def _combine(vals):
    """value, [lo, hi], se of per-boot values (k >= 2)."""
    m, ci, se, _ = _t_interval(vals)
    return m, ci, se


def cost_model(cells, key=()):
    """Fit time = a + b x N, one line per boot, combined over boots.

    cells: {N: {boot_id: [sample, ...]}}. N = 0 is left out of the fit on
    purpose: with no operation registered the walker is not called at all,
    so it measures a different path; it only feeds `entry`.

    Only boots with samples at every N >= 1 are used (a balanced design);
    the others are named in excluded_boots. For each used boot i, least
    squares of its per-N medians on N gives a_i, b_i (and r2). Combined a,
    b: mean over boots with a Student t interval (k - 1 df); a_se, b_se.
    entry = a_i minus boot i's N = 0 median (the cost of having an
    operation registered, over and above the walk; boots without N = 0
    samples left out of it), walk_max = b_i x max(N), both combined the
    same way. weights: each N's share of the OLS slope's variance,
    (N - mean N)^2 / sum (N - mean N)^2, its leverage (in a doubling sweep
    1..2048, N = 2048 carries about 70 %, each N <= 8 under 3 %). residuals: mean over boots of the boot's median minus
    its own line, per N; residuals_rel the same relative to the fitted
    value; a curve or a step shows there, R^2 hides it.

    k == 1: intervals from a stratified bootstrap of that boot's samples
    within each N, with a warning that they are too narrow. None with fewer
    than two distinct N >= 1, or when no boot has samples at every N >= 1.
    """
    arr = {n: dict(_arrays(c)) for n, c in cells.items()}
    ns = sorted(_plain(n) for n, c in arr.items() if n >= 1 and c)
    if len(ns) < 2:
        return None
    boots = sorted({b for n in ns for b in arr[n]})
    used = [b for b in boots if all(b in arr[n] for n in ns)]
    excluded = [b for b in boots if b not in used]
    if not used:
        return None
    zero = arr.get(0, {})
    x = np.asarray(ns, dtype=float)
    warnings = []
    if excluded:
        warnings.append("boots without samples at every N >= 1 left out: %s"
                        % ", ".join(str(b) for b in excluded))

    def fit(med):
        """med: {boot: array of per-N medians} -> per-boot (a, b, r2)."""
        return {b: _ols(x, med[b]) for b in med}

    med = {b: np.array([np.median(arr[n][b]) for n in ns]) for b in used}
    lines = fit(med)
    per_boot = [{"boot": b, "a": lines[b][0], "b": lines[b][1],
                 "r2": lines[b][2]} for b in used]
    a_i = [lines[b][0] for b in used]
    b_i = [lines[b][1] for b in used]
    wm_i = [lines[b][1] * ns[-1] for b in used]
    e_boots = [b for b in used if b in zero]
    e_i = [lines[b][0] - float(np.median(zero[b])) for b in e_boots]
    k = len(used)
    if zero and len(e_boots) < k:
        warnings.append("entry leaves out boots without N=0 samples: %s"
                        % ", ".join(str(b) for b in used if b not in zero))

    res = np.array([med[b] - (lines[b][0] + lines[b][1] * x) for b in used])
    fitted = np.array([lines[b][0] + lines[b][1] * x for b in used])
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = res / fitted
    dev = (x - x.mean()) ** 2
    out = {
        "k": k, "ns": ns, "excluded_boots": excluded,
        "n": int(sum(arr[n][b].size for n in ns for b in used)),
        "per_boot": per_boot,
        "weights": {n: float(w) for n, w in zip(ns, dev / dev.sum())},
        "residuals": {n: float(r) for n, r in zip(ns, res.mean(axis=0))},
        "residuals_rel": {n: float(r) for n, r in zip(ns, rel.mean(axis=0))},
        "method": "least squares of each boot's per-N medians on N (N >= 1, "
                  "boots complete over N); a, b, entry, walk_max: mean over "
                  "boots, Student t interval (k-1 df)",
        "warnings": warnings,
    }
    if k >= 2:
        for name, vals in (("a", a_i), ("b", b_i), ("walk_max", wm_i)):
            m, ci, se = _combine(vals)
            out[name], out[name + "_ci"], out[name + "_se"] = m, ci, se
        out["b_sd_between"] = _sd(b_i)
        if len(e_i) >= 2:
            out["entry"], out["entry_ci"], out["entry_se"] = _combine(e_i)
        elif len(e_i) == 1:
            out["entry"], out["entry_ci"], out["entry_se"] = e_i[0], None, \
                None
            warnings.append("N=0 measured on one boot only: no interval for "
                            "entry")
        else:
            out["entry"] = out["entry_ci"] = out["entry_se"] = None
        out["warnings"] += _few_boots(k)
    else:
        # One boot: stratified bootstrap of its samples within every N.
        b0 = used[0]
        rng = rng_for("cost", *key)
        nb = BOOTSTRAP // 4
        bm = np.empty((nb, len(ns)))
        for j, n in enumerate(ns):
            s = arr[n][b0]
            bm[:, j] = np.median(s[rng.integers(0, s.size, (nb, s.size))],
                                 axis=1)
        xc = x - x.mean()
        bb = (bm - bm.mean(axis=1, keepdims=True)) @ xc / (xc @ xc)
        ba = bm.mean(axis=1) - bb * x.mean()
        dists = {"a": ba, "b": bb, "walk_max": bb * ns[-1]}
        points = {"a": a_i[0], "b": b_i[0], "walk_max": wm_i[0]}
        if e_i:
            s = zero[b0]
            z = np.median(s[rng.integers(0, s.size, (nb, s.size))], axis=1)
            dists["entry"] = ba - z
            points["entry"] = e_i[0]
        for name, d in dists.items():
            out[name] = points[name]
            out[name + "_ci"] = list(_quantiles(d))
            out[name + "_se"] = float(d.std(ddof=1))
        if not e_i:
            out["entry"] = out["entry_ci"] = out["entry_se"] = None
        out["b_sd_between"] = None
        out["method"] = ("least squares of one boot's per-N medians on N; "
                         "stratified bootstrap of its samples within each N")
        warnings.append(_ONE_BOOT)
    return out


def compare_slopes(model_ref, model):
    """Difference of the cost model's slopes, model minus model_ref.

    Both are cost_model() results; the per-boot slopes are the observations:
    diff = b - b_ref with a Welch t interval (as compare, no floor), p,
    ratio b / b_ref with its delta-method interval, and the verdict
    "difference" or "none". The same one-boot rules as compare apply. None
    when either model is None.
    """
    if model_ref is None or model is None:
        return None
    br = [p["b"] for p in model_ref["per_boot"]]
    b = [p["b"] for p in model["per_boot"]]
    out = {"k": [len(br), len(b)]}
    out.update(_welch(br, b))
    out["method"] = ("difference of the means of per-boot slopes, Welch t "
                     "interval and test; ratio by the delta method")
    return out
