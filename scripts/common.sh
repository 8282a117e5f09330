# SPDX-License-Identifier: GPL-2.0
# common.sh - shared settings for rseq-opbench's shell scripts (sourced).

CACHE_DIR=${CACHE_DIR:-/var/cache/rseq-opbench}
KVER=${KVER:-7.2}
PROFILE=${PROFILE:-default}
# The compiler kernels and guest binaries are built with: trixie (gcc 14,
# in the project's build root, kernel-patch/scripts/buildroot.sh) or host (this machine's
# own gcc, for old-against-new comparisons only).
TOOLCHAIN=${TOOLCHAIN:-trixie}
TOPDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CACHE_DIR KVER PROFILE TOOLCHAIN TOPDIR

# Messages carry the script's name; errors say what to do about them.
_me=$(basename "$0" .sh)
log() { echo "$_me: $*" >&2; }
die() { echo "$_me: error: $*" >&2; exit 1; }

# Seconds as "1m05s".
fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# Content hash of files, in the order given.
hash_files() { cat "$@" | sha256sum | cut -c1-16; }

# Run a command with the toolchain's compiler (kernel-patch/scripts/buildroot.sh run).
in_buildroot() { "$TOPDIR/kernel-patch/scripts/buildroot.sh" run "$@"; }

# Where a toolchain's kernels and build trees live, below <source version>/.
toolchain_dir() {
	case "$TOOLCHAIN" in
	trixie|host) echo "$TOOLCHAIN/$PROFILE" ;;
	*) die "TOOLCHAIN='$TOOLCHAIN' is unknown; use TOOLCHAIN=trixie (the default) or TOOLCHAIN=host" ;;
	esac
}

# Where one source version's build trees and installed kernels live, for the
# current toolchain and profile.
build_base() { echo "$CACHE_DIR/build/$1/$(toolchain_dir)"; }
kernels_base() { echo "$CACHE_DIR/kernels/$1/$(toolchain_dir)"; }

# ccache settings every kernel build shares: one cache for all flavours and
# checkouts, compile lines without the directory, the compiler by content
# (a re-made build root with the same gcc still hits).
ccache_env() {
	export CCACHE_DIR=${CCACHE_DIR:-$CACHE_DIR/ccache} CCACHE_NOHASHDIR=1
	export CCACHE_SLOPPINESS=include_file_mtime,include_file_ctime,time_macros
	export CCACHE_COMPILERCHECK=content
}

# A flavour may name its toolchain: "ops@host" is ops built with the host's
# gcc, beside "ops" from the build root, for old-against-new comparisons.
# Sets FLAVOUR_NAME and FLAVOUR_TOOLCHAIN from "$1".
# shellcheck disable=SC2034 # FLAVOUR_* are read by the caller
split_flavour() {
	FLAVOUR_NAME=${1%@*}
	FLAVOUR_TOOLCHAIN=$TOOLCHAIN
	[ "$FLAVOUR_NAME" = "$1" ] || FLAVOUR_TOOLCHAIN=${1##*@}
	[[ "$FLAVOUR_NAME" =~ ^[A-Za-z0-9_-]+$ ]] ||
		die "flavour name '$FLAVOUR_NAME' may only hold letters, digits, - and _"
}

# Config fragments of the current profile, in merge order.
fragments() {
	echo "$TOPDIR/kernel-patch/configs/opbench.config"
	# The distribution compiler: asm-goto with outputs must be there. A
	# build that fell back to an older gcc fails here by name.
	[ "$TOOLCHAIN" = host ] || echo "$TOPDIR/kernel-patch/configs/toolchain.config"
	if [ "$PROFILE" = debug ]; then
		echo "$TOPDIR/kernel-patch/configs/debug.config"
	elif [ "$PROFILE" != default ]; then
		die "PROFILE='$PROFILE' is unknown; use PROFILE=default or PROFILE=debug"
	fi
}

# The Debian mirror this machine already uses (deb822 or one-line format).
mirror() {
	local m=""
	if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
		m=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' \
			/etc/apt/sources.list.d/*.sources |
			grep -E '/debian/?$' | head -1 || true)
	fi
	if [ -z "$m" ] && [ -r /etc/apt/sources.list ]; then
		m=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++)
			if ($i ~ /^(https?|file):/) { print $i; break } }' \
			/etc/apt/sources.list | grep -E '/debian/?$' | head -1 || true)
	fi
	[ -n "$m" ] || die "no Debian archive found in /etc/apt/sources.list{,.d}; add one"
	echo "${m%/}"
}
