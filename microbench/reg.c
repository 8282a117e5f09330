// SPDX-License-Identifier: GPL-2.0
/*
 * reg.c - rseq registration and RSEQ operation helpers for the benchmarks
 * (and for correctness/stress/rseq_op_stress.c).
 *
 * Each measured thread registers an rseq area (its own v2 or legacy area,
 * or glibc's), then N operations of one type whose destinations are words
 * this file owns. ops_arm() sets every destination to a marker and
 * ops_count_reset() counts how many the kernel has since rewritten: the
 * correctness gate of every benchmark.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "reg.h"

extern __attribute__((weak)) const unsigned int __rseq_size;
extern __attribute__((weak)) const ptrdiff_t __rseq_offset;

static __thread struct ob_rseq own_area;
static __thread struct ob_rseq legacy_area __attribute__((aligned(32)));

const struct ops_backend *ops_backend;

int op_node_register(const void *n, enum op_type type)
{
	if (ops_backend)
		return ops_backend->add(n, type);
	return prctl(OB_PR_RSEQ_OP, OB_PR_RSEQ_OP_REGISTER, (unsigned long)n, 0, 0) ?
		-errno : 0;
}

int op_node_unregister(const void *n, enum op_type type)
{
	if (ops_backend)
		return ops_backend->remove(n, type);
	return prctl(OB_PR_RSEQ_OP, OB_PR_RSEQ_OP_UNREGISTER, (unsigned long)n, 0, 0) ?
		-errno : 0;
}

static const char *const reg_names[] = {
	[REG_OWN] = "own", [REG_LEGACY] = "legacy", [REG_GLIBC] = "glibc",
};

static const char *const type_names[] = {
	[OP_RESET4] = "reset4", [OP_RESET8] = "reset8", [OP_NULL] = "null",
	[OP_CPU] = "cpu", [OP_MMCID] = "mmcid",
};

const char *reg_mode_name(enum reg_mode m)
{
	return reg_names[m];
}

const char *op_type_name(enum op_type t)
{
	return type_names[t];
}

int parse_reg_mode(const char *s, enum reg_mode *m)
{
	for (unsigned int i = 0; i < sizeof(reg_names) / sizeof(reg_names[0]); i++) {
		if (!strcmp(s, reg_names[i])) {
			*m = i;
			return 0;
		}
	}
	return -1;
}

int parse_op_type(const char *s, enum op_type *t)
{
	for (unsigned int i = 0; i < OP_NR; i++) {
		if (!strcmp(s, type_names[i])) {
			*t = i;
			return 0;
		}
	}
	return -1;
}

/* True when glibc registered rseq for this thread (glibc >= 2.35). */
bool glibc_owns_rseq(void)
{
	return &__rseq_size && __rseq_size > 0;
}

/*
 * Our own rseq areas need glibc's registration off. Rather than fail, run
 * again with the tunable set, and say so when @say. Returns only when
 * glibc did not register rseq; exits 2 when it did despite the tunable or
 * the re-execution failed. @me prefixes the messages.
 */
void reexec_without_glibc_rseq(char **argv, const char *me, bool say)
{
	const char *old = getenv("GLIBC_TUNABLES");
	char buf[512];

	if (!glibc_owns_rseq())
		return;
	if (old && strstr(old, "glibc.pthread.rseq=0")) {
		fprintf(stderr, "%s: glibc registered rseq despite GLIBC_TUNABLES=%s\n", me, old);
		exit(2);
	}
	snprintf(buf, sizeof(buf), "%s%sglibc.pthread.rseq=0", old ? old : "",
		 old ? ":" : "");
	setenv("GLIBC_TUNABLES", buf, 1);
	if (say)
		fprintf(stderr, "%s: re-running with GLIBC_TUNABLES=%s to register our own rseq area\n",
			me, buf);
	execv("/proc/self/exe", argv);
	fprintf(stderr, "%s: cannot re-execute /proc/self/exe: %s\n", me, strerror(errno));
	exit(2);
}

static unsigned int feature_size(void)
{
	unsigned long sz = getauxval(OB_AT_RSEQ_FEATURE_SIZE);

	if (sz < 32)
		sz = 32;
	return sz > sizeof(struct ob_rseq) ? sizeof(struct ob_rseq) : sz;
}

/*
 * The thread pointer, which glibc's __rseq_offset is relative to. gcc has
 * no __builtin_thread_pointer() on 32-bit powerpc (make arch-run builds
 * rseq_op_stress there): r2 holds it, as the rseq selftests read it.
 */
static void *thread_pointer(void)
{
#if defined(__powerpc__) && !defined(__powerpc64__)
	register void *tp __asm__("r2");

	return tp;
#else
	return __builtin_thread_pointer();
#endif
}

/* Register this thread's rseq area; 0 or -errno. */
int rseq_register_thread(enum reg_mode m, struct ob_rseq **area)
{
	switch (m) {
	case REG_GLIBC:
		if (!glibc_owns_rseq())
			return -ENOENT;
		*area = (struct ob_rseq *)((char *)thread_pointer() +
					   __rseq_offset);
		return 0;
	case REG_LEGACY:
		if (syscall(__NR_rseq, &legacy_area, 32, 0, OB_RSEQ_SIG))
			return -errno;
		*area = &legacy_area;
		return 0;
	case REG_OWN:
	default:
		if (syscall(__NR_rseq, &own_area, feature_size(), 0, OB_RSEQ_SIG))
			return -errno;
		*area = &own_area;
		return 0;
	}
}

int rseq_unregister_thread(enum reg_mode m, struct ob_rseq *area)
{
	if (m == REG_GLIBC)
		return 0;
	if (syscall(__NR_rseq, area, m == REG_LEGACY ? 32 : feature_size(),
		    OB_RSEQ_FLAG_UNREGISTER, OB_RSEQ_SIG))
		return -errno;
	return 0;
}

static size_t node_size(enum op_type t)
{
	if (t == OP_CPU || t == OP_MMCID)
		return sizeof(struct ob_rseq_op_reset_with_stride);
	return sizeof(struct ob_rseq_op_reset);
}

static size_t slots(enum op_type t)
{
	return (t == OP_CPU || t == OP_MMCID) ? STRIDE_SLOTS : 1;
}

/*
 * Shuffle @v in place (Fisher-Yates) with a 64-bit xorshift whose @state
 * the caller seeds: the same seed gives the same order on every run.
 */
void shuffle_ints(int *v, int n, uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ULL;

	for (int i = n - 1; i > 0; i--) {
		int j, t;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = x % (uint64_t)(i + 1);
		t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
	*state = x;
}

static const char *const layout_names[] = {
	[LAYOUT_PACKED] = "packed", [LAYOUT_SCATTERED] = "scattered",
};

const char *layout_name(enum layout l)
{
	return layout_names[l];
}

int parse_layout(const char *s, enum layout *l)
{
	for (unsigned int i = 0; i < sizeof(layout_names) / sizeof(layout_names[0]); i++) {
		if (!strcmp(s, layout_names[i])) {
			*l = i;
			return 0;
		}
	}
	return -1;
}

#define NODE_PAGE	4096

/* Node @i of @to, wherever its layout put it. */
static char *node_at(struct thread_ops *to, int i)
{
	/* A different line in each page: not all in one cache set. */
	if (to->layout == LAYOUT_SCATTERED)
		return (char *)to->nodes + (size_t)to->page[i] * NODE_PAGE +
			(i * 64) % NODE_PAGE;
	return (char *)to->nodes + i * node_size(to->type);
}

/*
 * Lay out @nr nodes: packed, or one per page in an order drawn from a fixed
 * seed (the same in every run, so that boots measure the same layout).
 */
static int nodes_alloc(struct thread_ops *to, int nr)
{
	size_t nsz = node_size(to->type);
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	if (to->layout == LAYOUT_PACKED) {
		to->nodes = aligned_alloc(64, ((nr * nsz) + 63) & ~63UL);
		if (!to->nodes)
			return -ENOMEM;
		memset(to->nodes, 0, nr * nsz);
		return 0;
	}
	to->nodes = aligned_alloc(NODE_PAGE, (size_t)nr * NODE_PAGE);
	to->page = calloc(nr, sizeof(*to->page));
	if (!to->nodes || !to->page)
		return -ENOMEM;
	memset(to->nodes, 0, (size_t)nr * NODE_PAGE);
	for (int i = 0; i < nr; i++)
		to->page[i] = i;
	shuffle_ints(to->page, nr, &x);
	return 0;
}

/*
 * Fill the zeroed node @n with an operation of @type storing into @dst (slot
 * 0 of STRIDE_SLOTS for the strided types), from @src for the types that
 * have a source. -EINVAL for an unknown type.
 */
int op_node_init(void *n, enum op_type type, uint64_t *dst, const uint64_t *src)
{
	struct ob_rseq_op_reset *r = n;
	struct ob_rseq_op_reset_with_stride *s = n;

	switch (type) {
	case OP_RESET4:
	case OP_RESET8:
	case OP_NULL:
		r->node.type = OB_RSEQ_OP_RESET;
		r->dst = (uintptr_t)dst;
		r->src = type == OP_NULL ? 0 : (uintptr_t)src;
		r->len = type == OP_RESET4 ? 4 : 8;
		return 0;
	case OP_CPU:
	case OP_MMCID:
		s->node.type = type == OP_CPU ?
			OB_RSEQ_OP_RESET_WITH_STRIDE_CPUID :
			OB_RSEQ_OP_RESET_WITH_STRIDE_MMCID;
		s->dst = (uintptr_t)dst;
		s->dst_stride = sizeof(uint64_t);
		s->len = 8;
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * Register @nr operations of @type on this thread, laid out as @layout; 0
 * or -errno of the first refusal (-EINVAL on a kernel without RSEQ
 * operations, -EOPNOTSUPP on a legacy area, -ENOTSUPP there from the RFC
 * as posted). @pretend sets everything up but
 * registers nothing: the benchmarks' gate must then fail, which is how its
 * failing is tested.
 */
int ops_register(struct thread_ops *to, struct ob_rseq *area, enum op_type type,
		 int nr, enum layout layout, bool pretend)
{
	memset(to, 0, sizeof(*to));
	to->area = area;
	to->type = type;
	to->layout = layout;
	to->src = MARK ^ 0x5555;
	if (ops_backend && !pretend) {
		int err = ops_backend->thread_begin();

		if (err)
			return err;
		to->begun = true;
	}
	if (!nr)
		return 0;
	to->words = aligned_alloc(64, ((nr * slots(type) * 8) + 63) & ~63UL);
	if (!to->words || nodes_alloc(to, nr))
		return -ENOMEM;
	/*
	 * Every destination page present and writable before the first walk:
	 * the BPF design cannot fault one in (bpf_probe_write_user() skips
	 * it), and would otherwise pay an exception per operation until the
	 * first ops_arm(); the other designs fault each page in once.
	 */
	memset(to->words, 0, nr * slots(type) * 8);
	for (int i = 0; i < nr; i++) {
		char *n = node_at(to, i);

		if (op_node_init(n, type, to->words + i * slots(type), &to->src))
			return -EINVAL;
		if (pretend)
			continue;
		int err = op_node_register(n, type);

		if (err) {
			to->nr = i;
			ops_unregister(to);
			return err;
		}
		to->nr = i + 1;
	}
	if (pretend)
		to->nr = -nr;	/* armed and counted, never registered */
	return 0;
}

/* Why the kernel refused an operation with @err on @area, for a record. */
const char *ops_refusal(int err, const struct ob_rseq *area)
{
	if (ops_backend)
		return ops_backend->refusal(err);
	/* -EOPNOTSUPP from the series since v2, -ENOTSUPP from the RFC */
	if (err == -EOPNOTSUPP || err == -OB_ENOTSUPP)
		return "legacy rseq registration: no operations";
	if (err == -EINVAL && !(area->flags & OB_RSEQ_OP_AVAILABLE))
		return "kernel without RSEQ operations";
	return "operation registration refused";
}

static int nr_nodes(struct thread_ops *to)
{
	return to->nr < 0 ? -to->nr : to->nr;
}

void ops_unregister(struct thread_ops *to)
{
	bool stuck = false;

	for (int k = 0; k < to->nr; k++) {
		/* A backend keeps an array: from its end, nothing to move. */
		int i = ops_backend ? to->nr - 1 - k : k;

		if (op_node_unregister(node_at(to, i), to->type) && !stuck) {
			fprintf(stderr, "opbench: unregistering operation %d failed: %s; its memory is kept\n",
				i, strerror(errno));
			stuck = true;
		}
	}
	/*
	 * The kernel may still walk a node it holds and write its
	 * destination: never reuse their memory.
	 */
	if (!stuck) {
		free(to->nodes);
		free(to->words);
	}
	free(to->page);
	if (to->begun && ops_backend && !stuck)
		ops_backend->thread_end();
	memset(to, 0, sizeof(*to));
}

/* Set every destination slot to the marker. */
void ops_arm(struct thread_ops *to)
{
	size_t n = nr_nodes(to) * slots(to->type);

	for (size_t i = 0; i < n; i++)
		__atomic_store_n(&to->words[i], MARK, __ATOMIC_RELAXED);
}

/* How many operations rewrote at least one of their slots since ops_arm(). */
long ops_count_reset(struct thread_ops *to)
{
	long seen = 0;

	for (int i = 0; i < nr_nodes(to); i++) {
		for (size_t j = 0; j < slots(to->type); j++) {
			uint64_t *w = &to->words[i * slots(to->type) + j];

			if (__atomic_load_n(w, __ATOMIC_RELAXED) != MARK) {
				seen++;
				break;
			}
		}
	}
	return seen;
}

/*
 * The slot a strided operation writes for a thread on @cpu: the CPU itself,
 * or the mm_cid the kernel last published in the thread's rseq area; 0 for
 * the types that are not strided.
 */
int ops_slot(struct thread_ops *to, int cpu)
{
	if (to->type == OP_CPU)
		return cpu;
	if (to->type == OP_MMCID && to->area)
		return __atomic_load_n(&to->area->mm_cid, __ATOMIC_RELAXED);
	return 0;
}

/*
 * How many operations rewrote @slot and no other of their slots since
 * ops_arm(): a strided store into the slot of a CPU the thread is not on
 * counts against it.
 */
long ops_count_exact(struct thread_ops *to, int slot)
{
	size_t ns = slots(to->type);
	long ok = 0;

	if ((size_t)slot >= ns)
		return 0;
	for (int i = 0; i < nr_nodes(to); i++) {
		bool mine = false, other = false;

		for (size_t j = 0; j < ns; j++) {
			bool changed = __atomic_load_n(&to->words[i * ns + j],
						       __ATOMIC_RELAXED) != MARK;

			if (j == (size_t)slot)
				mine = changed;
			else
				other |= changed;
		}
		ok += mine && !other;
	}
	return ok;
}

/*
 * Add to @w the destinations of the first and the last operation in @slot,
 * or two dummy words when none is registered.
 */
void watch_add(struct watch *w, struct thread_ops *to, int slot)
{
	int n = nr_nodes(to);
	size_t ns = slots(to->type);

	for (int k = 0; k < 2 && w->nr < WATCH_MAX; k++, w->nr++) {
		if (n)
			w->w[w->nr] = &to->words[(k ? n - 1 : 0) * ns + slot];
		else
			w->w[w->nr] = &w->dummy[w->nr];
	}
}

void watch_ops(struct watch *w, struct thread_ops *to, int slot)
{
	w->nr = 0;
	watch_add(w, to, slot);
}
