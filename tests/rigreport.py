# SPDX-License-Identifier: GPL-2.0
"""What a run of the rig tests retried, skipped or nearly ran out of.

A verdict that passed only because a case skipped, a boot that was retried
or a guest that used most of its time limit is something a reviewer must
see, not something pytest hides on success. Tests report such events here
(`event()`); the boots report themselves (every boot leaves a `vm.json`
under pytest's base temporary directory). conftest.py prints `summary()` at
the end of the run and writes it to $RIG_SUMMARY when that is set.

rseq_op_test's skips come in three kinds:
  configuration  the kernel's configuration or architecture decides: each
                 configuration has an exact list (CONFIG_SKIPS), and a
                 case that skips for such a reason off that list fails, as
                 does a listed case that did not skip;
  load           the run could not produce the situation the case needs
                 (every attempt was preempted, say): allowed, counted and
                 printed in the summary, since a loaded host can cause it
                 on a correct tree;
  anything else  a case that could not even set itself up: a failure.

A load skip proves nothing, so one is allowed but not a habit: over one
pytest run, a case that ran at least twice (executions that its
configuration did not skip: make test runs rseq_op_test four times, the
quick default run, the debug run and the compat pair) and skipped for load
every time fails the run (load_skip_problems(), from conftest's
pytest_sessionfinish). Measured: the racing case skipped for load in 1 of
20 executions with a CPU hog beside the rig (the soak of eab060c), in
none of the runs alone; at 1 in 20 a case skips all four with
probability 6e-6 per run, and the cases that run fewer times have not
skipped for load in any measured run.
"""
import collections
import json
import os
import re

EVENTS = []
# Over this pytest run: rseq_op_test's executions per case, the rounds of
# several-round runs (every case ran in each), the skips for a
# configuration reason and for load.
def new_tally():
    return {"case_runs": collections.Counter(), "rounds": 0,
            "config": collections.Counter(), "load": collections.Counter()}


TALLY = new_tally()

# The reasons the rig's run could not produce a case's situation.
LOAD_REASONS = (
    r"preempted in each of \d+ attempts",
    r"the signal never arrived before the moved thread ran",
    r"the spinning thread was switched out in each of \d+ tries",
    r"the two registrations never overlapped in \d+ rounds",
)
# Reasons that come from the kernel's configuration or the architecture.
CONFIG_REASONS = (
    r"no memory controller",
    r"userfaultfd: ",
    r"arm64's tagged address ABI only",
    r"no tagged address ABI",
    r"rseq debug mode",
    r"needs two CPUs",
    r"one possible CPU",
    r"no soft-dirty tracking \(CONFIG_MEM_SOFT_DIRTY\)",
    r"no MADV_COLLAPSE \(CONFIG_TRANSPARENT_HUGEPAGE\)",
    r"no protection keys here: ",
)

# The cases each configuration skips for a configuration reason: the
# default benchmark configuration has neither MEMCG nor USERFAULTFD, nor
# soft-dirty tracking or THP, which two transient faults need, nor
# protection keys; the debug one has all of them, and rseq debug mode;
# tagged addresses are arm64's.
TAGGED = "global.tagged_addresses_are_checked_without_the_tag"
PKEYS = {"global.memory_under_a_protection_key_is_refused",
         "global.protection_key_given_after_registration_is_sigsegv_pkuerr"}
TRANSIENT = "transient.%s.valid_destination_survives_racing_write_protect"
CONFIG_SKIPS = {
    "default": {TAGGED, "global.array_charged_to_the_thread_cgroup",
                "global.registration_waiting_on_a_fault_blocks_no_other_thread",
                TRANSIENT % "soft_dirty_clearing", TRANSIENT % "thp_collapse"} | PKEYS,
    "debug": {TAGGED,
              "global.critical_section_evaluated_after_interrupts_only"},
}
# A 32-bit task on the 64-bit debug kernel: the debug configuration's.
CONFIG_SKIPS["compat"] = CONFIG_SKIPS["debug"]

SKIP_LINE = re.compile(
    r"^(?:# )?(?:ok \d+ (?P<case>\S+) # SKIP ?(?P<reason>.*)"
    r"|(?P<n>\d+)x skipped: (?P<case2>\S+) \((?P<reason2>.*)\))$")


def event(kind, where, detail):
    """Record something the end-of-run summary must show."""
    EVENTS.append((kind, where, detail))


def selftest_skips(text):
    """rseq_op_test's skipped cases in selftests.sh's output, as
    {(case, reason): rounds}: a one-round run keeps every case's TAP line,
    a run of several rounds prints one count line per case and reason.
    Every reason is kept: a case may skip for different ones in different
    rounds, and each is judged."""
    out = {}
    for line in text.splitlines():
        m = SKIP_LINE.match(line.strip())
        if not m:
            continue
        if m.group("case"):
            case, reason, n = m.group("case"), m.group("reason"), 1
        else:
            case, reason = m.group("case2"), m.group("reason2")
            n = int(m.group("n"))
        if not case.startswith(("global.", "race.", "fatal.", "refused.",
                                "ignored.", "transient.")):
            continue    # selftests.sh's own lines, not rseq_op_test's
        out[case, reason] = out.get((case, reason), 0) + n
    return out


CASE_LINE = re.compile(r"^(?:# )*(?:not )?ok \d+ (?P<case>(?:global|race|"
                       r"fatal|refused|ignored|transient)\.\S+)")
ROUNDS_LINE = re.compile(r"^(?:# )*rseq_op_test passed (\d+) round\(s\) in a row$")


def executions(text):
    """rseq_op_test's executions in TEXT: ({case: runs} from the cases'
    own lines, which a one-round run keeps, and the rounds of the
    several-round runs, which print no case lines but ran every case)."""
    runs, rounds = collections.Counter(), 0
    for line in text.splitlines():
        m = CASE_LINE.match(line.strip())
        if m:
            runs[m.group("case")] += 1
            continue
        m = ROUNDS_LINE.match(line.strip())
        if m:
            rounds += int(m.group(1))
    return runs, rounds


def tally(text, tally_=None):
    """Adds TEXT's executions and skips to the run's TALLY."""
    t = TALLY if tally_ is None else tally_
    runs, rounds = executions(text)
    t["case_runs"].update(runs)
    t["rounds"] += rounds
    for (case, reason), n in selftest_skips(text).items():
        k = kind_of(reason)
        if k in ("load", "configuration"):
            t["load" if k == "load" else "config"][case] += n


def load_skip_problems(tally_=None):
    """The cases that ran at least twice in this run and skipped for load
    every time, as sentences (see the module's text)."""
    t = TALLY if tally_ is None else tally_
    out = []
    for case, n in sorted(t["load"].items()):
        ran = t["case_runs"][case] + t["rounds"] - t["config"][case]
        if ran >= 2 and n >= ran:
            out.append("%s skipped for load in each of its %d executions in "
                       "this run: it proved nothing (tests/rigreport.py)"
                       % (case, ran))
    return out


def kind_of(reason):
    if any(re.match(r, reason) for r in LOAD_REASONS):
        return "load"
    if any(re.match(r, reason) for r in CONFIG_REASONS):
        return "configuration"
    return "other"


def note_unexplained(text, where):
    """rseq_op_test's "UNEXPLAINED:" lines (a dropped page's word still set
    after a switch, in the MADV_DONTNEED case): no verdict, but every one
    in the end-of-run summary."""
    for line in text.splitlines():
        if "UNEXPLAINED:" in line:
            event("unexplained", where, line.split("UNEXPLAINED:", 1)[1].strip())


def check_selftest_skips(text, config, where):
    """The problems with rseq_op_test's skips in TEXT for configuration
    CONFIG (a key of CONFIG_SKIPS), as sentences; [] when there are none.
    Load skips are recorded as events for the summary, and so are the
    selftest's unexplained observations (note_unexplained)."""
    note_unexplained(text, where)
    tally(text)
    skips = selftest_skips(text)
    problems = []
    by_config = {}
    for (case, reason), n in sorted(skips.items()):
        k = kind_of(reason)
        if k == "load":
            event("selftest skip (load)", where,
                  "%s: %s (%d round(s))" % (case, reason, n))
        elif k == "configuration":
            by_config[case] = reason
        else:
            problems.append("%s skipped: %s" % (case, reason))
    want = CONFIG_SKIPS[config]
    for case in sorted(set(by_config) - want):
        problems.append("%s skipped for a configuration reason (%s), not "
                        "expected on %s" % (case, by_config[case], config))
    for case in sorted(want - set(by_config)):
        problems.append("%s was expected to skip on %s and did not: update "
                        "tests/rigreport.py CONFIG_SKIPS if the configuration "
                        "changed" % (case, config))
    return problems


def boot_records(root):
    """Every boot's vm.json under ROOT: (path relative to ROOT, record);
    only records a QEMU launch wrote (a test's fake record, a synthetic
    run's, is no boot)."""
    out = []
    for d, _, files in os.walk(root):
        if "vm.json" in files:
            p = os.path.join(d, "vm.json")
            try:
                with open(p) as f:
                    rec = json.load(f)
            except (OSError, ValueError):
                continue
            # A launch writes its QEMU command and an outcome; synthetic
            # runs that tests copy in have no outcome.
            if not isinstance(rec, dict) or "qemu_command" not in rec or \
                    "outcome" not in rec:
                continue
            out.append((os.path.relpath(d, root), rec))
    return sorted(out)


def summary(root, events=None):
    """The summary's lines: boots (outcomes, void boots, the closest to
    its limit, the most starved, warnings) and the events."""
    events = EVENTS if events is None else events
    boots = boot_records(root) if root and os.path.isdir(root) else []
    lines = []
    if boots:
        outcomes = collections.Counter(r.get("outcome", "?") for _, r in boots)
        voids = sum(1 for p, _ in boots if os.path.basename(p) == "void-1")
        lines.append("boots: %d (%s); void boots booted again: %d" % (
            len(boots), ", ".join("%s %d" % kv for kv in
                                   sorted(outcomes.items())), voids))
        timed = [(r["elapsed_s"] / r["timeout_s"], r["elapsed_s"],
                  r["timeout_s"], p) for p, r in boots
                 if r.get("elapsed_s") and r.get("timeout_s")]
        for ratio, el, lim, p in sorted(timed, reverse=True)[:3]:
            lines.append("  closest to its limit: %3.0f%% (%.0f of %.0f s) %s"
                         % (100 * ratio, el, lim, p))
        # Starvation: QEMU's threads runnable but not running on the host.
        starved = [(r["host_max_wait_per_s"], r.get("host_wait_s", 0),
                    r.get("elapsed_s", 0), p) for p, r in boots
                   if r.get("host_max_wait_per_s")]
        for worst, wait, el, p in sorted(starved, reverse=True)[:3]:
            lines.append("  most starved by the host: %.2f s waiting in one "
                         "second, %.0f s in %.0f s %s" % (worst, wait, el, p))
        if starved:
            lines.append("  (run-queue wait of all of QEMU's threads, vCPUs "
                         "among them: it can pass 1 s a second)")
        warns = collections.Counter(w for _, r in boots
                                    for w in r.get("warnings", []))
        for w, n in sorted(warns.items()):
            lines.append("  warning x%d: %s" % (n, w))
    for p in load_skip_problems():
        lines.append("FAILED: " + p)
    by_kind = collections.defaultdict(list)
    for kind, where, detail in events:
        by_kind[kind].append((where, detail))
    for kind in sorted(by_kind):
        lines.append("%s: %d" % (kind, len(by_kind[kind])))
        for where, detail in by_kind[kind]:
            lines.append("  %s: %s" % (where, detail))
    return lines
