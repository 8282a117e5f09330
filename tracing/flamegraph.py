#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""flamegraph.py - render folded stacks as a self-contained SVG flame graph.

    stackcollapse.py perf.script > run.folded
    flamegraph.py run.folded --title "..." > run.svg
    flamegraph.py --diff before.folded after.folded --title "..." > diff.svg

Input: folded stacks, `frame;frame;... count`, root first (stackcollapse.py).
Output: one SVG with no script and no external reference, so it opens
offline in any browser or viewer; every frame carries a <title> tooltip
with its samples and share. Frames are sorted by name at each level, so the
same input gives the same bytes.

Colours: kernel frames (`_[k]`) orange, user frames yellow, frames matching
--highlight (default: rseq) magenta. With --diff, widths are the second
profile's, and colour says how a frame's share changed from the first to
the second, both normalised to the same total: red grew, blue shrank, the
deeper the colour the larger the change. A frame's colour follows its own
samples (self time), not its children's.
"""
import argparse
import collections
import html
import re
import sys
import zlib

WIDTH = 1200
ROW = 16
FONT = 11
CHAR = FONT * 0.59
PAD_TOP = 50
PAD_BOTTOM = 30
MIN_PX = 0.1


def read_folded(path):
    stacks = collections.Counter()
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            stack, _, count = line.rpartition(" ")
            try:
                stacks[stack] += int(count)
            except ValueError:
                sys.exit("flamegraph: %s:%d: not a folded stack line "
                         "('frames count'): %r" % (path, n, line[:80]))
    if not stacks:
        sys.exit("flamegraph: %s has no stacks" % path)
    return stacks


class Node:
    __slots__ = ("name", "count", "ref", "children")

    def __init__(self, name):
        self.name = name
        self.count = 0.0
        self.ref = 0.0
        self.children = {}


def build(stacks, ref=None):
    root = Node("all")
    for stack, count in stacks.items():
        node = root
        node.count += count
        for fr in stack.split(";"):
            node = node.children.setdefault(fr, Node(fr))
            node.count += count
    if ref:
        for stack, count in ref.items():
            node = root
            node.ref += count
            for fr in stack.split(";"):
                node = node.children.get(fr)
                if node is None:
                    break
                node.ref += count
    return root


def colour(name, highlight, delta=None):
    if delta is not None:
        # delta in [-1, 1]: share change relative to the largest change.
        v = int(255 - 200 * min(1.0, abs(delta)))
        return "rgb(255,%d,%d)" % (v, v) if delta > 0 else \
            "rgb(%d,%d,255)" % (v, v)
    h = zlib.crc32(name.encode()) % 55
    if highlight and highlight.search(name):
        return "rgb(%d,60,%d)" % (200 + h // 2, 200 + h // 3)
    if name.endswith("_[k]"):
        return "rgb(%d,%d,40)" % (220 + h // 2, 110 + h)
    return "rgb(%d,%d,60)" % (200 + h, 200 + h // 2)


def render(root, title, subtitle, highlight, diff, unit="samples"):
    depth = [0]

    def measure(n, d):
        depth[0] = max(depth[0], d)
        for c in n.children.values():
            measure(c, d + 1)

    measure(root, 0)
    height = PAD_TOP + (depth[0] + 1) * ROW + PAD_BOTTOM
    scale = (WIDTH - 20) / root.count
    total_ref = root.ref or 1.0
    out = []
    out.append('<?xml version="1.0" standalone="no"?>')
    out.append('<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d"'
               ' xmlns="http://www.w3.org/2000/svg">' % (
                   WIDTH, height, WIDTH, height))
    out.append('<rect x="0" y="0" width="%d" height="%d" fill="#f8f8f8"/>'
               % (WIDTH, height))
    out.append('<text x="%d" y="20" font-size="15" font-family="Verdana" '
               'text-anchor="middle">%s</text>' % (WIDTH // 2,
                                                   html.escape(title)))
    if subtitle:
        out.append('<text x="%d" y="38" font-size="11" font-family="Verdana"'
                   ' text-anchor="middle" fill="#555">%s</text>' % (
                       WIDTH // 2, html.escape(subtitle)))
    maxdelta = [1e-12]

    def self_counts(n):
        return (n.count - sum(c.count for c in n.children.values()),
                n.ref - sum(c.ref for c in n.children.values()))

    def share_delta(n):
        # Colour by the frame's own samples, as FlameGraph's difffolded
        # does: a parent whose children grew is not itself red.
        own, ref = self_counts(n)
        return own / root.count - ref / total_ref

    if diff:
        def walk(n):
            maxdelta[0] = max(maxdelta[0], abs(share_delta(n)))
            for c in n.children.values():
                walk(c)
        walk(root)

    def draw(n, x, d):
        w = n.count * scale
        if w < MIN_PX:
            return
        y = height - PAD_BOTTOM - (d + 1) * ROW
        pct = 100.0 * n.count / root.count
        tip = "%s (%d %s, %.2f%%)" % (n.name, n.count, unit, pct)
        delta = None
        if diff:
            delta = share_delta(n) / maxdelta[0]
            tip += "; own samples' share %+.2f points against the " \
                "reference" % (100 * share_delta(n))
        out.append('<g><title>%s</title><rect x="%.2f" y="%d" width="%.2f" '
                   'height="%d" fill="%s" rx="2" ry="2"/>' % (
                       html.escape(tip), x, y, w, ROW - 1,
                       colour(n.name, highlight, delta)))
        chars = int((w - 4) / CHAR)
        if chars >= 3:
            label = n.name if len(n.name) <= chars else \
                n.name[:chars - 2] + ".."
            out.append('<text x="%.2f" y="%d" font-size="%d" '
                       'font-family="Verdana">%s</text>' % (
                           x + 3, y + ROW - 4, FONT, html.escape(label)))
        out.append("</g>")
        cx = x
        for name in sorted(n.children):
            c = n.children[name]
            draw(c, cx, d + 1)
            cx += c.count * scale

    draw(root, 10, 0)
    legend = ("width: %s of the second profile; colour: change of the "
              "frame's own share, red grew, blue shrank" % unit if diff else
              "width: %s; orange: kernel, yellow: user, magenta: %s" % (
                  unit, highlight.pattern if highlight else "-"))
    out.append('<text x="10" y="%d" font-size="11" font-family="Verdana" '
               'fill="#555">%s</text>' % (height - 10, html.escape(legend)))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("folded", nargs="+", help="one folded file, or two "
                    "with --diff (first is the reference)")
    ap.add_argument("--diff", action="store_true")
    ap.add_argument("--title", default="Flame graph")
    ap.add_argument("--subtitle", default="")
    ap.add_argument("--highlight", default="rseq",
                    help="regular expression of frames to colour magenta")
    ap.add_argument("--unit", default="samples",
                    help="what a frame's width counts (default samples; "
                    "the instruction profiler: instructions)")
    args = ap.parse_args()
    if args.diff != (len(args.folded) == 2) or len(args.folded) > 2:
        sys.exit("flamegraph: give one folded file, or two with --diff")
    hl = re.compile(args.highlight) if args.highlight else None
    if args.diff:
        ref = read_folded(args.folded[0])
        root = build(read_folded(args.folded[1]), ref)
    else:
        root = build(read_folded(args.folded[0]))
    sys.stdout.write(render(root, args.title, args.subtitle, hl, args.diff,
                            args.unit))


if __name__ == "__main__":
    main()
