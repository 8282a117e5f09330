/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bpfops.h - registration of operations with the BPF design (bpf/): what
 * reg.c calls instead of prctl(PR_RSEQ_OP) when opbench runs with
 * --via bpf. Raw bpf() system calls on the maps rseq-bpf-ops pinned: the
 * benchmarks link no libbpf.
 */
#ifndef OPBENCH_BPFOPS_H
#define OPBENCH_BPFOPS_H

#include <stdint.h>

#include "bpf/rseq-bpf-ops.h"
#include "reg.h"

/*
 * Opt the calling thread in to the kernel's hook, and when the program is
 * loaded, claim a slot of its map for the thread. 0, or -errno: -EINVAL
 * from a kernel without the hook (or without an rseq registration),
 * -ENOENT when @need_program and nothing is loaded, -EBUSY when every slot
 * is taken.
 */
int bpfops_thread_begin(int need_program);
/* Drop the slot and opt out. */
void bpfops_thread_end(void);
/* Whether the calling thread holds a slot. */
int bpfops_have_slot(void);
/*
 * Add one operation at the end of the calling thread's slot: 0, -ENOSPC
 * when it holds RBO_OPS_MAX, -ENOENT without a slot.
 */
int bpfops_add(const struct rbo_op *op);
/* Remove the last operation equal to @op: 0 or -ENOENT. */
int bpfops_remove(const struct rbo_op *op);
/* Why bpfops_thread_begin() failed with @err, for a record. */
const char *bpfops_refusal(int err);

/* reg.c's ops_backend for the BPF design (opbench --via bpf). */
extern const struct ops_backend bpfops_backend;

#endif /* OPBENCH_BPFOPS_H */
