# SPDX-License-Identifier: GPL-2.0
"""The cover letter: make cover-letter (kernel-patch/scripts/cover-letter.sh)
and its Performance section (analysis/cover_perf.py), run on a synthetic
run with known answers (tests/data/make-synthetic-run.py --plan walker),
and the letters in git.

Host only, nothing built or fetched: the "kernel source" is a small git
repository, the series two patches to it, the ops kernel's vmlinux an
object whose rseq_ops_apply is a loop of known size, all named by a fake
manifest. apt-get, apt-cache, apt, dpkg-deb and debootstrap are shadowed
on PATH by stubs that fail loudly: a stage after the build that reaches
back upstream fails here. Every letter is written into a temporary copy;
nothing in the tree changes.
"""
import hashlib
import os
import re
import shutil
import subprocess

import pytest

from conftest import TOP, default_signals

DATA = os.path.join(TOP, "tests", "data")
TEXT = os.path.join(TOP, "kernel-patch", "cover-letter.txt")
SERIES_0000 = os.path.join(TOP, "kernel-patch", "series",
                           "0000-cover-letter.patch")
# The letters in git: series v2's (kernel-patch/v2/, made from its own
# text), and the current series' once make cover-letter has written it.
LETTERS = {"v2": (os.path.join(TOP, "kernel-patch", "v2",
                               "0000-cover-letter.patch"),
                  os.path.join(TOP, "kernel-patch", "v2", "cover-letter.txt")),
           "series": (SERIES_0000, TEXT)}
RESIDENT = os.path.join(TOP, "kernel-patch", "resident",
                        "0000-cover-letter.txt")
COVER_SH = os.path.join(TOP, "kernel-patch", "scripts", "cover-letter.sh")
COVER_PERF = os.path.join(TOP, "analysis", "cover_perf.py")
PLACEHOLDER = re.compile(r"@[A-Z_]+@")
SRCVER = "7.2.13-1"
AUTHOR = "rseq-opbench developers <rseq-opbench@example.org>"

# The walker run's known answers (make-synthetic-run.py --plan walker).
SLOPE = 45.2                       # ops, per operation per walk
WALK_ADDED = {("64", "packed"): 45.2 * 64, ("2048", "packed"): 45.2 * 2048,
              ("64", "scattered"): 45.7 * 64,
              ("2048", "scattered"): 45.7 * 2048}
# ops at N against baseline at N = 0, per loop.
MISSION = {("switch", 0): 4455.0 - 4456.0,
           ("switch", 1): 4650.0 + 90.4 - 4456.0,
           ("switch", 2048): 4650.0 + 90.4 * 2048 - 4456.0,
           ("preempt", 0): 0.0, ("preempt", 1): 45.2,
           ("preempt", 2048): 45.2 * 2048}
LOOP_ROW = ("rseq_ops_apply  +0x2..+0x25             11      3        2"
            "          2")
COMPILER = "gcc (Debian 14.2.0-19) 14.2.0"


def sh(cmd, cwd, **kw):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                          check=True, **kw)


def git(cwd, *args):
    return sh(["git", "-c", "user.name=rseq-opbench developers",
               "-c", "user.email=rseq-opbench@example.org",
               "-c", "init.defaultBranch=debian"] + list(args), cwd).stdout


def no_network(d):
    """Stubs for every tool that fetches or unpacks: each call is
    recorded in d/CALLED and fails."""
    d.mkdir()
    for tool in ("apt-get", "apt-cache", "apt", "dpkg-deb", "debootstrap"):
        (d / tool).write_text("#!/bin/sh\necho \"$0 $*\" >> %s/CALLED\n"
                              "echo \"STUB: $0 called after the build\" >&2\n"
                              "exit 1\n" % d)
        (d / tool).chmod(0o755)
    return d


def fake_source(root):
    """A kernel source as kernel-source.sh leaves one: a git repository
    on branch debian, tagged debian-<version>, marked ready."""
    src = root / ("linux-source-" + SRCVER)
    (src / "kernel").mkdir(parents=True)
    (src / "kernel" / "rseq.c").write_text("int rseq_ops;\n")
    (src / "Makefile").write_text(
        "# a fake kernel tree: make config must reach no further\n"
        "tinyconfig:\n\t@echo FAKE-SOURCE-USED $(CURDIR) >&2; exit 1\n")
    git(src, "init", "-q", "-b", "debian")
    git(src, "add", "-A")
    git(src, "commit", "-q", "-m", "Debian linux-source-7.2 " + SRCVER)
    git(src, "tag", "debian-" + SRCVER)
    (src / ".git" / "rseq-opbench-version").write_text(SRCVER + "\n")
    (src / ".git" / "rseq-opbench-ready").write_text("")
    return src


@pytest.mark.parametrize("srcver,tag", [
    ("7.2.13-1", "debian-7.2.13-1"),
    # trixie-backports' 7.3: git refuses "~" in a ref (DEP-14 mangles it)
    ("7.3.4-1~bpo13+1", "debian-7.3.4-1_bpo13+1"),
    ("1:7.3..4-1", "debian-1%7.3.#.4-1"),
    ("1:7.3...4-1", "debian-1%7.3.#.#.4-1"),
    ("7.3.", "debian-7.3.#"),
    ("7.3.lock", "debian-7.3.lock#"),
])
def test_base_tag_is_a_valid_ref_for_every_debian_version(srcver, tag):
    """The pristine tree's tag, which kernel-source.sh makes and every
    build's worktree starts from, is a name git accepts for any Debian
    version, and one per version."""
    r = subprocess.run(["bash", "-c", '. scripts/common.sh && base_tag "$1"',
                        "-", srcver], cwd=TOP, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == tag + "\n", r
    ok = subprocess.run(["git", "check-ref-format", "refs/tags/" + tag])
    assert ok.returncode == 0, tag


def test_each_kernel_series_finds_its_own_source(tmp_path):
    """Two makes sharing the cache, one with KVER=7.3: each finds its own
    series' source in the manifest, whichever was fetched last; a
    manifest from before the per-series keys still gives its one source."""
    m = tmp_path / "manifest"
    m.write_text("source_dir=/c/src/linux-source-7.3.4-1~bpo13+1\n"
                 "source_dir/7.2=/c/src/linux-source-7.2.13-1\n"
                 "source_dir/7.3=/c/src/linux-source-7.3.4-1~bpo13+1\n"
                 "source_version=7.3.4-1~bpo13+1\n"
                 "source_version/7.2=7.2.13-1\n"
                 "source_version/7.3=7.3.4-1~bpo13+1\n")
    old = tmp_path / "old-manifest"
    old.write_text("source_version=7.2.13-1\n")
    only72 = tmp_path / "only-7.2"
    only72.write_text("source_version=7.2.13-1\nsource_version/7.2=7.2.13-1\n")

    def key(kver, manifest):
        r = subprocess.run(
            ["bash", "-c", '. scripts/common.sh && flavour_key kernel ops'],
            cwd=TOP, capture_output=True, text=True,
            env=dict(os.environ, KVER=kver, MANIFEST=str(manifest),
                     KCONFIG="default"))
        return r.stdout.strip() if r.returncode == 0 else r.stderr
    assert key("7.2", m) == "kernel/7.2.13-1/trixie/default/ops"
    assert key("7.3", m) == "kernel/7.3.4-1~bpo13+1/trixie/default/ops"
    assert key("7.2", old) == "kernel/7.2.13-1/trixie/default/ops"
    # A series never fetched is not the other one's.
    assert "no kernel source in the manifest" in key("7.3", only72)


def fake_series(root, src):
    """Two patches to the fake source, with a series file, and a stale
    0000 that make cover-letter must replace."""
    work = root / "work"
    sh(["git", "clone", "-q", str(src), str(work)], root)
    (work / "kernel" / "rseq.c").write_text("int rseq_ops;\nint rseq_op;\n")
    git(work, "commit", "-q", "-am", "rseq: Add an operation")
    (work / "Documentation").mkdir()
    (work / "Documentation" / "rseq.rst").write_text("RSEQ operations\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "Documentation: rseq: Document it")
    series = root / "series"
    series.mkdir()
    git(work, "format-patch", "-q", "-o", str(series), "HEAD~2")
    names = sorted(p.name for p in series.glob("*.patch"))
    (series / "series").write_text("# order\n" + "\n".join(names) + "\n")
    (series / "0000-cover-letter.patch").write_text("STALE\n")
    data = b"".join((series / n).read_bytes() for n in names)
    return series, hashlib.sha256(data).hexdigest()[:16]


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    """The walker run, the fake source, series, ops kernel and manifest,
    and an environment in which fetching fails."""
    root = tmp_path_factory.mktemp("cover")
    src = fake_source(root / "src")
    series, h = fake_series(root, src)
    run = root / "20261204T000000Z-walker"
    kdir = root / "kernels" / "ops"
    sh(["/usr/bin/python3", os.path.join(DATA, "make-synthetic-run.py"),
        str(run), "--plan", "walker", "--series-hash", h,
        "--kernel", str(kdir)], TOP)
    (root / "img").write_text("")
    manifest = root / "manifest"
    manifest.write_text(
        "image=%s\nkernel/%s/trixie/default/ops=%s\nsource_dir=%s\n"
        "source_version=%s\n" % (root / "img", SRCVER, kdir, src, SRCVER))
    stub = no_network(root / "no-network")
    (root / "cache").mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") and k not in (
               "PROFILE", "SUBJECT_PREFIX", "COVER_TEXT", "SERIES",
               "RESULTS", "MAKEFLAGS", "MAKELEVEL", "FLAVOURS", "PLAN")}
    env.update(CACHE_DIR=str(root / "cache"), MANIFEST=str(manifest),
               KCONFIG="default", TOOLCHAIN="trixie",
               PATH="%s:%s" % (stub, os.environ["PATH"]))
    return {"root": root, "run": str(run), "series": series, "env": env,
            "stub": stub, "src": src, "manifest": manifest, "kdir": kdir}


def called(rig):
    f = rig["stub"] / "CALLED"
    return f.read_text() if f.exists() else ""


def cover_letter(rig, series, **env):
    """cover-letter.sh on the walker run, writing into series."""
    return subprocess.run([COVER_SH, rig["run"], str(series)], cwd=TOP,
                          env=dict(rig["env"], **env), capture_output=True,
                          text=True)


def copy_series(rig, name):
    """A copy of the fake series with a stale 0000."""
    d = rig["root"] / name
    shutil.copytree(rig["series"], d)
    (d / "0000-cover-letter.patch").write_text("STALE\n")
    return d


@pytest.fixture(scope="module")
def letter(rig):
    """make cover-letter on the walker run, apt shadowed: the letter."""
    before = None
    if os.path.exists(SERIES_0000):
        with open(SERIES_0000, "rb") as f:
            before = f.read()
    r = subprocess.run(["make", "-s", "cover-letter", "RESULTS=" + rig["run"],
                        "SERIES=" + str(rig["series"])], cwd=TOP,
                       env=rig["env"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not called(rig), called(rig)
    if before is None:
        assert not os.path.exists(SERIES_0000), \
            "make cover-letter wrote into the tree"
    else:
        with open(SERIES_0000, "rb") as f:
            assert f.read() == before, "make cover-letter wrote into the tree"
    return (rig["series"] / "0000-cover-letter.patch").read_text()


def body_of(letter):
    """The letter's text between its headers and the shortlog."""
    head, body = letter.split("\n\n", 1)
    return body


def paragraphs(text_path):
    """cover-letter.txt's subject and its paragraphs, each with its
    placeholder (and the space that follows it) taken out."""
    with open(text_path) as f:
        lines = f.read().split("\n")
    body = "\n".join(lines[2:])
    paras = [PLACEHOLDER.sub("", p).strip(" ")
             for p in body.split("\n\n")]
    return lines, [p.strip("\n") for p in paras if p.strip()]


# Late stages never reach back -------------------------------------------

def test_make_cover_letter_reads_the_manifest(rig, letter):
    """make cover-letter takes the source and the ops kernel from the
    manifest: with apt and dpkg-deb failing it writes the letter (the
    fixture asserts no stub was called and the tree is unchanged), and
    the series' shortlog is git format-patch's on the fake source."""
    assert letter.startswith("From ")
    assert "From: " + AUTHOR in letter
    assert re.search(r"^Subject: \[PATCH RFC v4 0/2\] rseq: RSEQ operations",
                     letter, re.M)
    assert "rseq: Add an operation" in letter
    assert "Documentation: rseq: Document it" in letter
    assert "STALE" not in letter


def test_the_base_named_as_its_kind_allows(rig, letter, tmp_path):
    """Debian's package has no commit: the letter names the package and
    its version where format-patch would put base-commit. A git tree's
    commit (SOURCE=, kernel-source.sh) is given as base-commit:, the
    trailer b4 and the robots read."""
    tail = letter[letter.rindex("\n-- \n") - 200:]
    assert "\nBase: Debian linux-source-7.2 %s (a package: no " \
        "base-commit).\n\n-- \n" % SRCVER in tail, tail
    assert "base-commit:" not in letter
    # The same source as a git SOURCE's base: git-<commit>, tagged
    # base-git-<commit> (as kernel-source.sh leaves one).
    src = tmp_path / "git-src"
    shutil.copytree(rig["src"], src)
    base = git(src, "rev-parse", "HEAD").strip()
    ver = "git-" + base[:12]
    git(src, "tag", "base-" + ver)
    (src / ".git" / "rseq-opbench-version").write_text(ver + "\n")
    m = tmp_path / "manifest"
    m.write_text("".join(
        l + "\n" for l in rig["manifest"].read_text().splitlines()
        if not l.startswith("source_")) +
        "source_dir=%s\nsource_version=%s\n" % (src, ver))
    series = copy_series(rig, "series-git")
    r = cover_letter(rig, series, MANIFEST=str(m), CACHE_DIR=str(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    text = (series / "0000-cover-letter.patch").read_text()
    assert "\nbase-commit: %s\n" % base in text
    assert "Base: Debian" not in text


def test_cover_letter_without_source_in_the_manifest(rig, tmp_path):
    """A manifest without the source: refused, naming make source, and
    nothing fetched or written."""
    m = tmp_path / "manifest"
    m.write_text("".join(l + "\n" for l in rig["manifest"].read_text()
                         .splitlines() if not l.startswith("source_dir=")))
    series = copy_series(rig, "series-nosrc")
    r = subprocess.run(["make", "-s", "cover-letter", "RESULTS=" + rig["run"],
                        "SERIES=" + str(series)], cwd=TOP,
                       env=dict(rig["env"], MANIFEST=str(m)),
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "no kernel source in the manifest (%s): run make source" % m \
        in r.stderr, r.stderr
    assert not called(rig), called(rig)
    assert (series / "0000-cover-letter.patch").read_text() == "STALE\n"


def test_make_config_takes_the_source_from_the_manifest(rig, tmp_path):
    """make config consults apt once, through its prerequisite source,
    not again in its recipe; the recipe (source and deps not remade:
    -o) hands kernel-config.sh the manifest's tree, or names make source
    when the manifest has none."""
    r = subprocess.run(["make", "-n", "config"], cwd=TOP, env=rig["env"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("kernel-source.sh") == 1, r.stdout
    env = dict(rig["env"], TOOLCHAIN="host")
    r = subprocess.run(["make", "-s", "-o", "source", "-o", "deps", "config"],
                       cwd=TOP, env=env, capture_output=True, text=True)
    # The fake tree's Makefile refuses tinyconfig, naming itself.
    assert r.returncode != 0
    assert "FAKE-SOURCE-USED %s" % rig["src"] in r.stderr, r.stderr
    assert not called(rig), called(rig)
    m = tmp_path / "manifest"
    m.write_text("image=/nonexistent\n")
    r = subprocess.run(["make", "-s", "-o", "source", "-o", "deps", "config"],
                       cwd=TOP, env=dict(env, MANIFEST=str(m)),
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "config: no kernel source in the manifest (%s): run make source" \
        % m in r.stderr, r.stderr
    assert "FAKE-SOURCE-USED" not in r.stderr
    assert not called(rig), called(rig)


# The generated letter ---------------------------------------------------

def test_no_placeholder_left(letter):
    assert not PLACEHOLDER.findall(letter), PLACEHOLDER.findall(letter)
    assert "*** SUBJECT HERE ***" not in letter
    assert "*** BLURB HERE ***" not in letter


def test_walker_loop_table_is_the_vmlinux_one(rig, letter):
    """The walker's loop block: the compiler of the ops kernel, then
    walker_loops.py's table of its vmlinux (the known loop: head +0x2,
    11 instructions, 3 loads, 2 branches, stac and clac), which is the
    table bench-run.sh wrote into the run; then the prose that was reflowed
    onto the placeholder's line, as a paragraph of its own."""
    with open(os.path.join(rig["run"], "walker-loops", "ops.txt")) as f:
        table = "".join("  " + l for l in f)
    assert LOOP_ROW in table
    block = ("The loop of rseq_ops_apply() in this series' x86-64 vmlinux\n"
             "(%s), counted from its disassembly by\n"
             "rseq-opbench's analysis/walker_loops.py (every instruction "
             "from the\nloop's head to its back edge, taken or not):\n\n"
             "%s\n" % (COMPILER, table))
    assert block in letter
    after = letter[letter.index(block) + len(block):]
    with open(TEXT) as f:
        reflowed = re.search(r"@WALKLOOP@[ \t]*([^\n]*)", f.read()).group(1)
    # Prose on the placeholder's line starts the paragraph after it; one
    # blank line, never two, before the text's next paragraph.
    if reflowed:
        assert after.startswith(reflowed + "\n"), after[:200]
    assert not after.startswith("\n"), after[:200]


def test_letter_is_the_text(letter):
    """Subject, every paragraph of cover-letter.txt word for word (the
    placeholders taken out), 72 columns."""
    lines, paras = paragraphs(TEXT)
    assert lines[0] and not lines[0].startswith("[") and lines[1] == ""
    assert "] " + lines[0] + "\n" in letter
    for p in paras:
        assert p in letter, "not in the letter:\n" + p
    # The text, up to git format-patch's shortlog.
    body = body_of(letter).split("\n%s (" % AUTHOR.split(" <")[0])[0]
    assert all(len(l) <= 72 for l in body.splitlines())


def figures(section):
    """The Performance section's figures: {"slope": {bench: (v, lo, hi)},
    "walk": {(N, layout): (v, lo, hi)}, "cost": {(bench, N): (v, lo, hi)},
    "run": name}."""
    num = r"([+-]?[0-9.]+)"
    out = {"slope": {}, "walk": {}, "cost": {}}
    out["run"] = re.search(r"Measured with rseq-opbench, run (\S+);",
                           section).group(1)
    for m in re.finditer(r"^  (\w+) +(\d+) +%s  \[%s, %s\]" % (num, num, num),
                         section, re.M):
        out["cost"][(m.group(1), int(m.group(2)))] = tuple(
            float(x) for x in m.group(3, 4, 5))
    # Each slope names the N it was fitted over.
    for m in re.finditer(r"^  (switch|signal|preempt) +%s  \[%s, %s\] +"
                         r"N = \d+\.\.\d+$" % (num, num, num), section, re.M):
        out["slope"][m.group(1)] = tuple(float(x) for x in m.group(2, 3, 4))
    for m in re.finditer(r"^  N=(\d+), (packed|scattered) nodes[^+-]*"
                         r"%s\s+\[%s, %s\]" % (num, num, num), section, re.M):
        out["walk"][(m.group(1), m.group(2))] = tuple(
            float(x) for x in m.group(3, 4, 5))
    return out


def near(fig, want, tol):
    """The figure is the known answer: within tol of it, and its interval
    holds it."""
    v, lo, hi = fig
    return abs(v - want) <= tol and lo - tol <= want <= hi + tol


def check_walker_figures(section, run):
    f = figures(section)
    assert f["run"] == os.path.basename(run)
    assert set(f["slope"]) == {"switch", "preempt"}, section
    for bench, fig in f["slope"].items():
        assert near(fig, SLOPE, 0.05), (bench, fig)
    assert set(f["walk"]) == set(WALK_ADDED), section
    for key, fig in f["walk"].items():
        assert near(fig, WALK_ADDED[key], 1.0), (key, fig)
    for key, want in MISSION.items():
        assert near(f["cost"][key], want, 2.5), (key, f["cost"][key])


def test_letter_figures_are_the_runs(rig, letter):
    """The Performance section is cover_perf.py's output for the run, and
    its figures are the run's known answers: the slope per operation per
    walk 45.2 (90.4 per loop, two walks), the walk added to a preemption
    45.2 x N packed and 45.7 x N scattered, ops against baseline."""
    r = subprocess.run(["/usr/bin/python3", COVER_PERF, rig["run"]],
                       capture_output=True, text=True, check=True)
    assert r.stdout in letter
    start = letter.index("Performance\n===========\n")
    check_walker_figures(letter[start:start + len(r.stdout)], rig["run"])


# The generator's own checks ---------------------------------------------

def text_variant(rig, name, change):
    with open(TEXT) as f:
        text = f.read()
    p = rig["root"] / name
    p.write_text(change(text))
    return str(p)


def test_placeholder_nothing_fills_is_refused(rig):
    """A placeholder left in the letter (one nothing fills) fails the
    script, and the series' 0000 stays as it was."""
    t = text_variant(rig, "typo.txt", lambda s: s.replace(
        "The ABI question", "@WALK_LOOP@ The ABI question", 1))
    series = copy_series(rig, "series-typo")
    r = cover_letter(rig, series, COVER_TEXT=t)
    assert r.returncode != 0
    assert "placeholders left in the letter: @WALK_LOOP@" in r.stderr, \
        r.stderr
    assert (series / "0000-cover-letter.patch").read_text() == "STALE\n"
    assert not called(rig)


def after_walkloop():
    """The first line of cover-letter.txt after @WALKLOOP@'s paragraph."""
    with open(TEXT) as f:
        rest = f.read().split("@WALKLOOP@", 1)[1].lstrip(" \n")
    return rest.split("\n", 1)[0]


@pytest.mark.parametrize("where", ["own line", "prose after", "prose before"])
def test_placeholder_reflowed_is_filled(rig, where):
    """@WALKLOOP@ alone on its line, with prose reflowed after it, or
    with prose before it: the table is put in whole, as a paragraph of
    its own, and the prose around it kept."""
    def change(s):
        s = re.sub(r"@WALKLOOP@[ \t]*\n?", "@WALKLOOP@\n", s)
        if where == "prose after":
            s = s.replace("@WALKLOOP@\n", "@WALKLOOP@ Reflowed here.\n")
        elif where == "prose before":
            s = s.replace("@WALKLOOP@\n", "Said before: @WALKLOOP@\n")
        return s
    t = text_variant(rig, "variant.txt", change)
    series = copy_series(rig, "series-" + where.replace(" ", "-"))
    r = cover_letter(rig, series, COVER_TEXT=t)
    assert r.returncode == 0, r.stderr[-2000:]
    out = (series / "0000-cover-letter.patch").read_text()
    assert not PLACEHOLDER.findall(out)
    table = "  " + LOOP_ROW + "\n\n"
    assert out.count(table) == 1
    after = out[out.index(table) + len(table):]
    nxt = after_walkloop()
    want = {"own line": nxt,
            "prose after": "Reflowed here.\n\n" + nxt,
            "prose before": nxt}[where]
    assert after.startswith(want), after[:100]
    if where == "prose before":
        assert "Said before:\n\nThe loop of rseq_ops_apply()" in out


@pytest.mark.parametrize("group", [True, False], ids=["SIGINT to the group",
                                                    "SIGTERM to the script"])
def test_killed_cover_letter_changes_nothing(rig, tmp_path, group):
    """cover-letter.sh killed half-way (while cover_perf.py runs): the
    series' 0000 is as it was, and no temporary file is left."""
    import signal
    import time
    ready = tmp_path / "ready"
    slow = tmp_path / "python"
    slow.write_text("#!/bin/sh\ncase \"$1\" in *cover_perf.py) : > %s; "
                    "exec sleep 120 ;; esac\nexec /usr/bin/python3 \"$@\"\n"
                    % ready)
    slow.chmod(0o755)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    series = copy_series(rig, "series-killed-%s" % group)
    p = subprocess.Popen([COVER_SH, rig["run"], str(series)], cwd=TOP,
                         env=dict(rig["env"], PYTHON=str(slow),
                                  TMPDIR=str(tmp)),
                         stderr=subprocess.PIPE, text=True,
                         start_new_session=True, preexec_fn=default_signals)
    try:
        t = time.time()
        while not ready.exists():
            assert p.poll() is None, p.stderr.read()
            assert time.time() - t < 60, "cover_perf.py never started"
            time.sleep(0.05)
        if group:
            os.killpg(p.pid, signal.SIGINT)
        else:
            p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert p.returncode != 0
    assert (series / "0000-cover-letter.patch").read_text() == "STALE\n"
    assert list(tmp.iterdir()) == []


# cover_perf.py alone -----------------------------------------------------

def test_cover_perf_known_answers(rig):
    """cover_perf.py on the walker run: the unit said, 72 columns, the
    figures the run's known answers."""
    r = subprocess.run(["/usr/bin/python3", COVER_PERF, rig["run"]],
                       capture_output=True, text=True, check=True)
    text = r.stdout
    assert text.startswith("Performance\n===========\n")
    words = " ".join(text.split())
    assert "not time" in words and "unit: instructions" in words
    assert all(len(line) <= 72 for line in text.splitlines())
    check_walker_figures(text, rig["run"])
    # The designs beside ops, each with its ratio to ops's slope: the
    # run's rfc walks 60.0 per operation, the variant 6.0, ops 45.2.
    assert "The same walk in each design" in words
    rows = {m.group(1, 2): (float(m.group(3)), m.group(4)) for m in
            re.finditer(r"^  (switch|preempt) +(ops|rfc|resident) +"
                        r"([0-9.]+)  \[[^]]+\] *([0-9.]*)"
                        r"(?: \[[0-9.]+, [0-9.]+\]| \(exact\))?$",
                        text, re.M)}
    assert set(rows) == {(b, fl) for b in ("switch", "preempt")
                         for fl in ("ops", "rfc", "resident")}, text
    for b in ("switch", "preempt"):
        assert abs(rows[(b, "rfc")][0] - 60.0) < 0.05
        assert abs(float(rows[(b, "rfc")][1]) - 60.0 / 45.2) < 0.01
        assert abs(float(rows[(b, "resident")][1]) - 6.0 / 45.2) < 0.01
        assert rows[(b, "ops")][1] == ""


def test_cover_perf_plain_run(tmp_path):
    """On the default synthetic run (no preempt): switch's slope 45.2 per
    operation per walk, no preemption rows; a missing run refused."""
    d = tmp_path / "synthetic"
    sh(["/usr/bin/python3", os.path.join(DATA, "make-synthetic-run.py"),
        str(d)], TOP)
    r = subprocess.run(["/usr/bin/python3", COVER_PERF, str(d)],
                       capture_output=True, text=True, check=True)
    f = figures(r.stdout)
    assert set(f["slope"]) == {"switch"} and not f["walk"]
    assert near(f["slope"]["switch"], SLOPE, 0.05), f["slope"]
    assert near(f["cost"][("switch", 1)], 4650 + 90.4 - 4456, 2.5)
    bad = subprocess.run(["/usr/bin/python3", COVER_PERF,
                          str(tmp_path / "nothing")],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "cover_perf:" in bad.stderr


# The letters in git -----------------------------------------------------

def committed_letters():
    """The letters in git: v2's always, the current series' when made."""
    assert os.path.exists(LETTERS["v2"][0]), "series v2's letter is gone"
    return [k for k, (path, _) in sorted(LETTERS.items())
            if os.path.exists(path)]


@pytest.mark.parametrize("which", committed_letters())
def test_committed_letter_is_complete(which):
    """A 0000-cover-letter.patch in git, made by make cover-letter: no
    placeholder left, its text's subject and every paragraph in it, a
    Performance section naming its run, in instructions, and the walker's
    loop table. (Its figures are checked against the run by the
    generator's tests above: the run itself is not in git.)"""
    path, text = LETTERS[which]
    with open(path) as f:
        cover = f.read()
    left = [(i, l) for i, l in enumerate(cover.splitlines(), 1)
            if PLACEHOLDER.search(l)]
    assert not left, "placeholders left in %s: %s" % (path, left)
    lines, paras = paragraphs(text)
    assert "] " + lines[0] + "\n" in cover
    for p in paras:
        assert p in cover, "0000 was not made from cover-letter.txt:\n" + p
    start = cover.index("Performance\n===========\n")
    assert re.search(r"Measured with rseq-opbench, run (\S+);",
                     cover[start:])
    assert "not time" in cover[start:start + 2000]
    assert "The loop of rseq_ops_apply() in this series' x86-64 vmlinux" \
        in cover
    assert re.search(r"^  rseq_ops_apply +\+0x[0-9a-f]+\.\.\+0x[0-9a-f]+ ",
                     cover, re.M), "no walker loop table in the letter"


def test_text_and_resident_letter_have_no_stray_placeholder():
    """cover-letter.txt names each generated part once and no other
    placeholder; the resident variant's letter (written by hand) has
    none at all; both in 72 columns."""
    with open(TEXT) as f:
        text = f.read()
    assert sorted(PLACEHOLDER.findall(text)) == ["@PERF@", "@WALKLOOP@"]
    assert all(len(l) <= 72 for l in text.split("\n"))
    with open(RESIDENT) as f:
        res = f.read()
    assert not PLACEHOLDER.findall(res), PLACEHOLDER.findall(res)
    assert all(len(l) <= 72 for l in res.split("\n"))


def test_cover_perf_refuses_an_incomplete_run(tmp_path):
    """A letter's figures come from a complete run: cover_perf.py refuses
    one that holds INCOMPLETE, naming it."""
    d = tmp_path / "run"
    subprocess.run(["/usr/bin/python3", os.path.join(DATA,
                    "make-synthetic-run.py"), str(d)], check=True)
    (d / "INCOMPLETE").write_text("started=x\ninterrupted=SIGINT during "
                                  "the tracing, y\n")
    r = subprocess.run(["/usr/bin/python3", os.path.join(
        TOP, "analysis", "cover_perf.py"), str(d)], capture_output=True,
        text=True)
    assert r.returncode != 0 and "is incomplete" in r.stderr, r.stderr
    assert r.stdout == ""
