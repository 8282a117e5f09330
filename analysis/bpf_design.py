# SPDX-License-Identifier: GPL-2.0
"""bpf_design - the section "Why not BPF?" of the report: the BPF design
(flavour bpf: kernel-patch/bpf/ and microbench/bpf/) against series v3
(designs.ANCHOR), from what designs.analyse already computed for it, and
what the design requires, from the run's own measurement of it
(microbench/bpf/guest-bpf-facts.sh: bpf/<date>-bpf-facts-bpf/facts.txt).
"""
import glob
import os
import textwrap

from cross_checks import LEGACY_IRQS_OFF_MAX
from designs import ANCHOR, BPF_VARIANTS
from report_core import (CI_HEAD, CONF, RULE, WIDTH, ci, num, ratio,
                         ratio_ci)

FLAVOUR = "bpf"
# The facts' sections, in the order the report gives them, and their titles.
FACTS = (("capabilities", "Capabilities the loader needs (rseq-bpf-ops "
          "load under setpriv)"),
         ("kernel-log", "What the kernel logs at load"),
         ("verifier", "What the verifier said of the walks not taken "
          "(rseq-bpf-ops probe)"),
         ("unprivileged", "Registration by an unprivileged thread "
          "(opbench --via bpf as uid 65534)"),
         ("fault", "A destination that faults (bpf-fault)"))


def read_facts(rdir, arts=None):
    """{section: {"lines": [...], "result": str}} from the run's facts.txt
    (the last the run's artefacts name, arts; in a run made before the
    index, the newest found by name), with its path; None when the run has
    none."""
    if arts is not None:
        paths = [os.path.join(rdir, x["path"]) for x in arts
                 if x["kind"] == "bpf-facts"]
    else:
        paths = sorted(glob.glob(os.path.join(rdir, "bpf", "*-bpf-facts-bpf",
                                              "facts.txt")))
    if not paths:
        return None
    out, cur = {}, None
    with open(paths[-1]) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("== "):
                cur = out.setdefault(line[3:].strip(),
                                     {"lines": [], "result": None})
            elif cur is not None and line.startswith("result: "):
                cur["result"] = line[len("result: "):]
            elif cur is not None and line.strip():
                cur["lines"].append(line)
    return {"path": os.path.relpath(paths[-1], rdir), "sections": out}


# The instruction profile bench-run.sh takes of bpf's walk beside ops' at
# the fast path's bound (trace.sh insn bpf switch N ops N; a run made
# before the index took it at the bound of then), and the rows the report
# shows.
PROFILE_OPS = LEGACY_IRQS_OFF_MAX
PROFILE_ROWS = {"bpf": ("rseq_exit_bpf_hook_[k]", "[jit or module text]_[k]",
                        "bpf_probe_write_user_[k]",
                        "__htab_map_lookup_elem_[k]"),
                "ops": ("rseq_ops_apply_[k]",)}


def read_table(path):
    """insnprof's table.txt: {"per_walk": float, "rows": {function: (self,
    incl)}} per walk, or None."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    if not lines or "per walk: " not in lines[0]:
        return None
    rows = {}
    for line in lines[2:]:
        p = line.split(None, 2)
        if len(p) == 3:
            try:
                rows[p[2]] = (float(p[0]), float(p[1]))
            except ValueError:
                continue
    return {"per_walk": float(lines[0].rsplit("per walk: ", 1)[1]),
            "rows": rows}


def read_profile(rdir, arts=None):
    """The run's instruction profile of bpf's walk and ops' (tracing/*-
    trace-insn-bpf-switch-N/: the last the run's artefacts name, arts, at
    the N they say; in a run made before the index, the newest found by
    name at PROFILE_OPS), or None."""
    if arts is not None:
        named = [(x["path"], int(x["nr_ops"])) for x in arts
                 if x["kind"] == "insn-profile"]
    else:
        named = [(os.path.relpath(d, rdir), PROFILE_OPS) for d in
                 sorted(glob.glob(os.path.join(
                     rdir, "tracing",
                     "*-trace-insn-bpf-switch-%d" % PROFILE_OPS)))]
    if not named:
        return None
    path, n = named[-1]
    out = {"path": path, "ops_n": n}
    for fl in ("bpf", "ops"):
        out[fl] = read_table(os.path.join(rdir, path, "%s-%d" % (fl, n),
                                          "table.txt"))
    return out if out["bpf"] else None


def analyse(a):
    """The BPF design beside ANCHOR, or None when the run has no bpf."""
    d = a.get("designs")
    if not d or FLAVOUR not in d["flavours"]:
        return None
    pick = lambda rows: [r for r in rows
                         if r["flavour"] in (FLAVOUR, ANCHOR)]
    return {
        "slopes": pick(d["slopes"]),
        "ratios": [r for r in d["ratios"] if r["flavour"] == FLAVOUR],
        "zero": [z for z in d["zero"] if z["flavour"] in
                 (ANCHOR, FLAVOUR) + tuple(f for f, _ in BPF_VARIANTS)],
        "register": pick(d["register"]),
        "register_ns": d["register_ns"],
        "missing": pick(d.get("missing", [])),
        "names": d["names"],
        "facts": read_facts(a["dir"], a.get("artefacts")),
        "profile": read_profile(a["dir"], a.get("artefacts")),
    }


def _fact_lines(facts):
    if not facts:
        return textwrap.wrap(
            "Requirements: not measured in this run (no bpf/*/facts.txt: "
            "its step failed, see bpf-facts.log, or the run predates it; "
            "make bpf-facts measures them on their own).", WIDTH)
    out = textwrap.wrap("Requirements, measured in a boot of the bpf "
                        "kernel (%s):" % facts["path"], WIDTH)
    for key, title in FACTS:
        sec = facts["sections"].get(key)
        out += [""] + textwrap.wrap(title + ":", WIDTH)
        if not sec:
            out.append("  not measured (no section '%s')" % key)
            continue
        for line in sec["lines"]:
            out += textwrap.wrap(line, WIDTH, initial_indent="  ",
                                 subsequent_indent="    ")
        if sec["result"]:
            out += textwrap.wrap("=> " + sec["result"], WIDTH,
                                 initial_indent="  ",
                                 subsequent_indent="     ")
    return out


def _profile_lines(prof, bound=PROFILE_OPS):
    if not prof:
        return textwrap.wrap(
            "Instruction profile of the walk: not taken in this run (no "
            "tracing/*-trace-insn-bpf-switch-%d/: make plugin-header, or "
            "make flamegraph MODE=instructions FLAVOUR=bpf OPS=%d VS=\"ops "
            "%d\")." % (bound, bound, bound), WIDTH)
    n = prof["ops_n"]
    out = textwrap.wrap(
        "Instruction profile of switch at N = %d, every guest instruction "
        "counted by the QEMU plugin (%s), instructions per walk, self and "
        "with callees:" % (n, prof["path"]), WIDTH)
    out.append("  %-6s %-30s %9s %9s" % ("design", "function", "self",
                                         "incl"))
    for fl in ("bpf", "ops"):
        t = prof.get(fl)
        if not t:
            out.append("  %-6s not profiled" % fl)
            continue
        for fn in PROFILE_ROWS[fl]:
            if fn in t["rows"]:
                s, i = t["rows"][fn]
                out.append("  %-6s %-30s %9.1f %9.1f" % (fl, fn[:30], s, i))
    hook = prof["bpf"]["rows"].get(PROFILE_ROWS["bpf"][0])
    walk = (prof.get("ops") or {}).get("rows", {}).get(PROFILE_ROWS["ops"][0])
    if hook:
        out += textwrap.wrap(
            "  Below the hook: %.1f per operation on bpf%s, the walk's "
            "fixed costs spread over its %d operations (the JIT image "
            "holds the trampoline, the program and its inlined bpf_loop(); "
            "it is not in System.map)." % (
                hook[1] / n, ", %.1f in ops' walker" % (walk[1] / n)
                if walk else "", n), WIDTH, subsequent_indent="  ")
    return out


def bpf_lines(b, a):
    """The section "Why not BPF?" (analyse())."""
    unit = a["unit"]
    icount = a["accel"] == "icount"
    lines = [RULE, "Why not BPF? The operations as a BPF program at the "
             "same exit point", ""]
    lines += textwrap.wrap(
        "bpf: the unpatched tree plus kernel-patch/bpf/: the exit to user "
        "space calls an empty __weak noinline function, "
        "rseq_exit_bpf_hook(cpu_id, mm_cid), where the series applies its "
        "operations (after a switch, before a signal handler), for threads "
        "that opted in with prctl(PR_RSEQ_BPF_EXIT_HOOK). The program "
        "(microbench/bpf/rseq_ops.bpf.c) is attached to it with fentry; "
        "each thread's operations sit in its slot of an mmapped array map, "
        "which the thread fills with plain stores; the program applies "
        "them in order with bpf_loop() and bpf_probe_write_user(). "
        "Figures: %s, mean over boots, %s CI.%s" % (
            unit, CONF, " Instructions under QEMU icount, not time."
            if icount else ""), WIDTH)
    sl = {(s["bench"], s["flavour"]): s for s in b["slopes"]}
    ratios = {r["bench"]: r for r in b["ratios"]}
    benches = sorted({k[0] for k in sl}, key=lambda x: (x != "switch", x))
    if benches:
        lines += ["", "Per operation per walk (slope of a + b*N), and "
                  "bpf / %s, ratio [CI]:" % ANCHOR]
        lines.append("  %-8s %-6s %10s  %s" % ("bench", "design", "slope",
                                              CI_HEAD))
        for bench in benches:
            for fl in (ANCHOR, FLAVOUR):
                s = sl.get((bench, fl))
                if not s:
                    continue
                r = ratios.get(bench) if fl == FLAVOUR else None
                lines.append("  %-8s %-6s %10s  %s" % (
                    bench, fl, num(s["value"]), ci(s["ci"])))
                if r and r["ratio"] is not None and r["ratio_ci"]:
                    lines.append("  %-8s bpf / %s %s %s" % (
                        "", ANCHOR, ratio(r["ratio"]),
                        ratio_ci(r["ratio_ci"])))
        lines += ["", "One walk of the largest N (from the fit), %s:" % unit]
        for bench in benches:
            for fl in (ANCHOR, FLAVOUR):
                s = sl.get((bench, fl))
                if s and s.get("walk_max") is not None:
                    lines.append("  %-8s %-6s N=%-5d %10s  %s" % (
                        bench, fl, s["n_max"], num(s["walk_max"]),
                        ci(s["walk_max_ci"])))
    for m in b["missing"]:
        lines += textwrap.wrap("%s %s: no slope: %s" % (
            m["bench"], m["flavour"], m["why"]), WIDTH,
            initial_indent="  ", subsequent_indent="    ")
    if b["zero"]:
        lines += [""] + textwrap.wrap(
            "N = 0 against the unpatched kernel, %s per loop: a thread on "
            "the bpf kernel that does not use the hook (bpf-unused), one "
            "that opted in with no program attached (bpf-noprog), one with "
            "the program attached and no operation (bpf), and %s with no "
            "operation:" % (unit, ANCHOR), WIDTH)
        order = [ANCHOR] + [f for f, _ in BPF_VARIANTS] + [FLAVOUR]
        for z in sorted(b["zero"], key=lambda z: (z["bench"],
                                                   order.index(z["flavour"]))):
            lines.append("  %-8s %-11s %10s  %s" % (
                z["bench"], z["flavour"], num(z["diff"], True),
                ci(z["diff_ci"], True)))
    if b["register"]:
        show = b["register_ns"]
        lines += [""] + textwrap.wrap(
            "Registration of one more operation and its removal, with N "
            "held, %s per round trip (%s: two prctl() calls; bpf: stores "
            "into the thread's slot, no system call):" % (unit, ANCHOR),
            WIDTH)
        lines.append("  %-6s" % "design" + "".join(
            "%10s" % ("N=%d" % n) for n in show))
        for r in b["register"]:
            by = {c["nr_ops"]: c["value"] for c in r["cells"]}
            lines.append("  %-6s" % r["flavour"] + "".join(
                "%10s" % (num(by[n]) if n in by else "n/a") for n in show))
    lines += [""] + _profile_lines(b.get("profile"),
                                   a.get("irqs_off_max", PROFILE_OPS))
    lines += [""] + _fact_lines(b["facts"])
    lines += [""] + textwrap.wrap(
        "What it cannot promise, as built: a store that faults is skipped "
        "and counted, and the thread is not told unless it reads the "
        "count (RSEQ operations kill it with SIGSEGV, the RFC's "
        "semantics); bpf_probe_write_user() cannot fault a page in, so a "
        "destination that is not present (never touched, swapped out, "
        "copy-on-write after fork()) is skipped too, where the series "
        "faults it in on its slow path; the benchmarks touch every "
        "destination at registration, and a sample in which the program "
        "skipped a store fails its gate. Loading needs the capabilities "
        "above, so an administrator has to load the program; its map is "
        "one for all threads, so opening it to users lets any of them "
        "rewrite any thread's destinations. What it would "
        "need from the kernel to replace RSEQ operations: a hook at this "
        "exit point for opted-in tasks (the patch here), a helper or kfunc "
        "that writes the current task's user memory and reports a fault to "
        "the task, and a way for an unprivileged thread to attach its own "
        "operations.", WIDTH)
    return lines


def cover_lines(a, wrap):
    """The cover letter's paragraph "Why not BPF?" (cover_perf.py), from
    the same run, or nothing when it has no bpf; wrap(text, indent) as
    cover_perf wraps."""
    b = a.get("bpf")
    if not b:
        return []
    unit = a["unit"]
    sl = {(s["bench"], s["flavour"]): s for s in b["slopes"]}
    ratios = {r["bench"]: r for r in b["ratios"]}
    parts = []
    for bench in ("switch", "signal", "preempt"):
        s, r = sl.get((bench, FLAVOUR)), ratios.get(bench)
        if s and r and r["ratio"] is not None and r["ratio_ci"]:
            parts.append("%s %s per operation per walk, %s %s times "
                         "%s's" % (bench, num(s["value"]), ratio(r["ratio"]),
                                   ratio_ci(r["ratio_ci"]), ANCHOR))
    walk = [s for s in b["slopes"] if s["flavour"] == FLAVOUR
            and s["bench"] == "switch" and s.get("walk_max") is not None]
    zero = {(z["bench"], z["flavour"]): z for z in b["zero"]}
    zparts = ["%s %s" % (fl, num(zero[("switch", fl)]["diff"], True))
              for fl in [f for f, _ in BPF_VARIANTS] + [FLAVOUR]
              if ("switch", fl) in zero]
    facts = (b.get("facts") or {}).get("sections", {})
    res = lambda k: (facts.get(k) or {}).get("result")
    text = ("Why not BPF? The thread asked it; the workbench measures it. "
            "The same operations as a BPF program at the same exit point "
            "(an empty hook function the exit to user space calls for "
            "threads that opted in with a prctl(), an fentry program, each "
            "thread's operations in an mmapped array map, applied with "
            "bpf_loop() and bpf_probe_write_user()), in the same run, %s: "
            % unit)
    text += "; ".join(parts) if parts else "no slope measured"
    if walk:
        text += "; a walk of %d operations %s" % (walk[0]["n_max"],
                                                   num(walk[0]["walk_max"]))
    if zparts:
        text += ("; at N = 0 against the unpatched kernel, per switch "
                 "loop: %s" % ", ".join(zparts))
    text += ". "
    labels = (("capabilities", "the loader"), ("kernel-log", "the kernel "
                                                "log"),
              ("unprivileged", "unprivileged threads"),
              ("fault", "faulting destinations"))
    known = [(lab, res(k)) for k, lab in labels if res(k)]
    if known:
        text += "Measured on it: " + "; ".join("%s: %s" % kv
                                                for kv in known) + ". "
    text += ("It cannot promise the RFC's failure semantics (a faulting "
             "store is skipped, the thread is not told) and it needs a "
             "privileged loader; to replace RSEQ operations BPF would need "
             "the hook, a helper that writes user memory and reports a "
             "fault to the task, and unprivileged attachment.")
    return [""] + wrap(text, "")
