# SPDX-License-Identifier: GPL-2.0
"""The rig's retries and skips are reported, never hidden (host tests):
guest-run's one policy for void boots, the selftest skip lists, and the
summary make test prints at its end."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

import rigreport
from conftest import TOP

sys.path.insert(0, os.path.join(TOP, "vm-images"))
import guest_run  # noqa: E402


@pytest.fixture(autouse=True)
def own_events(monkeypatch):
    """Each test's events are its own, not this run's summary."""
    monkeypatch.setattr(rigreport, "EVENTS", [])
    monkeypatch.setattr(rigreport, "TALLY", rigreport.new_tally())


def fake_boot(outcomes):
    """A stand-in for guest_run.boot: each call writes a boot directory's
    files and returns the next (status, void) of OUTCOMES."""
    calls = []

    def boot(opts, kdir, image, argv):
        status, void = outcomes[len(calls)]
        calls.append(opts.out)
        os.makedirs(opts.out, exist_ok=True)
        for f in guest_run.OUTPUTS:
            assert not os.path.exists(os.path.join(opts.out, f)), f
        with open(os.path.join(opts.out, "vm.json"), "w") as f:
            json.dump({"outcome": "kernel-splat" if void else "ok"}, f)
        with open(os.path.join(opts.out, "out.json"), "w") as f:
            f.write("boot %d\n" % len(calls))
        return status, void
    return boot, calls


class Opts:
    flavour = "ops"

    def __init__(self, out):
        self.out = str(out)


def test_void_boot_is_booted_once_more_and_counted(tmp_path, monkeypatch,
                                                  capsys):
    # What the caller put there first: the guest's program, and the file
    # its shell writes the command's output into.
    (tmp_path / "guest-stress.sh").write_text("#!/bin/sh\n")
    (tmp_path / "guest-stdout.txt").write_text("")
    boot, calls = fake_boot([(125, True), (0, False)])
    monkeypatch.setattr(guest_run, "boot", boot)
    st = guest_run.boot_unless_void(Opts(tmp_path), "k", "i", [])
    assert st == 0 and len(calls) == 2
    # The void boot's files are kept apart, the second boot's in place,
    # and the caller's files stay for the second boot.
    assert (tmp_path / "void-1" / "out.json").read_text() == "boot 1\n"
    assert (tmp_path / "void-1" / "vm.json").exists()
    assert (tmp_path / "out.json").read_text() == "boot 2\n"
    assert (tmp_path / "guest-stress.sh").exists()
    assert (tmp_path / "guest-stdout.txt").exists()
    assert not (tmp_path / "void-1" / "guest-stress.sh").exists()
    rec = json.loads((tmp_path / "vm.json").read_text())
    assert rec["void_boots"] == 1
    assert "void boot of ops" in capsys.readouterr().err


def test_second_void_boot_fails(tmp_path, monkeypatch):
    boot, calls = fake_boot([(125, True), (125, True)])
    monkeypatch.setattr(guest_run, "boot", boot)
    assert guest_run.boot_unless_void(Opts(tmp_path), "k", "i", []) == 125
    assert len(calls) == 2


@pytest.mark.parametrize("status,void", [(125, False), (1, False), (0, False)])
def test_other_outcomes_are_not_booted_again(tmp_path, monkeypatch, status,
                                             void):
    boot, calls = fake_boot([(status, void)])
    monkeypatch.setattr(guest_run, "boot", boot)
    assert guest_run.boot_unless_void(Opts(tmp_path), "k", "i", []) == status
    assert len(calls) == 1 and not (tmp_path / "void-1").exists()


# rseq_op_test's output as selftests.sh keeps it: one round, every line.
ONE_ROUND = """\
# ok 1 global.available_and_enabled_flags
# ok 8 global.array_charged_to_the_thread_cgroup # SKIP no memory controller (CONFIG_MEMCG, or cgroup_disable=memory)
# ok 12 global.no_reset_without_schedule # SKIP preempted in each of 50 attempts
# ok 20 global.tagged_addresses_are_checked_without_the_tag # SKIP arm64's tagged address ABI only
# ok 35 global.registration_waiting_on_a_fault_blocks_no_other_thread # SKIP userfaultfd: Operation not permitted (needs CONFIG_USERFAULTFD and privilege)
# ok 52 transient.soft_dirty_clearing.valid_destination_survives_racing_write_protect # SKIP no soft-dirty tracking (CONFIG_MEM_SOFT_DIRTY)
# ok 53 transient.thp_collapse.valid_destination_survives_racing_write_protect # SKIP no MADV_COLLAPSE (CONFIG_TRANSPARENT_HUGEPAGE)
# ok 54 global.memory_under_a_protection_key_is_refused # SKIP no protection keys here: pkey_alloc: Invalid argument
# ok 55 global.protection_key_given_after_registration_is_sigsegv_pkuerr # SKIP no protection keys here: pkey_alloc: Invalid argument
ok 1 rseq_op_test # SKIP
"""


def test_selftest_skips_of_one_round():
    s = rigreport.selftest_skips(ONE_ROUND)
    assert {c for c, _ in s} == {
        "global.array_charged_to_the_thread_cgroup",
        "global.no_reset_without_schedule",
        "global.tagged_addresses_are_checked_without_the_tag",
        "global.registration_waiting_on_a_fault_blocks_no_other_thread",
        rigreport.TRANSIENT % "soft_dirty_clearing",
        rigreport.TRANSIENT % "thp_collapse"} | rigreport.PKEYS
    assert s["global.no_reset_without_schedule",
             "preempted in each of 50 attempts"] == 1


def test_selftest_skips_counted_over_rounds():
    text = ("# 3x skipped: global.no_reset_without_schedule (preempted in "
            "each of 50 attempts)\n"
            "# 50x skipped: race.racing_registrations_of_one_node (the two "
            "registrations never overlapped in 2000 rounds)\n")
    s = rigreport.selftest_skips(text)
    assert s["global.no_reset_without_schedule",
             "preempted in each of 50 attempts"] == 3
    assert s["race.racing_registrations_of_one_node",
             "the two registrations never overlapped in 2000 rounds"] == 50


def test_a_load_skip_hides_no_other_reason():
    """Over several rounds a case may skip for two reasons: each judged."""
    text = ("# 1x skipped: race.racing_registrations_of_one_node (a racing "
            "thread could not pin itself or register rseq)\n"
            "# 4x skipped: race.racing_registrations_of_one_node (the two "
            "registrations never overlapped in 37 rounds)\n")
    p = rigreport.check_selftest_skips(
        text + "".join("# ok 1 %s # SKIP %s\n" % (c, "arm64's tagged address "
                                                  "ABI only" if "tagged" in c
                                                  else "no memory controller")
                       for c in sorted(rigreport.CONFIG_SKIPS["default"])),
        "default", "here")
    assert p == ["race.racing_registrations_of_one_node skipped: a racing "
                 "thread could not pin itself or register rseq"], p


def test_skip_lists_hold_per_configuration():
    assert rigreport.check_selftest_skips(ONE_ROUND, "default", "here") == []
    # The load skip passes, counted for the summary.
    assert [e[0] for e in rigreport.EVENTS] == ["selftest skip (load)"]
    assert "no_reset_without_schedule" in rigreport.EVENTS[0][2]


def test_a_case_that_skipped_for_load_every_time_fails_the_run():
    """One load skip is allowed; a case that ran twice or more in the run
    and skipped for load each time proved nothing, and fails it. Skips for
    a configuration reason are not executions."""
    quick = ("# 1x skipped: race.racing_registrations_of_one_node (the two "
             "registrations never overlapped in 956 rounds)\n"
             "# rseq_op_test passed 1 round(s) in a row\n")
    rigreport.check_selftest_skips(quick, "default", "quick")
    assert rigreport.load_skip_problems() == []
    # The one-round debug run: the same case ran and passed.
    debug = "# ok 40 race.racing_registrations_of_one_node\n"
    rigreport.tally(debug)
    assert rigreport.load_skip_problems() == []
    t = rigreport.new_tally()
    skip = ("# ok 40 race.racing_registrations_of_one_node # SKIP the two "
            "registrations never overlapped in 12 rounds\n")
    rigreport.tally(quick, t)
    rigreport.tally(skip, t)
    (p,) = rigreport.load_skip_problems(t)
    assert p.startswith("race.racing_registrations_of_one_node skipped for "
                        "load in each of its 2 executions"), p
    # A case whose other executions were configuration skips ran once.
    t = rigreport.new_tally()
    rigreport.tally(ONE_ROUND, t)
    rigreport.tally(ONE_ROUND.replace("# SKIP preempted in each of 50 "
                                      "attempts", "# SKIP rseq debug mode"), t)
    assert rigreport.load_skip_problems(t) == []
    assert t["case_runs"]["global.no_reset_without_schedule"] == 2
    # And the summary says so when the run's tally fails.
    rigreport.TALLY.update(rigreport.new_tally())
    rigreport.tally(quick)
    rigreport.tally(skip)
    rigreport.tally(skip.replace("ok 40", "ok 41"))
    assert any(l.startswith("FAILED: race.racing_registrations_of_one_node "
                            "skipped for load in each of its 3 executions")
               for l in rigreport.summary(None)), rigreport.summary(None)


def test_unexpected_configuration_skip_fails():
    # The debug configuration has the memory controller and userfaultfd.
    p = rigreport.check_selftest_skips(ONE_ROUND, "debug", "here")
    assert any("array_charged_to_the_thread_cgroup skipped for a "
               "configuration reason" in x for x in p), p
    assert any("critical_section_evaluated_after_interrupts_only was "
               "expected to skip on debug" in x for x in p), p


def test_setup_skip_fails():
    text = ("# ok 3 global.reset_on_return_after_poll # SKIP kernel does "
            "not offer RSEQ operations\n")
    p = rigreport.check_selftest_skips(text, "default", "here")
    assert any("reset_on_return_after_poll skipped: kernel does not offer"
               in x for x in p), p


@pytest.fixture
def outside():
    """A directory outside pytest's base directory, whose boots this run's
    own summary does not count."""
    d = tempfile.mkdtemp(prefix="rigreport-")
    yield pathlib.Path(d)
    shutil.rmtree(d)


def test_summary_of_boots_and_events(outside):
    tmp_path = outside

    def rec(d, **kw):
        kw["qemu_command"] = ["qemu-system-x86_64"]
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "vm.json"), "w") as f:
            json.dump(kw, f)
    rec(tmp_path / "a", outcome="ok", elapsed_s=90.0, timeout_s=100,
        qemu_cpu_s=20.0, host_wait_s=30.0, host_max_wait_per_s=0.9,
        warnings=[])
    rec(tmp_path / "b", outcome="ok", elapsed_s=10.0, timeout_s=100,
        qemu_cpu_s=19.0, host_wait_s=0.5, host_max_wait_per_s=0.1,
        void_boots=1, warnings=["KVM fell back"])
    rec(tmp_path / "b" / "void-1", outcome="kernel-splat", elapsed_s=8.0,
        timeout_s=100, warnings=[])
    lines = rigreport.summary(str(tmp_path), [("retry", "t", "twice")])
    text = "\n".join(lines)
    assert lines[0] == ("boots: 3 (kernel-splat 1, ok 2); void boots "
                        "booted again: 1")
    assert "closest to its limit:  90% (90 of 100 s) a" in text
    assert ("most starved by the host: 0.90 s waiting in one second, 30 s "
            "in 90 s a\n") in text + "\n"
    assert "warning x1: KVM fell back" in text
    assert "retry: 1\n  t: twice" in text
    # A record that no QEMU wrote (a test's fake) is not a boot.
    rec(tmp_path / "c", outcome="ok")
    os.unlink(tmp_path / "c" / "vm.json")
    with open(tmp_path / "c" / "vm.json", "w") as f:
        json.dump({"outcome": "ok"}, f)
    assert rigreport.summary(str(tmp_path), [])[0].startswith("boots: 3 ")


def test_make_test_prints_the_summary(tmp_path):
    """pytest's end of run has the section, and $RIG_SUMMARY the lines."""
    (tmp_path / "test_x.py").write_text(
        "import pytest, rigreport\n"
        "def test_a():\n"
        "    rigreport.event('selftest skip (load)', 'a', 'detail')\n"
        "def test_b():\n"
        "    pytest.skip('nothing here')\n")
    (tmp_path / "conftest.py").write_text(
        "import importlib.util, sys\nsys.path.insert(0, %r)\n"
        "spec = importlib.util.spec_from_file_location('project_conftest', "
        "%r)\nmod = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(mod)\n"
        "pytest_terminal_summary = mod.pytest_terminal_summary\n"
        % (os.path.join(TOP, "tests"), os.path.join(TOP, "tests",
                                                    "conftest.py")))
    out = tmp_path / "summary.txt"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p",
                        "no:cacheprovider", str(tmp_path / "test_x.py")],
                       cwd=tmp_path, capture_output=True, text=True,
                       env=dict(os.environ, RIG_SUMMARY=str(out)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rig events" in r.stdout
    text = out.read_text()
    assert "selftest skip (load): 1\n  a: detail" in text
    assert "pytest skip: test_x.py::test_b: Skipped: nothing here" in text


def test_unexplained_observations_reach_the_summary():
    """rseq_op_test's UNEXPLAINED lines are no verdict, but each is an
    event of the run's summary, with the configuration's skips judged as
    before."""
    del rigreport.EVENTS[:]
    text = ONE_ROUND + ("# # rseq_op_test.c:2480:valid_destination_survives_"
                        "racing_write_protect:UNEXPLAINED: 1 words on dropped "
                        "pages still set after a switch\n")
    assert rigreport.check_selftest_skips(text, "default", "here") == []
    assert ("unexplained", "here",
            "1 words on dropped pages still set after a switch") in rigreport.EVENTS


def watchdog_boot(tmp_path, monkeypatch, console, window):
    """guest_run.boot() with a launch that wrote CONSOLE and a record
    whose worst STARVE_WINDOW_S seconds held WINDOW seconds of wait."""
    import opbench_vm
    kdir = tmp_path / "k"
    kdir.mkdir()
    (kdir / "provenance").write_text("flavour=ops\n")
    out = tmp_path / "boot"

    def main(args):
        (out / "console.log").write_text(console)
        (out / "vm.json").write_text(json.dumps({
            "qemu_command": ["qemu"], "outcome": "kernel-splat",
            "host_max_wait_window": {"s": 20, "wait_s": window,
                                     "end_s": 41.0}}))
        return opbench_vm.EXIT_SPLAT
    monkeypatch.setattr(opbench_vm, "main", main)
    monkeypatch.setattr(guest_run, "launcher_args", lambda *a: [])
    o = Opts(out)
    o.copy, o.command = [], ["true"]
    return guest_run.boot(o, str(kdir), "i", []), out


LOCKUP = ("OPBENCH-START\nwatchdog: BUG: soft lockup - CPU#1 stuck for 23s! "
          "[rseq_op_stress:312]\nCall Trace:\n")


def test_a_watchdog_under_host_starvation_is_a_void_boot(tmp_path,
                                                         monkeypatch, capsys):
    """R9: a soft lockup while the host kept QEMU waiting a 20-second
    window's length in it is the emulator's, not the kernel's: void
    (booted again once by boot_unless_void), said so, and kept in the
    record."""
    (st, void), out = watchdog_boot(tmp_path, monkeypatch, LOCKUP, 24.5)
    assert (st, void) == (125, True)
    err = capsys.readouterr().err
    assert "emulator starvation" in err and "24.5 s in 20 s" in err
    rec = json.loads((out / "vm.json").read_text())
    assert any("soft lockup" in w for w in rec["warnings"])


@pytest.mark.parametrize("console,window", [
    (LOCKUP, 12.0),     # the host ran the guest: the kernel's own problem
    ("OPBENCH-START\nBUG: KASAN: use-after-free in rseq_ops_apply\n"
     "watchdog: BUG: soft lockup - CPU#1 stuck for 23s!\n", 30.0),
])
def test_other_kernel_problems_stay_failures(tmp_path, monkeypatch, console,
                                             window):
    (st, void), _ = watchdog_boot(tmp_path, monkeypatch, console, window)
    assert (st, void) == (125, False)


def test_host_share_keeps_the_worst_window(monkeypatch):
    """HostShare's worst STARVE_WINDOW_S seconds of run-queue wait, from
    one sample a second: 1 s of wait a second for 30 s is 20 s in the
    worst window, ending 20 s or more after the first sample."""
    import opbench_vm
    waits = iter([0.0] * 10 + [float(i) for i in range(31)] + [30.0] * 10)
    monkeypatch.setattr(opbench_vm, "cpu_seconds", lambda pid: 1.0)
    monkeypatch.setattr(opbench_vm, "runqueue_wait", lambda pid: next(waits))
    rec = {}
    share = opbench_vm.HostShare(1, rec)
    for t in range(51):
        share.sample(float(t))
    w = rec["host_max_wait_window"]
    assert w["s"] == opbench_vm.STARVE_WINDOW_S == 20
    assert w["wait_s"] == 20.0 and w["end_s"] >= 30.0
    assert rec["host_max_wait_per_s"] == 1.0
