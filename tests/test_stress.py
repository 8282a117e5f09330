# SPDX-License-Identifier: GPL-2.0
"""Adversarial use of RSEQ operations: correctness/stress/rseq_op_stress.c.

A short bounded run on the debug ops kernel (KASAN, lockdep, lockup
detectors) must end with every victim's outcome right and a quiet kernel;
the same run on the negative control (ops plus a planted bug that applies
only the first operation of a list, kernel-patch/controls/), built by every
`make test`, must report wrong outcomes and fail: the check can fail.
(The RFC as posted fails it too, as it does not walk at the delivery of a
raised signal: make stress FLAVOUR=rfc STRESS_KCONFIG=default.)
"""
import json
import os
import subprocess

import pytest

from conftest import TOP, run

STRESS = os.path.join(TOP, "correctness", "stress", "rseq_op_stress.c")
REG = os.path.join(TOP, "microbench", "reg.c")
SCRIPT = os.path.join(TOP, "correctness", "stress.sh")


def test_builds_clean_and_lists(tmp_path):
    exe = str(tmp_path / "s")
    r = run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", exe, STRESS,
             REG, "-lpthread"])
    assert r.returncode == 0, r.stderr
    r = run([exe, "--list"])
    assert r.returncode == 0
    names = [l.split()[0] for l in r.stdout.splitlines()]
    assert len(names) >= 15 and "self-cycle" in names and "fork" in names
    r = run([exe, "-j", "99"])
    assert r.returncode == 2 and "-j takes 1..16" in r.stderr


def test_resident_outcomes_listed(tmp_path):
    """-R (the kernel-resident variant): writes to registered nodes are
    ignored, so only a destination page that goes away still kills."""
    exe = str(tmp_path / "s")
    r = run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", exe, STRESS,
             REG, "-lpthread"])
    assert r.returncode == 0, r.stderr
    plain = dict(l.split(None, 1) for l in run([exe, "--list"]).stdout.splitlines())
    res = dict(l.split(None, 1) for l in run([exe, "-R", "--list"]).stdout.splitlines())
    assert set(plain) == set(res)
    assert [n for n, v in res.items() if "SIGSEGV" in v] == ["dst-page"]
    assert "ignored, lives" in res["self-cycle"]
    assert "SIGSEGV" in plain["self-cycle"]


def stress(tmp_path, secs, **env):
    e = dict(os.environ, RESULTS_ROOT=str(tmp_path), **env)
    r = subprocess.run([SCRIPT, str(secs)], cwd=TOP, env=e,
                       capture_output=True, text=True, timeout=2 * (secs + 600) + 120)
    out = r.stdout.strip().splitlines()[-1]
    with open(os.path.join(out, "summary.json")) as f:
        return r, out, json.load(f)


def assert_alarm_margin(s):
    """Each scenario's slowest victim within a quarter of the alarm that
    would kill it (a victim killed by it is a wrong outcome, signal 14),
    so that a margin shrinking under a loaded host shows here, with its
    ratio printed, before it fails a run; and what the run counted
    instead of hiding: retried forks, victims that tested nothing (one
    CPU), race-register runs stopped by its time budget."""
    alarm = s["victim_alarm_s"]
    name, v = max(s["scenarios"].items(), key=lambda kv: kv[1]["max_s"])
    race = s["race_register"]
    print("# slowest victim: %s %.1f s of the %d s alarm (%.2f); fork retries %d,"
          " void runs %d; race-register %d of %d rounds, %d runs cut at %d s"
          % (name, v["max_s"], alarm, v["max_s"] / alarm, s["fork_retries"],
             s["void_runs"], race["rounds"], race["rounds_drawn"],
             race["time_cut"], race["budget_s"]))
    slow = {n: v["max_s"] for n, v in s["scenarios"].items()
            if v["max_s"] > alarm / 4}
    assert not slow, "victims past a quarter of the %d s alarm: %s" % (alarm, slow)


@pytest.mark.rig
def test_short_stress_on_debug_kernel(tmp_path):
    r, out, s = stress(tmp_path, 60)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert s["wrong"] == 0
    assert s["segv_seen"] == s["segv_expected"] > 0
    # The scenarios run in rounds, each once per round of victims: one
    # round means every scenario ran.
    assert s["victims"] >= len(s["scenarios"]), \
        "fewer victims than scenarios in 60 s: %s" % s
    assert s["void_runs"] == 0, s
    assert_alarm_margin(s)
    with open(os.path.join(out, "kernel-problems.txt")) as f:
        assert f.read() == ""
    with open(os.path.join(out, "kernel-provenance")) as f:
        assert "profile=debug" in f.read()


@pytest.mark.rig
def test_list_outcomes_fail_on_ops(tmp_path):
    """A walk of the list's outcomes on ops (v3), which reads each node
    once at registration: a corrupted link kills under a walk, is ignored
    on ops, so the list outcomes must be reported wrong there."""
    r, out, s = stress(tmp_path, 10, SCENARIO="self-cycle",
                       STRESS_SEMANTICS="list")
    assert r.returncode != 0, r.stdout + r.stderr[-3000:]
    assert s["semantics"] == "list" and s["wrong"] > 0, s
    # Only self-cycle ran, and every run of it was wrong: the list
    # outcomes expect the victim killed by its corrupted link, which ops
    # never reads.
    sc = s["scenarios"]["self-cycle"]
    assert sc["wrong"] == sc["runs"] == s["victims"] > 0, s
    assert sum(v["runs"] for v in s["scenarios"].values()) == sc["runs"], s
    assert "FAILED: wrong outcomes" in r.stderr
    assert_alarm_margin(s)


# The control's planted bug applies only a task's oldest operation. A
# victim run can see it only where it checks a registered RESET node other
# than the oldest; the program counts those runs as "exposed", from its own
# registrations, whatever the kernel does. Whether a run is exposed is
# drawn (how many nodes, of which types), from the run's seed: SEED pins
# victim k's scenario and seed whichever victim ends first. At seed
# 20261204 the first round (victims 1-19) already exposes each scenario
# below: the victims' draws replayed on the host (2026-12-06), and of 2707
# victims each of these scenarios was exposed in 112 (bad-register) to
# all of its ~142 runs. mutate-valid, migrate-signal, race-register and
# exec register one node or check none and are never exposed. An exposed
# victim says so with exit status 98, "node not reset by the walk" (its
# own nodes or, in threads, a thread's).
BUG_SENSITIVE = ("churn", "limit", "bad-register", "ro-node", "threads",
                 "fork", "rseq-rereg", "self-cycle", "cycle", "bad-link",
                 "early-close", "bad-field", "dst-page", "node-unmapped",
                 "concurrent-break")
BUG_OUTCOMES = {"exit 98"}


@pytest.mark.rig
def test_stress_catches_the_control(tmp_path):
    """The negative control fails for its planted bug, not for any reason:
    a fixed seed; every run that could see the bug (exposed) ended wrong,
    and no other did; each scenario the bug can break was exposed; every
    wrong outcome is the one the bug explains; and the kernel reports no
    problem."""
    r, out, s = stress(tmp_path, 40, FLAVOUR="control", SEED="20261204")
    assert r.returncode != 0, r.stdout + r.stderr[-3000:]
    assert s["seed"] == 20261204, s
    print("# exposed runs: " + ", ".join(
        "%s %d/%d" % (n, v["exposed"], v["runs"])
        for n, v in sorted(s["scenarios"].items())))
    for name in BUG_SENSITIVE:
        v = s["scenarios"][name]
        assert v["exposed"] >= 1, (name, v)
    for name, v in s["scenarios"].items():
        assert v["wrong"] == v["exposed"], (name, v)
        assert sum(v["wrong_how"].values()) == v["wrong"], (name, v)
        assert set(v["wrong_how"]) <= BUG_OUTCOMES, (name, v)
    assert s["void_runs"] == 0, s
    assert_alarm_margin(s)
    assert "FAILED: wrong outcomes" in r.stderr
    with open(os.path.join(out, "kernel-problems.txt")) as f:
        assert f.read() == ""
    with open(os.path.join(out, "kernel-provenance")) as f:
        p = f.read()
    assert "flavour=control\n" in p and "profile=debug\n" in p
