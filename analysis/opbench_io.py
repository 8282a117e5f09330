# SPDX-License-Identifier: GPL-2.0
"""opbench_io - read everything a results directory holds, once.

Input, as microbench/bench-run.sh writes it:
    results/<date>-<label>/provenance            key=value, the run
    results/<date>-<label>/manifest              key=value, what was built
    results/<date>-<label>/INCOMPLETE            present while a run is cut
    results/<date>-<label>/run.json, boots.jsonl  the run's index, as
                            microbench/plan.py planned it (runs made before
                            it have none: their boots are found by name)
    results/<date>-<label>/artefacts.jsonl  what the stages after the boots
                            left (walker loops, walk counts, latency, the
                            BPF design's facts and profile): in a run with
                            an index, only the paths these lines name are
                            read; a run without one is searched by name
    results/<date>-<label>/boot-<i>-<flavour>/
                            (rep-<i>-<label>/ in a native run, made by
                            microbench/native-run.sh: one repetition on the
                            running kernel stands for a boot, with
                            native.json and host-state for vm.json)
        opbench.json        one JSON record per line (sample, gate, unsupported)
        tcmodel.json        the TCMalloc model's records (microbench/tcmodel.c)
        kernel-provenance   key=value, the kernel booted
        vm.json             the launcher's record (accelerator and its options)
        guest-info.txt      key: value, what the guest saw (clocksource, ...)
        tsc.txt, perf-bench.txt
    results/<date>-<label>/walker-loops/<flavour>.txt  analysis/walker_loops.py
    results/<date>-<label>/tracing/...                 make bench's tracing
    results/<date>-<label>/latency/<flavour>/latency.json  tracing/latency.sh
Output: load() returns the run as plain dicts; nothing else in analysis/
opens a file of the run (opbench_data.analyse derives every figure from it).

Mostly records are read. Three inputs are text written for people and
parsed here all the same, until their producers write records: perf bench's
output (parse_perf_bench), bpftrace's printed maps (walk_counts), and the
walker-loops tables (walker_loops).
"""
import glob
import json
import os
import re


class ResultsError(Exception):
    """A results directory that cannot be analysed; the message says why."""


def read_kv(path, sep="="):
    d = {}
    if not os.path.exists(path):
        return d
    with open(path) as f:
        for line in f:
            if sep in line:
                k, v = line.rstrip("\n").split(sep, 1)
                d[k.strip()] = v.strip()
    return d


def read_records(path):
    out = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ResultsError("%s:%d: not a JSON record (%s); the guest "
                                   "run was probably cut short" % (path, i, e))
    return out


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [ln.rstrip("\n") for ln in f if ln.strip()]


PERF_SECTION = re.compile(r"^== (.+)$")
PERF_USECS = re.compile(r"^\s*([0-9.]+) usecs/op")


def parse_perf_bench(path):
    """{"syscall basic": usecs per op, "sched pipe -T": ...} from the
    guest's perf-bench.txt; {} when perf bench was not run."""
    out = {}
    sec = None
    for ln in read_lines(path):
        m = PERF_SECTION.match(ln)
        if m:
            sec = m.group(1).strip()
            continue
        m = PERF_USECS.match(ln)
        if m and sec:
            out[sec] = float(m.group(1))
    return out


BOOT_RE = re.compile(r"^(?:boot|rep)-(\d+)-(.+)$")


# bench-run.sh writes this file into a run before its first boot and
# removes it once the benchmarks and the tracing are complete:
# a run that still holds it was interrupted or failed half-way (its lines
# say when and how).
INCOMPLETE = "INCOMPLETE"


def newest_run(root):
    """The newest complete benchmark run (with boot records) under root;
    an incomplete one is taken only when named."""
    runs = [d for d in glob.glob(os.path.join(root, "*"))
            if glob.glob(os.path.join(d, "boot-*", "opbench.json"))
            or glob.glob(os.path.join(d, "rep-*", "opbench.json"))]
    done = [d for d in runs
            if not os.path.exists(os.path.join(d, INCOMPLETE))]
    if not done:
        raise ResultsError(
            "no complete benchmark run under %s%s; run `make bench` first or "
            "name a results directory" % (root, "" if not runs else
                                          " (incomplete: %s)" % ", ".join(
                                              sorted(map(os.path.basename,
                                                         runs)))))
    return max(done, key=os.path.basename)


# The launcher's options that say how the guest ran, in the order the QEMU
# command gives them (vm-images/opbench_vm.py: machine_args, accel_args).
LAUNCH_FLAGS = ("-accel", "-cpu", "-icount", "-smp")


def launch_of(vm):
    """How QEMU ran the guest: the accelerator's arguments, the CPU model,
    the icount options (None without icount) and the vCPUs, as the
    launcher declares them in vm.json ("accel_args", "cpu", "icount",
    "smp"); "args" is what the report prints, the command's order."""
    if "accel_args" in vm:
        smp = vm.get("smp")
        return {"accel_args": list(vm["accel_args"]), "cpu": vm.get("cpu"),
                "icount": vm.get("icount"), "smp": smp,
                "args": (["-smp", str(smp)] if smp is not None else [])
                + list(vm["accel_args"])}
    # The fallback, for runs made before vm.json declared these fields
    # (opbench_vm.py wrote only the whole command, qemu_command): the
    # options are read back out of the command's arguments.
    cmd = vm.get("qemu_command", [])
    args = []
    for i, arg in enumerate(cmd):
        if arg in LAUNCH_FLAGS and i + 1 < len(cmd):
            args += [arg, cmd[i + 1]]
    opt = {args[i]: args[i + 1] for i in range(0, len(args), 2)}
    return {"accel_args": [x for i in range(0, len(args), 2)
                           if args[i] != "-smp" for x in args[i:i + 2]],
            "cpu": opt.get("-cpu"), "icount": opt.get("-icount"),
            "smp": vm.get("smp"), "args": args}


LOOP_RE = re.compile(r"^(\S+)\s+\+(0x[0-9a-f]+)\.\.\+(0x[0-9a-f]+)\s+(\d+)\s+"
                     r"(\d+)\s+(\d+)\s+(\d+)\s*$")


def kernel_size(rdir, arts):
    """{flavour: what analysis/kernel_size.py counted} for the flavours
    the run's artefacts name (kind kernel-size); {} for a run made before
    it counted them."""
    return {a["flavour"]: read_json(os.path.join(rdir, a["path"]))
            for a in arts or () if a["kind"] == "kernel-size"}


def walker_loops(rdir, arts=None):
    """{flavour: [loop, ...]} from walker-loops/<flavour>.txt, the tables
    analysis/walker_loops.py wrote at bench time: those the run's
    artefacts name (arts), or, in a run made before the index, those in
    the directory."""
    out = {}
    if arts is not None:
        files = [(a["flavour"], os.path.join(rdir, a["path"]))
                 for a in arts if a["kind"] == "walker-loops"]
    else:
        d = os.path.join(rdir, "walker-loops")
        files = [(n[:-4], os.path.join(d, n))
                 for n in (sorted(os.listdir(d)) if os.path.isdir(d) else [])
                 if n.endswith(".txt")]
    for flavour, path in files:
        rows = []
        for line in read_lines(path):
            m = LOOP_RE.match(line.strip())
            if m:
                rows.append({"function": m.group(1), "head": m.group(2),
                             "end": m.group(3), "insns": int(m.group(4)),
                             "loads": int(m.group(5)),
                             "cond_br": int(m.group(6)),
                             "stac_clac": int(m.group(7))})
        out[flavour] = rows
    return out


BT_SCALAR = re.compile(r"^@(\w+)\[([^\]]*)\]: (\d+)$")
# The warm-up samples of records made before the record head carried its
# warm-up count: guest-trace.sh ran opbench with one.
OLD_RECORDS_WARMUP = 1


def walk_counts(rdir, arts=None):
    """The walks bpftrace counted (tracing/rseq_ops_rate.bt, make bench's
    tracing step) beside the loops opbench ran in the same process: one
    {bench, nr_ops, walks, loops, declared} per traced benchmark, from the
    tracing directories the run's artefacts name (arts), or, in a run made
    before the index, those found by name."""
    out = []
    if arts is not None:
        paths = [os.path.join(rdir, a["path"], a.get("flavour", "ops"),
                              "rseq_ops_rate.bt.out")
                 for a in arts if a["kind"] == "walk-count"]
    else:
        paths = sorted(glob.glob(os.path.join(
            rdir, "tracing", "*-trace-bpf-ops-rseq_ops_rate-*", "ops",
            "rseq_ops_rate.bt.out")))
    for path in paths:
        d = os.path.dirname(path)
        walks = {}
        for ln in read_lines(path):
            m = BT_SCALAR.match(ln)
            if m and m.group(1) == "walks":
                walks[m.group(2)] = int(m.group(3))
        try:
            recs = read_records(os.path.join(d, "opbench.json"))
        except (OSError, ResultsError):
            continue
        timed = [r for r in recs if r.get("kind") in ("sample", "gaps")]
        if not timed:
            continue
        r0 = timed[0]
        bench = r0["bench"]
        # The warm-up samples walk too, and leave no sample record: the
        # record head says how many there were.
        loops = int(r0["loops"]) * (len(timed) +
                                    int(r0.get("warmup", OLD_RECORDS_WARMUP)))
        out.append({"bench": bench, "nr_ops": int(r0["nr_ops"]),
                    "walks": walks.get(bench), "loops": loops,
                    "declared": r0.get("walks_per_loop", 1),
                    "measured": walks[bench] / loops
                    if walks.get(bench) else None})
    return out


def latency_records(d, paths=None):
    """tracing/latency.sh's records under d (<flavour>/latency.json; the
    files of paths when the run's artefacts name them), each with the
    accelerator its boot ran under (the boot's vm.json) and the ticks per
    instruction opbench measured in it (its clock record)."""
    out = []
    if paths is None:
        paths = sorted(glob.glob(os.path.join(d, "*", "latency.json")))
    for p in paths:
        fd = os.path.dirname(p)
        accel = read_json(os.path.join(fd, "vm.json")).get("accel")
        ob = os.path.join(fd, "opbench.json")
        tpi = [float(r["ticks_per_insn"]) for r in
               (read_records(ob) if os.path.exists(ob) else [])
               if r.get("kind") == "clock"]
        for r in read_records(p):
            if r.get("kind") != "latency":
                continue
            r = dict(r, accel=accel, ticks_per_insn=tpi)
            if r.get("trace"):
                # A bad trace is the latency section's problem, said
                # there (latency.analyse), never the whole run's.
                try:
                    r["walks"] = walk_durations(os.path.join(fd, r["trace"]))
                except ResultsError as e:
                    r["walks_error"] = str(e)
            out.append(r)
    return out


# One call of the walker in a function_graph trace with the latency format
# (tracing/guest-latency.sh):
#  0)  d..1. |   2.518 us    |  rseq_ops_apply();
# the CPU, the flags (irqs-off, need-resched, hardirq/softirq,
# preempt-depth, migrate-disable), an overhead mark and the duration.
_FGRAPH_KEPT = re.compile(r"^# latency: .*?#(\d+)/(\d+),")
_FGRAPH_WALK = re.compile(r"^\s*\d+\)\s+(\S{4,6})\s+\|\s*[-+!#*@$]?\s*"
                          r"(\d+(?:\.\d+)?) us\s*\|\s*rseq_ops_apply\(\);")


def walk_durations(path):
    """The walks of a function_graph trace of rseq_ops_apply: a list of
    [nanoseconds, "irqs" | "preempt" | "preemptible"], the context being
    whether the walk ran with interrupts off (the fast path), with only
    preemption off (the slow path: a preempt depth in the flags), or
    preemptible (depth 0: the first slow path of v3, which no series
    here has any more)."""
    if not os.path.exists(path):
        raise ResultsError("%s: missing; its latency record names it" % path)
    out = []
    with open(path) as f:
        for line in f:
            # "# latency: 0 us, #210/210, CPU#0 ...": entries kept of
            # entries written; fewer kept, the ring buffer lost walks.
            lost = _FGRAPH_KEPT.match(line)
            if lost and lost.group(1) != lost.group(2):
                raise ResultsError(
                    "%s: the trace buffer kept %s of %s entries: walks were "
                    "lost; run with fewer LOOPS" % (path, lost.group(1),
                                                    lost.group(2)))
            m = _FGRAPH_WALK.match(line)
            if not m:
                if "rseq_ops_apply" in line:
                    raise ResultsError("%s: a walk line not understood: %r" %
                                       (path, line.rstrip()))
                continue
            flags, us = m.groups()
            if flags[0] in "dD":
                ctx = "irqs"
            elif flags[3] in ".0":
                ctx = "preemptible"
            else:
                ctx = "preempt"
            out.append([float(us) * 1000.0, ctx])
    return out


def read_json(path):
    """A JSON file's object, {} when the file does not exist."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ResultsError("%s: not JSON (%s)" % (path, e))


# What a boot's line in boots.jsonl adds to the boot (microbench/plan.py).
INDEX_KEYS = ("round", "seed", "host", "target")


ARTEFACT_KINDS = ("walker-loops", "walk-count", "latency", "bpf-facts",
                  "insn-profile", "kernel-size")


def read_artefacts(rdir):
    """The lines of the run's artefacts.jsonl (bench-run.sh's artefact()),
    each {"kind", "path" (relative to the run), ...}; [] when the run left
    none. A line of an unknown kind, or naming a path that does not exist,
    is an error of the run."""
    path = os.path.join(rdir, "artefacts.jsonl")
    if not os.path.exists(path):
        return []
    arts = read_records(path)
    for i, a in enumerate(arts, 1):
        if a.get("kind") not in ARTEFACT_KINDS or not a.get("path"):
            raise ResultsError("%s:%d: not an artefact line (kind one of %s, "
                               "and a path): %r" % (
                                   path, i, ", ".join(ARTEFACT_KINDS), a))
        if not os.path.exists(os.path.join(rdir, a["path"])):
            raise ResultsError("%s:%d: %s names %s, which is not in the run" %
                               (path, i, a["kind"], a["path"]))
    return arts


def read_index(rdir):
    """The run's index, {"run": run.json's object, "boots": boots.jsonl's
    lines}, as microbench/plan.py writes it; None for a run made before
    the index (its boots are found by their directories)."""
    bj = os.path.join(rdir, "boots.jsonl")
    if not os.path.exists(bj):
        return None
    boots = read_records(bj)
    for i, e in enumerate(boots, 1):
        missing = [k for k in ("dir",) + INDEX_KEYS if k not in e]
        if missing or not BOOT_RE.match(str(e.get("dir", ""))):
            raise ResultsError("%s:%d: a boot without %s: not written by "
                               "microbench/plan.py" % (
                                   bj, i, ", ".join(missing) or
                                   "a boot-<n>-<flavour> directory"))
    return {"run": read_json(os.path.join(rdir, "run.json")), "boots": boots}


# A counting pass's records (microbench/native-run.sh: the PMU's counters,
# in a pass of their own after the timed one), beside the boot's.
PMU_PASS = os.path.join("pmu", "opbench.json")


def _boot(d, m):
    rec = os.path.join(d, "opbench.json")
    tcm = os.path.join(d, "tcmodel.json")
    pmu = os.path.join(d, PMU_PASS)
    vm = read_json(os.path.join(d, "vm.json"))
    return {"index": int(m.group(1)), "flavour": m.group(2),
            "dir": os.path.basename(d),
            "records": read_records(rec) if os.path.exists(rec) else [],
            "pmu_records": (read_records(pmu) if os.path.exists(pmu)
                            else None),
            "tcmodel": read_records(tcm) if os.path.exists(tcm) else None,
            "kernel": read_kv(os.path.join(d, "kernel-provenance")),
            "guest": read_kv(os.path.join(d, "guest-info.txt"), ":"),
            "vm": vm, "launch": launch_of(vm) if vm else {},
            "native": read_json(os.path.join(d, "native.json")),
            "host_state": read_kv(os.path.join(d, "host-state")),
            "tsc_lines": read_lines(os.path.join(d, "tsc.txt")),
            "perf_bench": parse_perf_bench(os.path.join(d, "perf-bench.txt"))}


def _variant_boots(boot, d):
    """The cells a boot measured as other flavours (guest-bench.sh's
    bpf-zero.json on the bpf flavour: N = 0 before the BPF program was
    loaded, labelled bpf-unused and bpf-noprog), one boot each, with the
    index of the boot that ran them (the same round) and variant_of
    naming its flavour."""
    path = os.path.join(d, "bpf-zero.json")
    if not os.path.exists(path):
        return []
    by = {}
    for r in read_records(path):
        by.setdefault(r.get("flavour"), []).append(r)
    return [dict(boot, flavour=fl, records=recs, tcmodel=None,
                 pmu_records=None, perf_bench={}, variant_of=boot["flavour"])
            for fl, recs in sorted(by.items())
            if fl and fl != boot["flavour"]]


def _pool_units(boots, units):
    """A merged native run's repetitions pooled by boot (provenance
    boot_units, analysis/merge_runs.py: per repetition, the index of its
    boot's first): one entry a boot, under that first repetition's index
    and directory, holding every record of the boot's repetitions
    (reps: their indices), so that a boot is one value wherever the
    analysis takes a median a boot. Unchanged without boot_units, or
    when they do not name the boots there are."""
    units = units.split()
    if not units or not all(u.isdigit() for u in units) or \
            len(units) < max((b["index"] for b in boots), default=0):
        return boots
    out = {}
    for b in boots:
        u = int(units[b["index"] - 1])
        key = (u, b["flavour"])
        if key not in out:
            out[key] = dict(b, reps=[b["index"]], records=list(b["records"]),
                            tcmodel=(list(b["tcmodel"]) if b["tcmodel"]
                                     is not None else None),
                            pmu_records=(list(b["pmu_records"])
                                         if b.get("pmu_records") is not None
                                         else None))
            continue
        o = out[key]
        o["reps"].append(b["index"])
        o["records"] += b["records"]
        if b["tcmodel"] is not None:
            o["tcmodel"] = (o["tcmodel"] or []) + b["tcmodel"]
        if b.get("pmu_records") is not None:
            o["pmu_records"] = (o["pmu_records"] or []) + b["pmu_records"]
        o["tsc_lines"] = o["tsc_lines"] + b["tsc_lines"]
    return sorted(out.values(), key=lambda b: b["index"])


def load(rdir):
    """The run in rdir: provenance, boots and their records, the walker
    loops and the walks counted by tracing."""
    if not os.path.isdir(rdir):
        raise ResultsError("%s is not a directory; give a results/<date>-"
                           "<label>/ directory written by make bench" % rdir)
    boots, not_run = [], []
    index = read_index(rdir)
    # A run with an index names what its stages left (artefacts.jsonl);
    # one made before it is searched by name.
    arts = read_artefacts(rdir) if index is not None else None
    if index is not None:
        # The run's index (microbench/plan.py): the boots it planned, each
        # with its round, seed, host and target; a planned boot that left
        # no directory (a run cut short) is listed as not run.
        for e in index["boots"]:
            d = os.path.join(rdir, e["dir"])
            if not os.path.isdir(d):
                not_run.append(e["dir"])
                continue
            m = BOOT_RE.match(e["dir"])
            boots.append(dict(_boot(d, m), **{k: e[k] for k in INDEX_KEYS}))
            boots += _variant_boots(boots[-1], d)
    for d in ([] if index is not None else
              sorted(glob.glob(os.path.join(rdir, "boot-*")) +
                     glob.glob(os.path.join(rdir, "rep-*")))):
        m = BOOT_RE.match(os.path.basename(d))
        if m and os.path.isdir(d):
            boots.append(_boot(d, m))
            boots += _variant_boots(boots[-1], d)
    boots.sort(key=lambda b: b["index"])
    prov = read_kv(os.path.join(rdir, "provenance"))
    boots = _pool_units(boots, prov.get("boot_units", ""))
    if not boots:
        raise ResultsError("%s has no boot-<n>-<flavour>/ or rep-<n>-<label>/ "
                           "directories: not a results directory of make "
                           "bench" % rdir)
    if not any(b["records"] for b in boots):
        raise ResultsError("%s: no boot produced records; see the boots' "
                           "console.log and opbench.log" % rdir)
    return {"dir": os.path.abspath(rdir), "name": os.path.basename(
        os.path.abspath(rdir)),
            "index": index["run"] if index is not None else None,
            "not_run": not_run,
            "provenance": prov, "boots": boots,
            "manifest": read_kv(os.path.join(rdir, "manifest")),
            "incomplete": (read_kv(os.path.join(rdir, INCOMPLETE))
                           if os.path.exists(os.path.join(rdir, INCOMPLETE))
                           else None),
            "walk_counts": walk_counts(rdir, arts),
            "latency": latency_records(
                os.path.join(rdir, "latency"),
                None if arts is None else
                [os.path.join(rdir, a["path"]) for a in arts
                 if a["kind"] == "latency"]),
            "walker_loops": walker_loops(rdir, arts),
            "kernel_size": kernel_size(rdir, arts),
            "artefacts": arts}
