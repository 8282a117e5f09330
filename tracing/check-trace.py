#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""check-trace.py - check and summarise what tracing/trace.sh brought back.

    check-trace.py validate DIR...   one DIR per script: SCRIPT.out and
                                     prime-signals.json; the walks counted
                                     must be signals + context switches
                                     (at least signals: a switch inside
                                     a raise() shares its walk). A walk is
                                     a call of the walker that applied the
                                     whole array, never a failed call that
                                     the slow path repeats (counted in
                                     @failed by rseq_ops_lat.bt)
    check-trace.py overhead DIR      plain-*.json against traced-*.json:
                                     the tracer's cost, with its 95% CI
    check-trace.py hist FILE         the histograms in a bpftrace output

bpftrace output it reads (maps printed at exit):
    @failed[primesig, -14]: 2
    @walks[primesig]: 1009
    @ns[primesig]:
    [2K, 4K)            1009 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
Exit status 1 when a check fails, with a line that says which.
"""
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "analysis"))

SCALAR = re.compile(r"^@(\w+)\[([^\]]+)\]:\s+(-?\d+)\s*$")
HIST_HEAD = re.compile(r"^@(\w+)\[([^\]]+)\]:\s*$")
BUCKET = re.compile(r"^[\[(]([^,]+),\s*([^\])]+)[\])]\s+(\d+)\s*\|")


def parse(path):
    """Scalars {(map, key): value} and histograms {(map, key): [(lo, hi, n)]}."""
    scalars, hists, cur = {}, {}, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = SCALAR.match(line)
            if m:
                scalars[(m.group(1), m.group(2))] = int(m.group(3))
                cur = None
                continue
            m = HIST_HEAD.match(line)
            if m:
                cur = (m.group(1), m.group(2))
                hists[cur] = []
                continue
            m = BUCKET.match(line)
            if m and cur:
                hists[cur].append((m.group(1), m.group(2), int(m.group(3))))
    return scalars, hists


def validate(dirs):
    ok = True
    for d in dirs:
        outs = glob.glob(os.path.join(d, "*.bt.out"))
        pj = os.path.join(d, "prime-signals.json")
        if not outs or not os.path.exists(pj):
            print("validate: %s: missing bpftrace output or prime-signals."
                  "json; see %s/console.log" % (d, d))
            ok = False
            continue
        with open(pj) as f:
            w = json.loads(f.read().strip().splitlines()[-1])
        script = os.path.basename(outs[0])[:-4]
        scalars, hists = parse(outs[0])
        walks = scalars.get(("walks", "primesig"))
        expect = w["signals"] + w["switches"]
        # A switch inside the raise() that delivers a signal shares that
        # signal's walk: with switches, the count may fall short of the
        # sum by at most their number, never below one walk per signal.
        good = walks is not None and w["resets_checked"] == 1 and (
            w["signals"] <= walks <= expect)
        line = ("validate: %s counted %s walks of primesig; expected %d "
                "signals + %d context switches = %d%s: %s" % (
                    script, walks, w["signals"], w["switches"], expect,
                    " (at least %d)" % w["signals"] if w["switches"] else "",
                    "OK" if good else "MISMATCH"))
        # Calls that failed (a fault on the fast path, or in a chunk
        # before the slow path faulted it in) are no walks; the walk they
        # were part of is counted once, by the call that finished it.
        failed = sum(v for (name, key), v in scalars.items()
                     if name == "failed" and key.split(",")[0] == "primesig")
        if failed:
            line += "; %d failed calls, not walks" % failed
        if ("nodes", "primesig") in scalars:
            # A walk while the list was still being registered applied
            # fewer nodes: exact only when no switch fell there.
            nodes = scalars[("nodes", "primesig")]
            n = w["nr_ops"]
            if walks is None:
                good_n = False
            elif w.get("switches_registering", 0):
                good_n = w["signals"] * n <= nodes <= walks * n
            else:
                good_n = nodes == walks * n
            line += "; nodes %d, expected %s x %d%s: %s" % (
                nodes, walks, n, " (at most; %d switches while registering)"
                % w["switches_registering"]
                if w.get("switches_registering", 0) else "",
                "OK" if good_n else "MISMATCH")
            good = good and good_n
        # One successful call per walk: trace.sh validates with 7
        # operations, and only more than 64 are applied in chunks.
        for (name, key), buckets in hists.items():
            total = sum(b[2] for b in buckets)
            line += "; @%s[%s] histogram holds %d" % (name, key, total)
            good = good and total == walks
        print(line)
        ok = ok and good
    return ok


def samples(paths):
    """{file number: the metric of its sample records}: each opbench run
    (one file) is one unit of the comparison, its samples are not."""
    import opbench_data
    out = {}
    for i, p in enumerate(sorted(paths)):
        xs = [float(r[opbench_data.METRIC]) for r in
              opbench_data.read_records(p) if r.get("kind") == "sample"]
        if xs:
            out[i] = xs
    return out


def overhead(d):
    import opbench_stats as st
    plain = samples(glob.glob(os.path.join(d, "plain-*.json")))
    traced = samples(glob.glob(os.path.join(d, "traced-*.json")))
    if not plain or not traced:
        print("overhead: %s: no samples (plain %d, traced %d); see "
              "opbench.log and bpftrace.log there" % (d, len(plain),
                                                      len(traced)))
        return False
    c = st.compare(plain, traced, key=("overhead", d))
    lo, hi = c["diff_ci"] or (float("nan"), float("nan"))
    rlo, rhi = c["ratio_ci"] or (float("nan"), float("nan"))
    print("overhead: %.1f alone, %.1f traced (runs %d/%d, the mean of each "
          "run's median): %+.1f [%+.1f, %+.1f] per loop, %+.2f%% [%+.2f%%, "
          "%+.2f%%]; %s" % (
              c["ref_value"], c["value"], c["k"][0], c["k"][1], c["diff"],
              lo, hi, 100 * (c["ratio"] - 1), 100 * (rlo - 1),
              100 * (rhi - 1),
              {"difference": "Difference at 95% confidence",
               "noise": "within the noise floor",
               "none": "No difference proven at 95% confidence"}[
                   c["verdict"]]))
    with open(os.path.join(d, "overhead.json"), "w") as f:
        json.dump(c, f, indent=1, sort_keys=True)
    return True


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("validate", "overhead",
                                                "hist"):
        sys.exit(__doc__)
    if sys.argv[1] == "validate":
        sys.exit(0 if validate(sys.argv[2:]) else 1)
    if sys.argv[1] == "overhead":
        sys.exit(0 if overhead(sys.argv[2]) else 1)
    _, hists = parse(sys.argv[2])
    for (name, key), b in sorted(hists.items()):
        print("@%s[%s]: %d in %d buckets" % (name, key,
                                             sum(x[2] for x in b), len(b)))
    sys.exit(0 if hists else 1)


if __name__ == "__main__":
    main()
