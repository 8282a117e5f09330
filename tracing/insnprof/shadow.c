// SPDX-License-Identifier: GPL-2.0
/*
 * shadow.c - shadow call stacks and the call tree of the instruction
 * profiler (see shadow.h for the rules).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shadow.h"

#define NO_NODE		UINT32_MAX

int sp_tree_init(struct sp_tree *t)
{
	t->cap = 1024;
	t->n = calloc(t->cap, sizeof(*t->n));
	if (!t->n)
		return -ENOMEM;
	t->nr = 1;	/* node 0: the root, the window itself */
	t->n[0].parent = t->n[0].child = t->n[0].sibling = NO_NODE;
	return 0;
}

/* The child of @parent for @func, made on first use. */
static uint32_t child_of(struct sp_tree *t, uint32_t parent, uint64_t func)
{
	uint32_t i;

	for (i = t->n[parent].child; i != NO_NODE; i = t->n[i].sibling)
		if (t->n[i].func == func)
			return i;
	if (t->nr == t->cap) {
		struct sp_node *n = realloc(t->n, 2 * t->cap * sizeof(*n));

		if (!n)
			return parent;	/* out of memory: count in the parent */
		t->n = n;
		t->cap *= 2;
	}
	i = t->nr++;
	t->n[i] = (struct sp_node){ .func = func, .parent = parent,
				    .child = NO_NODE,
				    .sibling = t->n[parent].child };
	t->n[parent].child = i;
	return i;
}

void sp_cpu_init(struct sp_cpu *c, struct sp_tree *t,
		 const struct sp_range *entries, size_t nentries)
{
	memset(c, 0, sizeof(*c));
	c->tree = t;
	c->entries = entries;
	c->nentries = nentries;
}

static uint32_t top_node(const struct sp_cpu *c)
{
	return c->depth ? c->stack[c->depth - 1].node : 0;
}

/* The next free frame; a stack too deep to be real starts again from the root. */
static struct sp_frame *next_frame(struct sp_cpu *c)
{
	if (c->depth == SP_DEPTH) {
		c->c.overflows++;
		c->depth = 0;
	}
	return &c->stack[c->depth];
}

/* Back in user space: no kernel frame is left. */
static void drop_kernel_frames(struct sp_cpu *c)
{
	while (c->depth &&
	       c->tree->n[c->stack[c->depth - 1].node].func >= SP_KERNEL_BASE)
		c->depth--;
}

static void push(struct sp_cpu *c, uint64_t func, uint64_t ret, bool async)
{
	struct sp_frame *f = next_frame(c);

	f->node = child_of(c->tree, top_node(c), func);
	c->tree->n[f->node].entered++;
	f->ret = ret;
	f->async = async;
	f->saved = SP_OTHER;
	c->depth++;
}

/* A frame that keeps the caller's node: a call that is no function call. */
static void push_local(struct sp_cpu *c, uint64_t ret)
{
	uint32_t node = top_node(c);

	*next_frame(c) = (struct sp_frame){ .node = node, .ret = ret };
	c->depth++;
}

static bool is_entry(const struct sp_cpu *c, uint64_t pc)
{
	for (size_t i = 0; i < c->nentries; i++) {
		const struct sp_range *r = &c->entries[i];

		if (pc >= r->start && pc < r->end && (pc - r->start) % r->stride == 0)
			return true;
	}
	return false;
}

static void do_ret(struct sp_cpu *c, uint64_t pc)
{
	int i;

	c->c.rets++;
	for (i = c->depth - 1; i >= 0 && !c->stack[i].async; i--) {
		if (c->stack[i].ret == pc) {
			c->c.ret_unwinds += c->depth - 1 - i;
			c->depth = i;
			return;
		}
	}
	if (!c->depth || c->stack[c->depth - 1].async) {
		/* A return out of the window's first frame, or into code
		 * the stack never saw called under an async frame. */
		c->c.ret_underflows++;
		if (c->depth)
			push(c, pc, 0, false);
		return;
	}
	/* Somewhere the stack never saw: the frame below takes the target. */
	c->c.ret_rewrites++;
	c->depth--;
	if (c->depth && !c->stack[c->depth - 1].async) {
		struct sp_frame *f = &c->stack[c->depth - 1];
		uint32_t parent = c->depth > 1 ? c->stack[c->depth - 2].node : 0;

		f->node = child_of(c->tree, parent, pc);
		c->tree->n[f->node].entered++;
	} else {
		push(c, pc, 0, false);
	}
}

static void do_iret(struct sp_cpu *c, uint64_t pc)
{
	int i;

	c->c.irets++;
	for (i = c->depth - 1; i >= 0 && !c->stack[i].async; i--)
		;
	if (i < 0) {
		c->c.iret_unmatched++;
	} else {
		c->pending = c->stack[i].saved;
		c->pending_ret = c->stack[i].saved_ret;
		c->pending_pc = c->stack[i].saved_pc;
		c->depth = i;
	}
	if (pc < SP_KERNEL_BASE)
		drop_kernel_frames(c);
}

/* Apply the transfer of the previous instruction, now that its target is known. */
static void apply(struct sp_cpu *c, enum sp_kind p, uint64_t pc)
{
	switch (p) {
	case SP_CALL:
		c->c.calls++;
		if (pc >= c->pending_ret && pc - c->pending_ret <= SP_LOCAL_CALL) {
			/*
			 * A call a few bytes ahead is no function call: return
			 * stack stuffing (FILL_RETURN_BUFFER), a retpoline's
			 * inner call. Its frame is kept for the returns to
			 * match, and counts in its caller.
			 */
			c->c.local_calls++;
			push_local(c, c->pending_ret);
			break;
		}
		push(c, pc, c->pending_ret, false);
		break;
	case SP_SYSCALL:
		c->c.syscalls++;
		push(c, pc, c->pending_ret, true);
		break;
	case SP_RET:
		do_ret(c, pc);
		break;
	case SP_IRET:
		do_iret(c, pc);
		/* The transfer the interrupt cut off, if any, lands here. */
		p = c->pending;
		c->pending = SP_OTHER;
		if (p == SP_OTHER || p == SP_IRET)
			break;
		if (pc == c->pending_pc)
			c->c.restarts++;	/* it faulted: it runs again */
		else
			apply(c, p, pc);
		break;
	case SP_SYSRET:
		c->c.sysrets++;
		drop_kernel_frames(c);
		break;
	default:
		break;
	}
}

void sp_exec(struct sp_cpu *c, uint64_t pc, enum sp_kind kind, uint64_t next)
{
	enum sp_kind p;

	if (kind == SP_BEGIN) {
		if (!c->active) {
			c->active = true;
			if (!c->c.windows)
				c->mark_pc = pc;
			c->c.windows++;
			c->depth = 0;
			c->pending = SP_OTHER;
		}
		return;
	}
	if (!c->active)
		return;
	p = c->pending;
	c->pending = SP_OTHER;
	if (kind == SP_END) {
		/* The transfer that led here still lands; the marker is not counted. */
		apply(c, p, pc);
		c->active = false;
		return;
	}
	if (is_entry(c, pc)) {
		/* An iret or sysret the interrupt followed at once has happened. */
		if (p == SP_SYSRET) {
			apply(c, p, pc);
			p = SP_OTHER;
		} else if (p == SP_IRET) {
			do_iret(c, pc);
			p = c->pending;
			c->pending = SP_OTHER;
		}
		c->c.async_entries++;
		push(c, pc, 0, true);
		/* An interrupted call or return resumes after the iret. */
		c->stack[c->depth - 1].saved = p;
		c->stack[c->depth - 1].saved_ret = c->pending_ret;
		c->stack[c->depth - 1].saved_pc = c->pending_pc;
	} else {
		apply(c, p, pc);
	}
	c->tree->n[top_node(c)].self++;
	c->c.insns++;
	switch (kind) {
	case SP_CALL:
	case SP_SYSCALL:
		c->pending = kind;
		c->pending_ret = next;
		c->pending_pc = pc;
		break;
	case SP_RET:
	case SP_IRET:
	case SP_SYSRET:
		c->pending = kind;
		c->pending_pc = pc;
		break;
	default:
		break;
	}
}

/* Depth-first, each node's path from the root. */
void sp_fold(const struct sp_tree *t, void (*out)(const char *line, void *arg),
	     void *arg)
{
	char *line = malloc(SP_DEPTH * 20 + 80);
	uint32_t path[SP_DEPTH + 1];

	if (!line)
		return;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 1; i < t->nr; i++) {
			uint64_t v = pass ? t->n[i].entered : t->n[i].self;
			int d = 0;
			size_t len = 0;

			if (!v)
				continue;
			for (uint32_t j = i; j != 0 && d <= SP_DEPTH; j = t->n[j].parent)
				path[d++] = j;
			if (pass)
				len = sprintf(line, "# entered ");
			for (int k = d - 1; k >= 0; k--)
				len += sprintf(line + len, "%s%llx",
					       k == d - 1 ? "" : ";",
					       (unsigned long long)t->n[path[k]].func);
			sprintf(line + len, " %llu", (unsigned long long)v);
			out(line, arg);
		}
	}
	if (t->n[0].self) {
		sprintf(line, "window %llu", (unsigned long long)t->n[0].self);
		out(line, arg);
	}
	free(line);
}

/* Lines "start end stride" in hex (stride decimal); # comments. */
int sp_read_entries(const char *path, struct sp_range **r, size_t *n)
{
	FILE *f = fopen(path, "r");
	char buf[256];
	size_t cap = 64;

	if (!f)
		return -errno;
	*n = 0;
	*r = malloc(cap * sizeof(**r));
	if (!*r) {
		fclose(f);
		return -ENOMEM;
	}
	while (fgets(buf, sizeof(buf), f)) {
		unsigned long long s, e, st;

		if (buf[0] == '#' || buf[0] == '\n')
			continue;
		if (sscanf(buf, "%llx %llx %llu", &s, &e, &st) != 3 || !st || e <= s) {
			fclose(f);
			return -EINVAL;
		}
		if (*n == cap) {
			struct sp_range *x = realloc(*r, 2 * cap * sizeof(*x));

			if (!x) {
				fclose(f);
				return -ENOMEM;
			}
			*r = x;
			cap *= 2;
		}
		(*r)[(*n)++] = (struct sp_range){ s, e, st };
	}
	fclose(f);
	return 0;
}

/*
 * The kind of an x86-64 instruction from its bytes: calls, returns, the
 * privilege transfers, and the markers. Prefixes (operand, address,
 * segment, lock, rep) and one REX byte are skipped.
 */
enum sp_kind sp_decode(const uint8_t *b, size_t len)
{
	size_t i = 0;

	while (i < len && (b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf2 ||
			   b[i] == 0xf3 || b[i] == 0x2e || b[i] == 0x3e ||
			   b[i] == 0x26 || b[i] == 0x36 || b[i] == 0x64 ||
			   b[i] == 0x65 || b[i] == 0xf0))
		i++;
	if (i < len && (b[i] & 0xf0) == 0x40)
		i++;
	if (i >= len)
		return SP_OTHER;
	switch (b[i]) {
	case 0xe8:
		return SP_CALL;
	case 0xff:
		if (i + 1 < len && (((b[i + 1] >> 3) & 7) == 2 || ((b[i + 1] >> 3) & 7) == 3))
			return SP_CALL;
		return SP_OTHER;
	case 0xc3:
	case 0xc2:
	case 0xcb:
	case 0xca:
		return SP_RET;
	case 0xcf:
		return SP_IRET;
	case 0x0f:
		if (i + 1 >= len)
			return SP_OTHER;
		switch (b[i + 1]) {
		case 0x05:
		case 0x34:
			return SP_SYSCALL;
		case 0x07:
		case 0x35:
			return SP_SYSRET;
		case 0x1f:
			if (i == 0 && len == 7 && b[2] == 0x80) {
				uint32_t imm = b[3] | b[4] << 8 | b[5] << 16 |
					       (uint32_t)b[6] << 24;

				if (imm == SP_MARK_BEGIN)
					return SP_BEGIN;
				if (imm == SP_MARK_END)
					return SP_END;
			}
			return SP_OTHER;
		default:
			return SP_OTHER;
		}
	default:
		return SP_OTHER;
	}
}

/* The counters as "name=value" words, for the profile and the tests. */
void sp_format_counts(FILE *f, const struct sp_counts *c)
{
	const struct { const char *name; uint64_t v; } w[] = {
		{ "insns", c->insns }, { "windows", c->windows },
		{ "calls", c->calls }, { "local_calls", c->local_calls },
		{ "restarts", c->restarts }, { "rets", c->rets },
		{ "ret_unwinds", c->ret_unwinds },
		{ "ret_rewrites", c->ret_rewrites },
		{ "ret_underflows", c->ret_underflows },
		{ "async_entries", c->async_entries },
		{ "syscalls", c->syscalls }, { "irets", c->irets },
		{ "iret_unmatched", c->iret_unmatched },
		{ "sysrets", c->sysrets }, { "overflows", c->overflows },
	};

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		fprintf(f, " %s=%llu", w[i].name, (unsigned long long)w[i].v);
}
