#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""tap-diff.py - compare the per-case outcomes of two kselftest TAP logs.

    correctness/tap-diff.py A/tap.txt B/tap.txt [NAME_A NAME_B]

Reads the harness's case lines ("ok 3 global.name", "not ok 4 ...",
"ok 5 ... # SKIP"), possibly behind the "# " our guest runner adds, and
prints, sorted by case, the cases whose outcome differs:

    case                                  A          B
    global.unregister_errors              FAIL       pass

Exit status 0 either way; 2 when a file holds no case lines.
"""
import re
import sys

CASE_RE = re.compile(r"^(?:# )?(ok|not ok) \d+ (\S+\.\S+)(.*)$")


def outcomes(path):
    res = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = CASE_RE.match(line.rstrip("\n"))
            if not m:
                continue
            if m.group(1) == "not ok":
                res[m.group(2)] = "FAIL"
            elif "# SKIP" in m.group(3):
                res[m.group(2)] = "skip"
            else:
                res[m.group(2)] = "pass"
    return res


def main(argv):
    if len(argv) not in (3, 5):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    a, b = outcomes(argv[1]), outcomes(argv[2])
    na, nb = (argv[3], argv[4]) if len(argv) == 5 else ("A", "B")
    for path, res in ((argv[1], a), (argv[2], b)):
        if not res:
            print("tap-diff: no test case lines in %s" % path, file=sys.stderr)
            return 2
    diff = sorted(c for c in set(a) | set(b) if a.get(c) != b.get(c))
    print("%-50s %-8s %-8s" % ("case", na, nb))
    for c in diff:
        print("%-50s %-8s %-8s" % (c, a.get(c, "-"), b.get(c, "-")))
    print("%d case(s) differ out of %d" % (len(diff), len(set(a) | set(b))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
