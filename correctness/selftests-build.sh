#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# selftests-build.sh - build the rseq selftests of a flavour, for its guest.
#
# Usage: correctness/selftests-build.sh FLAVOUR DEST
# Everything is built in the trixie build root, against the guest's glibc.
# Builds tools/testing/selftests/rseq from FLAVOUR's worktree against
# FLAVOUR's exported headers into DEST/, plus rseq_op_test from FLAVOUR's
# tree, or from our series when FLAVOUR's has none (built standalone, so
# that it also runs against any flavour with the same ABI, e.g. the RFC as
# posted; the kernel-resident variant has its own, adapted), plus correctness/guest/rseq_op_preload.so
# and correctness/guest/rfc_client (the RFC's uapi names, built against
# FLAVOUR's headers).
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"
export BUILDROOT_MAKE=no	# after the build: use the build root, never make it

flavour=${1:?usage: selftests-build.sh FLAVOUR DEST}
dest=${2:?usage: selftests-build.sh FLAVOUR DEST}
kdir=$(kernel_dir "$flavour")
wt=$(kernel_tree "$flavour")
# rseq_op_test comes from the flavour's tree, or from our series (ops) for
# a flavour whose series lacks it (the RFC as posted), or from the tree of
# OPTEST_FLAVOUR when set (make differential runs ops' test on the flavour
# it compares against). It is built against the flavour's headers, unless
# it comes from another flavour's tree named by OPTEST_FLAVOUR: then
# against that tree's, which the test was written for.
opswt=$wt
ophdr=$kdir/headers
if [ -n "${OPTEST_FLAVOUR:-}" ]; then
	opswt=$(kernel_tree "$OPTEST_FLAVOUR")
	ophdr=$(kernel_dir "$OPTEST_FLAVOUR")/headers
elif [ ! -f "$wt/tools/testing/selftests/rseq/rseq_op_test.c" ]; then
	opswt=$(kernel_tree ops)
fi
st=$wt/tools/testing/selftests/rseq
mkdir -p "$dest"
dest=$(realpath "$dest")
log "[$flavour] building rseq selftests into $dest"

# The upstream tests, by name: a series may list tests it does not contain.
# Every program of 7.2's directory (its Makefile's TEST_GEN_PROGS and
# TEST_GEN_PROGS_EXTENDED): `selftests.sh full` runs them all.
progs="librseq.so basic_test basic_percpu_ops_test basic_percpu_ops_mm_cid_test
	param_test param_test_compare_twice param_test_mm_cid param_test_mm_cid_compare_twice
	param_test_benchmark param_test_mm_cid_benchmark syscall_errors_test
	legacy_check slice_test check_optimized"
targets=$(for p in $progs; do printf '%s/%s ' "$dest" "$p"; done)
# shellcheck disable=SC2086
if in_buildroot --bind "$dest" make -s -C "$st" OUTPUT="$dest" KHDR_INCLUDES="-isystem $kdir/headers" \
	$targets >"$dest/build.log" 2>&1; then
	cp "$st"/run_*.sh "$st/settings" "$dest/"
elif [ "$(flavour_get "$flavour" SELFTESTS)" = 1 ]; then
	tail -20 "$dest/build.log" >&2
	die "rseq selftests failed to build; log: $dest/build.log"
else
	# The RFC's Makefile lists a rseq_op_test.c it does not contain.
	log "[$flavour] upstream rseq selftests do not build here (log: $dest/build.log); only rseq_op_test"
fi

optest=$opswt/tools/testing/selftests/rseq/rseq_op_test.c
[ -f "$optest" ] || die "no $optest: the ops series must contain rseq_op_test.c"
in_buildroot --bind "$dest" gcc -O2 -Wall -g -isystem "$ophdr" -I "$opswt/tools/testing/selftests" \
	-o "$dest/rseq_op_test" "$optest" -lpthread 2>>"$dest/build.log" ||
	die "rseq_op_test failed to build against ${OPTEST_FLAVOUR:-$flavour}'s headers; log: $dest/build.log"
cp "$opswt/tools/testing/selftests/rseq/run_rseq_op_test.sh" "$dest/"
in_buildroot --bind "$dest" gcc -O2 -Wall -Wextra -shared -fPIC -isystem "$kdir/headers" \
	-o "$dest/rseq_op_preload.so" "$TOPDIR/correctness/guest/rseq_op_preload.c" -ldl \
	2>>"$dest/build.log" || die "rseq_op_preload.so failed to build; log: $dest/build.log"
# A client written against the RFC's uapi names: a name the flavour's
# header lacks fails here, by name. Fatal for ops; another series (an
# earlier version of ours, say) is still tested without it, and rfc_client
# then fails in the guest's quick and full modes (op mode does not run it).
if ! in_buildroot --bind "$dest" gcc -O2 -Wall -Wextra -isystem "$kdir/headers" \
	-o "$dest/rfc_client" "$TOPDIR/correctness/guest/rfc_client.c" 2>>"$dest/build.log"; then
	tail -20 "$dest/build.log" >&2
	[ "$flavour" = ops ] &&
		die "rfc_client (the RFC's uapi names) failed to build against $flavour's headers; log: $dest/build.log"
	log "[$flavour] rfc_client (the RFC's uapi names) does not build against $flavour's headers; log: $dest/build.log"
fi
cp "$TOPDIR/correctness/guest/selftests.sh" "$dest/"
