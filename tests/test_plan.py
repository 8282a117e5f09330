# SPDX-License-Identifier: GPL-2.0
"""microbench/plan.py: the plan's only reader, the boots' only shuffle, the
only parser of a benchmark word; and the run index it writes, as the
analysis reads it back."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import TOP, bench_env

sys.path.insert(0, os.path.join(TOP, "analysis"))
import opbench_data  # noqa: E402
import opbench_io  # noqa: E402

PY = "/usr/bin/python3"
PLAN = os.path.join(TOP, "microbench", "plan.py")


@pytest.fixture(scope="module", autouse=True)
def bench_table(tmp_path_factory):
    """opbench's own table (opbench --list --json), from opbench built on
    this host: what the planner looks each benchmark up in."""
    global BENCHES
    out = tmp_path_factory.mktemp("opbench")
    r = subprocess.run(["make", "-s", "-C", os.path.join(TOP, "microbench"),
                        "O=%s" % out, "%s/opbench" % out],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    BENCHES = str(out / "benches.json")
    with open(BENCHES, "w") as f:
        r = subprocess.run([str(out / "opbench"), "--list", "--json"],
                           stdout=f, text=True)
    assert r.returncode == 0


def plan(*args, **env):
    # bench_env() clears the plan's variables; the test's go on top.
    args = list(args)
    if args[0] in ("cells", "index") and "--benches" not in args:
        args += ["--benches", env.pop("_benches", BENCHES)]
    return subprocess.run([PY, PLAN] + args, env=dict(bench_env(), **env),
                          capture_output=True, text=True)


def index(out, seed, plan_name="quick", **env):
    out.mkdir(exist_ok=True)
    return plan("index", plan_name, str(out), "--seed", str(seed), **env)


def test_environment_wins_over_the_plan_even_empty():
    r = plan("sh", "walker", FLAVOURS="ops", LATENCY="")
    assert r.returncode == 0, r.stderr
    lines = dict(ln.split("=", 1) for ln in r.stdout.splitlines())
    assert lines["FLAVOURS"] == "ops" and lines["LATENCY"] == "''"
    assert lines["SWEEP"] == "0,powers"
    r = plan("make", "walker")
    assert r.stdout.strip() == \
        "PLAN_FLAVOURS := baseline ops ops-v3 v2 rfc bpf min ;; PLAN_LATENCY := ops v2"


def test_words_become_cells():
    r = plan("cells", "quick", SWEEP="0,1", TYPES="null cpu",
             BENCHES="switch preempt:scattered@0,64 syscall:glibc@0 "
                     "preempt:waker-ops tcmalloc")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "switch switch 0,1 null any", "switch switch 0,1 cpu any",
        "preempt:scattered@0,64 preempt 0,64 null alone --layout scattered",
        "preempt:scattered@0,64 preempt 0,64 cpu alone --layout scattered",
        "syscall:glibc@0 syscall 0 null any --reg glibc",
        "syscall:glibc@0 syscall 0 cpu any --reg glibc",
        "preempt:waker-ops preempt 0,1 null alone --waker-ops",
        "preempt:waker-ops preempt 0,1 cpu alone --waker-ops",
        "tcmalloc tcmalloc - - any"]


@pytest.mark.parametrize("env, msg", [
    ({"BENCHES": "switch:bogus"}, "unknown variant 'bogus'"),
    ({"BENCHES": "switch@0,4096"}, "from 0 to 2048"),
    ({"SWEEP": "0,x"}, "SWEEP='0,x'"),
    ({"BENCHES": ""}, "BENCHES is empty"),
    ({"BOOTS": "0"}, "BOOTS='0': want a number of boots per flavour"),
    ({"LOOPS": "many"}, "LOOPS='many'"),
    ({"OPS": "3"}, "OPS is the N of one traced run"),
    ({"BENCHES": "nosuch@0"}, "opbench has no benchmark 'nosuch'"),
])
def test_bad_plans_refused(env, msg):
    r = plan("cells", "quick", **env)
    assert r.returncode == 2 and msg in r.stderr, r.stderr
    assert r.stdout == ""


def test_unknown_plan_named_with_the_known_ones():
    r = plan("sh", "nosuch")
    assert r.returncode == 2
    assert "PLAN='nosuch' is unknown; use one of: aa default quick walker" \
        in r.stderr


def test_index_rounds_seeds_and_cells(tmp_path):
    r = index(tmp_path / "run", 7, FLAVOURS="baseline ops v2", BOOTS="3")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "run"
    boots = [json.loads(x) for x in (out / "boots.jsonl").read_text()
             .splitlines()]
    run = json.loads((out / "run.json").read_text())
    assert run["seed"] == 7 and run["flavours"] == ["baseline", "ops", "v2"]
    assert run["irqs_off_max"] == int(plan("fact", "irqs_off_max").stdout)
    assert run["list_limit"] == int(plan("fact", "list_limit").stdout)
    assert [b["boot"] for b in boots] == list(range(1, 10))
    for rnd in range(3):
        got = sorted(b["flavour"] for b in boots if b["round"] == rnd)
        assert got == ["baseline", "ops", "v2"]
    assert [b["seed"] for b in boots] == [7 + i for i in range(1, 10)]
    # What bench-run.sh reads: one line per boot, in order.
    table = [ln.split() for ln in r.stdout.splitlines()]
    assert [(int(t[0]), t[1], int(t[2])) for t in table] == \
        [(b["boot"], b["flavour"], b["seed"]) for b in boots]
    planned = sorted(run["cells"])
    for b in boots:
        assert b["dir"] == "boot-%d-%s" % (b["boot"], b["flavour"])
        cells = (out / b["cells"]).read_text().splitlines()
        assert sorted(cells) == planned
    # The same seed gives the same index; the seeds draw different ones.
    def drawn(d, seed):
        t = index(tmp_path / d, seed, FLAVOURS="baseline ops v2", BOOTS="3")
        return tuple((ln.split()[1], open(ln.split()[3]).read())
                     for ln in t.stdout.splitlines())
    assert drawn("again", 7) == drawn("run7", 7)
    assert len({drawn("s%d" % s, s) for s in range(1, 9)}) > 1


def test_index_never_overwrites(tmp_path):
    assert index(tmp_path / "run", 3).returncode == 0
    before = (tmp_path / "run" / "boots.jsonl").read_text()
    r = index(tmp_path / "run", 4)
    assert r.returncode != 0
    assert (tmp_path / "run" / "boots.jsonl").read_text() == before


def test_loader_reads_the_index(tmp_path):
    """The analysis takes each boot's round from the index, and a planned
    boot that left no directory is listed as not run."""
    out = tmp_path / "run"
    assert index(out, 5, FLAVOURS="baseline ops", BOOTS="2").returncode == 0
    boots = [json.loads(x) for x in (out / "boots.jsonl").read_text()
             .splitlines()]
    rec = {"kind": "sample", "bench": "syscall", "nr_ops": 0}
    for b in boots[:-1]:
        (out / b["dir"]).mkdir()
        (out / b["dir"] / "opbench.json").write_text(json.dumps(rec) + "\n")
    # A directory the index does not name is not a boot of the run.
    (out / "boot-99-ops").mkdir()
    (out / "boot-99-ops" / "opbench.json").write_text(json.dumps(rec) + "\n")
    run = opbench_io.load(str(out))
    assert [b["index"] for b in run["boots"]] == [1, 2, 3]
    assert run["not_run"] == [boots[-1]["dir"]]
    assert run["index"]["seed"] == 5
    assert opbench_data.rounds_of(run) == {b["boot"]: b["round"]
                                           for b in boots[:-1]}
    (out / "boots.jsonl").write_text('{"boot": 1}\n')
    with pytest.raises(opbench_io.ResultsError, match="not written by"):
        opbench_io.load(str(out))


# The flavours' declarations (kernel-patch/flavours/) -------------------------

def test_declarations_read_alike_by_shell_and_planner(tmp_path):
    """common.sh's flavour_get and the index's copy (plan.py) agree on every
    key of every declared flavour."""
    out = tmp_path / "run"
    assert index(out, 1).returncode == 0
    decls = json.loads((out / "run.json").read_text())["flavour_decls"]
    assert {"baseline", "ops", "control", "ops-v3", "v2", "rfc", "resident",
            "bpf"} <= set(decls)
    # One list of keys: the shell's (common.sh) is the planner's.
    r = subprocess.run(["bash", "-c", '. scripts/common.sh; echo $FLAVOUR_KEYS'],
                       cwd=TOP, capture_output=True, text=True)
    keys = r.stdout.split()
    sys.path.insert(0, os.path.join(TOP, "microbench"))
    import plan as plan_py
    assert tuple(keys) == plan_py.FLAVOUR_KEYS
    script = "; ".join(
        'echo "%s %s=$(flavour_get %s %s)"' % (f, k, f, k)
        for f in sorted(decls) for k in keys)
    r = subprocess.run(["bash", "-c", ". scripts/common.sh; " + script],
                       cwd=TOP, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for ln in r.stdout.splitlines():
        f, kv = ln.split(" ", 1)
        k, v = kv.split("=", 1)
        assert str(decls[f].get(k.lower(), "")) == v, ln
    # Every series a declaration names exists (@source: a git SOURCE's
    # own commits, exported when there is one).
    for f, d in decls.items():
        if d.get("series") and d["series"] != "@source":
            assert os.path.exists(os.path.join(TOP, d["series"])), f


def test_a_flavour_declared_is_a_design_by_its_rank():
    import designs
    decls = {"ops": {"design": 1, "label": "ours", "colour": "tab:blue"},
             "mine": {"design": 7, "label": "a throwaway design",
                      "colour": "tab:olive"},
             "v2": {"design": 3, "label": "v2's"},
             "baseline": {"label": "unpatched"}}
    names, colours = designs.designs_of(decls)
    assert names == (("ops", "ours"), ("v2", "v2's"),
                     ("mine", "a throwaway design"))
    assert colours == {"ops": "tab:blue", "mine": "tab:olive"}
    # A run made before the index keeps the names it was reported with.
    assert designs.designs_of(None)[0][0] == \
        ("ops", "series v3, kept in the kernel")


# The artefacts a run's stages leave (artefacts.jsonl) -------------------------

def _walk_count_dir(d, bench, walks):
    (d / "ops").mkdir(parents=True)
    (d / "ops" / "rseq_ops_rate.bt.out").write_text(
        "@walks[%s]: %d\n" % (bench, walks))
    (d / "ops" / "opbench.json").write_text(json.dumps(
        {"kind": "sample", "bench": bench, "nr_ops": 64, "loops": 100,
         "warmup": 1}) + "\n")


def test_loader_reads_what_the_artefacts_name(tmp_path):
    """A run with an index reads its tracing, latency and walker loops from
    the paths artefacts.jsonl names, never a directory found by name."""
    out = tmp_path / "run"
    assert index(out, 5, FLAVOURS="baseline ops", BOOTS="1").returncode == 0
    rec = {"kind": "sample", "bench": "syscall", "nr_ops": 0}
    for b in (out / "boots.jsonl").read_text().splitlines():
        d = out / json.loads(b)["dir"]
        d.mkdir()
        (d / "opbench.json").write_text(json.dumps(rec) + "\n")
    named = out / "tracing" / "20261207T000000Z-trace-bpf-ops-x"
    _walk_count_dir(named, "switch", 200)
    # Found by the old glob, named by no artefact: not read.
    _walk_count_dir(out / "tracing" / "20261207T000001Z-trace-bpf-ops-"
                    "rseq_ops_rate-signal-64", "signal", 100)
    (out / "walker-loops").mkdir()
    (out / "walker-loops" / "ops.txt").write_text(
        "rseq_ops_apply +0x10..+0x40 12 3 2 0\n")
    (out / "walker-loops" / "v2.txt").write_text(
        "rseq_apply_ops +0x10..+0x40 20 5 3 0\n")
    (out / "artefacts.jsonl").write_text(
        '{"kind": "walk-count", "path": "%s", "bench": "switch", '
        '"nr_ops": "64", "flavour": "ops"}\n'
        '{"kind": "walker-loops", "path": "walker-loops/ops.txt", '
        '"flavour": "ops", "function": "rseq_ops_apply"}\n'
        % named.relative_to(out))
    run = opbench_io.load(str(out))
    assert [w["bench"] for w in run["walk_counts"]] == ["switch"]
    assert run["walk_counts"][0]["measured"] == 200 / (100 * 2)
    assert list(run["walker_loops"]) == ["ops"]
    assert run["latency"] == []
    with open(out / "artefacts.jsonl", "a") as f:
        f.write('{"kind": "latency", "path": "latency/ops/latency.json"}\n')
    with pytest.raises(opbench_io.ResultsError, match="not in the run"):
        opbench_io.load(str(out))


def test_facts_from_their_one_declaration():
    """The list limit from rseq-op-abi.h, the fast path's bound from the
    ops flavour's series, each recorded in the index."""
    import re
    with open(os.path.join(TOP, "microbench", "rseq-op-abi.h")) as f:
        limit = int(re.search(r"OB_RSEQ_OP_LIST_LIMIT\s+(\d+)",
                              f.read()).group(1))
    assert plan("fact", "list_limit").stdout.strip() == str(limit)
    bound = plan("fact", "irqs_off_max")
    assert bound.returncode == 0, bound.stderr
    series = os.path.join(TOP, "kernel-patch", "series")
    text = "".join(open(os.path.join(series, p), errors="replace").read()
                   for p in os.listdir(series) if p.endswith(".patch"))
    assert "+#define RSEQ_OP_IRQS_OFF_MAX\t%s\n" % bound.stdout.strip() \
        in text
    r = plan("fact", "nosuch")
    assert r.returncode == 2 and "list_limit" in r.stderr


def test_a_benchmark_from_its_table_row_alone(tmp_path):
    """A throwaway benchmark, a row of opbench's table and nothing else, is
    planned (alone where its row says so) and traced where it says so."""
    rows = json.load(open(BENCHES)) + [
        {"name": "mybench", "summary": "a throwaway", "walks_per_loop": 1,
         "expect": "always", "type": "null", "alone": True, "traced": True}]
    table = tmp_path / "benches.json"
    table.write_text(json.dumps(rows))
    out = tmp_path / "run"
    r = index(out, 3, BENCHES="syscall mybench@0,1", _benches=str(table),
              FLAVOURS="ops", BOOTS="1")
    assert r.returncode == 0, r.stderr
    run = json.loads((out / "run.json").read_text())
    assert "mybench@0,1 mybench 0,1 default alone" in run["cells"]
    assert run["traced"] == ["mybench"]
    assert plan("cells", "quick", BENCHES="mybench").returncode == 2


def test_lists_of_n_name_the_facts():
    """bound and limit in a list of N are the facts, resolved into the
    cells; the plans name them rather than copy their values."""
    bound = plan("fact", "irqs_off_max").stdout.strip()
    limit = plan("fact", "list_limit").stdout.strip()
    r = plan("cells", "quick", BENCHES="preempt:scattered@0,bound,limit",
             SWEEP="0,limit")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[2] == "0,%s,%s" % (bound, limit)
    # powers: every power of two up to the limit, then the limit; an N
    # named twice is taken once.
    r = plan("cells", "quick", BENCHES="switch", SWEEP="0,1,powers,limit")
    assert r.returncode == 0, r.stderr
    ns = [int(n) for n in r.stdout.split()[2].split(",")]
    assert ns[0] == 0 and ns[-1] == int(limit) and len(ns) == len(set(ns))
    assert all(b == 2 * a for a, b in zip(ns[1:-1], ns[2:-1])), ns
    assert ns[-2] < int(limit) <= 2 * ns[-2], ns
    for name in ("default", "quick", "walker"):
        with open(os.path.join(TOP, "microbench", "plans",
                               name + ".plan")) as f:
            lines = [ln.split("=", 1)[1].strip('"\n') for ln in f
                     if ln.startswith(("BENCHES=", "SWEEP="))]
        words = [w.split("@")[1] if "@" in w else w
                 for ln in lines for w in ln.split()]
        assert not [w for w in words if any(
            n in (bound, limit) for n in w.split(","))], name


def test_the_table_says_which_benchmarks_the_profiler_can_window():
    """opbench's table marks the benchmarks whose samples are timed loops
    between the profiler's markers (--mark); preempt's are gaps between
    events, which tracing/trace.sh's instruction mode reads to refuse it
    up front rather than after two boots."""
    rows = {r["name"]: r for r in json.load(open(BENCHES))}
    assert rows["preempt"]["marked"] is False
    assert all(r["marked"] for n, r in rows.items() if n != "preempt")


def _synthetic_report(out, ns, cost):
    """Each planned boot of the run in OUT given the records a guest would
    leave (tests/data/make-synthetic-run.py: switch at NS, COST(bench,
    flavour, N) a loop), then analysed: the report's text."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "synth", os.path.join(TOP, "tests", "data", "make-synthetic-run.py"))
    synth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(synth)
    boots = [json.loads(b) for b in
             (out / "boots.jsonl").read_text().splitlines()]
    rng = np.random.default_rng(7)
    for i, b in enumerate(boots, 1):
        fl = b["flavour"]
        synth.write_boot(
            str(out / b["dir"]), rng, i, fl, "icount", ("0123", "5"),
            lambda shift, fl=fl: synth.boot_records(
                rng, "switch", fl, i, shift, ns, 3, cost, False))
    r = subprocess.run([PY, os.path.join(TOP, "analysis", "analyze.py"),
                        str(out), "-q"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return (out / "analysis" / "report.txt").read_text()


def test_a_flavour_from_its_declaration_alone(tmp_path):
    """A throwaway flavour, one declaration file in a directory of them
    (FLAVOURS_DIR) and nothing else: the shell reads it as the planner
    does, the run's index plans its boots and records it, and the report
    compares it with ops as a design under its label."""
    import shutil
    decls = tmp_path / "flavours"
    shutil.copytree(os.path.join(TOP, "kernel-patch", "flavours"), decls)
    (decls / "mine.flavour").write_text(
        "# a throwaway design\nSERIES=kernel-patch/min\nFIXED=1\n"
        "SEMANTICS=handle\nVIA=min\nDESIGN=9\n"
        'LABEL="a throwaway design"\nCOLOUR=tab:brown\n')
    env = dict(FLAVOURS_DIR=str(decls))
    r = subprocess.run(["bash", "-c", ". scripts/common.sh; "
                        "flavour_get mine LABEL; flavour_get mine VIA"],
                       cwd=TOP, capture_output=True, text=True,
                       env=dict(os.environ, **env))
    assert r.stdout == "a throwaway design\nmin\n", r
    out = tmp_path / "run"
    r = index(out, 7, FLAVOURS="baseline ops mine", BOOTS="2",
              BENCHES="switch@0,1,2,8,16", **env)
    assert r.returncode == 0, r.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["flavour_decls"]["mine"]["label"] == "a throwaway design"
    assert run["flavour_decls"]["mine"]["design"] == 9
    boots = [json.loads(b) for b in
             (out / "boots.jsonl").read_text().splitlines()]
    assert sorted(b["flavour"] for b in boots) == \
        ["baseline", "baseline", "mine", "mine", "ops", "ops"]
    # Each boot's records, as a guest would leave them: a walk of 45.2
    # (ops) and 30.0 (mine) instructions per operation, two a loop.
    walk = {"ops": 45.2, "mine": 30.0}

    def cost(bench, fl, n):
        return 4456.0 if n == 0 else 4650.0 + 2 * walk[fl] * n
    text = _synthetic_report(out, [0, 1, 2, 8, 16], cost)
    section = text[text.index("Keep the operations in the kernel?"):]
    assert "mine: a throwaway design" in " ".join(section.split())
    slope = re.search(r"^  switch   mine +([0-9.]+)  \[", section, re.M)
    assert slope and abs(float(slope.group(1)) - 30.0) < 0.5, section[:2000]
    assert re.search(r"^  switch   mine     / ops  ", section, re.M)


def test_a_one_operation_path_is_fitted_from_its_declaration(tmp_path):
    """A flavour whose single operation takes a path of its own declares
    FIT_FROM=2: its walk is fitted from N = 2, where the line holds, and
    the report says so; N = 1 keeps its own figure. The same records
    without the declaration bend the slope (N = 1 off the line)."""
    import shutil
    ns = [0, 1, 2, 8, 16]

    def cost(bench, fl, n):
        # Two walks a loop: 5 an operation from N = 2 on, over a fixed 40;
        # one operation 14 (no loop), as series v4 stores it.
        if n == 0 or fl == "baseline":
            return 4456.0
        return 4456.0 + 2 * (14.0 if n == 1 else 40.0 + 5.0 * n)

    def slope_of(fit_from, ns=ns):
        decls = tmp_path / ("flavours-%s-%d" % (fit_from, len(ns)))
        shutil.copytree(os.path.join(TOP, "kernel-patch", "flavours"), decls)
        if not fit_from:
            # ops too, or the designs are compared on the N both fitted.
            ops = decls / "ops.flavour"
            ops.write_text("".join(ln for ln in ops.read_text().splitlines(
                True) if not ln.startswith("FIT_FROM=")))
        (decls / "mine.flavour").write_text(
            "SERIES=kernel-patch/min\nFIXED=1\nSEMANTICS=handle\nVIA=min\n"
            'DESIGN=9\nLABEL="one-op path"\nCOLOUR=tab:brown\n' +
            ("FIT_FROM=%s\n" % fit_from if fit_from else ""))
        out = tmp_path / ("run-%s-%d" % (fit_from, len(ns)))
        r = index(out, 7, FLAVOURS="baseline ops mine", BOOTS="2",
                  BENCHES="switch@" + ",".join(map(str, ns)),
                  FLAVOURS_DIR=str(decls))
        assert r.returncode == 0, r.stderr
        text = _synthetic_report(out, ns, cost)
        section = text[text.index("Keep the operations in the kernel?"):]
        slope = re.search(r"^  switch   mine +([0-9.]+)  \[", section, re.M)
        assert slope, section[:2000]
        return float(slope.group(1)), " ".join(section.split()), text

    fitted, section, text = slope_of(2)
    assert abs(fitted - 5.0) < 0.2, section[:2000]
    assert "ops, mine: fitted from N = 2" in section
    assert "Cost model on mine, N=2..16" in text
    one = re.search(r"switch mine \+([0-9.]+) \[", section[
        section.index("One operation against none"):])
    assert one and abs(float(one.group(1)) - 14.0) < 1.0, section
    bent, section, _ = slope_of(None)
    assert "fitted from N = 2" not in section
    assert bent > fitted + 0.5, (bent, fitted)
    # A run with one N from there (the quick plan's 0, 1 and the limit)
    # still has a slope: from N = 1, and the report says why.
    few, section, text = slope_of(2, [0, 1, 16])
    assert "Cost model on mine, N=1..16" in text
    assert "mine: fitted from N = 1 in switch, where this run measured " \
        "fewer than two N from its FIT_FROM (2)" in section, section[:2000]
    assert few > fitted + 0.5
