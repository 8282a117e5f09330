# SPDX-License-Identifier: GPL-2.0
"""Known-answer and calibration tests of analysis/opbench_stats.py.

Host only, no files: every input comes from the seeded simulator below,
which plants the truths (a slope, an A/B difference, none at all) and the
structure of a real icount run: boots differ from each other, samples within
one boot differ much less. The calibration tests check that the 95 %
intervals cover the planted truth about 95 % of the times, that an A/A
comparison is called a difference about 5 % of the times at most, that the
"detectable" figure keeps its 80 % promise, and that the old way (every
sample taken as an independent replicate) is caught failing.
"""
import json
import math
import os
import sys

import numpy as np
import pytest

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


def test_aa_rarely_called_difference():
    rng = np.random.default_rng(103)
    ref = sim_level(rng, SIMS, LEVEL)
    new = sim_level(rng, SIMS, LEVEL)
    plain = floored = 0
    for i in range(SIMS):
        r = per_boot(ref[i])
        fl = st.aa_floor(r)
        assert fl is not None and fl["boots"] == K
        plain += st.compare(r, per_boot(new[i]))["verdict"] == "difference"
        floored += st.compare(r, per_boot(new[i]),
                              floor=fl["floor"])["verdict"] == "difference"
    print("A/A 'difference' rate %.3f without floor, %.3f with"
          % (plain / SIMS, floored / SIMS))
    assert plain / SIMS <= 0.06
    assert floored / SIMS <= 0.06


def test_aa_rarely_called_difference_with_three_boots_and_one_boot():
    """The floor from the minimum 3 reference boots, and a compared side
    of a single boot (its spread borrowed from the reference)."""
    rng = np.random.default_rng(104)
    ref = sim_level(rng, SIMS, LEVEL, k=3)
    new = sim_level(rng, SIMS, LEVEL, k=1)
    plain = floored = 0
    for i in range(SIMS):
        r = per_boot(ref[i])
        c = st.compare(r, per_boot(new[i]))
        assert any("one boot" in w for w in c["warnings"])
        plain += c["verdict"] == "difference"
        floored += st.compare(r, per_boot(new[i]),
                              floor=st.aa_floor(r)["floor"]
                              )["verdict"] == "difference"
    print("A/A 3 vs 1 boots: %.3f without floor, %.3f with"
          % (plain / SIMS, floored / SIMS))
    assert plain / SIMS <= 0.06
    assert floored / SIMS <= 0.06


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


@pytest.mark.parametrize("with_floor", [False, True])
def test_detectable_is_honest(with_floor):
    """A planted shift equal to the reported `detectable` is called a
    difference about 80 % of the time."""
    rng = np.random.default_rng(106)
    floor = None
    if with_floor:
        floor = st.aa_floor(per_boot(sim_level(rng, 1, LEVEL)[0]))["floor"]
    ref = sim_level(rng, SIMS, LEVEL)
    aa = sim_level(rng, SIMS, LEVEL)
    det = float(np.median([st.compare(per_boot(ref[i]), per_boot(aa[i]),
                                      floor=floor)["detectable"]
                           for i in range(SIMS)]))
    ref = sim_level(rng, SIMS, LEVEL)
    new = sim_level(rng, SIMS, LEVEL + det)
    called = sum(st.compare(per_boot(ref[i]), per_boot(new[i]),
                            floor=floor)["verdict"] == "difference"
                 for i in range(SIMS))
    print("detectable %.2f (floor %s): called %.3f"
          % (det, floor, called / SIMS))
    assert 0.65 <= called / SIMS <= 0.95


def test_p_agrees_with_interval():
    rng = np.random.default_rng(107)
    ref = sim_level(rng, 200, LEVEL)
    new = sim_level(rng, 200, LEVEL + 3.0)
    for i in range(200):
        c = st.compare(per_boot(ref[i]), per_boot(new[i]))
        excl = c["diff_ci"][0] > 0 or c["diff_ci"][1] < 0
        assert excl == (c["p"] < 0.05)


def test_slope_difference_calibrated():
    """compare_slopes: equal slopes rarely differ; a planted slope
    difference lies inside the interval about 95 % of the time."""
    rng = np.random.default_rng(108)
    n = 200
    xr = sim_sweep(rng, n)
    xs = sim_sweep(rng, n)
    xd = sim_sweep(rng, n, b=B_TRUE + 0.05)
    same = covered = 0
    for i in range(n):
        mr = st.cost_model(cells_of(xr[i]))
        same += st.compare_slopes(mr, st.cost_model(cells_of(xs[i])))[
            "verdict"] == "difference"
        covered += covers(st.compare_slopes(
            mr, st.cost_model(cells_of(xd[i])))["diff_ci"], 0.05)
    assert same / n <= 0.08
    assert 0.90 <= covered / n <= 0.99


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
    """Deterministic icount: every boot the same; a shift of 1 is exact."""
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
    a = boots([100.0, 100.1, 99.9, 100.05, 99.95], sd=0.1, seed=5)
    b = boots([100.5, 100.6, 100.4, 100.55, 100.45], sd=0.1, seed=6)
    assert st.compare(a, b)["verdict"] == "difference"
    c = st.compare(a, b, floor=2.0)
    assert c["verdict"] == "noise" and c["detectable"] >= 2.0
    assert c["noise_floor"] == 2.0


def test_detectable_formula():
    a = boots([100.0, 101.0, 99.0, 100.5, 99.5])
    b = boots([101.0, 102.0, 100.0, 101.5, 100.5])
    c = st.compare(a, b, floor=0.7)
    from scipy import stats
    want = 0.7 + (stats.t.ppf(0.975, c["df"])
                  + stats.t.ppf(0.80, c["df"])) * c["se"]
    assert c["detectable"] == pytest.approx(want)
    assert c["df"] == pytest.approx(8.0)   # equal spreads: Welch df = 8


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
    """numpy inputs (arrays, numpy-int boot ids) give plain JSON output,
    the same at every call."""
    rng = np.random.default_rng(11)
    x = sim_sweep(rng, 1)[0]
    cells = {n: {np.int64(i): x[i, j] for i in range(K)}
             for j, n in enumerate(NS)}
    cells[0] = {np.int64(i): x[i, 0] - 10 for i in range(K)}
    one = {n: {0: c[0]} for n, c in cells.items()}
    ref = {np.int64(i): x[i, 0] for i in range(K)}
    new = {np.int64(i): x[i, 1] for i in range(3)}
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
    ]
    for f in calls:
        r = f()
        s = json.dumps(r, allow_nan=False, sort_keys=True)
        assert s == json.dumps(f(), allow_nan=False, sort_keys=True)
        assert r == f()
    assert isinstance(st.METHOD, str) and "boot" in st.METHOD
    x = [1.0, 2.0, 3.5, 4.0, 7.0]
    assert st.summary(x, key=("k",)) == st.summary(x, key=("k",))


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
    alone does not."""
    rng = np.random.default_rng(7)
    sims, k, cells = 400, 5, 13
    own = pooled = 0
    for _ in range(sims):
        fam = [{b: [1000.0 * (i + 1) + 35 * (rng.random() < 0.2)]
                for b in range(k)} for i in range(cells)]
        sp = st.pooled_spread(fam)
        truth = 1000.0 + 35 * 0.2
        e = st.estimate(fam[0])
        own += e["ci"][0] <= truth <= e["ci"][1]
        e = st.estimate(fam[0], spread=sp)
        pooled += e["ci"][0] <= truth <= e["ci"][1]
    assert own / sims < 0.8
    assert pooled / sims >= 0.9
