#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# buildroot.sh - the Debian trixie build root every kernel and guest binary is
# built in (gcc 14: asm-goto outputs on, as Debian builds its own kernels).
#
# Usage: kernel-patch/scripts/buildroot.sh path             make it if needed, print its root
#        kernel-patch/scripts/buildroot.sh run [--bind DIR]... [--] CMD [ARG]...
#                                              run CMD inside it
#        kernel-patch/scripts/buildroot.sh describe          one line: compiler and root key
# Env:   CACHE_DIR, TOOLCHAIN (trixie, the default; host runs CMD directly on
#        this machine with its own gcc, for old-against-new comparisons only),
#        BUILDROOT (base, the default; cross: the base root plus Debian's
#        cross compilers, clang, sparse, bpftool, libbpf and the i386
#        multilib, for `make check-arches`, the off-x86 guests and the BPF
#        design's program and loader only)
#
# The root is `debootstrap --variant=minbase trixie` plus only what a kernel
# build needs (list below), cached under $CACHE_DIR/buildroot/<recipe hash>/
# where the hash covers the suite, the package list and the function that
# makes the root (not the rest of this script); a second run reuses it.
# Older roots are left alone: another checkout may be building in one.
# The host's packages are not touched. CMD runs under `unshare --mount` and
# `chroot`, at native speed, with $CACHE_DIR, the project tree and every
# --bind DIR mounted at the same paths as on the host, so that file names in
# compile lines, logs and ccache keys are the same inside and out (/tmp too).
# The mounts
# vanish with the namespace when CMD exits.
#
#   $ kernel-patch/scripts/buildroot.sh run -- gcc --version | head -1
#   gcc (Debian 14.2.0-19) 14.2.0
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

SUITE=trixie
# Guest binaries are built here against this suite's glibc: the guest must
# run the same suite (vm-images/build-rootfs.sh, GUEST_SUITE).
if [ -n "${GUEST_SUITE:-}" ] && [ "$GUEST_SUITE" != "$SUITE" ]; then
	die "GUEST_SUITE=$GUEST_SUITE, but guest binaries are built in a $SUITE root against its glibc; use GUEST_SUITE=$SUITE"
fi
# What a kernel build (bzImage, headers, BTF) and the guest binaries need.
PKGS=(gcc libc6-dev make bc flex bison libelf-dev libssl-dev dwarves pkgconf
	python3 ccache cpio kmod xz-utils zstd lz4 gawk)

make_root() {
	[ -e "$dir/ready" ] && return 0
	[ "$(id -u)" -eq 0 ] || die "making the build root needs root (debootstrap, chroot); run as root"
	command -v debootstrap >/dev/null || die "debootstrap missing; run scripts/deps.sh"
	mkdir -p "$CACHE_DIR/buildroot"
	exec 9>"$CACHE_DIR/buildroot/.lock"
	if ! flock -n 9; then
		log "another make is creating the build root; waiting for it"
		flock 9
	fi
	if [ -e "$dir/ready" ]; then
		exec 9>&-
		return 0
	fi
	local t0 tmp pkgs debs
	t0=$(date +%s)
	tmp=$dir.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	pkgs=$(IFS=,; echo "${PKGS[*]}")
	# Downloaded .debs are kept and shared with the guest image's debootstrap.
	debs=$CACHE_DIR/debs/$SUITE
	mkdir -p "$debs"
	log "making the $SUITE build root (debootstrap, about 2 min; log: $tmp/debootstrap.log)"
	(
		while sleep 20 && kill -0 $$ 2>/dev/null; do
			log "  still making the build root: $(du -sm "$tmp/root" 2>/dev/null | cut -f1) MB, $(fmt_secs $(( $(date +%s) - t0 )))"
		done
	) 9>&- >/dev/null &
	local ticker=$!
	local rc=0
	flock "$debs/.lock" debootstrap --variant=minbase --include="$pkgs" --cache-dir="$debs" \
		--keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
		"$SUITE" "$tmp/root" "$(mirror)" >"$tmp/debootstrap.log" 2>&1 || rc=$?
	kill $ticker 2>/dev/null || true
	wait $ticker 2>/dev/null || true
	if [ $rc -ne 0 ]; then
		tail -20 "$tmp/debootstrap.log" >&2
		die "debootstrap of the $SUITE build root failed; full log: $tmp/debootstrap.log"
	fi
	rm -rf "$tmp/root/var/lib/apt/lists/"* "$tmp/root/var/cache/apt/archives/"*.deb
	{
		echo "suite=$SUITE"
		echo "recipe=$key"
		echo "packages=$pkgs"
		echo "made_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "gcc=$(chroot "$tmp/root" gcc --version | head -1)"
		echo "pahole=$(chroot "$tmp/root" pahole --version)"
		echo "glibc=$(chroot "$tmp/root" /usr/bin/ldd --version | head -1 | awk '{print $NF}')"
	} > "$tmp/provenance"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	touch "$dir/ready"
	exec 9>&-
	log "build root ready in $(fmt_secs $(( $(date +%s) - t0 ))): $root"
}

# The recipe: the suite, the package list and make_root() itself.
key=$( (echo "$SUITE"; echo "${PKGS[*]}"; declare -f make_root) | sha256sum | cut -c1-16)
dir=$CACHE_DIR/buildroot/$SUITE-$key
root=$dir/root

# The cross root: a copy of the base root with these installed by apt, and
# sid's sparse (sid_sparse). It has its own key (the base key, this list,
# make_cross() and sid_sparse()), so that the kernels built in the base
# root keep theirs. The i686 compiler builds the 32-bit programs for i386
# compat (gcc-multilib conflicts with every cross gcc in Debian); the cross
# libc packages are for the static guest programs of the architectures
# that boot. clang, bpftool and libbpf-dev also build the BPF design's
# program and loader (microbench/bpf/).
CROSS_PKGS=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross
	gcc-riscv64-linux-gnu libc6-dev-riscv64-cross
	gcc-powerpc-linux-gnu libc6-dev-powerpc-cross
	gcc-powerpc64le-linux-gnu gcc-s390x-linux-gnu gcc-loongarch64-linux-gnu
	gcc-i686-linux-gnu libc6-dev-i386-cross clang lld llvm sparse
	bpftool libbpf-dev)
# A guest architecture's own (vm-images/targets/*.target, CROSS_PACKAGES)
# where this list lacks them: a new target is a declaration.
for t in "$TOPDIR"/vm-images/targets/*.target; do
	for p in $(unset CROSS_PACKAGES; . "$t"; echo "${CROSS_PACKAGES:-}"); do
		[[ " ${CROSS_PKGS[*]} " == *" $p "* ]] || CROSS_PKGS+=("$p")
	done
done

# sid_sparse ROOT: sparse from Debian sid, ahead of trixie's in PATH. The
# 7.2 tree's scripts/checker-valid.sh asks sparse for __typeof_unqual__,
# which trixie's 0.6.4 lacks, so kbuild refuses it and `C=1` checks
# nothing; sid's (0.6.5~rc1-2 when this was written) has it. Only its
# binary is taken (it needs nothing but glibc >= 2.38, which trixie has):
# installing the package would pull gcc-16 and sid's libraries into the
# root. It was built with gcc 16 and predefines __GNUC__ 16, which the
# kernel's headers then see; the pristine tree and every series are
# checked with the same binary, so their warnings compare. apt downloads
# it from its own list of sid alone, with its own cache, and checks the
# archive's signature; when sid's Release is past its Valid-Until (a
# frozen mirror, as on these machines), the update is retried without
# that check, and the log says so. When sid has no sparse, or its binary
# does not run, the root keeps trixie's (the sparse cell of `make
# check-arches` then says "no sparse", and the provenance names the
# sparse in PATH); any other failure (the network) stops, and the next
# run tries again.
sid_sparse() {
	local r=$1 d=/var/lib/rseq-opbench-sid rc=0
	rm -rf "${r:?}$d"
	mkdir -p "$r$d/work/lists/partial" "$r$d/work/cache/archives/partial" "$r$d/work/parts"
	echo "deb $(mirror) sid main" > "$r$d/work/sources.list"
	chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		DEBIAN_FRONTEND=noninteractive /bin/sh -c '
		set -e
		d=$1 w=$1/work
		set -- -q -o Dir::Etc::SourceList="$w/sources.list" \
			-o Dir::Etc::SourceParts="$w/parts" -o Dir::State::Lists="$w/lists" \
			-o Dir::Cache="$w/cache" -o Acquire::Languages=none \
			-o APT::Sandbox::User=root
		if ! apt-get "$@" update >"$w/update.log" 2>&1; then
			cat "$w/update.log"
			grep -q "is expired" "$w/update.log" || exit 1
			echo "sid: its Release file is past its Valid-Until (a frozen mirror); again without that check, the signature still checked"
			apt-get "$@" -o Acquire::Check-Valid-Until=false update
		fi
		apt-cache "$@" show sparse/sid >/dev/null || { echo "sid has no sparse"; exit 10; }
		cd "$w"
		apt-get "$@" download sparse/sid
		dpkg-deb -x sparse_*.deb "$d/sparse"
		"$d/sparse/usr/bin/sparse" --version || { echo "the sparse from sid does not run here"; exit 11; }
		ln -sf "$d/sparse/usr/bin/sparse" /usr/local/bin/sparse' _ "$d" >>"$r/../apt.log" 2>&1 || rc=$?
	case $rc in
	0)
		rm -rf "${r:?}$d/work"
		log "  sparse from sid: $(chroot "$r" /usr/local/bin/sparse --version 2>&1)"
		;;
	10 | 11)
		rm -rf "${r:?}$d" "$r/usr/local/bin/sparse"
		log "warning: $(tail -1 "$r/../apt.log"); the root keeps trixie's sparse, which the 7.2 tree refuses: make check-arches's sparse cell will say 'no sparse' (log: ${r%/root}/apt.log)"
		;;
	*)
		tail -20 "$r/../apt.log" >&2
		die "fetching sparse from Debian sid failed; full log: ${r%/root}/apt.log"
		;;
	esac
}

make_cross() {
	[ -e "$xdir/ready" ] && return 0
	exec 8>"$CACHE_DIR/buildroot/.lock-cross"
	if ! flock -n 8; then
		log "another make is creating the cross build root; waiting for it"
		flock 8
	fi
	if [ -e "$xdir/ready" ]; then
		exec 8>&-
		return 0
	fi
	local t0 tmp rc=0
	t0=$(date +%s)
	tmp=$xdir.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	log "making the cross build root (a copy of $SUITE-$key plus ${#CROSS_PKGS[@]} packages, about 1 min; log: $tmp/apt.log)"
	cp -a "$root" "$tmp/root"
	cp /etc/resolv.conf "$tmp/root/etc/resolv.conf"
	echo "deb $(mirror) $SUITE main" > "$tmp/root/etc/apt/sources.list"
	chroot "$tmp/root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		DEBIAN_FRONTEND=noninteractive /bin/sh -c \
		'apt-get update -q && apt-get install -y -q --no-install-recommends "$@"' \
		_ "${CROSS_PKGS[@]}" >"$tmp/apt.log" 2>&1 || rc=$?
	if [ $rc -ne 0 ]; then
		tail -20 "$tmp/apt.log" >&2
		die "installing the cross compilers in the build root failed; full log: $tmp/apt.log"
	fi
	sid_sparse "$tmp/root"
	rm -rf "$tmp/root/var/lib/apt/lists/"* "$tmp/root/var/cache/apt/archives/"*.deb \
		"$tmp/root/var/cache/apt/"*.bin
	{
		echo "suite=$SUITE"
		echo "recipe=$xkey"
		echo "base=$SUITE-$key"
		echo "packages=${CROSS_PKGS[*]}"
		echo "made_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
		chroot "$tmp/root" dpkg-query -W -f='${Package}=${Version}\n' "${CROSS_PKGS[@]}"
		echo "sparse_in_path=$(chroot "$tmp/root" /usr/bin/env PATH=/usr/local/bin:/usr/bin:/bin \
			sparse --version 2>&1 | head -1)"
	} > "$tmp/provenance"
	rm -rf "$xdir"
	mv "$tmp" "$xdir"
	touch "$xdir/ready"
	exec 8>&-
	log "cross build root ready in $(fmt_secs $(( $(date +%s) - t0 ))): $xdir/root"
}
xkey=$( (echo "$key"; echo "${CROSS_PKGS[*]}"; declare -f make_cross sid_sparse) | sha256sum | cut -c1-16)
xdir=$CACHE_DIR/buildroot/$SUITE-cross-$xkey

# ensure_root: the root BUILDROOT names, made if needed; sets root.
ensure_root() {
	make_root
	case ${BUILDROOT:-base} in
	base) ;;
	cross) make_cross; root=$xdir/root ;;
	*) die "BUILDROOT='$BUILDROOT' is unknown; use base (the default) or cross" ;;
	esac
}

# Run "$@" in the root. Mount points are made inside the root first (mkdir
# only); everything else about it stays as debootstrap left it.
run_in_root() {
	local binds=("$CACHE_DIR" "$TOPDIR")
	while [ $# -gt 0 ]; do
		case $1 in
		--bind) binds+=("$(cd "$2" 2>/dev/null && pwd || echo "$2")"); shift 2 ;;
		--) shift; break ;;
		*) break ;;
		esac
	done
	[ $# -gt 0 ] || die "run: no command given"
	local d
	for d in "${binds[@]}"; do
		[ -d "$d" ] || die "run: --bind $d is not a directory"
		mkdir -p "$root$d"
	done
	# Only the settings a build passes down; the host's PATH (and its
	# python3) stays outside.
	exec unshare --mount --propagation private -- /bin/bash -c '
		set -e
		root=$1; shift
		n=$1; shift
		for ((i = 0; i < n; i++)); do
			mount --bind "$1" "$root$1"; shift
		done
		mount -t proc proc "$root/proc"
		mount --rbind /dev "$root/dev"
		mount --bind /tmp "$root/tmp"
		# chroot(1) changes to /: go back to the same directory inside.
		exec chroot "$root" /usr/bin/env \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			LC_ALL=C.UTF-8 HOME=/root \
			/bin/sh -c '\''cd "$0" 2>/dev/null || cd /; exec "$@"'\'' "$PWD" "$@"' \
		_ "$root" "${#binds[@]}" "${binds[@]}" "$@"
}

toolchain=${TOOLCHAIN:-trixie}
case "${1:-}" in
path)
	[ "$toolchain" = trixie ] || die "TOOLCHAIN=$toolchain has no build root"
	ensure_root
	echo "$root"
	;;
run)
	shift
	if [ "$toolchain" = host ]; then
		while [ "${1:-}" = --bind ]; do shift 2; done
		[ "${1:-}" != -- ] || shift
		exec "$@"
	fi
	[ "$toolchain" = trixie ] || die "TOOLCHAIN='$toolchain' is unknown; use trixie (the default) or host"
	# Stages after the build (BUILDROOT_MAKE=no) use the root, never make it.
	[ -e "$dir/ready" ] || [ "${BUILDROOT_MAKE:-yes}" != no ] ||
		die "the build root $dir is not made, and this stage runs after the build: make buildroot (or make kernels) first"
	ensure_root
	run_in_root "$@"
	;;
describe)
	if [ "$toolchain" = host ]; then
		echo "host $(gcc --version | head -1)"
	else
		make_root
		echo "$SUITE-$key $(sed -n 's/^gcc=//p' "$dir/provenance")"
	fi
	;;
*)
	die "usage: buildroot.sh path | run [--bind DIR]... [--] CMD... | describe"
	;;
esac
