# SPDX-License-Identifier: GPL-2.0
"""opbench preempt: the gap classifier (analysis/preempt_gaps.py) on
synthetic records with known answers, and the benchmark itself on this host
(N = 0 needs no RSEQ operations). Host only, fast."""
import json
import os
import subprocess
import sys

import pytest

from conftest import TOP

sys.path.insert(0, os.path.join(TOP, "analysis"))
import preempt_gaps as pg  # noqa: E402

P, I = 1000, 300          # a P-gap and an I-gap, in ticks
BOTH, INSIDE = pg.BOTH, pg.GAP_INSIDE


def rec(gaps, nr_ops=1, wakeups=None, nivcsw=None, nvcsw=0, waker=0,
        sample=0, **kw):
    """A "gaps" record as opbench emits it; by default its counts agree
    with its gaps (wake-ups = sequence steps = involuntary switches)."""
    steps = sum(g[1] for g in gaps)
    r = {"kind": "gaps", "bench": "preempt", "flavour": "ops",
         "kernel": "7.2.13-ops", "nr_ops": nr_ops, "op_type": "null",
         "reg": "own", "cpu": 0, "sample": sample, "clock": "tsc",
         "threshold": 200, "loop_ticks": 10, "period_us": 331,
         "waker_ops": False, "loops": steps,
         "wakeups": steps if wakeups is None else wakeups,
         "nivcsw": steps if nivcsw is None else nivcsw, "nvcsw": nvcsw,
         "waker_violations": waker, "truncated": False, "bracket_ok": True,
         "gaps": [list(g) for g in gaps]}
    r.update(kw)
    return json.loads(json.dumps(r))     # as parsed from a line


def clean_gaps(n_p=10, n_i=4, p=P, i=I, bits=BOTH):
    """n_p P-gaps of p + k ticks and n_i I-gaps of i + k, interleaved."""
    gaps = [[p + k, 1, bits] for k in range(n_p)]
    for k in range(n_i):
        gaps.insert(2 * k + 1, [i + k, 0, 0])
    return gaps


# Known answers --------------------------------------------------------------

def test_clean_record_counts_and_medians():
    c = pg.classify(rec(clean_gaps(11, 5)))
    assert (c["n_p"], c["n_i"], c["n_split"]) == (11, 5, 0)
    assert sorted(c["p"]) == list(range(P, P + 11))
    assert sorted(c["i"]) == list(range(I, I + 5))
    assert c["p_median"] == P + 5 and c["i_median"] == I + 2
    assert c["p10"] == P + 1 and c["p90"] == P + 9
    assert c["p99"] == pytest.approx(P + 9.9)
    assert c["tick_coincident"] == 0 and c["p_clean_median"] == P + 5
    assert c["valid"] and c["reconciled"] and c["why"] == []
    assert c["reconcile"] == {"p_gaps": 11, "wakeups": 11, "nivcsw": 11,
                              "nvcsw": 0, "seq_sum": 11}
    assert set(c["violations"].values()) == {0}


def test_tick_coincident_p_gaps_are_reported_apart():
    gaps = clean_gaps(10, 4)
    gaps += [[P + 5 + I, 1, BOTH], [P + 4 + I // 2 + 2, 1, BOTH]]
    c = pg.classify(rec(gaps))
    # median P = 1005.5 (12 P-gaps), median I = 301.5: limit 1156.25
    assert c["tick_limit"] == pytest.approx(1005.5 + 150.75)
    assert c["tick_coincident"] == 1
    assert c["tick_coincident_p"] == [P + 5 + I]
    assert len(c["p_clean"]) == 11 and P + 5 + I not in c["p_clean"]
    assert c["p_clean_median"] == P + 5
    assert c["n_p"] == 12 and c["valid"]


def test_no_i_gaps_takes_nothing_out():
    c = pg.classify(rec([[P, 1, BOTH], [P + 2 * I, 1, BOTH]]))
    assert c["i_median"] is None and c["tick_limit"] is None
    assert c["tick_coincident"] == 0 and len(c["p_clean"]) == 2


@pytest.mark.parametrize("gap,key", [
    ([P, 1, 0], "p_not_reset"),
    ([P, 1, pg.GAP_FIRST], "p_not_reset"),
    ([I, 0, BOTH], "i_reset"),
    ([I, 0, pg.GAP_LAST], "i_reset"),
])
def test_each_walk_violation_is_caught(gap, key):
    c = pg.classify(rec(clean_gaps() + [gap]))
    assert c["violations"][key] == 1
    assert not c["valid"]
    assert any(pg._WORDS[key] in w for w in c["why"])
    others = {k: n for k, n in c["violations"].items()
              if k not in (key, "partial")}
    assert set(others.values()) == {0}, others


@pytest.mark.parametrize("bits", [pg.GAP_FIRST, pg.GAP_LAST])
def test_partial_is_caught_on_both_kinds(bits):
    c = pg.classify(rec(clean_gaps() + [[P, 1, bits], [I, 0, bits]]))
    assert c["violations"]["partial"] == 2
    assert c["violations"]["p_not_reset"] == 1
    assert c["violations"]["i_reset"] == 1
    assert not c["valid"]


def test_multi_wake_disturbs_the_sample():
    """Another task held the CPU across a period: nothing wrong with the
    kernel, but the sample measured more than preemptions: not used."""
    # 12 wake-ups, but S was switched out once per P-event: 11 switches
    c = pg.classify(rec(clean_gaps() + [[P, 2, BOTH]], nivcsw=11))
    assert c["violations"]["multi_wake"] == 1
    # 11 P-gaps, 12 wake-ups: one gap held two
    assert c["reconcile"]["p_gaps"] == 11 and c["reconcile"]["wakeups"] == 12
    assert not c["reconciled"] and c["valid"] and not c["used"]
    assert any(pg._WORDS["multi_wake"] in w for w in c["disturbed"])


def test_waker_violation_is_caught():
    c = pg.classify(rec(clean_gaps(), waker=3))
    assert c["violations"]["waker"] == 3 and c["reconciled"]
    assert not c["valid"]
    assert any("waker" in w for w in c["why"])


@pytest.mark.parametrize("field,value,words", [
    ("wakeups", 11, "record inconsistent"),
    ("nivcsw", 9, "did not switch the spinner out"),
    ("nivcsw", 11, "another task preempted the spinner")])
def test_reconciliation_mismatch_is_caught(field, value, words):
    c = pg.classify(rec(clean_gaps(10), **{field: value}))
    assert not c["reconciled"] and not c["valid"] and not c["used"]
    assert set(c["violations"].values()) == {0}
    assert any(words in w for w in c["why"]), c["why"]
    assert c["reconcile"][field] == value


def test_a_blocked_spinner_disturbs_the_sample():
    c = pg.classify(rec(clean_gaps(10), nvcsw=1))
    assert not c["reconciled"] and c["valid"] and not c["used"]
    assert any("blocked" in w for w in c["disturbed"])


def test_truncated_or_unbracketed_sample_is_not_used():
    c = pg.classify(rec(clean_gaps(), truncated=True, loops=20))
    assert c["valid"] and not c["used"]
    assert any("truncated" in w for w in c["disturbed"])
    c = pg.classify(rec(clean_gaps(), bracket_ok=False))
    assert c["valid"] and not c["used"]


def test_zero_ops_expects_no_bit_at_all():
    ok = pg.classify(rec(clean_gaps(bits=0), nr_ops=0))
    assert ok["valid"] and ok["n_p"] == 10
    # the P-gaps' missing bits are what N = 0 expects
    assert ok["violations"]["p_not_reset"] == 0
    for gap in ([P, 1, BOTH], [I, 0, pg.GAP_FIRST]):
        c = pg.classify(rec(clean_gaps(bits=0) + [gap], nr_ops=0))
        assert c["violations"]["dummy_reset"] == 1
        assert c["violations"]["p_not_reset"] == 0
        assert c["violations"]["i_reset"] == 0
        assert not c["valid"]
    # and with N > 0 the same clean-of-bits record fails every P-gap
    c = pg.classify(rec(clean_gaps(bits=0), nr_ops=4))
    assert c["violations"]["p_not_reset"] == 10 and not c["valid"]


def test_gap_inside_the_closing_reads_joins_the_previous_one():
    # An I-gap whose closing reads were interrupted by the preemption: the
    # sequence step landed in the first record, the walk in the second.
    gaps = clean_gaps(10, 4) + [[I, 1, 0], [P + 40, 0, BOTH | INSIDE]]
    c = pg.classify(rec(gaps))
    assert c["n_split"] == 2
    assert (c["n_p"], c["n_i"]) == (11, 5)
    assert len(c["p"]) == 10 and len(c["i"]) == 4      # neither is timed
    assert c["valid"] and c["reconciled"]
    # ... but the pair as a whole must still show the walk
    gaps = clean_gaps(10, 4) + [[I, 1, 0], [P + 40, 0, INSIDE]]
    c = pg.classify(rec(gaps))
    assert c["violations"]["p_not_reset"] == 1 and not c["valid"]


def test_foreign_preemption_is_a_failure_by_default():
    # S switched out by a kworker: no wake-up, but a switch and a walk.
    gaps = clean_gaps(10, 4) + [[3 * P, 0, BOTH]]
    c = pg.classify(rec(gaps, nivcsw=11))
    assert c["violations"]["i_reset"] == 1 and not c["reconciled"]
    assert c["n_foreign"] == 1 and c["foreign_gaps"] == 1
    assert not c["valid"]
    assert any("another task preempted the spinner" in w for w in c["why"])


def test_foreign_ok_accounts_for_other_tasks_exactly():
    gaps = clean_gaps(10, 4) + [[3 * P, 0, BOTH]]
    c = pg.classify(rec(gaps, nivcsw=11), foreign_ok=True)
    assert c["valid"] and c["reconciled"], c["why"]
    assert (c["n_p"], c["n_i"], c["n_foreign"]) == (10, 4, 1)
    assert 3 * P not in c["i"]
    # a walk without a switch: one foreign gap, no switch to explain it
    c = pg.classify(rec(gaps, nivcsw=10), foreign_ok=True)
    assert not c["valid"]
    assert any("a walk without a switch" in w for w in c["why"])
    # a switch the words do not show (N > 0): not reconciled either
    c = pg.classify(rec(clean_gaps(10, 4), nivcsw=11), foreign_ok=True)
    assert not c["reconciled"]
    # N = 0: only the count can be asked
    c = pg.classify(rec(clean_gaps(10, 4, bits=0), nr_ops=0, nivcsw=11),
                    foreign_ok=True)
    assert c["valid"] and c["n_foreign"] == 1 and c["foreign_gaps"] is None
    c = pg.classify(rec(clean_gaps(10, 4, bits=0), nr_ops=0, nivcsw=9),
                    foreign_ok=True)
    assert not c["valid"]
    # wake-ups and P-gaps must still agree
    c = pg.classify(rec(clean_gaps(10, 4), wakeups=11, nivcsw=11),
                    foreign_ok=True)
    assert not c["valid"]


def test_a_short_multi_wake_gap_is_a_late_waker():
    """Two wake-ups in a gap shorter than a period: W ran late and caught
    up, a preemption the exit path did not make. A violation, not a
    disturbance; a gap as long as the period is a disturbance."""
    gaps = clean_gaps() + [[P, 2, BOTH]]
    late = pg.classify(rec(gaps, nivcsw=11, ticks_per_us=10))  # 3310/period
    assert late["violations"]["late_wake"] == 1 and not late["valid"]
    assert any(pg._WORDS["late_wake"] in w for w in late["why"])
    ok = pg.classify(rec(gaps, nivcsw=11, ticks_per_us=1))     # 331/period
    assert ok["violations"]["late_wake"] == 0 and ok["valid"]
    assert not ok["used"]


def test_multi_wake_and_a_foreign_gap_together():
    """A kworker held the CPU across a period (one gap, two wake-ups) and
    preempted S once more elsewhere (a foreign I-gap): the switches are
    counted against P-events, not wake-ups, so nothing is a violation; the
    sample is disturbed by the multi-wake and not used."""
    gaps = clean_gaps(10, 4) + [[3 * P, 2, BOTH], [3 * P, 0, BOTH]]
    c = pg.classify(rec(gaps, nivcsw=12), foreign_ok=True)
    assert c["valid"], c["why"]
    assert not c["used"] and c["n_foreign"] == 1 and c["foreign_gaps"] == 1


def test_foreign_switch_inside_a_p_gap_needs_a_long_p_gap():
    """A second switch inside a P-gap (a tick woke a kworker while S was
    on its way back) leaves no I-gap; it is accepted only when a P-gap is
    long enough to hold it, and that P-gap is left out of the figure."""
    gaps = clean_gaps(10, 4)
    gaps[0] = [P + 5 * I, 1, BOTH]
    c = pg.classify(rec(gaps, nivcsw=11), foreign_ok=True)
    assert c["valid"] and c["reconciled"], c["why"]
    assert c["tick_coincident"] == 1 and P + 5 * I not in c["p_clean"]
    # one switch more than the gaps can hold: disturbed, not wrong
    c = pg.classify(rec(gaps, nivcsw=12), foreign_ok=True)
    assert not c["reconciled"] and c["valid"] and not c["used"]
    c = pg.classify(rec(gaps, nivcsw=11))
    assert not c["valid"]


def test_combine_pools_samples_and_lists_their_medians():
    a = rec(clean_gaps(10, 4), sample=0)
    b = rec(clean_gaps(10, 4, p=P + 100) + [[P + 100 + 4 + I, 1, BOTH]],
            sample=1)
    c = pg.combine([b, a])
    assert c["samples"] == 2 and (c["n_p"], c["n_i"]) == (21, 8)
    assert c["valid"] and c["reconciled"]
    assert c["reconcile"]["wakeups"] == 21
    assert c["tick_coincident"] == 1
    # per sample, in sample order, under the pooled tick threshold
    assert c["sample_medians"] == [P + 4.5, P + 104.5]
    bad = rec(clean_gaps(), sample=2, nivcsw=9)
    c = pg.combine([a, b, bad])
    assert not c["valid"] and not c["reconciled"]
    assert any(w.startswith("sample 2: 1 wake-ups of the waker did not "
                            "switch") for w in c["why"]), c["why"]
    # A disturbed sample is left out of the figures, and counted.
    odd = rec(clean_gaps(10, 4, p=5 * P), sample=2, nvcsw=1)
    c = pg.combine([a, b, odd])
    assert c["valid"] and c["samples_used"] == 2
    assert c["sample_medians"] == [P + 4.5, P + 104.5]
    assert c["disturbed"] == ["sample 2: the spinner blocked 1 times"]
    # More than half disturbed: the cell proves too little.
    c = pg.combine([a, rec(clean_gaps(), sample=1, nvcsw=1),
                    rec(clean_gaps(), sample=2, truncated=True)])
    assert not c["valid"]
    assert "only 1 of 3 samples undisturbed" in c["why"]


def test_combine_refuses_records_of_different_cells():
    with pytest.raises(ValueError, match="nr_ops"):
        pg.combine([rec(clean_gaps()), rec(clean_gaps(), nr_ops=2)])
    with pytest.raises(ValueError):
        pg.combine([])


# The benchmark on this host -----------------------------------------------

def smoke(opbench):
    r = subprocess.run([opbench, "-q", "-n", "0", "-l", "20", "-s", "2",
                        "-w", "1", "preempt"],
                       capture_output=True, text=True, timeout=60)
    recs = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    unsup = [x for x in recs if x["kind"] == "unsupported"]
    if unsup:
        pytest.skip("not measurable on this host: %s" % unsup[0]["why"])
    # 1: the guest's gate failed, which a host disturbing more than half
    # the samples also does; the classification below tells which.
    assert r.returncode in (0, 1), r.stderr + r.stdout
    return recs


# Runs of the host smoke test before it gives up on an undisturbed one
# (each takes about a second).
ATTEMPTS = 10


def test_host_smoke_run(opbench):
    """N = 0 needs no kernel support: 2 samples of 20 P-gaps each, every one
    classified valid and reconciled. This host runs other tasks (a guest's
    QEMU among them): one preempting the spinner adds an involuntary
    switch, which the analysis accepts (rule 8, foreign_ok), and one holding
    the CPU across a period disturbs the sample (two wake-ups in one gap);
    a run with a disturbed sample is repeated, ATTEMPTS times at most, and
    every sample of every run must be classified valid (a violation fails
    at once). The exact counts need an undisturbed run: when the host
    disturbed all of them the test skips, and the skip is printed in the
    run's summary (conftest.py), not capped: only the host's load decides
    it, and a verdict that load decides is what make test must not have.
    Measured alone on the 2-core machine: see tests/notes."""
    if os.geteuid() != 0:
        pytest.skip("SCHED_FIFO for the waker needs root")
    for attempt in range(ATTEMPTS):
        recs = smoke(opbench)
        gaps = [x for x in recs if x["kind"] == "gaps"]
        assert [g["sample"] for g in gaps] == [0, 1]
        cs = [pg.classify(g, foreign_ok=True) for g in gaps]
        for g, c in zip(gaps, cs):
            assert c["valid"], (c["why"], c["reconcile"])
        if all(c["used"] for c in cs):
            break
    else:
        pytest.skip("this host disturbed the spinner in %d runs (the "
                    "last: %s)" % (ATTEMPTS, [c["disturbed"] for c in cs]))
    gate = [x for x in recs if x["kind"] == "gate"]
    assert len(gate) == 1 and gate[0]["valid"] is True
    for g, c in zip(gaps, cs):
        assert g["threshold"] == 20 * g["loop_ticks"] > 0
        assert g["period_us"] == 331 and g["waker_ops"] is False
        assert c["n_p"] == 20 == g["wakeups"], c["why"]
        assert c["reconciled"], c["reconcile"]
        assert g["nivcsw"] >= 20 and g["nvcsw"] == 0
        assert c["p_median"] > g["threshold"]
    c = pg.combine(gaps, foreign_ok=True)
    assert c["valid"] and len(c["sample_medians"]) == 2
    assert gate[0]["check"] == "walk-per-preemption"
    assert (gate[0]["resets_expected"], gate[0]["resets_seen"]) == (0, 0)


def test_host_gate_fails_without_registration(opbench):
    """--no-ops sets the operations up and registers none (no kernel
    support needed): every P-gap and every wake-up of a waker with
    operations must be caught, by the guest's gate and by the classifier."""
    if os.geteuid() != 0:
        pytest.skip("SCHED_FIFO for the waker needs root")
    r = subprocess.run([opbench, "-q", "--no-ops", "--waker-ops", "-n", "1",
                        "-t", "cpu", "-l", "20", "-s", "1", "-w", "0",
                        "preempt"], capture_output=True, text=True, timeout=60)
    recs = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    if any(x["kind"] == "unsupported" for x in recs):
        pytest.skip("not measurable on this host")
    assert r.returncode == 1, r.stderr + r.stdout
    (g,) = [x for x in recs if x["kind"] == "gaps"]
    c = pg.classify(g, foreign_ok=True)
    assert not c["valid"]
    # On a busy host the waker may wake twice in one gap: every P-event is
    # still caught, and the wake-ups add up.
    steps = sum(x[1] for x in g["gaps"])
    assert c["violations"]["p_not_reset"] == c["n_p"] > 0
    assert steps == g["wakeups"] >= 20
    assert c["violations"]["waker"] == g["wakeups"]
    (gate,) = [x for x in recs if x["kind"] == "gate"]
    assert gate["valid"] is False
    assert gate["resets_expected"] == c["n_p"] and gate["resets_seen"] == 0


def _samples(rng, median_ns, cov, level_sd=0.0, ticks=0, tick_ns=2000):
    """Six "gaps" samples of 150 P-gaps, lognormal about a level that
    moves between samples by level_sd; TICKS of each sample's gaps get a
    tick's cost added; 50 I-gaps of tick_ns each."""
    import numpy as np
    sigma = (np.log(1 + cov ** 2)) ** 0.5
    recs, truth, ticked = [], [], []
    for k in range(6):
        level = median_ns * (1 + rng.normal(0, level_sd))
        # Whole ticks, as opbench records them.
        p = [int(x) for x in level * np.exp(rng.normal(0, sigma, 150))]
        truth.append(level)
        for j in range(ticks):
            p[j] += tick_ns
            ticked.append(p[j])
        gaps = [[x, 1, BOTH] for x in p] + [[tick_ns, 0, 0]] * 50
        recs.append(rec(gaps, sample=k))
    return recs, truth, ticked


@pytest.mark.parametrize("median_ns, cov, level_sd", [
    (6000, 0.05, 0.0), (6000, 0.15, 0.0), (30000, 0.15, 0.0),
    (30000, 0.30, 0.0), (30000, 0.03, 0.10), (30000, 0.05, 0.20)])
def test_tick_rule_keeps_gaps_without_a_tick_in_time(median_ns, cov,
                                                     level_sd):
    """In time the P-gaps spread by more than a tick costs, and samples
    move: lognormal gaps with no tick in any of them, against a 2 us
    I-gap (the review's table A.2, where the fixed half-I-gap threshold
    dropped up to 46 % of them and put the figure 17 % low), and samples
    whose level moves by 10-20 % (a pooled limit dropped a slow sample
    whole), lose at most 1 % to the tick rule, and every sample's clean
    median stays within its sampling error of its own level."""
    import numpy as np
    recs, truth, _ = _samples(np.random.default_rng(11), median_ns, cov,
                              level_sd)
    c = pg.combine(recs)
    assert c["tick_coincident"] <= 0.01 * c["n_p"], c["tick_coincident"]
    for m, t in zip(c["sample_medians"], truth):
        assert abs(m / t - 1) < 0.005 + 4 * 1.25 * cov / 150 ** 0.5, (m, t)


def test_tick_rule_still_finds_ticks_where_they_stand_out():
    """Gaps with a tick in them, where a tick costs more than the gaps
    spread (6 us at 5 %, a 2 us tick): every one is counted apart, and
    no other."""
    import numpy as np
    recs, _, ticked = _samples(np.random.default_rng(12), 6000, 0.05,
                               ticks=3)
    c = pg.combine(recs)
    assert sorted(c["tick_coincident_p"]) == sorted(ticked)


