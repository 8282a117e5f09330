#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-arches.sh - build the series for the architectures that offer rseq,
# and for the configurations a build robot tries on x86_64.
#
# Usage: kernel-patch/scripts/check-arches.sh [--check] NAME=SERIES...
#   e.g. check-arches.sh rfc=../shared/seeds v2=kernel-patch/v2 ops=kernel-patch/series
# Env:   CELLS     the cells to build (default: all of them, see below)
#        PREFIXES  last (every prefix of the last series named, the one under
#                  test, and the others whole; the default), all (every prefix
#                  of every series) or tip (each series whole: quickest)
#        RESULTS_DIR where the run directory goes (default results/)
#
# A cell is an architecture and configuration; each cross cell is built
# twice, with CONFIG_RSEQ=y and =n, as check-series.sh does for x86_64. For
# every cell the pristine source is built first (the reference: a warning
# there is not the series'), then every prefix of every series. Only the
# objects that include what the series touch are built (the generic ones
# and the cell's architecture entry and signal code), not vmlinux: this
# finds compile errors and warnings, not link errors. Everything is built
# in the cross build root (buildroot.sh, BUILDROOT=cross) with Debian's
# cross compilers, ccache and one build tree per cell under
# $CACHE_DIR/build/<source version>/check-arches/, kept: a rerun after a fix
# recompiles only what the fix changed.
#
# Writes RESULTS_DIR/<date>-arches/: matrix.tsv (one line per build),
# offered.tsv (whether each cell's kernel offers RSEQ operations: RSEQ=y
# and GENERIC_IRQ_ENTRY), table.txt (the table printed at the end), logs/.
# Exit status 1 when any build of the last series named (each of its
# prefixes is built) has an error or a warning that the pristine source
# does not have in the same cell. A cell whose checker kbuild refused
# (sparse) is shown as such, and fails nothing: it checked nothing.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"
export BUILDROOT=cross

check=
[ "${1:-}" != --check ] || { check=1; shift; }
[ $# -gt 0 ] || die "usage: check-arches.sh NAME=SERIES_DIR... (make check-arches names rfc, v2 and ops)"
names=()
declare -A series_dir=()
for a in "$@"; do
	n=${a%%=*} d=${a#*=}
	[[ "$n" =~ ^[a-z0-9_-]+$ ]] && [ "$n" != "$a" ] ||
		die "'$a': want NAME=SERIES_DIR, e.g. ops=kernel-patch/series"
	[ -e "$d" ] || die "series '$n': '$d' does not exist; give an mbox or a directory of patches"
	[ -n "$(patch_list "$d")" ] || die "series '$n': no patches in '$d'"
	names+=("$n")
	series_dir[$n]=$(realpath "$d")
done

# Cells: name, ARCH, CROSS_COMPILE, how the config is made, extra make
# arguments, the architecture's objects. The cross cells are built with
# RSEQ=y and =n; the robot's x86_64 cells with RSEQ=y only.
# The config recipe: a defconfig target, or "project" (the merged config
# the x86_64 kernels of this project are built with), or "randconfig:SEED".
CELL_TABLE="
x86_64      x86_64    -                      project            -      arch/x86/kernel/signal.o arch/x86/entry/common.o
i386        i386      -                      i386_defconfig     -      arch/x86/kernel/signal.o arch/x86/entry/common.o arch/x86/entry/syscall_32.o
arm64       arm64     aarch64-linux-gnu-     defconfig          -      arch/arm64/kernel/entry-common.o arch/arm64/kernel/signal.o
riscv64     riscv     riscv64-linux-gnu-     defconfig          -      arch/riscv/kernel/signal.o arch/riscv/kernel/traps.o
ppc32       powerpc   powerpc-linux-gnu-     pmac32_defconfig   -      arch/powerpc/kernel/interrupt.o arch/powerpc/kernel/signal.o arch/powerpc/kernel/syscall.o
ppc64le     powerpc   powerpc64le-linux-gnu- ppc64le_defconfig  -      arch/powerpc/kernel/interrupt.o arch/powerpc/kernel/signal.o arch/powerpc/kernel/syscall.o
s390x       s390      s390x-linux-gnu-       defconfig          -      arch/s390/kernel/signal.o arch/s390/kernel/syscall.o
loongarch64 loongarch loongarch64-linux-gnu- defconfig          -      arch/loongarch/kernel/signal.o arch/loongarch/kernel/syscall.o
x86_64-W1   x86_64    -                      project            W=1    arch/x86/kernel/signal.o arch/x86/entry/common.o
x86_64-sparse x86_64  -                      project            C=2    arch/x86/kernel/signal.o arch/x86/entry/common.o
x86_64-clang x86_64   -                      project            LLVM=1 arch/x86/kernel/signal.o arch/x86/entry/common.o
x86_64-allno x86_64   -                      allnoconfig        -      arch/x86/kernel/signal.o arch/x86/entry/common.o
x86_64-rand1 x86_64   -                      randconfig:1101    -      arch/x86/kernel/signal.o arch/x86/entry/common.o
x86_64-rand2 x86_64   -                      randconfig:2202    -      arch/x86/kernel/signal.o arch/x86/entry/common.o
x86_64-rand3 x86_64   -                      randconfig:3303    -      arch/x86/kernel/signal.o arch/x86/entry/common.o
"
GENERIC_OBJS="kernel/rseq.o kernel/sys.o kernel/entry/common.o kernel/sched/core.o
	kernel/fork.o kernel/exit.o kernel/signal.o fs/exec.o"

declare -A c_arch=() c_cross=() c_recipe=() c_extra=() c_objs=()
all_cells=()
while read -r name arch cross recipe extra objs; do
	[ -n "$name" ] || continue
	all_cells+=("$name")
	c_arch[$name]=$arch c_cross[$name]=${cross#-} c_recipe[$name]=$recipe
	c_extra[$name]=${extra#-} c_objs[$name]=$objs
done <<<"$CELL_TABLE"
cells=()
for c in ${CELLS:-${all_cells[*]}}; do
	[ -n "${c_arch[$c]:-}" ] || die "CELLS: '$c' is not a cell; use some of: ${all_cells[*]}"
	cells+=("$c")
done
PREFIXES=${PREFIXES:-last}
case $PREFIXES in
all | last | tip) ;;
*) die "PREFIXES='$PREFIXES': want last (every prefix of the last series, the default), all (of every series) or tip (each series whole)" ;;
esac
[ -z "$check" ] || exit 0

src=$("$TOPDIR/kernel-patch/scripts/kernel-source.sh")
srcver=$(cat "$src/.git/rseq-opbench-version")
base=$CACHE_DIR/build/$srcver/check-arches
wt=$base/src
mkdir -p "$base"
exec 7>"$base/.lock"
flock -n 7 || die "another check-arches is using $base; wait for it"
ccache_env
# The cross root is made now, before the clock of the first build starts.
"$TOPDIR/kernel-patch/scripts/buildroot.sh" path >/dev/null
if [ ! -e "$wt/.git" ]; then
	git -C "$src" worktree prune
	git -C "$src" worktree add -q --detach "$wt" "$(base_tag "$srcver")"
fi
# The project's merged config (the x86_64 cells'), as kernel-build.sh makes
# it, made here when no kernel has been built yet.
merged=$(manifest_get "config/$srcver/trixie/default" 2>/dev/null) || merged=
if [ -z "$merged" ] || [ ! -f "$merged" ]; then
	mapfile -t frags < <(KCONFIG=default TOOLCHAIN=trixie fragments)
	merged=$base/project-$(hash_files "${frags[@]}" "$TOPDIR/kernel-patch/scripts/kernel-config.sh").config
	if [ ! -f "$merged" ]; then
		log "merging the project's x86_64 config for the x86_64 cells"
		BUILDROOT=base KCONFIG=default TOOLCHAIN=trixie \
			"$TOPDIR/kernel-patch/scripts/kernel-config.sh" "$src" "$merged"
	fi
fi
run=$(new_run_dir "${RESULTS_DIR:-$TOPDIR/results}" arches)
mkdir -p "$run/logs"
log "run directory: $run"
printf 'series\tprefix\tpatch\tcell\tconfig\tstatus\twarnings\tnew_warnings\tseconds\n' > "$run/matrix.tsv"
{
	echo "source=linux-source-$srcver"
	xprov=$("$TOPDIR/kernel-patch/scripts/buildroot.sh" path)/../provenance
	echo "buildroot=$(sed -n 's/^recipe=//p' "$xprov")"
	echo "sparse=$(sed -n 's/^sparse_in_path=//p' "$xprov")"
	echo "prefixes=$PREFIXES"
	echo "cells=${cells[*]}"
	for n in "${names[@]}"; do echo "series.$n=${series_dir[$n]}"; done
	echo "started=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$run/provenance"

# kmake CELL CFG ARG...: make in the cell's tree, in the cross root.
kmake() {
	local cell=$1 cfg=$2 cc
	shift 2
	local args=(-C "$wt" O="$base/$cell-$cfg" ARCH="${c_arch[$cell]}")
	if [[ " ${c_extra[$cell]} " == *" LLVM=1 "* ]]; then
		cc="ccache clang"
	else
		cc="ccache ${c_cross[$cell]}gcc"
		[ -z "${c_cross[$cell]}" ] || args+=(CROSS_COMPILE="${c_cross[$cell]}")
	fi
	# shellcheck disable=SC2206 # extra arguments are words
	args+=(CC="$cc" HOSTCC="ccache gcc" ${c_extra[$cell]})
	in_buildroot make "${args[@]}" "$@"
}

# configure CELL CFG: the cell's .config, made again only when its recipe
# (recorded in the tree) changed. Returns 1, with the reason in the log
# named by $lg, when the configuration cannot be made.
configure() {
	local cell=$1 cfg=$2 o=$base/$1-$2 recipe want
	recipe=${c_recipe[$cell]}
	want="$recipe ${c_extra[$cell]} $cfg $(declare -f configure | sha256sum | cut -c1-16)"
	[ "$recipe" != project ] || want+=" $(hash_files "$merged")"
	[ -f "$o/.config" ] && [ "$(cat "$o/.recipe" 2>/dev/null)" = "$want" ] && return 0
	mkdir -p "$o"
	rm -f "$o/.recipe"
	case $recipe in
	project)
		cp "$merged" "$o/.config"
		kmake "$cell" "$cfg" -s olddefconfig >>"$lg" 2>&1 || return 1
		;;
	randconfig:*)
		# RSEQ=y (and EXPERT, so that RSEQ may be chosen) forced,
		# the rest random from a fixed seed.
		printf 'CONFIG_EXPERT=y\nCONFIG_RSEQ=y\n' > "$o/allconfig"
		KCONFIG_SEED=${recipe#randconfig:} KCONFIG_ALLCONFIG=$o/allconfig \
			kmake "$cell" "$cfg" -s randconfig >>"$lg" 2>&1 || return 1
		grep -q '^CONFIG_RSEQ=y' "$o/.config" || {
			echo "check-arches: randconfig seed ${recipe#randconfig:} did not keep CONFIG_RSEQ=y" >>"$lg"
			return 1
		}
		;;
	*)
		kmake "$cell" "$cfg" -s "$recipe" >>"$lg" 2>&1 || return 1
		;;
	esac
	if [ "$cfg" = norseq ]; then
		in_buildroot "$wt/scripts/config" --file "$o/.config" -e EXPERT -d RSEQ || return 1
		kmake "$cell" "$cfg" -s olddefconfig >>"$lg" 2>&1 || return 1
		if grep -q '^CONFIG_RSEQ=y' "$o/.config"; then
			echo "check-arches: CONFIG_RSEQ is still set in the norseq configuration" >>"$lg"
			return 1
		fi
	fi
	# book3s/32 with KUAP is the configuration the series' region choice is for.
	if [ "$cell" = ppc32 ]; then
		in_buildroot "$wt/scripts/config" --file "$o/.config" -e PPC_KUAP || return 1
		kmake "$cell" "$cfg" -s olddefconfig >>"$lg" 2>&1 || return 1
		grep -q '^CONFIG_PPC_BOOK3S_32=y' "$o/.config" && grep -q '^CONFIG_PPC_KUAP=y' "$o/.config" || {
			echo "check-arches: pmac32_defconfig did not give book3s/32 with KUAP" >>"$lg"
			return 1
		}
	fi
	echo "$want" > "$o/.recipe"
}

# offered CELL CFG: whether the cell's kernel offers RSEQ operations. They
# need rseq's optimized mode: CONFIG_RSEQ and CONFIG_GENERIC_IRQ_ENTRY.
offered() {
	local o=$base/$1-$2/.config
	if grep -q '^CONFIG_RSEQ=y' "$o" && grep -q '^CONFIG_GENERIC_IRQ_ENTRY=y' "$o"; then
		echo yes
	else
		echo no
	fi
}

# objects CELL CFG: the cell's objects that its config builds.
objects() {
	local o=$base/$1-$2/.config obj
	for obj in $GENERIC_OBJS ${c_objs[$1]}; do
		case $obj in
		kernel/rseq.o) grep -q '^CONFIG_RSEQ=y' "$o" || continue ;;
		kernel/entry/common.o) grep -q '^CONFIG_GENERIC_IRQ_ENTRY=y' "$o" || continue ;;
		arch/x86/entry/syscall_32.o)
			grep -qE '^CONFIG_(IA32_EMULATION|X86_32)=y' "$o" || continue ;;
		esac
		echo "$obj"
	done
}

declare -A base_warn=()
# build LABEL PREFIX PATCH: every cell at the checked-out revision.
build() {
	local label=$1 prefix=$2 patch=$3 cell cfg cfgs o lg status t0 nw new objs obj
	for cell in "${cells[@]}"; do
		cfgs="rseq norseq"
		[[ "$cell" == x86_64-* ]] && cfgs=rseq
		for cfg in $cfgs; do
			o=$base/$cell-$cfg
			lg=$run/logs/$label-$prefix-$cell-$cfg.log
			t0=$(date +%s)
			: > "$lg"
			if ! configure "$cell" "$cfg"; then
				status=error
				echo "error: check-arches: the configuration could not be made" >>"$lg"
			else
				mapfile -t objs < <(objects "$cell" "$cfg")
				# Compiled every time, so that every build's log has
				# every object's warnings (ccache replays them on a hit).
				for obj in "${objs[@]}"; do rm -f "$o/$obj"; done
				# --output-sync: one object's lines together, or two
				# checkers' lines cut into each other at -j2 make lines
				# that are in no source (seen with sparse).
				if kmake "$cell" "$cfg" -j"$(nproc)" --output-sync=target "${objs[@]}" >>"$lg" 2>&1; then
					status=clean
				else
					status=error
				fi
			fi
			# The compiler's, sparse's and objtool's complaints, without the
			# tree's path, so that the pristine source's can be subtracted.
			grep -E '(warning|error):' "$lg" | sed "s|$wt/||g; s|$o/||g" | sort -u > "$lg.w" || true
			nw=$(wc -l < "$lg.w")
			if [ "$label" = pristine ]; then
				[ "$status" = error ] ||
					printf '%s\t%s\t%s\n' "$cell" "$cfg" "$(offered "$cell" "$cfg")" >> "$run/offered.tsv"
				base_warn[$cell-$cfg]=$lg.w
				new=0
			else
				# Counted, not a set: comm(1) on sorted lists with
				# repeats keeps the surplus (sparse repeats messages).
				# The same count as analysis/arches_table.py's.
				new=$(LC_ALL=C comm -13 \
					<(sed -E 's/:[0-9]+:[0-9]+:/:/g' "${base_warn[$cell-$cfg]}" | LC_ALL=C sort) \
					<(sed -E 's/:[0-9]+:[0-9]+:/:/g' "$lg.w" | LC_ALL=C sort) | wc -l)
			fi
			[ "$status" = clean ] && [ "$nw" -gt 0 ] && status=warnings
			# A checker kbuild refuses (trixie's sparse 0.6.4 lacks
			# __typeof_unqual__, which scripts/checker-valid.sh asks
			# for; the cross root has sid's unless sid had none)
			# checks nothing: the cell did not run, say so.
			if [ "$status" != error ] &&
				grep -q 'specified, but sparse is not available or not up to date' "$lg"; then
				status=nochecker
			fi
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$prefix" "$patch" "$cell" "$cfg" \
				"$status" "$nw" "$new" $(( $(date +%s) - t0 )) >> "$run/matrix.tsv"
			log "$label $prefix/$npatches $cell $cfg: $status ($nw warning lines, $new not in the pristine source) in $(fmt_secs $(( $(date +%s) - t0 )))"
		done
	done
}

t_start=$(date +%s)
git -C "$wt" checkout -q --detach -f "$(base_tag "$srcver")"
npatches=0
build pristine 0 -
for n in "${names[@]}"; do
	mapfile -t patches < <(patch_list "${series_dir[$n]}" | grep -v '/0000-')
	npatches=${#patches[@]}
	am_series "$src" "$srcver" "$wt" "${patches[@]}"
	tip=$(git -C "$wt" rev-parse HEAD)
	first=1
	if [ "$PREFIXES" = tip ] || { [ "$PREFIXES" = last ] && [ "$n" != "${names[-1]}" ]; }; then
		first=$npatches
	fi
	for ((i = first; i <= npatches; i++)); do
		git -C "$wt" checkout -q --detach "$tip~$((npatches - i))"
		# A prefix that touches no kernel source (selftests, docs) is
		# built all the same: its build must still be the previous one's.
		build "$n" "$i" "$(basename "${patches[$((i - 1))]}")"
	done
done
git -C "$wt" checkout -q --detach -f "$(base_tag "$srcver")"
echo "finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$run/provenance"

/usr/bin/python3 "$TOPDIR/analysis/arches_table.py" "$run" | tee "$run/table.txt"
log "done in $(fmt_secs $(( $(date +%s) - t_start ))): $run"
# Fails on what a series' whole adds over the pristine source.
/usr/bin/python3 "$TOPDIR/analysis/arches_table.py" --check "${names[-1]}" "$run"
