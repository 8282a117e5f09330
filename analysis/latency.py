# SPDX-License-Identifier: GPL-2.0
"""latency - the longest interrupts-off and preemption-off stretch.

tracing/latency.sh boots each flavour built with KCONFIG=latency and, with
the kernel's irqsoff and preemptoff tracers, reads the longest stretch
while a thread's list of N operations is walked (opbench switch), in both
node layouts; N = 0 gives the kernel's own stretches, with no list.
Records: <run>/latency/<flavour>/latency.json (kind "latency": tracer,
layout, nr_ops, max_us, started_at, ended_at), read by opbench_io.load.

The tracers report whole microseconds of the guest's clock. Under icount
(shift=0) that clock advances one nanosecond per instruction: a
microsecond is 1000 instructions, the figure's resolution. Elsewhere it is
time, in microseconds.
"""
from opbench_io import ResultsError

TRACERS = ("irqsoff", "preemptoff")


# How far a tick may be from one instruction under icount (opbench's
# clock record in the latency boot), as the main analysis allows.
TICK_TOLERANCE = 0.01


def analyse(recs, accel):
    """{"unit", "scale", "ns", "rows"}: one row per flavour, tracer and
    layout, its longest stretch at each N ("values": {N: figure}) and
    where the largest N's stretch started and ended; None without
    records. The accelerator is the latency boots' own (their vm.json),
    accel only for records without one."""
    if not recs:
        return None
    accels = {r.get("accel") or accel for r in recs}
    if len(accels) > 1:
        raise ResultsError("latency: the boots ran under different "
                           "accelerators (%s)" % ", ".join(
                               sorted(map(str, accels))))
    icount = accels.pop() == "icount"
    if icount:
        off = [t for r in recs for t in r.get("ticks_per_insn", [])
               if abs(t - 1) > TICK_TOLERANCE]
        if off:
            raise ResultsError("latency: under icount a tick was %.4f "
                               "instructions, not 1: the tracers' "
                               "microseconds are not thousands of "
                               "instructions" % off[0])
    scale = 1000.0 if icount else 1.0
    ns = sorted({int(r["nr_ops"]) for r in recs})
    rows = {}
    for r in recs:
        if r.get("opbench_status", 0) not in (0, 1):
            raise ResultsError("latency: opbench failed (status %s) for %s "
                               "N=%s: see its opbench.log" % (
                                   r["opbench_status"], r["flavour"],
                                   r["nr_ops"]))
        key = (r["flavour"], r["tracer"], r["layout"])
        row = rows.setdefault(key, {"flavour": key[0], "tracer": key[1],
                                    "layout": key[2], "values": {},
                                    "where": {}})
        n = int(r["nr_ops"])
        if r["max_us"] is None:     # the tracer's maximum was unreadable
            continue
        row["values"][n] = float(r["max_us"]) * scale
        row["where"][n] = [r.get("started_at", ""), r.get("ended_at", "")]
    # N = 0 (no list) is measured once, under the first layout: every
    # layout's row shows it.
    for (fl, tr, lay), row in rows.items():
        if 0 not in row["values"]:
            zero = next((x for (f, t, _), x in rows.items()
                         if f == fl and t == tr and 0 in x["values"]), None)
            if zero:
                row["values"][0] = zero["values"][0]
                row["where"][0] = zero["where"][0]
    order = sorted(rows, key=lambda k: (k[0], TRACERS.index(k[1])
                                        if k[1] in TRACERS else 9, k[2]))
    return {"unit": "instructions" if icount else "us",
            "resolution": scale if icount else 1.0,
            "ns": ns, "rows": [rows[k] for k in order]}
