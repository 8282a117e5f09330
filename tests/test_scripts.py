# SPDX-License-Identifier: GPL-2.0
"""Every shell script of the tree parses (bash -n): a script that only
runs in a rig stage would otherwise break there first."""
import subprocess

import pytest

from conftest import TOP, run


def shell_scripts():
    files = run(["git", "ls-files"]).stdout.split()
    out = []
    for f in files:
        with open("%s/%s" % (TOP, f), "rb") as fh:
            first = fh.readline()
        if f.endswith(".sh") or first.startswith(b"#!/bin/bash") or \
                first.startswith(b"#!/bin/sh"):
            out.append(f)
    return out


def test_scripts_found():
    s = shell_scripts()
    assert "tracing/trace.sh" in s and "scripts/offline" in s
    assert "vm-images/guest-run" in s


@pytest.mark.parametrize("script", shell_scripts())
def test_script_parses(script):
    r = subprocess.run(["bash", "-n", script], cwd=TOP, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
