# SPDX-License-Identifier: GPL-2.0
"""Every refusal: each message the Makefile and the scripts give for bad
input, its exit status, and that nothing ran before it.

Each bad invocation runs for real, not with make -n: in a copy of the
tree made a git repository of its own (others edit this one meanwhile),
where the build steps (deps, source, buildroot, image, plugin-header) are
stubs that fail and leave a mark; with CACHE_DIR and RESULTS_ROOT in empty
temporary directories, and apt-get, dpkg-query, dpkg-deb, debootstrap,
wget and curl on PATH as stubs of the same kind. A refusal that came after
a prerequisite would leave a mark, fill the cache or change the copy's
`git status`; none needs the network or root. Each check also lets a
valid value through: make -n lists the recipe.
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import TOP

PLANS = " ".join(sorted(f[:-len(".plan")] for f in
                        os.listdir(os.path.join(TOP, "microbench", "plans"))
                        if f.endswith(".plan")))
STUBS = ("apt-get", "apt", "apt-cache", "dpkg-query", "dpkg-deb",
         "debootstrap", "wget", "curl")
# What make's build steps run: in the copy, stubs.
STEPS = ("scripts/deps.sh", "kernel-patch/scripts/kernel-source.sh",
         "kernel-patch/scripts/buildroot.sh", "vm-images/build-rootfs.sh",
         "tracing/insnprof/qemu-plugin-header.sh")
STUB = '#!/bin/sh\ntouch "$STUB_MARKS/CALLED-%s"\nexit 1\n'
# The caller's settings that would change what is checked.
SCRUB = ("PLAN", "OPS", "SWEEP", "FLAVOUR", "FLAVOURS", "DURATION",
         "SCENARIO", "STRESS_SEMANTICS", "STRESS_KCONFIG", "PROFILE",
         "BENCH_PROFILE", "STRESS_PROFILE", "KCONFIG", "TOOLCHAIN", "MODE",
         "RESULTS", "RFC_SERIES", "V2_SERIES", "RESIDENT_SERIES", "SERIES",
         "MANIFEST", "AGAINST",
         "MAKEFLAGS", "MFLAGS", "MAKELEVEL")


def git(tree, *args):
    r = subprocess.run(["git", "-C", str(tree), "-c", "user.name=t",
                        "-c", "user.email=t@localhost", "-c", "core.hooksPath=/dev/null",
                        "-c", "commit.gpgsign=false"] + list(args),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def git_status(tree):
    """Everything a run could have left, ignored files (results/) too."""
    return git(tree, "status", "--porcelain", "--untracked-files=all", "--ignored")


@pytest.fixture(scope="session")
def tree(tmp_path_factory):
    """The tree as it is now (tracked and new files), its build steps
    stubs, committed in a repository of its own."""
    t = tmp_path_factory.mktemp("tree")
    files = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"],
                           cwd=TOP, capture_output=True, text=True, check=True)
    for f in files.stdout.split("\0"):
        src = os.path.join(TOP, f)
        if f and os.path.isfile(src):
            os.makedirs(os.path.dirname(str(t / f)), exist_ok=True)
            shutil.copy2(src, str(t / f))
    for f in STEPS:
        (t / f).write_text(STUB % os.path.basename(f))
        (t / f).chmod(0o755)
    git(t, "init", "-q")
    git(t, "add", "-A")
    git(t, "commit", "-q", "-m", "snapshot")
    assert git_status(t) == ""
    return t


class Sandbox:
    """Empty CACHE_DIR and RESULTS_ROOT, and stubs for whatever installs
    or fetches; untouched() checks that all stayed so."""

    def __init__(self, tree, tmp):
        self.tree = tree
        self.tmp = tmp
        self.cache = tmp / "cache"
        self.results = tmp / "results"
        self.bin = tmp / "bin"
        for d in (self.cache, self.results, self.bin):
            d.mkdir()
        for tool in STUBS:
            (self.bin / tool).write_text(STUB % tool)
            (self.bin / tool).chmod(0o755)
        self.env = {k: v for k, v in os.environ.items()
                    if k not in SCRUB and not k.startswith("SERIES_")}
        self.env.update(CACHE_DIR=str(self.cache), RESULTS_ROOT=str(self.results),
                        STUB_MARKS=str(self.bin), PYTHONDONTWRITEBYTECODE="1",
                        PATH="%s:%s" % (self.bin, os.environ["PATH"]))
        # A series of one patch, and one whose series file lists a missing one.
        self.good = tmp / "good"
        self.good.mkdir()
        (self.good / "0001-a.patch").write_text("From: x\n")
        self.broken = tmp / "broken"
        self.broken.mkdir()
        (self.broken / "0001-a.patch").write_text("From: x\n")
        (self.broken / "series").write_text("0001-a.patch\n0002-missing.patch\n")

    def args(self, args):
        return [a.format(good=self.good, broken=self.broken, tmp=self.tmp)
                for a in args]

    def run(self, cmd, env=None):
        r = subprocess.run(cmd, cwd=str(self.tree), capture_output=True, text=True,
                           env=dict(self.env, **(env or {})), timeout=60)
        self.untouched(r)
        return r

    def script(self, name):
        return str(self.tree / name)

    def make(self, *args, env=None):
        return self.run(["make", "--no-print-directory"] + self.args(args) +
                        ["CACHE_DIR=%s" % self.cache,
                         "RESULTS_ROOT=%s" % self.results], env)

    def untouched(self, r):
        why = r.stdout + r.stderr
        assert os.listdir(self.cache) == [], why
        assert os.listdir(self.results) == [], why
        called = [f for f in os.listdir(self.bin) if f.startswith("CALLED-")]
        assert called == [], why
        assert git_status(self.tree) == "", why


@pytest.fixture
def sb(tree, tmp_path):
    return Sandbox(tree, tmp_path)


def refused(r, status, *words):
    assert r.returncode == status, (r.returncode, r.stdout, r.stderr)
    for w in words:
        assert w in r.stderr, (w, r.stderr)


def passes(sb, goal_args, *recipe):
    """make -n: the checks let it through and the recipe is listed."""
    r = sb.make("-n", *goal_args)
    assert r.returncode == 0, r.stderr
    for w in recipe:
        assert w.format(good=sb.good) in r.stdout, (w, r.stdout)


# make: refused while the Makefile is read, before any prerequisite.
# (arguments, words the message must hold: what is wrong and what to do)
MAKE_REFUSALS = [
    # unknown PLAN
    (["plan-check", "PLAN=nosuch"], ["PLAN='nosuch' is unknown", "use one of: " + PLANS]),
    (["bench", "PLAN=nosuch"], ["PLAN='nosuch' is unknown", "use one of: " + PLANS]),
    (["bench-kernels", "PLAN=nosuch"], ["PLAN='nosuch' is unknown", "use one of: " + PLANS]),
    # old names on the command line
    (["kernels", "PROFILE=debug"], ["PROFILE is now KCONFIG", "benchmark plans are PLAN"]),
    (["bench", "BENCH_PROFILE=quick"], ["BENCH_PROFILE is now PLAN (quick|default|walker"]),
    (["stress", "STRESS_PROFILE=debug"], ["STRESS_PROFILE is now STRESS_KCONFIG (default|debug)"]),
    # OPS where SWEEP is meant
    (["bench", "OPS=0,1,2048"], ["OPS is the N of one traced run",
                                 "list of N is SWEEP (e.g. SWEEP=0,1,limit)"]),
    # series
    (["kernel"], ["kernel: name one: make kernel FLAVOUR=baseline|ops|control|<name>"]),
    (["kernel", "FLAVOUR=mine"],
     ["flavour 'mine' needs a series: SERIES=<patch directory or mbox>",
      "or set SERIES_mine=<patch directory or mbox>"]),
    (["kernel", "FLAVOUR=mine", "SERIES=/nonexistent"],
     ["series '/nonexistent' does not exist; name a patch directory or an mbox"]),
    (["kernel", "FLAVOUR=mine", "SERIES={broken}"],
     ["lists '{broken}/0002-missing.patch', which does not exist; correct its series file"]),
    (["kernel", "FLAVOUR=baseline", "SERIES={good}"],
     ["baseline takes no series; name the flavour, e.g. FLAVOUR=rfc"]),
    (["kernel", "FLAVOUR=ops", "SERIES={good}"],
     ["ops is built from kernel-patch/series/; name another flavour for SERIES="]),
    (["kernel", "FLAVOUR=a.b"], ["flavour name 'a.b' may only hold letters, digits, - and _"]),
    (["kernels", "FLAVOURS=baseline mine"],
     ["flavour 'mine' needs a series", "set SERIES_mine=<patch directory or mbox>"]),
    (["kernels", "FLAVOURS=ops mine", "SERIES_mine=/nonexistent"],
     ["series '/nonexistent' does not exist; name a patch directory or an mbox"]),
    (["kernels", "FLAVOURS=ops rfc", "RFC_SERIES={broken}"],
     ["lists '{broken}/0002-missing.patch', which does not exist"]),
    (["bench", "FLAVOURS=ops mine"], ["flavour 'mine' needs a series", "set SERIES_mine="]),
    (["vm-check", "FLAVOURS=mine"], ["flavour 'mine' needs a series", "set SERIES_mine="]),
    (["kernels", "KCONFIG=fast"],
     ["KCONFIG='fast' is unknown; use KCONFIG=default, debug"]),
    (["kernel", "FLAVOUR=ops", "TOOLCHAIN=clang"],
     ["TOOLCHAIN='clang' is unknown; use TOOLCHAIN=trixie (the default) or TOOLCHAIN=host"]),
    # the RFC as posted
    (["differential", "RFC_SERIES=/nonexistent"],
     ["differential: RFC_SERIES=/nonexistent does not exist; point it at the RFC patches"]),
    (["differential", "RFC_SERIES={tmp}/results"], ["no patches in '{tmp}/results'"]),
    (["differential", "AGAINST=ops"],
     ["differential: AGAINST=ops compares ops with itself; name another flavour, e.g. AGAINST=v2"]),
    # stress
    (["stress", "DURATION=abc"], ["DURATION='abc' is not a positive number of seconds",
                                  "e.g. DURATION=600"]),
    (["stress", "DURATION=0"], ["DURATION='0' is not a positive number of seconds"]),
    (["test-resident", "DURATION=10m"], ["DURATION='10m' is not a positive number of seconds"]),
    (["stress", "SCENARIO=Self_Cycle"], ["SCENARIO='Self_Cycle' is not a scenario name",
                                         "rseq_op_stress.c --list"]),
    (["stress", "STRESS_SEMANTICS=both"], ["STRESS_SEMANTICS='both': want list, resident or handle"]),
    (["stress", "STRESS_KCONFIG=bogus"], ["STRESS_KCONFIG='bogus' is unknown"]),
    (["stress", "FLAVOUR=mine"], ["flavour 'mine' needs a series"]),
    # flame graphs
    (["flamegraph", "MODE=cycles"], ["flamegraph: MODE=cycles: want perf or instructions"]),
    (["flamegraph", "MODE=perf instructions"], ["want perf or instructions"]),
    (["flamegraph", "FLAVOUR=mine"], ["flavour 'mine' needs a series"]),
    (["flamegraph", "MODE=instructions", "TYPE=strided"],
     ["flamegraph: TYPE=strided: want one of reset4, reset8, null, cpu, mmcid"]),
    (["flamegraph", "TYPE=cpu"], ["TYPE=cpu is for MODE=instructions"]),
    (["flamegraph", "VS=baseline"], ["VS='baseline': want a flavour and its N"]),
    (["flamegraph", "VS=mine 0"], ["flavour 'mine' needs a series"]),
    (["flamegraph", "VS=baseline x"], ["its N 'x' is not a number of operations"]),
    (["trace", "OPS=abc"], ["OPS='abc': want the number of operations"]),
    (["trace-overhead", "FLAVOUR=mine"], ["flavour 'mine' needs a series"]),
    (["boot-time", "FLAVOUR=mine"], ["flavour 'mine' needs a series"]),
    (["selftests-op", "FLAVOUR=mine"], ["flavour 'mine' needs a series"]),
    # time on real CPUs
    (["bench", "RUNNER=kvm"], ["RUNNER='kvm': want qemu", "or native"]),
    (["deb"], ["deb: name one: make deb FLAVOUR="]),
    (["deb", "FLAVOUR=mine"], ["flavour 'mine' needs a series"]),
    (["latency", "LATENCY=ops mine"], ["flavour 'mine' needs a series"]),
    # off x86
    (["check-arches", "CELLS=x86_64 mips", "RFC_SERIES={good}"],
     ["CELLS: 'mips' is not a cell; use some of: x86_64 i386 arm64"]),
    (["check-arches", "PREFIXES=some", "RFC_SERIES={good}"], ["PREFIXES='some': want last"]),
    (["check-arches", "RFC_SERIES=/nonexistent"],
     ["series 'rfc': '/nonexistent' does not exist"]),
    (["check-arches", "V2_SERIES={tmp}/results", "RFC_SERIES={good}"], ["series 'v2': no patches in '{tmp}/results'"]),
    (["arch-run", "GUEST_ARCH=mips"],
     ["GUEST_ARCH='mips' has no guest here; use one of: arm64 ppc32",
      "vm-images/targets/", "make compat-run"]),
    (["arch-run", "FLAVOURS=ops mine"], ["flavour 'mine' needs a series"]),
    (["arch-run", "ARCH_ROUNDS=ten"], ["ROUNDS='ten' (make: ARCH_ROUNDS) is not a whole number"]),
    (["arch-run", "ARCH_STRESS=1m"], ["STRESS='1m' (make: ARCH_STRESS) is not a whole number"]),
    (["compat-run", "COMPAT_ROUNDS=0"], ["ROUNDS='0' (make: COMPAT_ROUNDS): want a whole number"]),
    (["compat-run", "FLAVOURS=mine"], ["flavour 'mine' needs a series"]),
]


@pytest.mark.parametrize("args,words", MAKE_REFUSALS,
                         ids=[" ".join(a) for a, _ in MAKE_REFUSALS])
def test_make_refuses_before_any_prerequisite(sb, args, words):
    r = sb.make(*args)
    refused(r, 2, *sb.args(words))
    assert r.stdout == "", r.stdout     # no recipe ran
    assert re.match(r"Makefile:\d+: \*\*\* ", r.stderr), r.stderr  # while make read it


def test_old_names_in_the_environment(sb):
    """BENCH_PROFILE and STRESS_PROFILE set in the environment reach the
    scripts: refused there, and by make before it builds; PROFILE there
    is ignored, with a warning."""
    refused(sb.make("bench", env={"BENCH_PROFILE": "quick"}), 2,
            "BENCH_PROFILE is now PLAN (quick|default|walker): PLAN=quick")
    refused(sb.make("stress", env={"STRESS_PROFILE": "debug"}), 2,
            "STRESS_PROFILE is now STRESS_KCONFIG (default|debug)")
    refused(sb.make("bench", env={"OPS": "64"}), 2, "list of N is SWEEP")
    r = sb.make("-n", "kernels", env={"PROFILE": "debug"})
    assert r.returncode == 0, r.stderr
    assert "PROFILE=debug in the environment is ignored" in r.stderr
    assert "kernels.sh baseline ops" in r.stdout


def test_results_refused_by_report_cover_perf_and_cover_letter(sb):
    """No prerequisites: the recipe refuses, before any analysis."""
    refused(sb.make("report"), 2, "report: name a run: make report RESULTS=results/<run>")
    refused(sb.make("cover-perf"), 2,
            "cover-perf: name a run of make bench: make cover-perf RESULTS=results/<run>")
    refused(sb.make("report", "RESULTS=/nonexistent"), 2,
            "analyze: /nonexistent is not a directory",
            "directory written by make bench")
    refused(sb.make("cover-perf", "RESULTS=/nonexistent"), 2,
            "cover_perf: /nonexistent is not a directory",
            "directory written by make bench")
    refused(sb.make("cover-letter"), 2,
            "cover-letter: name a run of make bench: make cover-letter RESULTS=results/<run>")
    refused(sb.make("cover-letter", "RESULTS=/nonexistent"), 2,
            "no results directory '/nonexistent': name a run of make bench, RESULTS=results/<run>")


VALID = [
    (["bench", "PLAN=walker", "RFC_SERIES={good}"], ["PLAN=walker", "microbench/bench-run.sh"]),
    (["bench", "SWEEP=0,1", "FLAVOURS=ops"], ['FLAVOURS="ops" microbench/bench-run.sh']),
    (["bench-kernels", "OPS=64"], ["kernels.sh baseline ops"]),
    (["flamegraph", "OPS=64"], ["trace.sh flame ops", "signal 64 baseline 0"]),
    (["flamegraph", "MODE=instructions"], ["trace.sh insn ops"]),
    (["flamegraph", "MODE=instructions", "TYPE=cpu"], ["trace.sh insn ops"]),
    (["kernel", "FLAVOUR=mine", "SERIES={good}"], ['kernel-build.sh "mine" {good}']),
    (["kernel", "FLAVOUR=control"], ['kernel-build.sh "control"']),
    # A flavour means the same to every target: resident's default series.
    (["kernel", "FLAVOUR=resident"], ['kernel-build.sh "resident"']),
    (["kernel", "FLAVOUR=v2"], ['kernel-build.sh "v2"']),
    (["kernels", "FLAVOURS=baseline ops control v2 resident rfc mine ops@host",
      "RFC_SERIES={good}", "SERIES_mine={good}", "KCONFIG=debug"],
     ["kernels.sh baseline ops control v2 resident rfc mine ops@host"]),
    (["differential", "RFC_SERIES={good}"], ["kernels.sh ops rfc", "differential.sh rfc"]),
    (["differential", "AGAINST=v2"], ["kernels.sh ops v2", "differential.sh v2"]),
    (["cover-letter", "RESULTS={good}"], ["cover-letter.sh {good}"]),
    (["report", "RESULTS={good}"], ["analyze.py {good}"]),
    (["cover-perf", "RESULTS={good}"], ["cover_perf.py {good}"]),
    (["stress", "DURATION=30", "SCENARIO=self-cycle", "STRESS_SEMANTICS=resident"],
     ["correctness/stress.sh 30"]),
    (["test-resident", "DURATION=30"], ["FLAVOUR=resident", "correctness/stress.sh 30"]),
    (["stress", "STRESS_KCONFIG=default"], ["STRESS_KCONFIG=default correctness/stress.sh"]),
    (["bench-walker", "RFC_SERIES={good}"], ["PLAN=walker", "bench-run.sh"]),
    (["check-arches", "RFC_SERIES={good}", "CELLS=ppc32 i386", "PREFIXES=tip"],
     ["check-arches.sh rfc={good} v2=kernel-patch/v2 ops=kernel-patch/series"]),
    (["arch-run"], ["correctness/arch-run.sh ppc32 $f", "for f in ops;"]),
    (["arch-run", "FLAVOURS=v2 ops"], ["for f in v2 ops;"]),
    (["arch-run", "GUEST_ARCH=arm64", "FLAVOURS=ops", "ARCH_ROUNDS=3"],
     ["ROUNDS=3", "correctness/arch-run.sh arm64 $f", "for f in ops"]),
    (["compat-run"], ["KCONFIG=debug kernel-patch/scripts/kernels.sh ops",
                      "correctness/compat-run.sh $f"]),
]


@pytest.mark.parametrize("args,recipe", VALID, ids=[" ".join(a) for a, _ in VALID])
def test_make_lets_valid_values_through(sb, args, recipe):
    passes(sb, sb.args(args), *recipe)


def test_plan_check_alone_passes(sb):
    r = sb.make("plan-check", "PLAN=quick")
    assert r.returncode == 0 and r.stderr == "", r.stderr


# The scripts refuse the same input when run alone, before any work.

def test_bench_run_refuses_its_plan(sb):
    run = sb.script("microbench/bench-run.sh")
    refused(sb.run([run], {"PLAN": "nosuch"}), 1,
            "bench-run: error: PLAN='nosuch' is unknown; use one of: " + PLANS)
    refused(sb.run([run], {"PLAN": "quick", "OPS": "0,1"}), 1,
            "OPS is the N of one traced run", "SWEEP=0,1,limit")
    refused(sb.run([run], {"PLAN": "quick", "BENCH_PROFILE": "quick"}), 1,
            "BENCH_PROFILE is now PLAN")


def test_stress_refuses_its_arguments(sb):
    st = sb.script("correctness/stress.sh")
    refused(sb.run([st, "abc"]), 1, "DURATION='abc' is not a positive number")
    refused(sb.run([st], {"DURATION": "-5"}), 1, "DURATION='-5' is not a positive number")
    refused(sb.run([st, "30"], {"SCENARIO": "x y"}), 1, "SCENARIO='x y' is not a scenario name")
    refused(sb.run([st, "30"], {"STRESS_SEMANTICS": "x"}), 1,
            "STRESS_SEMANTICS='x': want list, resident or handle")
    refused(sb.run([st, "30"], {"STRESS_PROFILE": "debug"}), 1,
            "STRESS_PROFILE is now STRESS_KCONFIG")
    r = sb.run([st, "--check", "30"], {"SCENARIO": "fork", "STRESS_SEMANTICS": "list"})
    assert r.returncode == 0 and r.stdout + r.stderr == "", r.stderr


def test_kernel_build_refuses_its_series(sb):
    kb = sb.script("kernel-patch/scripts/kernel-build.sh")
    refused(sb.run([kb, "mine", "/nonexistent"]), 1,
            "kernel-build: error: series '/nonexistent' does not exist")
    refused(sb.run([kb, "mine", str(sb.broken)]), 1,
            "series '%s' lists '%s/0002-missing.patch', which does not exist"
            % (sb.broken, sb.broken))
    refused(sb.run([kb, "mine", str(sb.results)]), 1, "no patches in")
    for args in (["mine", str(sb.good)], ["ops"], ["control"], ["baseline"]):
        r = sb.run([kb, "--check"] + args)
        assert r.returncode == 0 and r.stdout + r.stderr == "", (args, r.stderr)


def test_kernels_checks_every_series_before_building(sb):
    """ops first, a bad series second: refused before ops is built (its
    build would fetch the source into the empty cache)."""
    ks = sb.script("kernel-patch/scripts/kernels.sh")
    refused(sb.run([ks, "ops", "mine"]), 1, "flavour 'mine' needs a series",
            "set SERIES_mine=")
    refused(sb.run([ks, "ops", "mine"], {"SERIES_mine": "/nonexistent"}), 1,
            "series '/nonexistent' does not exist")
    refused(sb.run([ks, "ops", "rfc"], {"SERIES_rfc": str(sb.broken)}), 1,
            "0002-missing.patch', which does not exist")
    refused(sb.run([ks, "ops", "ops@clang"]), 1, "TOOLCHAIN='clang' is unknown")
    r = sb.run([ks, "--check", "baseline", "ops", "v2", "resident", "rfc"],
               {"SERIES_rfc": str(sb.good)})
    assert r.returncode == 0 and r.stdout + r.stderr == "", r.stderr
