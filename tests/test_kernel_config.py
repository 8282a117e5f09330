# SPDX-License-Identifier: GPL-2.0
"""Kernel config fragments, the symbol checker and the built flavours."""
import os
import re
import subprocess

import pytest

from conftest import TOP, fake_manifest, kernel_dir, manifest, provenance, run

CONFIGS = os.path.join(TOP, "kernel-patch", "configs")
FRAGMENTS = sorted(f for f in os.listdir(CONFIGS) if f.endswith(".config"))
LINE_RE = re.compile(r"^(CONFIG_[A-Z0-9_]+)=(.+)$|^# (CONFIG_[A-Z0-9_]+) "
                     r"is not set$")


def requested(path):
    out = {}
    for line in open(path):
        m = LINE_RE.match(line.strip())
        if m:
            out[m.group(1) or m.group(3)] = m.group(2) or "n"
    return out


@pytest.mark.parametrize("frag", FRAGMENTS)
def test_fragment_style(frag):
    """kernel/configs style: '# Help:' first, sections sorted, no dupes."""
    lines = open(os.path.join(CONFIGS, frag)).read().splitlines()
    assert lines[0].startswith("# Help: "), frag
    seen = set()
    section = []
    for line in lines + [""]:
        if not line.strip():
            set_lines = [l for l in section if l.startswith("CONFIG_")]
            assert set_lines == sorted(set_lines), (frag, set_lines)
            unset = [l for l in section if l.endswith("is not set")]
            assert unset == sorted(unset), (frag, unset)
            section = []
            continue
        m = LINE_RE.match(line)
        if m:
            sym = m.group(1) or m.group(3)
            assert sym not in seen, "%s: %s twice" % (frag, sym)
            seen.add(sym)
        section.append(line)


def test_check_config_names_missing_symbol(tmp_path):
    frag = tmp_path / "f.config"
    frag.write_text("# Help: t\nCONFIG_A=y\nCONFIG_B=y\n# CONFIG_C is not set\n")
    good = tmp_path / "good"
    good.write_text("CONFIG_A=y\nCONFIG_B=y\n# CONFIG_C is not set\n")
    bad = tmp_path / "bad"
    bad.write_text("CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=y\n")
    chk = os.path.join(TOP, "kernel-patch/scripts/check-config.sh")
    assert run([chk, str(good), str(frag)]).returncode == 0
    r = run([chk, str(bad), str(frag)])
    assert r.returncode == 1
    assert "CONFIG_B: requested 'y', got 'n'" in r.stderr
    assert "CONFIG_C: requested 'n', got 'y'" in r.stderr
    assert "CONFIG_A" not in r.stderr


def test_unknown_kconfig_is_refused():
    env = dict(os.environ, KCONFIG="fast")
    r = run([os.path.join(TOP, "kernel-patch/scripts/kernel-build.sh"),
             "--check", "baseline"], env=env)
    assert r.returncode != 0
    assert "KCONFIG='fast' is unknown" in r.stderr


def test_old_profile_name_is_refused_by_name():
    """PROFILE collided with the benchmark plans: it is KCONFIG now."""
    env = dict(os.environ, PROFILE="debug")
    env.pop("KCONFIG", None)
    r = run([os.path.join(TOP, "kernel-patch/scripts/kernel-build.sh"),
             "--check", "baseline"], env=env)
    assert r.returncode != 0 and "PROFILE is now KCONFIG" in r.stderr
    r = run(["make", "-n", "help", "PROFILE=debug"])
    assert r.returncode != 0 and "PROFILE is now KCONFIG" in r.stderr


def test_bad_flavour_name_is_refused():
    r = run([os.path.join(TOP, "kernel-patch/scripts/kernel-build.sh"), "a/b"])
    assert r.returncode != 0 and "may only hold" in r.stderr


def test_named_flavour_needs_series():
    """A flavour without a declaration (kernel-patch/flavours/) takes its
    series from SERIES=, or SERIES_<name>; a declared one (rfc) from its
    declaration without either (make exports SERIES_rfc and the others:
    the test clears them, and checks only, so that it can never build)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SERIES")}
    script = os.path.join(TOP, "kernel-patch/scripts/kernel-build.sh")
    r = run([script, "--check", "mine"], env=env)
    assert r.returncode != 0 and "needs a series" in r.stderr
    assert "set SERIES_mine=" in r.stderr
    r = run([script, "--check", "rfc"], env=env)
    assert r.returncode == 0, r.stderr


PROVENANCE_KEYS = ["flavour", "profile", "kernel_release", "source_package",
                   "source_version", "series", "series_hash", "config_hash",
                   "toolchain", "compiler", "cc_has_asm_goto_output", "btf",
                   "build_seconds", "built_at"]


def test_old_gcc_fails_the_toolchain_check_by_name(tmp_path):
    """A config made by a gcc with broken asm-goto outputs (bookworm's
    12.2) fails the default toolchain's check, naming the symbol."""
    cfg = tmp_path / "config"
    cfg.write_text('CONFIG_CC_VERSION_TEXT="gcc (Debian 12.2.0-14) 12.2.0"\n'
                   "CONFIG_GCC_ASM_GOTO_OUTPUT_BROKEN=y\n")
    r = run([os.path.join(TOP, "kernel-patch/scripts/check-config.sh"), str(cfg),
             os.path.join(CONFIGS, "toolchain.config")])
    assert r.returncode == 1
    assert "CONFIG_CC_HAS_ASM_GOTO_OUTPUT: requested 'y', got 'n'" in r.stderr


def test_unknown_toolchain_is_refused():
    env = dict(os.environ, TOOLCHAIN="clang")
    r = run([os.path.join(TOP, "kernel-patch/scripts/buildroot.sh"), "run", "true"], env=env)
    assert r.returncode != 0 and "TOOLCHAIN='clang' is unknown" in r.stderr


@pytest.mark.rig
def test_flavours_built_with_provenance(flavours):
    for fl in flavours:
        d = kernel_dir(fl)
        for f in ("bzImage", "vmlinux", "System.map", "config", "provenance"):
            assert os.path.getsize(os.path.join(d, f)) > 0, (fl, f)
        # KEY=VALUE lines, every one (no empty line: a parser takes each).
        with open(os.path.join(d, "provenance")) as f:
            lines = f.read().splitlines()
        assert all("=" in ln for ln in lines), (fl, lines)
        p = provenance(fl)
        for k in PROVENANCE_KEYS:
            assert p.get(k), "%s: provenance lacks %s" % (fl, k)
        assert p["flavour"] == fl
        assert p["kernel_release"].endswith("-" + fl)
        assert p["btf"] == "yes", "BTF did not land in %s's vmlinux" % fl


@pytest.mark.rig
def test_flavours_built_by_trixie_gcc14(flavours):
    """Debian's compiler, from the build root, with asm-goto outputs: the
    config says so, and the vmlinux's own .comment names the compiler."""
    for fl in flavours:
        p = provenance(fl)
        assert p["toolchain"].startswith("trixie "), (fl, p["toolchain"])
        assert re.match(r"gcc \(Debian 1[4-9]\.", p["compiler"]), p["compiler"]
        assert p["cc_has_asm_goto_output"] == "y", fl
        cfg = open(os.path.join(kernel_dir(fl), "config")).read()
        assert "CONFIG_CC_HAS_ASM_GOTO_OUTPUT=y\n" in cfg
        r = run(["readelf", "-p", ".comment",
                 os.path.join(kernel_dir(fl), "vmlinux")])
        assert "GCC: (Debian 1" in r.stdout and "12.2.0" not in r.stdout, \
            r.stdout[:500]


@pytest.mark.rig
def test_guest_programs_build_clean_in_build_root(tmp_path):
    """Every guest program, built the one way (microbench/Makefile) with
    trixie's gcc: -Wall -Wextra clean there too (-Werror), and each binary
    says which gcc made it."""
    br = os.path.join(TOP, "kernel-patch/scripts/buildroot.sh")
    out = str(tmp_path)
    r = run([br, "run", "--bind", out, "make", "-s", "-C",
             os.path.join(TOP, "microbench"), "O=" + out,
             "USERCFLAGS=-Werror"])
    assert r.returncode == 0, r.stderr
    for prog in ("opbench", "tcmodel", "prime-signals", "rseq_op_stress"):
        r = run(["readelf", "-p", ".comment", os.path.join(out, prog)])
        assert "GCC: (Debian 14." in r.stdout, (prog, r.stdout)


@pytest.mark.rig
def test_ops_and_control_carry_the_series():
    """ops is our series; control is our series plus the planted bug,
    built on the debug configuration for the negative control."""
    with open(os.path.join(TOP, "kernel-patch", "series", "series")) as f:
        n = len([ln for ln in (x.split("#")[0].strip() for x in f) if ln])
    controls = len([p for p in os.listdir(os.path.join(
        TOP, "kernel-patch", "controls")) if p.endswith(".patch")])
    ops = provenance("ops")
    assert ops["series_hash"] != "none" and ops["series_patches"] == str(n)
    ctl = provenance("control", "debug")
    assert ctl["series_patches"] == str(n + controls), ctl
    assert ctl["series"].endswith("+ kernel-patch/controls"), ctl["series"]
    assert ctl["kernel_release"].endswith("-control-debug")


@pytest.mark.rig
def test_requested_symbols_landed(flavours):
    frags = [os.path.join(CONFIGS, f)
             for f in ("opbench.config", "toolchain.config")]
    for fl in flavours:
        cfg = os.path.join(kernel_dir(fl), "config")
        r = run([os.path.join(TOP, "kernel-patch/scripts/check-config.sh"), cfg] + frags)
        assert r.returncode == 0, r.stderr


def config_body(path):
    # The header names the release and date; the symbols are what matter.
    return [l for l in open(path) if l.startswith(("CONFIG_", "# CONFIG_"))]


@pytest.mark.rig
def test_flavour_configs_identical(flavours):
    ref = config_body(os.path.join(kernel_dir(flavours[0]), "config"))
    assert len(ref) > 500
    for fl in flavours[1:]:
        assert config_body(os.path.join(kernel_dir(fl), "config")) == ref, fl
        assert provenance(fl)["config_hash"] == \
            provenance(flavours[0])["config_hash"]


@pytest.mark.rig
def test_debug_kernels_carry_the_debug_configuration():
    """make test builds ops and the control on the debug configuration:
    its symbols landed in both, and both share one config."""
    body = {}
    for fl in ("ops", "control"):
        with open(os.path.join(kernel_dir(fl, "debug"), "config")) as f:
            body[fl] = f.read()
        for sym in ("CONFIG_KASAN=y", "CONFIG_PROVE_LOCKING=y",
                    "CONFIG_DEBUG_ATOMIC_SLEEP=y", "CONFIG_RSEQ=y",
                    "CONFIG_RSEQ_DEBUG_DEFAULT_ENABLE=y",
                    "CONFIG_DETECT_HUNG_TASK=y",
                    "CONFIG_SOFTLOCKUP_DETECTOR=y"):
            assert sym + "\n" in body[fl], (fl, sym)
    assert provenance("ops", "debug")["config_hash"] == \
        provenance("control", "debug")["config_hash"]


def test_check_config_later_fragment_wins(tmp_path):
    """As in merge_config.sh: the debug profile may undo a default line."""
    a = tmp_path / "a.config"
    a.write_text("# Help: a\nCONFIG_A=y\nCONFIG_B=y\n")
    b = tmp_path / "b.config"
    b.write_text("# Help: b\n# CONFIG_A is not set\n")
    cfg = tmp_path / "config"
    cfg.write_text("# CONFIG_A is not set\nCONFIG_B=y\n")
    chk = os.path.join(TOP, "kernel-patch/scripts/check-config.sh")
    assert run([chk, str(cfg), str(a), str(b)]).returncode == 0
    r = run([chk, str(cfg), str(b), str(a)])
    assert r.returncode == 1 and "CONFIG_A: requested 'y', got 'n'" in r.stderr


def test_kernel_path_is_a_pure_manifest_lookup(tmp_path):
    """kernel-path.sh reads the manifest and nothing else: no apt, no
    unpacking (apt-get and dpkg-deb fail loudly if called), and a flavour
    that was not built is refused with the make command that builds it."""
    m = fake_manifest(tmp_path, ["trixie/default/ops", "host/default/ops",
                                 "trixie/debug/ops"])
    stub = tmp_path / "bin"
    stub.mkdir()
    for tool in ("apt-get", "apt-cache", "apt", "dpkg-deb"):
        (stub / tool).write_text("#!/bin/sh\ntouch %s/CALLED\nexit 1\n" % stub)
        (stub / tool).chmod(0o755)
    env = dict(os.environ, MANIFEST=m, PATH="%s:%s" % (stub, os.environ["PATH"]))
    kp = os.path.join(TOP, "kernel-patch/scripts/kernel-path.sh")
    for spec, kconfig, want in (("ops", "default", "trixie_default_ops"),
                                ("ops@host", "default", "host_default_ops"),
                                ("ops", "debug", "trixie_debug_ops")):
        r = run([kp, spec], env=dict(env, KCONFIG=kconfig))
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == str(tmp_path / want)
    r = run([kp, "baseline"], env=dict(env, KCONFIG="default"))
    assert r.returncode != 0
    assert "flavour 'baseline' (default kernel configuration, trixie " \
        "toolchain) is not built: make kernels FLAVOURS=baseline KCONFIG=default" \
        in r.stderr
    r = run([kp, "a/b@host"], env=env)
    assert r.returncode != 0 and "may only hold" in r.stderr
    assert not (stub / "CALLED").exists()


def test_a_kernel_of_another_checkouts_series_is_refused(tmp_path):
    """Kernels are keyed by source, toolchain, configuration and flavour,
    not by series: a checkout that shares CACHE_DIR with another series
    finds the other's build. kernel-path.sh (and every kernel_dir) refuses
    one built from another series than this checkout declares, naming
    both and the fix; one built from this checkout's, the pristine tree's
    "none", a SERIES named to make kernel, or with no hash recorded
    (an older build, a fake) is found."""
    m = fake_manifest(tmp_path, ["trixie/default/ops", "trixie/default/baseline"])
    ops, base = tmp_path / "trixie_default_ops", tmp_path / "trixie_default_baseline"
    kp = os.path.join(TOP, "kernel-patch/scripts/kernel-path.sh")
    env = dict(os.environ, MANIFEST=m, KCONFIG="default")
    r = run(["bash", "-c", ". scripts/common.sh; flavour_series_hash ops; "
             "flavour_series_hash baseline; flavour_series_hash nosuch || "
             "echo unknown"], env=env)
    assert r.returncode == 0, r.stderr
    mine, none, unknown = r.stdout.split()
    assert len(mine) == 16 and (none, unknown) == ("none", "unknown")
    (base / "provenance").write_text("series_hash=none\nseries_named=0\n")
    assert run([kp, "baseline"], env=env).returncode == 0
    for prov, ok in (("series_hash=%s\nseries_named=0\n" % mine, True),
                     ("flavour=ops\n", True),
                     ("series_hash=0123456789abcdef\nseries_named=1\n", True),
                     ("series_hash=0123456789abcdef\nseries_named=0\n", False),
                     ("series_hash=0123456789abcdef\n", False)):
        (ops / "provenance").write_text(prov)
        r = run([kp, "ops"], env=env)
        assert (r.returncode == 0) == ok, (prov, r.stderr)
        if not ok:
            assert "built from series 0123456789abcdef, not from this " \
                "checkout's kernel-patch/series (%s)" % mine in r.stderr
            assert "make kernels FLAVOURS=ops KCONFIG=default" in r.stderr
            assert "CACHE_DIR of its own" in r.stderr
