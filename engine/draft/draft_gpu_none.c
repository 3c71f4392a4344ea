/* SPDX-License-Identifier: MIT */
/* A build without the GPU engine: the GPU draft head does not exist (the gpu backend does
 * not either, so nothing reaches these but the refusal). */
#include "draft/draft_gpu.h"

#include "arbench/status.h"

arb_status_t arb_draft_gpu_create(const arb_draft_cpu_opts_t *o, arb_draft_weights_t *w, arb_draft_gpu_t **out,
                                  char *why, size_t len)
{
    (void)o;
    *out = NULL;
    arb_draft_weights_free(w);
    ARB_RAISE(ARB_ERR_INVALID, why, len, "draft head: this build has no GPU engine (no CUDA)");
}

arb_status_t arb_draft_gpu_step(arb_draft_gpu_t *m, const void *aux, unsigned from, const void *embed,
                                const uint32_t *tokens, unsigned T, unsigned pos0, void *stream, char *why, size_t len)
{
    (void)m, (void)aux, (void)from, (void)embed, (void)tokens, (void)T, (void)pos0, (void)stream;
    ARB_RAISE(ARB_ERR_INVALID, why, len, "draft head: this build has no GPU engine (no CUDA)");
}

void arb_draft_gpu_argmax(const arb_draft_gpu_t *m, unsigned t, float *best, uint32_t *draft_id)
{
    (void)m, (void)t;
    *best = 0, *draft_id = 0;
}

uint32_t arb_draft_gpu_target_id(const arb_draft_gpu_t *m, uint32_t draft_id)
{
    (void)m;
    return draft_id;
}

void arb_draft_gpu_destroy(arb_draft_gpu_t *m) { (void)m; }
