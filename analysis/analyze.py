#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""analyze.py - statistics, plots and the mailing-list report of one run.

    results/<date>-<label>/boot-*/opbench.json  ->  analyze.py  ->
        results/<date>-<label>/analysis/report.txt      (72 columns)
                                        analysis.json   (every number)
                                        plots/*.png, plots/*.svg

Usage: analysis/analyze.py [RESULTS_DIR] [--out DIR] [--force] [--strict]
Without RESULTS_DIR, the newest complete benchmark run under results/ is
analysed; an incomplete one (interrupted: it holds INCOMPLETE) only when
named, and its report says so.
An existing analysis is never overwritten: --force keeps it as
analysis.old-<UTC date>/ and writes the new one in its place. The output is
built in a temporary directory and renamed only when complete.

Exit status: whether the run is usable.
    0  analysed (with --strict: and every cell passed its correctness gate)
    3  with --strict only: analysed and written, but some cells failed
       their gate: they are dropped in every boot and listed at the end of
       the report (microbench/bench-run.sh warns on it)
    1  not analysed: the run cannot be read or analysed (the message says
       why), or an existing analysis was in the way
    2  bad usage
Without --strict a run with invalid cells exits 0, as make report wants;
the count is printed on stderr either way, and analysis.json's "usable"
and "invalid_count" say the same.
"""
import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import opbench_data  # noqa: E402
import opbench_plots  # noqa: E402
import pmu  # noqa: E402
import opbench_report  # noqa: E402

TOP = os.path.dirname(HERE)
# The exit status of a run analysed with cells that failed their gate.
INVALID = 3


def jsonable(a):
    """analysis.json carries no raw samples: they stay in opbench.json."""
    out = json.loads(json.dumps(a))
    for g in out["groups"]:
        for c in g["cells"]:
            c.pop("samples", None)
    return out


def write(rdir, outdir, force, icount_run=None):
    a = opbench_data.analyse(opbench_data.load(rdir))
    if icount_run:
        path = os.path.join(icount_run, "analysis", "analysis.json")
        if not os.path.exists(path):
            raise opbench_data.ResultsError(
                "--icount-run: %s has no analysis; make report RESULTS=%s "
                "first" % (icount_run, icount_run))
        with open(path) as f:
            pmu.against_icount(a, json.load(f))
    text = opbench_report.render(a)
    parent = os.path.dirname(os.path.abspath(outdir))
    os.makedirs(parent, exist_ok=True)
    if os.path.exists(outdir) and not force:
        sys.exit("analyze: %s exists; keep it and pass --out DIR, or pass "
                 "--force to keep it as %s.old-<date> and write anew"
                 % (outdir, os.path.basename(outdir)))
    tmp = tempfile.mkdtemp(prefix=".analysis-", dir=parent)
    try:
        with open(os.path.join(tmp, "report.txt"), "w") as f:
            f.write(text)
        with open(os.path.join(tmp, "analysis.json"), "w") as f:
            json.dump(jsonable(a), f, indent=1, sort_keys=True)
        plots = opbench_plots.plot_all(a, os.path.join(tmp, "plots"))
        # The two renames go together: a signal between them would leave
        # the earlier analysis moved aside and none in its place.
        held = signal.pthread_sigmask(signal.SIG_BLOCK,
                                      {signal.SIGINT, signal.SIGTERM})
        try:
            if os.path.exists(outdir):
                old = "%s.old-%s" % (outdir, time.strftime(
                    "%Y%m%dT%H%M%SZ", time.gmtime()))
                os.rename(outdir, old)
                print("analyze: kept the earlier analysis as %s" % old,
                      file=sys.stderr)
            os.rename(tmp, outdir)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return a, text, [os.path.join(outdir, "plots", os.path.basename(p))
                     for p in plots]


def main():
    # SIGTERM unwinds like SIGINT does, so that the temporary output is
    # removed and no half-written analysis is left behind.
    signal.signal(signal.SIGTERM, lambda sig, frame: sys.exit(128 + sig))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("results", nargs="?", help="results/<date>-<label>/")
    ap.add_argument("--out", help="output directory "
                    "(default RESULTS/analysis)")
    ap.add_argument("--force", action="store_true",
                    help="replace an existing analysis, keeping the old one")
    ap.add_argument("-q", "--quiet", action="store_true",
                    help="do not print the report")
    ap.add_argument("--icount-run", metavar="RUN",
                    help="an icount run of the same kernels (analysed): its "
                    "instruction figures beside this run's PMU counts")
    ap.add_argument("--strict", action="store_true",
                    help="exit %d when cells failed their correctness gate"
                    % INVALID)
    args = ap.parse_args()
    try:
        rdir = args.results or opbench_data.newest_run(
            os.path.join(TOP, "results"))
        if os.path.exists(os.path.join(rdir, opbench_data.INCOMPLETE)):
            print("analyze: WARNING: %s is incomplete (it holds %s): the "
                  "report says so" % (rdir, opbench_data.INCOMPLETE),
                  file=sys.stderr)
        outdir = args.out or os.path.join(rdir, "analysis")
        a, text, plots = write(rdir, outdir, args.force, args.icount_run)
    except opbench_data.ResultsError as e:
        sys.exit("analyze: %s" % e)
    if not args.quiet:
        sys.stdout.write(text)
    print("analyze: report %s" % os.path.join(outdir, "report.txt"),
          file=sys.stderr)
    print("analyze: plots  %s/ (%d files)" % (os.path.join(outdir, "plots"),
                                              len(plots)), file=sys.stderr)
    if not a["usable"]:
        print("analyze: %d cell-boots failed their correctness gate: listed "
              "at the end of the report, not used" % a["invalid_count"],
              file=sys.stderr)
        if args.strict:
            sys.exit(INVALID)


if __name__ == "__main__":
    main()
