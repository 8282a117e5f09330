// SPDX-License-Identifier: GPL-2.0
/*
 * bpf-fault - what the BPF design does with a destination that faults:
 * register, through the program rseq-bpf-ops loaded, one operation whose
 * destination is an unmapped page, then one whose destination is
 * read-only, and sleep after each so that the program runs. RSEQ
 * operations kill such a thread with SIGSEGV (rseq_op_test's
 * fatal.dst_unmapped); the BPF program's store fails and the thread is
 * never told. Then a destination that is mapped and writable but not yet
 * present (a fresh anonymous page, never touched): RSEQ operations fault
 * it in on their slow path; bpf_probe_write_user() cannot fault, so is
 * the reset skipped until the thread touches the page itself? Prints
 * what the thread saw, one line each; exit status 0 when it is still
 * alive at the end (which is the finding, not a pass), 2 when it could
 * not set up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bpfops.h"
#include "reg.h"

static int one(const char *what, uint64_t *dst)
{
	struct ob_rseq_op_reset node;
	uint64_t watch = MARK;
	int err;

	memset(&node, 0, sizeof(node));
	op_node_init(&node, OP_NULL, dst, NULL);
	err = bpfops_backend.add(&node, OP_NULL);
	if (err) {
		fprintf(stderr, "bpf-fault: registering the %s destination failed: %s (%s)\n",
			what, strerror(-err), bpfops_refusal(err));
		return 2;
	}
	/* a second, good operation after it: is it still applied? */
	op_node_init(&node, OP_NULL, &watch, NULL);
	err = bpfops_backend.add(&node, OP_NULL);
	if (err)
		return 2;
	for (int i = 0; i < 10; i++)
		usleep(1000);
	printf("%s destination: thread alive after 10 sleeps; the next operation %s\n",
	       what, watch == MARK ? "was not applied" : "was applied");
	bpfops_remove(&(struct rbo_op){ .dst = (uintptr_t)&watch });
	return 0;
}

/* A reset from a source word into a page that is not yet present. */
static int not_present(void)
{
	static uint64_t src = MARK ^ 0x5555;
	struct ob_rseq_op_reset node;
	volatile uint64_t *dst;
	int err, seen;

	dst = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (dst == MAP_FAILED)
		return 2;
	memset(&node, 0, sizeof(node));
	op_node_init(&node, OP_RESET8, (uint64_t *)dst, &src);
	err = bpfops_backend.add(&node, OP_RESET8);
	if (err)
		return 2;
	for (int i = 0; i < 10; i++)
		usleep(1000);
	/* Read only through the registered word: a read maps the zero page. */
	seen = *dst == src;
	printf("not-yet-present destination: after 10 sleeps %s\n",
	       seen ? "reset" : "not reset (the store was skipped)");
	*dst = 0;	/* the thread touches it: now present and writable */
	for (int i = 0; i < 10; i++)
		usleep(1000);
	printf("the same destination once the thread wrote it: after 10 sleeps %s\n",
	       *dst == src ? "reset" : "not reset");
	return 0;
}

int main(int argc, char **argv)
{
	struct ob_rseq *area;
	void *page;
	int err;

	reexec_without_glibc_rseq(argv, "bpf-fault", false);
	(void)argc;
	err = rseq_register_thread(REG_OWN, &area);
	if (err) {
		fprintf(stderr, "bpf-fault: rseq registration failed: %s\n", strerror(-err));
		return 2;
	}
	err = bpfops_thread_begin(1);
	if (err) {
		fprintf(stderr, "bpf-fault: %s (%s)\n", bpfops_refusal(err), strerror(-err));
		return 2;
	}
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 2;
	munmap(page, 4096);
	if (one("unmapped", page))
		return 2;
	/* leave the faulting one registered: both stay in the walk */
	page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED || one("read-only", page))
		return 2;
	if (not_present())
		return 2;
	bpfops_thread_end();
	printf("alive at the end: no signal, no error returned to the thread\n");
	return 0;
}
