/* SPDX-License-Identifier: GPL-2.0 */
/*
 * minops.h - registration of operations with the minimal kernel-owned ABI
 * (the min flavour, PR_RSEQ_OPS): what reg.c calls instead of
 * prctl(PR_RSEQ_OP) when opbench runs with --via min.
 */
#ifndef OPBENCH_MINOPS_H
#define OPBENCH_MINOPS_H

#include "reg.h"

/* reg.c's ops_backend for the handle ABI (opbench --via min). */
extern const struct ops_backend minops_backend;

#endif /* OPBENCH_MINOPS_H */
