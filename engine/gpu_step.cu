// SPDX-License-Identifier: MIT
// One step of T tokens on the GPU: engine/forward.md's "One step", as a list of launches
// and the two call sites per layer in model order (llama2.c's transformer()). Shapes are
// per rank (tp_shape K): nh_r heads, I_r intermediate rows. Token ids and P0 are read from
// device memory (set_input), so a capture of this function replays as any step of this T.
#define OMPI_SKIP_MPICXX 1 // instance.h includes mpi.h: the C API only
#include "arbench/status.h"
#include "gpu_layout.h"
#include "rmsnorm.h"

using namespace arbk;

namespace {

// Site `i`: res += allreduce(part); h = rmsnorm(res, norm) (the fused op of the ABI, or on
// one rank without an instance: the residual + RMSNorm kernel on this rank's part alone).
arb_status_t call_site(arb_gpu_model_t *m, unsigned i, const bf16 *norm, unsigned T, cudaStream_t st, char *why,
                       size_t len)
{
    const arb_gpu_site &site = m->sites[i];
    if (!site.inst)
        return arb_rmsnorm_residual_launch(m->res, site.part, norm, m->h, T, m->s.H, m->o.dims.rms_eps, st, why, len);
    const arb_rmsnorm_args_t args = {site.part, m->res, norm, m->h, T, m->s.H, m->o.dims.rms_eps};
    return arb_inst_allreduce_rmsnorm(site.inst, &args, m->o.fusion, st, nullptr, why, len);
}

// MLA attention of layer l; leaves this rank's partial o_proj output in site 2l's buffer.
arb_status_t attention(arb_gpu_model_t *m, unsigned l, unsigned T, const launch_ctx &lc, char *why, size_t len)
{
    const arb_gpu_shapes &s = m->s;
    const arb_gpu_layer &L = m->layers[l];
    const int t = (int)T, H = s.H, qw = s.nh_r * (s.dn + s.dr), ow = s.nh_r * s.dv;
    // qkva = h @ [q_a ; kv_a]^T                                   [T x (rq + rkv + dr)]
    ARB_CUDA_TRY(gemv(lc, GEMV_BF16, L.qkv_a, nullptr, m->h, H, s.qkva_w, H, m->qkva, s.qkva_w, t), why, len);
    // qa = q_a_layernorm(qkva[:, :rq])                             [T x rq]
    // cache_ckv[P] = kv_a_layernorm(qkva[:, rq:rq+rkv]); cache_kpe[P] = rope(qkva[:, rq+rkv:], P)
    ARB_CUDA_TRY(mla_prep(lc, m->qkva, L.q_a_norm, L.kv_a_norm, m->rope_cs, m->pos0, m->qa, L.cache_ckv, L.cache_kpe,
                          s.rq, s.rkv, s.dr, m->o.dims.rms_eps, t),
                 why, len);
    // q = qa @ q_b_r^T                                             [T x nh_r x (dn + dr)]
    ARB_CUDA_TRY(gemv(lc, GEMV_BF16, L.q_b, nullptr, m->qa, s.rq, qw, s.rq, m->q, qw, t), why, len);
    // qlat = q_nope @ W_uk[h]; qpe = rope(q_pe, P)                 [T x nh_r x rkv], [T x nh_r x dr]
    ARB_CUDA_TRY(mla_absorb(lc, m->q, L.kv_b, m->rope_cs, m->pos0, m->qlat, m->qpe, s.nh_r, s.dn, s.dr, s.dv, s.rkv, t),
                 why, len);
    // per chunk of the cache: softmax(qlat . ckv + qpe . kpe) partial sums of ckv, causal
    ARB_CUDA_TRY(mla_attend(lc, m->qlat, m->qpe, L.cache_ckv, L.cache_kpe, m->pos0, m->partial, s.nh_r, s.dr, s.rkv,
                            m->o.dims.softmax_scale, t, m->o.context),
                 why, len);
    // olat = merged chunks (bf16); o = olat @ W_uv[h]^T             [T x nh_r x dv]
    ARB_CUDA_TRY(mla_combine(lc, m->partial, L.kv_b, m->pos0, m->o_heads, s.nh_r, s.dn, s.dv, s.rkv, t), why, len);
    // part = o @ o_proj_r^T                                        [T x H], this rank's partial sums
    ARB_CUDA_TRY(gemv(lc, GEMV_BF16, L.o_proj, nullptr, m->o_heads, ow, H, ow, m->sites[2 * l].part, H, t), why, len);
    return ARB_OK;
}

// Dense MLP of layer l into site 2l+1's buffer.
arb_status_t dense_mlp(arb_gpu_model_t *m, unsigned l, unsigned T, const launch_ctx &lc, char *why, size_t len)
{
    const arb_gpu_shapes &s = m->s;
    const arb_gpu_layer &L = m->layers[l];
    // act = silu(h @ gate_r^T) * (h @ up_r^T)                     [T x I_d_r]
    ARB_CUDA_TRY(gemv(lc, GEMV_SILU_MUL, L.gate, L.up, m->h, s.H, s.Id, s.H, m->act_dense, s.Id, (int)T), why, len);
    // part = act @ down_r^T                                        [T x H]
    ARB_CUDA_TRY(gemv(lc, GEMV_BF16, L.down, nullptr, m->act_dense, s.Id, s.H, s.Id, m->sites[2 * l + 1].part, s.H,
                      (int)T),
                 why, len);
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
    ARB_CUDA_TRY(router(lc, m->h, L.router, L.router_bias, m->router_logits, m->ticket, rt, s.H, s.E, s.k,
                        m->o.dims.n_group, m->o.dims.topk_group, m->o.dims.routed_scaling, (int)T),
                 why, len);
    // part = shared(h) + sum_j w_j expert_j(h)                     [T x H]
    ARB_CUDA_TRY(moe_block(lc, L.moe, rt, m->h, m->act_moe, m->act_sh, m->sites[2 * l + 1].part, (int)T, (int)slots),
                 why, len);
    return ARB_OK;
}

} // namespace

extern "C" arb_status_t arb_gpu_model_step(arb_gpu_model_t *m, unsigned T, void *stream, char *why, size_t why_len)
{
    if (T == 0 || T > m->o.max_tokens)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "gpu step: T %u outside 1 .. %u", T, m->o.max_tokens);
    const arb_gpu_shapes &s = m->s;
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    const launch_ctx lc = {st, m->o.pdl};
    // res = embed_tokens[token]; h = input_layernorm[0](res)        [T x H]
    ARB_CUDA_TRY(embed_rmsnorm(lc, m->embed, m->tokens, m->layers[0].attn_norm, m->res, m->h, s.H, m->o.dims.rms_eps,
                               (int)T),
                 why, why_len);
    for (unsigned l = 0; l < s.Lz; l++) {
        const arb_gpu_layer &L = m->layers[l];
        ARB_TRY(attention(m, l, T, lc, why, why_len));
        // SITE A: res += allreduce(part); h = post_attention_layernorm(res)
        ARB_TRY(call_site(m, 2 * l, L.ffn_norm, T, st, why, why_len));
        ARB_TRY(L.dense ? dense_mlp(m, l, T, lc, why, why_len) : moe(m, l, T, lc, why, why_len));
        // SITE B: res += allreduce(part); h = next input_layernorm (model.norm after the last)
        ARB_TRY(call_site(m, 2 * l + 1, l + 1 < s.Lz ? m->layers[l + 1].attn_norm : m->final_norm, T, st, why, why_len));
    }
    // logits_r = h @ lm_head_r^T (fp32); this rank's (max, index)   [T x V_r]
    ARB_CUDA_TRY(gemv(lc, GEMV_F32, m->lm_head, nullptr, m->h, s.H, s.Vr, s.H, m->logits, s.Vr, (int)T), why, why_len);
    ARB_CUDA_TRY(argmax(lc, m->logits, s.Vr, s.V0, m->best_logit, m->best_index, (int)T), why, why_len);
    m->last_T = T;
    return ARB_OK;
}
