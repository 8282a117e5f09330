#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""plan.py - a benchmark plan, read once: the plan's only reader, the
boots' only shuffle, and the only parser of a benchmark word.

    plan.py sh PLAN      the resolved plan as shell assignments (common.sh's
                         load_plan evaluates them)
    plan.py make PLAN    PLAN_FLAVOURS and PLAN_LATENCY as make assignments,
                         joined by " ;; " (the Makefile reads them once)
    plan.py cells PLAN --benches FILE [--run-json OUT]
                         the plan's cells, one line each, in the plan's
                         order (the native runner and the kit draw each
                         repetition's order themselves); FILE is opbench's
                         table (opbench --list --json); OUT: also the
                         native run's run.json (the native runner copies
                         it into the run and writes boots.jsonl itself)
    plan.py fact NAME    a fact decided once: list_limit (rseq-op-abi.h) or
                         irqs_off_max (the ops flavour's series)
    plan.py index PLAN OUT --benches FILE --seed S [--runner R] [--accel A]
                         the run's index in OUT: run.json (the resolved
                         plan, the seed, the runner, opbench's table, the
                         benchmarks the tracing counts), boots.jsonl (one
                         line per boot: its number, round, flavour, seed,
                         target, directory and cells) and
                         plan/boot-<n>.cells (the cells the boot runs, in
                         its order); prints one line per boot: "<n>
                         <flavour> <seed> <cells file>"

A plan is microbench/plans/<PLAN>.plan, KEY=VALUE lines as a shell reads
them; a variable set in the environment (even empty) wins over its line.
A benchmark word is NAME[:VARIANT][@N,N,...]: VARIANT scattered
(--layout scattered), waker-ops (preempt --waker-ops), legacy or glibc
(--reg); @N,... replaces SWEEP for it. In a list of N, "limit" is the list
limit, "bound" the fast path's bound (plan.py fact) and "powers" every
power of two up to the limit. The word tcmalloc runs the TCMalloc model.
A cell line, as microbench/guest-bench.sh runs it:

    WORD BENCH OPS TYPE PLACE [OPTION...]   TYPE "default": the bench's own;
                                            PLACE "alone" (the other CPUs
                                            offline in a guest) or "any",
                                            from opbench's table
    tcmalloc tcmalloc - - any

Bad input exits 2 with a message that names the problem and the fix.
"""
import functools
import json
import os
import random
import re
import shlex
import socket
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLANS = os.path.join(TOP, "microbench", "plans")
VARS = ("FLAVOURS", "SWEEP", "LOOPS", "PREEMPT_LOOPS", "SAMPLES", "WARMUP",
        "BENCHES", "TYPES", "BOOTS", "PERF_BENCH", "LATENCY")
ABI_H = os.path.join(TOP, "microbench", "rseq-op-abi.h")


@functools.lru_cache(maxsize=None)
def list_limit():
    """The list limit, as the programs are built with it (rseq-op-abi.h's
    OB_RSEQ_OP_LIST_LIMIT, the series' uapi value): its one declaration."""
    with open(ABI_H) as f:
        m = re.search(r"^#define\s+OB_RSEQ_OP_LIST_LIMIT\s+(\d+)\s*$",
                      f.read(), re.M)
    if not m:
        raise PlanError("%s: no OB_RSEQ_OP_LIST_LIMIT" % ABI_H)
    return int(m.group(1))

VARIANTS = {"scattered": ["--layout", "scattered"],
            "waker-ops": ["--waker-ops"],
            "legacy": ["--reg", "legacy"],
            "glibc": ["--reg", "glibc"]}


class PlanError(Exception):
    pass


def read_declarations(path, keys, what):
    """{KEY: value} of a file of KEY=VALUE lines as a shell reads them
    (quotes, comments), KEY one of keys: a plan or a flavour's declaration.
    """
    out = {}
    with open(path) as f:
        for i, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            key, eq, val = s.partition("=")
            if not eq or key not in keys:
                raise PlanError("%s:%d: not %s line (KEY=VALUE, KEY one of "
                                "%s): %r" % (path, i, what, " ".join(keys), s))
            try:
                out[key] = " ".join(shlex.split(val, comments=True))
            except ValueError as e:
                raise PlanError("%s:%d: %s" % (path, i, e))
    return out


# The declarations: the tree's, or another directory of them
# (FLAVOURS_DIR, as scripts/common.sh's flavour_get reads it).
FLAVOURS_DIR = (os.environ.get("FLAVOURS_DIR") or
                os.path.join(TOP, "kernel-patch", "flavours"))
FLAVOUR_KEYS = ("SERIES", "FIXED", "EXTRA", "SEMANTICS", "VIA", "SELFTESTS",
                "PRELOAD", "DESIGN", "LABEL", "COLOUR", "N0_EXPLAINED",
                "FIT_FROM")


@functools.lru_cache(maxsize=None)
def flavour_decls():
    """{name: {key: value}} of every declaration in kernel-patch/flavours/
    (lower-case keys; DESIGN an int), as the run's index records them."""
    out = {}
    for f in sorted(os.listdir(FLAVOURS_DIR)):
        if not f.endswith(".flavour"):
            continue
        path = os.path.join(FLAVOURS_DIR, f)
        d = {k.lower(): v for k, v in
             read_declarations(path, FLAVOUR_KEYS, "a declaration").items()}
        if d.get("design"):
            if not d["design"].isdigit():
                raise PlanError("%s: DESIGN='%s': want its rank, a whole "
                                "number" % (path, d["design"]))
            d["design"] = int(d["design"])
        if d.get("fit_from"):
            if not d["fit_from"].isdigit() or int(d["fit_from"]) < 1:
                raise PlanError("%s: FIT_FROM='%s': want the smallest N of "
                                "the slope's fit, a whole number >= 1"
                                % (path, d["fit_from"]))
            d["fit_from"] = int(d["fit_from"])
        out[f[:-len(".flavour")]] = d
    return out


def series_patches(series):
    """The patch files of a series directory, as common.sh's patch_list
    orders them (a `series` file, or *.patch by name)."""
    order = os.path.join(series, "series")
    if os.path.isfile(order):
        with open(order) as f:
            names = [ln.split("#")[0].strip() for ln in f]
        return [os.path.join(series, n) for n in names if n]
    return sorted(os.path.join(series, n) for n in os.listdir(series)
                  if n.endswith(".patch"))


def fast_path_bound(decls):
    """RSEQ_OP_IRQS_OFF_MAX as the ops flavour's series defines it: the
    most operations its exit applies with interrupts off (the bound's one
    declaration is the series itself); None when the series has none."""
    series = os.path.join(TOP, decls.get("ops", {}).get("series", ""))
    if not os.path.isdir(series):
        return None
    for p in series_patches(series):
        with open(p, errors="replace") as f:
            m = re.search(r"^\+#define\s+RSEQ_OP_IRQS_OFF_MAX\s+(\d+)\s*$",
                          f.read(), re.M)
        if m:
            return int(m.group(1))
    return None


@functools.lru_cache(maxsize=None)
def irqs_off_max():
    """The fast path's bound of the ops flavour's series, read once."""
    return fast_path_bound(flavour_decls())


def plan_names():
    return sorted(f[:-len(".plan")] for f in os.listdir(PLANS)
                  if f.endswith(".plan"))


def read_plan(name, env):
    """The plan NAME with the environment's variables over its lines: a
    dict of VARS (a variable neither sets is absent)."""
    if env.get("BENCH_PROFILE"):
        raise PlanError("BENCH_PROFILE is now PLAN (quick|default|walker): "
                        "PLAN=%s" % env["BENCH_PROFILE"])
    if env.get("OPS"):
        raise PlanError("OPS is the N of one traced run; a benchmark plan's "
                        "list of N is SWEEP (e.g. SWEEP=0,1,limit)")
    path = os.path.join(PLANS, name + ".plan")
    if "/" in name or not os.path.isfile(path):
        raise PlanError("PLAN='%s' is unknown; use one of: %s" %
                        (name, " ".join(plan_names())))
    plan = read_declarations(path, VARS, "a plan")
    for v in VARS:
        if v in env:
            plan[v] = env[v]
    plan["_file"] = os.path.relpath(path, TOP)
    return plan


def number(plan, key, least=0, default=None):
    v = plan.get(key, "")
    if v == "" and default is not None:
        return default
    if not v.isdigit() or int(v) < least:
        raise PlanError("%s='%s': want a whole number, at least %d" %
                        (key, v, least))
    return int(v)


def op_list(text, what):
    """The N of a list: numbers, or the facts' names limit (the list
    limit) and bound (the fast path's bound), so that a plan names them
    and does not copy their values, or powers: every power of two up to
    the limit, and the limit. An N named twice is taken once."""
    ns = []
    top = list_limit()
    for x in text.split(","):
        if x == "powers":
            p = 1
            while p < top:
                if p not in ns:
                    ns.append(p)
                p *= 2
            x = str(top)
        if x == "limit":
            x = str(top)
        elif x == "bound":
            b = irqs_off_max()
            if b is None:
                raise PlanError("%s='%s': 'bound' is not known (the ops "
                                "flavour's series defines no "
                                "RSEQ_OP_IRQS_OFF_MAX)" % (what, text))
            x = str(b)
        if not x.isdigit() or int(x) > top:
            raise PlanError("%s='%s': want numbers of operations from 0 to "
                            "%d (or limit, bound, powers), comma-separated"
                            % (what, text, top))
        if int(x) not in ns:
            ns.append(int(x))
    return ns


def read_benches(path):
    """{name: row} of opbench's table as opbench --list --json exports it
    (name, summary, walks_per_loop, expect, type, alone, traced)."""
    try:
        with open(path) as f:
            rows = json.load(f)
        return {r["name"]: r for r in rows}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PlanError("--benches %s: not opbench's table (opbench --list "
                        "--json): %s" % (path, e))


def expand_word(word, sweep, types, benches):
    """The cell lines of one benchmark word."""
    if word == "tcmalloc":
        return ["tcmalloc tcmalloc - - any"]
    name, _, rest = word.partition(":")
    variant, _, ops = rest.partition("@")
    if "@" in name:
        name, _, ops = name.partition("@")
    if not name or not name.replace("_", "").isalnum():
        raise PlanError("BENCHES: '%s' is not a benchmark word "
                        "(NAME[:VARIANT][@N,...], see opbench --list)" % word)
    if variant and variant not in VARIANTS:
        raise PlanError("BENCHES: %s: unknown variant '%s' (%s)" %
                        (word, variant, ", ".join(sorted(VARIANTS))))
    if word.endswith("@"):
        raise PlanError("BENCHES: %s: an empty list of N after '@' (give "
                        "N, e.g. %s0,1, or drop the '@' for SWEEP)" %
                        (word, word))
    ops = ",".join(map(str, op_list(ops or sweep, "the N of %s" % word)))
    if benches is None:	# sh, make: the words' grammar only
        return []
    if name not in benches:
        raise PlanError("BENCHES: %s: opbench has no benchmark '%s' (%s, "
                        "or tcmalloc)" % (word, name, " ".join(benches)))
    place = "alone" if benches[name]["alone"] else "any"
    return ["%s %s %s %s %s" % (word, name, ops, t, place) +
            "".join(" " + a for a in VARIANTS.get(variant, []))
            for t in types]


def resolve(plan, benches):
    """The checked plan: its words expanded into cells, each benchmark
    looked up in opbench's table (benches)."""
    sweep = plan.get("SWEEP", "")
    op_list(sweep, "SWEEP")
    for k in ("LOOPS", "SAMPLES", "WARMUP"):
        number(plan, k, least=1 if k != "WARMUP" else 0)
    number(plan, "PREEMPT_LOOPS", least=1, default=0)
    b = plan.get("BOOTS") or "5"
    if not b.isdigit() or int(b) < 1:
        raise PlanError("BOOTS='%s': want a number of boots per flavour, at "
                        "least 1 (3 or more for the A/A floor)" % b)
    if plan.get("PERF_BENCH", "0") not in ("0", "1", ""):
        raise PlanError("PERF_BENCH='%s': want 1 (run perf bench beside) or "
                        "0" % plan["PERF_BENCH"])
    words = plan.get("BENCHES", "").split()
    if not words:
        raise PlanError("BENCHES is empty: name the benchmarks (opbench "
                        "--list), e.g. BENCHES=\"syscall switch\"")
    types = plan.get("TYPES", "").split() or ["default"]
    cells = []
    for w in words:
        cells += expand_word(w, sweep, types, benches)
    return cells


def draw_boots(flavours, boots, seed):
    """(round, flavour) per boot: rounds of every flavour once, each
    round's order drawn from the seed."""
    rng = random.Random(seed)
    out = []
    for r in range(boots):
        rnd = list(flavours)
        rng.shuffle(rnd)
        out += [(r, f) for f in rnd]
    return out


def draw_cells(cells, seed):
    """A boot's cells in an order drawn from its seed, every type of one
    word together (0: the plan's order)."""
    words = []
    for c in cells:
        w = c.split()[0]
        if not words or words[-1][0] != w:
            words.append((w, []))
        words[-1][1].append(c)
    if seed:
        random.Random(seed).shuffle(words)
    return [c for _, cs in words for c in cs]


def write_new(path, text):
    with open(path, "x") as f:
        f.write(text)


def run_json(name, plan, benches, cells, **run):
    """run.json's text: the resolved plan, opbench's table and the facts
    decided once, with RUN's keys (seed, runner, accel, host, boots,
    flavours: None where the runner decides them as it runs, natively)."""
    return json.dumps({
        "plan": name, "plan_file": plan["_file"],
        "vars": {k: plan.get(k, "") for k in VARS},
        "seed": run.get("seed"), "runner": run.get("runner"),
        "accel": run.get("accel"), "host": run.get("host"),
        "boots_per_flavour": run.get("boots"),
        "flavours": run.get("flavours"),
        "list_limit": list_limit(), "cells": cells,
        "irqs_off_max": irqs_off_max(),
        "benches": list(benches.values()),
        # The plan's benchmarks whose walks the tracing step counts.
        "traced": [b for b in benches if benches[b]["traced"] and any(
            c.split()[1] == b for c in cells)],
        "flavour_decls": flavour_decls()}, indent=1) + "\n"


def index(name, out, seed, runner, accel, env, bench_table):
    plan = read_plan(name, env)
    benches = read_benches(bench_table)
    cells = resolve(plan, benches)
    boots = number(plan, "BOOTS", least=1, default=5)
    flavours = plan.get("FLAVOURS", "").split()
    if not flavours:
        raise PlanError("no flavours to boot: FLAVOURS is empty")
    if seed < 1:
        raise PlanError("SEED='%d': want a positive integer" % seed)
    if not os.path.isdir(out):
        raise PlanError("%s is not a directory: the run's directory is made "
                        "first (bench-run.sh)" % out)
    os.makedirs(os.path.join(out, "plan"))
    host = socket.gethostname()
    target = "x86_64-" + accel
    write_new(os.path.join(out, "run.json"), run_json(
        name, plan, benches, cells, seed=seed, runner=runner, accel=accel,
        host=host, boots=boots, flavours=flavours))
    lines = []
    table = []
    for i, (rnd, fl) in enumerate(draw_boots(flavours, boots, seed), 1):
        bseed = seed + i
        order = draw_cells(cells, bseed)
        cf = os.path.join(out, "plan", "boot-%d.cells" % i)
        write_new(cf, "".join(c + "\n" for c in order))
        lines.append(json.dumps({
            "boot": i, "round": rnd, "host": host, "target": target,
            "flavour": fl, "kconfig": env.get("KCONFIG", "default"),
            "seed": bseed, "dir": "boot-%d-%s" % (i, fl),
            "cells": os.path.relpath(cf, out)}))
        table.append("%d %s %d %s" % (i, fl, bseed, cf))
    write_new(os.path.join(out, "boots.jsonl"), "\n".join(lines) + "\n")
    return table


def main(argv):
    env = dict(os.environ)
    if len(argv) == 3 and argv[1] == "fact":
        facts = {"list_limit": list_limit,
                 "irqs_off_max": irqs_off_max}
        if argv[2] not in facts:
            raise PlanError("plan.py fact: want one of %s" %
                            " ".join(sorted(facts)))
        v = facts[argv[2]]()
        if v is None:
            raise PlanError("%s: not found (the ops flavour's series, "
                            "kernel-patch/flavours/ops.flavour)" % argv[2])
        print(v)
        return
    usage = ("usage: plan.py sh|make PLAN, plan.py cells PLAN --benches "
             "FILE [--run-json OUT], plan.py index PLAN OUT --benches FILE --seed S "
             "[--runner R] [--accel A], or plan.py fact "
             "list_limit|irqs_off_max")
    if len(argv) < 3 or argv[1] not in ("sh", "make", "cells", "index"):
        raise PlanError(usage)
    cmd, name = argv[1], argv[2]
    if cmd in ("index", "cells"):
        opt = {"--seed": None, "--runner": "qemu", "--accel": "icount",
               "--benches": None, "--run-json": None}
        rest = argv[4:] if cmd == "index" else argv[3:]
        if (cmd == "index" and len(argv) < 4) or len(rest) % 2 or any(
                k not in opt for k in rest[::2]):
            raise PlanError(usage)
        opt.update(zip(rest[::2], rest[1::2]))
        if not opt["--benches"]:
            raise PlanError("plan.py %s: --benches FILE, opbench's table "
                            "(opbench --list --json), is needed" % cmd)
        if cmd == "cells":
            plan = read_plan(name, env)
            benches = read_benches(opt["--benches"])
            cells = resolve(plan, benches)
            if opt["--run-json"]:
                # A native run's run.json: the runner decides its boots,
                # seed and host as it runs (native-run.sh's boots.jsonl).
                write_new(opt["--run-json"], run_json(
                    name, plan, benches, cells, runner="native",
                    accel="native"))
            print("\n".join(cells))
            return
        if not (opt["--seed"] or "").isdigit():
            raise PlanError("--seed '%s': want a positive integer" %
                            opt["--seed"])
        for ln in index(name, argv[3], int(opt["--seed"]), opt["--runner"],
                        opt["--accel"], env, opt["--benches"]):
            print(ln)
        return
    plan = read_plan(name, env)
    # sh and make check the plan's values; its words are checked against
    # opbench's table when the cells are planned.
    resolve(plan, None)
    if cmd == "sh":
        for k in VARS:
            if k in plan:
                print("%s=%s" % (k, shlex.quote(plan[k])))
        print("PLAN_FILE=%s" % shlex.quote(os.path.join(TOP, plan["_file"])))
    elif cmd == "make":
        print(" ;; ".join("PLAN_%s := %s" % (k, plan.get(k, ""))
                          for k in ("FLAVOURS", "LATENCY")))


if __name__ == "__main__":
    try:
        main(sys.argv)
    except PlanError as e:
        print(e, file=sys.stderr)
        sys.exit(2)
