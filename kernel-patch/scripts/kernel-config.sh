#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel-config.sh - merge the project's config fragments into one .config.
#
# Usage: kernel-patch/scripts/kernel-config.sh SRC OUT_CONFIG
#   SRC         pristine kernel source tree
#   OUT_CONFIG  where to write the merged config
# Env:   KCONFIG=default|debug, TOOLCHAIN=trixie|host
#
# Kconfig asks the compiler what it can do (CC_VERSION_TEXT, asm-goto
# outputs, ...), so the merge runs with the compiler that will build the
# kernel: inside the build root (kernel-patch/scripts/buildroot.sh) unless TOOLCHAIN=host.
#
# Base: `make ARCH=x86_64 tinyconfig`, then kernel/configs/kvm_guest.config,
# then kernel-patch/configs/opbench.config (and debug.config for the debug
# kernel configuration), merged with scripts/kconfig/merge_config.sh and settled with
# olddefconfig. Fails, naming the symbol, if any requested line did not land.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

src=$1
out=$2
frags=$(fragments)
tmp=$(mktemp -d "${out}.XXXX")
trap 'rm -rf "$tmp"' EXIT

in_buildroot make -s -C "$src" O="$tmp" ARCH=x86_64 tinyconfig >"$tmp/log" 2>&1 ||
	{ tail "$tmp/log" >&2; die "make tinyconfig failed"; }
# shellcheck disable=SC2086
(cd "$tmp" && ARCH=x86_64 in_buildroot "$src/scripts/kconfig/merge_config.sh" -m -O "$tmp" \
	"$tmp/.config" "$src/kernel/configs/kvm_guest.config" $frags) >>"$tmp/log" 2>&1 ||
	{ tail "$tmp/log" >&2; die "merge_config.sh failed"; }
in_buildroot make -s -C "$src" O="$tmp" ARCH=x86_64 olddefconfig >>"$tmp/log" 2>&1 ||
	{ tail "$tmp/log" >&2; die "make olddefconfig failed"; }
# shellcheck disable=SC2086
"$TOPDIR/kernel-patch/scripts/check-config.sh" "$tmp/.config" $frags
mv "$tmp/.config" "$out"
