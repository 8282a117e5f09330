#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""plasmode - how often the production comparison calls a kernel different
from itself, and the smallest difference it finds, on this machine's own
noise (make aa).

Usage: plasmode.py RUN [--k "5 10"] [--subsets 2000] [--seed 1]

RUN is a native A/A run (make aa: microbench/native-run.sh with AA=1, the
running kernel as two labels, each round both in an order drawn from the
seed, R rounds). For each benchmark at N = 0 it draws SUBSETS sets of k of
the R rounds, swaps the two labels within each drawn round at random,
and compares them as make report compares two kernels in time
(opbench_data.compare_kernels: paired by round, the boot the unit): the
share called "difference" is the comparison's A/A rate for k rounds
within one boot (a lower bound on a run of k boots, which adds the boot
effect); the median of its "detectable" is the smallest difference
it finds 80 % of the time, in ns and against the N = 0 figure. The same
subsets through a rule known to be wrong (every sample pooled, Welch t:
the repetitions' own level ignored) are the negative control.

The subsets overlap, so the rates are estimates, not independent trials;
the intervals printed are binomial over the subsets and too narrow for
that reason. All rounds come from one boot of the machine: the rate says
nothing about the boot effect (a merge of several boots does: see
analysis/merge_runs.py).

Writes RUN/aa/plasmode.txt and plasmode.json (refused when they exist:
nothing is overwritten) and prints the text.
"""
import argparse
import json
import os
import sys

import numpy as np
from scipy import stats

import opbench_data
from opbench_cells import accel_of, clocks, collect
from opbench_io import ResultsError
from report_core import WIDTH, indented

BENCHES = ("syscall", "switch", "signal", "preempt")
LEVEL = 0.05


def pairs_of(run):
    """{bench: [(ref samples, other samples)] one pair a round} at N = 0,
    the reference label against its AA twin (label2), in round order; and
    the labels."""
    if run["provenance"].get("runner") != "native":
        raise ResultsError("%s: not a native run; make aa makes one" %
                           run["dir"])
    if run["provenance"].get("aa") != "1":
        raise ResultsError("%s: not an A/A run (provenance aa=%s): make aa "
                           "runs the kernel against itself" % (
                               run["dir"], run["provenance"].get("aa", "?")))
    ref = opbench_data.reference_of(run)
    twin = ref + "2"
    accel = accel_of(run)
    col = collect(run, clocks(run, accel))
    rounds = opbench_data.rounds_of(run)
    out = {}
    for bench in BENCHES:
        keys = sorted(k for k in col["valid"] if k[0] == bench and
                      k[4] == 0 and k[3] == ref)
        if not keys:
            continue
        k0 = keys[0]
        a = col["valid"][k0]
        b = col["valid"].get(k0[:3] + (twin, 0), {})
        ra = {rounds[x]: v for x, v in a.items()}
        rb = {rounds[x]: v for x, v in b.items()}
        out[bench] = [(ra[r], rb[r]) for r in sorted(set(ra) & set(rb))]
    return out, (ref, twin)


def rates(pairs, k, subsets, rng):
    """The production comparison and the pooled-sample Welch on SUBSETS
    draws of k rounds with the labels swapped at random in each."""
    calls = welch = 0
    detect, level = [], []
    for _ in range(subsets):
        pick = rng.choice(len(pairs), size=k, replace=False)
        ref, cur, rnd = {}, {}, {}
        for i, p in enumerate(pick):
            a, b = pairs[p]
            if rng.random() < 0.5:
                a, b = b, a
            ref[i], cur[i], rnd[i] = a, b, i
        c = opbench_data.compare_kernels(False, rnd, ref, cur, ("aa", k))
        calls += c["verdict"] == "difference"
        if c.get("detectable") is not None:
            detect.append(c["detectable"])
        if c.get("ref_value"):
            level.append(c["ref_value"])
        pa = np.concatenate([np.asarray(v, float) for v in ref.values()])
        pb = np.concatenate([np.asarray(v, float) for v in cur.values()])
        if pa.std() or pb.std():
            welch += stats.ttest_ind(pa, pb, equal_var=False).pvalue < LEVEL
    ci = stats.binomtest(calls, subsets).proportion_ci(0.95)
    det = float(np.median(detect)) if detect else None
    lev = float(np.median(level)) if level else None
    return {"k": k, "subsets": subsets, "rate": calls / subsets,
            "rate_ci": [ci.low, ci.high], "welch_rate": welch / subsets,
            "detectable": det, "level": lev,
            "detectable_pct": 100 * det / lev if det and lev else None}


def analyse(rdir, ks, subsets, seed):
    run = opbench_data.load(rdir)
    pairs, labels = pairs_of(run)
    if not any(pairs.values()):
        raise ResultsError("%s: no benchmark at N = 0 measured under both "
                           "labels; make aa runs %s" % (rdir,
                                                        " ".join(BENCHES)))
    rng = np.random.default_rng(seed)
    rows = []
    for bench in BENCHES:
        p = pairs.get(bench)
        if not p:
            continue
        for k in ks:
            if len(p) < k + 1:
                rows.append({"bench": bench, "k": k, "rounds": len(p),
                             "skipped": "fewer than k + 1 rounds"})
                continue
            rows.append(dict(rates(p, k, subsets, rng), bench=bench,
                             rounds=len(p)))
    return {"run": os.path.basename(os.path.abspath(rdir)),
            "labels": labels, "unit": "ns", "level": LEVEL,
            "seed": seed, "rows": rows}


def render(res):
    lines = ["Plasmode A/A: %s against %s" % (res["labels"][1],
                                               res["labels"][0]),
             "run %s" % res["run"], ""]
    lines += indented(
        "The running kernel against itself, both labels in every round of "
        "one boot. Each row draws sets of k rounds, swaps the labels at "
        "random within each, and compares them as make report compares "
        "two kernels (paired by round, %d %% level): \"A/A\" is the share "
        "called different; \"detect\" the median smallest difference found "
        "80 %% of the time (ns, and %% of the N = 0 figure); \"pooled\" the "
        "same subsets through a rule known to be wrong (all samples pooled, "
        "Welch t). The subsets overlap: the intervals (binomial over the "
        "subsets) are too narrow; one boot: no boot effect in these "
        "figures." % (100 * res["level"]), "")
    lines.append("")
    lines.append("%-8s %3s %6s %7s  %-15s %7s %9s %7s" % (
        "bench", "k", "rounds", "A/A", "95% CI", "pooled", "detect", "%N=0"))
    for r in res["rows"]:
        if r.get("skipped"):
            lines.append("%-8s %3d %6d  %s" % (r["bench"], r["k"],
                                               r["rounds"], r["skipped"]))
            continue
        lines.append("%-8s %3d %6d %7.3f  %-15s %7.3f %9s %7s" % (
            r["bench"], r["k"], r["rounds"], r["rate"],
            "[%.3f, %.3f]" % tuple(r["rate_ci"]), r["welch_rate"],
            "%.2f" % r["detectable"] if r["detectable"] is not None
            else "-",
            "%.2f%%" % r["detectable_pct"]
            if r["detectable_pct"] is not None else "-"))
    assert all(len(ln) <= WIDTH for ln in lines), lines
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--k", default="5 10",
                    help="rounds per drawn run, blank- or comma-separated")
    ap.add_argument("--subsets", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv[1:])
    try:
        ks = [int(x) for x in args.k.replace(",", " ").split()]
        if not ks or min(ks) < 2 or args.subsets < 1:
            raise ValueError
    except ValueError:
        print("plasmode: --k wants whole numbers of rounds, each at least 2 "
              "(e.g. 5,10), and --subsets at least 1", file=sys.stderr)
        return 2
    out = os.path.join(args.run, "aa")
    txt, js = (os.path.join(out, "plasmode.txt"),
               os.path.join(out, "plasmode.json"))
    if os.path.exists(txt) or os.path.exists(js):
        print("plasmode: %s already holds a plasmode: nothing is "
              "overwritten (move it away to redo it)" % out, file=sys.stderr)
        return 2
    try:
        res = analyse(args.run, ks, args.subsets, args.seed)
    except ResultsError as e:
        print("plasmode: %s" % e, file=sys.stderr)
        return 2
    text = render(res)
    os.makedirs(out, exist_ok=True)
    with open(js + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
    with open(txt + ".tmp", "w") as f:
        f.write(text)
    os.rename(js + ".tmp", js)
    os.rename(txt + ".tmp", txt)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
