// SPDX-License-Identifier: MIT
// One step of T tokens on the GPU: engine/forward.md's "One step", as a list of launches
// and the two call sites per layer in model order (llama2.c's transformer()). Shapes are
// per rank (tp_shape K): nh_r heads, I_r intermediate rows. Token ids and P0 are read from
// device memory (set_input), so a capture of this function replays as any step of this T.
#define OMPI_SKIP_MPICXX 1 // instance.h includes mpi.h: the C API only
#include <cmath>
#include <cstdlib>

#include "arbench/status.h"
#include "gpu/gpu_layout.h"
#include "model/engine_opts.h"
#include "rmsnorm/rmsnorm.h"

using namespace arbk;

namespace {

// After a launch of `kind`: an event when the step is being profiled (its nodes filed by kind
// when it is captured for the graph profile), nothing otherwise.
void mark(arb_gpu_model_t *m, cudaStream_t st, int kind)
{
    if (m->prof_graph) {
        arb_gpu_prof_graph_mark(m, st, kind);
        return;
    }
    if (!m->prof_ev || m->prof_n >= m->prof_cap)
        return;
    cudaEventRecord(m->prof_ev[m->prof_n], st);
    m->prof_kind[m->prof_n++] = kind;
}

// Site `i`: res += allreduce(part); h = rmsnorm(res, norm) (the fused op of the ABI, or on
// one rank without an instance: the residual + RMSNorm kernel on this rank's part alone).
arb_status_t call_site(arb_gpu_model_t *m, unsigned i, const bf16 *norm, unsigned T, cudaStream_t st, char *why,
                       size_t len)
{
    const arb_gpu_site &site = arb_gpu_site_at(m, i, T);
    if (!site.inst)
        return arb_rmsnorm_residual_launch_pdl(m->res, site.part, norm, m->h, T, m->s.H, m->o.dims.rms_eps, m->o.pdl, st,
                                               why, len);
    const arb_rmsnorm_args_t args = {site.part, m->res, norm, m->h, T, m->s.H, m->o.dims.rms_eps};
    return arb_inst_allreduce_rmsnorm(site.inst, &args, m->o.fusion, st, nullptr, why, len);
}

// --l2-side: a's ranges pulled toward L2 on the side branch (l2_pull.cu), in a step of T tokens
// up to --l2-side-upto, once what the step has launched on st so far is done (the fork: an event
// on st that the side stream waits for); nothing on st waits for the pull until the step's end
// (side_join). The event between two launches on st leaves their programmatic edge as it was
// (test_engine_gpu_persist counts the captured step's programmatic edges with and without it).
arb_status_t side_pull(arb_gpu_model_t *m, unsigned T, cudaStream_t st, const l2_pulls &a, char *why, size_t len)
{
    if (!a.n || (m->o.side_upto && T > m->o.side_upto)) // --l2-side-upto: not in a step of T tokens
        return ARB_OK;
    ARB_CUDA_TRY(cudaEventRecord(m->side_fork, st), why, len);
    ARB_CUDA_TRY(cudaStreamWaitEvent(m->side, m->side_fork, 0), why, len);
    ARB_CUDA_TRY(l2_pull(m->side, a), why, len);
    m->side_forked = 1;
    return ARB_OK;
}

// A fork's ranges: at most seven (the cache's two, o_proj, the router, the shared expert's three), so
// none is dropped.
static_assert(kL2PullRanges >= 7, "l2_pulls holds every range a fork of the step names");
void pull_add(l2_pulls &a, const void *p, size_t bytes)
{
    if (a.n < kL2PullRanges)
        a.r[a.n++] = {p, bytes};
}

// MLA attention of layer l; leaves this rank's partial o_proj output in site 2l's buffer.
arb_status_t attention(arb_gpu_model_t *m, unsigned l, unsigned T, const launch_ctx &lc, char *why, size_t len)
{
    const arb_gpu_shapes &s = m->s;
    const arb_gpu_layer &L = m->layers[l];
    const int t = (int)T, H = s.H, qw = s.nh_r * (s.dn + s.dr), ow = s.nh_r * s.dv;
    // qkva = h @ [q_a ; kv_a]^T                                   [T x (rq + rkv + dr)]
    // then, by its last block (no launch of its own, so no mla_prep row in the profiles):
    // qa = q_a_layernorm(qkva[:, :rq])                             [T x rq]
    // cache_ckv[P] = kv_a_layernorm(qkva[:, rq:rq+rkv]); cache_kpe[P] = rope(qkva[:, rq+rkv:], P)
    // --wave-fit: qkv_a's grid (two waves at T = 1 on an H200) and o_proj's folded into one,
    // in steps of at least --wave-fit-from tokens
    launch_ctx lq = lc, lo = lc;
    lq.wave = (m->o.wave_fit & ARB_WAVE_FIT_QKV_A) && T >= m->o.wave_from;
    lo.wave = (m->o.wave_fit & ARB_WAVE_FIT_O_PROJ) && T >= m->o.wave_from;
    // --fuse prep_qb: those three in q_b's launch (mla_qb.cu), qkv_a's launch the projection only
    const bool prep_qb = (m->o.fuse & ARB_FUSE_PREP_QB) != 0;
    ARB_CUDA_TRY(qkva_prep(lq, L.qkv_a, m->h, H, m->qkva, L.q_a_norm, L.kv_a_norm, m->rope_cs, m->pos0, m->qa,
                           L.cache_ckv, L.cache_kpe, s.rq, s.rkv, s.dr, m->o.dims.rms_eps,
                           m->tickets + ARB_GPU_TICKET_QKVA, t, !prep_qb),
                 why, len);
    mark(m, lc.stream, ARB_GPU_PROF_QKV_A);
    // --l2-side: from here to o_proj the chain is latency-bound (Kimi-K2 at TP = 8: q_b .. W_uv
    // read ~12 MB in ~17 us of an H100's decode layer), so the side branch pulls the weights it
    // names of this layer toward L2 meanwhile: by default the router's (5.5 MB): decode -1.24% on an
    // H100; o_proj's and the shared expert's gained nothing (results/engine-h100/62b1d56-router-pull/).
    // Why is not known: at Kimi-K2 all three load their whole share into registers before their PDL
    // wait, so a guess is that the router's 384 blocks find no room on an SM until the call site
    // ends (the timeline's `ahead` column, ci/timeline.py, would show it). In a graph profile its
    // node is filed with the next mark's kind (q_b).
    // `cache` (first: attend reads it next, its CTAs that start only as q_b's leave an SM staging
    // their chunk after q_b has ended) pulls the layer's whole latent cache, every position of its
    // capacity: the host does not know P0 when the step is captured, so a step at a short context
    // pulls rows it does not read.
    {
        l2_pulls pa = {};
        if (m->o.l2_side & ARB_L2_SIDE_CACHE) {
            pull_add(pa, L.cache_ckv, (size_t)m->o.context * s.rkv * sizeof(bf16));
            pull_add(pa, L.cache_kpe, (size_t)m->o.context * s.dr * sizeof(bf16));
        }
        if (m->o.l2_side & ARB_L2_SIDE_O_PROJ)
            pull_add(pa, L.o_proj, (size_t)H * ow * sizeof(bf16));
        if ((m->o.l2_side & ARB_L2_SIDE_ROUTER) && !L.dense)
            pull_add(pa, L.router, (size_t)s.E * H * sizeof(bf16));
        if ((m->o.l2_side & ARB_L2_SIDE_SHARED) && !L.dense) {
            const size_t sh = (size_t)s.Is * H * sizeof(bf16);
            pull_add(pa, L.moe.sh_gate, sh);
            pull_add(pa, L.moe.sh_up, sh);
            pull_add(pa, L.moe.sh_down, sh);
        }
        ARB_TRY(side_pull(m, T, lc.stream, pa, why, len));
    }
    // --l2-ahead: absorb's CTAs pull o_proj's weights toward L2 after their wait, W_uv's the
    // router's; the chain from absorb to o_proj is latency-bound (its own bytes ~6 MB) and
    // o_proj's 14.7 MB then come from L2 (Kimi-K2, TP = 8)
    launch_ctx la = lc, lu = lc;
    if (m->o.l2_ahead & ARB_L2_AHEAD_O_PROJ)
        la.ahead = {L.o_proj, (size_t)H * ow * sizeof(bf16)};
    if ((m->o.l2_ahead & ARB_L2_AHEAD_ROUTER) && !L.dense)
        lu.ahead = {L.router, (size_t)s.E * H * sizeof(bf16)};
    if (m->o.fuse & ARB_FUSE_QB_ABSORB) { // --fuse qb_absorb: the two launches below as one, the same bits
        const qb_prep pp = prep_qb ? qb_prep{m->qkva, L.q_a_norm, L.kv_a_norm, L.cache_ckv, L.cache_kpe, m->qa,
                                             m->o.dims.rms_eps}
                                   : qb_prep{};
        ARB_CUDA_TRY(mla_qb_absorb(la, m->qa, L.q_b, L.kv_b, m->rope_cs, m->pos0, m->q, m->qlat, m->qpe, m->qb_scratch,
                                   m->qb_tickets, s.nh_r, s.rq, s.dn, s.dr, s.dv, s.rkv, t, pp),
                     why, len);
        mark(m, lc.stream, ARB_GPU_PROF_Q_B); // absorb then has no launch of its own (as mla_prep)
    } else {
        // q = qa @ q_b_r^T                                             [T x nh_r x (dn + dr)]
        ARB_CUDA_TRY(gemv(lc, GEMV_BF16, L.q_b, nullptr, m->qa, s.rq, qw, s.rq, m->q, qw, t), why, len);
        mark(m, lc.stream, ARB_GPU_PROF_Q_B);
        // qlat = q_nope @ W_uk[h]; qpe = rope(q_pe, P)                 [T x nh_r x rkv], [T x nh_r x dr]
        ARB_CUDA_TRY(
            mla_absorb(la, m->q, L.kv_b, m->rope_cs, m->pos0, m->qlat, m->qpe, s.nh_r, s.dn, s.dr, s.dv, s.rkv, t), why,
            len);
        mark(m, lc.stream, ARB_GPU_PROF_ABSORB);
    }
    // per chunk of the cache: softmax(qlat . ckv + qpe . kpe) partial sums of ckv, causal
    ARB_CUDA_TRY(mla_attend_pos(lc, m->qlat, m->qpe, L.cache_ckv, L.cache_kpe, m->pos0, m->partial, s.nh_r, s.dr, s.rkv,
                                m->o.dims.softmax_scale, t, m->o.context),
                 why, len);
    mark(m, lc.stream, ARB_GPU_PROF_ATTEND);
    // olat = merged chunks (bf16), in qlat's buffer (dead once the partials exist);
    // o = olat @ W_uv[h]^T                                         [T x nh_r x dv]
    if (m->o.fuse & ARB_FUSE_MERGE_UV) { // --fuse merge_uv: the two launches as one, W_uv summed in its own order
        ARB_CUDA_TRY(mla_merge_uv(lc, m->partial, m->pos0, L.kv_b, m->o_heads, m->uv_scratch, m->uv_tickets, s.nh_r,
                                  s.dn, s.dv, s.rkv, t),
                     why, len);
        mark(m, lc.stream, ARB_GPU_PROF_COMBINE);
    } else {
        ARB_CUDA_TRY(mla_merge(lc, m->partial, m->pos0, m->qlat, s.nh_r, s.rkv, t), why, len);
        mark(m, lc.stream, ARB_GPU_PROF_COMBINE);
        ARB_CUDA_TRY(mla_uv(lu, m->qlat, L.kv_b, m->o_heads, s.nh_r, s.dn, s.dv, s.rkv, t), why, len);
        mark(m, lc.stream, ARB_GPU_PROF_COMBINE);
    }
    // part = o @ o_proj_r^T                                        [T x H], this rank's partial sums
    ARB_CUDA_TRY(gemv(lo, GEMV_BF16, L.o_proj, nullptr, m->o_heads, ow, H, ow, arb_gpu_site_at(m, 2 * l, T).part, H, t), why, len);
    mark(m, lc.stream, ARB_GPU_PROF_O_PROJ);
    return ARB_OK;
}

// Dense MLP of layer l into site 2l+1's buffer.
arb_status_t dense_mlp(arb_gpu_model_t *m, unsigned l, unsigned T, const launch_ctx &lc, char *why, size_t len)
{
    const arb_gpu_shapes &s = m->s;
    const arb_gpu_layer &L = m->layers[l];
    // act = silu(h @ gate_r^T) * (h @ up_r^T)                     [T x I_d_r]
    ARB_CUDA_TRY(gemv(lc, GEMV_SILU_MUL, L.gate, L.up, m->h, s.H, s.Id, s.H, m->act_dense, s.Id, (int)T), why, len);
    mark(m, lc.stream, ARB_GPU_PROF_DENSE);
    // part = act @ down_r^T                                        [T x H]
    ARB_CUDA_TRY(gemv(lc, GEMV_BF16, L.down, nullptr, m->act_dense, s.Id, s.H, s.Id, arb_gpu_site_at(m, 2 * l + 1, T).part, s.H,
                      (int)T),
                 why, len);
    mark(m, lc.stream, ARB_GPU_PROF_DENSE);
    return ARB_OK;
}

// MoE block of layer l (router, routed experts, shared expert) into site 2l+1's buffer.
arb_status_t moe(arb_gpu_model_t *m, unsigned l, unsigned T, const launch_ctx &lc, char *why, size_t len)
{
    const arb_gpu_shapes &s = m->s;
    const arb_gpu_layer &L = m->layers[l];
    moe_route rt = m->route;
    rt.experts = m->experts + (size_t)l * T * s.k;
    const unsigned slots = T * s.k < s.E ? T * s.k : s.E;
    // logits = h @ router^T (fp32); sigmoid, + bias, group-limited top-k, weights, dedupe
    ARB_CUDA_TRY(router(lc, m->h, L.router, L.router_bias, m->router_logits, rt, s.H, s.E, s.k,
                        m->o.dims.n_group, m->o.dims.topk_group, m->o.dims.routed_scaling,
                        m->tickets + ARB_GPU_TICKET_ROUTER, (int)T),
                 why, len);
    mark(m, lc.stream, ARB_GPU_PROF_ROUTER);
    if ((m->o.l2_side & ARB_L2_SIDE_QKV_A) && l + 1 < s.Lz) { // --l2-side qkv_a: the next layer's, during this MoE block
        l2_pulls pa = {};
        pull_add(pa, m->layers[l + 1].qkv_a, (size_t)(s.rq + s.rkv + s.dr) * s.H * sizeof(bf16));
        ARB_TRY(side_pull(m, T, lc.stream, pa, why, len));
    }
    // act_u = silu(gate_u h) * (up_u h) per distinct expert u and the shared expert
    // part = shared_down(act_sh) + sum_u coef_u down_u(act_u)      [T x H]
    // --moe-stage smem: the routed INT4 tiles at T = 1 stage more groups in shared memory (same bits);
    // --moe-early spec: down's first round of routed weights before its wait from a guess of the
    // selection, checked after it (gate/up triggers it after its own: both launches take the one context)
    launch_ctx lm = lc;
    lm.moe_stage = m->o.moe_stage;
    lm.moe_early = m->o.moe_early;
    lm.moe_order = m->o.moe_order;
    ARB_CUDA_TRY(moe_gate_up(lm, L.moe, rt, m->h, m->act_moe, m->act_sh, (int)T, (int)slots), why, len);
    mark(m, lc.stream, ARB_GPU_PROF_MOE_GATE_UP);
    ARB_CUDA_TRY(moe_down(lm, L.moe, rt, m->act_moe, m->act_sh, arb_gpu_site_at(m, 2 * l + 1, T).part, (int)T), why, len);
    mark(m, lc.stream, ARB_GPU_PROF_MOE_DOWN);
    return ARB_OK;
}

// The draft's input: res (the residual stream after a layer) into row P0 + t, slot i of aux.
__global__ void keep_aux(const bf16 *res, const int32_t *pos0, bf16 *aux, unsigned H, unsigned naux, unsigned i)
{
    const unsigned t = blockIdx.x;
    bf16 *dst = aux + ((size_t)(*pos0 + t) * naux + i) * H;
    for (unsigned j = threadIdx.x; j < H; j += blockDim.x)
        dst[j] = res[(size_t)t * H + j];
}

} // namespace

extern "C" arb_status_t arb_gpu_model_step(arb_gpu_model_t *m, unsigned T, void *stream, char *why, size_t why_len)
{
    if (T == 0 || T > m->o.max_tokens)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "gpu step: T %u outside 1 .. %u", T, m->o.max_tokens);
    const arb_gpu_shapes &s = m->s;
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    const launch_ctx lc = {st, m->o.pdl, {}, 0, 0, 0, 0};
    m->side_forked = 0;
    if (m->persist)
        ARB_TRY(arb_gpu_persist_begin(m, st, why, why_len));
    // res = embed_tokens[token]; h = input_layernorm[0](res)        [T x H]
    ARB_CUDA_TRY(embed_rmsnorm(lc, m->embed, m->tokens, m->layers[0].attn_norm, m->res, m->h, s.H, m->o.dims.rms_eps,
                               (int)T),
                 why, why_len);
    mark(m, st, ARB_GPU_PROF_EMBED);
    for (unsigned l = 0; l < s.Lz; l++) {
        const arb_gpu_layer &L = m->layers[l];
        // (a persistent launch has no profile marks: the profiles refuse that form)
        ARB_TRY(m->persist ? arb_gpu_persist_attention(m, l, T, lc, why, why_len) : attention(m, l, T, lc, why, why_len));
        // SITE A: res += allreduce(part); h = post_attention_layernorm(res)
        ARB_TRY(call_site(m, 2 * l, L.ffn_norm, T, st, why, why_len));
        mark(m, st, ARB_GPU_PROF_SITE_A);
        if (L.dense)
            ARB_TRY(dense_mlp(m, l, T, lc, why, why_len));
        else if (m->persist && m->persist[T].nctas_moe)
            ARB_TRY(arb_gpu_persist_moe(m, l, T, lc, why, why_len));
        else
            ARB_TRY(moe(m, l, T, lc, why, why_len));
        // SITE B: res += allreduce(part); h = next input_layernorm (model.norm after the last)
        ARB_TRY(call_site(m, 2 * l + 1, l + 1 < s.Lz ? m->layers[l + 1].attn_norm : m->final_norm, T, st, why, why_len));
        for (unsigned i = 0; i < m->o.naux; i++) // the EAGLE-3 draft's states: res after layer l
            if (m->o.aux_layers[i] == l) {
                keep_aux<<<T, 256, 0, st>>>(m->res, m->pos0, m->aux, s.H, m->o.naux, i);
                ARB_CUDA_TRY(cudaGetLastError(), why, why_len);
            }
        mark(m, st, ARB_GPU_PROF_SITE_B);
    }
    // logits_r = h @ lm_head_r^T (fp32); this rank's (max, index)   [T x V_r]
    ARB_CUDA_TRY(gemv(lc, GEMV_F32, m->lm_head, nullptr, m->h, s.H, s.Vr, s.H, m->logits, s.Vr, (int)T), why, why_len);
    mark(m, st, ARB_GPU_PROF_LM_HEAD);
    ARB_CUDA_TRY(argmax(lc, m->logits, s.Vr, s.V0, m->best_logit, m->best_index, (int)T), why, why_len);
    mark(m, st, ARB_GPU_PROF_LM_HEAD);
    if (m->side_forked) { // --l2-side: the branch joined back (a capture must end on the one stream)
        ARB_CUDA_TRY(cudaEventRecord(m->side_join, m->side), why, why_len);
        ARB_CUDA_TRY(cudaStreamWaitEvent(st, m->side_join, 0), why, why_len);
        m->side_forked = 0;
    }
    m->last_T = T;
    return ARB_OK;
}

extern "C" const char *arb_gpu_prof_name(int kind)
{
    static const char *const names[ARB_GPU_PROF_KINDS] = {
        "embed", "qkv_a", "mla_prep", "q_b", "absorb", "attend", "combine", "o_proj",
        "site_a", "router", "moe_gate_up", "moe_down", "dense_mlp", "site_b", "lm_head"};
    return kind >= 0 && kind < ARB_GPU_PROF_KINDS ? names[kind] : "?";
}

extern "C" arb_status_t arb_gpu_model_profile(arb_gpu_model_t *m, unsigned T, void *stream,
                                              double us[ARB_GPU_PROF_KINDS], char *why, size_t why_len)
{
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    if (m->persist)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len,
                  "gpu profile: the per-kernel times are of the launches form (a persistent launch runs several kinds)");
    const int cap = 32 * (int)m->s.Lz + 16; // launches of one step, with room
    for (int k = 0; k < ARB_GPU_PROF_KINDS; k++)
        us[k] = 0;
    m->prof_ev = static_cast<cudaEvent_t *>(calloc(cap + 1, sizeof(cudaEvent_t)));
    m->prof_kind = static_cast<int *>(calloc(cap + 1, sizeof(int)));
    arb_status_t rs = ARB_OK;
    int made = 0;
    if (!m->prof_ev || !m->prof_kind)
        ARB_RAISE_GOTO(rs, ARB_ERR_SYSTEM, out, why, why_len, "gpu profile: out of host memory");
    for (; made <= cap; made++)
        ARB_CUDA_GOTO(rs, cudaEventCreate(&m->prof_ev[made]), out, why, why_len);
    m->prof_cap = cap + 1, m->prof_n = 0;
    ARB_CUDA_GOTO(rs, cudaEventRecord(m->prof_ev[m->prof_n], st), out, why, why_len);
    m->prof_kind[m->prof_n++] = -1; // the start
    ARB_TRY_GOTO(rs, arb_gpu_model_step(m, T, stream, why, why_len), out);
    ARB_CUDA_GOTO(rs, cudaStreamSynchronize(st), out, why, why_len);
    {
        int seen[ARB_GPU_PROF_KINDS] = {0};
        for (int i = 1; i < m->prof_n; i++) {
            float ms = 0;
            ARB_CUDA_GOTO(rs, cudaEventElapsedTime(&ms, m->prof_ev[i - 1], m->prof_ev[i]), out, why, why_len);
            us[m->prof_kind[i]] += ms * 1e3;
            seen[m->prof_kind[i]] = 1;
        }
        for (int k = 0; k < ARB_GPU_PROF_KINDS; k++)
            if (!seen[k]) // no launch of that kind (mla_prep runs in qkv_a's launch): not measured, not 0
                us[k] = NAN;
    }
out:
    for (int i = 0; i < made; i++)
        cudaEventDestroy(m->prof_ev[i]);
    free(m->prof_ev), free(m->prof_kind);
    m->prof_ev = nullptr, m->prof_kind = nullptr, m->prof_n = m->prof_cap = 0;
    return rs;
}
