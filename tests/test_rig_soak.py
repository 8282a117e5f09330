# SPDX-License-Identifier: GPL-2.0
"""scripts/rig-soak (host): a soak ended by SIGTERM, as ^C ends it, stops
its CPU hog; none is left spinning."""
import os
import signal
import subprocess
import time

from conftest import TOP

SOAK = os.path.join(TOP, "scripts", "rig-soak")


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        if int(st.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(d))
    return out


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_sigterm_stops_the_hog(tmp_path):
    p = subprocess.Popen([SOAK, "--rounds", "50", "--k",
                          "no_test_has_this_name", "--out",
                          str(tmp_path / "soak")],
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
        assert "a busy loop on host CPU" in line, line
        hogs = []
        deadline = time.time() + 30
        while not hogs and time.time() < deadline:
            hogs = [c for c in children(p.pid)
                    if b"while :" in open("/proc/%d/cmdline" % c,
                                          "rb").read()]
            time.sleep(0.1)
        assert hogs, "no busy loop among the soak's children"
        p.send_signal(signal.SIGTERM)
        rest = p.communicate(timeout=120)[1]
        assert "interrupted after" in rest, rest
        deadline = time.time() + 10
        while any(alive(h) for h in hogs) and time.time() < deadline:
            time.sleep(0.1)
        assert not any(alive(h) for h in hogs), "the busy loop outlived the soak"
    finally:
        if p.poll() is None:
            p.kill()
