/* SPDX-License-Identifier: MIT */
/* Built without CUDA: the GPU runner declines and no device is ever visible. */
#include <stdio.h>

#include "arbench/status.h"
#include "sweep/runner.h"

int arb_gpu_count(char *why, size_t why_len)
{
    snprintf(why, why_len, "arbench was built without CUDA (no nvcc at configure time, or -Dcuda=disabled)");
    return 0;
}

arb_status_t arb_gpu_select(int device, arb_gpu_info_t *info, char *why, size_t why_len)
{
    (void)device;
    (void)info;
    ARB_RAISE(ARB_DECLINE, why, why_len, "arbench was built without CUDA");
}

static arb_status_t none_create(arb_inst_t *inst, const arb_plan_t *plan, size_t max_bytes, arb_runner_t **out,
                                char *why, size_t why_len)
{
    (void)inst;
    (void)plan;
    (void)max_bytes;
    (void)out;
    ARB_RAISE(ARB_DECLINE, why, why_len, "arbench was built without CUDA");
}

static arb_status_t none_run(arb_runner_t *r, const arb_point_t *pt, arb_point_out_t *out)
{
    (void)r;
    (void)pt;
    return out->status = ARB_DECLINE;
}

static void none_destroy(arb_runner_t *r) { (void)r; }

const arb_runner_ops_t arb_runner_gpu = {
    .backend = "cuda",
    .create = none_create,
    .run = none_run,
    .destroy = none_destroy,
};
