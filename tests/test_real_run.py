# SPDX-License-Identifier: GPL-2.0
"""The analysis on a real run's records: tests/data/quick-run/ holds the
records of a quick run made by make test on the rig (the boots' records,
the launcher's and the kernels' provenance, the walker-loops tables and
the walks bpftrace counted; no console logs, no binaries), and
tests/data/quick-run-report.txt the report analyze.py wrote from them
when they were taken. Re-analysed, the report must come out byte for
byte the same: a change of the analysis that moves a real figure shows
here. After a deliberate change of the report, regenerate it with
    REGEN_GOLDEN=1 /usr/bin/python3 -m pytest tests/test_real_run.py
and read the diff before committing it."""
import os
import shutil
import subprocess

from conftest import TOP, check_golden

DATA = os.path.join(TOP, "tests", "data")
RUN = os.path.join(DATA, "quick-run")
GOLDEN = os.path.join(DATA, "quick-run-report.txt")


def test_real_quick_run_report_unchanged(tmp_path):
    d = tmp_path / os.path.basename(RUN)
    shutil.copytree(RUN, d)
    r = subprocess.run(["/usr/bin/python3",
                        os.path.join(TOP, "analysis", "analyze.py"), str(d),
                        "-q", "--strict"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(d / "analysis" / "report.txt") as f:
        text = f.read()
    check_golden(GOLDEN, text)
    assert "Instructions are not time" in " ".join(text.split())
