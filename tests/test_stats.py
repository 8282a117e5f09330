# SPDX-License-Identifier: GPL-2.0
"""Known-answer and calibration tests of analysis/opbench_stats.py.

Host only, no files. Known answers: fixed small inputs whose se, degrees of
freedom, quantile, p, interval and detectable were computed with scipy
(ttest_ind, ttest_rel, t.ppf) and are written here as literal numbers; they
pin the df and the quantiles of every path (Welch, Welch with the family's
pooled spread, one boot on a side, estimate own and pooled, paired own and
pooled, the cost model). Calibration: every input comes from the seeded
simulator below, which plants the truths (a slope, an A/B difference, none
at all) and the structure of a real icount run: boots differ from each
other, samples within one boot differ much less. The 95 % intervals cover
the planted truth about 95 % of the times; an A/A comparison is called a
difference about 5 % of the times at most, while a planted shift is found
as often as scipy's own test finds it on the same kind of runs (a lower
bound on power); the "detectable" figure keeps its 80 % promise; and the
old way (every sample taken as an independent replicate) is caught
failing. tests/test_calibration.py calibrates the calls analyse() makes,
with the family's pooled spread, on many more runs.

compare()'s floor= option is exercised by unit tests only: no analysis
code passes it (opbench_data prints aa_floor() beside the verdicts).
"""
import json
import math
import os
import sys

import numpy as np
import pytest
from scipy import stats

from conftest import TOP

sys.path.insert(0, os.path.join(TOP, "analysis"))
import opbench_stats as st  # noqa: E402

# Realistic magnitudes (see docs of the review, section 3): one operation
# costs ~5000 instructions; boots differ by 0.05-0.1 % of that; the samples
# of one boot scatter less; a timer tick now and then adds a quantum.
LEVEL = 5000.0
REL_BETWEEN = 0.00075          # between-boot sd, relative to the cost
SD_WITHIN = 1.5                # within-boot sd, instructions
TICK, TICK_RATE = 8.0, 0.3     # a tick adds TICK; ticks per sample ~ Poisson
K, S = 5, 10                   # boots per flavour, samples per boot
NS = [2 ** i for i in range(12)]   # the doubling sweep 1..2048
A_TRUE, B_TRUE = LEVEL, 45.2
SIMS = 500


# Simulator ----------------------------------------------------------------

def sim_level(rng, nsim, level, k=K, s=S, rel_between=REL_BETWEEN,
              sd_within=SD_WITHIN, tick=TICK, tick_rate=TICK_RATE):
    """(nsim, k, s) samples of one cell: level x (1 + boot effect) + within
    noise + ticks. The boot effect has sd rel_between x level."""
    boot = rng.normal(0, rel_between, (nsim, k, 1))
    x = level * (1 + boot) + rng.normal(0, sd_within, (nsim, k, s))
    if tick:
        x = x + tick * rng.poisson(tick_rate, (nsim, k, s))
    return x


def sim_sweep(rng, nsim, a=A_TRUE, b=B_TRUE, ns=NS, k=K, s=S,
              rel_between=REL_BETWEEN, sd_within=SD_WITHIN, tick=TICK,
              tick_rate=TICK_RATE):
    """(nsim, k, len(ns), s) samples of cost = a + b N. The boot effect is
    one draw per boot, shared by every N of that boot (it scales the whole
    cost: a boot whose layout makes the walk slower makes it slower at
    every N)."""
    n = np.asarray(ns, dtype=float)[None, None, :, None]
    boot = rng.normal(0, rel_between, (nsim, k, 1, 1))
    x = (a + b * n) * (1 + boot) + rng.normal(0, sd_within,
                                                (nsim, k, len(ns), s))
    if tick:
        x = x + tick * rng.poisson(tick_rate, x.shape)
    return x


def per_boot(x):
    """One simulation's (k, s) array as {boot: [samples]}."""
    return {i: list(row) for i, row in enumerate(x)}


def pooled(x):
    """The old way: every sample its own 'boot' (pseudo-replication)."""
    return {i: [v] for i, v in enumerate(np.ravel(x))}


def cells_of(x, ns=NS):
    """One simulation's (k, len(ns), s) array as {N: {boot: [samples]}}."""
    return {n: {i: list(x[i, j]) for i in range(x.shape[0])}
            for j, n in enumerate(ns)}


def pooled_cells(x, ns=NS):
    """The old way for the cost model: each (boot, sample) its own 'boot',
    one sample at every N, as if samples were independent replicates."""
    k, _, s = x.shape[0], x.shape[1], x.shape[2]
    return {n: {i * s + r: [x[i, j, r]] for i in range(k) for r in range(s)}
            for j, n in enumerate(ns)}


def covers(ci, truth):
    return ci[0] <= truth <= ci[1]


# Calibration --------------------------------------------------------------

# The two ends of the between-boot spread seen (0.05 % and 0.1 % of the cost).
SPREADS = [0.0005, 0.001]


@pytest.mark.parametrize("rel_between", SPREADS)
def test_slope_interval_covers_planted_slope(rel_between):
    x = sim_sweep(np.random.default_rng(101), SIMS, rel_between=rel_between)
    hits = 0
    for i in range(SIMS):
        m = st.cost_model(cells_of(x[i]), key=("cov", i))
        assert m["k"] == K and m["excluded_boots"] == []
        hits += covers(m["b_ci"], B_TRUE)
    rate = hits / SIMS
    print("slope coverage %.3f (between sd %g)" % (rate, rel_between))
    assert 0.92 <= rate <= 0.98


@pytest.mark.parametrize("rel_between", SPREADS)
def test_ab_interval_covers_planted_difference(rel_between):
    rng = np.random.default_rng(102)
    delta = 4.0
    ref = sim_level(rng, SIMS, LEVEL, rel_between=rel_between)
    new = sim_level(rng, SIMS, LEVEL + delta, rel_between=rel_between)
    hits = ratio_hits = 0
    for i in range(SIMS):
        c = st.compare(per_boot(ref[i]), per_boot(new[i]), key=("ab", i))
        hits += covers(c["diff_ci"], delta)
        ratio_hits += covers(c["ratio_ci"], (LEVEL + delta) / LEVEL)
    print("A/B coverage %.3f, ratio %.3f (between sd %g)"
          % (hits / SIMS, ratio_hits / SIMS, rel_between))
    assert 0.92 <= hits / SIMS <= 0.98
    assert 0.92 <= ratio_hits / SIMS <= 0.98


# Expected rates of the verdict "difference" come from scipy's own tests on
# the per-boot medians of fresh simulated runs (ORACLE runs, binomial se
# under 0.004), never from the code under test: stats.ttest_ind(...,
# equal_var=False) is Welch's test, which compare() documents; the
# one-boot-side rule (the single boot shares the other side's sd, df from
# that side) is the pooled-variance t test written out below.
ORACLE = 20000


def welch_rate(ref_meds, new_meds):
    """How often scipy's Welch test rejects at 5 %: per-boot values
    (runs, boots) of each side."""
    p = stats.ttest_ind(new_meds, ref_meds, axis=1, equal_var=False).pvalue
    return float(np.mean(p < 0.05))


def one_boot_rate(ref_meds, new_one):
    """How often the pooled-variance t test with one boot on the compared
    side rejects at 5 %: ref_meds (runs, k), new_one (runs,)."""
    k = ref_meds.shape[1]
    se = ref_meds.std(axis=1, ddof=1) * math.sqrt(1 / k + 1)
    t = np.abs(new_one - ref_meds.mean(axis=1)) / se
    return float(np.mean(2 * stats.t.sf(t, k - 1) < 0.05))


# Seeds and bands: every generator in this file is seeded, so one tree with
# one set of libraries gets the same verdict every time (no flake per CI
# run). A re-seed, another number of simulations or a numpy release whose
# streams differ is a new draw: each two-sided band of 3 standard errors
# then fails a correct tree with probability 0.27 %, and n bands checked
# together with 1 - 0.9973^n (about 8 % for 30). A band that fails after
# such a change is a draw to read (run it with a few other seeds), not a
# band to widen at once.
def binomial_band(rate, n):
    return 3 * math.sqrt(rate * (1 - rate) / n)


# A shift about the size compare() reports as detectable at K = 5 boots.
AA_SHIFT = 8.0


def test_aa_rarely_called_difference():
    """A/A: two samples of one kernel are rarely called different (upper
    bound); the same comparison finds a planted shift of AA_SHIFT as often
    as scipy's Welch test does on the same kind of runs (lower bound on
    power, and an upper one: an interval too narrow finds it too often)."""
    rng = np.random.default_rng(103)
    ref = sim_level(rng, SIMS, LEVEL)
    new = sim_level(rng, SIMS, LEVEL)
    shifted = sim_level(rng, SIMS, LEVEL + AA_SHIFT)
    fp = found = 0
    for i in range(SIMS):
        r = per_boot(ref[i])
        fp += st.compare(r, per_boot(new[i]))["verdict"] == "difference"
        found += st.compare(r, per_boot(shifted[i]))["verdict"] == \
            "difference"
    med = [np.median(sim_level(rng, ORACLE, LEVEL + d), axis=-1)
           for d in (0.0, 0.0, AA_SHIFT)]
    want_fp, want = welch_rate(med[0], med[1]), welch_rate(med[0], med[2])
    print("A/A 'difference' rate %.3f (scipy %.3f); shift %.1f found %.3f "
          "(scipy %.3f)" % (fp / SIMS, want_fp, AA_SHIFT, found / SIMS, want))
    assert fp / SIMS <= 0.06
    assert 0.6 <= want <= 0.9
    assert abs(found / SIMS - want) <= binomial_band(want, SIMS)


def test_aa_rarely_called_difference_with_three_boots_and_one_boot():
    """A compared side of a single boot (its spread borrowed from the 3
    reference boots): rarely called different under A/A (upper bound), and
    a planted shift of 25 found as often as the documented pooled-variance
    t test finds it (lower and upper bound on power)."""
    rng = np.random.default_rng(104)
    shift = 25.0
    ref = sim_level(rng, SIMS, LEVEL, k=3)
    new = sim_level(rng, SIMS, LEVEL, k=1)
    shifted = sim_level(rng, SIMS, LEVEL + shift, k=1)
    fp = found = 0
    for i in range(SIMS):
        r = per_boot(ref[i])
        c = st.compare(r, per_boot(new[i]))
        assert any("one boot" in w for w in c["warnings"])
        fp += c["verdict"] == "difference"
        found += st.compare(r, per_boot(shifted[i]))["verdict"] == \
            "difference"
    med = np.median(sim_level(rng, ORACLE, LEVEL, k=3), axis=-1)
    one = np.median(sim_level(rng, ORACLE, LEVEL + shift, k=1), axis=-1)
    want = one_boot_rate(med, one[:, 0])
    print("A/A 3 vs 1 boots: %.3f; shift %.0f found %.3f (expected %.3f)"
          % (fp / SIMS, shift, found / SIMS, want))
    assert fp / SIMS <= 0.06
    assert 0.6 <= want <= 0.9
    assert abs(found / SIMS - want) <= binomial_band(want, SIMS)


def test_aa_floor_bounds_two_new_boots():
    """The floor is what it says: two further single boots of the same
    kernel differ by less than the floor about 95 % of the time."""
    rng = np.random.default_rng(105)
    n = 2 * SIMS                      # cheap: twice the simulations
    ref = sim_level(rng, n, LEVEL)
    pair = sim_level(rng, n, LEVEL, k=2)
    inside = 0
    for i in range(n):
        fl = st.aa_floor(per_boot(ref[i]))["floor"]
        m = st.boot_medians(per_boot(pair[i]))
        inside += abs(m[1] - m[0]) <= fl
    print("A/A floor holds %.3f" % (inside / n))
    assert 0.92 <= inside / n <= 0.98


@pytest.mark.parametrize("rel_between", SPREADS)
def test_pooling_boots_undercovers(rel_between):
    """Proof that pseudo-replication is caught: the same simulated data fed
    with every SAMPLE as its own boot (the old pooling) gives intervals far
    too narrow, while the boot as unit covers (tests above)."""
    rng = np.random.default_rng(101)
    x = sim_sweep(rng, SIMS, rel_between=rel_between)
    slope_hits = 0
    for i in range(SIMS):
        m = st.cost_model(pooled_cells(x[i]), key=("pool", i))
        assert m["k"] == K * S
        slope_hits += covers(m["b_ci"], B_TRUE)
    rng = np.random.default_rng(102)
    delta = 4.0
    ref = sim_level(rng, SIMS, LEVEL, rel_between=rel_between)
    new = sim_level(rng, SIMS, LEVEL + delta, rel_between=rel_between)
    ab_hits = sum(covers(st.compare(pooled(ref[i]), pooled(new[i]))
                         ["diff_ci"], delta) for i in range(SIMS))
    print("pooled coverage: slope %.3f, A/B %.3f (between sd %g)"
          % (slope_hits / SIMS, ab_hits / SIMS, rel_between))
    assert slope_hits / SIMS < 0.70
    assert ab_hits / SIMS < 0.85


def test_detectable_is_honest():
    """A planted shift equal to the reported `detectable` is called a
    difference about 80 % of the time: scipy's Welch test finds that shift
    0.75-0.85 of the time on the same kind of runs (the promise), and
    compare() finds it as often as scipy does (+-3 binomial se: normal
    quantiles, an se 15 % too small or 20 % too large fail). Without the
    `floor=` option, which no analysis code passes."""
    rng = np.random.default_rng(106)
    ref = sim_level(rng, SIMS, LEVEL)
    aa = sim_level(rng, SIMS, LEVEL)
    det = float(np.median([st.compare(per_boot(ref[i]),
                                      per_boot(aa[i]))["detectable"]
                           for i in range(SIMS)]))
    ref = sim_level(rng, SIMS, LEVEL)
    new = sim_level(rng, SIMS, LEVEL + det)
    called = sum(st.compare(per_boot(ref[i]), per_boot(new[i]))["verdict"]
                 == "difference" for i in range(SIMS)) / SIMS
    want = welch_rate(np.median(sim_level(rng, ORACLE, LEVEL), axis=-1),
                      np.median(sim_level(rng, ORACLE, LEVEL + det), axis=-1))
    print("detectable %.2f: called %.3f, scipy's Welch %.3f"
          % (det, called, want))
    assert 0.75 <= want <= 0.85
    assert abs(called - want) <= binomial_band(want, SIMS)


def ols_slopes(x, ns=NS):
    """Per-boot least-squares slopes of the per-boot medians: x (runs,
    boots, len(ns), samples) -> (runs, boots)."""
    xc = np.asarray(ns, dtype=float) - np.mean(ns)
    return np.median(x, axis=-1) @ xc / (xc @ xc)


def test_slope_difference_calibrated():
    """compare_slopes: equal slopes rarely differ (upper bound); a planted
    slope difference lies inside the interval about 95 % of the time, and
    is found as often as scipy's Welch test on the per-boot slopes finds it
    (lower bound on power, and an upper one)."""
    rng = np.random.default_rng(108)
    n, db = 200, 0.07
    xr = sim_sweep(rng, n)
    xs = sim_sweep(rng, n)
    xd = sim_sweep(rng, n, b=B_TRUE + db)
    same = covered = found = 0
    for i in range(n):
        mr = st.cost_model(cells_of(xr[i]))
        same += st.compare_slopes(mr, st.cost_model(cells_of(xs[i])))[
            "verdict"] == "difference"
        c = st.compare_slopes(mr, st.cost_model(cells_of(xd[i])))
        covered += covers(c["diff_ci"], db)
        found += c["verdict"] == "difference"
    m = 5000
    want = welch_rate(ols_slopes(sim_sweep(rng, m)),
                      ols_slopes(sim_sweep(rng, m, b=B_TRUE + db)))
    print("slopes: A/A %.3f, covered %.3f, found %.3f (scipy %.3f)"
          % (same / n, covered / n, found / n, want))
    assert same / n <= 0.08
    assert 0.90 <= covered / n <= 0.99
    assert 0.6 <= want <= 0.9
    assert abs(found / n - want) <= binomial_band(want, n) + \
        binomial_band(want, m)


# Unit tests ---------------------------------------------------------------

def boots(values, s=10, sd=0.0, seed=0):
    """{boot: [s samples]} with the given per-boot centres."""
    rng = np.random.default_rng(seed)
    return {i: list(v + rng.normal(0, sd, s)) if sd else [v] * s
            for i, v in enumerate(values)}


def test_boot_medians_order_and_empty():
    assert st.boot_medians({3: [9.0], 1: [1.0, 3.0], 2: []}) == [2.0, 9.0]


def test_identical_samples_no_difference():
    a = boots([1000, 1003, 998, 1001], sd=5, seed=1)
    c = st.compare(a, {b: list(v) for b, v in a.items()}, key=("t",))
    assert c["verdict"] == "none"
    assert c["diff"] == 0
    assert c["diff_ci"][0] <= 0 <= c["diff_ci"][1]
    assert c["p"] > 0.9


def test_constant_samples_no_difference():
    a = boots([252.435] * 4)
    c = st.compare(a, boots([252.435] * 4))
    assert c["verdict"] == "none" and c["p"] == 1.0
    assert c["se"] == 0 and c["diff_ci"] == [0.0, 0.0]


def test_zero_variance_exact_shift():
    """Deterministic icount: every boot the same; a shift of 1 is exact.
    (The floor= lines are unit tests of that option, which no analysis code
    passes: opbench_data prints aa_floor() beside the verdicts.)"""
    c = st.compare(boots([5000.0] * 3), boots([5001.0] * 3))
    assert c["verdict"] == "difference"
    assert c["diff_ci"] == [1.0, 1.0] and c["se"] == 0 and c["p"] == 0.0
    assert c["ratio_ci"] == [c["ratio"], c["ratio"]]
    assert st.compare(boots([5000.0] * 3), boots([5001.0] * 3),
                      floor=0.5)["verdict"] == "difference"
    assert st.compare(boots([5000.0] * 3), boots([5001.0] * 3),
                      floor=2.0)["verdict"] == "noise"
    e = st.estimate(boots([5000.0] * 3))
    assert e["ci"] == [5000.0, 5000.0] and e["se"] == 0
    assert e["sd_between"] == 0
    for v in json.dumps([c, e]).split(","):
        assert "NaN" not in v


@pytest.mark.parametrize("shift", [2.0, 50.0, -7.5])
def test_known_shift_inside_ci(shift):
    a = boots([1000, 1000.4, 999.7, 1000.2, 999.9], sd=2, seed=3)
    b = boots([1000 + shift + d for d in (0.3, -0.2, 0.1, -0.4, 0.2)],
              sd=2, seed=4)
    c = st.compare(a, b, key=("shift", shift))
    assert covers(c["diff_ci"], shift)
    assert c["verdict"] == "difference"
    assert covers(c["ratio_ci"], (1000 + shift) / 1000)
    assert c["k"] == [5, 5] and c["warnings"] == []


def test_noise_floor_demotes_small_difference():
    """Unit test of compare()'s floor= option (no analysis code passes it;
    opbench_data prints the A/A floor beside the verdicts instead)."""
    a = boots([100.0, 100.1, 99.9, 100.05, 99.95], sd=0.1, seed=5)
    b = boots([100.5, 100.6, 100.4, 100.55, 100.45], sd=0.1, seed=6)
    assert st.compare(a, b)["verdict"] == "difference"
    c = st.compare(a, b, floor=2.0)
    assert c["verdict"] == "noise" and c["detectable"] >= 2.0
    assert c["noise_floor"] == 2.0


def test_detectable_formula():
    """detectable = floor + (t(0.975, df) + t(0.80, df)) x se. Known answer
    (scipy): equal spreads, Welch df = 8, se = sqrt(2 x 0.5 / 5) = 0.5,
    0.7 + (2.306004135204166 + 0.8888893716...) x 0.5."""
    a = boots([100.0, 101.0, 99.0, 100.5, 99.5])
    b = boots([101.0, 102.0, 100.0, 101.5, 100.5])
    c = st.compare(a, b, floor=0.7)
    assert c["df"] == pytest.approx(8.0, rel=1e-12)
    assert c["se"] == pytest.approx(0.5, rel=1e-12)
    assert c["detectable"] == pytest.approx(2.297446826400172, rel=1e-12)
    assert c["p"] == pytest.approx(0.08051623795726257, rel=1e-9)


# Known answers ------------------------------------------------------------
# Every literal below was computed with scipy (stats.ttest_ind, ttest_rel,
# t.ppf, t.sf; np.polyfit for the lines), not by opbench_stats; one boot's
# samples are all equal, so its median is the value given. These pin the
# degrees of freedom and the quantiles: df off by one, or normal quantiles,
# moves every interval below by 2-20 %, far outside rel=1e-9.

R5 = [100.0, 101.5, 99.0, 100.5, 102.0]
V4 = [103.0, 101.0, 104.5, 102.5]
V4_FAMILY = [[50.0, 53.0, 48.0, 51.0], [70.0, 66.5, 71.0, 69.5]]


def approx(v):
    return pytest.approx(v, rel=1e-9)


def test_compare_welch_known_answer():
    """Welch with Welch-Satterthwaite df: scipy's
    ttest_ind(V4, R5, equal_var=False) gives t 2.3950569572214953 and
    p 0.05461021943607839; df 5.864489869300176, t(0.975, df)
    2.4606829919957156. The interval just contains 0: normal quantiles
    (1.96) would exclude it and call a difference."""
    c = st.compare(boots(R5), boots(V4), key=("ka",))
    assert c["diff"] == approx(2.15)
    assert c["se"] == approx(0.8976822006330154)
    assert c["df"] == approx(5.864489869300176)
    assert c["p"] == approx(0.05461021943607839)
    assert c["diff_ci"] == [approx(-0.058911323314940756),
                            approx(4.358911323314953)]
    assert c["verdict"] == "none"
    assert c["ratio"] == approx(1.021371769383698)
    assert c["ratio_ci"] == [approx(0.9994852003006158),
                             approx(1.043737607100357)]
    assert c["detectable"] == approx(3.023364514264063)


def test_compare_with_family_spread_known_answer():
    """compare() as analyse() calls it, with each side's pooled family
    spread: the compared side's pooled sd (1.8408935028645435 on 9 df,
    larger than its own 1.4433756729740645) enters Welch-Satterthwaite
    with ITS df (9), the reference its own 4 df: df 12.811559845535365."""
    sp = st.pooled_spread([boots(V4)] + [boots(v) for v in V4_FAMILY])
    assert sp["df"] == 9 and sp["cells"] == 3
    assert sp["sd"] == approx(1.8408935028645435)
    c = st.compare(boots(R5), boots(V4), spread_ref=st.pooled_spread(
        [boots(R5)]), spread=sp)
    assert c["se"] == approx(1.0640593133008245)
    assert c["df"] == approx(12.811559845535365)
    assert c["diff_ci"] == [approx(-0.15220217089700494),
                            approx(4.452202170897016)]
    assert c["p"] == approx(0.06473751787216238)


def test_estimate_pooled_spread_known_answer():
    """estimate() with the family's pooled sd (larger than the cell's
    own): Student t with the POOLED df, t(0.975, 9) 2.2621571627409915,
    se 1.8408935028645435 / 2."""
    sp = st.pooled_spread([boots(V4)] + [boots(v) for v in V4_FAMILY])
    e = st.estimate(boots(V4), spread=sp)
    assert e["value"] == 102.75
    assert e["se"] == approx(0.9204467514322717)
    assert e["ci"] == [approx(100.66780478832581), approx(104.83219521167419)]
    assert e["sd_between"] == approx(1.4433756729740645)


R0 = [200.0, 203.5, 198.0, 201.0, 205.5]
D = [2.0, 3.5, 1.0, 2.5, 4.5]
D_FAMILY = [[10.0, 4.0, 12.5, 7.0, 9.0], [-3.0, 1.5, -6.0, 0.5, -2.0]]


def test_paired_known_answer():
    """compare_paired: scipy's ttest_rel(R0 + D, R0) gives t
    4.469071798452787, p 0.011082591815720666; the interval is
    mean(D) -+ t(0.975, 4) sd(D) / sqrt(5) (k - 1 = 4 df)."""
    c = st.compare_paired(boots(R0), boots([r + d for r, d in zip(R0, D)]))
    assert c["paired_boots"] == 5 and c["df"] == 4.0
    assert c["diff"] == approx(2.7)
    assert c["se"] == approx(0.6041522986797285)
    assert c["p"] == approx(0.011082591815720666)
    assert c["diff_ci"] == [approx(1.0226043075366693),
                            approx(4.377395692463331)]
    assert c["verdict"] == "difference"
    assert c["ref_value"] == approx(201.6)
    assert c["ratio_ci"] == [approx(1.00507244200167),
                             approx(1.0217132722840443)]
    assert c["detectable"] == approx(2.2458816047534174)


def test_paired_pooled_spread_known_answer():
    """compare_paired with paired_spread() over three cells of the same
    five boots: the differences' pooled sd 2.6394443859772205 on 3 x 4 =
    12 df (larger than this pair's own 1.3509256086106296), t(0.975, 12)."""
    cells = [boots([r + d for r, d in zip(R0, dd)]) for dd in [D] + D_FAMILY]
    psp = st.paired_spread(boots(R0), cells)
    assert psp["df"] == 12 and psp["sd"] == approx(2.6394443859772205)
    c = st.compare_paired(boots(R0), cells[0], spread=psp)
    assert c["df"] == 12.0
    assert c["se"] == approx(1.1803954139750514)
    assert c["diff_ci"] == [approx(0.12813932795529714),
                            approx(5.271860672044703)]
    assert c["p"] == approx(0.04112674508387171)
    assert c["verdict"] == "difference"


def test_compare_one_boot_side_known_answer():
    """One boot on the compared side: it shares the reference's sd, se =
    sd(R5) sqrt(1/5 + 1) = 1.3076696830622019, df from the reference's 4
    boots (t(0.975, 4) 2.7764451051977987)."""
    c = st.compare(boots(R5), boots([104.0]))
    assert c["df"] == 4.0
    assert c["se"] == approx(1.3076696830622019)
    assert c["diff_ci"] == [approx(-0.23067309075360143),
                            approx(7.030673090753613)]
    assert c["p"] == approx(0.0600452892155921)
    assert c["verdict"] == "none"


def test_cost_model_known_answer():
    """Three boots, each exactly linear on N = 1, 2, 4, 8 (slopes 45, 45.5,
    44.25; intercepts 300, 302, 299; N = 0 medians 290, 289, 291.5): every
    figure is the mean over boots with a Student t interval on 2 df
    (t(0.975, 2) 4.302652729911275)."""
    ns = (1, 2, 4, 8)
    lines = ((300.0, 45.0), (302.0, 45.5), (299.0, 44.25))
    cells = {n: {i: [a + b * n] * 5 for i, (a, b) in enumerate(lines)}
             for n in ns}
    cells[0] = {i: [z] * 5 for i, z in enumerate((290.0, 289.0, 291.5))}
    m = st.cost_model(cells, key=("ka",))
    assert m["k"] == 3 and m["ns"] == list(ns)
    want = {"b": (44.916666666666664, 0.3632415786283895,
                  43.35376429676394, 46.47956903656939),
            "a": (300.3333333333333, 0.8819171036881969,
                  296.53875029959386, 304.12791636707277),
            "walk_max": (359.3333333333333, 2.905932629027116,
                         346.83011437411153, 371.8365522925551),
            "entry": (10.166666666666666, 1.5898986690282426,
                      3.325884818089996, 17.007448515243336)}
    for name, (v, se, lo, hi) in want.items():
        assert m[name] == approx(v), name
        assert m[name + "_se"] == approx(se), name
        assert m[name + "_ci"] == [approx(lo), approx(hi)], name


def test_few_boots_warned():
    c = st.compare(boots([10.0, 10.1]), boots([20.0, 20.1]))
    assert any("fewer than 3 boots" in w for w in c["warnings"])
    c = st.compare(boots([10.0]), boots([20.0]))
    assert c["verdict"] == "none" and c["diff_ci"] is None
    assert c["p"] is None and c["diff"] == 10.0
    assert any("one boot on each side" in w for w in c["warnings"])


def test_one_boot_estimate_warns():
    e = st.estimate({7: [10.0, 11.0, 12.0, 10.5, 11.5]}, key=("one",))
    assert e["k"] == 1 and e["n"] == 5 and e["value"] == 11.0
    assert e["sd_between"] is None
    assert e["ci"][0] <= 11.0 <= e["ci"][1]
    assert any("boot-to-boot spread is unknown" in w and "too narrow" in w
               for w in e["warnings"])
    e = st.estimate({1: [1.0, 2.0], 2: [3.0], 3: []})
    assert e["k"] == 2 and e["n"] == 3 and e["value"] == 2.25
    assert e["boot_medians"] == [1.5, 3.0]
    assert e["sd_between"] == pytest.approx(math.sqrt(1.125))


def test_estimate_t_interval():
    e = st.estimate(boots([10.0, 12.0, 11.0]))
    assert e["value"] == 11.0 and e["se"] == pytest.approx(1 / math.sqrt(3))
    h = 4.302652729911275 / math.sqrt(3)   # t(0.975, 2) x sd / sqrt(3)
    assert e["ci"] == pytest.approx([11.0 - h, 11.0 + h])


def test_aa_floor_needs_three_boots():
    assert st.aa_floor(boots([1.0, 2.0])) is None
    assert st.aa_floor(boots([5.0] * 3))["floor"] == 0
    f = st.aa_floor(boots([10.0, 12.0, 11.0]))
    assert f["boots"] == 3 and f["sd_between"] == 1.0
    assert f["floor"] == pytest.approx(4.302652729911275 * math.sqrt(2))


def linear_cells(a=300.0, b=45.2, bootsets=(0.0, 1.0, -1.0, 0.5), ns=NS,
                 zero=None, step=0.0):
    """Exactly linear cells, each boot shifted; optional N=0 and a step
    added at N=1."""
    cells = {n: {i: [a + d + b * n + (step if n == 1 else 0.0)] * 5
                 for i, d in enumerate(bootsets)} for n in ns}
    if zero is not None:
        cells[0] = {i: [a + d - zero] * 5 for i, d in enumerate(bootsets)}
    return cells


def test_cost_model_recovers_slope():
    rng = np.random.default_rng(5)
    ns = (1, 2, 4, 8, 16, 32, 64, 128)
    effects = rng.normal(0, 2, 4)
    cells = {n: {i: list(300 + e + 45.2 * n + rng.normal(0, 3, 10))
                 for i, e in enumerate(effects)} for n in ns}
    m = st.cost_model(cells, key=("slope",))
    assert m["ns"] == list(ns) and m["k"] == 4
    assert covers(m["b_ci"], 45.2)
    assert abs(m["b"] - 45.2) < 0.1
    assert covers(m["a_ci"], 300)
    assert m["walk_max"] == pytest.approx(m["b"] * 128)
    assert [p["boot"] for p in m["per_boot"]] == [0, 1, 2, 3]
    assert m["entry"] is None and m["entry_ci"] is None
    assert st.cost_model({0: {1: [1.0]}, 1: {1: [2.0]}}) is None
    assert st.cost_model({1: {1: [1.0]}, 2: {}}) is None


def test_cost_model_entry():
    m = st.cost_model(linear_cells(zero=12.5))
    assert m["entry"] == pytest.approx(12.5)
    assert m["entry_ci"] == pytest.approx([12.5, 12.5])


def test_unbalanced_boots_excluded_and_named():
    cells = linear_cells()
    del cells[64][2]
    cells[128][9] = [1.0]        # a boot seen at one N only
    m = st.cost_model(cells)
    assert m["excluded_boots"] == [2, 9]
    assert m["k"] == 3 and [p["boot"] for p in m["per_boot"]] == [0, 1, 3]
    assert any("2, 9" in w for w in m["warnings"])
    assert m["b"] == pytest.approx(45.2)


def test_weights_doubling_design():
    m = st.cost_model(linear_cells())
    w = m["weights"]
    assert sum(w.values()) == pytest.approx(1.0)
    assert max(w, key=w.get) == 2048
    # the share of the slope's variance: N = 2048 carries most of it
    assert w[2048] == pytest.approx(0.69, abs=0.01)
    assert all(w[n] < 0.03 for n in (1, 2, 4, 8))


def test_residuals_show_linearity_and_step():
    m = st.cost_model(linear_cells())
    assert all(abs(r) < 1e-6 for r in m["residuals"].values())
    assert all(abs(r) < 1e-9 for r in m["residuals_rel"].values())
    assert m["b_ci"] == pytest.approx([45.2, 45.2])
    s = st.cost_model(linear_cells(step=30.0))
    r = s["residuals"]
    assert r[1] > 20 and max(r, key=r.get) == 1
    assert all(abs(r[n]) < 5 for n in NS if n != 1)
    assert s["residuals_rel"][1] > 20 / 400


def test_one_boot_cost_model_warns():
    rng = np.random.default_rng(9)
    cells = {n: {4: list(300 + 45.2 * n + rng.normal(0, 3, 10))}
             for n in NS}
    cells[0] = {4: list(290 + rng.normal(0, 3, 10))}
    m = st.cost_model(cells, key=("one",))
    assert m["k"] == 1
    assert any("boot-to-boot spread is unknown" in w for w in m["warnings"])
    assert covers(m["b_ci"], 45.2) and m["b_ci"][0] < m["b_ci"][1]
    assert m["entry_ci"][0] < m["entry"] < m["entry_ci"][1]
    assert m["b_sd_between"] is None


def test_compare_slopes():
    mr = st.cost_model(linear_cells(b=45.2, bootsets=(0.0, 1.0, -1.0)))
    cells = linear_cells(b=46.0)
    for n in NS:                       # a spread of slopes across boots
        for i in cells[n]:
            cells[n][i] = [v + 0.01 * i * n for v in cells[n][i]]
    m = st.cost_model(cells)
    c = st.compare_slopes(mr, m)
    assert c["verdict"] == "difference"
    assert c["diff"] == pytest.approx(0.8 + 0.015)
    assert covers(c["diff_ci"], 0.815)
    assert c["ratio"] == pytest.approx(46.015 / 45.2)
    same = st.compare_slopes(mr, mr)
    assert same["verdict"] == "none" and same["diff"] == 0
    assert st.compare_slopes(None, m) is None


def test_json_serialisable_and_deterministic():
    """numpy inputs (arrays, numpy-int boot ids) give plain JSON output and
    the known answers of plain inputs; the bootstrap paths (one boot) are
    seeded by their key, not by call order or numpy's global state."""
    ids = [np.int64(i) for i in range(5)]
    ref = {b: np.full(4, v) for b, v in zip(ids, R5)}
    new = {b: np.full(4, v) for b, v in zip(ids, V4)}
    c = st.compare(ref, new, key=("c",))
    assert c["df"] == approx(5.864489869300176)            # as plain input
    assert c["diff_ci"] == [approx(-0.058911323314940756),
                            approx(4.358911323314953)]
    e = st.estimate(ref, key=("e",))
    assert e["value"] == approx(100.6)
    assert st.aa_floor(ref)["floor"] == approx(
        2.7764451051977987 * np.std(R5, ddof=1) * math.sqrt(2))
    assert st.boot_medians(ref) == R5
    rng = np.random.default_rng(11)
    x = sim_sweep(rng, 1)[0]
    cells = {n: {np.int64(i): x[i, j] for i in range(K)}
             for j, n in enumerate(NS)}
    cells[0] = {np.int64(i): x[i, 0] - 10 for i in range(K)}
    one = {n: {0: c[0]} for n, c in cells.items()}
    calls = [
        lambda: st.estimate(ref, key=("e",)),
        lambda: st.estimate({0: x[0, 0]}, key=("e1",)),
        lambda: st.aa_floor(ref),
        lambda: st.compare(ref, new, key=("c",), floor=1.0),
        lambda: st.compare({0: x[0, 0]}, new),
        lambda: st.cost_model(cells, key=("m",)),
        lambda: st.cost_model(one, key=("m1",)),
        lambda: st.compare_slopes(st.cost_model(cells),
                                  st.cost_model(one, key=("m1",))),
        lambda: st.boot_medians(ref),
        lambda: st.summary(x[0, 0], key=("k",)),
    ]
    first = [json.dumps(f(), allow_nan=False, sort_keys=True) for f in calls]
    np.random.seed(12345)
    np.random.random(1000)             # numpy's global state moved
    again = [json.dumps(f(), allow_nan=False, sort_keys=True)
             for f in reversed(calls)][::-1]
    assert again == first              # neither call order nor global state
    assert isinstance(st.METHOD, str) and "boot" in st.METHOD
    # Seeded by the key: another key resamples differently (the bootstrap
    # sd; the percentile ends of a median land on sample values).
    a = st.estimate({0: x[0, 0]}, key=("e1",))
    b = st.estimate({0: x[0, 0]}, key=("e2",))
    assert a["value"] == b["value"] and a["se"] != b["se"]
    assert a["ci"][0] <= a["value"] <= a["ci"][1]


# Paired comparisons and discrete boot effects ---------------------------

def test_paired_comparison_cancels_the_shared_boot_effect():
    """Two cells measured in the same boots share each boot's effect: the
    paired interval covers a planted shift at its nominal rate and finds
    it, where an unpaired comparison drowns it in the boot spread."""
    rng = np.random.default_rng(20261204)
    cover = found_paired = found_welch = 0
    sims = 500
    for _ in range(sims):
        boot = rng.normal(0, 10.0, 5)               # large, shared
        a = {b: list(5000 + boot[b] + rng.normal(0, 0.5, 8))
             for b in range(5)}
        c = {b: list(5003 + boot[b] + rng.normal(0, 0.5, 8))
             for b in range(5)}
        p = st.compare_paired(a, c)
        cover += p["diff_ci"][0] <= 3 <= p["diff_ci"][1]
        found_paired += p["verdict"] == "difference"
        found_welch += st.compare(a, c)["verdict"] == "difference"
    assert 0.92 <= cover / sims <= 0.98
    assert found_paired / sims > 0.9 and found_welch / sims < 0.2


def test_paired_needs_common_boots():
    p = st.compare_paired({1: [1.0], 2: [2.0]}, {3: [1.0], 4: [2.0]})
    assert p["paired_boots"] == 0 and p["diff_ci"] is None
    assert p["verdict"] == "none"


def test_pooled_spread_covers_discrete_boot_modes():
    """Under icount a boot's median lands on one of a few values: with a
    rare second mode, five boots of one cell often agree exactly and the
    cell's own interval has zero width. Pooling the spread over the
    benchmark's cells (13 N) restores the coverage; the cell's own sd
    alone does not. Upper bound: the pooled intervals are no wider than
    the documented rule makes them (their mean half-width within 3 se of
    the rule's, written out with numpy on 200 000 draws)."""
    rng = np.random.default_rng(7)
    sims, k, cells = 400, 5, 13
    own = pooled = 0
    half = []
    for _ in range(sims):
        fam = [{b: [1000.0 * (i + 1) + 35 * (rng.random() < 0.2)]
                for b in range(k)} for i in range(cells)]
        sp = st.pooled_spread(fam)
        truth = 1000.0 + 35 * 0.2
        e = st.estimate(fam[0])
        own += e["ci"][0] <= truth <= e["ci"][1]
        e = st.estimate(fam[0], spread=sp)
        pooled += e["ci"][0] <= truth <= e["ci"][1]
        half.append((e["ci"][1] - e["ci"][0]) / 2)
    # The rule: the larger of the cell's own and the family's pooled sd,
    # Student t with that sd's df (k - 1, or 13 (k - 1)).
    v = 35.0 * (np.random.default_rng(8).random((200000, cells, k)) < 0.2)
    ss = ((v - v.mean(-1, keepdims=True)) ** 2).sum(-1)
    sd_own = np.sqrt(ss[:, 0] / (k - 1))
    sd_pool = np.sqrt(ss.sum(1) / (cells * (k - 1)))
    h = np.where(sd_pool > sd_own,
                 stats.t.ppf(0.975, cells * (k - 1)) * sd_pool,
                 stats.t.ppf(0.975, k - 1) * sd_own) / math.sqrt(k)
    band = 3 * math.hypot(np.std(half) / math.sqrt(sims),
                          h.std() / math.sqrt(len(h)))
    print("own %.3f, pooled %.3f; mean half-width %.3f (rule %.3f +- %.3f)"
          % (own / sims, pooled / sims, np.mean(half), h.mean(), band))
    assert own / sims < 0.8
    assert pooled / sims >= 0.9
    assert abs(np.mean(half) - h.mean()) <= band


def test_holm_adjusts_for_the_number_of_comparisons():
    """Holm's step-down: the smallest p times m, the next times m - 1, each
    at least the one before; an untested row stays None."""
    adj = st.holm([0.01, 0.04, 0.03, None])
    assert adj[3] is None
    assert [round(x, 10) for x in adj[:3]] == [0.03, 0.06, 0.06]
    assert st.holm([0.5, 0.9]) == [1.0, 1.0]
    assert st.holm([]) == []


def test_ratio_of_slopes_in_time_from_each_rounds_ratio():
    """In time a boot scales every figure of it: two designs whose slopes
    keep a ratio of 0.5 in every round, while the rounds' levels move by
    20 %, have a ratio of 0.5 with no spread (the paired log-ratio), where
    the difference's interval over the reference's mean would be wide."""
    ref = {"per_boot": [{"boot": 1, "b": 10.0}, {"boot": 2, "b": 12.0},
                        {"boot": 3, "b": 8.0}]}
    cur = {"per_boot": [{"boot": 4, "b": 5.0}, {"boot": 5, "b": 6.0},
                        {"boot": 6, "b": 4.0}]}
    rounds = {1: 0, 2: 1, 3: 2, 4: 0, 5: 1, 6: 2}
    c = st.compare_slopes_paired(ref, cur, rounds)
    assert c["ratio"] == pytest.approx(0.5)
    assert c["ratio_ci"] == pytest.approx([0.5, 0.5])
    assert "log of each round's ratio" in c["ratio_method"]
    # The difference itself still moves with the rounds' levels.
    assert c["diff_ci"][1] - c["diff_ci"][0] > 1.0
    cur["per_boot"][1]["b"] = 7.2  # one round at 0.6
    c = st.compare_slopes_paired(ref, cur, rounds)
    assert c["ratio_ci"][0] < 0.5 < 0.6 < c["ratio_ci"][1]
