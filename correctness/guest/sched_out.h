/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sched_out.h - leave the CPU until the scheduler has switched this thread
 * out, for the guest programs that check what RSEQ operations did on the
 * way back (rfc_client.c, segments.c).
 */
#ifndef SCHED_OUT_H
#define SCHED_OUT_H

#include <poll.h>
#include <sys/resource.h>

/* Voluntary and involuntary switches of this thread so far. */
static long switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

/* Sleep a millisecond at a time until a switch happened. */
static void sched_out(void)
{
	long before = switches();

	do {
		poll(NULL, 0, 1);
	} while (switches() == before);
}

#endif /* SCHED_OUT_H */
