# SPDX-License-Identifier: GPL-2.0
"""Classify the gaps of `opbench preempt` (microbench/bench-preempt.c).

A "gaps" record is one sample of one cell: the spinner S recorded every gap
between two TSC reads longer than `threshold` ticks, each as
``[duration_ticks, seq_delta, reset_bits]``:

* ``seq_delta``: wake-ups of the SCHED_FIFO waker W seen at the end of the gap;
* ``reset_bits``: bit 0 (1) the first watched destination word was rewritten,
  bit 1 (2) the last one was, bit 2 (4) GAP_INSIDE: the gap began inside the
  few instructions that closed the gap before it (S reads the sequence,
  exchanges the words, reads the TSC), so what the two did may be split
  between their records.

Beside the gaps the record carries the window's counts: ``wakeups`` (W's
wake-ups between the reads that open and close the sample), ``nivcsw`` and
``nvcsw`` (S's context switches over the same window), ``waker_violations``
(wake-ups after which W's own watched words were wrong: both must be
rewritten when W holds operations, neither when it holds none),
``truncated``, ``bracket_ok`` and ``attempts`` (how many times the sample
was taken, at most 3, the last one recorded: the guest takes it again when
its closing bracket failed; only reported, absent from older records).
``nr_ops`` is N.

Rules, per record:

1. Events. A gap and the GAP_INSIDE gaps right after it are one event; its
   sequence step is the sum of theirs and its bits the OR of theirs. Most
   events are one gap. An event in which the sequence moved is a P-event
   (W ran: a preemption, a switch, one walk of S's list); otherwise an
   I-event (an interrupt: no switch, no walk). ``n_p`` and ``n_i`` count
   events; ``p`` and ``i`` hold the durations of the one-gap events only:
   an event of several gaps is not timed (``n_split`` counts its gaps).
2. Walks. With N > 0 every P-event must show both bits (else
   ``p_not_reset``) and no I-event any bit (else ``i_reset``). With N = 0
   the bits watch dummy words no walk writes: no event may show a bit (else
   ``dummy_reset``). Any event showing exactly one bit is ``partial`` (a
   walk stopped part way, or a word written by something else); it also
   counts under the rule above.
3. ``multi_wake``: events whose sequence step is above 1: another task held
   the CPU across a whole period (a disturbance, rule 6), unless the event
   is shorter than the periods it spans (``ticks_per_us`` x ``period_us``
   each): then W ran late and caught up, which only a preemption the exit
   path failed to make explains; that is ``late_wake``, a violation.
4. ``waker``: the record's ``waker_violations``.
5. Reconciliation. The guest brackets the counts exactly (no tolerance): it
   opens the window with a read of the sequence, the rusage, the TSC the
   spin starts from and a second read of the sequence, and starts again
   when the two reads differ; it closes it with the sequence read at the
   last gap, then the rusage, then the sequence again, and repeats the
   sample when that moved (``bracket_ok`` is false when it never held).
   Every wake-up inside the window therefore falls in a recorded gap and in
   both rusage differences, and none outside it does, so a clean sample has
   ``n_p == wakeups == nivcsw``, ``nvcsw == 0`` (S never blocks while
   measured) and the sum of the sequence steps equal to ``wakeups``.
   ``reconcile`` gives the counts; ``reconciled`` is true iff they agree
   (with ``foreign_ok``, rule 8, once other tasks are accounted for).
6. Violations and disturbances. A sample is *invalid* (``valid`` false,
   ``why`` says why) when the kernel did something wrong or the record
   contradicts itself: any count of rule 2, 3 (late_wake) or 4, sequence
   steps that do not
   sum to the wake-ups, a wake-up that did not switch S out (fewer
   involuntary switches than wake-ups with no gap holding two), or, with
   ``foreign_ok``, I-gaps with both words rewritten beyond the switches
   that could explain them (a walk without a switch). A sample is
   *disturbed* (``disturbed`` says why; not used, counted) when it
   measured something besides the preemptions, with nothing wrong: rule
   3's multi-wake gaps (another task held the CPU across a period), extra
   involuntary switches the gaps do not show, S blocking (``nvcsw``), a
   truncated sample or a bracket that never held. ``used`` is valid and
   undisturbed.
7. Tick coincidence. A P-gap longer than ``median(p) + median(i) / 2`` had an
   interrupt (a tick) fall into it; they are counted in ``tick_coincident``,
   listed in ``tick_coincident_p`` and left out of ``p_clean``, whose median
   is the figure. Without I-gaps nothing is taken out.

8. Other tasks (``foreign_ok``, off by default: then any switch of S to a
   task but W is a violation). Such a foreign preemption is an I-event (the
   sequence did not move) in which, with N > 0, S's words were rewritten,
   since S was switched out; ``n_foreign`` is always reported (involuntary
   switches minus P-events: S is switched out once per P-event however
   often W woke in it) and ``foreign_gaps`` (I-events with both bits;
   None at N = 0). With ``foreign_ok=True`` those I-events are neither
   violations nor timed nor counted in ``n_i``, and the switches must
   account for them: ``foreign_gaps <= nivcsw - P-events <= foreign_gaps +
   long P-gaps``, the long P-gaps being those above the sample's own rule-7
   threshold (a second switch inside a P-gap, a tick having woken another
   task while S was on its way back, leaves no I-gap but lengthens that
   P-gap, which rule 7 leaves out of the figure). Fewer switches than
   foreign gaps is a violation (rule 6); more than they explain is a
   disturbance. At N = 0 the words cannot show them: they are only counted.

``combine(records, foreign_ok=False)`` takes the records of one cell from
one boot: counts and violations add up over every sample; ``p``/``i`` pool
the used samples, and the tick threshold comes from their medians;
``reconciled`` holds iff it holds for every sample; ``valid`` iff no
sample is invalid and at least half the samples are used;
``sample_medians`` lists each used sample's ``p_clean`` median under the
pooled threshold (the boot's samples; a sample without a clean P-gap is
left out); ``disturbed`` lists why the others were not used.

Percentiles interpolate linearly between order statistics (numpy's default).
Pure functions of the record dicts; no I/O, no dependencies.
"""

GAP_FIRST = 0x1
GAP_LAST = 0x2
GAP_INSIDE = 0x4
BOTH = GAP_FIRST | GAP_LAST

VIOLATIONS = ("p_not_reset", "i_reset", "partial", "dummy_reset", "waker",
              "late_wake", "multi_wake")

_WORDS = {
    "p_not_reset": "P-gaps without both watched words rewritten",
    "i_reset": "I-gaps (no switch) with a watched word rewritten",
    "partial": "gaps with only one of the two watched words rewritten",
    "dummy_reset": "gaps with a dummy word rewritten (N = 0: no walk is "
                   "expected at all)",
    "waker": "wake-ups after which the waker's own words were wrong",
    "multi_wake": "gaps in which the waker woke more than once",
    "late_wake": "gaps shorter than the periods the waker woke in them: "
                 "it ran late (a preemption the exit path did not make)",
}

# Fields that must agree between the records combine() pools.
CELL_FIELDS = ("bench", "flavour", "kernel", "nr_ops", "op_type", "reg",
               "period_us", "waker_ops", "clock")


def percentile(xs, q):
    """The q-th percentile (0..100) of xs, linear between order statistics;
    None when xs is empty."""
    if not xs:
        return None
    s = sorted(xs)
    pos = (len(s) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(xs):
    return percentile(xs, 50)


def trimmed_mean(xs):
    """The mean of xs with a tenth cut from each end, as opbench's
    quantiles() takes tsc_trim (common.c); None when xs is empty."""
    if not xs:
        return None
    s = sorted(xs)
    lo, hi = len(s) // 10, len(s) - len(s) // 10
    return sum(s[lo:hi]) / (hi - lo)


def events(gaps):
    """The record's gaps grouped into events: a list of
    (durations, seq_step, bits), durations being one per gap."""
    out = []
    for g in gaps:
        dur, seq, bits = int(g[0]), int(g[1]), int(g[2])
        if bits & GAP_INSIDE and out:
            durs, s, b = out[-1]
            out[-1] = (durs + [dur], s + seq, b | (bits & BOTH))
        else:
            out.append(([dur], seq, bits & BOTH))
    return out


def _sample(rec, foreign_ok=False):
    """Per-record counts before any threshold that needs pooled medians."""
    ops = int(rec.get("nr_ops", 0)) > 0
    v = dict.fromkeys(VIOLATIONS, 0)
    # A period in ticks (records from before ticks_per_us was recorded:
    # the check is skipped).
    per_tick = (float(rec["ticks_per_us"]) * int(rec.get("period_us", 0))
                if rec.get("ticks_per_us") else None)
    p, i = [], []
    n_p = n_i = n_split = seq_sum = n_f = 0
    for durs, seq, bits in events(rec.get("gaps", [])):
        seq_sum += seq
        is_p = seq > 0
        # With operations, an I-event with both words rewritten is S
        # switched out by a task other than W (or a walk without a switch:
        # the count of switches tells which).
        foreign = ops and not is_p and bits == BOTH
        n_f += foreign
        if len(durs) > 1:
            n_split += len(durs)
        if foreign and foreign_ok:
            pass
        elif len(durs) > 1:
            n_p += is_p
            n_i += len(durs) - is_p
        elif is_p:
            n_p += 1
            p.append(durs[0])
        else:
            n_i += 1
            i.append(durs[0])
        v["multi_wake"] += seq > 1
        # W woke again within one gap: only another task holding the CPU
        # across a whole period explains it. A gap shorter than the
        # periods it spans means W ran late and caught up: a preemption
        # the exit path failed to make (a lost need_resched).
        if seq > 1 and per_tick and sum(durs) < (seq - 1) * per_tick:
            v["late_wake"] += 1
        v["partial"] += bits in (GAP_FIRST, GAP_LAST)
        if not ops:
            v["dummy_reset"] += bits != 0
        elif is_p:
            v["p_not_reset"] += bits != BOTH
        elif not (foreign and foreign_ok):
            v["i_reset"] += bits != 0
    v["waker"] = int(rec.get("waker_violations", 0))
    rc = {"p_gaps": n_p, "wakeups": int(rec.get("wakeups", -1)),
          "nivcsw": int(rec.get("nivcsw", -1)),
          "nvcsw": int(rec.get("nvcsw", 0)), "seq_sum": seq_sum}
    # S is switched out once per P-event, however many times W woke in it:
    # the involuntary switches beyond the P-events are other tasks'.
    extra = rc["nivcsw"] - n_p
    why, disturbed = [], []
    # Correctness: what no disturbance can explain.
    if rc["seq_sum"] != rc["wakeups"]:
        why.append("record inconsistent: sequence steps %d, wake-ups %d"
                   % (rc["seq_sum"], rc["wakeups"]))
    multi = v.pop("multi_wake")
    if extra < 0:
        why.append("%d wake-ups of the waker did not switch the spinner out"
                   % -extra)
    if ops and foreign_ok and n_f > max(extra, 0):
        why.append("%d I-gaps with both words rewritten but only %d "
                   "switches beyond the waker's: a walk without a switch"
                   % (n_f, max(extra, 0)))
    why = ["%d %s" % (v[k], _WORDS[k]) for k in VIOLATIONS
           if k != "multi_wake" and v[k]] + why
    v["multi_wake"] = multi
    # Disturbances: the sample measured something else as well; it is not
    # used, and counted, but proves nothing wrong with the kernel.
    if multi:
        disturbed.append("%d %s" % (multi, _WORDS["multi_wake"]))
    if extra > 0:
        limit = _tick_limit(p, i)
        long_p = sum(1 for x in p if limit is not None and x > limit)
        # Each switch W did not cause is a foreign I-gap or a second switch
        # inside a P-gap (a tick woke another task while S was on its way
        # back), which makes that P-gap one of the long ones rule 7 leaves
        # out. At N = 0 the words cannot show them: only counted.
        explained = (n_f <= extra <= n_f + long_p) if ops else True
        if not foreign_ok:
            why.append("%d involuntary switches without a wake-up of the "
                       "waker: another task preempted the spinner%s" % (
                           extra, " (%d I-gaps with both words rewritten)"
                           % n_f if ops else ""))
        elif not explained:
            disturbed.append("%d involuntary switches without a wake-up of "
                             "the waker, %d of them unseen in the gaps" % (
                                 extra, extra - n_f - long_p))
    if rc["nvcsw"]:
        disturbed.append("the spinner blocked %d times" % rc["nvcsw"])
    if rec.get("truncated"):
        disturbed.append("truncated: %d of %s wake-ups before the gap cap "
                         "or the time limit" % (rc["wakeups"],
                                                rec.get("loops", "?")))
    if not rec.get("bracket_ok", True):
        disturbed.append("a wake-up fell in the reads that close the "
                         "sample every time")
    reconciled = (rc["p_gaps"] == rc["wakeups"] == rc["seq_sum"]
                  and rc["nvcsw"] == 0 and (extra == 0 or (
                      foreign_ok and extra > 0 and not disturbed)))
    if not reconciled and not disturbed and not why:
        why.append("counts not reconciled: %d P-gaps, %d wake-ups, %d "
                   "involuntary and %d voluntary switches, sequence steps "
                   "%d" % (rc["p_gaps"], rc["wakeups"], rc["nivcsw"],
                           rc["nvcsw"], rc["seq_sum"]))
    return {"n_p": n_p, "n_i": n_i, "n_split": n_split, "p": p, "i": i,
            "n_foreign": extra, "foreign_gaps": n_f if ops else None,
            "violations": v, "reconciled": reconciled, "reconcile": rc,
            "valid": not why, "why": why, "disturbed": disturbed,
            "used": not why and not disturbed}


# How many robust standard deviations of the P-gaps above their median a
# gap must lie, besides half an I-gap, to be taken as holding a tick.
TICK_SPREAD = 4.0


def _tick_limit(p, i):
    """P-gaps of one sample above this had a tick in them; None without
    I-gaps.

    Half an I-gap above the sample's median (a tick adds a whole one), but
    never within TICK_SPREAD robust standard deviations of the sample's
    P-gaps (1.4826 x their median absolute deviation): in time the P-gaps
    spread by more than a tick's cost, and a fixed threshold drops the
    slow half of the gaps with no tick in them (15-46 % of them at a
    spread of 15-30 %: measurement-3.md, A.2), which biases the figure low
    by amounts that grow with N. Each sample has its own limit, about its
    own median: a level that moves between samples is not a spread a tick
    hides in, and a pooled limit would drop a slow sample whole. Under
    icount the spread is far below an I-gap and the limit is the fixed
    one."""
    if not p or not i:
        return None
    m = median(p)
    mad = median([abs(x - m) for x in p])
    return m + max(0.5 * median(i), TICK_SPREAD * 1.4826 * mad)


def _split(p, limit):
    """P-gaps above LIMIT (tick-coincident) and the others (clean)."""
    return ([x for x in p if limit is not None and x > limit],
            [x for x in p if limit is None or x <= limit])


def _figures(out, limit, split=None):
    """The figures of out's P-gaps and I-gaps, the P-gaps above LIMIT
    taken as tick-coincident; SPLIT: (tick, clean) decided already, per
    sample (combine), LIMIT then only reported."""
    p, i = out["p"], out["i"]
    tick, clean = split if split is not None else _split(p, limit)
    out.update({
        "p_median": median(p), "p10": percentile(p, 10),
        "p90": percentile(p, 90), "p99": percentile(p, 99),
        "i_median": median(i), "tick_limit": limit,
        "tick_coincident": len(tick), "tick_coincident_p": tick,
        "p_clean": clean, "p_clean_median": median(clean)})
    return out


def classify(rec, foreign_ok=False):
    """Classify one "gaps" record; see the module docstring for the rules
    (foreign_ok: rule 8).

    Returns n_p, n_i, n_split, p, i, p_median, p10, p90, p99, i_median,
    tick_limit, tick_coincident (a count), tick_coincident_p (their
    durations), p_clean, p_clean_median, violations (a dict of counts),
    reconcile (p_gaps, wakeups, nivcsw, nvcsw, seq_sum), reconciled,
    n_foreign (involuntary switches minus wake-ups), foreign_gaps (I-gaps
    with both words rewritten; None at N = 0), valid, why."""
    out = _sample(rec, foreign_ok)
    return _figures(out, _tick_limit(out["p"], out["i"]))


def combine(records, foreign_ok=False):
    """Classify the "gaps" records of one cell from one boot together: the
    fields of classify() over all samples, plus samples (how many) and
    sample_medians (each sample's clean P-gap median under the pooled tick
    threshold). Raises ValueError when the records are of different
    cells."""
    records = sorted(records, key=lambda r: r.get("sample", 0))
    if not records:
        raise ValueError("no gaps records")
    for f in CELL_FIELDS:
        vals = {repr(r.get(f)) for r in records}
        if len(vals) > 1:
            raise ValueError("gaps records of different cells: %s is %s" % (
                f, ", ".join(sorted(vals))))
    per = [_sample(r, foreign_ok) for r in records]
    used = [s for s in per if s["used"]]
    v = {k: sum(s["violations"][k] for s in per) for k in VIOLATIONS}
    rc = {k: sum(s["reconcile"][k] for s in per)
          for k in ("p_gaps", "wakeups", "nivcsw", "nvcsw", "seq_sum")}
    out = {"n_p": sum(s["n_p"] for s in per),
           "n_i": sum(s["n_i"] for s in per),
           "n_split": sum(s["n_split"] for s in per),
           "n_foreign": sum(s["n_foreign"] for s in per),
           "foreign_gaps": None if per[0]["foreign_gaps"] is None else
           sum(s["foreign_gaps"] for s in per),
           "p": [x for s in used for x in s["p"]],
           "i": [x for s in used for x in s["i"]],
           "violations": v, "reconcile": rc,
           "reconciled": all(s["reconciled"] for s in per),
           "why": ["sample %s: %s" % (r.get("sample"), w)
                   for r, s in zip(records, per) for w in s["why"]],
           "disturbed": ["sample %s: %s" % (r.get("sample"), w)
                         for r, s in zip(records, per)
                         for w in s["disturbed"]],
           "samples": len(records), "samples_used": len(used)}
    if 2 * len(used) < len(records):
        out["why"].append("only %d of %d samples undisturbed" % (
            len(used), len(records)))
    out["valid"] = not out["why"]
    # Each sample's gaps against its own limit (the I-gaps pooled: a
    # tick's cost does not depend on the sample); the limit reported is
    # the median of theirs.
    limits = [_tick_limit(s["p"], out["i"]) for s in used]
    tick, clean, meds, trims = [], [], [], []
    for s, lim in zip(used, limits):
        t, c = _split(s["p"], lim)
        tick += t
        clean += c
        if c:
            meds.append(median(c))
            trims.append(trimmed_mean(c))
    known = [x for x in limits if x is not None]
    _figures(out, median(known) if known else None, (tick, clean))
    out["sample_medians"] = meds
    # The same, as opbench's tsc_trim takes a sample's iterations (in time
    # the analysis takes it: opbench_cells.METRIC_TIME).
    out["sample_trims"] = trims
    return out
