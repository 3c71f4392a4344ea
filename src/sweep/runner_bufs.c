/* SPDX-License-Identifier: MIT */
/* The buffers both runners measure with (runner.h), through the instance's policy. */
#include <string.h>

#include "arbench/status.h"
#include "sweep/runner.h"

void arb_runner_bufs_free(arb_inst_t *inst, arb_runner_bufs_t *b)
{
    unsigned char **all[] = {&b->send, &b->recv, &b->x, &b->res, &b->out, &b->weight};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        arb_inst_free(inst, *all[i]);
        *all[i] = NULL;
    }
}

arb_status_t arb_runner_bufs_alloc(arb_inst_t *inst, const arb_plan_t *plan, size_t max_bytes, arb_runner_bufs_t *b,
                                   char *why, size_t why_len)
{
    memset(b, 0, sizeof *b);
    b->stride = arb_slot_stride(max_bytes);
    size_t slotted = b->stride * ARB_ROT;
    unsigned char **want_ar[] = {&b->send, &b->recv}, **want_fused[] = {&b->x, &b->res, &b->out};
    int fused = plan->op != ARB_OP_ALLREDUCE;
    unsigned char ***want = fused ? want_fused : want_ar;
    size_t nwant = fused ? 3 : 2;
    arb_status_t st = ARB_OK;
    for (size_t i = 0; i < nwant && st == ARB_OK; i++)
        st = arb_inst_alloc(inst, slotted, (void **)want[i], why, why_len);
    if (st == ARB_OK && fused)
        st = arb_inst_alloc(inst, (size_t)plan->hidden * 2 + 256, (void **)&b->weight, why, why_len);
    if (st != ARB_OK)
        arb_runner_bufs_free(inst, b);
    return st;
}
