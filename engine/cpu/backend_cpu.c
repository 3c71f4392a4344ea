/* SPDX-License-Identifier: MIT */
/* The CPU reference as a driver backend (engine/model/backend.h): eager steps, host memory. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arbench/status.h"
#include "model/backend.h"
#include "cpu/cpu_ref_model.h" /* the model's config and options: embed and aux_hidden */
#include "model/memplan.h"

static double cpu_available(const arb_engine_setup_t *s, char *what, size_t len)
{
    (void)s;
    snprintf(what, len, "host MemAvailable, shared by this node's ranks");
    return arb_memplan_host_available();
}

static arb_status_t cpu_create(const arb_engine_setup_t *s, arb_inst_t *const *sites, arb_inst_t *const *sites_t1,
                               void **model, char *why, size_t len)
{
    arb_cpu_model_opts_t o = {.cfg = s->cfg, .format = s->opts->weights, .seed = s->opts->seed,
                              .tp_shape = s->tp_shape, .shard_first = s->shard_first,
                              .shard_count = s->shard_count, .max_tokens = s->max_tokens,
                              .context = s->positions, .sites = sites, .sites_t1 = sites_t1,
                              .fusion = ARB_FUSION_AUTO, .naux = s->naux, .aux_layers = s->aux_layers,
                              .wload = s->wload, .load_progress = s->load_progress, .load_stats = s->load_stats};
    return arb_cpu_model_create(&o, (arb_cpu_model_t **)model, why, len);
}

static arb_status_t cpu_step(void *model, const uint32_t *tokens, unsigned T, unsigned pos0, arb_mode_t mode,
                             double *us, char *why, size_t len)
{
    if (mode != ARB_MODE_EAGER)
        ARB_RAISE(ARB_DECLINE, why, len, "the cpu backend runs eager steps only");
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    arb_status_t st = arb_cpu_model_step(model, tokens, T, pos0, why, len);
    clock_gettime(CLOCK_MONOTONIC, &b);
    *us = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
    return st;
}

static arb_status_t cpu_argmax(void *model, unsigned T, float *best, uint32_t *index, char *why, size_t len)
{
    (void)why, (void)len;
    for (unsigned t = 0; t < T; t++)
        arb_cpu_model_argmax(model, t, &best[t], &index[t]);
    return ARB_OK;
}

static arb_status_t cpu_experts(void *model, unsigned T, int32_t *experts, char *why, size_t len)
{
    (void)why, (void)len;
    const arb_cpu_model_t *m = model;
    memcpy(experts, arb_cpu_model_experts(m), sizeof(int32_t) * arb_cpu_model_experts_len(m, T));
    return ARB_OK;
}

static arb_status_t cpu_logits(void *model, unsigned T, float *out, unsigned *vr, unsigned *vb, char *why,
                               size_t len)
{
    (void)why, (void)len;
    *vr = arb_cpu_model_vocab_rank(model);
    *vb = arb_cpu_model_vocab_base(model);
    memcpy(out, arb_cpu_model_logits(model), sizeof(float) * T * *vr);
    return ARB_OK;
}

static arb_fusion_t cpu_site_path(void *model, unsigned site)
{
    return arb_cpu_model_site_path(model, site);
}

static arb_status_t cpu_embed(void *model, const uint32_t *tokens, unsigned T, uint16_t *out, char *why, size_t len)
{
    const arb_cpu_model_t *m = model;
    const unsigned H = m->c->hidden_size;
    for (unsigned t = 0; t < T; t++) {
        if (tokens[t] >= m->c->vocab_size)
            ARB_RAISE(ARB_ERR_INVALID, why, len, "embedding of token %u >= vocab_size %u", tokens[t], m->c->vocab_size);
        arb_cpu_model_embed(m, tokens[t], out + (size_t)t * H);
    }
    return ARB_OK;
}

static arb_status_t cpu_aux_hidden(void *model, unsigned pos0, unsigned T, uint16_t *out, char *why, size_t len)
{
    const arb_cpu_model_t *m = model;
    const size_t row = (size_t)m->o.naux * m->c->hidden_size;
    for (unsigned t = 0; t < T; t++) {
        const uint16_t *a = arb_cpu_model_aux(m, pos0 + t);
        if (!a)
            ARB_RAISE(ARB_ERR_INVALID, why, len, "target hidden states at position %u: none kept (no draft layers, or past the cache)", pos0 + t);
        memcpy(out + t * row, a, row * sizeof *out);
    }
    return ARB_OK;
}

static void cpu_destroy(void *model)
{
    arb_cpu_model_destroy(model);
}

const arb_backend_ops_t arb_engine_backend_cpu = {
    .name = "cpu",
    .available = cpu_available,
    .model_bytes = NULL,
    .create = cpu_create,
    .step = cpu_step,
    .argmax = cpu_argmax,
    .experts = cpu_experts,
    .logits = cpu_logits,
    .site_path = cpu_site_path,
    .read_bandwidth = NULL,
    .moe_bench = NULL,
    .kernel_times = NULL,
    .embed = cpu_embed,
    .aux_hidden = cpu_aux_hidden,
    .destroy = cpu_destroy,
};
