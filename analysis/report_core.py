# SPDX-License-Identifier: GPL-2.0
"""report_core - how the report writes a figure, an interval, a verdict.

Shared by the report's sections (opbench_report and the section renderers
beside their data modules: preempt_report, cross_report, tcmalloc_report,
designs_report) and by cover_perf. Every helper formats what the analysis
(opbench_data.analyse) decided; none reads a file or decides anything.
"""
import math
import textwrap

import opbench_stats as st

WIDTH = 72
RULE = "-" * WIDTH
# The confidence level as printed ("95%"): opbench_stats.CONFIDENCE.
CONF = st.CONFIDENCE_TEXT
CI_HEAD = "%s CI" % CONF


def num(x, signed=False):
    """A figure with as many decimals as its size deserves."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    ax = abs(x)
    if ax >= 1e5:
        f = "%.0f"
    elif ax >= 100:
        f = "%.1f"
    else:
        f = "%.2f"
    s = f % x
    if signed and not s.startswith("-"):
        s = "+" + s
    return s


def ci(c, signed=False):
    """An interval, or "[no interval]" when one boot gave none; one of zero
    width is every boot giving the same figure (under icount), said so."""
    if c is None or c[0] is None:
        return "[no interval]"
    if c[0] == c[1]:
        return "[same in all boots]"
    return "[%s, %s]" % (num(c[0], signed), num(c[1], signed))


def pct(r):
    """A ratio as a change in percent; past +-1e5 % (an interval from too
    few boots), in exponent form, so that it stays within a line."""
    p = (r - 1) * 100
    return "%+.2f%%" % p if abs(p) < 1e5 else "%+.1e%%" % p


def ratio(x):
    """A ratio: two decimals, in exponent form past 1e5 (an interval from
    too few boots), so that it stays within a line."""
    return "%.2f" % x if abs(x) < 1e5 else "%.1e" % x


def ratio_ci(c):
    return "[%s, %s]" % (ratio(c[0]), ratio(c[1]))


def pct_ci(c):
    if c is None or c[0] is None:
        return ""
    return "[%s, %s]" % (pct(c[0]), pct(c[1]))


def pval(p):
    if p is None or math.isnan(p):
        return "-"
    return "<1e-4" if p < 1e-4 else "%.2g" % p


def field(name, value):
    """A provenance line: name in 12 columns, value wrapped under itself."""
    return textwrap.wrap(value, WIDTH, initial_indent="%-12s" % name,
                         subsequent_indent=" " * 12,
                         break_on_hyphens=False) or ["%-12s-" % name]


def indented(text, indent="  ", more=None):
    """A paragraph wrapped to WIDTH, every line indented (the lines after
    the first by more, when given)."""
    return textwrap.wrap(text, WIDTH, initial_indent=indent,
                         subsequent_indent=indent if more is None else more)


def compiler_line(k):
    """The compiler a kernel was built with, and whether asm goto with
    outputs was on: without it every unsafe_get_user() on the exit path
    carries an error register, a test and a branch."""
    goto = {"y": "on", "n": "OFF"}.get(k.get("cc_has_asm_goto_output"),
                                       "not recorded")
    tc = k.get("toolchain", "").split(" ")
    where = {"trixie": "; build root %s" % tc[1] if len(tc) > 1 else "",
             "host": "; the host's own compiler"}.get(tc[0], "")
    return "%s; asm goto outputs %s (CONFIG_CC_HAS_ASM_GOTO_OUTPUT)%s" % (
        k.get("compiler", "?"), goto, where)


def source_line(k):
    """Where a kernel's source came from (its provenance): Debian's
    package and version, or a git tree's base commit (SOURCE=, with the
    head the flavour tree was exported from, and uncommitted changes that
    were not built)."""
    if k.get("source_kind") != "git":
        return "%s %s" % (k.get("source_package", "?"),
                          k.get("source_version", "?"))
    dirty = k.get("source_dirty_diff", "none")
    return "git tree %s, base %s, head %s (%s)%s" % (
        k.get("source_tree", "?"), k.get("source_base", "?")[:12],
        k.get("source_head", "?")[:12], k.get("source_describe", "?"),
        "" if dirty == "none" else
        "; uncommitted changes not built (diff %s)" % dirty)


def verdict_word(c):
    return {"difference": "Difference at %s confidence" % CONF,
            "noise": "Difference at %s confidence, within the A/A floor"
                     % CONF,
            "none": "No difference proven at %s confidence" % CONF
            }[c["verdict"]]


# A comparison's verdict in a table's last column: "~" is a difference
# within the A/A floor (the tables' footnotes say so).
MARK = {"difference": "*", "noise": "~", "none": " "}


def interval(c, key="diff_ci", signed=True):
    """An interval, or what a zero-width one really says."""
    v = c.get(key) if key in c else c.get("ci")
    if v is not None and v[0] == v[1] and c.get("se") == 0:
        return "[same in all boots]"
    return ci(v, signed)
