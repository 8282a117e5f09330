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
degrees of freedom, comparisons between kernels Welch t with
Welch-Satterthwaite degrees of freedom, and N against N = 0 on one kernel
(measured in the same boots) paired t on the per-boot differences. For a
balanced design (same samples per boot) this is equivalent to
the random-intercept mixed model (the "summary statistics" approach of
multilevel analysis), and it stays valid whatever the within-boot
distribution is, since only the per-boot medians enter stage two.

Inputs are plain dicts: per_boot = {boot_id: [sample, ...]}, and for the
cost model cells = {N: {boot_id: [sample, ...]}}. Every returned value is a
float, int, str, list, dict or None, ready for json.dump.

Every resampling (only used where a single boot leaves no boot-to-boot
spread to work with) uses a generator seeded from the data's own key, so a
report is reproducible to the last digit.

The constants and building blocks are stats_base's, the cost model
stats_cost's; every name is re-exported here, the one module to import.
"""
import math

import numpy as np
from scipy import stats

# The building blocks, and the cost model: opbench_stats' names.
from stats_base import (  # noqa: F401
    CONFIDENCE,
    BOOTSTRAP,
    POWER,
    CONFIDENCE_TEXT,
    POWER_TEXT,
    FEW_BOOTS,
    MIN_AA_BOOTS,
    METHOD,
    METHOD_TIME,
    _ALPHA,
    _ONE_BOOT,
    rng_for,
    _quantiles,
    _bootstrap_medians,
    summary,
    _plain,
    _tq,
    _arrays,
    boot_medians,
    _mean,
    _sd,
    _t_interval,
    _few_boots,
    _spread_sd,
    _welch)
from stats_cost import compare_slopes, cost_model  # noqa: F401


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


def holm(ps):
    """Holm's step-down adjustment of the p-values ps (None: not tested,
    left None): the family-wise error of the marks that survive it stays
    at most _ALPHA however many comparisons the table holds."""
    idx = sorted((i for i, p in enumerate(ps) if p is not None),
                 key=lambda i: ps[i])
    m = len(idx)
    out = [None] * len(ps)
    run = 0.0
    for j, i in enumerate(idx):
        run = max(run, min(1.0, (m - j) * ps[i]))
        out[i] = run
    return out


def compare_paired(ref_per_boot, per_boot, key=(), spread=None):
    """Compare two cells measured in the same boots (N against N = 0 on one
    flavour): the boot effect they share cancels in each boot's difference.

    diff: the mean of the per-boot differences of medians, diff_ci its
    Student t interval (k - 1 df, k the boots both cells have), p the paired
    t test; ratio value / ref_value with ratio_ci the difference's interval
    over ref_value (the reference's own spread shared by both sides). No
    A/A floor applies: the spread between boots cancels.
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


def compare_slopes_paired(model_ref, model, rounds, key=()):
    """compare_slopes() for two kernels measured round by round (a time
    run): each round's slope of model against model_ref's in the same
    round, a paired t (compare_paired on one value a round). rounds:
    {boot: round}. None when either model is None."""
    if model_ref is None or model is None:
        return None

    def by_round(m):
        return {rounds[p["boot"]]: [p["b"]] for p in m["per_boot"]}
    ref, cur = by_round(model_ref), by_round(model)
    out = compare_paired(ref, cur, key=key)
    out["method"] = ("per-round differences of per-boot slopes, paired t "
                     "interval and test")
    # The ratio of slopes from each round's own ratio: a paired t on the
    # log of the rounds' ratios, exponentiated (a ratio's interval from
    # the difference's over the reference's mean ignores the spread of
    # the reference's slope and is not symmetric where a ratio is).
    common = sorted(set(ref) & set(cur))
    out["ratio_method"] = ("the difference's interval over the reference's "
                           "mean (a round's slope was not positive)")
    if len(common) >= 2 and all(ref[r][0] > 0 and cur[r][0] > 0
                                for r in common):
        lr = [math.log(cur[r][0] / ref[r][0]) for r in common]
        m, ci, _, _ = _t_interval(lr)
        out["ratio"] = math.exp(m)
        out["ratio_ci"] = [math.exp(ci[0]), math.exp(ci[1])]
        out["ratio_method"] = ("paired t on the log of each round's ratio "
                               "of slopes, %d rounds" % len(common))
    return out
