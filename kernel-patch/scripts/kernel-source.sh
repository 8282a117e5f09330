#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel-source.sh - fetch Debian's linux-source-$KVER and unpack it into the cache.
#
# Usage: kernel-patch/scripts/kernel-source.sh            (prints the source directory)
# Env:   KVER (default 7.2), CACHE_DIR (default /var/cache/rseq-opbench)
#
# The package comes from Debian's sid or trixie-backports suites through a
# project-owned apt configuration kept in the cache: nothing installed on the
# host changes. The mirror is the one this machine's own apt configuration
# names. The tarball is unpacked once per package version under
# $CACHE_DIR/src/linux-source-<version>/ and committed into a git repository
# there, so that flavours are worktrees and series apply with `git am`.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

SUITES=${KSRC_SUITES:-"sid trixie-backports"}
APTDIR=$CACHE_DIR/apt

case "$KVER" in
	[0-9]*.[0-9]*) ;;
	*) die "KVER='$KVER' is not a kernel series like 7.2; use e.g. KVER=7.2" ;;
esac

apt_opts() {
	echo -o Dir::Etc::SourceList="$APTDIR/sources.list" \
		-o Dir::Etc::SourceParts=/nonexistent \
		-o Dir::State::Lists="$APTDIR/lists" \
		-o Dir::Cache="$APTDIR/cache" \
		-o Dir::State::Status="$APTDIR/status" \
		-o APT::Get::List-Cleanup=0 \
		-o Debug::NoLocking=1 -o APT::Sandbox::User=root
}

apt_refresh() {
	local m s
	m=$(mirror)
	mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial"
	: > "$APTDIR/status"
	: > "$APTDIR/sources.list.new"
	for s in $SUITES; do
		echo "deb [arch=amd64] $m $s main" >> "$APTDIR/sources.list.new"
	done
	mv "$APTDIR/sources.list.new" "$APTDIR/sources.list"
	local stamp=$APTDIR/lists/.stamp
	if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +720)" ]; then
		log "refreshing package lists for: $SUITES (from $m)"
		# shellcheck disable=SC2046
		apt-get $(apt_opts) update -qq >"$APTDIR/update.log" 2>&1 ||
			{ tail "$APTDIR/update.log" >&2; die "apt-get update failed; log: $APTDIR/update.log"; }
		touch "$stamp"
	fi
}

# Newest linux-source-$KVER version offered by any of the suites.
newest_version() {
	# shellcheck disable=SC2046
	local v best=""
	# Debian's own ordering ("~" sorts first), not sort -V's.
	for v in $(apt-cache $(apt_opts) madison "linux-source-$KVER" 2>/dev/null |
		awk -F'|' '{ gsub(/ /, "", $2); print $2 }'); do
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then
			best=$v
		fi
	done
	echo "$best"
}

apt_refresh
# The answer only changes when the lists do: remember it beside them.
memo=$APTDIR/lists/.newest-$KVER
if [ -s "$memo" ] && [ "$memo" -nt "$APTDIR/lists/.stamp" ]; then
	ver=$(cat "$memo")
else
	ver=$(newest_version)
	[ -z "$ver" ] || echo "$ver" > "$memo"
fi
[ -n "$ver" ] || die "no linux-source-$KVER in Debian suites ($SUITES); the suites may have moved on: pick another series with KVER= (e.g. KVER=7.3) or set KSRC_SUITES="

dst=$CACHE_DIR/src/linux-source-$ver
# Later stages take the source from the manifest, never from here: the
# series' own (manifest_source), and the last one fetched, for the callers
# that do not say KVER.
record() {
	manifest_set source_version "$ver" source_dir "$dst" \
		"source_version/$KVER" "$ver" "source_dir/$KVER" "$dst"
	echo "$dst"
}
if [ -e "$dst/.git/rseq-opbench-ready" ]; then
	record
	exit 0
fi

start=$(date +%s)
deb=$(ls "$APTDIR"/cache/archives/linux-source-"${KVER}"_"${ver//:/%3a}"_*.deb 2>/dev/null | head -1 || true)
if [ -z "$deb" ]; then
	log "downloading linux-source-$KVER $ver"
	(cd "$APTDIR/cache/archives" &&
		# shellcheck disable=SC2046
		apt-get $(apt_opts) download -qq "linux-source-$KVER=$ver") ||
		die "apt-get download linux-source-$KVER=$ver failed"
	deb=$(ls "$APTDIR"/cache/archives/linux-source-"${KVER}"_*"${ver##*:}"*.deb | head -1)
fi

log "unpacking $(basename "$deb") into $dst"
rm -rf "$dst.tmp"
mkdir -p "$dst.tmp/deb"
dpkg-deb -x "$deb" "$dst.tmp/deb"
tarball=$(ls "$dst.tmp"/deb/usr/src/linux-source-"$KVER".tar.* | head -1)
[ -n "$tarball" ] || die "no tarball in $deb"
mkdir -p "$dst.tmp/tree"
tar -xf "$tarball" -C "$dst.tmp/tree" --strip-components=1
rm -rf "$dst.tmp/deb"

log "committing the pristine tree to git (once)"
git -C "$dst.tmp/tree" init -q -b debian
git -C "$dst.tmp/tree" -c user.name=rseq-opbench -c user.email=rseq-opbench@localhost \
	-c core.autocrlf=false add -A -f
git -C "$dst.tmp/tree" -c user.name=rseq-opbench -c user.email=rseq-opbench@localhost \
	commit -q -m "Debian linux-source-$KVER $ver"
git -C "$dst.tmp/tree" tag -f "$(base_tag "$ver")" >/dev/null
echo "$ver" > "$dst.tmp/tree/.git/rseq-opbench-version"
rm -rf "$dst"
mv "$dst.tmp/tree" "$dst"
rmdir "$dst.tmp"
touch "$dst/.git/rseq-opbench-ready"
log "source ready in $(( $(date +%s) - start ))s: $dst"
record
