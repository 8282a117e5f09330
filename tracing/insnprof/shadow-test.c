// SPDX-License-Identifier: GPL-2.0
/*
 * shadow-test.c - run the profiler's shadow stack (shadow.c) on a synthetic
 * instruction stream, for the host tests (tests/test_insnprof.py).
 *
 *   shadow-test [ENTRIES] < stream
 *   shadow-test --decode HEXBYTES
 *
 * A stream line is "CPU PC KIND LEN": the vCPU, the address in hex, the
 * kind (o other, c call, r ret, i iret, s syscall, y sysret, b begin
 * marker, e end marker) and the length in bytes. Output: the folded stacks
 * (addresses in hex), then "counts" lines with the counters of each vCPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shadow.h"

#define CPUS	4

static void print(const char *line, void *arg)
{
	(void)arg;
	puts(line);
}

int main(int argc, char **argv)
{
	static struct sp_cpu cpu[CPUS];
	struct sp_range *ent = NULL;
	struct sp_tree t;
	size_t nent = 0;
	char line[256];

	if (argc > 2 && !strcmp(argv[1], "--decode")) {
		/* shadow-test --decode HEXBYTES: the kind sp_decode() gives */
		static const char *const names[] = {
			"other", "call", "ret", "iret", "syscall", "sysret",
			"begin", "end",
		};
		uint8_t b[16];
		size_t n = 0;

		for (const char *h = argv[2]; h[0] && h[1] && n < sizeof(b); h += 2)
			sscanf(h, "%2hhx", &b[n++]);
		puts(names[sp_decode(b, n)]);
		return 0;
	}
	if (argc > 1 && sp_read_entries(argv[1], &ent, &nent)) {
		fprintf(stderr, "shadow-test: cannot read entries from %s\n", argv[1]);
		return 2;
	}
	if (sp_tree_init(&t))
		return 1;
	for (int i = 0; i < CPUS; i++)
		sp_cpu_init(&cpu[i], &t, ent, nent);
	while (fgets(line, sizeof(line), stdin)) {
		static const char kinds[] = "ocrisybe";
		unsigned long long pc;
		unsigned int len;
		int c;
		char k;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%d %llx %c %u", &c, &pc, &k, &len) != 4 ||
		    c < 0 || c >= CPUS) {
			fprintf(stderr, "shadow-test: bad line: %s", line);
			return 2;
		}
		for (int i = 0; kinds[i]; i++) {
			if (kinds[i] == k) {
				sp_exec(&cpu[c], pc, (enum sp_kind)i, pc + len);
				break;
			}
		}
	}
	sp_fold(&t, print, NULL);
	for (int i = 0; i < CPUS; i++) {
		struct sp_counts *n = &cpu[i].c;

		if (!n->windows)
			continue;
		printf("counts cpu=%d", i);
		sp_format_counts(stdout, n);
		printf(" depth=%d\n", cpu[i].depth);
	}
	return 0;
}
