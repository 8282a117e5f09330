// SPDX-License-Identifier: GPL-2.0
/*
 * pmu.c - the measured thread's hardware counters (see pmu.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pmu.h"

struct pmu_def {
	const char *name;
	uint32_t type;
	uint64_t config;
};

static const struct pmu_def events[PMU_NR] = {
	[PMU_CYCLES] = { "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	[PMU_INSNS] = { "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	[PMU_CACHE_MISSES] = { "cache_misses", PERF_TYPE_HARDWARE,
			       PERF_COUNT_HW_CACHE_MISSES },
	[PMU_DTLB_MISSES] = { "dtlb_load_misses", PERF_TYPE_HW_CACHE,
			      PERF_COUNT_HW_CACHE_DTLB |
			      (PERF_COUNT_HW_CACHE_OP_READ << 8) |
			      (PERF_COUNT_HW_CACHE_RESULT_MISS << 16) },
};

/*
 * OPBENCH_PMU selects the pass:
 *   unset, off  no counters: the timed pass, the default. Counters live
 *               during timed samples cost every switch of the measured
 *               thread a save and a restore (under KVM the PMU's MSR
 *               writes trap to the host), so times are taken without them.
 *   count       the hardware group: a counting pass, run apart from the
 *               timed one (microbench/native-run.sh), whose samples are
 *               read for their counters only.
 *   software    the same group of software events in their place (task
 *               clock for cycles, context switches, page faults): a
 *               counting pass that tests the reading, scaling and records
 *               where there is no PMU; the record names them.
 */
static const struct pmu_def software[PMU_NR] = {
	[PMU_CYCLES] = { "task_clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	[PMU_INSNS] = { "context_switches", PERF_TYPE_SOFTWARE,
			PERF_COUNT_SW_CONTEXT_SWITCHES },
	[PMU_CACHE_MISSES] = { "page_faults", PERF_TYPE_SOFTWARE,
			       PERF_COUNT_SW_PAGE_FAULTS },
	[PMU_DTLB_MISSES] = { "cpu_migrations", PERF_TYPE_SOFTWARE,
			      PERF_COUNT_SW_CPU_MIGRATIONS },
};
static const char *name[PMU_NR];
static bool software_mode, counting_pass;

static int fd[PMU_NR] = { -1, -1, -1, -1 };
static int slot[PMU_NR];	/* position in the group's read, or -1 */
static int nr_open;
static char why[160] = "not opened";

static int perf_open(struct perf_event_attr *a, int group)
{
	return syscall(__NR_perf_event_open, a, 0, -1, group, PERF_FLAG_FD_CLOEXEC);
}

bool pmu_open(void)
{
	const char *mode = getenv("OPBENCH_PMU");
	bool sw = mode && !strcmp(mode, "software");

	software_mode = sw;
	if (!mode || !*mode || !strcmp(mode, "off")) {
		snprintf(why, sizeof(why), "off in timed samples (OPBENCH_PMU=count counts, in a pass of its own)");
		return false;
	}
	if (!sw && strcmp(mode, "count")) {
		fprintf(stderr, "opbench: OPBENCH_PMU=%s: want off (the default), count or software\n",
			mode);
		exit(2);
	}
	counting_pass = true;
	for (int e = 0; e < PMU_NR; e++) {
		struct perf_event_attr a = {
			.size = sizeof(a),
			.type = sw ? software[e].type : events[e].type,
			.config = sw ? software[e].config : events[e].config,
			.exclude_hv = 1,
			.disabled = e == PMU_CYCLES,
			.read_format = PERF_FORMAT_GROUP |
				       PERF_FORMAT_TOTAL_TIME_ENABLED |
				       PERF_FORMAT_TOTAL_TIME_RUNNING,
		};

		slot[e] = -1;
		name[e] = sw ? software[e].name : events[e].name;
		fd[e] = perf_open(&a, e == PMU_CYCLES ? -1 : fd[PMU_CYCLES]);
		if (fd[e] < 0 && e == PMU_CYCLES) {
			snprintf(why, sizeof(why), "perf_event_open(cycles): %s%s",
				 strerror(errno), errno == ENOENT || errno == EOPNOTSUPP ?
				 ": no hardware PMU here" : errno == EACCES ?
				 ": see /proc/sys/kernel/perf_event_paranoid" : "");
			return false;
		}
		if (fd[e] >= 0)
			slot[e] = nr_open++;
	}
	ioctl(fd[PMU_CYCLES], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
	why[0] = '\0';
	return true;
}

bool pmu_on(void)
{
	return fd[PMU_CYCLES] >= 0;
}

const char *pmu_why(void)
{
	return why;
}

bool pmu_has(enum pmu_event e)
{
	return pmu_on() && slot[e] >= 0;
}

const char *pmu_name(enum pmu_event e)
{
	return name[e] ? name[e] : events[e].name;
}

bool pmu_read(struct pmu_counts *c)
{
	uint64_t buf[3 + PMU_NR];
	ssize_t want = (3 + nr_open) * sizeof(uint64_t);

	if (!pmu_on() || read(fd[PMU_CYCLES], buf, sizeof(buf)) != want)
		return false;
	c->enabled = buf[1];
	c->running = buf[2];
	for (int e = 0; e < PMU_NR; e++)
		c->v[e] = slot[e] >= 0 ? buf[3 + slot[e]] : 0;
	return true;
}

void pmu_emit_record(const char *flavour, const char *kernel)
{
	printf("{\"kind\":\"pmu\",\"flavour\":\"%s\",\"kernel\":\"%s\","
	       "\"pass\":\"%s\",\"available\":%s,\"source\":\"%s\",\"events\":[",
	       flavour, kernel, counting_pass ? "count" : "timed",
	       pmu_on() ? "true" : "false", software_mode ? "software" : "hardware");
	for (int e = 0, n = 0; e < PMU_NR; e++)
		if (pmu_has(e))
			printf("%s\"%s\"", n++ ? "," : "", pmu_name(e));
	printf("],\"why\":\"%s\"}\n", why);
	fflush(stdout);
}

void pmu_emit_fields(const struct pmu_counts *a, const struct pmu_counts *b,
		     long loops)
{
	uint64_t en = b->enabled - a->enabled, run = b->running - a->running;
	double scale;

	if (!pmu_on() || loops <= 0)
		return;
	if (!run) {
		/* Never on the PMU in this sample (others held it): say so. */
		printf("\"pmu_unscheduled\":true,");
		return;
	}
	scale = (double)en / run;
	for (int e = 0; e < PMU_NR; e++)
		if (pmu_has(e))
			printf("\"pmu_%s\":%.3f,", pmu_name(e),
			       (double)(b->v[e] - a->v[e]) * scale / loops);
	if (run != en)
		printf("\"pmu_multiplexed\":%.4f,", (double)run / en);
}
