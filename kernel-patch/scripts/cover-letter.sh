#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# cover-letter.sh - write the series' cover letter from its text and a run.
#
# Usage: kernel-patch/scripts/cover-letter.sh RESULTS_DIR [SERIES_DIR]
#   (make cover-letter RESULTS=results/<run>)
# The text is kernel-patch/cover-letter.txt: its first line is the subject,
# the rest the body, where
#   @PERF@      becomes analysis/cover_perf.py RESULTS_DIR (every figure of
#               the Performance section comes from that run), and
#   @WALKLOOP@  the walker's loop in the ops kernel's vmlinux, counted by
#               analysis/walker_loops.py, with the compiler that built it.
# The shortlog and diffstat are git format-patch --cover-letter's, on the
# series applied with git am to the cached source. The result replaces
# SERIES_DIR/0000-cover-letter.patch only when all of that succeeded.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

run=${1:?usage: cover-letter.sh RESULTS_DIR [SERIES_DIR]}
series=$(realpath "${2:-$TOPDIR/kernel-patch/series}")
text=$TOPDIR/kernel-patch/cover-letter.txt
prefix=${SUBJECT_PREFIX:-PATCH RFC v2}
[ -d "$run" ] || die "no results directory '$run': name a run of make bench, RESULTS=results/<run>"
[ -f "$text" ] || die "missing $text"
mapfile -t patches < <(patch_list "$series")
[ ${#patches[@]} -gt 0 ] || die "no patches in '$series'"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The generated parts first: a run that cannot be analysed changes nothing.
/usr/bin/python3 "$TOPDIR/analysis/cover_perf.py" "$run" > "$tmp/perf" ||
	die "analysis/cover_perf.py failed on '$run'"
kdir=$(KCONFIG=default "$TOPDIR/kernel-patch/scripts/kernel-path.sh" ops) ||
	die "no ops kernel of the default configuration: run make kernels"
[ -f "$kdir/vmlinux" ] || die "no vmlinux in $kdir: rebuild with make kernel FLAVOUR=ops"
# The run, the vmlinux and the letter must all be of the series as it is.
want=$(hash_files "${patches[@]}")
have=$(sed -n 's/^series_hash=//p' "$kdir/provenance")
[ "$have" = "$want" ] ||
	die "the ops kernel in $kdir was built from another series ($have, the series is $want): run make kernels"
runprov=$(ls "$run"/boot-*-ops/kernel-provenance 2>/dev/null | head -1)
[ -n "$runprov" ] || die "'$run' has no ops boot: the cover letter needs a run of make bench with ops"
have=$(sed -n 's/^series_hash=//p' "$runprov")
[ "$have" = "$want" ] ||
	die "'$run' measured another series ($have, the series is $want): run make bench again"
/usr/bin/python3 "$TOPDIR/analysis/walker_loops.py" "$kdir/vmlinux" rseq_ops_apply > "$tmp/loops" ||
	die "analysis/walker_loops.py found no loop in rseq_ops_apply"
cc=$(sed -n 's/^compiler=//p' "$kdir/provenance" 2>/dev/null | head -1)
{
	echo "The loop of rseq_ops_apply() in this series' x86-64 vmlinux"
	echo "(${cc:-compiler not recorded}), counted from its disassembly by"
	echo "rseq-opbench's analysis/walker_loops.py (every instruction from the"
	echo "loop's head to its back edge, taken or not):"
	echo
	sed 's/^/  /' "$tmp/loops"
	echo
} > "$tmp/walkloop"

# The series applied to the source it is for, in a worktree of its own.
src=$("$TOPDIR/kernel-patch/scripts/kernel-source.sh")
srcver=$(cat "$src/.git/rseq-opbench-version")
wt=$CACHE_DIR/build/$srcver/cover-letter
am_series "$src" "$srcver" "$wt" "${patches[@]}"
# The cover letter's From: is the series' author, not whoever runs this.
author=$(sed -n 's/^From: //p;T;q' "${patches[0]}")
git -C "$wt" -c user.name="${author% <*}" -c user.email="$(echo "$author" | sed 's/.*<\(.*\)>.*/\1/')" \
	format-patch -q --cover-letter --subject-prefix="$prefix" \
	-o "$tmp/fp" "debian-$srcver..HEAD"

/usr/bin/python3 - "$tmp/fp/0000-cover-letter.patch" "$text" "$tmp/perf" \
	"$tmp/walkloop" "$tmp/out" <<'EOF'
import sys
fp, text, perf, walkloop, out = sys.argv[1:]
cover = open(fp).read()
lines = open(text).read().split("\n")
subject, body = lines[0], "\n".join(lines[2:] if lines[1:2] == [""] else lines[1:])
for key, path in (("@PERF@", perf), ("@WALKLOOP@", walkloop)):
    if body.count(key) != 1:
        sys.exit("cover-letter: %s must appear once in %s" % (key, text))
    body = body.replace(key + "\n", open(path).read())
for key in ("*** SUBJECT HERE ***", "*** BLURB HERE ***"):
    if key not in cover:
        sys.exit("cover-letter: git format-patch wrote no '%s'" % key)
cover = cover.replace("*** SUBJECT HERE ***", subject)
cover = cover.replace("*** BLURB HERE ***\n", body)
too_long = [l for l in body.splitlines() if len(l) > 72]
if too_long:
    sys.exit("cover-letter: lines over 72 columns:\n" + "\n".join(too_long))
open(out, "w").write(cover)
EOF
mv "$tmp/out" "$series/0000-cover-letter.patch"
log "wrote $series/0000-cover-letter.patch (run $(basename "$(realpath "$run")"))"
