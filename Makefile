# SPDX-License-Identifier: GPL-2.0
# rseq-opbench: measure what RSEQ operations cost on the exit-to-user path.
#
# `make bench` and `make test` are the whole set-up: both install missing
# Debian packages, fetch the kernel source and build what they need.

CACHE_DIR ?= /var/cache/rseq-opbench
KVER      ?= 7.2
PROFILE   ?= default
TOOLCHAIN ?= trixie
FLAVOURS  ?= baseline ops
ROUNDS    ?= 50
DURATION  ?= 600
RFC_SERIES ?= ../shared/seeds
PYTHON    := /usr/bin/python3
V         ?= 0

export CACHE_DIR KVER PROFILE TOOLCHAIN V

ifeq ($(V),1)
Q :=
PYTEST_V := -v
else
Q := @
PYTEST_V :=
endif

.PHONY: help deps buildroot source config kernels kernel image vm-check test test-host \
	selftests selftests-op differential bench bench-walker report \
	flamegraph trace trace-validate trace-overhead stress clean-cache

help:
	@echo 'rseq-opbench targets:'
	@echo '  bench        everything: kernels, image, benchmarks, analysis, report'
	@echo '               (BENCH_PROFILE=default|quick|walker)'
	@echo '  bench-walker our walker against the RFC as posted (RFC_SERIES), baseline beside'
	@echo '  report       analyse a run again: RESULTS=results/<run> [FORCE=1]'
	@echo '  test         all tests: host unit tests, kernels (debug ops too), image, guest boots'
	@echo '  test-host    host-only tests (no kernel build, no boot)'
	@echo '  deps         install missing Debian packages (root)'
	@echo '  buildroot    make the Debian trixie build root (gcc 14) kernels and guest'
	@echo '               binaries are built in (debootstrap, cached)'
	@echo '  source       fetch and unpack linux-source-$$(KVER) into the cache'
	@echo '  config       merge and check the kernel config of $$(PROFILE)'
	@echo '  kernels      build every flavour in FLAVOURS (default: baseline ops)'
	@echo '  kernel       build one: FLAVOUR=<name> [SERIES=<patch dir or mbox>]'
	@echo '  image        build the guest root filesystem (debootstrap, cached)'
	@echo '  vm-check     boot each built flavour and print uname -r'
	@echo '  stress       adversarial use of RSEQ operations on the debug kernel,'
	@echo '               DURATION=$(DURATION) seconds (KASAN, lockdep, lockup detectors)'
	@echo '  selftests    all rseq selftests on ops in the guest (long: run_param_test.sh)'
	@echo '  selftests-op rseq_op_test ROUNDS=$(ROUNDS) times in a row on ops'
	@echo '  differential rseq_op_test on ops and on the RFC as posted (RFC_SERIES)'
	@echo '  flamegraph   perf flame graph of BENCH at OPS on FLAVOUR, and a diff against VS'
	@echo '               (defaults: ops signal 2048, VS="baseline 0")'
	@echo '  trace        a bpftrace SCRIPT (tracing/*.bt) around BENCH at OPS on FLAVOUR'
	@echo '  trace-validate  each bpftrace script against a known count of walks'
	@echo '  trace-overhead  BENCH alone and under SCRIPT: what tracing costs'
	@echo '  clean-cache  remove $$(CACHE_DIR) (source, builds, ccache, images)'
	@echo 'Variables: KVER=$(KVER) PROFILE=$(PROFILE) (default|debug)'
	@echo '  TOOLCHAIN=$(TOOLCHAIN): trixie builds with gcc 14 in the build root, as Debian'
	@echo '  builds its kernels; host uses this machine'"'"'s gcc (12.2 on bookworm: asm goto'
	@echo '  outputs off), for old-against-new comparisons only'
	@echo '  CACHE_DIR=$(CACHE_DIR) FLAVOURS="$(FLAVOURS)" V=1 for verbose'

deps:
	$(Q)scripts/deps.sh

buildroot: deps
	$(Q)kernel-patch/scripts/buildroot.sh describe

source: deps
	$(Q)kernel-patch/scripts/kernel-source.sh >/dev/null

config: source
	$(Q)kernel-patch/scripts/kernel-config.sh "$$(kernel-patch/scripts/kernel-source.sh)" \
		"$(CACHE_DIR)/merged-$(TOOLCHAIN)-$(PROFILE).config" && \
		echo "config: $(CACHE_DIR)/merged-$(TOOLCHAIN)-$(PROFILE).config"

kernels: source
	$(Q)kernel-patch/scripts/kernels.sh $(FLAVOURS)

kernel: source
	$(Q)test -n "$(FLAVOUR)" || { echo 'kernel: name one: make kernel FLAVOUR=baseline|ops|<name> [SERIES=...]' >&2; exit 2; }
	$(Q)kernel-patch/scripts/kernel-build.sh "$(FLAVOUR)" $(SERIES) >/dev/null

image: deps
	$(Q)vm-images/build-rootfs.sh >/dev/null

vm-check: kernels image
	$(Q)vm-images/vm-check.sh $(FLAVOURS)

test-host: deps
	$(Q)$(PYTHON) -m pytest -q $(PYTEST_V) -m 'not rig' tests/

test: deps kernels image
	$(Q)PROFILE=debug kernel-patch/scripts/kernels.sh ops
	$(Q)$(PYTHON) -m pytest -q $(PYTEST_V) --durations=15 tests/

stress: deps image
	$(Q)PROFILE=debug kernel-patch/scripts/kernels.sh ops
	$(Q)correctness/stress.sh $(DURATION)

selftests: deps kernels image
	$(Q)correctness/guest-selftests.sh ops full

selftests-op: deps kernels image
	$(Q)correctness/guest-selftests.sh ops op $(ROUNDS)

differential: deps kernels image
	$(Q)test -d "$(RFC_SERIES)" || { echo 'differential: RFC_SERIES=$(RFC_SERIES) does not exist; point it at the RFC patches' >&2; exit 2; }
	$(Q)kernel-patch/scripts/kernel-build.sh rfc "$(RFC_SERIES)" >/dev/null
	$(Q)correctness/differential.sh

bench:
	$(Q)microbench/bench-all.sh

bench-walker:
	$(Q)BENCH_PROFILE=walker RFC_SERIES="$(RFC_SERIES)" microbench/bench-all.sh

report:
	$(Q)$(PYTHON) analysis/analyze.py $(RESULTS) $(if $(FORCE),--force)

TRACE_FLAVOUR ?= ops
OPS       ?= 2048
VS        ?= baseline 0
SCRIPT    ?= rseq_ops_lat.bt

flamegraph: deps kernels image
	$(Q)tracing/trace.sh flame $(or $(FLAVOUR),$(TRACE_FLAVOUR)) $(or $(BENCH),signal) $(OPS) $(VS)

trace: deps kernels image
	$(Q)tracing/trace.sh bpf $(or $(FLAVOUR),$(TRACE_FLAVOUR)) $(SCRIPT) $(or $(BENCH),switch) $(OPS)

trace-validate: deps kernels image
	$(Q)tracing/trace.sh validate $(or $(FLAVOUR),$(TRACE_FLAVOUR))

trace-overhead: deps kernels image
	$(Q)tracing/trace.sh overhead $(or $(FLAVOUR),$(TRACE_FLAVOUR)) $(SCRIPT) $(or $(BENCH),switch) $(OPS)

clean-cache:
	rm -rf "$(CACHE_DIR)"
