#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kernel-path.sh - print where a built kernel flavour lives, from the manifest.
#
# Usage: kernel-patch/scripts/kernel-path.sh FLAVOUR[@TOOLCHAIN]
#   -> $CACHE_DIR/kernels/<ver>/<toolchain>/<kconfig>/<flavour>
# Env:   KCONFIG (default|debug), TOOLCHAIN, MANIFEST
# A pure lookup: it reads the run manifest the build steps wrote and fails,
# naming the make command to run, when the flavour was not built. It never
# fetches or unpacks anything.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"
kernel_dir "${1:?usage: kernel-path.sh FLAVOUR[@TOOLCHAIN]}"
