/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rseq-op-abi.h - the rseq and RSEQ operation user ABI, as the benchmarks see it.
 *
 * A private copy, so that the benchmarks build against any installed
 * headers and run on every flavour: baseline (no operations), ops (our
 * series v3), v2 and the RFC as posted, which share this ABI byte for byte
 * on x86-64. v3 names the operations' tail padding (@pad), and refuses a
 * node where it is not zero; the others ignore it. The static assertions
 * pin the layout.
 */
#ifndef OPBENCH_RSEQ_OP_ABI_H
#define OPBENCH_RSEQ_OP_ABI_H

#include <stddef.h>
#include <stdint.h>

#define OB_PR_RSEQ_OP			82
#define OB_PR_RSEQ_OP_REGISTER		1
#define OB_PR_RSEQ_OP_UNREGISTER	2
#define OB_RSEQ_OP_LIST_LIMIT		2048
#define OB_RSEQ_FLAG_UNREGISTER		1
#define OB_RSEQ_OP_AVAILABLE		(1U << 6)
#define OB_RSEQ_OP_ENABLED		(1U << 7)
#define OB_AT_RSEQ_FEATURE_SIZE		27
#define OB_AT_RSEQ_ALIGN		28
#define OB_ENOTSUPP			524	/* kernel-internal; the RFC returns it */

/*
 * The minimal kernel-owned ABI (the min flavour): PR_RSEQ_OPS takes a
 * description, copies it and returns a handle. No list, no sentinel, and
 * a limit the kernel keeps to itself (-ENOSPC).
 */
#define OB_PR_RSEQ_OPS			83
#define OB_PR_RSEQ_OPS_ADD		1
#define OB_PR_RSEQ_OPS_DEL		2
#define OB_PR_RSEQ_OPS_GET		3
#define OB_RSEQ_OP_TYPE_ZERO		0

struct ob_rseq_op {
	uint64_t addr;
	uint32_t len;
	uint16_t type;
	uint16_t flags;
	uint32_t handle;
	uint32_t reserved;
};

enum ob_rseq_op_type {
	OB_RSEQ_OP_RESET,
	OB_RSEQ_OP_RESET_WITH_STRIDE_CPUID,
	OB_RSEQ_OP_RESET_WITH_STRIDE_MMCID,
};

struct ob_rseq_op_node {
	uint64_t next;
	uint64_t prev;
	uint8_t type;
	uint8_t reserved[7];
};

struct ob_rseq_op_reset {
	struct ob_rseq_op_node node;
	uint64_t src;
	uint64_t dst;
	uint32_t len;
	uint32_t pad;
};

struct ob_rseq_op_reset_with_stride {
	struct ob_rseq_op_node node;
	uint64_t src;
	uint64_t dst;
	uint64_t dst_stride;
	uint32_t len;
	uint32_t pad;
};

/* struct rseq with the operation list sentinel at offset 32. */
struct ob_rseq {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
	uint32_t node_id;
	uint32_t mm_cid;
	uint32_t slice_ctrl;
	struct ob_rseq_op_node op_list;
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct ob_rseq_op_node) == 24, "node layout");
_Static_assert(offsetof(struct ob_rseq_op_reset, len) == 40, "reset layout");
_Static_assert(sizeof(struct ob_rseq_op_reset) == 48, "reset size");
_Static_assert(sizeof(struct ob_rseq_op_reset_with_stride) == 56, "stride size");
_Static_assert(offsetof(struct ob_rseq_op_reset_with_stride, len) == 48,
	       "stride layout");
_Static_assert(offsetof(struct ob_rseq, flags) == 16, "rseq layout");
_Static_assert(offsetof(struct ob_rseq, mm_cid) == 24, "rseq layout");
_Static_assert(offsetof(struct ob_rseq, op_list) == 32, "sentinel offset");
_Static_assert(sizeof(struct ob_rseq_op) == 24, "handle ABI description size");

#endif /* OPBENCH_RSEQ_OP_ABI_H */
