# SPDX-License-Identifier: GPL-2.0
"""opbench_data - read a results directory and derive every statistic from it.

Input, as microbench/bench.sh writes it:
    results/<date>-<label>/provenance            key=value, the run
    results/<date>-<label>/boot-<i>-<flavour>/
        opbench.json        one JSON record per line (sample, gate, unsupported)
        kernel-provenance   key=value, the kernel booted
        vm.json             the launcher's record (accelerator, QEMU command)
        guest-info.txt      key: value, what the guest saw (clocksource, ...)
Output: analyse() returns one JSON-serialisable dict; opbench_report and
opbench_plots render it, and the notebook reloads it.

Only records are read: nothing is parsed back out of text meant for people.
"""
import collections
import glob
import json
import os
import re

import numpy as np

import opbench_stats as st

REFERENCE = "baseline"
# The metric, declared once: field, direction, and its unit per accelerator.
METRIC = "ns_per_loop"
BETTER = "lower"
UNITS = {
    "icount": ("instructions", "instr",
               "instructions the guest executed: under QEMU icount "
               "(shift=0) its clock advances one tick per instruction"),
    "tcg": ("ns (emulated)", "ns-emul",
            "wall-clock time of the guest under QEMU TCG emulation, not "
            "hardware time"),
    "kvm": ("ns", "ns", "wall-clock time of the guest under KVM"),
}


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


BOOT_RE = re.compile(r"^boot-(\d+)-(.+)$")


def newest_run(root):
    """The newest benchmark run (with boot records) under root."""
    runs = [d for d in glob.glob(os.path.join(root, "*"))
            if glob.glob(os.path.join(d, "boot-*", "opbench.json"))]
    if not runs:
        raise ResultsError("no benchmark run under %s; run `make bench` "
                           "first or name a results directory" % root)
    return max(runs, key=os.path.basename)


def load(rdir):
    """The run in rdir: provenance, boots and their records."""
    if not os.path.isdir(rdir):
        raise ResultsError("%s is not a directory; give a results/<date>-"
                           "<label>/ directory written by make bench" % rdir)
    boots = []
    for d in sorted(glob.glob(os.path.join(rdir, "boot-*"))):
        m = BOOT_RE.match(os.path.basename(d))
        if not m or not os.path.isdir(d):
            continue
        rec = os.path.join(d, "opbench.json")
        vm = {}
        if os.path.exists(os.path.join(d, "vm.json")):
            with open(os.path.join(d, "vm.json")) as f:
                vm = json.load(f)
        boots.append({
            "index": int(m.group(1)), "flavour": m.group(2),
            "dir": os.path.basename(d),
            "records": read_records(rec) if os.path.exists(rec) else [],
            "kernel": read_kv(os.path.join(d, "kernel-provenance")),
            "guest": read_kv(os.path.join(d, "guest-info.txt"), ":"),
            "vm": vm,
        })
    boots.sort(key=lambda b: b["index"])
    if not boots:
        raise ResultsError("%s has no boot-<n>-<flavour>/ directories: not a "
                           "results directory of make bench" % rdir)
    if not any(b["records"] for b in boots):
        raise ResultsError("%s: no boot produced records; see the boots' "
                           "console.log and opbench.log" % rdir)
    return {"dir": os.path.abspath(rdir), "name": os.path.basename(
        os.path.abspath(rdir)), "provenance": read_kv(
            os.path.join(rdir, "provenance")), "boots": boots}


def accel_of(run):
    accels = {b["vm"].get("accel") for b in run["boots"] if b["vm"]}
    accels.discard(None)
    if len(accels) > 1:
        raise ResultsError("boots ran under different accelerators (%s): "
                           "their times are not comparable; analyse runs "
                           "made with one ACCEL" % ", ".join(sorted(accels)))
    return accels.pop() if accels else "unknown"


def _cell(r):
    return (r["bench"], r.get("op_type", "?"), r.get("reg", "?"),
            r["flavour"], int(r["nr_ops"]))


def collect(run):
    """Samples per cell, split by boot, keeping only cells whose gate passed.

    A cell is (bench, op type, registration, flavour, N). Its samples from
    one boot count only if every gate record of that cell and boot is valid;
    a cell without any gate record is invalid too, since nothing proved the
    operations ran.
    """
    samples = collections.defaultdict(lambda: collections.defaultdict(list))
    switches = collections.defaultdict(lambda: collections.defaultdict(list))
    gates = collections.defaultdict(list)
    unsupported = {}
    meta = {}
    for b in run["boots"]:
        for r in b["records"]:
            kind = r.get("kind")
            key = _cell(r)
            if kind == "sample":
                samples[key][b["index"]].append(float(r[METRIC]))
                if "switches_per_loop" in r:
                    switches[key][b["index"]].append(
                        float(r["switches_per_loop"]))
                meta.setdefault(r["bench"], {
                    "loop": r.get("loop", "loop"),
                    "walks_per_loop": r.get("walks_per_loop"),
                    "better": r.get("better", BETTER)})
            elif kind == "gate":
                gates[(key, b["index"])].append(r)
            elif kind == "unsupported":
                unsupported[key] = r.get("why", "unsupported")
    valid = collections.defaultdict(dict)
    valid_sw = collections.defaultdict(dict)
    invalid = []
    for key, per_boot in samples.items():
        for boot, xs in per_boot.items():
            g = gates.get((key, boot), [])
            bad = [x for x in g if not x.get("valid")]
            if not g or bad:
                why = ("no gate record: nothing proved the operations ran"
                       if not g else "; ".join(
                           "gate %s: %s of %s resets" % (
                               x.get("check"), x.get("resets_seen"),
                               x.get("resets_expected")) for x in bad))
                invalid.append({"bench": key[0], "op_type": key[1],
                                "reg": key[2], "flavour": key[3],
                                "nr_ops": key[4], "boot": boot,
                                "samples": len(xs), "why": why})
                continue
            valid[key][boot] = xs
            sw = switches[key].get(boot, [])
            if len(sw) == len(xs):
                valid_sw[key][boot] = sw
    # Gates that failed where no sample was taken are invalid cells too.
    for (key, boot), g in gates.items():
        if key in samples and boot in samples[key]:
            continue
        bad = [x for x in g if not x.get("valid")]
        if bad:
            invalid.append({"bench": key[0], "op_type": key[1], "reg": key[2],
                            "flavour": key[3], "nr_ops": key[4], "boot": boot,
                            "samples": 0, "why": "gate %s failed, no samples"
                            % bad[0].get("check")})
    invalid.sort(key=lambda x: (x["bench"], x["flavour"], x["nr_ops"],
                                x["boot"]))
    return valid, valid_sw, invalid, unsupported, meta


def flavour_order(run):
    order = []
    for b in run["boots"]:
        if b["flavour"] not in order:
            order.append(b["flavour"])
    if REFERENCE in order:
        order.remove(REFERENCE)
        order.insert(0, REFERENCE)
    return order


# Switches per loop may drift this far from the N=0 value before the
# walks per loop are said to vary with N.
SWITCH_DRIFT = 0.01


def switch_adjusted(g, fl):
    """Samples rescaled to the switches per loop seen at N=0, or None.

    A benchmark whose loops switch a known number of times (switch,
    migrate) walks once per switch. When long walks make the thread switch
    more often than that (a tick preempting it, say), its time per loop
    grows faster than N: each sample is then scaled by the N=0 switch rate
    over its own, which counts each walk once. None when the rates do not
    drift, or the loop does not switch at all (signal, syscall).
    """
    cells = {c["nr_ops"]: c for c in g["cells"] if c["flavour"] == fl}
    base = cells.get(0, {}).get("switches_per_loop")
    if not base or any("switches" not in c for c in cells.values()):
        return None
    drift = max(abs(c["switches_per_loop"] / base - 1)
                for c in cells.values())
    g.setdefault("switch_drift", {})[fl] = drift
    if drift <= SWITCH_DRIFT:
        return None
    return {n: [x * base / sw for x, sw in zip(c["samples"], c["switches"])
                if sw > 0] for n, c in cells.items()}


def analyse(run):
    """Every number the report, the plots and the notebook show."""
    accel = accel_of(run)
    unit, unit_short, unit_doc = UNITS.get(
        accel, ("ns", "ns", "guest wall-clock time"))
    valid, valid_sw, invalid, unsupported, meta = collect(run)
    flavours = flavour_order(run)
    groups = sorted({k[:3] for k in valid} | {k[:3] for k in unsupported})
    out = {"run": run["name"], "dir": run["dir"], "accel": accel,
           "unit": unit, "unit_short": unit_short, "unit_doc": unit_doc,
           "reference": REFERENCE, "flavours": flavours, "groups": [],
           "invalid": invalid}
    for bench, op_type, reg in groups:
        gkey = (bench, op_type, reg)
        cells = {k: v for k, v in valid.items() if k[:3] == gkey}
        g = {"bench": bench, "op_type": op_type, "reg": reg,
             "loop": meta.get(bench, {}).get("loop", "loop"),
             "walks_per_loop": meta.get(bench, {}).get("walks_per_loop"),
             "better": meta.get(bench, {}).get("better", BETTER),
             "cells": [], "vs_reference": [], "vs_zero": {}, "cost": {},
             "unsupported": sorted(
                 [k[3], k[4]] for k in unsupported if k[:3] == gkey)}
        for (_, _, _, fl, n), per_boot in sorted(
                cells.items(), key=lambda kv: (flavours.index(kv[0][3])
                                               if kv[0][3] in flavours
                                               else 99, kv[0][4])):
            xs = [x for b in sorted(per_boot) for x in per_boot[b]]
            s = st.summary(xs, key=gkey + (fl, n))
            s.update({"flavour": fl, "nr_ops": n, "boots": sorted(per_boot),
                      "samples": xs})
            swb = valid_sw.get(gkey + (fl, n), {})
            if sorted(swb) == sorted(per_boot):
                s["switches"] = [x for b in sorted(swb) for x in swb[b]]
                s["switches_per_loop"] = float(np.median(s["switches"]))
            g["cells"].append(s)
        # A/A: the reference flavour at N = 0, boot against boot.
        ref0 = cells.get(gkey + (REFERENCE, 0), {})
        floor = st.noise_floor([ref0[b] for b in sorted(ref0)], key=gkey)
        g["noise_floor"] = floor
        g["aa_boots"] = len(ref0)

        def pooled(fl, n):
            pb = cells.get(gkey + (fl, n), {})
            return [x for b in sorted(pb) for x in pb[b]]

        ref_ns = {k[4] for k in cells if k[3] == REFERENCE}
        for fl in flavours:
            if fl == REFERENCE:
                continue
            for n in sorted(ref_ns):
                a, b = pooled(REFERENCE, n), pooled(fl, n)
                if a and b:
                    c = st.compare(a, b, key=gkey + ("ref", fl, n),
                                   noise_floor=floor)
                    c.update({"flavour": fl, "nr_ops": n})
                    g["vs_reference"].append(c)
        for fl in flavours:
            ns = sorted(k[4] for k in cells if k[3] == fl)
            if 0 not in ns or len(ns) < 2:
                continue
            rows = []
            for n in ns:
                if n == 0:
                    continue
                c = st.compare(pooled(fl, 0), pooled(fl, n),
                               key=gkey + ("zero", fl, n), noise_floor=floor)
                c["nr_ops"] = n
                rows.append(c)
            g["vs_zero"][fl] = rows
            model = st.cost_model({n: pooled(fl, n) for n in ns},
                                  key=gkey + (fl,))
            if model:
                model["zero_median"] = st.summary(pooled(fl, 0))["median"]
                g["cost"][fl] = model
            adj = switch_adjusted(g, fl)
            if adj:
                m2 = st.cost_model(adj, key=gkey + (fl, "per-switch"))
                if m2:
                    g.setdefault("cost_per_switch", {})[fl] = m2
        out["groups"].append(g)
    return out
