#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# build-rootfs.sh - build the guest root filesystem once and cache it.
#
# Usage: vm-images/build-rootfs.sh        (prints the image path)
# Env:   CACHE_DIR, GUEST_SUITE (default trixie)
#
# debootstrap --variant=minbase of Debian $GUEST_SUITE with the packages in
# vm-images/packages.txt, our init (opbench-init.c, built static), then
# `mkfs.ext4 -d` (no loop mounts).
# Cached under $CACHE_DIR/images/<recipe hash>/rootfs.ext4, where the hash
# covers this script, the package list, the init's source and the suite.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

suite=${GUEST_SUITE:-trixie}
here=$TOPDIR/vm-images
key=$( (cat "$here/build-rootfs.sh" "$here/packages.txt" "$here/opbench-init.c"; echo "$suite") |
	sha256sum | cut -c1-16)
dir=$CACHE_DIR/images/$key
img=$dir/rootfs.ext4
# Later stages take the image from the run manifest, never from here.
ready() {
	manifest_set image "$img"
	echo "$img"
	exit 0
}
[ ! -f "$img" ] || ready
mkdir -p "$CACHE_DIR/images"
# One build of an image at a time: a second make waits here, and says so.
exec 8>"$CACHE_DIR/images/.lock-$key"
if ! flock -n 8; then
	log "another make is building this image ($dir); waiting for it"
	flock 8
	[ ! -f "$img" ] || ready
fi
[ "$(id -u)" -eq 0 ] || die "debootstrap needs root; run as root (sudo make ...)"
command -v debootstrap >/dev/null || die "debootstrap missing; run scripts/deps.sh"

t0=$(date +%s)
pkgs=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$here/packages.txt" | paste -sd,)
tmp=$dir.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
log "debootstrap $suite ($pkgs) into $tmp/root (log: $tmp/debootstrap.log)"
# The .debs are shared with the build root's debootstrap (kernel-patch/scripts/buildroot.sh).
mkdir -p "$CACHE_DIR/debs/$suite"
if ! flock "$CACHE_DIR/debs/$suite/.lock" debootstrap --variant=minbase --include="$pkgs" \
	--cache-dir="$CACHE_DIR/debs/$suite" \
	--keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
	"$suite" "$tmp/root" "$(mirror)" >"$tmp/debootstrap.log" 2>&1; then
	tail -20 "$tmp/debootstrap.log" >&2
	die "debootstrap failed; full log: $tmp/debootstrap.log"
fi
root=$tmp/root
gcc -static -O2 -Wall -Wextra -o "$root/sbin/opbench-init" "$here/opbench-init.c" ||
	die "cannot build the guest init (vm-images/opbench-init.c)"
echo rseq-opbench > "$root/etc/hostname"
# A smaller image: no package caches or lists (the guest never runs apt).
rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*
{
	echo "suite=$suite"
	echo "recipe=$key"
	echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "glibc=$(chroot "$root" /usr/bin/ldd --version | head -1 | awk '{print $NF}')"
	echo "perf=$(chroot "$root" dpkg-query -W -f='${Version}' linux-perf)"
	echo "bpftrace=$(chroot "$root" dpkg-query -W -f='${Version}' bpftrace)"
} > "$tmp/provenance"
cp "$tmp/provenance" "$root/etc/opbench-image"
size=$(( $(du -sm "$root" | cut -f1) * 13 / 10 + 256 ))
log "mkfs.ext4 -d ($size MiB)"
mkfs.ext4 -q -F -L opbench-root -d "$root" "$tmp/rootfs.ext4" "${size}M" ||
	die "mkfs.ext4 -d failed"
rm -rf "$root"
rm -rf "$dir"
mv "$tmp" "$dir"
log "image ready in $(fmt_secs $(( $(date +%s) - t0 ))): $img"
ready
