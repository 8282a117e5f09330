#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# arch-kernel.sh - build one flavour for a guest architecture other than x86_64.
#
# Usage: kernel-patch/scripts/arch-kernel.sh [--check] ARCH FLAVOUR
#   ARCH     a target declared in vm-images/targets/ (ppc32: powerpc
#            book3s/32 with KUAP; arm64): its KARCH, CROSS, CONFIG, IMAGE
#   FLAVOUR  a flavour declared in kernel-patch/flavours/ (baseline, ops:
#            series v4, v2, rfc, ...) or a name with SERIES_<name>
#            set, as for the x86_64 kernels (common.sh, flavour_series)
# Env:   CACHE_DIR, V=1 for the full build log
#
# Built in the cross build root (buildroot.sh, BUILDROOT=cross) with
# Debian's cross gcc and ccache, from the same cached source as the x86_64
# kernels: `make tinyconfig` plus the target's CONFIG fragment,
# every line of which must land. The worktree and build tree live in
#   $CACHE_DIR/build/<source version>/arch-ARCH/<flavour>/
# and the kernel in
#   $CACHE_DIR/kernels/<source version>/arch-ARCH/<flavour>/
# (the image, vmlinux, config, headers/ from make headers, provenance),
# keyed by the series' hash and the config: a second run with neither
# changed rebuilds nothing. Prints the kernel's directory.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"
export BUILDROOT=cross

check=
[ "${1:-}" != --check ] || { check=1; shift; }
arch=${1:?usage: arch-kernel.sh [--check] ARCH FLAVOUR}
flavour=${2:?usage: arch-kernel.sh [--check] ARCH FLAVOUR}
target_load "$arch"
karch=$TARGET_KARCH cross=$TARGET_CROSS image=$TARGET_IMAGE
[[ "$flavour" =~ ^[A-Za-z0-9_-]+$ ]] ||
	die "flavour name '$flavour' may only hold letters, digits, - and _"
# The series of the flavour's declaration (kernel-patch/flavours/), or
# SERIES_<name>; a flavour declared with patches after its series
# (control's planted bug) is x86-64's only.
series=$(flavour_series "$flavour")
# A git SOURCE's commits (the flavour tree) are built for x86-64 alone:
# without that series it would be the pristine tree under its name.
[ "$(flavour_get "$flavour" SERIES)" != @source ] ||
	die "flavour '$flavour' (a git SOURCE's commits after BASE) is built for x86-64 only"
x=$(flavour_get "$flavour" EXTRA)
[ -z "$x" ] || die "flavour '$flavour' adds $x/ to its series: it is built for x86-64 only"
[ -n "$series" ] || [ "$(flavour_get "$flavour" FIXED)" = 1 ] ||
	die "flavour '$flavour' needs a series: set SERIES_${flavour//-/_}=<patch directory or mbox>"
frag=$TOPDIR/$TARGET_CONFIG
[ -f "$frag" ] || die "no $frag (CONFIG of vm-images/targets/$arch.target)"
patches=()
series_hash=none
if [ -n "$series" ]; then
	[ -e "$series" ] || die "series '$series' does not exist; name a patch directory or an mbox"
	mapfile -t patches < <(patch_list "$series" | grep -v '/0000-')
	[ ${#patches[@]} -gt 0 ] || die "no patches in '$series'"
	series_hash=$(hash_files "${patches[@]}")
fi
[ -z "$check" ] || exit 0

src=$("$TOPDIR/kernel-patch/scripts/kernel-source.sh")
srcver=$(cat "$src/.git/rseq-opbench-version")
root=$("$TOPDIR/kernel-patch/scripts/buildroot.sh" path)
base=$CACHE_DIR/build/$srcver/arch-$arch
wt=$base/$flavour
obj=$wt/_build
out=$CACHE_DIR/kernels/$srcver/arch-$arch/$flavour
mkdir -p "$base"
exec 8>"$base/.lock-$flavour"
if ! flock -n 8; then
	log "[$arch $flavour] another make is building this kernel; waiting for it"
	flock 8
fi
t0=$(date +%s)
kmake() {
	in_buildroot make -C "$wt" O="$obj" ARCH="$karch" CROSS_COMPILE="$cross" \
		CC="ccache ${cross}gcc" HOSTCC="ccache gcc" "$@"
}

# The worktree, with the series applied once per series hash.
if [ ! -e "$wt/.git" ]; then
	git -C "$src" worktree prune
	git -C "$src" worktree add -q --detach "$wt" "$(base_tag "$srcver")"
fi
stamp=$wt/.series-hash
if [ "$(cat "$stamp" 2>/dev/null)" != "$series_hash" ]; then
	log "[$arch $flavour] applying series ($series_hash): ${#patches[@]} patch(es)"
	am_series "$src" "$srcver" "$wt" ${patches[@]+"${patches[@]}"}
	echo "$series_hash" > "$stamp"
fi

# The config: tinyconfig plus the fragment, remade when either the fragment,
# this script or the cross root changed.
ckey=$(hash_files "$frag" "$0" <(echo "$root"))
mkdir -p "$obj"
if [ "$(cat "$obj/.config-key" 2>/dev/null)" != "$ckey" ] || [ ! -f "$obj/.config" ]; then
	log "[$arch $flavour] configuring: tinyconfig + $(basename "$frag")"
	rm -f "$obj/.config-key"
	kmake -s tinyconfig >"$obj/config.log" 2>&1 ||
		{ tail "$obj/config.log" >&2; die "[$arch $flavour] make tinyconfig failed"; }
	(cd "$obj" && ARCH=$karch CROSS_COMPILE=$cross in_buildroot \
		"$wt/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$frag") >>"$obj/config.log" 2>&1 ||
		{ tail "$obj/config.log" >&2; die "[$arch $flavour] merge_config.sh failed"; }
	kmake -s olddefconfig >>"$obj/config.log" 2>&1 ||
		{ tail "$obj/config.log" >&2; die "[$arch $flavour] make olddefconfig failed"; }
	echo "$ckey" > "$obj/.config-key"
fi
"$TOPDIR/kernel-patch/scripts/check-config.sh" "$obj/.config" "$frag"

if [ -f "$out/provenance" ] &&
	[ "$(sed -n 's/^series_hash=//p' "$out/provenance")" = "$series_hash" ] &&
	cmp -s "$obj/.config" "$out/config" && [ "$out/provenance" -nt "$obj/$image" ]; then
	log "[$arch $flavour] up to date: $out"
	echo "$out"
	exit 0
fi

ccache_env
export KBUILD_BUILD_TIMESTAMP="linux-source $srcver" KBUILD_BUILD_USER=rseq-opbench
export KBUILD_BUILD_HOST=rseq-opbench
buildlog=$obj/build.log
log "[$arch $flavour] building linux $srcver-$flavour for $karch (log: $buildlog)"
tb=$(date +%s)
build_ticker "[$arch $flavour]" "$buildlog" "$tb"
rc=0
if [ "${V:-0}" = 1 ]; then
	kmake -j"$(nproc)" LOCALVERSION="-$flavour" 2>&1 | tee "$buildlog" || rc=$?
	[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
else
	kmake -j"$(nproc)" LOCALVERSION="-$flavour" >"$buildlog" 2>&1 || rc=$?
fi
# shellcheck disable=SC2154 # set by build_ticker (common.sh)
kill "$ticker" 2>/dev/null || true
if [ $rc -ne 0 ]; then
	tail -30 "$buildlog" >&2
	die "[$arch $flavour] build failed; full log: $buildlog"
fi
kmake -s headers >>"$buildlog" 2>&1 ||
	{ tail -30 "$buildlog" >&2; die "[$arch $flavour] make headers failed; full log: $buildlog"; }

stage=$out.new
rm -rf "$stage"
mkdir -p "$stage"
cp "$obj/$image" "$stage/"
[ "$image" = vmlinux ] || cp "$obj/vmlinux" "$stage/"
cp "$obj/.config" "$stage/config"
cp -r "$obj/usr/include" "$stage/headers"
[ ${#patches[@]} -eq 0 ] || git -C "$wt" log --oneline "$(base_tag "$srcver")..HEAD" > "$stage/series.log"
cat > "$stage/provenance" <<EOP
arch=$arch
karch=$karch
flavour=$flavour
image=$(basename "$image")
kernel_release=$(cat "$obj/include/config/kernel.release")
source_version=$srcver
series=${series:-none}
series_hash=$series_hash
series_patches=${#patches[@]}
config_hash=$(sha256sum < "$obj/.config" | cut -c1-16)
config_fragment=$(basename "$frag")
compiler=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\(.*\)"$/\1/p' "$obj/.config")
buildroot=$root
build_seconds=$(( $(date +%s) - tb ))
built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
EOP
rm -rf "$out"
mv "$stage" "$out"
log "[$arch $flavour] done in $(fmt_secs $(( $(date +%s) - t0 ))): $out"
echo "$out"
