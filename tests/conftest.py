# SPDX-License-Identifier: GPL-2.0
"""Shared fixtures: where the project, its scripts and its built rig live.

Tests marked `rig` need built kernels and the guest image (`make test` builds
them first); `make test-host` runs the others alone.
"""
import glob
import os
import signal
import subprocess
import sys

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "vm-images"))


def pytest_configure(config):
    config.addinivalue_line("markers", "rig: needs built kernels and image")
    config.addinivalue_line(
        "markers", "extra: a rig test that boots a kernel only make "
        "test-extra builds (the bpf and min flavours, ppc32); make test leaves "
        "it out")


RIG_SELECTED = []


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    """After -m and -k have deselected: does this run boot guests?"""
    RIG_SELECTED[:] = [any(i.get_closest_marker("rig") for i in items)]


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """A case of rseq_op_test that skipped for load in every one of its
    executions in this run fails the run (tests/rigreport.py)."""
    import rigreport
    if rigreport.load_skip_problems() and session.exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """What the rig tests retried, skipped or nearly ran out of
    (tests/rigreport.py), after every run that recorded an event or
    skipped a test, and the boots of a run that selected rig tests (the
    host tests' QEMU records are fakes); also into $RIG_SUMMARY when
    set."""
    import rigreport
    root = None
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is not None and factory._basetemp is not None and \
            any(RIG_SELECTED):
        root = str(factory.getbasetemp())
    lines = rigreport.summary(root)
    skipped = terminalreporter.stats.get("skipped", [])
    for rep in skipped:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else ""
        lines.append("pytest skip: %s: %s" % (rep.nodeid, reason))
    path = os.environ.get("RIG_SUMMARY")
    if path:
        # Written every time, empty or not: never an earlier run's.
        with open(path, "w") as f:
            f.writelines(l + "\n" for l in lines)
    if not lines:
        return
    terminalreporter.section("rig events")
    for l in lines:
        terminalreporter.write_line(l)


def library_versions():
    """The versions of the libraries a golden file's figures come from:
    Debian's numpy, scipy and matplotlib move with the mirror, and a point
    release can move a digit of a golden report."""
    import matplotlib
    import numpy
    import scipy
    return "numpy %s, scipy %s, matplotlib %s, python %s" % (
        numpy.__version__, scipy.__version__, matplotlib.__version__,
        sys.version.split()[0])


def check_golden(path, text):
    """TEXT against the golden file PATH, whose libraries' versions are
    kept beside it (PATH.versions). REGEN_GOLDEN=1 rewrites both. On a
    difference the message names the versions it was written with and
    this run's, so that drift of the mirror's libraries is told from a
    change of the analysis."""
    vpath = path + ".versions"
    if os.environ.get("REGEN_GOLDEN"):
        with open(path, "w") as f:
            f.write(text)
        with open(vpath, "w") as f:
            f.write(library_versions() + "\n")
        return
    with open(path) as f:
        want = f.read()
    if text == want:
        return
    try:
        with open(vpath) as f:
            then = f.read().strip()
    except OSError:
        then = "not recorded"
    now = library_versions()
    drift = "the same libraries: the analysis changed" if then == now else \
        "the libraries differ: a point release may have moved a figure"
    assert text == want, (
        "%s differs from this run's text; written with %s, this run has %s "
        "(%s). Read the diff, then regenerate with REGEN_GOLDEN=1" % (
            os.path.relpath(path, TOP), then, now, drift))


def run(cmd, **kw):
    return subprocess.run(cmd, cwd=TOP, capture_output=True, text=True, **kw)


@pytest.fixture(scope="session")
def top():
    return TOP


def kernel_dir(flavour, kconfig="default"):
    """A built flavour's directory, from the run manifest (kernel-path.sh,
    a pure lookup: it fails when the flavour was not built)."""
    env = dict(os.environ, KCONFIG=kconfig)
    r = run([os.path.join(TOP, "kernel-patch/scripts/kernel-path.sh"), flavour],
            env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def provenance(flavour, kconfig="default"):
    """A built flavour's provenance file, as a dict."""
    with open(os.path.join(kernel_dir(flavour, kconfig), "provenance")) as f:
        return dict(l.rstrip("\n").split("=", 1) for l in f if "=" in l)


def manifest():
    """The run manifest the build steps wrote, as a dict."""
    import guest_run
    return guest_run.read_manifest(guest_run.manifest_path())


def fake_manifest(tmp_path, flavours):
    """A manifest naming fake kernel directories and image, for tests of
    lookups that boot nothing: flavours as 'trixie/default/ops'."""
    lines = ["source_version=9.9.9-1", "image=%s" % (tmp_path / "img")]
    (tmp_path / "img").write_text("")
    for spec in flavours:
        d = tmp_path / spec.replace("/", "_")
        d.mkdir()
        (d / "bzImage").write_text("")
        (d / "provenance").write_text("flavour=x\n")
        lines.append("kernel/9.9.9-1/%s=%s" % (spec, d))
    m = tmp_path / "manifest"
    m.write_text("\n".join(lines) + "\n")
    return str(m)


@pytest.fixture(scope="session")
def flavours():
    """The flavours `make test` builds for measurements (default config)."""
    return ["baseline", "ops"]


@pytest.fixture(scope="session")
def image():
    """The guest image, from the run manifest."""
    img = manifest().get("image")
    assert img and os.path.isfile(img), "no image in the manifest: make image"
    return img


@pytest.fixture(scope="module")
def opbench(tmp_path_factory):
    """microbench/opbench built on this host, warning-free: -Werror on top
    of -Wall -Wextra."""
    out = tmp_path_factory.mktemp("mb")
    r = subprocess.run(["make", "-s", "-C", os.path.join(TOP, "microbench"),
                        "O=%s" % out, "USERCFLAGS=-Werror"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr, r.stderr
    return str(out / "opbench")


def default_signals():
    """preexec_fn for a child a test interrupts: SIGINT and SIGQUIT back
    to their default. A shell runs a background job with them ignored,
    a child inherits that, and neither bash (trap) nor Python (its
    KeyboardInterrupt handler) may take back a signal ignored at start:
    make test run from a background job (nohup, a CI runner's shell)
    would then test nothing that ^C does."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def bench_env(**extra):
    """The environment of a bench-run.sh run that takes every setting from
    its plan: none of the plan's variables inherited."""
    env = dict(os.environ, **extra)
    for v in ("FLAVOURS", "SWEEP", "LOOPS", "SAMPLES", "WARMUP", "BENCHES",
              "TYPES", "OPS", "BOOTS", "PREEMPT_LOOPS", "PERF_BENCH", "SEED",
              "LABEL"):
        env.pop(v, None)
    return env


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory, flavours, image):
    """make bench's stages (bench-run.sh) on the quick plan, once per
    session, with apt-get, apt-cache, apt, dpkg-deb and debootstrap
    shadowed by stubs that fail loudly: no stage after the build may fetch
    or unpack anything. Returns the run directory and the stages' stderr."""
    root = tmp_path_factory.mktemp("results")
    stub = tmp_path_factory.mktemp("no-network")
    for tool in ("apt-get", "apt-cache", "apt", "dpkg-deb", "debootstrap"):
        with open(os.path.join(stub, tool), "w") as f:
            f.write("#!/bin/sh\necho \"$0 $*\" >> %s/CALLED\n"
                    "echo \"STUB: $0 called after the build\" >&2\nexit 1\n"
                    % stub)
        os.chmod(os.path.join(stub, tool), 0o755)
    # A fixed seed: the boot and cell order is the same in every make test,
    # so that a verdict cannot depend on the order drawn (QUICK_SEED
    # overrides it to try another; the run's provenance records it).
    env = bench_env(PLAN="quick", RESULTS_ROOT=str(root),
                    SEED=os.environ.get("QUICK_SEED", "20261206"),
                    PATH="%s:%s" % (stub, os.environ["PATH"]))
    r = subprocess.run([os.path.join(TOP, "microbench", "bench-run.sh")],
                       cwd=TOP, env=env, capture_output=True, text=True,
                       timeout=1800)
    runs = glob.glob(str(root / "*-quick"))
    assert r.returncode == 0, r.stderr[-4000:]
    assert len(runs) == 1, r.stderr[-2000:]
    assert not os.path.exists(os.path.join(stub, "CALLED")), \
        open(os.path.join(stub, "CALLED")).read()
    return runs[0], r.stderr
