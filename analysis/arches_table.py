#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""arches_table.py - the table of a check-arches run (make check-arches).

Usage: analysis/arches_table.py RUN_DIR            print the table
       analysis/arches_table.py --check NAME RUN_DIR
              exit 1 when any prefix of series NAME has an error, or a
              warning line the pristine source does not have in that cell

RUN_DIR/matrix.tsv has one line per build (series, prefix, cell, config,
status, warning lines, lines not in the pristine source); RUN_DIR/offered.tsv
whether each cell's kernel offers RSEQ operations; RUN_DIR/logs/
has each build's log and its warning lines (*.log.w). A cell of the table
is the series whole (its last prefix); a prefix that did worse than the
whole is listed under the table, since each patch must build on its own.
"""
import collections
import csv
import os
import re
import sys


def load(run):
    path = os.path.join(run, "matrix.tsv")
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
    except OSError as e:
        sys.exit(f"arches_table: cannot read {path}: {e.strerror}; "
                 "give the directory a check-arches run wrote")
    if not rows:
        sys.exit(f"arches_table: {path} has no builds: the run stopped "
                 "before its first build finished; see its logs/")
    return rows


def strip_pos(line):
    """A warning line without its line and column numbers."""
    return re.sub(r":\d+:\d+:", ":", line)


def warn_lines(run, row):
    name = f"{row['series']}-{row['prefix']}-{row['cell']}-{row['config']}.log.w"
    try:
        with open(os.path.join(run, "logs", name)) as f:
            return [ln.rstrip("\n") for ln in f if ln.strip()]
    except OSError:
        return []


def new_lines(run, row, pristine):
    """The build's warning lines beyond the pristine source's, counted: a
    file with three 'different address spaces' warnings where the
    pristine source has two has one new (sparse repeats its messages, so
    a set would hide it); which of the three is listed is arbitrary. The
    lines are those of *.log.w, already unique: one message at one line
    and column (a header two objects include) counts once. check-arches.sh
    counts the same way for its log."""
    ref = pristine.get((row["cell"], row["config"]))
    old = collections.Counter(strip_pos(x) for x in (warn_lines(run, ref) if ref else []))
    new = []
    for x in warn_lines(run, row):
        if old[strip_pos(x)] > 0:
            old[strip_pos(x)] -= 1
        else:
            new.append(x)
    return new


def cell_text(row, new):
    if row is None:
        return "-"
    if row["status"] == "error":
        return "ERROR"
    if row["status"] == "nochecker":
        return "no sparse"
    if row["status"] == "clean":
        return "clean"
    if row["series"] == "pristine":
        return f"{row['warnings']} warn"
    return f"+{len(new)} warn" if new else "clean*"


def main(argv):
    check = None
    if len(argv) >= 2 and argv[0] == "--check":
        check, argv = argv[1], argv[2:]
    if len(argv) != 1:
        sys.exit("usage: arches_table.py [--check NAME] RUN_DIR")
    run = argv[0]
    rows = load(run)
    series = []
    for r in rows:
        if r["series"] not in series:
            series.append(r["series"])
    pristine = {(r["cell"], r["config"]): r for r in rows if r["series"] == "pristine"}
    last = {}
    for r in rows:
        if r["series"] != "pristine":
            last[r["series"]] = max(last.get(r["series"], 0), int(r["prefix"]))
    tip = {(r["series"], r["cell"], r["config"]): r for r in rows
           if r["series"] == "pristine" or int(r["prefix"]) == last[r["series"]]}
    cells = []
    for r in rows:
        if (r["cell"], r["config"]) not in cells:
            cells.append((r["cell"], r["config"]))

    if check is not None:
        if check not in last:
            sys.exit(f"arches_table: no series '{check}' in {run}")
        bad = 0
        for r in rows:
            if r["series"] != check:
                continue
            new = new_lines(run, r, pristine)
            if r["status"] == "error" or new:
                bad += 1
                print(f"{check} {r['prefix']}/{last[check]} {r['cell']} {r['config']}: "
                      f"{'error' if r['status'] == 'error' else 'new warnings'}")
        if bad:
            print(f"check-arches: {bad} build(s) of {check} have errors or warnings "
                  "the pristine source has not", file=sys.stderr)
            return 1
        unchecked = sum(1 for r in rows if r["series"] == check and r["status"] == "nochecker")
        print(f"check-arches: every build of {check} is clean, or has only "
              "the warnings the pristine source has in the same cell"
              + (f"; {unchecked} build(s) checked nothing (sparse refused)" if unchecked else ""))
        return 0

    with open(os.path.join(run, "provenance")) as f:
        prov = dict(ln.rstrip("\n").split("=", 1) for ln in f if "=" in ln)
    print(f"Build matrix, {prov.get('source', '?')}, prefixes: {prov.get('prefixes', '?')}")
    print("Objects that include what the series touch (compile only, no link);")
    print("'+k warn': k warning lines the pristine source does not have in that")
    print("cell; 'clean*': warnings, all of them the pristine source's too;")
    print("'no sparse': kbuild refused the sparse installed (too old for this")
    print("tree), so nothing was checked.")
    print()
    width = max(len(f"{c} {g}") for c, g in cells)
    head = f"{'cell':<{width}}" + "".join(f"  {s:>10}" for s in series)
    print(head)
    for c, g in cells:
        line = f"{c + ' ' + g:<{width}}"
        for s in series:
            r = tip.get((s, c, g))
            new = new_lines(run, r, pristine) if r and s != "pristine" else []
            line += f"  {cell_text(r, new):>10}"
        print(line)

    offered = os.path.join(run, "offered.tsv")
    if os.path.exists(offered):
        with open(offered) as f:
            cells_rseq = [ln.split() for ln in f if ln.strip()]
        yes = [c for c, g, o in cells_rseq if g == "rseq" and o == "yes"]
        no = [c for c, g, o in cells_rseq if g == "rseq" and o != "yes"]
        print()
        print("RSEQ operations offered (CONFIG_RSEQ and GENERIC_IRQ_ENTRY: rseq's")
        print("optimized mode; where not, RSEQ_CS_FLAG_RSEQ_OP_AVAILABLE is clear and")
        print("rseq_op_test skips):")
        print("  yes: " + (" ".join(yes) or "none"))
        print("  no:  " + (" ".join(no) or "none"))

    worse = []
    for r in rows:
        s = r["series"]
        if s == "pristine" or int(r["prefix"]) == last[s]:
            continue
        t = tip.get((s, r["cell"], r["config"]))
        if r["status"] == "error" and t and t["status"] != "error":
            worse.append(f"{s} {r['prefix']}/{last[s]} ({r['patch']}) {r['cell']} "
                         f"{r['config']}: error, the whole series builds")
    if worse:
        print()
        print("Prefixes that do not build on their own:")
        for w in worse:
            print("  " + w)

    for s in series:
        if s == "pristine":
            continue
        shown = set()
        out = []
        for c, g in cells:
            r = tip.get((s, c, g))
            if r is None:
                continue
            lines = new_lines(run, r, pristine)
            if r["status"] == "error" and not lines:
                lines = ["(the build failed; see logs/" +
                         f"{s}-{r['prefix']}-{c}-{g}.log)"]
            for ln in lines:
                key = strip_pos(ln)
                if key in shown:
                    continue
                shown.add(key)
                out.append(f"  [{c} {g}] {ln}")
        if out:
            print()
            print(f"{s}: lines the pristine source has not (first cell each appears in):")
            print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
