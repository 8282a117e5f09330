/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pmu.h - the measured thread's hardware counters, where there are any.
 *
 * One perf_event_open() group on the calling thread, user and kernel:
 * cycles leads, then instructions, cache misses and dTLB load misses, each
 * where the CPU (or the hypervisor's virtual PMU) offers it. Where there
 * is no PMU (TCG, a VM without a virtual PMU) pmu_open() says why and
 * every read is skipped: the records then hold no counter, never a zero.
 * Nothing is opened unless OPBENCH_PMU asks for a counting pass (pmu.c):
 * count (the hardware group) or software (software events in its places,
 * a test of this code where there is no PMU); timed samples run without.
 */
#ifndef OPBENCH_PMU_H
#define OPBENCH_PMU_H

#include <stdbool.h>
#include <stdint.h>

enum pmu_event { PMU_CYCLES, PMU_INSNS, PMU_CACHE_MISSES, PMU_DTLB_MISSES, PMU_NR };

struct pmu_counts {
	uint64_t v[PMU_NR];
	uint64_t enabled, running;	/* ns the group was enabled, counting */
};

/* Open the group on this thread; false (and pmu_why()) without a PMU. */
bool pmu_open(void);
bool pmu_on(void);
const char *pmu_why(void);
/* Whether @e is counted (an event the CPU lacks is left out). */
bool pmu_has(enum pmu_event e);
const char *pmu_name(enum pmu_event e);
/* Read the group; false when it is off or the read failed. */
bool pmu_read(struct pmu_counts *c);
/* The "pmu" record: which events are counted, or why none is. */
void pmu_emit_record(const char *flavour, const char *kernel);
/*
 * The counters between @a and @b per loop, as '"pmu_<event>":<v>,' JSON
 * fields into stdout; nothing when the PMU is off. A group that was not
 * on the PMU the whole time (multiplexed) is scaled and says so.
 */
void pmu_emit_fields(const struct pmu_counts *a, const struct pmu_counts *b,
		     long loops);

#endif
