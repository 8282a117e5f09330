# SPDX-License-Identifier: GPL-2.0
"""A Linux git tree as the kernel source (issue 48): SOURCE=<its top>
[BASE=<commit>] fetches BASE's tree into the cache and exports the commits
after it as the series of the flavour "tree"; bad input is refused with
the fix; the user's tree is read, never written. Host tests on a small
stand-in of a kernel tree (the files kernel-source.sh checks), no build."""
import hashlib
import os
import subprocess

import pytest

from conftest import TOP

SRC = os.path.join(TOP, "kernel-patch", "scripts", "kernel-source.sh")


def git(d, *args):
    return subprocess.run(["git", "-C", str(d), "-c", "user.name=t",
                           "-c", "user.email=t@t"] + list(args),
                          capture_output=True, text=True, check=True).stdout


def kernel_tree(d, commits=2):
    """A git repository with what kernel-source.sh takes for a kernel
    tree, a base commit tagged v7.2 and COMMITS after it."""
    d.mkdir()
    git(d, "init", "-q", "-b", "master")
    (d / "Makefile").write_text("VERSION = 7\nPATCHLEVEL = 2\nSUBLEVEL = 0\n")
    (d / "Kconfig").write_text("mainmenu \"Linux\"\n")
    (d / "kernel").mkdir()
    (d / "kernel" / "rseq.c").write_text("int rseq;\n")
    git(d, "add", "-A")
    git(d, "commit", "-q", "-m", "base")
    git(d, "tag", "-a", "-m", "v7.2", "v7.2")
    for i in range(commits):
        (d / "kernel" / "rseq.c").write_text("int rseq = %d;\n" % (i + 1))
        git(d, "commit", "-q", "-am", "rseq: change %d" % (i + 1))
    return d


def state(d):
    """Every file of the tree and of its .git, with its content's hash and
    mtime: what a read leaves alone."""
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[p] = (hashlib.sha256(fh.read()).hexdigest(),
                          os.stat(p).st_mtime_ns)
    return out


def source(tmp_path, **env):
    e = dict(os.environ, CACHE_DIR=str(tmp_path / "cache"),
             MANIFEST=str(tmp_path / "cache" / "manifest"), **env)
    for k in ("BASE", "ALLOW_DIRTY"):
        if k not in env:
            e.pop(k, None)
    return subprocess.run([SRC], env=e, capture_output=True, text=True,
                          cwd=TOP)


def manifest(tmp_path):
    with open(tmp_path / "cache" / "manifest") as f:
        return dict(l.rstrip("\n").split("=", 1) for l in f)


def test_a_git_tree_as_the_source(tmp_path):
    t = kernel_tree(tmp_path / "linux")
    before = state(t)
    r = source(tmp_path, SOURCE=str(t), BASE="v7.2")
    assert r.returncode == 0, r.stderr
    base = git(t, "rev-parse", "v7.2^{commit}").strip()
    head = git(t, "rev-parse", "HEAD").strip()
    src = r.stdout.strip()
    assert src == str(tmp_path / "cache" / "src" / ("git-" + base[:12]))
    m = manifest(tmp_path)
    assert m["source_version/git"] == "git-" + base[:12]
    series = m["source_series/git"]
    assert series.endswith("git-%s.series/%s" % (base[:12], head[:12]))
    assert sorted(os.listdir(series)) == [
        ".done", "0001-rseq-change-1.patch", "0002-rseq-change-2.patch"]
    # BASE's tree, tagged where the builds look for it.
    assert git(src, "rev-parse", "base-git-%s^{commit}" % base[:12]).strip() \
        == base
    with open(os.path.join(src, "kernel", "rseq.c")) as f:
        assert f.read() == "int rseq;\n"
    with open(os.path.join(src, ".git", "rseq-opbench-source")) as f:
        prov = dict(l.rstrip("\n").split("=", 1) for l in f)
    assert prov["source_base"] == base and prov["source_head"] == head
    assert prov["source_describe"] == "v7.2-2-g" + head[:12]
    assert prov["source_commits"] == "2"
    assert prov["source_dirty_diff"] == "none"
    # The user's tree and its .git: not a byte, not a timestamp changed.
    assert state(t) == before
    # The flavour "tree" takes that series; the baseline is BASE.
    r = subprocess.run(["bash", "-c", ". scripts/common.sh; flavour_series "
                        "tree; base_tag git-%s" % base[:12]], cwd=TOP,
                       env=dict(os.environ, SOURCE=str(t),
                                MANIFEST=str(tmp_path / "cache" / "manifest")),
                       capture_output=True, text=True)
    assert r.stdout.split() == [series, "base-git-" + base[:12]], r.stderr
    # Once more: nothing fetched again.
    r = source(tmp_path, SOURCE=str(t), BASE="v7.2")
    assert r.returncode == 0 and "fetching" not in r.stderr, r.stderr


def test_default_base_is_the_upstream_merge_base_or_head(tmp_path):
    up = kernel_tree(tmp_path / "up", commits=0)
    t = tmp_path / "linux"
    subprocess.run(["git", "clone", "-q", str(up), str(t)], check=True)
    (t / "kernel" / "rseq.c").write_text("int rseq = 9;\n")
    git(t, "commit", "-q", "-am", "rseq: mine")
    r = source(tmp_path, SOURCE=str(t))
    assert r.returncode == 0, r.stderr
    base = git(up, "rev-parse", "HEAD").strip()
    assert manifest(tmp_path)["source_version/git"] == "git-" + base[:12]
    # Without an upstream: HEAD, and no commit after it, so no series.
    t2 = kernel_tree(tmp_path / "solo", commits=1)
    r = source(tmp_path, SOURCE=str(t2))
    assert r.returncode == 0, r.stderr
    assert manifest(tmp_path)["source_series/git"] == ""


@pytest.mark.parametrize("case, want", [
    ("missing", "does not exist: name the top of a Linux git tree"),
    ("plain", "is not a git tree"),
    ("sub", "not its top: SOURCE="),
    ("notkernel", "is not a Linux kernel tree"),
    ("badbase", "BASE=nosuch is not a commit of"),
    ("notancestor", "is not an ancestor of"),
    ("dirty", "has uncommitted changes in 1 file(s)"),
    ("merge", "merge(s) between BASE and HEAD"),
])
def test_bad_sources_refused(tmp_path, case, want):
    env = {"SOURCE": str(tmp_path / "linux")}
    if case == "missing":
        env["SOURCE"] = str(tmp_path / "nowhere")
    elif case == "plain":
        (tmp_path / "linux").mkdir()
    elif case == "sub":
        kernel_tree(tmp_path / "linux")
        env["SOURCE"] = str(tmp_path / "linux" / "kernel")
    elif case == "notkernel":
        d = tmp_path / "linux"
        d.mkdir()
        git(d, "init", "-q")
        (d / "README").write_text("x\n")
        git(d, "add", "-A")
        git(d, "commit", "-q", "-m", "x")
    else:
        t = kernel_tree(tmp_path / "linux")
        if case == "badbase":
            env["BASE"] = "nosuch"
        elif case == "notancestor":
            git(t, "checkout", "-q", "-b", "side", "v7.2")
            (t / "Kconfig").write_text("side\n")
            git(t, "commit", "-q", "-am", "side")
            env["BASE"] = "side"
            git(t, "checkout", "-q", "master")
        elif case == "dirty":
            (t / "Kconfig").write_text("edited\n")
            env["BASE"] = "v7.2"
        elif case == "merge":
            git(t, "checkout", "-q", "-b", "side", "v7.2")
            (t / "Kconfig").write_text("side\n")
            git(t, "commit", "-q", "-am", "side")
            git(t, "checkout", "-q", "master")
            git(t, "merge", "-q", "--no-edit", "side")
            env["BASE"] = "v7.2"
    before = state(tmp_path / "linux") if (tmp_path / "linux").exists() else {}
    r = source(tmp_path, **env)
    assert r.returncode != 0 and want in r.stderr, r.stderr
    assert not (tmp_path / "cache" / "src").exists()
    if before:
        assert state(tmp_path / "linux") == before


def test_a_dirty_tree_with_allow_dirty_records_its_diff(tmp_path):
    t = kernel_tree(tmp_path / "linux")
    (t / "Kconfig").write_text("edited\n")
    before = state(t)
    r = source(tmp_path, SOURCE=str(t), BASE="v7.2", ALLOW_DIRTY="1")
    assert r.returncode == 0, r.stderr
    assert "uncommitted changes, not built" in r.stderr
    with open(os.path.join(r.stdout.strip(), ".git",
                           "rseq-opbench-source")) as f:
        prov = dict(l.rstrip("\n").split("=", 1) for l in f)
    want = hashlib.sha256(git(t, "diff", "HEAD").encode()).hexdigest()[:16]
    assert prov["source_dirty_diff"] == want
    assert state(t) == before


def test_the_tree_flavour_needs_a_git_source(tmp_path):
    r = subprocess.run([os.path.join(TOP, "kernel-patch/scripts/kernel-build.sh"),
                        "--check", "tree"], cwd=TOP, capture_output=True,
                       text=True, env=dict(os.environ, SOURCE="",
                                           MANIFEST=str(tmp_path / "m")))
    assert r.returncode != 0
    assert "flavour 'tree' is the commits of a git SOURCE after its BASE: " \
        "make kernels SOURCE=<the top of a Linux git tree>" in r.stderr


def test_reports_name_the_source():
    """The report's header and the cover letter's performance section
    name a git source by tree, base, head and describe, and say when
    uncommitted changes were left out; Debian's by package and version."""
    import sys
    sys.path.insert(0, os.path.join(TOP, "analysis"))
    import report_core
    assert report_core.source_line({"source_package": "linux-source-7.2",
                                    "source_version": "7.2.13-1"}) == \
        "linux-source-7.2 7.2.13-1"
    k = {"source_kind": "git", "source_tree": "/home/me/linux",
         "source_base": "a" * 40, "source_head": "b" * 40,
         "source_describe": "v7.2-3-gbbbbbbbbbbbb",
         "source_dirty_diff": "none"}
    assert report_core.source_line(k) == (
        "git tree /home/me/linux, base aaaaaaaaaaaa, head bbbbbbbbbbbb "
        "(v7.2-3-gbbbbbbbbbbbb)")
    k["source_dirty_diff"] = "0123456789abcdef"
    assert report_core.source_line(k).endswith(
        "; uncommitted changes not built (diff 0123456789abcdef)")
