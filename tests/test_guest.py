# SPDX-License-Identifier: GPL-2.0
"""Boot each flavour: release string, rseq feature size, and the rseq
selftests on the ops kernel (rig tests)."""
import os
import re
import subprocess

import pytest

import rigreport
from conftest import TOP, provenance

RUNNER = os.path.join(TOP, "vm-images", "guest-run")

# AT_RSEQ_FEATURE_SIZE: 33 without the series (the reserved byte), 56 with
# the RSEQ operation list sentinel in struct rseq.
FEATURE_SIZE = {"baseline": 33, "ops": 56}


@pytest.mark.rig
def test_boot_release_and_feature_size(flavours, image, tmp_path):
    for fl in flavours:
        out = tmp_path / fl
        r = subprocess.run(
            [RUNNER, "--flavour", fl, "--out", str(out), "--accel", "tcg",
             "--timeout", "180", "--", "sh", "-c",
             "uname -r; LD_SHOW_AUXV=1 /bin/true | grep AT_RSEQ_FEATURE_SIZE"],
            capture_output=True, text=True, timeout=420)
        assert r.returncode == 0, r.stderr
        # The runner's uniform boot directory.
        for f in ("console.log", "vm.json", "kernel-provenance",
                  "commands.txt", "kernel-problems.txt"):
            assert os.path.exists(out / f), f
        assert (out / "kernel-problems.txt").read_text() == ""
        assert "kernel_release=" + provenance(fl)["kernel_release"] in \
            (out / "kernel-provenance").read_text()
        cmds = (out / "commands.txt").read_text()
        assert "# guest: sh -c" in cmds and "# qemu: qemu-system-x86_64" in cmds
        lines = r.stdout.split("\n")
        assert provenance(fl)["kernel_release"] in lines, r.stdout
        size = [l.split()[-1] for l in lines if "AT_RSEQ_FEATURE_SIZE" in l]
        assert size == [str(FEATURE_SIZE[fl])], r.stdout


@pytest.mark.rig
def test_ops_selftests_quick(flavours, tmp_path):
    """rseq_op_test, rfc_client, the quick upstream rseq selftests and a
    short param_test with an RSEQ operation in every thread, on ops; the launcher
    fails the run on any WARNING, BUG or Oops in the guest's log."""
    r = subprocess.run([os.path.join(TOP, "correctness/guest-selftests.sh"),
                        "ops", "quick"], capture_output=True, text=True,
                       timeout=1800,
                       env=dict(os.environ, RESULTS_ROOT=str(tmp_path)))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    assert "not ok" not in r.stdout
    assert "rseq_op_test passed 1 round(s) in a row" in r.stdout
    # A client written with the RFC's uapi names built and ran (no skip).
    assert "rfc_client: RFC names and layout build" in r.stdout
    assert "ok 2 rfc_client\n" in r.stdout
    assert "with_ops=0 " not in r.stdout
    # Skips: exactly the configuration's, and those of load counted.
    problems = rigreport.check_selftest_skips(r.stdout, "default",
                                              "selftests quick, ops")
    assert not problems, problems


def case_line(tap, name):
    """rseq_op_test's own TAP line for case NAME, as selftests.sh keeps it
    (one round: every line, behind '# ')."""
    lines = [l[2:] for l in tap.splitlines()
             if l.startswith("# ") and l.split(" # ")[0].endswith(" " + name)
             and (l[2:].startswith("ok ") or l[2:].startswith("not ok "))]
    assert len(lines) == 1, (name, lines)
    return lines[0]


@pytest.mark.rig
def test_ops_selftest_on_debug_kernel(tmp_path):
    """rseq_op_test on the debug build of ops (KASAN, lockdep, the memory
    cgroup, userfaultfd): every case passes, and the two that need that
    configuration ran instead of skipping: the array's charge to the
    registering thread's memory cgroup, and the registration waiting in a
    userfaultfd fault while the handler thread registers."""
    r = subprocess.run([os.path.join(TOP, "correctness/guest-selftests.sh"),
                        "ops", "op"], capture_output=True, text=True,
                       timeout=1800,
                       env=dict(os.environ, RESULTS_ROOT=str(tmp_path),
                                KCONFIG="debug"))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    out = r.stdout.strip().splitlines()[-1]
    with open(os.path.join(out, "kernel-provenance")) as f:
        assert "profile=debug" in f.read()
    with open(os.path.join(out, "kernel-problems.txt")) as f:
        assert f.read() == ""
    for name in ("global.array_charged_to_the_thread_cgroup",
                 "global.registration_waiting_on_a_fault_blocks_no_other_thread"):
        line = case_line(r.stdout, name)
        assert line.startswith("ok ") and "# SKIP" not in line, line
    # The charge the case measured, as it logs it, from reads that were
    # up to date (the case says how many it took).
    assert "memory.stat kernel:" in r.stdout
    m = re.search(r"memory\.stat: (\d+) reads, (\d+) stale", r.stdout)
    assert m, r.stdout[-3000:]
    if int(m.group(2)):
        rigreport.event("memory.stat reads again", "selftest debug, ops",
                        "%s stale of %s reads" % (m.group(2), m.group(1)))
    problems = rigreport.check_selftest_skips(r.stdout, "debug",
                                              "selftest debug, ops")
    assert not problems, problems


@pytest.mark.rig
@pytest.mark.extra
def test_min_selftest(tmp_path):
    """The min flavour (the handle ABI, PR_RSEQ_OPS): its own rseq_op_test
    passes on its kernel, the feature size is 7.2's (the ABI adds nothing
    to struct rseq), and the kernel logged no WARNING, BUG or Oops."""
    r = subprocess.run([os.path.join(TOP, "correctness/guest-selftests.sh"),
                        "min", "op"], capture_output=True, text=True,
                       timeout=1800,
                       env=dict(os.environ, RESULTS_ROOT=str(tmp_path)))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    assert "\nok 1 rseq_op_test\n" in r.stdout, r.stdout[-3000:]
    assert "# 1 passed, 0 skipped, 0 failed" in r.stdout
    assert "not ok" not in r.stdout
    # Both runs of run_rseq_op_test.sh: on glibc's registration, then on
    # the test's own (its cases named noglibc.*).
    assert r.stdout.count("# # PASSED: ") == 2, r.stdout[-3000:]
    assert "noglibc.apply.legacy_area.after_poll" in r.stdout
    out = r.stdout.strip().splitlines()[-1]
    with open(os.path.join(out, "kernel-problems.txt")) as f:
        assert f.read() == ""
    size = re.search(r"AT_RSEQ_FEATURE_SIZE (\d+)", r.stdout)
    assert size and size.group(1) == "33", r.stdout[-3000:]
