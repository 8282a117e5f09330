# SPDX-License-Identifier: GPL-2.0
"""opbench_stats - the statistics of rseq-opbench, free of any file format.

Medians with bootstrap confidence intervals, two-sample comparisons
(difference, ratio, Mann-Whitney U), the smallest effect a comparison could
detect, and the linear cost model time = a + b x N. Every resampling uses a
generator seeded from the data's own key, so a report is reproducible to the
last digit.
"""
import math
import zlib

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
BOOTSTRAP = 4000
# Below this many samples on either side, say so beside the verdict.
FEW_SAMPLES = 5
# z(0.975) + z(0.80): a shift of 2.8 standard errors is found 80% of the time
# by a two-sided test at 5%.
DETECTABLE_SE = 2.8


def rng_for(*key):
    """A generator seeded by a stable hash of key, not by call order."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _quantiles(boot):
    lo = (1 - CONFIDENCE) / 2
    return (float(np.quantile(boot, lo)), float(np.quantile(boot, 1 - lo)))


def boot_medians(x, rng, n=BOOTSTRAP):
    """Bootstrap distribution of the median of x."""
    x = np.asarray(x, dtype=float)
    idx = rng.integers(0, len(x), size=(n, len(x)))
    return np.median(x[idx], axis=1)


def summary(x, key=()):
    """n, median and its bootstrap confidence interval."""
    x = np.asarray(x, dtype=float)
    if len(x) == 0:
        return {"n": 0, "median": math.nan, "ci": (math.nan, math.nan)}
    b = boot_medians(x, rng_for("summary", *key))
    return {"n": len(x), "median": float(np.median(x)), "ci": _quantiles(b),
            "min": float(x.min()), "max": float(x.max())}


def min_p_value(n1, n2):
    """Smallest two-sided p the exact Mann-Whitney test can give."""
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def mann_whitney(a, b):
    """Two-sided Mann-Whitney U p-value; 1.0 when both are one same value."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    allv = np.concatenate([a, b])
    if np.all(allv == allv[0]):
        return 1.0
    ties = len(np.unique(allv)) < len(allv)
    method = "asymptotic" if ties else "auto"
    return float(stats.mannwhitneyu(a, b, alternative="two-sided",
                                    method=method).pvalue)


def compare(a, b, key=(), noise_floor=None):
    """Compare sample b against reference a.

    Returns the difference of medians (b - a) and their ratio (b / a), each
    with a bootstrap confidence interval from independent resampling of the
    two sides, the Mann-Whitney p-value, the smallest detectable difference
    and a verdict:
      "difference"  the interval excludes zero and the A/A noise floor,
                    and Mann-Whitney agrees (p < 0.05)
      "noise"       the same, but the interval reaches into the noise floor
      "none"        the interval contains zero, or the rank test does not
                    reject (too few samples to tell)
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    rng = rng_for("compare", *key)
    ba = boot_medians(a, rng)
    bb = boot_medians(b, rng)
    diffs = bb - ba
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = bb / ba
    ma, mb = float(np.median(a)), float(np.median(b))
    diff = mb - ma
    dci = _quantiles(diffs)
    se = float(np.std(diffs))
    detectable = DETECTABLE_SE * se
    if noise_floor is not None:
        detectable = max(detectable, noise_floor)
    p = mann_whitney(a, b)
    if (dci[0] > 0 or dci[1] < 0) and p < 1 - CONFIDENCE:
        beyond = min(abs(dci[0]), abs(dci[1]))
        verdict = "difference"
        if noise_floor is not None and beyond <= noise_floor:
            verdict = "noise"
    else:
        verdict = "none"
    warnings = []
    if min(len(a), len(b)) < FEW_SAMPLES:
        warnings.append("too few samples (n=%d/%d)" % (len(a), len(b)))
    if min_p_value(len(a), len(b)) > 1 - CONFIDENCE:
        warnings.append("Mann-Whitney cannot reach p<%.2f with n=%d/%d"
                        % (1 - CONFIDENCE, len(a), len(b)))
    return {
        "n": (len(a), len(b)),
        "ref_median": ma, "median": mb,
        "diff": diff, "diff_ci": dci,
        "ratio": mb / ma if ma else math.nan,
        "ratio_ci": _quantiles(ratios) if ma else (math.nan, math.nan),
        "p": p,
        "se": se,
        "noise_floor": noise_floor,
        "detectable": detectable,
        "verdict": verdict,
        "warnings": warnings,
    }


def noise_floor(groups, key=()):
    """A/A noise floor from samples of one configuration on separate boots.

    groups: one sample array per boot (at least two). Every pair of boots is
    compared; the floor is the largest difference of medians the data allow,
    the far end of the widest confidence interval. None with fewer than two
    boots.
    """
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if len(groups) < 2:
        return None
    floor = 0.0
    for i in range(len(groups)):
        for j in range(i + 1, len(groups)):
            c = compare(groups[i], groups[j], key=key + ("aa", i, j))
            floor = max(floor, abs(c["diff_ci"][0]), abs(c["diff_ci"][1]))
    return floor


def _ols(x, y):
    """Slope and intercept of the least-squares line through (x, y)."""
    xm, ym = x.mean(), y.mean()
    sxx = ((x - xm) ** 2).sum()
    b = ((x - xm) * (y - ym)).sum() / sxx
    return ym - b * xm, b


def cost_model(cells, key=()):
    """Fit time = a + b x N on {N: samples}, N >= 1, by least squares.

    Confidence intervals come from a stratified bootstrap: the samples of
    every N are resampled within that N and the line refitted. N = 0 is left
    out on purpose: with no operation registered the walker is not called at
    all, so it measures a different path (see the report's N-vs-0 table).
    Returns None with fewer than two distinct N.
    """
    ns = sorted(n for n, s in cells.items() if n >= 1 and len(s))
    if len(ns) < 2:
        return None
    xs = np.concatenate([np.full(len(cells[n]), n, dtype=float) for n in ns])
    ys = np.concatenate([np.asarray(cells[n], dtype=float) for n in ns])
    a, b = _ols(xs, ys)
    pred = a + b * xs
    ss_res = float(((ys - pred) ** 2).sum())
    ss_tot = float(((ys - ys.mean()) ** 2).sum())
    r2 = 1 - ss_res / ss_tot if ss_tot else 1.0
    rng = rng_for("cost", *key)
    arrays = [np.asarray(cells[n], dtype=float) for n in ns]
    boots_a = np.empty(BOOTSTRAP // 4)
    boots_b = np.empty(BOOTSTRAP // 4)
    for i in range(len(boots_a)):
        yb = np.concatenate([s[rng.integers(0, len(s), len(s))]
                             for s in arrays])
        boots_a[i], boots_b[i] = _ols(xs, yb)
    return {"a": float(a), "a_ci": _quantiles(boots_a),
            "b": float(b), "b_ci": _quantiles(boots_b),
            "r2": r2, "ns": ns, "n": int(len(xs))}
