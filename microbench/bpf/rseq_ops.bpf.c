// SPDX-License-Identifier: GPL-2.0
/*
 * rseq_ops.bpf.c - RSEQ operations as a BPF program: the fourth design of
 * make bench-walker. It runs at rseq_exit_bpf_hook(), which the bpf flavour
 * (kernel-patch/bpf/) calls where the series applies its operations, for
 * the threads that opted in; rseq-bpf-ops.h describes the maps.
 *
 * rseq_exit is the program the loader attaches. The programs whose section
 * starts with "?" are not loaded unless asked for (rseq-bpf-ops probe):
 * they are the walks the verifier refuses or that cost more to verify, kept
 * so that what it says about them is measured rather than remembered.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "rseq-bpf-ops.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, RBO_SLOTS);
	__type(key, __u32);
	__type(value, struct rbo_set);
} sets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RBO_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} slot_of SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rbo_stats);
} stats SEC(".maps");

struct walk {
	struct rbo_set *set;
	__u32 cpu_id;
	__u32 mm_cid;
	__u64 stores;
	__u64 faults;
};

/* The address operation @op stores into for a thread on @w's IDs. */
static __always_inline __u64 op_dst(const struct rbo_op *op, const struct walk *w)
{
	if (op->stride_by == RBO_STRIDE_CPU)
		return op->dst + (__u64)op->dst_stride * w->cpu_id;
	if (op->stride_by == RBO_STRIDE_MMCID)
		return op->dst + (__u64)op->dst_stride * w->mm_cid;
	return op->dst;
}

/* Apply @op; false when its read or its store failed. */
static __always_inline bool op_apply(const struct rbo_op *op, const struct walk *w)
{
	__u64 v = 0;

	if (op->src_kind == RBO_SRC_WORD &&
	    bpf_probe_read_user(&v, sizeof(v), (const void *)op->src))
		return false;
	return !bpf_probe_write_user((void *)op_dst(op, w), &v, sizeof(v));
}

static long apply_one(__u64 i, void *data)
{
	struct walk *w = data;

	if (i >= RBO_OPS_MAX)
		return 1;
	if (op_apply(&w->set->op[i], w))
		w->stores++;
	else
		w->faults++;
	return 0;
}

/* The calling thread's slot, or NULL. */
static __always_inline struct rbo_set *my_set(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct rbo_set *set;
	__u32 *slot;

	slot = bpf_map_lookup_elem(&slot_of, &tid);
	if (!slot)
		return NULL;
	set = bpf_map_lookup_elem(&sets, slot);
	if (!set || set->tid != tid)
		return NULL;
	return set;
}

static __always_inline void count(const struct walk *w, bool walked)
{
	__u32 zero = 0;
	struct rbo_stats *s = bpf_map_lookup_elem(&stats, &zero);

	if (!s)
		return;
	s->hooks++;
	if (!walked)
		return;
	s->walks++;
	s->stores += w->stores;
	s->faults += w->faults;
}

SEC("fentry/" RBO_HOOK)
int BPF_PROG(rseq_exit, __u32 cpu_id, __u32 mm_cid)
{
	struct walk w = { .cpu_id = cpu_id, .mm_cid = mm_cid };
	__u32 nr;

	w.set = my_set();
	if (!w.set) {
		count(&w, false);
		return 0;
	}
	nr = *(volatile __u32 *)&w.set->nr;
	if (nr > RBO_OPS_MAX)
		nr = RBO_OPS_MAX;
	if (nr)
		bpf_loop(nr, apply_one, &w, 0);
	/*
	 * Only the owner's own exits write it: no other writer. Without a
	 * branch on w.faults: a branch makes the verifier track the count
	 * precisely through bpf_loop()'s callback, whose states then never
	 * converge ("BPF program is too large. Processed 1000001 insn").
	 */
	w.set->faults += w.faults;
	count(&w, nr);
	return 0;
}

/*
 * A thread that exits gives its slot back, registered or not: its thread
 * ID may come back as another thread's.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(rseq_exit_thread)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct rbo_set *set;
	__u32 *slot;

	slot = bpf_map_lookup_elem(&slot_of, &tid);
	if (!slot)
		return 0;
	set = bpf_map_lookup_elem(&sets, slot);
	if (set && set->tid == tid) {
		set->nr = 0;
		set->tid = 0;	/* the owner is exiting: no other writer */
	}
	bpf_map_delete_elem(&slot_of, &tid);
	return 0;
}

/* The probes' start: the calling thread's slot in @w, and its count. */
static __always_inline __u32 probe_begin(struct walk *w)
{
	w->set = my_set();
	return w->set ? *(volatile __u32 *)&w->set->nr : 0;
}

/* probe: a loop bounded by the limit, which the verifier walks through. */
SEC("?fentry/" RBO_HOOK)
int BPF_PROG(walk_bounded_loop, __u32 cpu_id, __u32 mm_cid)
{
	struct walk w = { .cpu_id = cpu_id, .mm_cid = mm_cid };
	__u32 nr = probe_begin(&w);

	if (!w.set)
		return 0;
	for (__u32 i = 0; i < RBO_OPS_MAX; i++) {
		if (i >= nr)
			break;
		if (op_apply(&w.set->op[i], &w))
			w.stores++;
	}
	count(&w, nr);
	return 0;
}

/* probe: a loop bounded only by the count user space wrote. */
SEC("?fentry/" RBO_HOOK)
int BPF_PROG(walk_unbounded_loop, __u32 cpu_id, __u32 mm_cid)
{
	struct walk w = { .cpu_id = cpu_id, .mm_cid = mm_cid };
	__u32 nr = probe_begin(&w);

	if (!w.set)
		return 0;
	for (__u32 i = 0; i < nr; i++) {
		if (op_apply(&w.set->op[i & (RBO_OPS_MAX - 1)], &w))
			w.stores++;
	}
	count(&w, nr);
	return 0;
}

/* probe: a plain store to the user address, without the helper. */
SEC("?fentry/" RBO_HOOK)
int BPF_PROG(walk_direct_store, __u32 cpu_id, __u32 mm_cid)
{
	struct rbo_set *set = my_set();

	if (!set || !set->nr)
		return 0;
	*(volatile __u64 *)set->op[0].dst = 0;
	return 0;
}
