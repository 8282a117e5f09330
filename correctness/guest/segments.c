// SPDX-License-Identifier: GPL-2.0
/*
 * segments - RSEQ operations whose destinations lie in many 256 MiB
 * segments, reset after every switch.
 *
 * On powerpc book3s/32 with KUAP, allow_user_access() opens for writing
 * only the 256 MiB segment of the address it is given. A kernel that opens
 * one user access region for the whole walk then faults on the first
 * destination outside that segment, with page faults disabled: the slow
 * path fails, and either retries without end (the thread never returns to
 * user space) or kills the thread. A kernel that opens a region per access
 * there (series v3, ARCH_RSEQ_OP_USER_ACCESS_PER_ADDRESS) resets them all.
 * On other architectures the test passes on every series: a region opens
 * all of user space.
 *
 * Usage: segments [-k SEGMENTS] [-r ROUNDS]   (defaults 6 and 200)
 * Maps one page in each of SEGMENTS segments (hints 0x20000000 apart from
 * 0x20000000; a hint the kernel moves elsewhere is used all the same, and
 * the segments reached are printed), registers an RSEQ_OP_RESET of a long
 * (4 bytes on a 32-bit program: 32-bit kernels refuse 8-byte resets) per
 * page and one for a word in .bss, then ROUNDS times: sets every word to
 * 1, sleeps until the thread was switched out, and checks every word is 0.
 * Run with glibc's rseq registration off (it registers its own area).
 * Exit status: 0 pass, 1 fail, 4 skip (kernel without RSEQ operations).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/prctl.h>
#include <linux/rseq.h>

#include "sched_out.h"

#define SIG		0x53053053
#define MAX_SEGS	14

static __thread struct rseq area __attribute__((aligned(64)));
static struct rseq_op_reset ops[MAX_SEGS + 1];
static unsigned long bss_word;

int main(int argc, char **argv)
{
	unsigned long size = getauxval(AT_RSEQ_FEATURE_SIZE);
	volatile unsigned long *words[MAX_SEGS + 1];
	int nsegs = 6, rounds = 200, n = 0, opt, r, i, bad = 0;
	unsigned long page = sysconf(_SC_PAGESIZE);

	while ((opt = getopt(argc, argv, "k:r:")) != -1) {
		if (opt == 'k')
			nsegs = atoi(optarg);
		else if (opt == 'r')
			rounds = atoi(optarg);
		else
			return fprintf(stderr, "usage: segments [-k SEGMENTS] [-r ROUNDS]\n"), 2;
	}
	if (nsegs < 1 || nsegs > MAX_SEGS || rounds < 1)
		return fprintf(stderr, "segments: -k takes 1 to %d, -r at least 1\n", MAX_SEGS), 2;

	if (size < 32)
		size = 32;
	if (size > sizeof(area))
		size = sizeof(area);
	if (syscall(__NR_rseq, &area, (unsigned int)size, 0, SIG)) {
		fprintf(stderr, "segments: rseq registration failed: %s%s\n", strerror(errno),
			errno == EBUSY ? " (set GLIBC_TUNABLES=glibc.pthread.rseq=0)" : "");
		return 1;
	}
	if (!(area.flags & RSEQ_CS_FLAG_RSEQ_OP_AVAILABLE)) {
		printf("segments: kernel without RSEQ operations (RSEQ_CS_FLAG_RSEQ_OP_AVAILABLE clear): skip\n");
		return 4;
	}

	words[n++] = &bss_word;
	for (i = 0; i < nsegs; i++) {
		uintptr_t hint = 0x20000000UL + 0x20000000UL * (uintptr_t)i;
		void *p = mmap((void *)hint, page, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			perror("segments: mmap");
			return 1;
		}
		words[n++] = p;
	}
	printf("segments: %d destinations, segments (address >> 28):", n);
	for (i = 0; i < n; i++)
		printf(" %#lx", (unsigned long)((uintptr_t)words[i] >> 28));
	printf("; rseq area in %#lx\n", (unsigned long)((uintptr_t)&area >> 28));
	fflush(stdout);

	for (i = 0; i < n; i++) {
		ops[i].node.type = RSEQ_OP_RESET;
		ops[i].dst = (uintptr_t)words[i];
		ops[i].len = sizeof(long);
		if (prctl(PR_RSEQ_OP, PR_RSEQ_OP_REGISTER, &ops[i], 0, 0)) {
			fprintf(stderr, "segments: PR_RSEQ_OP_REGISTER of destination %d refused: %s\n",
				i, strerror(errno));
			return 1;
		}
	}

	for (r = 0; r < rounds; r++) {
		for (i = 0; i < n; i++)
			*words[i] = 1;
		sched_out();
		for (i = 0; i < n; i++) {
			if (*words[i] != 0) {
				if (bad < 10)
					fprintf(stderr, "segments: round %d: destination %d at %p not reset\n",
						r, i, (void *)words[i]);
				bad++;
			}
		}
	}
	if (bad) {
		printf("segments: %d of %d resets missing\n", bad, rounds * n);
		return 1;
	}
	printf("segments: %d rounds, every one of %d destinations reset after each switch\n",
	       rounds, n);
	return 0;
}
