# SPDX-License-Identifier: GPL-2.0
"""Known-answer tests of analysis/: statistics, report, plots, notebook.

Host only: the inputs are synthetic (tests/data/make-synthetic-run.py) or
drawn from seeded generators. The golden report is
tests/data/synthetic-report.txt; after a deliberate change of the report's
format, regenerate it with
    REGEN_GOLDEN=1 /usr/bin/python3 -m pytest tests/test_analysis.py -k golden
and read the diff before committing it.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import TOP

sys.path.insert(0, os.path.join(TOP, "analysis"))
import opbench_data  # noqa: E402
import opbench_report  # noqa: E402
import opbench_stats as st  # noqa: E402

DATA = os.path.join(TOP, "tests", "data")
GOLDEN = os.path.join(DATA, "synthetic-report.txt")
ANALYZE = os.path.join(TOP, "analysis", "analyze.py")


def synthetic(tmp_path, accel="icount"):
    d = tmp_path / "synthetic"
    subprocess.run(["/usr/bin/python3",
                    os.path.join(DATA, "make-synthetic-run.py"), str(d),
                    "--accel", accel], check=True)
    return str(d)


# Statistics -------------------------------------------------------------

def test_identical_samples_no_difference():
    x = np.random.default_rng(1).normal(1000, 5, 20)
    c = st.compare(x, x.copy(), key=("t",))
    assert c["verdict"] == "none"
    assert c["diff"] == 0
    assert c["diff_ci"][0] <= 0 <= c["diff_ci"][1]
    assert c["p"] > 0.9


def test_constant_samples_no_difference():
    c = st.compare([252.435] * 10, [252.435] * 10)
    assert c["verdict"] == "none" and c["p"] == 1.0


def test_same_distribution_rarely_differs():
    rng = np.random.default_rng(2)
    hits = sum(st.compare(rng.normal(100, 3, 15), rng.normal(100, 3, 15),
                          key=("same", i))["verdict"] != "none"
               for i in range(40))
    # About 5% expected; 8 of 40 would be a broken test.
    assert hits <= 7


@pytest.mark.parametrize("shift", [2.0, 50.0, -7.5])
def test_known_shift_inside_ci(shift):
    rng = np.random.default_rng(3)
    a = rng.normal(1000, 2, 30)
    b = rng.normal(1000 + shift, 2, 30)
    c = st.compare(a, b, key=("shift", shift))
    assert c["diff_ci"][0] <= shift <= c["diff_ci"][1]
    assert c["verdict"] == "difference"
    assert c["ratio_ci"][0] <= (1000 + shift) / 1000 <= c["ratio_ci"][1]


def test_noise_floor_demotes_small_difference():
    rng = np.random.default_rng(4)
    a, b = rng.normal(100, 0.1, 30), rng.normal(100.5, 0.1, 30)
    assert st.compare(a, b)["verdict"] == "difference"
    c = st.compare(a, b, noise_floor=2.0)
    assert c["verdict"] == "noise" and c["detectable"] >= 2.0


def test_few_samples_warned_and_not_called_different():
    c = st.compare([10.0, 10.1, 10.2], [20.0, 20.1, 20.2])
    assert any("too few samples" in w for w in c["warnings"])
    assert any("cannot reach" in w for w in c["warnings"])
    # 3 against 3 cannot give p < 0.05: no verdict of difference.
    assert c["verdict"] == "none"


def test_cost_model_recovers_slope():
    rng = np.random.default_rng(5)
    cells = {n: 300 + 45.2 * n + rng.normal(0, 3, 10)
             for n in (1, 2, 4, 8, 16, 32, 64, 128)}
    m = st.cost_model(cells, key=("slope",))
    assert m["b_ci"][0] <= 45.2 <= m["b_ci"][1]
    assert abs(m["b"] - 45.2) < 0.1
    assert m["a_ci"][0] <= 300 <= m["a_ci"][1]
    assert st.cost_model({0: [1.0], 1: [2.0]}) is None


def test_noise_floor_needs_two_boots():
    assert st.noise_floor([[1.0, 2.0]]) is None
    assert st.noise_floor([[5.0] * 5, [5.0] * 5]) == 0


def test_deterministic():
    x, y = [1.0, 2.0, 3.5, 4.0, 7.0], [2.0, 3.0, 3.0, 5.0, 9.0]
    assert st.compare(x, y, key=("k",)) == st.compare(x, y, key=("k",))


# Records to analysis ------------------------------------------------------

def test_synthetic_run_known_answers(tmp_path):
    a = opbench_data.analyse(opbench_data.load(synthetic(tmp_path)))
    assert a["unit"] == "instructions"
    g = {x["bench"]: x for x in a["groups"]}
    # The extra switches at N=64 bias the plain fit upwards; counting each
    # walk once recovers the slope.
    m = g["switch"]["cost_per_switch"]["ops"]
    assert m["b_ci"][0] <= 90.4 <= m["b_ci"][1]
    assert g["switch"]["cost"]["ops"]["b"] > 91
    assert abs(g["switch"]["switch_drift"]["ops"] - 0.05) < 1e-6
    assert "cost_per_switch" not in g["syscall"]
    # Boots differ by a shift of sd 0.5: the intercept is close, not exact.
    assert abs(m["a"] - 4650) < 2
    # The failed gate takes out exactly one boot's samples of one cell.
    assert [(x["bench"], x["flavour"], x["nr_ops"], x["boot"])
            for x in a["invalid"]] == [("switch", "ops", 64, 3)]
    n64 = [c for c in g["switch"]["cells"] if c["nr_ops"] == 64]
    assert n64[0]["n"] == 8 and n64[0]["boots"] == [2]
    # No walk on a syscall: no N differs from N=0, slope about zero.
    assert all(r["verdict"] != "difference"
               for r in g["syscall"]["vs_zero"]["ops"])
    sm = g["syscall"]["cost"]["ops"]
    assert sm["b_ci"][0] <= 0 <= sm["b_ci"][1]
    assert g["switch"]["noise_floor"] is not None
    assert g["switch"]["aa_boots"] == 2
    assert ["baseline", 1] in g["switch"]["unsupported"]


def test_missing_gate_is_invalid(tmp_path):
    d = synthetic(tmp_path)
    p = os.path.join(d, "boot-2-ops", "opbench.json")
    with open(p) as f:
        recs = [json.loads(l) for l in f]
    with open(p, "w") as f:
        for r in recs:
            if not (r["kind"] == "gate" and r["bench"] == "switch"
                    and r["nr_ops"] == 8):
                f.write(json.dumps(r) + "\n")
    a = opbench_data.analyse(opbench_data.load(d))
    whys = {(x["nr_ops"], x["boot"]): x["why"] for x in a["invalid"]}
    assert "no gate record" in whys[(8, 2)]


def test_mixed_accelerators_refused(tmp_path):
    d = synthetic(tmp_path)
    p = os.path.join(d, "boot-1-baseline", "vm.json")
    with open(p) as f:
        vm = json.load(f)
    vm["accel"] = "tcg"
    with open(p, "w") as f:
        json.dump(vm, f)
    with pytest.raises(opbench_data.ResultsError, match="accelerators"):
        opbench_data.analyse(opbench_data.load(d))


def test_truncated_records_named(tmp_path):
    d = synthetic(tmp_path)
    with open(os.path.join(d, "boot-3-ops", "opbench.json"), "a") as f:
        f.write('{"kind":"sample","bench":')
    with pytest.raises(opbench_data.ResultsError, match="boot-3-ops"):
        opbench_data.load(d)


# Report -----------------------------------------------------------------

def test_report_golden(tmp_path):
    d = synthetic(tmp_path)
    run = opbench_data.load(d)
    text = opbench_report.render(run, opbench_data.analyse(run))
    if os.environ.get("REGEN_GOLDEN"):
        with open(GOLDEN, "w") as f:
            f.write(text)
        pytest.skip("golden report rewritten: read the diff, then run "
                    "again without REGEN_GOLDEN")
    with open(GOLDEN) as f:
        assert text == f.read()


@pytest.mark.parametrize("accel", ["icount", "tcg"])
def test_report_width_and_units(tmp_path, accel):
    d = synthetic(tmp_path, accel)
    run = opbench_data.load(d)
    text = opbench_report.render(run, opbench_data.analyse(run))
    assert max(len(l) for l in text.splitlines()) <= 72
    assert "Difference at 95% confidence" in text
    if accel == "icount":
        assert "instructions per loop" in text
        # Under icount, no figure is called nanoseconds.
        assert not re.search(r"\bns\b", text)
    else:
        assert "ns (emulated) per loop" in text
        assert "not hardware time" in text
        assert "instructions" not in text


# The command and the notebook ---------------------------------------------

def analyze(*args):
    return subprocess.run(["/usr/bin/python3", ANALYZE] + list(args),
                          capture_output=True, text=True)


def test_cli_writes_and_never_overwrites(tmp_path):
    d = synthetic(tmp_path)
    r = analyze(d, "-q")
    assert r.returncode == 0, r.stderr
    out = os.path.join(d, "analysis")
    for f in ("report.txt", "analysis.json", "plots/overhead.png",
              "plots/overhead.svg", "plots/zero-ops.png", "plots/per-op.svg",
              "plots/sweep-switch.png"):
        assert os.path.getsize(os.path.join(out, f)) > 0, f
    with open(os.path.join(out, "report.txt")) as f:
        first = f.read()
    r = analyze(d, "-q")
    assert r.returncode != 0 and "--force" in r.stderr
    r = analyze(d, "-q", "--force")
    assert r.returncode == 0, r.stderr
    old = [x for x in os.listdir(d) if x.startswith("analysis.old-")]
    assert len(old) == 1
    with open(os.path.join(d, old[0], "report.txt")) as f:
        assert f.read() == first
    assert not [x for x in os.listdir(d) if x.startswith(".analysis-")]


def test_cli_bad_directory(tmp_path):
    r = analyze(str(tmp_path / "nope"))
    assert r.returncode != 0
    assert "not a directory" in r.stderr and "make bench" in r.stderr
    (tmp_path / "empty").mkdir()
    r = analyze(str(tmp_path / "empty"))
    assert r.returncode != 0 and "boot-<n>-<flavour>" in r.stderr


def run_notebook(results, out):
    env = dict(os.environ, OPBENCH_RESULTS=results,
               PYDEVD_DISABLE_FILE_VALIDATION="1")
    r = subprocess.run(["jupyter", "nbconvert", "--to", "notebook",
                        "--execute", "--ExecutePreprocessor.timeout=600",
                        os.path.join(TOP, "notebooks", "opbench.ipynb"),
                        "--output", out], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(out) as f:
        nb = json.load(f)
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code"
               for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join("".join(o.get("text", "")) for o in outputs)
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    return text, images


def test_notebook_runs_headless(tmp_path):
    d = synthetic(tmp_path)
    text, images = run_notebook(d, str(tmp_path / "nb.ipynb"))
    assert "Difference at 95% confidence" in text
    assert re.search(r"switch +ops +per-switch .*b/walk = 45\.2", text)
    assert len(images) >= 4


def test_report_names_compiler_and_asm_goto():
    """The header says which compiler built the kernels and whether asm
    goto outputs were on, and warns when flavours differ in it."""
    line = opbench_report.compiler_line({
        "compiler": "gcc (Debian 14.2.0-19) 14.2.0",
        "cc_has_asm_goto_output": "y",
        "toolchain": "trixie trixie-0123 gcc (Debian 14.2.0-19) 14.2.0"})
    assert line.startswith("gcc (Debian 14.2.0-19) 14.2.0; asm goto outputs on")
    assert "build root trixie-0123" in line
    old = opbench_report.compiler_line({"compiler": "gcc (Debian 12.2.0-14) 12.2.0",
                                "cc_has_asm_goto_output": "n",
                                "toolchain": "host gcc (Debian 12.2.0-14)"})
    assert "asm goto outputs OFF" in old and "host's own compiler" in old
    assert "not recorded" in opbench_report.compiler_line({"compiler": "gcc"})


def test_report_warns_on_mixed_compilers(tmp_path):
    run = opbench_data.load(synthetic(tmp_path))
    k = next(b["kernel"] for b in run["boots"] if b["flavour"] == "ops")
    k.update({"compiler": "gcc (Debian 12.2.0-14) 12.2.0",
              "cc_has_asm_goto_output": "n"})
    text = opbench_report.render(run, opbench_data.analyse(run))
    assert "different compilers" in text


def test_walker_loops_finds_the_loop(tmp_path):
    """A known loop: head, back edge and counts from gcc's own output."""
    src = tmp_path / "lp.c"
    src.write_text("struct n { struct n *next; long v; };\n"
                   "long walk(struct n *p, long *d)\n"
                   "{ long s = 0; while (p) { s += p->v; *d = 0;"
                   " p = p->next; } return s; }\n")
    obj = str(tmp_path / "lp.o")
    r = subprocess.run(["gcc", "-O2", "-c", str(src), "-o", obj],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    tool = os.path.join(TOP, "analysis", "walker_loops.py")
    r = subprocess.run([sys.executable, tool, obj, "walk"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    row = r.stdout.splitlines()[1].split()
    # add (load), mov (load: p->next), movq (store), test, jne: at least the
    # two loads, the store and the back edge.
    assert row[0] == "walk" and 4 <= int(row[2]) <= 8, r.stdout
    assert int(row[3]) >= 1 and int(row[4]) == 1, r.stdout
    r = subprocess.run([sys.executable, tool, obj, "nosuch"],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "no function 'nosuch'" in r.stderr
