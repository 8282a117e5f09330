#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""merge_runs - one run of several kernels, from native runs made on one
test box, one run per boot of a kernel (the kit's run.sh, or make bench
RUNNER=native), so that make report compares the kernels.

Usage: merge_runs.py OUT RUN...   (make merge RUNS="RUN..." [OUT=...])

A test box runs one kernel at a time: the unpatched one, then, after a
reboot, a package of make deb, and so on. Each run holds that kernel's
repetitions (rep-<i>-<label>/), each recording the boot it ran in (the
kernel's boot_id; a run from before that is one boot, as a run cannot
outlive its boot). The merged run holds every repetition, renumbered in
the order they started; the unit it compares is the boot, not the
repetition: every boot moves all its figures by a few per cent, so
repetitions of one boot are one value (provenance boot_units: the
analysis pools them, opbench_io.load), and the k-th boot of each kernel
is paired with the others' k-th as round k (boot_rounds). Pairing
repetitions instead took the boot effect for a difference between the
kernels (tests/test_native.py simulates both). Alternate the kernels
over reboots (A B B A A B ...: a steady drift cancels across the pairs);
a kernel with fewer than MIN_BOOTS boots is marked (few_boots), and the
report's header says so.

Refused: runs of another runner, runs of different plans, programs or
machines (the provenance's plan, opbench/tcmodel hashes, CPU model and
count), one label that is two kernels (release, build, series or
configuration differ: an unpatched kernel updated between sessions), a
run named twice, a run with no repetition or one that did not finish
(no records, a timeout, no start time), an existing OUT.
The inputs are read, never changed; OUT is written whole or not at all.
Where the inputs' other provenance lines differ (the running kernel, the
host state of each session), the merged provenance says "differs" with
each value, so that the report's header shows it.

Where every input has its index (run.json, boots.jsonl: the native runner
writes them), the merged run's index is their union: the first input's
run.json, and each repetition's line under its new number and directory,
with its boot's round.
"""
import collections
import json
import os
import shutil
import sys
import tempfile

from opbench_io import (BOOT_RE, INCOMPLETE, ResultsError, read_json, read_kv,
                        read_records)

# What must be the same in every run: the plan, the programs, the box.
SAME = ("ops", "benches", "cells_sha256", "perf_bench", "opbench_sha256",
        "tcmodel_sha256", "host_cpu", "host_cpus")
# Lines the merged provenance writes itself.
OWN = ("runner", "reference", "aa", "boot_order", "boot_rounds",
       "boot_units", "boots_per_flavour", "machine_boots", "few_boots",
       "seed", "merged_from")
UNPATCHED = "native"
# The boots of each kernel below which a merge is marked: with a boot
# effect of a few per cent, fewer boots resolve nothing smaller.
MIN_BOOTS = 5


def reps_of(run):
    """A native run's repetitions: [(started, index, label, path, boot)],
    boot the machine boot it ran in: its native.json's boot_id, or the run
    itself for a run that did not record one (one run, one boot)."""
    out = []
    for name in os.listdir(run):
        m = BOOT_RE.match(name)
        path = os.path.join(run, name)
        if not m or not name.startswith("rep-") or not os.path.isdir(path):
            continue
        nj = read_json(os.path.join(path, "native.json"))
        boot = nj.get("boot_id") or "run:" + os.path.realpath(run)
        out.append((nj.get("started", ""), int(m.group(1)), m.group(2), path,
                    boot))
    return sorted(out, key=lambda r: r[1])


# What names a kernel: one label must be one kernel in every run.
KERNEL = ("kernel_release", "kernel_version", "series_hash", "config_hash")


def check_reps(reps):
    """Refuse a repetition that did not finish: no records, a timeout, or
    no start time to order it by."""
    for started, _, _, path, _ in reps:
        if not os.path.exists(os.path.join(path, "opbench.json")):
            raise ResultsError("%s has no opbench.json: the repetition did "
                               "not run; merge runs that finished" % path)
        if os.path.exists(os.path.join(path, "TIMEOUT")):
            raise ResultsError("%s timed out (its TIMEOUT file): merge runs "
                               "that finished" % path)
        if not started:
            raise ResultsError("%s: no start time in its native.json, so "
                               "no order to merge it in" % path)


def check_kernels(reps):
    """One label, one kernel: the same release, build, series and
    configuration in every repetition of every run (an unpatched kernel
    updated between sessions is still labelled native)."""
    seen = {}
    for run_reps in reps:
        for _, _, label, path, _ in run_reps:
            k = read_kv(os.path.join(path, "kernel-provenance"))
            ident = tuple(k.get(x, "?") for x in KERNEL)
            first = seen.setdefault(label, (ident, path))
            if first[0] != ident:
                diff = [x for x, a, b in zip(KERNEL, first[0], ident)
                        if a != b]
                raise ResultsError(
                    "label %s is two kernels: %s and %s differ in %s; merge "
                    "runs of one kernel per label" % (
                        label, first[1], path, ", ".join(diff)))


def check(runs):
    """Each run's provenance and repetitions (reps_of), after the
    refusals."""
    real = [os.path.realpath(r) for r in runs]
    dup = sorted({r for r in real if real.count(r) > 1})
    if dup:
        raise ResultsError("%s named twice: each run is merged once" %
                           ", ".join(dup))
    provs, reps = [], []
    for run in runs:
        if not os.path.isdir(run):
            raise ResultsError("%s is not a directory: name the native runs "
                               "to merge (results/<date>-<label>/)" % run)
        if os.path.exists(os.path.join(run, INCOMPLETE)):
            raise ResultsError("%s is incomplete (its %s file): merge only "
                               "runs that finished" % (run, INCOMPLETE))
        p = read_kv(os.path.join(run, "provenance"))
        if p.get("runner") != "native":
            raise ResultsError(
                "%s: not a native run (provenance runner=%s): merge runs "
                "of the kit or of make bench RUNNER=native; a guest run "
                "already holds every flavour" % (run, p.get("runner", "?")))
        reps.append(reps_of(run))
        if not reps[-1]:
            raise ResultsError("%s has no rep-<i>-<label>/ directory" % run)
        check_reps(reps[-1])
        provs.append(p)
    for key in SAME:
        vals = {p.get(key) for p in provs}
        if len(vals) > 1:
            which = "; ".join("%s: %s" % (r, p.get(key, "(none)"))
                              for r, p in zip(runs, provs))
            raise ResultsError(
                "the runs differ in %s (%s): merge only runs of one kit "
                "and plan on one machine" % (key, which))
    check_kernels(reps)
    return provs, reps


def boot_rounds(reps):
    """reps in the order they ran, [(started, run, index, label, path,
    boot)]: per repetition its unit (the merged index of its boot's first
    repetition: a label in one boot is one value) and its round (the
    ordinal of that boot among its label's boots, in the order they first
    ran); and {label: boots}."""
    units, rounds, first, ordinal = [], [], {}, {}
    boots = collections.Counter()
    for i, r in enumerate(reps, 1):
        label, boot = r[3], r[5]
        if (label, boot) not in first:
            first[(label, boot)] = i
            ordinal[(label, boot)] = boots[label]
            boots[label] += 1
        units.append(first[(label, boot)])
        rounds.append(ordinal[(label, boot)])
    return units, rounds, dict(boots)


def few_boots(labels, boots):
    """The labels with fewer than MIN_BOOTS boots, in label order."""
    return [x for x in labels if boots[x] < MIN_BOOTS]


def merged_provenance(runs, provs, order, rounds, labels, units, boots):
    lines = ["runner=native"]
    ref = UNPATCHED if UNPATCHED in labels else provs[0].get(
        "reference", labels[0])
    lines.append("reference=%s" % ref)
    aa = "1" if all(p.get("aa") == "1" for p in provs) else "0"
    lines.append("aa=%s" % aa)
    lines.append("boot_order=%s" % " ".join(order))
    lines.append("boot_rounds=%s" % " ".join(str(r) for r in rounds))
    lines.append("boot_units=%s" % " ".join(str(u) for u in units))
    lines.append("boots_per_flavour=%d" % max(boots[x] for x in labels))
    lines.append("machine_boots=%s" % " ".join(
        "%s:%d" % (x, boots[x]) for x in labels))
    few = few_boots(labels, boots)
    if few:
        lines.append("few_boots=%s" % " ".join(
            "%s:%d" % (x, boots[x]) for x in few))
    lines.append("seed=%s" % " ".join(p.get("seed", "?") for p in provs))
    lines.append("merged_from=%s" % " ".join(os.path.abspath(r)
                                             for r in runs))
    keys = []
    for p in provs:
        keys += [k for k in p if k not in keys and k not in OWN]
    for k in keys:
        vals = [p.get(k, "(none)") for p in provs]
        if len(set(vals)) == 1:
            lines.append("%s=%s" % (k, vals[0]))
        else:
            lines.append("%s=differs: %s" % (k, " | ".join(vals)))
    return "\n".join(lines) + "\n"


def merged_index(tmp, runs, reps, rounds):
    """The union of the inputs' indexes into tmp (run.json, boots.jsonl),
    when every input has one; nothing otherwise (the analysis then finds
    the repetitions by their directories)."""
    lines = {}
    for k, run in enumerate(runs):
        bj = os.path.join(run, "boots.jsonl")
        if not (os.path.exists(bj) and
                os.path.exists(os.path.join(run, "run.json"))):
            return
        lines[k] = {e.get("dir"): e for e in read_records(bj)}
    out = []
    for i, (_, k, _, label, path, _) in enumerate(reps, 1):
        e = lines[k].get(os.path.basename(path))
        if e is None:
            return
        d = "rep-%d-%s" % (i, label)
        out.append(json.dumps(dict(e, boot=i, round=rounds[i - 1],
                                   flavour=label, dir=d,
                                   cells=d + "/cells")))
    shutil.copy(os.path.join(runs[0], "run.json"),
                os.path.join(tmp, "run.json"))
    with open(os.path.join(tmp, "boots.jsonl"), "w") as f:
        f.write("\n".join(out) + "\n")


def merge(out, runs):
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise ResultsError("%s exists and is not an empty directory: name "
                           "a new OUT (nothing is overwritten)" % out)
    if len(runs) < 2:
        raise ResultsError("name at least two runs to merge")
    provs, run_reps = check(runs)
    reps = [(started, k, i, label, path, boot)
            for k, rr in enumerate(run_reps)
            for started, i, label, path, boot in rr]
    # In the order they ran (a run's own order for one start time).
    reps.sort(key=lambda r: (r[0], r[1], r[2]))
    labels, order = [], []
    for r in reps:
        if r[3] not in labels:
            labels.append(r[3])
        order.append(r[3])
    units, rounds, boots = boot_rounds(reps)
    if len(labels) < 2:
        raise ResultsError("every run is of one kernel (%s): nothing to "
                           "compare; merge runs of different kernels, or "
                           "run the kit with AA=1 for an A/A" % labels[0])
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, prefix=os.path.basename(
        out.rstrip("/")) + ".merging-")
    try:
        for i, (_, _, _, label, path, _) in enumerate(reps, 1):
            shutil.copytree(path, os.path.join(tmp, "rep-%d-%s" % (i, label)))
        with open(os.path.join(tmp, "provenance"), "w") as f:
            f.write(merged_provenance(runs, provs, order, rounds, labels,
                                      units, boots))
        merged_index(tmp, runs, reps, rounds)
        if os.path.exists(out):
            os.rmdir(out)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return labels, order, boots


def main(argv):
    if len(argv) < 3:
        print("usage: merge_runs.py OUT RUN RUN... (native runs of one kit "
              "on one machine, a kernel each)", file=sys.stderr)
        return 2
    try:
        labels, order, boots = merge(argv[1], argv[2:])
    except ResultsError as e:
        print("merge_runs: %s" % e, file=sys.stderr)
        return 2
    print("merge_runs: %d repetitions of %s into %s" % (
        len(order), ", ".join("%s (%d)" % (x, order.count(x))
                              for x in labels), argv[1]), file=sys.stderr)
    print("merge_runs: the unit compared is the boot: %s" % ", ".join(
        "%s %d" % (x, boots[x]) for x in labels), file=sys.stderr)
    few = few_boots(labels, boots)
    if few:
        print("merge_runs: fewer than %d boots of %s: a difference of a few "
              "per cent between boots is not resolved; the report's header "
              "says so (run the kit over more reboots)" % (
                  MIN_BOOTS, ", ".join(few)), file=sys.stderr)
    print(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
