#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kit.sh - a self-contained benchmark kit for a test box (make kit).
#
# Usage: microbench/kit.sh OUT.tar.gz   (make kit [PLAN=...] [KIT=...])
#
# Writes OUT.tar.gz holding one directory, rseq-opbench-kit/:
#   bin/        opbench and tcmodel, linked statically in the build root,
#               and the runner's scripts (native-run.sh, guest-bench.sh,
#               host-state.sh): POSIX sh, coreutils, awk, sed, grep and
#               gzip, as any distribution or busybox has them
#   plan.env    the plan PLAN, resolved (a variable set when run wins,
#               but for the cells' SWEEP, BENCHES and TYPES)
#   bin/plan.cells  the plan's cells (microbench/plan.py)
#   bin/run.json    the plan resolved, the run's index head (every run
#                   copies it; native-run.sh writes the boots.jsonl)
#   run.sh      the entry point: sh run.sh [RESULTS-DIR], as root
#   provenance  what made the kit (project commit, plan, binaries' hashes)
#   README      what to do on the test box, and how the results come back
# A reviewer installs a kernel (make deb FLAVOUR=...), boots it, runs the
# kit, copies the results directory back and runs make report RESULTS=.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
export BUILDROOT_MAKE=no	# after the build: use the build root, never make it

[ $# -eq 1 ] || die "usage: kit.sh OUT.tar.gz"
out=$1
case $out in *.tar.gz) ;; *) die "KIT='$out': name a .tar.gz to write" ;; esac
[ ! -e "$out" ] || die "$out exists: name a new file (nothing is overwritten)"
plan=${PLAN:-default}
load_plan "$plan"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
k=$stage/rseq-opbench-kit
mkdir -p "$k/bin"
log "building the static programs in the build root"
STATIC=1 guest_programs "$k/bin" opbench tcmodel
cp "$TOPDIR/microbench/native-run.sh" "$TOPDIR/microbench/guest-bench.sh" \
	"$TOPDIR/scripts/host-state.sh" "$k/bin/"
# The plan's cells (microbench/plan.py): what each repetition runs, in an
# order native-run.sh draws.
"$k/bin/opbench" --list --json > "$k/bin/benches.json" || die "opbench --list --json failed"
"$PYTHON" "$TOPDIR/microbench/plan.py" cells "$plan" --benches "$k/bin/benches.json" \
	--run-json "$k/bin/run.json" > "$k/bin/plan.cells" ||
	die "planning the cells of plan $plan failed"

kit_boots=$(( BOOTS > 5 ? BOOTS : 5 ))
# The plan: each line sets its variable unless the caller did. One
# repetition a run (REPS=1): a test box compares kernels over boots, one
# run a boot (make merge takes each boot as one value), so the plan's
# BOOTS is the number of boots of each kernel the README asks for.
{
	echo "# The plan '$plan' (${PLAN_FILE#"$TOPDIR"/}) as the kit was made;"
	echo "# a variable set in the environment wins over its line, but for"
	echo "# SWEEP, BENCHES and TYPES, planned into bin/plan.cells."
	for v in $PLAN_VARS; do
		case $v in
		BOOTS | FLAVOURS) continue ;;
		# Planned into bin/plan.cells when the kit was made: recorded,
		# and another value in the environment is refused.
		SWEEP | BENCHES | TYPES)
			printf 'if [ -n "${%s+x}" ] && [ "$%s" != %s ]; then\n' "$v" "$v" "'${!v-}'"
			printf '\techo "plan.env: %s is planned into bin/plan.cells when the kit is made (%s=%s here): make kit %s=... for another" >&2\n' "$v" "$v" "'${!v-}'" "$v"
			printf '\texit 2\nfi\n%s=%s\n' "$v" "'${!v-}'"
			;;
		*) printf ': "${%s=%s}"\n' "$v" "${!v-}" ;;
		esac
		echo "export $v"
	done
	printf ': "${REPS=1}"\nexport REPS\n'
	printf '# Boots of each kernel make merge wants (the plan'"'"'s BOOTS; at least 5).\n'
	printf 'KIT_BOOTS=%s\n' "$kit_boots"
} > "$k/plan.env"

{
	echo "kit_plan=$plan"
	echo "kit_plan_file=${PLAN_FILE#"$TOPDIR"/}"
	echo "kit_made=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "project_commit=$(git -C "$TOPDIR" rev-parse HEAD 2>/dev/null || echo none)"
	if [ -n "$(git -C "$TOPDIR" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
		echo "project_dirty=$(git -C "$TOPDIR" diff HEAD 2>/dev/null | sha256sum | cut -c1-16)"
	fi
} > "$k/provenance"

cat > "$k/run.sh" <<'EOF'
#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# run.sh - run the kit's plan on the kernel this machine runs.
# Usage: sh run.sh [RESULTS-DIR]   (as root; see README)
set -u
kit=$(cd "$(dirname "$0")" && pwd)
out=${1:-$kit/results-$(uname -n)-$(uname -r)-$(date -u +%Y%m%dT%H%M%SZ)}
for x in "$out"/rep-*; do
	[ -e "$x" ] && { echo "run.sh: $out already holds a run: name a new directory" >&2; exit 2; }
done
# shellcheck source=/dev/null
. "$kit/plan.env"
mkdir -p "$out" || exit 2
{
	cat "$kit/provenance"
	sed -n 's/^kit_plan=/plan=/p' "$kit/provenance"
	echo "command=$0 $*"
} > "$out/provenance"
BIN=$kit/bin sh "$kit/bin/native-run.sh" "$out"
st=$?
echo "run.sh: results in $out (status $st); copy that directory back and run: make report RESULTS=<it>" >&2
exit $st
EOF

cat > "$k/README" <<EOF
rseq-opbench kit: the benchmark plan '$plan' for a test box
============================================================

What it runs: the same programs and the same plan that make bench runs in
a guest, on the kernel this machine is running, in time (nanoseconds from
the TSC, calibrated against CLOCK_MONOTONIC). Nothing is installed,
loaded into the kernel or taken offline.

1. Optionally install and boot a kernel made by make deb FLAVOUR=<flavour>
   (ops, baseline, ...): it carries /boot/opbench-provenance-<release>,
   and the results name its flavour and series hash. Any other kernel is
   measured as an unpatched reference, named by uname -r.
2. As root, on an otherwise idle machine:
       sh bin/host-state.sh --advice   # what to change first
       sh run.sh                       # results-<host>-<release>-<date>/
   A variable set in the environment overrides the plan (plan.env):
   REPS=3 for more repetitions in this boot (they count as one value
   when kernels are compared: step 4), AA=1 to compare the kernel with itself,
   CPU=3 to pin the measured thread, SEED=n to repeat an order. The
   cells (BENCHES, SWEEP, TYPES) were planned when the kit was made
   (bin/plan.cells): make kit BENCHES=... SWEEP=... for others.
   bin/host-state.sh --advice says what of the machine's state moves
   time (governor, turbo, SMT, isolated CPUs, THP, ...); the run records
   that state.
3. Copy the results directory back and run, in the project:
       make report RESULTS=<the directory>
   One repetition (the default) has no interval: a run that stands alone
   wants REPS=3 or more.
4. To compare kernels: one run per boot, over at least $kit_boots boots
   of each kernel (KIT_BOOTS in plan.env), in the order A B B A A B B A ...
   (A the unpatched kernel, B the package: reboot between runs), then,
   in the project:
       make merge RUNS="<dir> <dir> ..."    # prints the merged run
       make report RESULTS=<the merged run>
   A boot is the unit: its repetitions are one value (a boot moves every
   figure of it by a few per cent), and the k-th boot of each kernel is
   paired with the others' k-th. The order A B B A cancels a steady
   drift of the box across the pairs; fewer than 5 boots of a kernel
   are marked in the report's header.

Made at project commit $(git -C "$TOPDIR" rev-parse --short HEAD 2>/dev/null || echo unknown); see provenance.
EOF

tar -C "$stage" -czf "$out.tmp" rseq-opbench-kit
mv "$out.tmp" "$out"
log "$out ($(du -h "$out" | cut -f1)); on the test box: tar xzf it, then sh rseq-opbench-kit/run.sh"
