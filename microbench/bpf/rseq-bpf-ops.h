/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rseq-bpf-ops.h - what the BPF design of RSEQ operations shares between
 * its program (rseq_ops.bpf.c), its loader (rseq-bpf-ops.c) and the
 * benchmarks' registration (../bpfops.c).
 *
 * Each thread that uses it owns one slot of the map "sets": an array map
 * that user space maps (BPF_F_MMAPABLE) and fills itself. A thread claims
 * a slot by writing its thread ID into rbo_set::tid (compare-and-swap from
 * 0), tells the program with one update of the hash "slot_of" (thread ID
 * to slot), and opts in to the kernel's hook with
 * prctl(PR_RSEQ_BPF_EXIT_HOOK, 1). An operation is registered by writing
 * rbo_set::op[nr] and then storing nr + 1 (release): no system call.
 *
 * The program runs at rseq_exit_bpf_hook() (kernel-patch/bpf/): each
 * return to user space after the thread was scheduled out, and before a
 * signal handler. It applies op[0 .. nr - 1] in order with
 * bpf_probe_write_user(): a store that fails (an unmapped or read-only
 * destination, or a page not present: it cannot fault one in) is skipped
 * and counted, in "stats" and in the slot's rbo_set::faults, which the
 * thread may read; nothing tells the thread otherwise. A thread that exits
 * loses its slot (sched_process_exit).
 */
#ifndef RSEQ_BPF_OPS_H
#define RSEQ_BPF_OPS_H

#include <linux/types.h>

/*
 * Operations per thread: the series' limit, OB_RSEQ_OP_LIST_LIMIT of
 * microbench/rseq-op-abi.h. microbench/bpf/Makefile passes it
 * (-DRBO_OPS_MAX) to the BPF program, which cannot include that header;
 * opbench's side includes it.
 */
#ifndef RBO_OPS_MAX
#include "../rseq-op-abi.h"
#define RBO_OPS_MAX		OB_RSEQ_OP_LIST_LIMIT
#endif
/* Threads that can hold operations at once. */
#define RBO_SLOTS		64

/* Where the loader pins the link and the maps (bpffs). */
#define RBO_PIN_DIR		"/sys/fs/bpf/rseq-opbench"

/* The kernel's hook and its prctl (kernel-patch/bpf/). */
#define RBO_HOOK		"rseq_exit_bpf_hook"
#define RBO_PR_RSEQ_BPF_EXIT_HOOK	83

/* What an operation stores: zero, or the 8-byte word at rbo_op::src. */
enum { RBO_SRC_ZERO = 0, RBO_SRC_WORD = 1 };
/* Which slot of a strided destination: none, the CPU's, the mm_cid's. */
enum { RBO_STRIDE_NONE = 0, RBO_STRIDE_CPU = 1, RBO_STRIDE_MMCID = 2 };

/* One 8-byte reset: dst + dst_stride * (CPU or mm_cid) = 0 or *src. */
struct rbo_op {
	__u64 dst;
	__u64 src;
	__u32 dst_stride;
	__u8 src_kind;
	__u8 stride_by;
	__u16 pad;
};

/* A thread's slot. */
struct rbo_set {
	__u32 nr;		/* operations registered */
	__u32 tid;		/* the owner's thread ID, 0 when free */
	__u32 faults;		/* stores skipped because they faulted */
	__u32 pad;
	struct rbo_op op[RBO_OPS_MAX];
};

/* Per CPU, since the load. */
struct rbo_stats {
	__u64 hooks;		/* calls of the hook the program saw */
	__u64 walks;		/* walks of a slot with at least one operation */
	__u64 stores;		/* operations applied */
	__u64 faults;		/* operations whose read or store failed */
};

#endif /* RSEQ_BPF_OPS_H */
