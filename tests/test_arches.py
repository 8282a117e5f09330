# SPDX-License-Identifier: GPL-2.0
"""Off x86: the table of make check-arches (analysis/arches_table.py) from
a run directory written here, and the guest init of make arch-run built
warning-free."""
import os
import subprocess

import pytest

from conftest import TOP

TABLE = os.path.join(TOP, "analysis", "arches_table.py")
HEAD = "series\tprefix\tpatch\tcell\tconfig\tstatus\twarnings\tnew_warnings\tseconds\n"


def write_run(d, builds):
    """builds: (series, prefix, cell, config, status, [warning lines])."""
    (d / "logs").mkdir()
    (d / "provenance").write_text("source=linux-source-7.2.13-1\nprefixes=last\n")
    rows = [HEAD]
    for series, prefix, cell, cfg, status, warns in builds:
        name = "%s-%d-%s-%s.log" % (series, prefix, cell, cfg)
        (d / "logs" / name).write_text("".join(w + "\n" for w in warns))
        (d / "logs" / (name + ".w")).write_text("".join(w + "\n" for w in warns))
        rows.append("%s\t%d\t%s\t%s\t%s\t%s\t%d\t0\t1\n" % (
            series, prefix, "000%d-x.patch" % prefix if prefix else "-", cell, cfg,
            status, len(warns)))
    (d / "matrix.tsv").write_text("".join(rows))
    return str(d)


def table(*args):
    return subprocess.run(["/usr/bin/python3", TABLE] + list(args),
                          capture_output=True, text=True)


OLD = "kernel/sched/core.c:100:5: warning: old one [-Wfoo]"
NEW = "kernel/rseq.c:42:7: warning: unused variable 'x' [-Wunused-variable]"


@pytest.fixture
def run(tmp_path):
    return write_run(tmp_path, [
        ("pristine", 0, "arm64", "rseq", "warnings", [OLD]),
        ("pristine", 0, "ppc32", "rseq", "clean", []),
        # v2: the old warning moved by the series (other line) and a new one
        ("v2", 6, "arm64", "rseq", "warnings",
         [OLD.replace(":100:5:", ":130:5:"), NEW]),
        ("v2", 6, "ppc32", "rseq", "error", ["kernel/rseq.c:9:1: error: boom"]),
        # ops: prefix 1 fails alone, the whole builds; the old warning only
        ("ops", 1, "arm64", "rseq", "error", ["kernel/rseq.c:1:1: error: half"]),
        ("ops", 2, "arm64", "rseq", "warnings", [OLD]),
        ("ops", 2, "ppc32", "rseq", "clean", []),
    ])


def test_table_marks_what_the_series_add(run):
    r = table(run)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    head = next(ln for ln in lines if ln.split()[:1] == ["cell"])
    assert head.split() == ["cell", "pristine", "v2", "ops"]
    arm = next(ln for ln in lines if ln.startswith("arm64 rseq")).split()
    ppc = next(ln for ln in lines if ln.startswith("ppc32 rseq")).split()
    # a warning the pristine source has (at another line) is not the series'
    assert arm[2:] == ["1", "warn", "+1", "warn", "clean*"], arm
    assert ppc[2:] == ["clean", "ERROR", "clean"], ppc
    assert "ops 1/2 (0001-x.patch) arm64 rseq: error, the whole series builds" in r.stdout
    assert NEW in r.stdout
    assert "old one" not in r.stdout.split("v2: lines")[1]


def test_table_says_where_operations_are_offered(run):
    with open(os.path.join(run, "offered.tsv"), "w") as f:
        f.write("arm64\trseq\tyes\narm64\tnorseq\tno\nppc32\trseq\tno\n")
    out = table(run).stdout
    assert "  yes: arm64\n" in out and "  no:  ppc32\n" in out, out


def test_check_fails_on_a_prefix_error_and_on_new_lines(run, tmp_path):
    r = table("--check", "ops", run)
    assert r.returncode == 1
    assert "ops 1/2 arm64 rseq: error" in r.stdout
    r = table("--check", "v2", run)
    assert r.returncode == 1
    assert "v2 6/6 arm64 rseq: new warnings" in r.stdout
    assert "v2 6/6 ppc32 rseq: error" in r.stdout
    (tmp_path / "clean").mkdir()
    clean = write_run(tmp_path / "clean", [
        ("pristine", 0, "s390x", "norseq", "warnings", [OLD]),
        ("ops", 5, "s390x", "norseq", "warnings", [OLD]),
    ])
    r = table("--check", "ops", clean)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "every build of ops is clean" in r.stdout


def test_bad_input_is_named(tmp_path, run):
    r = table(str(tmp_path / "nosuch"))
    assert r.returncode != 0 and "give the directory a check-arches run wrote" in r.stderr
    r = table("--check", "v9", run)
    assert r.returncode != 0 and "no series 'v9'" in r.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "matrix.tsv").write_text(HEAD)
    r = table(str(empty))
    assert r.returncode != 0 and "stopped before its first build" in r.stderr


def test_arch_init_builds_warning_free(tmp_path):
    """The guest's PID 1 (vm-images/arch-init.c), -Wall -Wextra -Werror."""
    r = subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-static", "-o",
                        str(tmp_path / "init"), os.path.join(TOP, "vm-images", "arch-init.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_a_checker_kbuild_refused_is_not_clean(tmp_path):
    """Debian's sparse is older than the tree wants: the cell checked
    nothing, and the table must not call it clean."""
    run = write_run(tmp_path, [
        ("pristine", 0, "x86_64-sparse", "rseq", "nochecker", []),
        ("ops", 5, "x86_64-sparse", "rseq", "nochecker", []),
    ])
    row = next(ln for ln in table(run).stdout.splitlines()
               if ln.startswith("x86_64-sparse rseq"))
    assert row.split()[2:] == ["no", "sparse", "no", "sparse"], row
    r = table("--check", "ops", run)
    assert r.returncode == 0 and "1 build(s) checked nothing" in r.stdout, r.stdout


def test_a_repeated_warning_is_counted_not_set(tmp_path):
    """sparse repeats one message many times in a file: a series that adds
    one more of a message the pristine source has is one new line, not
    none (what a comparison of sets would say)."""
    same = "kernel/fork.c:%d:31: warning: incorrect type in argument 1 (different address spaces)"
    run = write_run(tmp_path, [
        ("pristine", 0, "x86_64-sparse", "rseq", "warnings", [same % 10, same % 20]),
        ("ops", 4, "x86_64-sparse", "rseq", "warnings", [same % 11, same % 21]),
        ("ops", 5, "x86_64-sparse", "rseq", "warnings", [same % 11, same % 21, same % 30]),
    ])
    row = next(ln for ln in table(run).stdout.splitlines()
               if ln.startswith("x86_64-sparse rseq"))
    assert row.split()[2:] == ["2", "warn", "+1", "warn"], row
    r = table("--check", "ops", run)
    assert r.returncode == 1 and "ops 5/5 x86_64-sparse rseq: new warnings" in r.stdout, r.stdout
    assert "ops 4/5" not in r.stdout, r.stdout
