#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# cover-letter.sh - write the series' cover letter from its text and a run.
#
# Usage: kernel-patch/scripts/cover-letter.sh RESULTS_DIR [SERIES_DIR]
#   (make cover-letter RESULTS=results/<run> [SERIES=<patch directory>])
# Env:   COVER_TEXT (default kernel-patch/cover-letter.txt), SUBJECT_PREFIX,
#        MANIFEST (default $CACHE_DIR/manifest)
# The text is COVER_TEXT: its first line is the subject, the rest the
# body, where
#   @PERF@      becomes analysis/cover_perf.py RESULTS_DIR (every figure of
#               the Performance section comes from that run), and
#   @WALKLOOP@  the walker's loop in the ops kernel's vmlinux, as the run
#               counted it (walker-loops/ops.txt, analysis/walker_loops.py),
#               with the compiler that built it.
# Each appears once and stands as paragraphs of its own: prose on its line
# (reflowed onto it) is moved before or after it. A letter in which any
# @NAME@ is left is refused.
# The shortlog and diffstat are git format-patch --cover-letter's, on the
# series applied with git am to the kernel source the build recorded in
# the manifest (make source, make kernels), followed by base-commit: where
# the source is a git tree's commit (SOURCE=) and by the Debian package's
# name and version where it is Debian's: like every stage after the
# build, this one never fetches, unpacks or builds anything. The result
# replaces SERIES_DIR/0000-cover-letter.patch only when all of that
# succeeded.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

run=${1:?usage: cover-letter.sh RESULTS_DIR [SERIES_DIR]}
series=$(realpath "${2:-$TOPDIR/kernel-patch/series}")
text=${COVER_TEXT:-$TOPDIR/kernel-patch/cover-letter.txt}
prefix=${SUBJECT_PREFIX:-PATCH RFC v4}
[ -d "$run" ] || die "no results directory '$run': name a run of make bench, RESULTS=results/<run>"
[ -f "$text" ] || die "missing $text"
[ -d "$series" ] || die "'$series' is not a directory of patches: the cover letter is written into it"
mapfile -t patches < <(patch_list "$series")
[ ${#patches[@]} -gt 0 ] || die "no patches in '$series'"

# The kernel source the build used, from the manifest: never fetched here.
if ! src=$(manifest_source source_dir) || ! srcver=$(manifest_source source_version); then
	die "no kernel source in the manifest ($MANIFEST): run make source (or make kernels) first"
fi
[ -e "$src/.git/rseq-opbench-ready" ] ||
	die "the manifest's kernel source $src is missing or was not unpacked completely: run make source"
[ "$(cat "$src/.git/rseq-opbench-version")" = "$srcver" ] ||
	die "the manifest names source $srcver, but $src holds $(cat "$src/.git/rseq-opbench-version"): run make source"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The generated parts first: a run that cannot be analysed changes nothing.
"$PYTHON" "$TOPDIR/analysis/cover_perf.py" "$run" > "$tmp/perf" ||
	die "analysis/cover_perf.py failed on '$run'"
# The run and the letter must be of the series as it is.
want=$(hash_files "${patches[@]}")
runprov=$(compgen -G "$run/boot-*-ops/kernel-provenance" | head -1 || true)
[ -n "$runprov" ] || die "'$run' has no ops boot: the cover letter needs a run of make bench with ops"
have=$(sed -n 's/^series_hash=//p' "$runprov")
[ "$have" = "$want" ] ||
	die "'$run' measured another series ($have, the series is $want): run make bench again"
# The walker's loops as the run counted them in the ops vmlinux it booted
# (microbench/bench-run.sh), with the compiler that built it: counted once.
loops=$run/walker-loops/ops.txt
grep -q '^rseq_ops_apply ' "$loops" 2>/dev/null ||
	die "'$run' holds no loop of rseq_ops_apply in walker-loops/ops.txt (runs before walker-loops/ have none): run make bench again"
cp "$loops" "$tmp/loops"
cc=$(sed -n 's/^compiler=//p' "$runprov" | head -1)
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
wt=$CACHE_DIR/build/$srcver/cover-letter
am_series "$src" "$srcver" "$wt" "${patches[@]}"
# The cover letter's From: is the series' author, not whoever runs this.
author=$(sed -n 's/^From: //p;T;q' "${patches[0]}")
# The base: a git source's commit as base-commit (format-patch --base,
# the trailer b4 and the robots read); Debian's package named instead,
# where there is no commit to name.
base=()
case $srcver in
git-*) base=(--base="$(git -C "$wt" rev-parse "$(base_tag "$srcver")^{commit}")") ;;
esac
git -C "$wt" -c user.name="${author% <*}" -c user.email="$(echo "$author" | sed 's/.*<\(.*\)>.*/\1/')" \
	format-patch -q --cover-letter --subject-prefix="$prefix" ${base[@]+"${base[@]}"} \
	-o "$tmp/fp" "$(base_tag "$srcver")..HEAD"
if [ ${#base[@]} -eq 0 ]; then
	# Before the signature line, where format-patch puts base-commit.
	"$PYTHON" - "$tmp/fp/0000-cover-letter.patch" "Base: Debian linux-source-$KVER $srcver (a package: no base-commit)." <<'EOP'
import sys
path, line = sys.argv[1:]
text = open(path).read()
i = text.rfind("\n-- \n")
if i < 0:
    sys.exit("cover-letter: git format-patch wrote no signature line")
open(path, "w").write(text[:i] + "\n" + line + "\n" + text[i:])
EOP
fi

"$PYTHON" - "$tmp/fp/0000-cover-letter.patch" "$text" "$tmp/perf" \
	"$tmp/walkloop" "$tmp/out" <<'EOF'
import re
import sys
fp, text, perf, walkloop, out = sys.argv[1:]
cover = open(fp).read()
lines = open(text).read().split("\n")
subject, body = lines[0], "\n".join(lines[2:] if lines[1:2] == [""] else lines[1:])


def put(body, key, block):
    """body with its one key replaced by block, which stands as paragraphs
    of its own: text before the key on its line ends a paragraph there,
    text after it (prose reflowed onto the key's line) starts one after
    the block."""
    i = body.index(key)
    start = body.rfind("\n", 0, i) + 1
    end = body.find("\n", i)
    end = len(body) if end < 0 else end
    before, after = body[start:i].rstrip(), body[i + len(key):end].strip()
    if not block.endswith("\n"):
        block += "\n"
    if after and not block.endswith("\n\n"):
        block += "\n"
    # A key alone on its line is followed by the text's own blank line.
    if not after and block.endswith("\n\n") and body[end + 1:end + 2] == "\n":
        block = block[:-1]
    return (body[:start] + (before + "\n\n" if before else "") + block +
            (after + "\n" if after else "") + body[end + 1:])


for key, path in (("@PERF@", perf), ("@WALKLOOP@", walkloop)):
    if body.count(key) != 1:
        sys.exit("cover-letter: %s must appear once in %s" % (key, text))
    body = put(body, key, open(path).read())
for key in ("*** SUBJECT HERE ***", "*** BLURB HERE ***"):
    if key not in cover:
        sys.exit("cover-letter: git format-patch wrote no '%s'" % key)
cover = cover.replace("*** SUBJECT HERE ***", subject)
cover = cover.replace("*** BLURB HERE ***\n", body)
too_long = [l for l in body.splitlines() if len(l) > 72]
if too_long:
    sys.exit("cover-letter: lines over 72 columns:\n" + "\n".join(too_long))
# Nothing may be left unfilled: a placeholder of the text (one nothing
# fills, or one the replacement missed) or of git format-patch.
left = sorted(set(re.findall(r"@[A-Z_]+@", cover)) |
              {k for k in ("*** SUBJECT HERE ***", "*** BLURB HERE ***")
               if k in cover})
if left:
    sys.exit("cover-letter: placeholders left in the letter: %s (from %s)"
             % (", ".join(left), text))
open(out, "w").write(cover)
EOF
mv "$tmp/out" "$series/0000-cover-letter.patch"
log "wrote $series/0000-cover-letter.patch (run $(basename "$(realpath "$run")"))"
