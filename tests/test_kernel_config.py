# SPDX-License-Identifier: GPL-2.0
"""Kernel config fragments, the symbol checker and the built flavours."""
import os
import re
import subprocess

import pytest

from conftest import (OPS_SERIES, TOP, kernel_dir, provenance, run,
                      series_exists)

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
    chk = os.path.join(TOP, "scripts/check-config.sh")
    assert run([chk, str(good), str(frag)]).returncode == 0
    r = run([chk, str(bad), str(frag)])
    assert r.returncode == 1
    assert "CONFIG_B: requested 'y', got 'n'" in r.stderr
    assert "CONFIG_C: requested 'n', got 'y'" in r.stderr
    assert "CONFIG_A" not in r.stderr


def test_unknown_profile_is_refused():
    env = dict(os.environ, PROFILE="fast")
    r = run([os.path.join(TOP, "scripts/kernel-build.sh"), "baseline"], env=env)
    assert r.returncode != 0
    assert "PROFILE='fast' is unknown" in r.stderr


def test_bad_flavour_name_is_refused():
    r = run([os.path.join(TOP, "scripts/kernel-build.sh"), "a/b"])
    assert r.returncode != 0 and "may only hold" in r.stderr


def test_named_flavour_needs_series():
    r = run([os.path.join(TOP, "scripts/kernel-build.sh"), "rfc"])
    assert r.returncode != 0 and "needs a series" in r.stderr


PROVENANCE_KEYS = ["flavour", "profile", "kernel_release", "source_package",
                   "source_version", "series", "series_hash", "config_hash",
                   "compiler", "btf", "build_seconds", "built_at"]


@pytest.mark.rig
def test_flavours_built_with_provenance(flavours):
    for fl in flavours:
        d = kernel_dir(fl)
        for f in ("bzImage", "vmlinux", "System.map", "config", "provenance"):
            assert os.path.getsize(os.path.join(d, f)) > 0, (fl, f)
        p = provenance(fl)
        for k in PROVENANCE_KEYS:
            assert p.get(k), "%s: provenance lacks %s" % (fl, k)
        assert p["flavour"] == fl
        assert p["kernel_release"].endswith("-" + fl)
        assert p["btf"] == "yes", "BTF did not land in %s's vmlinux" % fl


@pytest.mark.rig
def test_ops_built_when_series_exists(flavours):
    if not series_exists(OPS_SERIES):
        pytest.skip("kernel-patch/series has no patches yet: no ops kernel")
    assert "ops" in flavours
    assert provenance("ops")["series_hash"] != "none"


@pytest.mark.rig
def test_requested_symbols_landed(flavours):
    frag = os.path.join(CONFIGS, "opbench.config")
    for fl in flavours:
        cfg = os.path.join(kernel_dir(fl), "config")
        r = run([os.path.join(TOP, "scripts/check-config.sh"), cfg, frag])
        assert r.returncode == 0, r.stderr


def config_body(path):
    # The header names the release and date; the symbols are what matter.
    return [l for l in open(path) if l.startswith(("CONFIG_", "# CONFIG_"))]


@pytest.mark.rig
def test_flavour_configs_identical(flavours):
    if len(flavours) < 2:
        pytest.skip("only one flavour built")
    ref = config_body(os.path.join(kernel_dir(flavours[0]), "config"))
    assert len(ref) > 500
    for fl in flavours[1:]:
        assert config_body(os.path.join(kernel_dir(fl), "config")) == ref, fl
        assert provenance(fl)["config_hash"] == \
            provenance(flavours[0])["config_hash"]


@pytest.mark.rig
def test_debug_profile_merges(tmp_path):
    """The debug profile's symbols land (merge only; it is not built here)."""
    src = run([os.path.join(TOP, "scripts/kernel-source.sh")]).stdout.strip()
    out = tmp_path / "debug.config"
    env = dict(os.environ, PROFILE="debug")
    r = run([os.path.join(TOP, "scripts/kernel-config.sh"), src, str(out)],
            env=env)
    assert r.returncode == 0, r.stderr
    body = out.read_text()
    for sym in ("CONFIG_KASAN=y", "CONFIG_PROVE_LOCKING=y",
                "CONFIG_DEBUG_ATOMIC_SLEEP=y", "CONFIG_RSEQ=y",
                "CONFIG_RSEQ_DEBUG_DEFAULT_ENABLE=y",
                "CONFIG_DETECT_HUNG_TASK=y", "CONFIG_SOFTLOCKUP_DETECTOR=y"):
        assert sym + "\n" in body, sym
