// SPDX-License-Identifier: GPL-2.0
/*
 * bpfops.c - registration of operations with the BPF design (bpf/,
 * rseq-bpf-ops.h describes the maps): a slot of the mmapped array map per
 * thread, filled with plain stores.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/bpf.h>

#include "bpfops.h"

static struct rbo_set *sets;		/* the mapped array, RBO_SLOTS sets */
static int slot_of_fd = -1;
static __thread struct rbo_set *mine;
static __thread int opted_in;

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static int obj_get(const char *name)
{
	char path[256];
	union bpf_attr a;

	snprintf(path, sizeof(path), "%s/%s", RBO_PIN_DIR, name);
	memset(&a, 0, sizeof(a));
	a.pathname = (uintptr_t)path;
	return sys_bpf(BPF_OBJ_GET, &a);
}

/* Map the pinned maps once per process: 0 or -errno. */
static int maps_open(void)
{
	static int err = 1;
	int fd;

	if (err <= 0)
		return err;
	fd = obj_get("sets");
	if (fd < 0)
		return err = -errno;
	sets = mmap(NULL, sizeof(struct rbo_set) * RBO_SLOTS, PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
	close(fd);
	if (sets == MAP_FAILED) {
		sets = NULL;
		return err = -errno;
	}
	slot_of_fd = obj_get("slot_of");
	return err = slot_of_fd < 0 ? -errno : 0;
}

static int slot_map(uint32_t tid, uint32_t *slot)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = slot_of_fd;
	a.key = (uintptr_t)&tid;
	if (!slot)
		return sys_bpf(BPF_MAP_DELETE_ELEM, &a) ? -errno : 0;
	a.value = (uintptr_t)slot;
	a.flags = BPF_ANY;
	return sys_bpf(BPF_MAP_UPDATE_ELEM, &a) ? -errno : 0;
}

int bpfops_thread_begin(int need_program)
{
	uint32_t tid = gettid(), slot;
	int err;

	if (!opted_in) {
		if (prctl(RBO_PR_RSEQ_BPF_EXIT_HOOK, 1, 0, 0, 0))
			return -errno;
		opted_in = 1;
	}
	err = maps_open();
	if (err)
		return need_program ? err : 0;
	if (mine)
		return 0;
	for (slot = 0; slot < RBO_SLOTS; slot++) {
		uint32_t zero = 0;

		if (__atomic_compare_exchange_n(&sets[slot].tid, &zero, tid, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			break;
	}
	if (slot == RBO_SLOTS)
		return -EBUSY;
	sets[slot].nr = 0;
	sets[slot].faults = 0;
	err = slot_map(tid, &slot);
	if (err) {
		__atomic_store_n(&sets[slot].tid, 0, __ATOMIC_RELEASE);
		return err;
	}
	mine = &sets[slot];
	return 0;
}

void bpfops_thread_end(void)
{
	if (mine) {
		__atomic_store_n(&mine->nr, 0, __ATOMIC_RELEASE);
		slot_map(mine->tid, NULL);
		__atomic_store_n(&mine->tid, 0, __ATOMIC_RELEASE);
		mine = NULL;
	}
	if (opted_in) {
		prctl(RBO_PR_RSEQ_BPF_EXIT_HOOK, 0, 0, 0, 0);
		opted_in = 0;
	}
}

int bpfops_have_slot(void)
{
	return mine != NULL;
}

int bpfops_add(const struct rbo_op *op)
{
	uint32_t nr;

	if (!mine)
		return -ENOENT;
	nr = mine->nr;
	if (nr >= RBO_OPS_MAX)
		return -ENOSPC;
	mine->op[nr] = *op;
	/* The program reads nr first: the operation is there before it. */
	__atomic_store_n(&mine->nr, nr + 1, __ATOMIC_RELEASE);
	return 0;
}

int bpfops_remove(const struct rbo_op *op)
{
	uint32_t nr;

	if (!mine)
		return -ENOENT;
	nr = mine->nr;
	for (uint32_t i = nr; i-- > 0;) {
		if (memcmp(&mine->op[i], op, sizeof(*op)))
			continue;
		/*
		 * The program reads the slot on this thread's own returns to
		 * user space, which a preemption can bring in the middle of the
		 * move: hide the operations from i on first, so that it never
		 * sees one half moved. Until the last store, a walk applies
		 * only those before i.
		 */
		if (i + 1 < nr) {
			__atomic_store_n(&mine->nr, i, __ATOMIC_RELEASE);
			memmove(&mine->op[i], &mine->op[i + 1], (nr - i - 1) * sizeof(*op));
		}
		__atomic_store_n(&mine->nr, nr - 1, __ATOMIC_RELEASE);
		return 0;
	}
	return -ENOENT;
}

const char *bpfops_refusal(int err)
{
	switch (err) {
	case -EINVAL:
		return "kernel without rseq_exit_bpf_hook (not the bpf flavour)";
	case -EOPNOTSUPP:
		return "legacy rseq registration: no BPF hook";
	case -ENOENT:
		return "BPF program not loaded (rseq-bpf-ops load)";
	case -EACCES:
	case -EPERM:
		return "no access to the BPF design's pinned maps (" RBO_PIN_DIR ")";
	case -EBUSY:
		return "every slot of the BPF map is taken";
	case -EPROTONOSUPPORT:
		return "4-byte resets: not in the BPF design";
	default:
		return "BPF registration refused";
	}
}

/*
 * The BPF design's operation for a node op_node_init() filled: the same
 * destination, stride and source. Only 8-byte resets: -EPROTONOSUPPORT for
 * reset4.
 */
static int op_of_node(const void *n, enum op_type type, struct rbo_op *op)
{
	const struct ob_rseq_op_reset *r = n;
	const struct ob_rseq_op_reset_with_stride *s = n;

	memset(op, 0, sizeof(*op));
	switch (type) {
	case OP_RESET8:
	case OP_NULL:
		op->dst = r->dst;
		op->src = r->src;
		op->src_kind = r->src ? RBO_SRC_WORD : RBO_SRC_ZERO;
		return 0;
	case OP_CPU:
	case OP_MMCID:
		op->dst = s->dst;
		op->dst_stride = s->dst_stride;
		op->stride_by = type == OP_CPU ? RBO_STRIDE_CPU : RBO_STRIDE_MMCID;
		return 0;
	default:
		return -EPROTONOSUPPORT;
	}
}

static int backend_begin(void)
{
	return bpfops_thread_begin(0);
}

static int backend_add(const void *n, enum op_type type)
{
	struct rbo_op op;
	int err = op_of_node(n, type, &op);

	if (err)
		return err;
	if (!bpfops_have_slot()) {
		err = bpfops_thread_begin(1);
		if (err)
			return err;
	}
	return bpfops_add(&op);
}

static int backend_remove(const void *n, enum op_type type)
{
	struct rbo_op op;
	int err = op_of_node(n, type, &op);

	return err ?: bpfops_remove(&op);
}

static long backend_faults(void)
{
	return mine ? (long)__atomic_load_n(&mine->faults, __ATOMIC_RELAXED) : 0;
}

const struct ops_backend bpfops_backend = {
	.name = "bpf",
	.thread_begin = backend_begin,
	.add = backend_add,
	.remove = backend_remove,
	.thread_end = bpfops_thread_end,
	.refusal = bpfops_refusal,
	.faults = backend_faults,
};
