# SPDX-License-Identifier: GPL-2.0
"""Shared fixtures: where the project, its scripts and its built rig live.

Tests marked `rig` need built kernels and the guest image (`make test` builds
them first); `make test-host` runs the others alone.
"""
import os
import subprocess
import sys

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "vm-images"))


def pytest_configure(config):
    config.addinivalue_line("markers", "rig: needs built kernels and image")


def run(cmd, **kw):
    return subprocess.run(cmd, cwd=TOP, capture_output=True, text=True, **kw)


@pytest.fixture(scope="session")
def top():
    return TOP


def kernel_dir(flavour, profile="default"):
    env = dict(os.environ, PROFILE=profile)
    r = run([os.path.join(TOP, "kernel-patch/scripts/kernel-path.sh"), flavour], env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def provenance(flavour):
    """A built flavour's provenance file, as a dict."""
    with open(os.path.join(kernel_dir(flavour), "provenance")) as f:
        return dict(l.rstrip("\n").split("=", 1) for l in f if "=" in l)


def series_exists(path):
    return os.path.isdir(path) and any(
        f.endswith(".patch") for f in os.listdir(path))


OPS_SERIES = os.path.join(TOP, "kernel-patch", "series")


@pytest.fixture(scope="session")
def flavours():
    """Flavours `make test` built: baseline, and ops once its series exists."""
    fl = ["baseline"]
    if series_exists(OPS_SERIES):
        fl.append("ops")
    return fl


@pytest.fixture(scope="session")
def image():
    r = run([os.path.join(TOP, "vm-images/build-rootfs.sh")])
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()
