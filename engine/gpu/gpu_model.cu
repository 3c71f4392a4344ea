// SPDX-License-Identifier: MIT
// The GPU model's life: one layout pass that both sizes the memory plan and places every tensor
// (the per-rank shapes and the options' checks first: gpu_shapes.cu), inputs and read-backs.
// Weight generation is gpu_model_gen.cu, the forward pass gpu_step.cu.
#define OMPI_SKIP_MPICXX 1 // instance.h includes mpi.h: the C API only
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#include "arbench/status.h"
#include "gpu/gpu_layout.h"
#include "model/engine_opts.h"
#include "model/wgen.h"

using arbk::bf16;

namespace {

// One bump allocator per device allocation; with base == NULL it only counts.
struct bump {
    char *base;
    size_t off;
};

template <typename P> void take(bump &b, P *&p, size_t n, size_t *kind)
{
    const size_t bytes = (n * sizeof(P) + 255) & ~(size_t)255;
    p = b.base ? reinterpret_cast<P *>(b.base + b.off) : nullptr;
    b.off += bytes;
    if (kind)
        *kind += bytes;
}

// Places every tensor (or, with NULL bases, only counts): weights, cache, activations.
void layout(arb_gpu_model_t *m, bump &w, bump &c, bump &a)
{
    const arb_gpu_shapes &s = m->s;
    const unsigned Tm = m->o.max_tokens, ctx = m->o.context, V = m->o.dims.vocab;
    arb_gpu_mem_t &mem = m->mem;
    mem = arb_gpu_mem_t{};
    take(w, m->embed, (size_t)V * s.H, &mem.embed);
    for (unsigned l = 0; l < s.Lz; l++) {
        arb_gpu_layer &L = m->layers[l];
        L.dense = l < m->o.dims.first_dense;
        take(w, L.attn_norm, s.H, &mem.norms_router);
        take(w, L.ffn_norm, s.H, &mem.norms_router);
        take(w, L.q_a_norm, s.rq, &mem.norms_router);
        take(w, L.kv_a_norm, s.rkv, &mem.norms_router);
        take(w, L.qkv_a, (size_t)s.qkva_w * s.H, &mem.attention);
        take(w, L.q_b, (size_t)s.nh_r * (s.dn + s.dr) * s.rq, &mem.attention);
        take(w, L.kv_b, (size_t)s.nh_r * (s.dn + s.dv) * s.rkv, &mem.attention);
        take(w, L.o_proj, (size_t)s.H * s.nh_r * s.dv, &mem.attention);
        take(c, L.cache_ckv, (size_t)ctx * s.rkv, &mem.kv_cache);
        take(c, L.cache_kpe, (size_t)ctx * s.dr, &mem.kv_cache);
        L.moe = arbk::moe_weights{};
        if (L.dense) {
            take(w, L.gate, (size_t)s.Id * s.H, &mem.dense_mlp);
            take(w, L.up, (size_t)s.Id * s.H, &mem.dense_mlp);
            take(w, L.down, (size_t)s.H * s.Id, &mem.dense_mlp);
            continue;
        }
        take(w, L.router, (size_t)s.E * s.H, &mem.norms_router);
        take(w, L.router_bias, s.E, &mem.norms_router);
        bf16 *sg, *su, *sd;
        take(w, sg, (size_t)s.Is * s.H, &mem.shared_expert);
        take(w, su, (size_t)s.Is * s.H, &mem.shared_expert);
        take(w, sd, (size_t)s.H * s.Is, &mem.shared_expert);
        L.moe.sh_gate = sg, L.moe.sh_up = su, L.moe.sh_down = sd;
        const size_t in_elems = (size_t)s.E * s.I * s.H; // gate, up and down have as many
        if (m->o.format == ARB_GPU_INT4) {
            uint32_t *g, *u, *dn;
            bf16 *gs, *us, *ds;
            take(w, g, in_elems / 8, &mem.routed_experts);
            take(w, u, in_elems / 8, &mem.routed_experts);
            take(w, dn, in_elems / 8, &mem.routed_experts);
            take(w, gs, in_elems / 32, &mem.routed_experts);
            take(w, us, in_elems / 32, &mem.routed_experts);
            take(w, ds, in_elems / 32, &mem.routed_experts);
            L.moe.gate = g, L.moe.up = u, L.moe.down = dn, L.moe.gate_s = gs, L.moe.up_s = us, L.moe.down_s = ds;
        } else {
            bf16 *g, *u, *dn;
            take(w, g, in_elems, &mem.routed_experts);
            take(w, u, in_elems, &mem.routed_experts);
            take(w, dn, in_elems, &mem.routed_experts);
            L.moe.gate = g, L.moe.up = u, L.moe.down = dn;
        }
        L.moe.H = (int)s.H, L.moe.I = (int)s.I, L.moe.Is = (int)s.Is, L.moe.E = (int)s.E;
    }
    m->aux = nullptr;
    if (m->o.naux)
        take(c, m->aux, (size_t)ctx * m->o.naux * s.H, &mem.kv_cache);
    take(w, m->final_norm, s.H, &mem.norms_router);
    take(w, m->lm_head, (size_t)s.Vr * s.H, &mem.lm_head);

    size_t *act = &mem.activations;
    take(a, m->tokens, Tm, act);
    take(a, m->pos0, 1, act);
    take(a, m->rope_cs, (size_t)ctx * (s.dr / 2), act);
    take(a, m->res, (size_t)Tm * s.H, act);
    take(a, m->h, (size_t)Tm * s.H, act);
    take(a, m->qkva, (size_t)Tm * s.qkva_w, act);
    take(a, m->qa, (size_t)Tm * s.rq, act);
    take(a, m->q, (size_t)Tm * s.nh_r * (s.dn + s.dr), act);
    take(a, m->qlat, (size_t)Tm * s.nh_r * s.rkv, act);
    take(a, m->qpe, (size_t)Tm * s.nh_r * s.dr, act);
    take(a, m->o_heads, (size_t)Tm * s.nh_r * s.dv, act);
    take(a, m->partial, (size_t)s.chunks * Tm * s.nh_r * (s.rkv + 4), act);
    take(a, m->router_logits, (size_t)Tm * s.E, act);
    take(a, m->route.coef, (size_t)arbk::kMaxSlots * arbk::kMaxT, act);
    take(a, m->route.uniq, arbk::kMaxSlots, act);
    take(a, m->route.n_uniq, 1, act);
    m->route.sh_part = nullptr, m->route.sh_ticket = nullptr;
    if (const size_t np = arbk::moe_sh_part_floats((int)s.H, (int)s.Is)) {
        take(a, m->route.sh_part, np, act);
        take(a, m->route.sh_ticket, (size_t)arbk::moe_sh_tickets((int)s.Is), act);
    }
    take(a, m->experts, (size_t)s.Lz * Tm * s.k, act);
    take(a, m->act_moe, (size_t)s.max_slots * arbk::kMaxT * s.I, act);
    take(a, m->act_sh, (size_t)arbk::kMaxT * s.Is, act);
    take(a, m->act_dense, (size_t)Tm * (s.Id ? s.Id : 1), act);
    take(a, m->logits, (size_t)Tm * s.Vr, act);
    take(a, m->best_logit, Tm, act);
    take(a, m->best_index, Tm, act);
    take(a, m->local_part, (size_t)Tm * s.H, act);
    take(a, m->tickets, ARB_GPU_TICKETS, act);
    m->qb_scratch = nullptr, m->qb_tickets = nullptr;
    if (m->o.fuse & ARB_FUSE_QB_ABSORB) { // the fused q_b + absorb's part sums and a ticket per head
        take(a, m->qb_scratch, arbk::mla_qb_absorb_scratch_floats((int)s.nh_r, (int)s.rkv), act);
        take(a, m->qb_tickets, s.nh_r, act);
    }
    m->uv_scratch = nullptr, m->uv_tickets = nullptr;
    if (m->o.fuse & ARB_FUSE_MERGE_UV) { // the fused merge + W_uv's block sums and a ticket per row
        take(a, m->uv_scratch, arbk::mla_merge_uv_scratch_floats((int)s.nh_r, (int)s.dv, (int)s.rkv), act);
        take(a, m->uv_tickets, (size_t)arbk::kMaxT * s.nh_r, act);
    }
    mem.total = mem.embed + mem.attention + mem.norms_router + mem.dense_mlp + mem.shared_expert +
                mem.routed_experts + mem.lm_head + mem.kv_cache + mem.activations;
}

arb_gpu_model_t *model_new(const arb_gpu_model_opts_t *opts, char *why, size_t len, arb_status_t *st)
{
    arb_gpu_model_t *m = static_cast<arb_gpu_model_t *>(calloc(1, sizeof *m));
    arb_gpu_shapes s;
    *st = arb_gpu_shapes_of(opts, &s, why, len);
    if (*st != ARB_OK) {
        free(m);
        return nullptr;
    }
    if (!m) {
        *st = ARB_ERR_SYSTEM;
        ARB_WHY(why, len, "gpu model: out of host memory");
        return nullptr;
    }
    m->o = *opts;
    m->s = s;
    memcpy(m->inv_freq, opts->dims.inv_freq, sizeof(double) * (s.dr / 2));
    m->o.dims.inv_freq = m->inv_freq;
    m->o.sites = nullptr; // copied into m->sites at create
    m->o.sites_t1 = nullptr;
    m->layers = static_cast<arb_gpu_layer *>(calloc(s.Lz, sizeof *m->layers));
    m->sites = static_cast<arb_gpu_site *>(calloc(4 * (size_t)s.Lz, sizeof *m->sites));
    if (!m->layers || !m->sites) {
        free(m->layers), free(m->sites), free(m);
        *st = ARB_ERR_SYSTEM;
        ARB_WHY(why, len, "gpu model: out of host memory for %u layers", s.Lz);
        return nullptr;
    }
    return m;
}

void model_free_host(arb_gpu_model_t *m)
{
    free(m->layers);
    free(m->sites);
    free(m);
}

} // namespace

double arb_gpu_expert_bytes(const arb_gpu_model_t *m)
{
    const double elems = 3.0 * m->s.I * m->s.H;
    return m->o.format == ARB_GPU_INT4 ? elems / 2 + elems / 32 * 2 : elems * 2;
}

extern "C" arb_status_t arb_gpu_model_plan(const arb_gpu_model_opts_t *opts, arb_gpu_mem_t *mem, char *why,
                                           size_t why_len)
{
    arb_status_t st;
    arb_gpu_model_t *m = model_new(opts, why, why_len, &st);
    if (!m)
        return st;
    bump w = {nullptr, 0}, c = {nullptr, 0}, a = {nullptr, 0};
    layout(m, w, c, a);
    *mem = m->mem;
    model_free_host(m);
    return ARB_OK;
}

extern "C" arb_status_t arb_gpu_model_create(const arb_gpu_model_opts_t *opts, arb_gpu_model_t **out, char *why,
                                             size_t why_len)
{
    arb_status_t st;
    *out = nullptr;
    arb_gpu_model_t *m = model_new(opts, why, why_len, &st);
    if (!m)
        return st;
    int dev = 0;
    ARB_CUDA_GOTO(st, cudaGetDevice(&dev), err_free_host, why, why_len);
    ARB_CUDA_GOTO(st, cudaDeviceGetAttribute(&m->sms, cudaDevAttrMultiProcessorCount, dev), err_free_host, why, why_len);
    {
        bump w = {nullptr, 0}, c = {nullptr, 0}, a = {nullptr, 0};
        layout(m, w, c, a);
        m->weight_bytes = w.off;
        const size_t sizes[3] = {w.off, c.off, a.off};
        void **dst[3] = {&m->weights, &m->cache, &m->act};
        const char *what[3] = {"weights", "KV cache", "activations"};
        for (int i = 0; i < 3; i++) {
            cudaError_t e = cudaMalloc(dst[i], sizes[i]);
            if (e != cudaSuccess)
                ARB_RAISE_GOTO(st, ARB_CUDA_STATUS_(e), err_free_dev, why, why_len,
                               "gpu model: cudaMalloc of %.3f GB for the %s: %s", sizes[i] / 1e9, what[i],
                               cudaGetErrorString(e));
        }
        w = {static_cast<char *>(m->weights), 0}, c = {static_cast<char *>(m->cache), 0},
        a = {static_cast<char *>(m->act), 0};
        layout(m, w, c, a);
    }
    ARB_CUDA_GOTO(st, cudaMemset(m->act, 0, m->mem.activations), err_free_dev, why, why_len);
    ARB_CUDA_GOTO(st, cudaMemset(m->experts, 0xff, sizeof(int32_t) * m->s.Lz * m->o.max_tokens * m->s.k), err_free_dev,
                  why, why_len);
    { // RoPE table (cos * m, sin * m) per position, from float64 (forward.md)
        const unsigned pairs = m->s.dr / 2, ctx = m->o.context;
        float2 *cs = static_cast<float2 *>(malloc(sizeof(float2) * pairs * ctx));
        if (!cs)
            ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err_free_dev, why, why_len, "gpu model: out of host memory for RoPE");
        for (unsigned p = 0; p < ctx; p++)
            for (unsigned i = 0; i < pairs; i++) {
                const double ang = (double)p * m->inv_freq[i];
                cs[(size_t)p * pairs + i] = make_float2((float)(cos(ang) * m->o.dims.rope_mscale),
                                                        (float)(sin(ang) * m->o.dims.rope_mscale));
            }
        cudaError_t e = cudaMemcpy(m->rope_cs, cs, sizeof(float2) * pairs * ctx, cudaMemcpyHostToDevice);
        free(cs);
        ARB_CUDA_GOTO(st, e, err_free_dev, why, why_len);
    }
    ARB_CUDA_GOTO(st, arbk::mla_setup((int)m->s.rkv, (int)m->s.dr, (int)m->s.nh_r, 0, m->o.attn_fill * m->sms,
                                                  m->o.attn_min_rows, m->o.attn_wide_from), err_free_dev, why, why_len);
    if (m->o.persistent)
        ARB_TRY_GOTO(st, arb_gpu_persist_setup(m, why, why_len), err_free_persist);
    // one input buffer per distinct instance, in site order: the T > 1 sites, then the T = 1 ones
    for (unsigned i = 0; i < 4 * m->s.Lz; i++) {
        arb_gpu_site &site = m->sites[i];
        const unsigned si = i % (2 * m->s.Lz);
        arb_inst_t *const *set = i < 2 * m->s.Lz || !opts->sites_t1 ? opts->sites : opts->sites_t1;
        site.inst = set ? set[si] : nullptr;
        site.part = m->local_part;
        if (!site.inst)
            continue;
        for (unsigned j = 0; j < i; j++)
            if (m->sites[j].inst == site.inst)
                site.part = m->sites[j].part;
        if (site.part != m->local_part)
            continue;
        void *p = nullptr;
        ARB_TRY_GOTO(st, arb_inst_alloc(site.inst, (size_t)m->o.max_tokens * m->s.H * 2, &p, why, why_len),
                     err_free_sites);
        site.part = static_cast<bf16 *>(p);
    }
    if (m->o.l2_side) { // --l2-side: the side branch's stream and its fork and join events
        ARB_CUDA_GOTO(st, cudaStreamCreateWithFlags(&m->side, cudaStreamNonBlocking), err_free_sites, why, why_len);
        ARB_CUDA_GOTO(st, cudaEventCreateWithFlags(&m->side_fork, cudaEventDisableTiming), err_free_sites, why, why_len);
        ARB_CUDA_GOTO(st, cudaEventCreateWithFlags(&m->side_join, cudaEventDisableTiming), err_free_sites, why, why_len);
    }
    *out = m;
    return ARB_OK;

err_free_sites:
    arb_gpu_model_destroy(m);
    return st;
err_free_persist:
    arb_gpu_persist_free(m);
err_free_dev:
    cudaFree(m->weights), cudaFree(m->cache), cudaFree(m->act);
err_free_host:
    model_free_host(m);
    return st;
}

extern "C" arb_status_t arb_gpu_model_set_input(arb_gpu_model_t *m, const uint32_t *tokens, unsigned T, unsigned pos0,
                                                void *stream, char *why, size_t why_len)
{
    if (T == 0 || T > m->o.max_tokens || (size_t)pos0 + T > m->o.context)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "gpu step: T %u at position %u: need 1 <= T <= %u and P0 + T <= %u", T,
                  pos0, m->o.max_tokens, m->o.context);
    int32_t in[ARB_GPU_MAX_T + 1];
    for (unsigned t = 0; t < T; t++) {
        if (tokens[t] >= m->o.dims.vocab)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "gpu step: token %u >= vocab_size %u", tokens[t], m->o.dims.vocab);
        in[t] = (int32_t)tokens[t];
    }
    in[T] = (int32_t)pos0;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    // From pageable memory: the copy has taken `in` when the call returns.
    ARB_CUDA_TRY(cudaMemcpyAsync(m->tokens, in, sizeof(int32_t) * T, cudaMemcpyHostToDevice, s), why, why_len);
    ARB_CUDA_TRY(cudaMemcpyAsync(m->pos0, in + T, sizeof(int32_t), cudaMemcpyHostToDevice, s), why, why_len);
    return ARB_OK;
}

namespace {

// A read-back of `bytes` from the device after the stream synchronized, for a step of T.
arb_status_t read_back(const arb_gpu_model_t *m, unsigned T, void *dst, const void *src, size_t bytes, char *why,
                       size_t why_len)
{
    if (T == 0 || T > m->o.max_tokens)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "gpu read: T %u outside 1 .. %u", T, m->o.max_tokens);
    ARB_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), why, why_len);
    return ARB_OK;
}

} // namespace

extern "C" arb_status_t arb_gpu_model_read_argmax(arb_gpu_model_t *m, unsigned T, float *best_logit,
                                                  uint32_t *best_index, char *why, size_t why_len)
{
    ARB_TRY(read_back(m, T, best_logit, m->best_logit, sizeof(float) * T, why, why_len));
    ARB_TRY(read_back(m, T, best_index, m->best_index, sizeof(uint32_t) * T, why, why_len));
    return arb_gpu_persist_check(m, why, why_len); // a persistent step's wait that gave up

}

extern "C" arb_status_t arb_gpu_model_read_logits(arb_gpu_model_t *m, unsigned T, float *logits, char *why,
                                                  size_t why_len)
{
    return read_back(m, T, logits, m->logits, sizeof(float) * T * m->s.Vr, why, why_len);
}

extern "C" arb_status_t arb_gpu_model_read_hidden(arb_gpu_model_t *m, unsigned T, uint16_t *hidden, char *why,
                                                  size_t why_len)
{
    return read_back(m, T, hidden, m->h, sizeof(uint16_t) * T * m->s.H, why, why_len);
}

extern "C" arb_status_t arb_gpu_model_read_aux(arb_gpu_model_t *m, unsigned pos0, unsigned T, uint16_t *out,
                                               char *why, size_t why_len)
{
    if (!m->aux || (size_t)pos0 + T > m->o.context)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len,
                  "target hidden states at positions %u .. %u: none kept (no draft layers, or past the cache of %u)", pos0,
                  pos0 + T - 1, m->o.context);
    const size_t row = (size_t)m->o.naux * m->s.H;
    ARB_CUDA_TRY(cudaMemcpy(out, m->aux + pos0 * row, sizeof(uint16_t) * T * row, cudaMemcpyDeviceToHost), why, why_len);
    return ARB_OK;
}

extern "C" arb_status_t arb_gpu_model_read_embed(arb_gpu_model_t *m, const uint32_t *tokens, unsigned T, uint16_t *out,
                                                 char *why, size_t why_len)
{
    for (unsigned t = 0; t < T; t++) {
        if (tokens[t] >= m->o.dims.vocab)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "embedding of token %u >= vocab_size %u", tokens[t], m->o.dims.vocab);
        ARB_CUDA_TRY(cudaMemcpy(out + (size_t)t * m->s.H, m->embed + (size_t)tokens[t] * m->s.H, sizeof(uint16_t) * m->s.H,
                                cudaMemcpyDeviceToHost),
                     why, why_len);
    }
    return ARB_OK;
}

extern "C" const void *arb_gpu_model_aux_device(const arb_gpu_model_t *m) { return m->aux; }
extern "C" const void *arb_gpu_model_embed_device(const arb_gpu_model_t *m) { return m->embed; }

extern "C" arb_status_t arb_gpu_model_read_experts(arb_gpu_model_t *m, unsigned T, int32_t *experts, char *why,
                                                   size_t why_len)
{
    const size_t per_layer = (size_t)T * m->s.k;
    ARB_TRY(read_back(m, T, experts, m->experts, sizeof(int32_t) * per_layer * m->s.Lz, why, why_len));
    for (unsigned l = 0; l < m->s.Lz; l++)
        if (m->layers[l].dense)
            for (size_t i = 0; i < per_layer; i++)
                experts[l * per_layer + i] = -1;
    return ARB_OK;
}

extern "C" unsigned arb_gpu_model_vocab_rank(const arb_gpu_model_t *m) { return m->s.Vr; }
extern "C" unsigned arb_gpu_model_vocab_base(const arb_gpu_model_t *m) { return m->s.V0; }
extern "C" const arb_gpu_mem_t *arb_gpu_model_mem(const arb_gpu_model_t *m) { return &m->mem; }

extern "C" void arb_gpu_model_step_bytes(const arb_gpu_model_t *m, unsigned T, unsigned pos0, const int32_t *experts,
                                         arb_gpu_step_bytes_t *out)
{
    const arb_gpu_shapes &s = m->s;
    *out = arb_gpu_step_bytes_t{};
    const double bf = 2.0;
    const double attn = ((double)s.qkva_w * s.H + (double)s.nh_r * (s.dn + s.dr) * s.rq +
                         (double)s.nh_r * (s.dn + s.dv) * s.rkv + (double)s.H * s.nh_r * s.dv) * bf;
    const double norms = (2.0 * s.H + s.rq + s.rkv) * bf;
    for (unsigned l = 0; l < s.Lz; l++) {
        out->attention += attn;
        out->other += norms;
        out->kv_cache += (double)(pos0 + T) * (s.rkv + s.dr) * bf;
        if (m->layers[l].dense) {
            out->dense_mlp += 3.0 * s.Id * s.H * bf;
            continue;
        }
        out->router += (double)s.E * s.H * bf + s.E * 4.0;
        out->shared_expert += 3.0 * s.Is * s.H * bf;
        unsigned distinct = 0;
        const int32_t *sel = experts + (size_t)l * T * s.k;
        for (unsigned i = 0; i < T * s.k; i++) {
            unsigned j = 0;
            while (j < i && sel[j] != sel[i])
                j++;
            distinct += j == i && sel[i] >= 0;
        }
        out->routed_experts += distinct * arb_gpu_expert_bytes(m);
    }
    out->lm_head = (double)s.Vr * s.H * bf;
    out->other += (double)T * s.H * bf + s.H * bf; // embedding rows, final norm
    out->total = out->attention + out->kv_cache + out->dense_mlp + out->shared_expert + out->routed_experts +
                 out->router + out->lm_head + out->other;
}

extern "C" void arb_gpu_model_destroy(arb_gpu_model_t *m)
{
    if (!m)
        return;
    for (unsigned i = 0; i < 4 * m->s.Lz; i++) { // free each distinct instance's buffer once, in site order
        arb_gpu_site &site = m->sites[i];
        if (!site.inst || site.part == m->local_part || !site.part)
            continue;
        bool first = true;
        for (unsigned j = 0; j < i; j++)
            if (m->sites[j].inst == site.inst)
                first = false;
        if (first)
            arb_inst_free(site.inst, site.part);
    }
    arb_gpu_persist_free(m);
    if (m->side_join)
        cudaEventDestroy(m->side_join);
    if (m->side_fork)
        cudaEventDestroy(m->side_fork);
    if (m->side)
        cudaStreamDestroy(m->side);
    cudaFree(m->weights), cudaFree(m->cache), cudaFree(m->act);
    model_free_host(m);
}
