# SPDX-License-Identifier: GPL-2.0
"""Off x86: ops on powerpc book3s/32 with KUAP, where a user
access region opens one 256 MiB segment (make test-extra: its kernel is
not one make test builds), and, in make test, rseq_op_test as a 32-bit
task on the 64-bit debug kernel and the cross build root's sparse. The
make targets build the kernels and the cross root; these tests only boot
them and look into the root. One host test: the targets' declarations."""
import os
import re
import subprocess

import pytest

import rigreport
from conftest import TOP


def tap_lines(path):
    with open(path) as f:
        return [ln.rstrip("\n") for ln in f]


@pytest.mark.rig
@pytest.mark.extra
def test_ppc32_destinations_in_seven_segments(tmp_path):
    """segments on ops, powerpc book3s/32 with KUAP under qemu-system-ppc:
    every destination, one in each of seven 256 MiB segments, is reset
    after each of 200 switches. v3 opens a user access region per access
    there (2/5); one region for the walk faults on the second segment."""
    r = subprocess.run([os.path.join(TOP, "correctness/arch-run.sh"), "ppc32", "ops"],
                       capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, RESULTS_ROOT=str(tmp_path), ROUNDS="0",
                                STRESS="0", TIMEOUT="600"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout.strip().splitlines()[-1]
    tap = tap_lines(os.path.join(out, "tap.txt"))
    assert any(ln.startswith("ok 1 segments #") and "SKIP" not in ln for ln in tap), tap
    seg = [ln for ln in tap if ln.startswith("# segments: 7 destinations")]
    assert seg, tap
    # Seven distinct segments, the rseq area's among them or not.
    segs = re.findall(r"0x[0-9a-f]+", seg[0].split(";")[0])
    assert len(set(segs)) == 7, seg
    assert "# segments: 200 rounds, every one of 7 destinations reset" in "\n".join(tap)
    with open(os.path.join(out, "provenance")) as f:
        prov = f.read()
    assert "arch=ppc32" in prov and "kernel_problems=0" in prov, prov
    with open(os.path.join(prov.split("kernel=")[1].split("\n")[0], "config")) as f:
        config = f.read()
    assert "CONFIG_PPC_BOOK3S_32=y" in config and "CONFIG_PPC_KUAP=y" in config
    assert "CONFIG_ARCH_RSEQ_OP_USER_ACCESS_PER_ADDRESS=y" in config


@pytest.mark.rig
def test_rseq_op_test_as_an_i386_task_on_debug_ops(tmp_path):
    """rseq_op_test built by Debian's i686 compiler, run as a 32-bit task
    on the debug kernel of ops (CONFIG_IA32_EMULATION): every case passes
    or skips, also under the PER_LINUX32 personality (where uname() says
    i686), and the binary is a 32-bit ELF."""
    # One round whatever ROUNDS the caller's environment holds (make
    # exports a ROUNDS given on its command line to every recipe).
    r = subprocess.run([os.path.join(TOP, "correctness/compat-run.sh"), "ops"],
                       capture_output=True, text=True, timeout=1500,
                       env=dict(os.environ, RESULTS_ROOT=str(tmp_path),
                                ROUNDS="1", TIMEOUT=""))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-3000:]
    assert "(ELF class 01: 32-bit)" in r.stdout and "programs: 01 " in r.stdout, r.stdout[:500]
    assert "x86_64" in r.stdout.split("\n")[1]
    assert "not ok" not in r.stdout
    # Every case ran: nothing skips for want of operations (only the case
    # rseq debug mode makes moot may skip).
    passes = [int(n) for n in re.findall(r"# # Totals: pass:(\d+) fail:0 ", r.stdout)]
    assert passes and min(passes) >= 60, r.stdout[-2000:]
    assert "\nok 1 segments.i386\n" in r.stdout, r.stdout[:1500]
    assert "\nok 2 rseq_op_test.i386.1\n" in r.stdout
    assert "\nok 3 rseq_op_test.i386.linux32\n" in r.stdout
    assert len(passes) == 2, r.stdout[-2000:]
    problems = rigreport.check_selftest_skips(r.stdout, "compat",
                                              "selftest i386 compat, ops")
    assert not problems, problems
    out = r.stdout.strip().splitlines()[-1]
    with open(os.path.join(out, "kernel-problems.txt")) as f:
        assert f.read() == ""


@pytest.mark.rig
def test_the_cross_root_sparse_is_one_the_tree_accepts():
    """make check-arches's sparse cell checks something only if kbuild
    takes the cross root's sparse: the tree's scripts/checker-valid.sh
    prints 1 for the sparse in PATH (sid's) and 0 for trixie's 0.6.4,
    which lacks __typeof_unqual__."""
    # The build steps' own lookup (common.sh), KVER's source
    src = subprocess.run(
        ["bash", "-c", ". scripts/common.sh && manifest_source source_dir"],
        cwd=TOP, capture_output=True, text=True).stdout.strip()
    assert src and os.path.isdir(src), "no source in the manifest: make source"
    r = subprocess.run(
        [os.path.join(TOP, "kernel-patch/scripts/buildroot.sh"), "run", "--bind", src, "--",
         "sh", "-c", 'cd "$1" && scripts/checker-valid.sh sparse && '
         'scripts/checker-valid.sh /usr/bin/sparse && sparse --version', "_", src],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, BUILDROOT="cross", BUILDROOT_MAKE="no"))
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    # sid's sparse, whichever version sid has today (no version pinned
    # here: the mirror carries only its newest), accepted by the tree
    # where trixie's is not.
    assert out[:2] == ["1", "0"], r.stdout
    assert out[2].strip(), r.stdout


def test_targets_are_declared_whole():
    """Every guest architecture is a declaration (vm-images/targets/): each
    sets every key target_load reads, names a configuration fragment that
    exists, its cross compiler's packages (which the cross build root
    adds) and its QEMU's package (which scripts/deps.sh installs): a file
    and its fragment are all a new target needs on this side. A name
    without a file is refused, naming the declared ones."""
    tdir = os.path.join(TOP, "vm-images", "targets")
    names = sorted(f[:-len(".target")] for f in os.listdir(tdir)
                   if f.endswith(".target"))
    assert {"arm64", "ppc32"} <= set(names)
    with open(os.path.join(TOP, "kernel-patch/scripts/buildroot.sh")) as f:
        buildroot = f.read()
    with open(os.path.join(TOP, "scripts/deps.sh")) as f:
        deps = f.read()
    for n in names:
        r = subprocess.run(
            ["bash", "-c", '. scripts/common.sh; target_load "$1"; for k in '
             '$TARGET_KEYS; do v=TARGET_$k; echo "$k=${!v}"; done', "-", n],
            cwd=TOP, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        t = dict(l.split("=", 1) for l in r.stdout.splitlines())
        assert os.path.isfile(os.path.join(TOP, t["CONFIG"])), t
        assert "gcc-%s" % t["CROSS"].rstrip("-") in t["CROSS_PACKAGES"], t
        assert t["ICOUNT"] in ("yes", "no")
        assert t["QEMU_PACKAGE"].startswith("qemu-system-"), t
    # deps.sh installs each target's QEMU, the cross root its compilers.
    assert "QEMU_PACKAGE" in deps and "qemu-system-ppc" not in deps
    assert "CROSS_PACKAGES" in buildroot
    r = subprocess.run(["bash", "-c", ". scripts/common.sh; target_load mips"],
                       cwd=TOP, capture_output=True, text=True)
    assert r.returncode != 0
    assert "use one of: %s (declared in vm-images/targets/" % " ".join(names) \
        in r.stderr
