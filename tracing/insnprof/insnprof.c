// SPDX-License-Identifier: GPL-2.0
/*
 * insnprof.c - a QEMU TCG plugin: every guest instruction executed inside a
 * marked window, counted to the call stack it ran under.
 *
 *   qemu-system-x86_64 ... -plugin insnprof.so,out=FILE,entries=FILE
 *
 * The window opens when a vCPU executes the begin marker (nopl
 * 0x4e474542(%rax): "BEGN") and closes when the same vCPU executes the end
 * marker (nopl 0x21444e45(%rax): "END!"); opbench --mark puts them around
 * each timed sample. Everything that vCPU executes in between is counted,
 * kernel and other tasks included, as QEMU icount counts it. The stacks are
 * kept by shadow.c from the calls, returns and privilege transfers
 * executed (see shadow.h). entries names the interrupt and exception entry
 * points (tracing/insnprof.py writes it from System.map).
 *
 * At exit, FILE gets the folded stacks with addresses (root first, "window"
 * for the window's own frame), then "# counts" lines per vCPU;
 * tracing/insnprof.py symbolises them. QEMU 7.2's plugin API, version 1,
 * checked at load. The tree is shared by the vCPUs under a lock: run it
 * under icount, where they take turns in one thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

#include "shadow.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/*
 * What the exec callback needs of an instruction, packed into its udata
 * (QEMU 7.2 offers no hook to free per-instruction data, and a TB is
 * translated again after every flush): the address's low 48 bits, the
 * kind in bits 48-51, the length in bits 52-55. x86-64 addresses are
 * canonical: bit 47 extends into the top.
 */
_Static_assert(sizeof(uintptr_t) == 8, "the packed udata needs 64 bits");

static uintptr_t pack(uint64_t pc, enum sp_kind kind, size_t len)
{
	return (pc & 0xffffffffffffULL) | (uint64_t)kind << 48 |
	       (uint64_t)(len & 0xf) << 52;
}

static uint64_t unpack_pc(uintptr_t u)
{
	uint64_t pc = u & 0xffffffffffffULL;

	return pc & (1ULL << 47) ? pc | 0xffff000000000000ULL : pc;
}

static struct sp_tree tree;
static struct sp_cpu *cpus;
static int ncpus;
static struct sp_range *entries;
static size_t nentries;
static const char *out_path;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void insn_exec(unsigned int cpu, void *udata)
{
	uintptr_t u = (uintptr_t)udata;
	enum sp_kind kind = (u >> 48) & 0xf;
	uint64_t pc;

	if ((int)cpu >= ncpus)
		return;
	/* Outside a window only a begin marker matters: no lock, no work. */
	if (!__atomic_load_n(&cpus[cpu].active, __ATOMIC_RELAXED) &&
	    kind != SP_BEGIN)
		return;
	pc = unpack_pc(u);
	pthread_mutex_lock(&lock);
	sp_exec(&cpus[cpu], pc, kind, pc + ((u >> 52) & 0xf));
	pthread_mutex_unlock(&lock);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	for (size_t k = 0; k < n; k++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, k);
		size_t len = qemu_plugin_insn_size(insn);
		uintptr_t u = pack(qemu_plugin_insn_vaddr(insn),
				   sp_decode(qemu_plugin_insn_data(insn), len), len);

		qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_exec,
						       QEMU_PLUGIN_CB_NO_REGS,
						       (void *)u);
	}
}

static void write_line(const char *line, void *arg)
{
	fprintf(arg, "%s\n", line);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	FILE *f = fopen(out_path, "w");

	(void)id;
	(void)p;
	if (!f) {
		qemu_plugin_outs("insnprof: cannot write the profile\n");
		return;
	}
	pthread_mutex_lock(&lock);
	sp_fold(&tree, write_line, f);
	for (int i = 0; i < ncpus; i++) {
		const struct sp_counts *c = &cpus[i].c;

		fprintf(f, "# counts cpu=%d", i);
		sp_format_counts(f, c);
		fprintf(f, " open=%d mark=%llx\n", cpus[i].active,
			(unsigned long long)cpus[i].mark_pc);
	}
	pthread_mutex_unlock(&lock);
	if (ferror(f) | fclose(f))
		qemu_plugin_outs("insnprof: writing the profile failed: it is incomplete\n");
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info, int argc,
					   char **argv)
{
	const char *ent = NULL;
	char msg[256];

	if (info->version.cur < QEMU_PLUGIN_VERSION ||
	    info->version.min > QEMU_PLUGIN_VERSION) {
		snprintf(msg, sizeof(msg), "insnprof: built for plugin API %d, QEMU offers %d..%d\n",
			 QEMU_PLUGIN_VERSION, info->version.min, info->version.cur);
		qemu_plugin_outs(msg);
		return -1;
	}
	if (!info->system_emulation || strcmp(info->target_name, "x86_64")) {
		qemu_plugin_outs("insnprof: x86_64 system emulation only\n");
		return -1;
	}
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			out_path = argv[i] + 4;
		else if (!strncmp(argv[i], "entries=", 8))
			ent = argv[i] + 8;
		else {
			snprintf(msg, sizeof(msg), "insnprof: unknown argument '%s' (out=, entries=)\n",
				 argv[i]);
			qemu_plugin_outs(msg);
			return -1;
		}
	}
	if (!out_path || !ent) {
		qemu_plugin_outs("insnprof: give out=FILE and entries=FILE\n");
		return -1;
	}
	if (sp_read_entries(ent, &entries, &nentries)) {
		snprintf(msg, sizeof(msg), "insnprof: cannot read the entry points in %s\n", ent);
		qemu_plugin_outs(msg);
		return -1;
	}
	ncpus = info->system.max_vcpus;
	cpus = calloc(ncpus, sizeof(*cpus));
	if (!cpus || sp_tree_init(&tree))
		return -1;
	for (int i = 0; i < ncpus; i++)
		sp_cpu_init(&cpus[i], &tree, entries, nentries);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
