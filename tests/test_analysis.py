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

import pytest

from conftest import TOP, check_golden

sys.path.insert(0, os.path.join(TOP, "analysis"))
import opbench_data  # noqa: E402
import opbench_report  # noqa: E402
import pmu  # noqa: E402

DATA = os.path.join(TOP, "tests", "data")
GOLDEN = os.path.join(DATA, "synthetic-report.txt")
ANALYZE = os.path.join(TOP, "analysis", "analyze.py")


def synthetic(tmp_path, accel="icount"):
    d = tmp_path / "synthetic"
    subprocess.run(["/usr/bin/python3",
                    os.path.join(DATA, "make-synthetic-run.py"), str(d),
                    "--accel", accel], check=True)
    return str(d)


def rewrite(d, boot, change):
    """Replace a boot's records with change(records)."""
    p = os.path.join(d, boot, "opbench.json")
    with open(p) as f:
        recs = [json.loads(l) for l in f]
    with open(p, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in change(recs))


# Records to analysis ------------------------------------------------------

def test_mean_per_return_counts_what_the_median_hides(tmp_path):
    """Re-walks raise a sample's mean, not its median iteration: a mean
    that grows by 0.25 instructions per operation per walk over the
    median shows up in per_walk_mean and nowhere else; preempt's P-gaps
    have no mean; a record without tsc_mean (an older opbench) leaves its
    family without one rather than half-fitted."""
    d = synthetic(tmp_path)

    def rewalks(recs):
        for r in recs:
            if r.get("kind") == "sample":
                r["tsc_mean"] = r["tsc_median"] + 0.25 * int(
                    r["nr_ops"]) * (r.get("walks_per_loop") or 1)
        return recs
    for b in os.listdir(d):
        if b.startswith("boot-"):
            rewrite(d, b, rewalks)
    a = opbench_data.analyse(opbench_data.load(d))
    g = {x["bench"]: x for x in a["groups"]}
    med, mean = g["switch"]["per_walk"]["ops"], \
        g["switch"]["per_walk_mean"]["ops"]
    assert mean["value"] == pytest.approx(med["value"] + 0.25, abs=1e-6)
    assert mean["k"] == med["k"] == 5

    def older(recs):
        for r in recs:
            if r.get("kind") == "sample" and r["bench"] == "switch":
                r.pop("tsc_mean")
                break
        return recs
    rewrite(d, next(b for b in sorted(os.listdir(d))
                    if b.endswith("-ops")), older)
    a = opbench_data.analyse(opbench_data.load(d))
    g = {x["bench"]: x for x in a["groups"]}
    assert "ops" in g["switch"]["per_walk"]
    assert "ops" not in g["switch"]["per_walk_mean"]
    # A run of real boots (tests/data/quick-run): switch and signal have
    # a mean, on the same scale as the median's (a few % above it under
    # icount), preempt none.
    a = opbench_data.analyse(opbench_data.load(os.path.join(DATA,
                                                            "quick-run")))
    g = {x["bench"]: x for x in a["groups"]}
    for bench in ("switch", "signal"):
        med = g[bench]["per_walk"]["ops"]["value"]
        assert g[bench]["per_walk_mean"]["ops"]["value"] == \
            pytest.approx(med, rel=0.05)
    assert g["preempt"]["per_walk"] and not g["preempt"]["per_walk_mean"]


def test_synthetic_run_known_answers(tmp_path):
    a = opbench_data.analyse(opbench_data.load(synthetic(tmp_path)))
    assert a["unit"] == "instructions"
    assert a["boots_per_flavour"] == {"baseline": 5, "ops": 5}
    g = {x["bench"]: x for x in a["groups"]}
    m = g["switch"]["cost"]["ops"]
    # Fitted per boot and combined over the five boots: the planted line.
    assert m["k"] == 5
    assert m["b_ci"][0] <= 90.4 <= m["b_ci"][1]
    assert m["a_ci"][0] <= 4650 <= m["a_ci"][1]
    assert m["entry_ci"][0] <= 4650 - 4455 <= m["entry_ci"][1]
    # One sample of one boot failed its per-iteration gate: the cell is
    # dropped in every boot, not half-used, and listed.
    assert [(x["bench"], x["flavour"], x["nr_ops"], x["boot"])
            for x in a["invalid"]] == [("switch", "ops", 64, 4)]
    assert "expected walk did not happen" in a["invalid"][0]["why"]
    assert not [c for c in g["switch"]["cells"] if c["nr_ops"] == 64]
    assert ["ops", 64] in g["switch"]["dropped"]
    assert {"bench": "switch", "op_type": "null", "reg": "own",
            "flavour": "ops", "nr_ops": 64} in a["dropped"]
    assert 64 not in m["ns"]
    # No walk on a syscall: no N differs from N=0, slope about zero.
    assert all(r["verdict"] != "difference"
               for r in g["syscall"]["vs_zero"]["ops"])
    sm = g["syscall"]["cost"]["ops"]
    assert sm["b_ci"][0] <= 0 <= sm["b_ci"][1]
    # The A/A floor: five baseline boots, the spread between them.
    assert g["switch"]["aa"]["boots"] == 5
    assert g["switch"]["aa"]["floor"] > 0
    assert ["baseline", 1] in g["switch"]["unsupported"]
    # The mission's table: ops at N = 0 and 1 against baseline at N = 0.
    rows = {(r["bench"], r["nr_ops"]): r for r in a["mission"]}
    assert set(rows) == {("switch", 0), ("switch", 1), ("syscall", 0),
                         ("syscall", 1)}
    r = rows[("switch", 1)]
    assert r["verdict"] == "difference"
    assert r["diff_ci"][0] <= 4650 + 90.4 - 4456 <= r["diff_ci"][1]
    assert rows[("switch", 0)]["diff_ci"][0] <= -1 <= \
        rows[("switch", 0)]["diff_ci"][1]
    # perf bench, converted with the clock record (1 ns per tick).
    pb = a["perf_bench"]["syscall basic"]["ops"]
    assert abs(pb["value"] - 250) < 1 and pb["ours_bench"] == "syscall"


def test_walks_per_loop_counted_by_bpftrace(tmp_path):
    """The tracing step's walk count is set beside the declared walks per
    loop: 2 for switch (both threads walk), counted over the warm-up and
    the timed samples of the traced run."""
    d = synthetic(tmp_path)
    t = os.path.join(d, "tracing", "20261204T000000Z-trace-bpf-ops-"
                     "rseq_ops_rate-switch-64", "ops")
    os.makedirs(t)
    with open(os.path.join(t, "rseq_ops_rate.bt.out"), "w") as f:
        f.write("Attaching 3 probes...\n\n@walks[switch]: 1604\n"
                "@nodes[switch]: 102656\n")
    with open(os.path.join(t, "opbench.json"), "w") as f:
        for s in range(3):
            f.write(json.dumps({"kind": "sample", "bench": "switch",
                                "nr_ops": 64, "loops": 200, "sample": s,
                                "walks_per_loop": 2}) + "\n")
    run = opbench_data.load(d)
    a = opbench_data.analyse(run)
    assert a["walk_counts"] == [{"bench": "switch", "nr_ops": 64,
                                 "walks": 1604, "loops": 800,
                                 "declared": 2, "measured": 2.005,
                                 "agrees": True}]
    text = opbench_report.render(a)
    assert re.search(r"switch +64 +1604 +800 +2\.0050 +2  agrees", text)


def test_icount_clock_must_count_instructions(tmp_path):
    """A boot whose TSC did not advance one tick per instruction of the
    known loop cannot be called instructions: the analysis stops."""
    d = synthetic(tmp_path)

    def slow_clock(recs):
        recs[0]["ticks_per_insn"] = 0.4
        return recs
    rewrite(d, "boot-3-baseline", slow_clock)
    with pytest.raises(opbench_data.ResultsError, match="not 1"):
        opbench_data.analyse(opbench_data.load(d))


def test_old_records_refused(tmp_path):
    d = synthetic(tmp_path)
    rewrite(d, "boot-3-baseline", lambda recs: recs[1:])   # no clock
    with pytest.raises(opbench_data.ResultsError, match="older opbench"):
        opbench_data.analyse(opbench_data.load(d))


def test_missing_gate_is_invalid(tmp_path):
    d = synthetic(tmp_path)
    rewrite(d, "boot-1-ops", lambda recs: [
        r for r in recs if not (r["kind"] == "gate" and
                                r["bench"] == "switch" and
                                r["nr_ops"] == 8)])
    a = opbench_data.analyse(opbench_data.load(d))
    whys = {(x["nr_ops"], x["boot"]): x["why"] for x in a["invalid"]}
    assert "no gate record" in whys[(8, 1)]
    g = next(x for x in a["groups"] if x["bench"] == "switch")
    assert ["ops", 8] in g["dropped"]


def test_mixed_accelerators_refused(tmp_path):
    d = synthetic(tmp_path)
    p = os.path.join(d, "boot-2-baseline", "vm.json")
    with open(p) as f:
        vm = json.load(f)
    vm["accel"] = "tcg"
    with open(p, "w") as f:
        json.dump(vm, f)
    with pytest.raises(opbench_data.ResultsError, match="accelerators"):
        opbench_data.analyse(opbench_data.load(d))


def test_truncated_records_named(tmp_path):
    d = synthetic(tmp_path)
    with open(os.path.join(d, "boot-3-baseline", "opbench.json"), "a") as f:
        f.write('{"kind":"sample","bench":')
    with pytest.raises(opbench_data.ResultsError, match="boot-3-baseline"):
        opbench_data.load(d)


# Report -----------------------------------------------------------------

def test_report_golden(tmp_path):
    d = synthetic(tmp_path)
    run = opbench_data.load(d)
    text = opbench_report.render(opbench_data.analyse(run))
    check_golden(GOLDEN, text)
    if os.environ.get("REGEN_GOLDEN"):
        pytest.skip("golden report rewritten: read the diff, then run "
                    "again without REGEN_GOLDEN")


def test_report_from_the_analysis_alone(tmp_path):
    """render() and the header take the analysis alone: the same text
    from analysis.json's content as from analyse()'s, with the run's
    directory gone."""
    d = synthetic(tmp_path)
    a = opbench_data.analyse(opbench_data.load(d))
    text = opbench_report.render(a)
    os.rename(d, d + ".gone")
    assert opbench_report.render(json.loads(json.dumps(a))) == text
    assert not a["usable"] and a["invalid_count"] == 1


@pytest.mark.parametrize("accel", ["icount", "tcg"])
def test_declared_launch_fields(tmp_path, accel):
    """vm.json as opbench_vm.py writes it now declares the accelerator's
    arguments, CPU, icount options and vCPUs: the report says what the
    argv fallback (runs made before the fields) said, byte for byte."""
    sys.path.insert(0, os.path.join(TOP, "vm-images"))
    import opbench_vm
    d = synthetic(tmp_path, accel)
    old = opbench_report.render(opbench_data.analyse(opbench_data.load(d)))
    for b in os.listdir(d):
        p = os.path.join(d, b, "vm.json")
        if not os.path.exists(p):
            continue
        with open(p) as f:
            vm = json.load(f)
        vm.update(opbench_vm.accel_record(accel))
        del vm["qemu_command"]
        with open(p, "w") as f:
            json.dump(vm, f)
    run = opbench_data.load(d)
    launch = run["boots"][0]["launch"]
    assert launch["cpu"] == "max" and launch["smp"] == 2
    assert (launch["icount"] is not None) == (accel == "icount")
    # accel_record's tcg is multi-threaded, the synthetic argv's is not.
    new = opbench_report.render(opbench_data.analyse(run))
    if accel == "icount":
        assert new == old
    else:
        assert new == old.replace("-accel tcg -cpu",
                                  "-accel tcg,thread=multi -cpu")


def test_cli_strict_exit_status(tmp_path):
    """--strict: 3 when cells failed their gate (the synthetic run plants
    one), the analysis written all the same; without it, 0."""
    d = synthetic(tmp_path)
    r = analyze(d, "-q", "--strict")
    assert r.returncode == 3, r.stderr
    assert "1 cell-boots failed their correctness gate" in r.stderr
    assert os.path.exists(os.path.join(d, "analysis", "report.txt"))
    with open(os.path.join(d, "analysis", "analysis.json")) as f:
        assert json.load(f)["usable"] is False


@pytest.mark.parametrize("accel", ["icount", "tcg"])
def test_report_width_and_units(tmp_path, accel):
    d = synthetic(tmp_path, accel)
    run = opbench_data.load(d)
    text = opbench_report.render(opbench_data.analyse(run))
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
    # In time a sample's figure is its trimmed mean (every record has it),
    # and the header says so; under icount the median.
    a = opbench_data.analyse(run)
    assert a["metric"] == ("tsc_median" if accel == "icount" else "tsc_trim")
    flat = " ".join(text.split())
    assert ("a sample's figure: the mean of its iterations, a tenth cut "
            "from each end" in flat) == (accel != "icount")


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
              "plots/residuals.png", "plots/sweep-switch.png"):
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
    assert re.search(r"switch +ops +k=5 .*b/walk = 45\.2", text)
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
    text = opbench_report.render(opbench_data.analyse(run))
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


# The cover letter and cover_perf.py: tests/test_cover_letter.py.


def test_pmu_counters_reported_beside_the_figures(tmp_path):
    """Hardware counters in the samples (as opbench writes them where
    perf_event_open counts: bare metal, KVM with a virtual PMU): the
    report gives them per loop and the instructions' slope per operation
    per walk, counted on the measured thread only (switch: its own walk,
    not the partner's), set beside an icount run of the same kernels
    (--icount-run). The plumbing only: the synthetic counts are the
    synthetic figures, so the agreement is by construction here; what it
    shows on real hardware is for a KVM run to say."""
    import random
    d = synthetic(tmp_path)
    rng = random.Random(5)

    def count(recs):
        out = [{"kind": "pmu", "flavour": recs[0].get("flavour", "?"),
                "kernel": "k", "available": True, "source": "hardware",
                "events": ["cycles", "instructions"], "why": ""}]
        for r in recs:
            if r.get("kind") == "sample":
                # The measured thread's share: switch walks on both.
                share = 0.5 if r["bench"] == "switch" else 1.0
                r = dict(r, pmu_instructions=share * r["tsc_median"] *
                         (1 + rng.uniform(-0.001, 0.001)),
                         pmu_cycles=3.0 * r["tsc_median"])
            out.append(r)
        return out
    for boot in os.listdir(d):
        if boot.startswith("boot-"):
            rewrite(d, boot, count)
    ref = opbench_data.analyse(opbench_data.load(synthetic(tmp_path /
                                                          "ref")))
    a = opbench_data.analyse(opbench_data.load(d))
    assert a["pmu"]["available"] and a["pmu"]["source"] == ["hardware"]
    pmu.against_icount(a, json.loads(json.dumps(ref)))
    g = {x["bench"]: x for x in a["groups"]}["switch"]
    s = g["pmu"]["slopes"]["ops"]
    assert s["thread_walks"] == 1
    assert abs(s["value"] / g["per_walk"]["ops"]["value"] - 1) < 0.01
    assert s["icount_run"] == ref["run"]
    with pytest.raises(opbench_data.ResultsError, match="not icount"):
        pmu.against_icount(a, dict(ref, accel="kvm"))
    text = opbench_report.render(a)
    assert "PMU         hardware counters per sample: cycles, instructions" \
        in text
    assert "instructions per operation per walk (PMU); icount" in \
        " ".join(text.split())
    assert abs(g["pmu"]["slopes"]["ops"]["ratio"] - 1) < 0.01
    assert "PMU counters per loop" in text
    # The verdict, with its tolerance: 2 % or the PMU slope's interval.
    assert s["agrees"] is True
    assert "agrees (within 2 % or the interval)" in " ".join(text.split())
    v = s["value"]
    s.update(value=1.1 * v, ci=[1.09 * v, 1.11 * v])
    pmu.against_icount(a, json.loads(json.dumps(ref)))
    assert s["agrees"] is False
    assert "DISAGREES by +10.0 % (beyond 2 % and the interval" in \
        " ".join(opbench_report.render(a).split())


def test_no_pmu_record_says_why(tmp_path):
    """A run whose opbench found no PMU: the header says why and no
    counter column appears (absent, not zero)."""
    d = synthetic(tmp_path)

    def none(recs):
        return [{"kind": "pmu", "flavour": "x", "kernel": "k",
                 "available": False, "source": "hardware", "events": [],
                 "why": "perf_event_open(cycles): No such file or "
                        "directory: no hardware PMU here"}] + recs
    for boot in os.listdir(d):
        if boot.startswith("boot-"):
            rewrite(d, boot, none)
    a = opbench_data.analyse(opbench_data.load(d))
    text = opbench_report.render(a)
    assert "PMU         none: perf_event_open(cycles)" in text
    assert "PMU counters" not in text
    assert all(g["pmu"] is None for g in a["groups"])


def test_rounds_from_the_boot_order():
    """A time run pairs boot i of each flavour (round i): the round comes
    from the run's boot order, so a boot that left no directory shifts
    nothing; a run without the order counts each flavour's boots."""
    boots = [{"index": i, "flavour": f}
             for i, f in ((1, "a"), (2, "b"), (4, "a"), (5, "a"), (6, "b"))]
    run = {"provenance": {"boot_order": "a b b a a b"}, "boots": boots}
    assert opbench_data.rounds_of(run) == {1: 0, 2: 0, 4: 1, 5: 2, 6: 2}
    run = {"provenance": {}, "boots": boots}
    assert opbench_data.rounds_of(run) == {1: 0, 2: 0, 4: 1, 5: 2, 6: 1}


def test_pmu_status_says_which_pass_counted():
    """The header's PMU line from the records: a run whose timed samples
    ran without counters (opbench's default) and no counting pass says
    there was none; a run with a counting pass in some boots only is
    "partly", naming the boots without one."""
    off = {"kind": "pmu", "available": False,
           "why": "off in timed samples (OPBENCH_PMU=count counts, in a "
                  "pass of its own)"}
    run = {"provenance": {}, "boots": [{"dir": "boot-1-ops",
                                        "records": [off]}]}
    s = pmu.status(run)
    assert (s["available"], s["partly"], s["pass"]) == (False, False, None)
    assert s["why"][0].endswith("; this run had no counting pass")
    on = {"kind": "pmu", "available": True, "source": "hardware",
          "events": ["cycles"], "why": ""}
    run["boots"].append({"dir": "rep-2-ops", "records": [off],
                         "pmu_records": [on]})
    s = pmu.status(run)
    assert (s["available"], s["partly"], s["pass"]) == (False, True, "count")
    assert s["why"] == ["no counting pass in boot-1-ops"]
    run["boots"][0]["pmu_records"] = [on]
    s = pmu.status(run)
    assert (s["available"], s["partly"], s["why"]) == (True, False, [])
