/* SPDX-License-Identifier: MIT */
/* How much host memory the CPU reference of a --check-steps run may take (cpu_ref.h). */
#include "cpu/cpu_ref.h"

double arb_cpu_ref_host_budget(double mem_available, unsigned local_ranks, double *margin)
{
    if (mem_available < 0) {
        if (margin)
            *margin = 0;
        return ARB_CPU_REF_BUDGET_UNKNOWN;
    }
    /* the margin covers the rest of the process (MPI, the CUDA driver's pinned pages, the
     * step buffers) and whatever else the node starts meanwhile */
    double m = mem_available * ARB_CPU_REF_MARGIN_FRACTION;
    if (m < ARB_CPU_REF_MARGIN_MIN)
        m = ARB_CPU_REF_MARGIN_MIN;
    if (margin)
        *margin = m;
    double left = mem_available - m;
    if (left <= 0)
        return 0;
    return left / (local_ranks ? local_ranks : 1);
}
