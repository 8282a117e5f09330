# SPDX-License-Identifier: GPL-2.0
"""stats_base - the constants and the building blocks of opbench_stats
(see its docstring for the method): the confidence level, per-boot
medians, Student t intervals, the bootstrap of a single boot, and the
Welch comparison that compare() and compare_slopes() share.
opbench_stats re-exports every name; import that.
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
# As the report, the plots and the cover letter print them: "95%", "80%".
CONFIDENCE_TEXT = "%g%%" % (100 * CONFIDENCE)
POWER_TEXT = "%g%%" % (100 * POWER)
# Fewer boots than this on a side: say so beside the verdict.
FEW_BOOTS = 3
# The A/A noise floor needs an estimate of the boot-to-boot spread.
MIN_AA_BOOTS = 3

METHOD = ("The boot is the unit: each boot's samples are reduced to that "
          "boot's median, and the per-boot medians (for the cost model, "
          "each boot's own least-squares a and b) are the observations "
          "(two-stage summary statistics, equivalent to a random-intercept "
          "mixed model for balanced designs). Intervals are Student t on "
          "the k per-boot values (k-1 df); comparisons between kernels "
          "are Welch t, N against N = 0 on one kernel paired t on the "
          "per-boot differences.")
# The same in time (tcg, kvm, native), where a boot's level scales every
# cell and the machine drifts between rounds.
METHOD_TIME = ("The boot is the unit: each boot's samples are reduced to "
               "that boot's median, and the per-boot medians (for the cost "
               "model, each boot's own least-squares a and b) are the "
               "observations. Intervals are Student t on the k per-boot "
               "values (k-1 df), each cell with its own spread (none "
               "pooled: in time a boot's level scales every cell); "
               "comparisons between kernels are paired t, boot i of each "
               "kernel (round i of the run) paired, N against N = 0 on one "
               "kernel paired t on the per-boot differences.")

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



def _spread_sd(own_sd, k, spread):
    """The sd and df an interval of k per-boot values uses: its own, or the
    family's pooled one when that is larger."""
    if spread and spread["sd"] > (own_sd or 0.0):
        return spread["sd"], float(spread["df"])
    return own_sd, float(k - 1)



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
