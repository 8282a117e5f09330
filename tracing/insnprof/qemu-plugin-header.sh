#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# qemu-plugin-header.sh - qemu-plugin.h of the installed QEMU, from Debian's
# own qemu source package, cached; prints the directory holding it.
#
# Usage: tracing/insnprof/qemu-plugin-header.sh (make plugin-header)
# A build step, like the kernels and the image: it records the directory in
# the run manifest (qemu_plugin_h), and later stages (trace.sh, the tests)
# read it from there and never fetch. Debian ships no qemu-plugin.h in a
# binary package. This fetches the source package of exactly the
# installed qemu-system-x86 (its source version) through a
# project-owned apt configuration in the cache (deb-src of this release, its
# updates and its security suite; nothing on the host changes), takes
# include/qemu/qemu-plugin.h out of the upstream tarball, checks that none
# of Debian's patches touches it, and keeps it under
# $CACHE_DIR/qemu-plugin/<version>/. Nothing is vendored into the project.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

ver=$(dpkg-query -W -f='${source:Version}' qemu-system-x86 2>/dev/null) ||
	die "qemu-system-x86 is not installed: make deps"
dst=$CACHE_DIR/qemu-plugin/${ver//:/_}
if [ -f "$dst/qemu-plugin.h" ]; then
	manifest_set qemu_plugin_h "$dst" qemu_plugin_version "$ver"
	echo "$dst"
	exit 0
fi
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || die "cannot tell this Debian release's codename from /etc/os-release"
m=$(mirror)
apt=$CACHE_DIR/apt-qemu-src
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
: > "$apt/status"
{
	echo "deb-src $m $codename main"
	echo "deb-src $m $codename-updates main"
	echo "deb-src ${m%/debian}/debian-security $codename-security main"
} > "$apt/sources.list"
opts=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
	-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache"
	-o Dir::State::Status="$apt/status" -o Debug::NoLocking=1
	-o APT::Sandbox::User=root)
log "fetching the qemu $ver source package for qemu-plugin.h (about 24 MB, once)"
apt-get "${opts[@]}" update -qq >"$apt/update.log" 2>&1 ||
	{ tail "$apt/update.log" >&2; die "apt-get update of the source lists failed; log: $apt/update.log"; }
tmp=$(mktemp -d "$CACHE_DIR/.qemu-src-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get "${opts[@]}" source --download-only -qq "qemu=$ver") >"$tmp/source.log" 2>&1 ||
	{ tail "$tmp/source.log" >&2; die "cannot fetch the source of qemu $ver from $m"; }
origs=("$tmp"/qemu_*.orig.tar.*)
debs=("$tmp"/qemu_*.debian.tar.*)
orig=${origs[0]} deb=${debs[0]}
[ -f "$orig" ] && [ -f "$deb" ] || die "the qemu $ver source package has no orig or debian tarball"
if tar -tf "$deb" | grep -q 'qemu-plugin'; then
	die "Debian's patches of qemu $ver touch the plugin header; refusing the upstream one"
fi
tar -xf "$orig" -C "$tmp" --wildcards '*/include/qemu/qemu-plugin.h'
h=$(find "$tmp" -path '*/include/qemu/qemu-plugin.h' | head -1)
grep -q '^#define QEMU_PLUGIN_VERSION' "$h" || die "$h defines no QEMU_PLUGIN_VERSION"
mkdir -p "$dst.new"
cp "$h" "$dst.new/qemu-plugin.h"
rm -rf "$dst"
mv "$dst.new" "$dst"
manifest_set qemu_plugin_h "$dst" qemu_plugin_version "$ver"
log "qemu-plugin.h of qemu $ver (API $(sed -n 's/^#define QEMU_PLUGIN_VERSION //p' "$dst/qemu-plugin.h")): $dst"
echo "$dst"
