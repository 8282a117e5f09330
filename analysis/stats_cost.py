# SPDX-License-Identifier: GPL-2.0
"""stats_cost - the cost model a + b x N of opbench_stats (see its
docstring for the method): fitted on each boot, combined across boots,
and two models' slopes compared. opbench_stats re-exports cost_model and
compare_slopes; import that.
"""
import numpy as np

from stats_base import (BOOTSTRAP, _ONE_BOOT, _arrays, _few_boots, _plain, _quantiles, _sd, _t_interval, _welch, rng_for)


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
