#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel-source.sh - the kernel source every flavour is built from, in the
# cache: Debian's linux-source-$KVER, or a commit of a Linux git tree.
#
# Usage: kernel-patch/scripts/kernel-source.sh            (prints the source directory)
# Env:   KVER (default 7.2), CACHE_DIR (default /var/cache/rseq-opbench),
#        SOURCE (a Linux git tree instead of Debian's package), BASE (the
#        commit of SOURCE the baseline is built from; default the merge
#        base of HEAD with its upstream branch, or HEAD), ALLOW_DIRTY=1
#
# Debian's package comes from the sid or trixie-backports suites through a
# project-owned apt configuration kept in the cache: nothing installed on the
# host changes. The mirror is the one this machine's own apt configuration
# names. The tarball is unpacked once per package version under
# $CACHE_DIR/src/linux-source-<version>/ and committed into a git repository
# there, so that flavours are worktrees and series apply with `git am`.
#
# A git tree (SOURCE=<its top>): BASE's tree is fetched (one commit deep)
# into $CACHE_DIR/src/git-<BASE>/, tagged base-git-<BASE>, and the commits
# from BASE to HEAD exported with git format-patch into
# $CACHE_DIR/src/git-<BASE>.series/<HEAD>/, the series of the flavour
# "tree" (kernel-patch/flavours/tree.flavour); the baseline is BASE. The
# user's tree is read, never written (no worktree of it, no index refresh).
# Refused: a path that is not the top of a git tree, a tree that is not a
# kernel's, a BASE that is not an ancestor of HEAD, commits after BASE that
# format-patch cannot export (merges), uncommitted changes without
# ALLOW_DIRTY=1 (they are not built either way; with it their diff's hash
# is recorded).
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

# git_source: SOURCE's BASE into the cache, and its commits after BASE as a
# series; records both in the manifest and prints the source directory.
git_source() {
	local tree top head base up n merges dirty diffhash ver dst series desc
	tree=$(realpath -e "$SOURCE" 2>/dev/null) ||
		die "SOURCE='$SOURCE' does not exist: name the top of a Linux git tree (or unset SOURCE for Debian's linux-source-$KVER)"
	top=$(git -C "$tree" rev-parse --show-toplevel 2>/dev/null) ||
		die "SOURCE=$tree is not a git tree: name the top of a Linux git tree"
	[ "$top" = "$tree" ] ||
		die "SOURCE=$tree is inside the git tree $top, not its top: SOURCE=$top"
	grep -q '^VERSION = [0-9]' "$tree/Makefile" 2>/dev/null &&
		grep -q '^PATCHLEVEL = [0-9]' "$tree/Makefile" && [ -f "$tree/Kconfig" ] &&
		[ -f "$tree/kernel/rseq.c" ] ||
		die "SOURCE=$tree is not a Linux kernel tree (no top-level Makefile with VERSION and PATCHLEVEL, Kconfig and kernel/rseq.c): name the top of one"
	head=$(git -C "$tree" rev-parse --verify -q 'HEAD^{commit}') ||
		die "SOURCE=$tree has no commit checked out"
	if [ -n "${BASE:-}" ]; then
		base=$(git -C "$tree" rev-parse --verify -q "$BASE^{commit}") ||
			die "BASE=$BASE is not a commit of $tree"
	elif up=$(git -C "$tree" rev-parse --verify -q '@{upstream}' 2>/dev/null); then
		base=$(git -C "$tree" merge-base HEAD "$up")
	else
		base=$head
	fi
	git -C "$tree" merge-base --is-ancestor "$base" "$head" ||
		die "BASE=${BASE:-$base} ($base) is not an ancestor of $tree's HEAD ($head): name a commit HEAD is built on"
	n=$(git -C "$tree" rev-list --count "$base..$head")
	merges=$(git -C "$tree" rev-list --count --merges "$base..$head")
	[ "$merges" -eq 0 ] ||
		die "$merges merge(s) between BASE and HEAD in $tree: git format-patch leaves merges out, so the series would not be the tree; rebase the commits on BASE, or name a BASE after the last merge"
	dirty=$(git --no-optional-locks -C "$tree" status --porcelain --untracked-files=no | wc -l)
	diffhash=
	if [ "$dirty" -gt 0 ]; then
		[ "${ALLOW_DIRTY:-0}" = 1 ] ||
			die "SOURCE=$tree has uncommitted changes in $dirty file(s), which no flavour would build: commit or stash them, or ALLOW_DIRTY=1 to build its commits anyway (the changes' diff hash is recorded)"
		diffhash=$(git --no-optional-locks -C "$tree" diff HEAD | sha256sum | cut -c1-16)
		log "SOURCE=$tree: $dirty file(s) with uncommitted changes, not built (ALLOW_DIRTY=1; diff $diffhash)"
	fi
	ver=git-${base:0:12}
	dst=$CACHE_DIR/src/$ver
	if [ ! -e "$dst/.git/rseq-opbench-ready" ]; then
		log "fetching BASE ${base:0:12} of $tree into $dst (its tree only, one commit deep)"
		rm -rf "$dst.tmp"
		git init -q -b base "$dst.tmp"
		git -C "$dst.tmp" fetch -q --depth=1 "file://$tree" "$base" ||
			die "cannot fetch $base from $tree"
		git -C "$dst.tmp" checkout -q -B base FETCH_HEAD
		git -C "$dst.tmp" tag -f "$(base_tag "$ver")" >/dev/null
		echo "$ver" > "$dst.tmp/.git/rseq-opbench-version"
		rm -rf "$dst"
		mv "$dst.tmp" "$dst"
		touch "$dst/.git/rseq-opbench-ready"
	fi
	series=$CACHE_DIR/src/$ver.series/${head:0:12}
	if [ ! -e "$series/.done" ]; then
		rm -rf "$series"
		mkdir -p "$series"
		# The user's git configuration aside: *.patch files, no cover
		# letter, no sign-off added, a/ and b/ prefixes (git am's).
		[ "$n" -eq 0 ] || git -C "$tree" -c format.coverLetter=false -c format.signOff=false \
			-c diff.noprefix=false -c diff.mnemonicPrefix=false \
			format-patch -q --no-signature --suffix=.patch -o "$series" "$base..$head" ||
			die "git format-patch $base..$head in $tree failed"
		touch "$series/.done"
	fi
	desc=$(git -C "$tree" describe --tags --always --abbrev=12 "$head" 2>/dev/null || echo "${head:0:12}")
	cat > "$dst/.git/rseq-opbench-source" <<EOS
source_kind=git
source_tree=$tree
source_base=$base
source_head=$head
source_describe=$desc
source_commits=$n
source_dirty_diff=${diffhash:-none}
EOS
	# No commit after BASE: no series (the flavour tree is then refused).
	[ "$n" -gt 0 ] || series=
	manifest_set source_version "$ver" source_dir "$dst" \
		"source_version/$KVER" "$ver" "source_dir/$KVER" "$dst" \
		"source_series/$KVER" "$series"
	echo "$dst"
}

if [ -n "$SOURCE" ] && [ "$SOURCE" != debian ]; then
	git_source
	exit 0
fi

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
