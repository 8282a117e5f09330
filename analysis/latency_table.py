#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""latency_table - the latency table of one tracing/latency.sh output.

Usage: analysis/latency_table.py DIR   (make latency prints it)

DIR holds <flavour>/latency.json and each boot's vm.json (the accelerator,
which says whether the tracers' microseconds are instructions). The same
table stands in make bench's report when the plan has LATENCY.
"""
import os
import sys

import latency
from latency_report import latency_lines
from opbench_io import ResultsError, latency_records


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: latency_table.py DIR (tracing/latency.sh's output)",
              file=sys.stderr)
        return 2
    try:
        # The accelerator: each boot's vm.json (latency_records).
        lat = latency.analyse(latency_records(argv[1]), None)
    except ResultsError as e:
        print("latency_table: %s" % e, file=sys.stderr)
        return 1
    if not lat:
        print("latency_table: %s: no latency records" % argv[1],
              file=sys.stderr)
        return 1
    print("\n".join(latency_lines(lat)[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
