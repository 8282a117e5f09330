#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-series.sh - checkpatch, and a warning-free build of each patch in turn.
#
# Usage: kernel-patch/scripts/check-series.sh [SERIES_DIR]   (default kernel-patch/series)
# For each prefix of the series (patch 1, patches 1-2, ...), builds the
# objects that include the files the series touches, with the project's
# config and with CONFIG_RSEQ=n, and fails on any compiler or objtool
# warning. Then runs scripts/checkpatch.pl --strict on every patch and
# prints its summary. A full vmlinux build of the whole series is what
# `make kernels` does; this is the cheaper per-patch check.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

series=$(realpath "${1:-$TOPDIR/kernel-patch/series}")
mapfile -t patches < <(patch_list "$series")
[ ${#patches[@]} -gt 0 ] || die "no patches in '$series'"
src=$("$TOPDIR/kernel-patch/scripts/kernel-source.sh")
srcver=$(cat "$src/.git/rseq-opbench-version")
wt=$CACHE_DIR/build/$srcver/$TOOLCHAIN/check-series
objs="kernel/rseq.o kernel/sys.o kernel/entry/common.o kernel/sched/core.o
	kernel/fork.o kernel/exit.o kernel/signal.o fs/exec.o arch/x86/kernel/signal.o"
ccache_env

am_series "$src" "$srcver" "$wt" "${patches[@]}"

# The merged config the kernels of this source and toolchain were built with.
merged=$(manifest_get "config/$srcver/$TOOLCHAIN/default") && [ -f "$merged" ] ||
	die "no merged config for TOOLCHAIN=$TOOLCHAIN in the manifest ($MANIFEST): run make kernels first"
for cfg in rseq norseq; do
	mkdir -p "$wt/_build_$cfg"
	cp "$merged" "$wt/_build_$cfg/.config"
	[ $cfg = norseq ] && sed -i 's/^CONFIG_RSEQ=y/# CONFIG_RSEQ is not set/' "$wt/_build_$cfg/.config"
	in_buildroot make -s -C "$wt" O="_build_$cfg" ARCH=x86_64 olddefconfig >/dev/null
done

tip=$(git -C "$wt" rev-parse HEAD)
bad=0
for i in "${!patches[@]}"; do
	n=$((i + 1))
	rev=$(git -C "$wt" rev-parse "$tip~$(( ${#patches[@]} - n ))")
	git -C "$wt" checkout -q --detach "$rev"
	for cfg in rseq norseq; do
		log=$wt/_build_$cfg/patch-$n.log
		o=$objs
		# Without CONFIG_RSEQ, kernel/rseq.c is not built at all.
		[ $cfg = norseq ] && o=${objs/kernel\/rseq.o/}
		# shellcheck disable=SC2086
		if ! in_buildroot make -C "$wt" O="_build_$cfg" ARCH=x86_64 -j"$(nproc)" CC="ccache gcc" \
			$o >"$log" 2>&1; then
			tail -20 "$log" >&2
			log "patch $n ($cfg): build FAILED; log $log"
			bad=1
		elif grep -E 'warning:|error:' "$log" >&2; then
			log "patch $n ($cfg): warnings; log $log"
			bad=1
		else
			log "patch $n ($cfg): builds clean: $(basename "${patches[$i]}")"
		fi
	done
done
for p in "${patches[@]}"; do
	echo "checkpatch $(basename "$p"): $("$wt/scripts/checkpatch.pl" --strict -q "$p" 2>&1 |
		grep '^total:' || echo clean)"
done
exit $bad
