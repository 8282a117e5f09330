#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel-build.sh - build one kernel flavour from the cached Debian source.
#
# Usage: kernel-patch/scripts/kernel-build.sh [--check] FLAVOUR [SERIES]
#   FLAVOUR  a flavour declared in kernel-patch/flavours/ (baseline, ops,
#            control, ops-v3, v2, resident, rfc, bpf) or any name for SERIES
#            (letters, digits, - and _)
#   SERIES   directory of patches (a `series` order file or *.patch in name
#            order) or an mbox; by default the declaration's (ops:
#            kernel-patch/series/, v4; control: the same plus the planted
#            bug in kernel-patch/controls/, the negative control of make
#            test); refused for a flavour declared FIXED=1
#   --check  check FLAVOUR, SERIES, KCONFIG and TOOLCHAIN, and stop (make,
#            before it fetches or builds anything)
# Env:   KVER, KCONFIG (default|debug), TOOLCHAIN (trixie|host), CACHE_DIR,
#        V=1 for the full build log
#
# Every flavour is a git worktree of the same pristine source, with its series
# applied by `git am`, built out of tree in <worktree>/_build with the same
# merged config and ccache, with the toolchain's compiler: Debian trixie's
# gcc 14 from the project's build root (kernel-patch/scripts/buildroot.sh) by default.
# The result lands in
#   $CACHE_DIR/kernels/<source version>/<toolchain>/<kconfig>/<flavour>/
# as bzImage, vmlinux, System.map, config, headers/ and provenance, and the
# run manifest ($MANIFEST) names it for every later stage.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

check=
[ "${1:-}" != --check ] || { check=1; shift; }
flavour=${1:?usage: kernel-build.sh [--check] FLAVOUR [SERIES]}
series=${2:-}
named=0
[ -z "$series" ] || named=1
[[ "$flavour" =~ ^[A-Za-z0-9_-]+$ ]] ||
	die "flavour name '$flavour' may only hold letters, digits, - and _"

# The flavour's declaration (kernel-patch/flavours/): its series, a
# series it alone is built from (FIXED=1), patches after it (EXTRA).
extra=()
x=
if [ "$(flavour_get "$flavour" SERIES)" = @source ]; then
	[ "$KVER" = git ] ||
		die "flavour '$flavour' is the commits of a git SOURCE after its BASE: make kernels SOURCE=<the top of a Linux git tree> [BASE=<commit>] FLAVOURS=\"baseline $flavour\""
	# The tree's commits as they are now (a commit since the last export
	# is a new series), before the series is resolved below.
	[ -n "$check" ] || "$TOPDIR/kernel-patch/scripts/kernel-source.sh" >/dev/null
	[ -n "$(flavour_series "$flavour")" ] || [ -n "$check" ] ||
		die "flavour '$flavour': SOURCE=$SOURCE has no commit after BASE, so '$flavour' would be the baseline; commit the change, or name an earlier BASE"
fi
if [ "$(flavour_get "$flavour" FIXED)" = 1 ]; then
	fixed=$(flavour_series "$flavour")
	if [ -n "$series" ]; then
		[ -n "$fixed" ] ||
			die "$flavour takes no series; name the flavour, e.g. FLAVOUR=rfc SERIES=$series"
		die "$flavour is built from ${fixed#"$TOPDIR"/}/; name another flavour for SERIES=$series"
	fi
	series=$fixed
else
	[ -n "$series" ] || series=$(flavour_series "$flavour")
	[ -n "$series" ] ||
		die "flavour '$flavour' needs a series: SERIES=<patch directory or mbox> (make kernel), or set SERIES_${flavour//-/_}=<patch directory or mbox>"
fi
x=$(flavour_get "$flavour" EXTRA)
if [ -n "$x" ]; then
	mapfile -t extra < <(patch_list "$TOPDIR/$x")
	[ ${#extra[@]} -gt 0 ] || die "no patches in $x/: $flavour would be built from its series alone"
fi
if [ -n "$series" ]; then
	[ -e "$series" ] || die "series '$series' does not exist; name a patch directory or an mbox"
	series=$(realpath "$series")
	mapfile -t patches < <(patch_list "$series")
	[ ${#patches[@]} -gt 0 ] || die "no patches in '$series' (want *.patch, a 'series' file or an mbox)"
	patches+=(${extra[@]+"${extra[@]}"})
	for p in "${patches[@]}"; do
		[ -f "$p" ] || die "series '$series' lists '$p', which does not exist; correct its series file"
	done
	series_hash=$(hash_files "${patches[@]}")
else
	patches=()
	series_hash=none
fi

# An unknown KCONFIG or TOOLCHAIN fails here, before any work.
fragments >/dev/null
toolchain_dir >/dev/null
[ -z "$check" ] || exit 0
src=$("$TOPDIR/kernel-patch/scripts/kernel-source.sh")
srcver=$(cat "$src/.git/rseq-opbench-version")
base=$(build_base "$srcver")
wt=$base/$flavour
obj=$wt/_build
out=$(kernels_base "$srcver")/$flavour
suffix=-$flavour
[ "$KCONFIG" = default ] || suffix=$suffix-$KCONFIG
mkdir -p "$base"
t0=$(date +%s)
# Makes the build root on first use (with progress), then names it.
toolchain=$("$TOPDIR/kernel-patch/scripts/buildroot.sh" describe)

# One build per flavour at a time: a second make waits here, and says so.
exec 8>"$base/.lock-$flavour"
if ! flock -n 8; then
	log "[$flavour] another make is building this flavour ($base/$flavour); waiting for it"
	flock 8
fi

# 1. The merged config, shared by every flavour of this kernel configuration.
mapfile -t frags < <(fragments)
config_key=$(hash_files "${frags[@]}" "$TOPDIR/kernel-patch/scripts/kernel-config.sh" <(echo "$toolchain"))
merged=$base/config-$config_key
if [ ! -f "$merged" ]; then
	log "[$flavour] merging config ($KCONFIG kernel configuration)"
	"$TOPDIR/kernel-patch/scripts/kernel-config.sh" "$src" "$merged"
fi

# 2. The worktree, with the series applied once per series hash.
if [ ! -e "$wt/.git" ]; then
	git -C "$src" worktree prune
	git -C "$src" worktree add -q --detach "$wt" "$(base_tag "$srcver")"
	grep -qx '_build/' "$src/.git/info/exclude" 2>/dev/null ||
		echo '_build/' >> "$src/.git/info/exclude"
fi
stamp=$obj/.series-hash
if [ "$(cat "$stamp" 2>/dev/null)" != "$series_hash" ]; then
	log "[$flavour] applying series ($series_hash): ${#patches[@]} patch(es)"
	git -C "$wt" am --abort >/dev/null 2>&1 || true
	git -C "$wt" checkout -q --detach -f "$(base_tag "$srcver")"
	git -C "$wt" clean -q -fd -e _build
	if [ ${#patches[@]} -gt 0 ]; then
		git -C "$wt" -c user.name=rseq-opbench -c user.email=rseq-opbench@localhost \
			am -q --keep-cr "${patches[@]}" >"$base/$flavour-am.log" 2>&1 || {
			cat "$base/$flavour-am.log" >&2
			git -C "$wt" am --abort >/dev/null 2>&1 || true
			die "series '$series' does not apply with git am to linux-source $srcver"
		}
	fi
	mkdir -p "$obj"
	echo "$series_hash" > "$stamp"
fi
echo "$named" > "$obj/.series-named"

# 3. The config: the merged one, unchanged by the series.
mkdir -p "$obj"
if ! cmp -s "$merged" "$obj/.config.merged" 2>/dev/null || [ ! -f "$obj/.config" ]; then
	cp "$merged" "$obj/.config"
	in_buildroot make -s -C "$wt" O="$obj" ARCH=x86_64 olddefconfig >/dev/null
	cp "$merged" "$obj/.config.merged"
fi
"$TOPDIR/kernel-patch/scripts/check-config.sh" "$obj/.config" "${frags[@]}"

# 4. Build, with ccache shared between flavours. O= lies inside the worktree so
# that kbuild uses the relative srctree '..' and compile lines are identical
# across flavours; CCACHE_NOHASHDIR lets them share objects.
ccache_env
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-20G}
export KBUILD_BUILD_TIMESTAMP="linux-source $srcver" KBUILD_BUILD_USER=rseq-opbench
export KBUILD_BUILD_HOST=rseq-opbench
jobs=${JOBS:-$(nproc)}
# No variable-location tracking in the DWARF: BTF needs the types, not where
# each variable lives at each instruction, and tracking them was about 8 %
# of a compile (kernel/sched/fair.c, gcc 14). Code generation is the same:
# -g and its options never change the instructions gcc emits.
kcflags=-fno-var-tracking
makeargs=(-C "$wt" O="$obj" ARCH=x86_64 -j"$jobs" CC="ccache gcc" HOSTCC="ccache gcc"
	LOCALVERSION="$suffix" KCFLAGS="$kcflags")
buildlog=$obj/build.log
log "[$flavour] building linux $srcver$suffix (log: $buildlog)"
tb=$(date +%s)
# The ticker must not hold the flavour's lock (fd 8), and ends with us.
build_ticker "[$flavour]" "$buildlog" "$tb"
rc=0
if [ "${V:-0}" = 1 ]; then
	in_buildroot make "${makeargs[@]}" bzImage 2>&1 | tee "$buildlog" || rc=$?
	[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
else
	in_buildroot make "${makeargs[@]}" bzImage >"$buildlog" 2>&1 || rc=$?
fi
# shellcheck disable=SC2154 # set by build_ticker (common.sh)
kill "$ticker" 2>/dev/null || true
if [ $rc -ne 0 ]; then
	tail -30 "$buildlog" >&2
	die "[$flavour] build failed; full log: $buildlog"
fi
tbuild=$(( $(date +%s) - tb ))

# Name the kernel, the tree it was built from and the merged config in the
# run manifest, for the stages after the build.
record() {
	local k=$srcver/$TOOLCHAIN/$KCONFIG
	manifest_set "kernel/$k/$flavour" "$out" "tree/$k/$flavour" "$wt" \
		"config/$k" "$merged"
}

# Nothing rebuilt and already installed: done (a no-change rebuild).
if [ -f "$out/provenance" ] && [ "$out/bzImage" -nt "$obj/arch/x86/boot/bzImage" ] &&
	[ "$(sed -n 's/^series_hash=//p' "$out/provenance")" = "$series_hash" ] &&
	cmp -s "$obj/.config" "$out/config"; then
	log "[$flavour] up to date in $(fmt_secs $(( $(date +%s) - t0 ))): $out"
	record
	echo "$out"
	exit 0
fi
in_buildroot make -s "${makeargs[@]}" headers >>"$buildlog" 2>&1 ||
	{ tail -30 "$buildlog" >&2; die "[$flavour] make headers failed; full log: $buildlog"; }

# 5. Install beside its provenance; never leave a half-written result.
release=$(cat "$obj/include/config/kernel.release")
case "$release" in *"$suffix") ;; *) die "kernel release '$release' does not name flavour '$flavour'" ;; esac
stage=$out.new
rm -rf "$stage"
mkdir -p "$stage"
cp "$obj/arch/x86/boot/bzImage" "$obj/vmlinux" "$obj/System.map" "$stage/"
cp "$obj/.config" "$stage/config"
cp -r "$obj/usr/include" "$stage/headers"
if [ ${#patches[@]} -gt 0 ]; then
	git -C "$wt" log --oneline "$(base_tag "$srcver")..HEAD" > "$stage/series.log"
fi
# grep -c reads all of readelf's output: no SIGPIPE under pipefail.
btf=no
[ "$(readelf -S "$obj/vmlinux" | grep -c ' \.BTF ' || true)" -gt 0 ] && btf=yes
cat > "$stage/provenance" <<EOP
flavour=$flavour
profile=$KCONFIG
kernel_release=$release
source_package=$([ "$KVER" = git ] && echo "git tree" || echo "linux-source-$KVER")
source_version=$srcver
series=${series:-none}${extra[*]:+ + $x}
series_hash=$series_hash
series_named=$named
series_patches=${#patches[@]}
config_hash=$(sha256sum < "$obj/.config" | cut -c1-16)
config_fragments=$(for f in "${frags[@]}"; do basename "$f"; done | paste -sd,)
toolchain=$TOOLCHAIN $toolchain
compiler=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\(.*\)"$/\1/p' "$obj/.config")
kcflags=$kcflags
cc_has_asm_goto_output=$(grep -q '^CONFIG_CC_HAS_ASM_GOTO_OUTPUT=y' "$obj/.config" && echo y || echo n)
pahole=$(in_buildroot pahole --version 2>/dev/null || echo none)
btf=$btf
preempt=$(grep -o '^CONFIG_PREEMPT=y' "$obj/.config" >/dev/null && echo full || echo other)
mitigations=$(grep -q '^CONFIG_CPU_MITIGATIONS=y' "$obj/.config" && echo on || echo off)
build_seconds=$tbuild
built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
build_host=$(uname -n)
EOP
# A git SOURCE's tree, base, head and describe (kernel-source.sh); Debian's
# package has no such file, and its provenance no empty line for it.
[ ! -f "$src/.git/rseq-opbench-source" ] ||
	cat "$src/.git/rseq-opbench-source" >> "$stage/provenance"
rm -rf "$out"
mv "$stage" "$out"
record
log "[$flavour] done in $(fmt_secs $(( $(date +%s) - t0 ))): $out ($release)"
echo "$out"
