/* SPDX-License-Identifier: MIT */
/*
 * The GPU model (engine/gpu/gpu_model.h) as a driver backend: eager steps timed with CUDA
 * events; graph mode captures one CUDA graph per step shape T at its first use and
 * replays it (the inputs live in device memory, set before each replay).
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "model/backend.h"
#include "gpu/gpu_dims.h"
#include "gpu/gpu_model.h"
#include "gpu/kernels/qb_fit.h"
#include "model/engine_opts.h"

typedef struct gpu_backend_model {
    arb_gpu_model_t *m;
    cudaStream_t stream;
    cudaEvent_t e0, e1;
    cudaGraphExec_t graph[ARB_GPU_MAX_T + 1]; /* by T */
    unsigned layers, topk;
} gpu_backend_model_t;

static double gpu_available(const arb_engine_setup_t *s, char *what, size_t len)
{
    size_t free_b = 0, total_b = 0;
    if (cudaSetDevice(s->cuda_device) != cudaSuccess || cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        snprintf(what, len, "device %d: cudaMemGetInfo failed", s->cuda_device);
        return -1;
    }
    snprintf(what, len, "device %d free of %.1f GB, cudaMemGetInfo", s->cuda_device, (double)total_b / 1e9);
    return (double)free_b;
}

static void gpu_destroy(void *model)
{
    gpu_backend_model_t *g = model;
    if (!g)
        return;
    for (unsigned t = 0; t <= ARB_GPU_MAX_T; t++)
        if (g->graph[t])
            cudaGraphExecDestroy(g->graph[t]);
    arb_gpu_model_destroy(g->m);
    if (g->e0)
        cudaEventDestroy(g->e0);
    if (g->e1)
        cudaEventDestroy(g->e1);
    if (g->stream)
        cudaStreamDestroy(g->stream);
    free(g);
}

/* The GPU model's options for this rank's shard and sites. */
static arb_status_t model_opts(const arb_engine_setup_t *s, arb_inst_t *const *sites, arb_inst_t *const *sites_t1,
                               arb_gpu_model_opts_t *o, char *why, size_t len)
{
    memset(o, 0, sizeof *o);
    ARB_TRY(arb_gpu_dims_from_config(s->cfg, &s->rope, s->tp_shape, s->shard_first, &o->dims, why, len));
    o->format = s->opts->weights == ARB_WEIGHTS_INT4 ? ARB_GPU_INT4 : ARB_GPU_BF16;
    o->seed = s->opts->seed;
    o->max_tokens = s->max_tokens;
    o->context = s->positions;
    o->sites = sites;
    o->sites_t1 = sites_t1;
    o->fusion = ARB_FUSION_AUTO;
    o->pdl = s->opts->pdl;
    o->l2_ahead = s->opts->l2_ahead;
    o->l2_side = s->opts->l2_side;
    o->side_upto = s->opts->side_upto;
    o->wave_fit = s->opts->wave_fit;
    o->wave_from = s->opts->wave_from;
    o->moe_stage = s->opts->moe_stage;
    o->moe_early = s->opts->moe_early;
    o->moe_order = s->opts->moe_order;
    o->attn_min_rows = (int)s->opts->attn_min_rows;
    o->attn_fill = (int)s->opts->attn_fill;
    o->attn_wide_from = (int)s->opts->attn_wide_from;
    o->fuse = arb_fuse_applied(s->opts->fuse, s->opts->fuse_given, s->opts->step_form == ARB_STEP_LAUNCHES,
                               (int)o->dims.q_lora, (int)o->dims.nope, (int)o->dims.rope, (int)o->dims.v_head,
                               (int)o->dims.kv_lora);
    o->persistent = s->opts->step_form == ARB_STEP_PERSISTENT ? 3 : s->opts->step_form == ARB_STEP_PERSISTENT_ATTN ? 1 : 0;
    if (s->naux > 4)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "gpu backend: %u draft layers to keep; at most 4", s->naux);
    o->naux = s->naux;
    for (unsigned i = 0; i < s->naux; i++) {
        if (s->aux_layers[i] >= s->cfg->num_hidden_layers)
            ARB_RAISE(ARB_ERR_INVALID, why, len, "gpu backend: hidden state of layer %u asked for, of %u layers",
                      s->aux_layers[i], s->cfg->num_hidden_layers);
        o->aux_layers[i] = s->aux_layers[i];
    }
    return ARB_OK;
}

static double gpu_model_bytes(const arb_engine_setup_t *s, char *why, size_t len)
{
    arb_gpu_model_opts_t o;
    arb_gpu_mem_t mem;
    if (model_opts(s, NULL, NULL, &o, why, len) != ARB_OK || arb_gpu_model_plan(&o, &mem, why, len) != ARB_OK)
        return -1;
    return (double)mem.total;
}

static arb_status_t gpu_create(const arb_engine_setup_t *s, arb_inst_t *const *sites, arb_inst_t *const *sites_t1,
                               void **model, char *why, size_t len)
{
    const arb_model_config_t *c = s->cfg;
    *model = NULL;
    if (s->shard_count != 1)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "gpu backend: one shard per rank (got %u)", s->shard_count);
    if (s->max_tokens > ARB_GPU_MAX_T)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "gpu backend: steps of %u tokens exceed the kernels' limit of %d (lower --spec-k or --prefill-chunk)",
                  s->max_tokens, ARB_GPU_MAX_T);
    gpu_backend_model_t *g = calloc(1, sizeof *g);
    if (!g)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    arb_status_t st;
    ARB_CUDA_GOTO(st, cudaSetDevice(s->cuda_device), err, why, len);
    ARB_CUDA_GOTO(st, cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking), err, why, len);
    ARB_CUDA_GOTO(st, cudaEventCreate(&g->e0), err, why, len);
    ARB_CUDA_GOTO(st, cudaEventCreate(&g->e1), err, why, len);
    arb_gpu_model_opts_t o;
    ARB_TRY_GOTO(st, model_opts(s, sites, sites_t1, &o, why, len), err);
    g->layers = c->num_hidden_layers, g->topk = c->num_experts_per_tok;
    ARB_TRY_GOTO(st, arb_gpu_model_create(&o, &g->m, why, len), err);
    if (s->wload) { /* --weights-dir: this rank's slices, checked before anything was allocated */
        arb_wplan_t plan;
        ARB_TRY_GOTO(st, arb_wload_plan(s->wload, c, &s->shard, &plan, NULL, why, len), err);
        st = arb_gpu_model_load(g->m, s->wload, &plan, s->load_progress, s->load_stats, why, len);
        arb_wplan_free(&plan);
        if (st != ARB_OK)
            goto err;
    } else {
        ARB_TRY_GOTO(st, arb_gpu_model_generate(g->m, why, len), err);
    }
    *model = g;
    return ARB_OK;
err:
    gpu_destroy(g);
    return st;
}

static arb_status_t gpu_step(void *model, const uint32_t *tokens, unsigned T, unsigned pos0, arb_mode_t mode,
                             double *us, char *why, size_t len)
{
    gpu_backend_model_t *g = model;
    if (T == 0 || T > ARB_GPU_MAX_T)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "gpu step: T %u outside 1..%d", T, ARB_GPU_MAX_T);
    ARB_TRY(arb_gpu_model_set_input(g->m, tokens, T, pos0, g->stream, why, len));
    if (mode == ARB_MODE_GRAPH && !g->graph[T]) {
        cudaGraph_t graph;
        ARB_CUDA_TRY(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal), why, len);
        arb_status_t st = arb_gpu_model_step(g->m, T, g->stream, why, len);
        cudaError_t ce = cudaStreamEndCapture(g->stream, &graph);
        if (st != ARB_OK)
            return st;
        ARB_CUDA_TRY(ce, why, len);
        ce = cudaGraphInstantiate(&g->graph[T], graph, 0);
        cudaGraphDestroy(graph);
        ARB_CUDA_TRY(ce, why, len);
    }
    ARB_CUDA_TRY(cudaEventRecord(g->e0, g->stream), why, len);
    if (mode == ARB_MODE_GRAPH)
        ARB_CUDA_TRY(cudaGraphLaunch(g->graph[T], g->stream), why, len);
    else
        ARB_TRY(arb_gpu_model_step(g->m, T, g->stream, why, len));
    ARB_CUDA_TRY(cudaEventRecord(g->e1, g->stream), why, len);
    ARB_CUDA_TRY(cudaStreamSynchronize(g->stream), why, len);
    float ms = 0;
    ARB_CUDA_TRY(cudaEventElapsedTime(&ms, g->e0, g->e1), why, len);
    *us = (double)ms * 1e3;
    return ARB_OK;
}

static arb_status_t gpu_argmax(void *model, unsigned T, float *best, uint32_t *index, char *why, size_t len)
{
    return arb_gpu_model_read_argmax(((gpu_backend_model_t *)model)->m, T, best, index, why, len);
}

static arb_status_t gpu_experts(void *model, unsigned T, int32_t *experts, char *why, size_t len)
{
    return arb_gpu_model_read_experts(((gpu_backend_model_t *)model)->m, T, experts, why, len);
}

static arb_status_t gpu_logits(void *model, unsigned T, float *out, unsigned *vr, unsigned *vb, char *why,
                               size_t len)
{
    gpu_backend_model_t *g = model;
    *vr = arb_gpu_model_vocab_rank(g->m);
    *vb = arb_gpu_model_vocab_base(g->m);
    return arb_gpu_model_read_logits(g->m, T, out, why, len);
}

static arb_status_t gpu_bandwidth(void *model, double *bps, char *why, size_t len)
{
    gpu_backend_model_t *g = model;
    return arb_gpu_read_bandwidth(g->m, 20, g->stream, bps, why, len);
}

static arb_status_t gpu_moe_bench(void *model, unsigned T, double *ours_us, double *ours_bytes, double *cublas_us,
                                  double *cublas_bytes, char *why, size_t len)
{
    gpu_backend_model_t *g = model;
    arb_gpu_moe_bench_t b;
    ARB_TRY(arb_gpu_moe_bench(g->m, T, 20, g->stream, &b, why, len));
    *ours_us = b.ours_us, *ours_bytes = b.ours_bytes, *cublas_us = b.cublas_us, *cublas_bytes = b.cublas_bytes;
    if (b.layers_timed < b.layers_total) /* a note with the success (backend.h) */
        snprintf(why, len,
                 "timed over the first %d of %d MoE layers (%.2f distinct experts each): the cuBLAS loop's bf16 "
                 "copies of the others do not fit beside the model",
                 b.layers_timed, b.layers_total, b.experts_per_layer);
    return ARB_OK;
}

static arb_status_t gpu_embed(void *model, const uint32_t *tokens, unsigned T, uint16_t *out, char *why, size_t len)
{
    return arb_gpu_model_read_embed(((gpu_backend_model_t *)model)->m, tokens, T, out, why, len);
}

static arb_status_t gpu_aux_hidden(void *model, unsigned pos0, unsigned T, uint16_t *out, char *why, size_t len)
{
    return arb_gpu_model_read_aux(((gpu_backend_model_t *)model)->m, pos0, T, out, why, len);
}

static arb_status_t gpu_device_inputs(void *model, const void **aux, const void **embed, void **stream, char *why,
                                      size_t len)
{
    gpu_backend_model_t *g = model;
    *aux = arb_gpu_model_aux_device(g->m), *embed = arb_gpu_model_embed_device(g->m), *stream = g->stream;
    if (!*aux)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "gpu backend: no target hidden states kept for a draft head");
    return ARB_OK;
}

#define GPU_PROFILE_REPS 15
#define GPU_CHAIN_REPS 21

static arb_status_t gpu_kernel_times(void *model, const uint32_t *tokens, unsigned T, unsigned pos0, int graph,
                                     int keep_sites, arb_kernel_times_t *out, char *why, size_t len)
{
    gpu_backend_model_t *g = model;
    double us[ARB_GPU_PROF_KINDS];
    memset(out, 0, sizeof *out);
    ARB_TRY(arb_gpu_model_set_input(g->m, tokens, T, pos0, g->stream, why, len));
    if (graph == 2) {
        if (keep_sites)
            ARB_RAISE(ARB_ERR_INVALID, why, len,
                      "the chain profile replays windows of one rank's step: not measured in a run of several ranks");
        arb_gpu_chain_layers_t cl;
        ARB_TRY(arb_gpu_model_profile_chain(g->m, T, GPU_CHAIN_REPS, g->stream, us, &out->step_us, &cl, why, len));
        snprintf(out->method, sizeof out->method,
                 "graph replay of windows: what each launch adds to the chain's end in the layers below (%u before "
                 "each in its window), medians of %d interleaved replays",
                 ARB_GPU_CHAIN_LEAD, GPU_CHAIN_REPS);
        out->nlayers = cl.n;
        for (unsigned i = 0; i < cl.n && i < 3; i++)
            out->layer[i] = cl.layer[i], out->layer_dense[i] = cl.dense[i], out->layer_us[i] = cl.us[i];
    } else if (graph) {
        unsigned keep = keep_sites ? (1u << ARB_GPU_PROF_SITE_A) | (1u << ARB_GPU_PROF_SITE_B) : 0;
        ARB_TRY(arb_gpu_model_profile_graph(g->m, T, GPU_PROFILE_REPS, keep, g->stream, us, &out->step_us, why, len));
        snprintf(out->method, sizeof out->method,
                 "graph replay: step minus step with the kind's nodes disabled, medians of %d interleaved replays",
                 GPU_PROFILE_REPS);
    } else {
        ARB_TRY(arb_gpu_model_profile(g->m, T, g->stream, us, why, len));
        out->step_us = 0;
        for (int k = 0; k < ARB_GPU_PROF_KINDS; k++)
            if (isfinite(us[k])) /* a kind with no launch of its own is NaN */
                out->step_us += us[k];
        snprintf(out->method, sizeof out->method, "eager, events between launches");
    }
    out->n = ARB_GPU_PROF_KINDS;
    for (int k = 0; k < ARB_GPU_PROF_KINDS; k++)
        out->name[k] = arb_gpu_prof_name(k), out->us[k] = us[k];
    return ARB_OK;
}

static const arb_backend_ops_t gpu_backend = {
    .name = "gpu",
    .available = gpu_available,
    .model_bytes = gpu_model_bytes,
    .create = gpu_create,
    .step = gpu_step,
    .argmax = gpu_argmax,
    .experts = gpu_experts,
    .logits = gpu_logits,
    .site_path = NULL, /* gpu_model.h does not report the path; the instance's fusion is recorded */
    .read_bandwidth = gpu_bandwidth,
    .moe_bench = gpu_moe_bench,
    .kernel_times = gpu_kernel_times,
    .embed = gpu_embed,
    .aux_hidden = gpu_aux_hidden,
    .device_inputs = gpu_device_inputs,
    .destroy = gpu_destroy,
};

const arb_backend_ops_t *arb_engine_backend_gpu(void)
{
    return &gpu_backend;
}
