# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# common.sh - shared settings for rseq-opbench's shell scripts (sourced).

CACHE_DIR=${CACHE_DIR:-/var/cache/rseq-opbench}
KVER=${KVER:-7.2}
# Where the kernel source comes from (kernel-patch/scripts/kernel-source.sh):
# Debian's linux-source-$KVER package (SOURCE unset, or debian), or a Linux
# git tree (SOURCE=<its top>, BASE=<commit>), whose source is keyed "git"
# in the manifest where Debian's is keyed by KVER.
SOURCE=${SOURCE:-}
[ -z "$SOURCE" ] || [ "$SOURCE" = debian ] || KVER=git
# The kernel configuration profile: default (for measurements) or debug
# (KASAN, lockdep, lockup detectors: correctness runs). Named KCONFIG, not
# PROFILE, so that it cannot be mistaken for a benchmark plan (PLAN).
if [ -n "${PROFILE:-}" ] && [ -z "${KCONFIG:-}" ]; then
	echo "$(basename "$0" .sh): error: PROFILE is now KCONFIG (default|debug); the benchmark profiles are PLAN (quick|default|walker)" >&2
	exit 2
fi
KCONFIG=${KCONFIG:-default}
# The compiler kernels and guest binaries are built with: trixie (gcc 14,
# in the project's build root, kernel-patch/scripts/buildroot.sh) or host (this machine's
# own gcc, for old-against-new comparisons only).
TOOLCHAIN=${TOOLCHAIN:-trixie}
TOPDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# What the build steps made (kernel source, kernels, image),
# one KEY=VALUE per line; every later stage reads it and resolves nothing
# itself (manifest_get below).
MANIFEST=${MANIFEST:-$CACHE_DIR/manifest}
# Debian's interpreter, which sees Debian's packages (make passes its
# PYTHON); the python3 first on PATH may be another one.
PYTHON=${PYTHON:-/usr/bin/python3}
export CACHE_DIR KVER KCONFIG TOOLCHAIN TOPDIR MANIFEST PYTHON SOURCE

# The QEMU accelerator when ACCEL is not set, decided here once (make help
# says the same). It sets the unit of every figure: measurements
# (benchmarks, tracing) run under icount, where a figure counts guest
# instructions exactly and is never time; checks (stress, selftests,
# vm-check, boot-time) under auto, KVM where it boots an ordinary kernel
# and TCG elsewhere. guest-run and opbench-vm have no default of their own.
accel_for() {
	case $1 in
	measure) echo "${ACCEL:-icount}" ;;
	check) echo "${ACCEL:-auto}" ;;
	*) echo "accel_for: '$1': want measure or check" >&2; return 1 ;;
	esac
}

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

# guest_programs OUT PROGRAM...: programs that run in the guest (opbench,
# tcmodel, prime-signals, rseq_op_stress), built the one way
# microbench/Makefile builds them, in the build root against the guest's
# glibc, into OUT.
guest_programs() {
	local out p targets=()
	out=$(realpath -m "$1")	# make -C changes directory
	shift
	for p in "$@"; do targets+=("$out/$p"); done
	mkdir -p "$out"
	# STATIC=1: linked statically, to run on a host whatever its glibc.
	in_buildroot --bind "$out" make -s -C "$TOPDIR/microbench" O="$out" \
		${STATIC:+USERCFLAGS=-static} "${targets[@]}" >/dev/null ||
		die "cannot build the guest programs $* (microbench/Makefile) in the build root"
}

# bpf_programs OUT: the BPF design's loader rseq-bpf-ops (with its program
# built in; microbench/bpf/), built in the cross build root (clang, bpftool,
# libbpf-dev) against the guest's libbpf, into OUT.
bpf_programs() {
	local out
	out=$(realpath -m "$1")
	mkdir -p "$out"
	BUILDROOT=cross in_buildroot --bind "$out" make -s -C "$TOPDIR/microbench/bpf" \
		O="$out" >/dev/null ||
		die "cannot build the BPF design's loader (microbench/bpf/Makefile) in the cross build root"
}

# build_ticker LABEL LOG T0: while this script runs, every 30 s, the
# compiles LOG has seen since T0 (date +%s), as "LABEL still building";
# sets ticker and an EXIT trap that ends it. The ticker holds no lock of
# the caller's (fd 8 closed).
build_ticker() {
	local label=$1 buildlog=$2 t0=$3
	(
		while sleep 30 && kill -0 $$ 2>/dev/null; do
			log "$label still building: $(grep -c '^  CC' "$buildlog" 2>/dev/null || true) compiles, $(fmt_secs $(( $(date +%s) - t0 )))"
		done
	) 8>&- >/dev/null &
	ticker=$!
	trap 'kill $ticker 2>/dev/null || true' EXIT
}

# Where a toolchain's kernels and build trees live, below <source version>/.
toolchain_dir() {
	case "$TOOLCHAIN" in
	trixie|host) echo "$TOOLCHAIN/$KCONFIG" ;;
	*) die "TOOLCHAIN='$TOOLCHAIN' is unknown; use TOOLCHAIN=trixie (the default) or TOOLCHAIN=host" ;;
	esac
}

# Where one source version's build trees and installed kernels live, for the
# current toolchain and kernel configuration.
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

# flavour_get NAME KEY: KEY of the flavour's declaration,
# kernel-patch/flavours/NAME.flavour (see the README there), or
# $FLAVOURS_DIR/NAME.flavour where the environment names another
# directory of declarations; empty when the flavour has no file or the
# file does not set KEY. NAME may carry @TOOLCHAIN.
FLAVOUR_KEYS="SERIES FIXED EXTRA SEMANTICS VIA SELFTESTS PRELOAD DESIGN LABEL COLOUR N0_EXPLAINED FIT_FROM"
flavour_get() {
	local f=${FLAVOURS_DIR:-$TOPDIR/kernel-patch/flavours}/${1%@*}.flavour
	[ -f "$f" ] || return 0
	(
		# shellcheck disable=SC2086 # the list of keys
		unset $FLAVOUR_KEYS
		# shellcheck source=/dev/null
		. "$f"
		echo "${!2:-}"
	)
}

# target_load NAME: the guest architecture NAME's declaration,
# vm-images/targets/NAME.target (see the README there), as TARGET_<KEY>
# variables, every key of TARGET_KEYS set; dies naming the declared
# targets when NAME has none.
TARGET_KEYS="DESCRIPTION KARCH CROSS CONFIG IMAGE QEMU QEMU_PACKAGE CROSS_PACKAGES CONSOLE ICOUNT"
TARGETS_DIR=$TOPDIR/vm-images/targets
target_names() {
	local f names=()
	for f in "$TARGETS_DIR"/*.target; do
		[ -f "$f" ] && names+=("$(basename "$f" .target)")
	done
	echo "${names[*]}"
}
target_load() {
	local f=$TARGETS_DIR/$1.target k v
	[[ "$1" =~ ^[A-Za-z0-9_-]+$ ]] && [ -f "$f" ] ||
		die "GUEST_ARCH='$1' has no guest here; use one of: $(target_names) (declared in vm-images/targets/; i386 compat runs on the x86_64 kernels: make compat-run)"
	for k in $TARGET_KEYS; do
		# shellcheck disable=SC2086,SC1090 # the list of keys; the declaration
		v=$(unset $TARGET_KEYS; . "$f"; echo "${!k:-}")
		[ -n "$v" ] || die "$f sets no $k (see vm-images/targets/README)"
		printf -v "TARGET_$k" '%s' "$v"
	done
}

# flavour_series NAME: the series a flavour is built from when none is
# named, the same for every target: SERIES_<name> (make sets SERIES_rfc
# from RFC_SERIES, SERIES_v2 from V2_SERIES, SERIES_ops_v3 from V3_SERIES,
# SERIES_resident from RESIDENT_SERIES and SERIES_bpf from BPF_SERIES when
# they are given), unless the declaration says FIXED=1, and else its
# declaration's SERIES; empty for a flavour with neither (baseline).
flavour_series() {
	local var=SERIES_${1//-/_} s
	if [ "$(flavour_get "$1" FIXED)" != 1 ] && [ -n "${!var:-}" ]; then
		echo "${!var}"
		return
	fi
	s=$(flavour_get "$1" SERIES)
	if [ "$s" = @source ]; then
		# The commits of a git SOURCE after its BASE, as kernel-source.sh
		# exported them (none for Debian's package).
		manifest_source source_series 2>/dev/null || true
		return
	fi
	[ -z "$s" ] || echo "$TOPDIR/$s"
}

# flavour_series_hash NAME: the hash kernel-build.sh gives the series
# NAME is built from when no SERIES is named on its command line (its
# declaration's, or SERIES_<name>, with EXTRA after it): "none" for the
# pristine tree; nothing, and status 1, when it cannot be told (a flavour
# with no declared series, a series that does not exist).
flavour_series_hash() {
	local s x patches=() extra=()
	s=$(flavour_series "$1")
	if [ -z "$s" ]; then
		[ "$(flavour_get "$1" FIXED)" = 1 ] || return 1
		echo none
		return 0
	fi
	[ -e "$s" ] || return 1
	mapfile -t patches < <(patch_list "$(realpath "$s")")
	x=$(flavour_get "$1" EXTRA)
	[ -z "$x" ] || mapfile -t extra < <(patch_list "$TOPDIR/$x")
	[ ${#patches[@]} -gt 0 ] || return 1
	hash_files "${patches[@]}" ${extra[@]+"${extra[@]}"}
}

# op_semantics FLAVOUR: how a flavour treats a registered node: "resident"
# (read once at registration, later writes ignored) or "list" (re-read at
# every walk), as its declaration says; a flavour without one is taken
# as ops'.
op_semantics() {
	local s
	s=$(flavour_get "$1" SEMANTICS)
	echo "${s:-resident}"
}

# Config fragments of the current kernel configuration, in merge order.
fragments() {
	echo "$TOPDIR/kernel-patch/configs/opbench.config"
	# The distribution compiler: asm-goto with outputs must be there. A
	# build that fell back to an older gcc fails here by name.
	[ "$TOOLCHAIN" = host ] || echo "$TOPDIR/kernel-patch/configs/toolchain.config"
	case $KCONFIG in
	default) ;;
	debug | latency) echo "$TOPDIR/kernel-patch/configs/$KCONFIG.config" ;;
	*) die "KCONFIG='$KCONFIG' is unknown; use KCONFIG=default, debug (correctness) or latency (the latency tracers)" ;;
	esac
}

# patch_list SERIES: a series (an mbox, a directory with a `series` order
# file, or a directory of *.patch in name order) as its patch files, in order.
patch_list() {
	local s=$1
	if [ -f "$s" ]; then
		echo "$s"
	elif [ -f "$s/series" ]; then
		sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$s/series" |
			while read -r p; do echo "$s/$p"; done
	else
		ls "$s"/*.patch 2>/dev/null | sort
	fi
}

# base_tag SRCVER: the tag of the pristine tree of Debian's source version
# SRCVER in the cached source (kernel-source.sh makes it), DEP-14's way:
# git refuses ~ and : in a ref (backports: 7.3.4-1~bpo13+1 is tagged
# debian-7.3.4-1_bpo13+1).
base_tag() {
	# A git SOURCE's base commit (kernel-source.sh): git-<commit>.
	case $1 in git-*)
		echo "base-$1"
		return
		;;
	esac
	local v=${1//\~/_}
	v=${v//:/%}
	while [[ $v == *..* ]]; do
		v=${v//../.#.}
	done
	case $v in
	*. | *.lock) v=$v# ;;
	esac
	echo "debian-$v"
}

# am_series SRC SRCVER WORKTREE PATCH...: the patches applied with git am
# to the base of the cached source SRC (base_tag SRCVER), in WORKTREE
# (made once, then reset to the base each time). Dies, naming git am, if
# they do not apply.
am_series() {
	local src=$1 srcver=$2 wt=$3
	shift 3
	if [ ! -e "$wt/.git" ]; then
		git -C "$src" worktree prune
		git -C "$src" worktree add -q --detach "$wt" "$(base_tag "$srcver")"
	fi
	git -C "$wt" am --abort >/dev/null 2>&1 || true
	git -C "$wt" checkout -q --detach -f "$(base_tag "$srcver")"
	git -C "$wt" -c user.name=rseq-opbench -c user.email=rseq-opbench@localhost \
		am -q "$@" || die "series does not apply with git am to linux-source $srcver"
}

# manifest_set KEY VALUE [KEY VALUE]...: record what a build step made, in
# one rewrite under a lock, so that two makes sharing the cache do not lose
# each other's lines.
manifest_set() {
	local keys=() lines=()
	while [ $# -ge 2 ]; do
		keys+=("$1")
		lines+=("$1=$2")
		shift 2
	done
	[ $# -eq 0 ] || die "manifest_set: '$1' has no value"
	mkdir -p "$(dirname "$MANIFEST")"
	(
		flock 9
		{
			[ ! -f "$MANIFEST" ] ||
				awk -F= -v ks="${keys[*]}" 'BEGIN { n = split(ks, k, " ");
					for (i = 1; i <= n; i++) drop[k[i]] = 1 } !($1 in drop)' "$MANIFEST"
			printf '%s\n' "${lines[@]}"
		} | sort > "$MANIFEST.new.$$"
		mv "$MANIFEST.new.$$" "$MANIFEST"
	) 9>>"$MANIFEST.lock"
}

# manifest_get KEY: print its value; status 1 when the manifest lacks it.
manifest_get() {
	[ -r "$MANIFEST" ] || return 1
	awk -v k="$1" 'index($0, k "=") == 1 { print substr($0, length(k) + 2); f = 1 }
		END { exit !f }' "$MANIFEST"
}

# manifest_source source_version|source_dir: the kernel source of series
# KVER in the manifest (kernel-source.sh records each series' own), or, in
# a manifest from before it did (no such key for any series), the one it
# has. A make with KVER=7.3 beside one of 7.2 then never finds the other's
# source, and one for a series never fetched finds none.
manifest_source() {
	manifest_get "$1/$KVER" && return
	! grep -q "^$1/" "$MANIFEST" 2>/dev/null && manifest_get "$1"
}

# flavour_key KIND FLAVOUR[@TOOLCHAIN]: the manifest key of a flavour's
# built kernel (KIND kernel) or of the source tree it was built from (tree),
# for the current kernel configuration and the source version the build
# steps used.
flavour_key() {
	local srcver
	split_flavour "$2"
	srcver=$(manifest_source source_version) ||
		die "no kernel source in the manifest ($MANIFEST): build first, e.g. make kernels"
	echo "$1/$srcver/$FLAVOUR_TOOLCHAIN/$KCONFIG/$FLAVOUR_NAME"
}

# kernel_dir / kernel_tree FLAVOUR[@TOOLCHAIN]: a built kernel's directory,
# or its source tree, from the manifest. Dies naming the make command that
# builds it; never fetches or unpacks anything.
kernel_dir() { _flavour_path kernel "$1" bzImage; }
kernel_tree() { _flavour_path tree "$1" Makefile; }
_flavour_path() {
	local key dir have want
	# set -e is off inside $(...): stop here, not with a second message.
	key=$(flavour_key "$1" "$2") || exit 1
	split_flavour "$2"
	dir=$(manifest_get "$key") && [ -f "$dir/$3" ] ||
		die "flavour '$FLAVOUR_NAME' ($KCONFIG kernel configuration, $FLAVOUR_TOOLCHAIN toolchain) is not built: make kernels FLAVOURS=$2 KCONFIG=$KCONFIG (manifest: $MANIFEST)"
	# Build trees and kernels are keyed by source, toolchain, configuration
	# and flavour, not by series: another checkout sharing CACHE_DIR with
	# another series rebuilds them. What it left is refused, not booted:
	# a kernel built from its declared series must be built from this
	# checkout's (one built from a SERIES named to make kernel is the
	# caller's to know).
	if [ "$1" = kernel ]; then
		[ "$(sed -n 's/^series_named=//p' "$dir/provenance" 2>/dev/null)" = 1 ] ||
			have=$(sed -n 's/^series_hash=//p' "$dir/provenance" 2>/dev/null)
	elif [ "$(cat "$dir/_build/.series-named" 2>/dev/null)" != 1 ]; then
		have=$(cat "$dir/_build/.series-hash" 2>/dev/null)
	fi
	if [ -n "${have:-}" ] && want=$(flavour_series_hash "$FLAVOUR_NAME") &&
		[ "$have" != "$want" ]; then
		die "flavour '$FLAVOUR_NAME' in $dir was built from series $have, not from this checkout's $(flavour_series "$FLAVOUR_NAME" | sed "s|^$TOPDIR/||") ($want): another checkout that shares CACHE_DIR=$CACHE_DIR rebuilt it. Run make kernels FLAVOURS=$2 KCONFIG=$KCONFIG here, or give each checkout a CACHE_DIR of its own"
	fi
	echo "$dir"
}

# new_run_dir ROOT LABEL: make ROOT/<UTC date>-LABEL[-n], never an existing
# one, and print it.
new_run_dir() {
	local base d n=1
	base=$1/$(date -u +%Y%m%dT%H%M%SZ)-$2
	d=$base
	mkdir -p "$1"
	until mkdir "$d" 2>/dev/null; do
		n=$((n + 1))
		d=$base-$n
		[ $n -lt 100 ] || die "cannot make a new directory $base-*"
	done
	echo "$d"
}

# load_plan NAME: a benchmark plan, microbench/plans/NAME.plan, as
# microbench/plan.py (its only reader) resolves it, into FLAVOURS, SWEEP,
# LOOPS, PREEMPT_LOOPS, SAMPLES, WARMUP, BENCHES, TYPES, BOOTS, PERF_BENCH
# and LATENCY (exported; LATENCY: the flavours whose irqsoff/preemptoff
# stretches tracing/latency.sh measures, unset or empty for none). A
# variable already set in the environment wins over the plan's line.
PLAN_VARS="FLAVOURS SWEEP LOOPS PREEMPT_LOOPS SAMPLES WARMUP BENCHES TYPES BOOTS PERF_BENCH LATENCY"
load_plan() {
	local vars err
	err=$(mktemp)
	if ! vars=$("$PYTHON" "$TOPDIR/microbench/plan.py" sh "$1" 2>"$err"); then
		vars=$(cat "$err")
		rm -f "$err"
		die "$vars"
	fi
	rm -f "$err"
	eval "$vars"
	# shellcheck disable=SC2086,SC2163 # export each name in the list
	export $PLAN_VARS
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
