/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shadow.h - the call stacks of the instruction profiler, kept from the
 * instructions a vCPU executes, free of QEMU so that it can be tested on
 * synthetic instruction streams (shadow-test.c).
 *
 * The profiler sees one executed instruction at a time: its address and
 * what kind of control transfer it is, decoded once at translation. It keeps
 * a shadow stack per vCPU and a call tree shared by all of them, and counts
 * every instruction in a window (from a begin marker to an end marker on
 * the same vCPU) to the tree node of the current stack.
 *
 * What the stack does with each kind of instruction, applied at the next
 * executed instruction (whose address is the transfer's target):
 *   call     push a frame: the target is the function, the instruction after
 *            the call the return address. A call at most SP_LOCAL_CALL
 *            bytes past its return address is no function call (return
 *            stack stuffing, a retpoline's inner call): its frame keeps
 *            the caller's node, so that it costs no level of the graph;
 *   ret      pop to the frame whose return address is the target, searching
 *            down to the nearest asynchronous frame. No such frame: the
 *            return goes somewhere the stack never saw (a retpoline's ret
 *            into the function it calls, the ret after a context switch
 *            into another task's frames): the top frame is popped and the
 *            one below becomes the target's (counted as ret_rewrites);
 *   syscall  push an asynchronous frame for the kernel entry;
 *   iret     pop to and including the newest asynchronous frame; at a user
 *            address, drop every kernel frame left;
 *   sysret   drop every kernel frame.
 * An executed address that is an interrupt or exception entry (a list of
 * ranges from System.map) pushes an asynchronous frame, whatever came
 * before: an interrupt between a call and its target keeps the call
 * pending in that frame, and the iret restores it; an iret or sysret cut
 * off by it is applied first. A transfer whose target is its own address
 * (a call or return that faulted and runs again after the exception) is
 * dropped and counted as a restart.
 */
#ifndef INSNPROF_SHADOW_H
#define INSNPROF_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SP_DEPTH	256
#define SP_KERNEL_BASE	0xffff800000000000ULL
/* A call whose target is at most this far past its return address. */
#define SP_LOCAL_CALL	16

enum sp_kind {
	SP_OTHER, SP_CALL, SP_RET, SP_IRET, SP_SYSCALL, SP_SYSRET,
	SP_BEGIN, SP_END,
};

struct sp_node {
	uint64_t func;		/* function entry (or return site) address */
	uint64_t self;		/* instructions counted here */
	uint64_t entered;	/* times a frame of this node was pushed */
	uint32_t parent, child, sibling;
};

struct sp_tree {
	struct sp_node *n;
	uint32_t nr, cap;
};

struct sp_frame {
	uint32_t node;
	bool async;
	enum sp_kind saved;	/* async: the transfer it interrupted */
	uint64_t ret, saved_ret, saved_pc;
};

struct sp_range {
	uint64_t start, end, stride;
};

struct sp_counts {
	uint64_t insns, windows, calls, local_calls, restarts, rets, ret_unwinds,
		 ret_rewrites,
		 ret_underflows, async_entries, syscalls, irets, iret_unmatched,
		 sysrets, overflows;
};

struct sp_cpu {
	struct sp_tree *tree;
	const struct sp_range *entries;
	size_t nentries;
	bool active;
	uint64_t mark_pc;	/* where the first begin marker was */
	int depth;
	enum sp_kind pending;
	uint64_t pending_ret, pending_pc;	/* and the transfer's own address */
	struct sp_frame stack[SP_DEPTH];
	struct sp_counts c;
};

int sp_tree_init(struct sp_tree *t);
void sp_cpu_init(struct sp_cpu *c, struct sp_tree *t,
		 const struct sp_range *entries, size_t nentries);
void sp_exec(struct sp_cpu *c, uint64_t pc, enum sp_kind kind, uint64_t next);
/*
 * Folded stacks, root first, one "addr;addr;... count" line per node with
 * instructions, then "# entered addr;addr;... count" per node entered.
 */
void sp_fold(const struct sp_tree *t, void (*out)(const char *line, void *arg),
	     void *arg);
int sp_read_entries(const char *path, struct sp_range **r, size_t *n);
void sp_format_counts(FILE *f, const struct sp_counts *c);
enum sp_kind sp_decode(const uint8_t *b, size_t len);

/* The markers: nopl MAGIC(%rax), 0f 1f 80 + imm32. */
#define SP_MARK_BEGIN	0x4e474542u	/* "BEGN" */
#define SP_MARK_END	0x21444e45u	/* "END!" */

#endif /* INSNPROF_SHADOW_H */
