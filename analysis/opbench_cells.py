# SPDX-License-Identifier: GPL-2.0
"""opbench_cells - a run's records (opbench_io.load) into per-boot cells.

Each boot's clock records are checked and turned into the scale from TSC
ticks to the run's unit (clocks); every sample, gaps and gate record is
sorted into its cell (bench, op type, registration, flavour, N) and the
gates decide which cells count (collect). opbench_data.analyse takes it
from there.
"""
import collections
import re

import numpy as np

import preempt_gaps
from opbench_io import ResultsError

# The metric, declared once: the median of a sample's iterations, in TSC
# ticks, converted to the accelerator's unit with the run's clock records.
METRIC = "tsc_median"
# In time, where every sample record carries it: the mean of a sample's
# iterations with a tenth cut from each end. A TSC that advances by more
# than one tick at a time (21 on this project's development machine,
# about 10 ns: the clock record's tsc_step) puts every median on its grid,
# which overstates a difference of a few ns by most of a step; the
# trimmed mean is off the grid and still drops a tenth of outliers each
# side. Under icount a tick is an instruction and the median stays.
METRIC_TIME = "tsc_trim"
METRIC_TEXT = {METRIC: "median of its iterations",
               METRIC_TIME: "mean of its iterations, a tenth cut from "
                            "each end"}
BETTER = "lower"
# Under icount a clock record must show this many ticks per instruction.
ICOUNT_TICKS_PER_INSN = 1.0
ICOUNT_TOLERANCE = 1e-3
# In time a tick is converted with the kernel's own TSC rate (its boot log:
# the refined calibration, else the detected one), the same for every
# repetition of a boot, where the rate opbench measures against
# CLOCK_MONOTONIC moves by about 0.5 % between repetitions; that measured
# rate is the check: beyond this relative difference the kernel's rate is
# not trusted (a virtual TSC that does not tick at the rate it reports)
# and the measured one converts, which the report says.
TSC_AGREE = 0.02
_TSC_MHZ = re.compile(r"tsc: (?:Refined TSC clocksource calibration: |"
                      r"Detected )([0-9.]+) MHz")


def kernel_tsc_mhz(lines):
    """The kernel's TSC rate in MHz from its boot log's lines (tsc.txt):
    the refined calibration where it printed one, else the detected
    rate; None without either."""
    found = {}
    for ln in lines or []:
        m = _TSC_MHZ.search(ln)
        if m:
            found["Refined" in ln] = float(m.group(1))
    return found.get(True, found.get(False))


def accel_of(run):
    """The run's accelerator, from its boots' own records: vm.json's
    "accel", or "native" for a repetition on the running kernel
    (native.json)."""
    accels = {b["vm"].get("accel") for b in run["boots"] if b["vm"]}
    accels |= {"native" for b in run["boots"] if b.get("native")}
    accels.discard(None)
    if len(accels) > 1:
        raise ResultsError("boots ran under different accelerators (%s): "
                           "their figures are not comparable; analyse runs "
                           "made with one ACCEL" % ", ".join(sorted(accels)))
    return accels.pop() if accels else "unknown"


def clocks(run, accel):
    """Each boot's clock: {boot: {"scale": unit per TSC tick, ...}}.

    Under icount a tick must be an instruction, measured in the boot by
    opbench's known loop; a boot whose clock record says otherwise stops
    the analysis, since its figures would be called instructions wrongly.
    Elsewhere a tick is converted with the guest's nanoseconds per tick.
    """
    out = {}
    for b in run["boots"]:
        recs = [r for r in b["records"] if r.get("kind") == "clock"]
        if not recs:
            if any(r.get("kind") == "sample" for r in b["records"]):
                raise ResultsError(
                    "%s: sample records without a clock record: written by "
                    "an older opbench (CLOCK_MONOTONIC batches); run make "
                    "bench again" % b["dir"])
            continue
        tpi = [float(r["ticks_per_insn"]) for r in recs]
        npt = [float(r["ns_per_tick"]) for r in recs]
        c = {"ticks_per_insn": float(np.median(tpi)),
             "ns_per_tick": float(np.median(npt)), "records": len(recs)}
        steps = [int(r["tsc_step"]) for r in recs if r.get("tsc_step")]
        if steps:
            c["tsc_step"] = int(np.median(steps))
        if accel == "icount":
            bad = [x for x in tpi
                   if abs(x - ICOUNT_TICKS_PER_INSN) > ICOUNT_TOLERANCE]
            if bad:
                raise ResultsError(
                    "%s: under icount the TSC advanced %.4f ticks per "
                    "instruction of a known loop, not 1: its figures are "
                    "not instruction counts (check QEMU's -icount shift=0)"
                    % (b["dir"], bad[0]))
            c["scale"] = 1.0
        else:
            c["scale"] = c["ns_per_tick"]
            c["rate_source"] = "measured"
            mhz = kernel_tsc_mhz(b.get("tsc_lines"))
            if mhz:
                k = 1000.0 / mhz
                c["ns_per_tick_kernel"] = k
                c["rate_check"] = c["ns_per_tick"] / k - 1
        out[b["index"]] = c
    # One source for the whole run: the kernel's rate where every boot
    # logged one that its measured rate agrees with, else the measured
    # rate in every boot (a mix would put up to TSC_AGREE between two
    # kernels' figures); why, in rate_why.
    timed = [c for c in out.values() if "rate_source" in c]
    if timed:
        bare = sum(1 for c in timed if "ns_per_tick_kernel" not in c)
        off = [c["rate_check"] for c in timed if "rate_check" in c
               and abs(c["rate_check"]) > TSC_AGREE]
        why = None
        if bare:
            why = ("%d of %d boots logged no TSC rate (tsc.txt: the kernel's "
                   "log unreadable or rotated)" % (bare, len(timed)))
        elif off:
            why = ("the measured rate differs from the kernel's by up to "
                   "%+.2f%% in %d of %d boots (beyond %g%%)" % (
                       100 * max(off, key=abs), len(off), len(timed),
                       100 * TSC_AGREE))
        for c in timed:
            if why is None:
                c["scale"] = c["ns_per_tick_kernel"]
                c["rate_source"] = "kernel"
            else:
                c["rate_why"] = why
    return out


def bench_name(r):
    """The benchmark a record belongs to, with its variant: the node
    layout when not packed, a waker that holds operations too, and the
    rseq area when it is not the benchmark's own (legacy, glibc)."""
    name = r["bench"]
    if r.get("reg", "own") != "own":
        name += "+" + r["reg"]
    if r.get("layout", "packed") != "packed":
        name += "+" + r["layout"]
    if r.get("waker_ops"):
        name += "+waker-ops"
    return name


def _cell(r):
    return (bench_name(r), r.get("op_type", "?"), r.get("reg", "?"),
            r["flavour"], int(r["nr_ops"]))


def _sample_why(r):
    return "sample %s: %s" % (r.get("sample"), r.get("why") or "invalid")


def mean_cells(extra, clock, cells, key):
    """{N: {boot: [mean per loop of each sample]}} of the valid cells of a
    family (key: bench, op type, registration, flavour; cells: {N: its
    valid samples per boot}), from the sample records' tsc_mean (every
    iteration of the sample, where tsc_median is the middle one). None
    when a record lacks it (an older opbench) or the family has none
    (preempt's cells are P-gaps)."""
    out = {}
    for n, per_boot in cells.items():
        for boot in per_boot or {}:
            recs = extra.get(key + (n,), {}).get(boot, [])
            if not recs or any("tsc_mean" not in r for r in recs):
                return None
            scale = clock.get(boot, {}).get("scale", 1.0)
            out.setdefault(n, {})[boot] = [float(r["tsc_mean"]) * scale
                                           for r in recs]
    return out or None


def collect(run, clock):
    """Per-boot samples of every cell, and what the gates said.

    A cell is (bench, op type, registration, flavour, N). Its samples from
    one boot count only if every sample record of that cell and boot passed
    its per-iteration gate, every gate record is valid and there is one (a
    cell without any gate record is invalid: nothing proved the operations
    ran). preempt's cells come from "gaps" records, classified here
    (analysis/preempt_gaps.py); a boot's samples are then its per-sample
    median P-gaps. A cell invalid in any boot is dropped in every boot, so
    that no comparison half-uses it; analyse() lists it.
    """
    # One estimator for the whole run: in time (a clock converts ticks to
    # ns) the trimmed mean where every sample record has it, else the
    # median (METRIC_TIME).
    timed = any("rate_source" in c for c in clock.values())
    recs = [r for b in run["boots"] for r in b["records"]
            if r.get("kind") == "sample"]
    metric = (METRIC_TIME if timed and recs and
              all(METRIC_TIME in r for r in recs) else METRIC)
    samples = collections.defaultdict(lambda: collections.defaultdict(list))
    extra = collections.defaultdict(lambda: collections.defaultdict(list))
    gaps = collections.defaultdict(lambda: collections.defaultdict(list))
    gates = collections.defaultdict(list)
    bad_samples = collections.defaultdict(list)
    unsupported = {}
    meta = {}
    orders = {}
    for b in run["boots"]:
        scale = clock.get(b["index"], {}).get("scale", 1.0)
        for r in b["records"]:
            kind = r.get("kind")
            if kind in ("clock", "pmu"):
                continue
            if kind == "order":
                orders.setdefault(b["index"], []).append(
                    {"bench": bench_name(r), "seed": r.get("seed"),
                     "nr_ops": r.get("nr_ops")})
                continue
            key = _cell(r)
            if kind == "sample":
                if METRIC not in r:
                    raise ResultsError(
                        "%s: a sample record without %s: written by an "
                        "older opbench; run make bench again" % (
                            b["dir"], METRIC))
                if not r.get("valid", False):
                    bad_samples[(key, b["index"])].append(_sample_why(r))
                samples[key][b["index"]].append(float(r[metric]) * scale)
                extra[key][b["index"]].append(r)
                meta.setdefault(key[0], {
                    "loop": r.get("loop", "loop"),
                    "walks_per_loop": r.get("walks_per_loop"),
                    "better": r.get("better", BETTER)})
            elif kind == "gaps":
                gaps[key][b["index"]].append(r)
                # The spinner walks once per preemption; a waker holding
                # the operations too walks once more on its way back.
                meta.setdefault(key[0], {
                    "loop": "preemption (P-gap)",
                    "walks_per_loop": 2 if r.get("waker_ops") else 1,
                    "better": "lower"})
            elif kind == "gate":
                gates[(key, b["index"])].append(r)
            elif kind == "unsupported":
                unsupported[key] = r.get("why", "unsupported")
    preempt = {}
    for key, per_boot in gaps.items():
        for boot, recs in per_boot.items():
            # A preemption by another task (a kworker) is a real one, with
            # a walk: accepted only when the counts account for it exactly.
            c = preempt_gaps.combine(recs, foreign_ok=True)
            scale = clock.get(boot, {}).get("scale", 1.0)
            preempt.setdefault(key, {})[boot] = c
            samples[key][boot] = [x * scale for x in c[
                "sample_trims" if metric == METRIC_TIME else
                "sample_medians"]]
            if not c["valid"]:
                bad_samples[(key, boot)].extend(c["why"])
    invalid = []
    cell_ok = {}
    for key, per_boot in samples.items():
        for boot, xs in per_boot.items():
            g = gates.get((key, boot), [])
            bad = [x for x in g if not x.get("valid")]
            whys = list(bad_samples.get((key, boot), []))
            if not g and key not in preempt:
                whys.append("no gate record: nothing proved the operations "
                            "ran")
            # With the gate's own detail where it says why it could not
            # conclude (resets_seen -1: e.g. preempted in every attempt).
            whys += ["gate %s: %s of %s resets%s" % (
                x.get("check"), x.get("resets_seen"),
                x.get("resets_expected"),
                " (%s)" % x["detail"] if x.get("resets_seen") == -1 and
                x.get("detail") else "") for x in bad]
            if key in preempt:
                # The classifier is authoritative for preempt's gaps.
                whys = list(bad_samples.get((key, boot), []))
            if not xs:
                whys.append("no samples")
            if whys:
                invalid.append({"bench": key[0], "op_type": key[1],
                                "reg": key[2], "flavour": key[3],
                                "nr_ops": key[4], "boot": boot,
                                "samples": len(xs),
                                "why": "; ".join(sorted(set(whys))[:3])})
            cell_ok.setdefault(key, True)
            cell_ok[key] &= not whys
    # Gates that failed where no sample was taken are invalid cells too.
    for (key, boot), g in gates.items():
        if key in samples and boot in samples[key]:
            continue
        bad = [x for x in g if not x.get("valid")]
        if bad:
            invalid.append({"bench": key[0], "op_type": key[1], "reg": key[2],
                            "flavour": key[3], "nr_ops": key[4], "boot": boot,
                            "samples": 0, "why": "gate %s failed, no samples"
                            % bad[0].get("check")})
            cell_ok[key] = False
    invalid.sort(key=lambda x: (x["bench"], x["flavour"], x["nr_ops"],
                                x["boot"]))
    valid = {k: dict(v) for k, v in samples.items() if cell_ok.get(k)}
    dropped = sorted({k for k, ok in cell_ok.items() if not ok})
    return {"valid": valid, "extra": extra, "preempt": preempt,
            "invalid": invalid, "dropped": dropped,
            "unsupported": unsupported, "meta": meta, "orders": orders,
            "metric": metric}



def _mean(rows, field):
    xs = [r[field] for r in rows if r.get(field) is not None]
    return float(np.mean(xs)) if xs else None


def cell_detail(extra_boots, loops_field="loops"):
    """What a cell's sample records say beside the figure: switches per
    loop, iterations hit by an interrupt, iterations without the event."""
    rows = [r for b in sorted(extra_boots) for r in extra_boots[b]]
    if not rows:
        return {}
    loops = sum(r.get(loops_field, 0) for r in rows) or 1
    d = {"switches_per_loop": _mean(rows, "switches_per_loop"),
         "outliers_per_loop": sum(r.get("outliers", 0) for r in rows) / loops,
         "no_event_per_loop": sum(r.get("no_event", 0) for r in rows) / loops,
         "counted_per_loop": sum(r.get("counted", 0) for r in rows) / loops,
         "spread_within": float(np.mean([
             (r["tsc_p90"] - r["tsc_p10"]) for r in rows
             if "tsc_p90" in r]))}
    return {k: v for k, v in d.items() if v is not None}


def preempt_detail(per_boot, clock):
    """A preempt cell's gap figures, pooled over its boots (the median
    with its interval comes from the boots, see analyse()), each boot's
    gaps converted with that boot's clock, as its samples are."""
    bs = sorted(per_boot)
    cs = [per_boot[b] for b in bs]

    def pooled(field):
        return np.concatenate([
            np.asarray(per_boot[b][field], dtype=float) *
            clock.get(b, {}).get("scale", 1.0) for b in bs]) \
            if bs else np.array([])
    p, i = pooled("p"), pooled("i")
    n_p = sum(c["n_p"] for c in cs)
    d = {"n_p": int(n_p), "n_i": int(sum(c["n_i"] for c in cs)),
         "tick_coincident": int(sum(c["tick_coincident"] for c in cs)),
         "reconciled": all(c["reconciled"] for c in cs),
         "samples": int(sum(c["samples"] for c in cs)),
         "samples_used": int(sum(c["samples_used"] for c in cs)),
         "disturbed": [w for c in cs for w in c["disturbed"]]}
    d["tick_share"] = d["tick_coincident"] / n_p if n_p else None
    if len(p):
        for q, name in ((10, "p10"), (50, "p50"), (90, "p90"), (99, "p99")):
            d[name] = float(np.percentile(p, q))
    if len(i):
        d["i_median"] = float(np.median(i))
    return d
