#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# deps.sh - install the Debian packages rseq-opbench needs, if any are missing.
#
# Idempotent and silent when everything is present. Run by `make bench` and
# `make test` before anything else; usable by hand: scripts/deps.sh [--check]
set -euo pipefail

# Host side: kernel build, guest image, QEMU, analysis, tracing helpers.
PKGS=(
	bc bison flex cpio kmod rsync xz-utils zstd
	libelf-dev libssl-dev dwarves ccache
	build-essential git iproute2 procps
	qemu-system-x86 qemu-utils
	debootstrap e2fsprogs busybox-static
	python3-numpy python3-scipy python3-matplotlib python3-pytest
	jupyter-nbconvert python3-nbformat python3-ipykernel
)

# The QEMU of each guest architecture of make arch-run, as its declaration
# names it (vm-images/targets/*.target, QEMU_PACKAGE).
for t in "$(dirname "$0")"/../vm-images/targets/*.target; do
	p=$(unset QEMU_PACKAGE; . "$t"; echo "${QEMU_PACKAGE:-}")
	[ -z "$p" ] || [[ " ${PKGS[*]} " == *" $p "* ]] || PKGS+=("$p")
done

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
		grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "${1:-}" = "--check" ]; then
	echo "deps: missing Debian packages: ${missing[*]}" >&2
	exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing Debian packages: ${missing[*]}" >&2
	echo "deps: run 'sudo scripts/deps.sh' (or make as root) to install them" >&2
	exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
stamp=/var/lib/apt/periodic/rseq-opbench-update
if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +720)" ]; then
	apt-get update -qq
	mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/rseq-opbench-deps.log 2>&1; then
	tail -20 /tmp/rseq-opbench-deps.log >&2
	echo "deps: apt-get install failed; full log: /tmp/rseq-opbench-deps.log" >&2
	exit 1
fi
echo "deps: done"
