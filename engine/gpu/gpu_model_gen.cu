// SPDX-License-Identifier: MIT
// The GPU model's weights, generated on the device from the seed (forward.md "Weights"),
// bit-identical in value to the CPU reference's; the routed INT4 experts in the mma
// fragment layout of kernels/moe_int4_layout.h.
#define OMPI_SKIP_MPICXX 1 // instance.h includes mpi.h: the C API only
#include <cmath>

#include <cuda_runtime.h>

#include "arbench/status.h"
#include "gpu/gpu_layout.h"
#include "model/wgen.h"

using arbk::bf16;

namespace {

double c64_of(unsigned in, int residual_out, unsigned layers)
{
    const double c = sqrt(3.0) / sqrt((double)in);
    return residual_out ? c / sqrt(2.0 * layers) : c;
}

} // namespace

extern "C" arb_status_t arb_gpu_model_generate(arb_gpu_model_t *m, char *why, size_t why_len)
{
    const arb_gpu_shapes &s = m->s;
    const arb_gpu_dims_t &d = m->o.dims;
    const uint64_t seed = m->o.seed;
    const unsigned Lz = s.Lz, r = d.shard;
    const int sms = m->sms;
    cudaStream_t st = nullptr;
    arb_status_t rs = ARB_OK;
    ARB_CUDA_TRY(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), why, why_len);
    // bf16(c * u) over rows x cols of an expert-major tensor (see arbk::wgen_block)
    auto lin = [&](bf16 *dst, uint32_t t, uint32_t l, unsigned experts, unsigned rows, unsigned cols, unsigned row0,
                   unsigned col0, unsigned grows, unsigned gcols, double c) {
        const arbk::wgen_block b = {seed, t, l, experts, rows, cols, row0, col0, grows, gcols, (float)c};
        return arbk::gen_linear(st, dst, b, sms);
    };
    auto int4 = [&](const void *packed, const bf16 *scale, uint32_t t, uint32_t ts, uint32_t l, unsigned rows,
                    unsigned cols, unsigned row0, unsigned col0, unsigned grows, unsigned gcols, double c) {
        const arbk::wgen_block b = {seed, t, l, s.E, rows, cols, row0, col0, grows, gcols, 0.0f};
        return arbk::gen_int4(st, static_cast<uint32_t *>(const_cast<void *>(packed)), const_cast<bf16 *>(scale), b,
                              ts, (float)(c / 4.61), sms);
    };
    cudaError_t e = lin(m->embed, ARB_W_EMBED, 0, 1, d.vocab, s.H, 0, 0, d.vocab, s.H, sqrt(3.0));
    const unsigned qb_rows = s.nh_r * (s.dn + s.dr), kvb_rows = s.nh_r * (s.dn + s.dv), ocols = s.nh_r * s.dv;
    const unsigned Ie = d.moe_inter, Is_all = d.n_shared * d.moe_inter;
    for (unsigned l = 0; l < Lz && e == cudaSuccess; l++) {
        arb_gpu_layer &L = m->layers[l];
        cudaError_t es[24];
        int n = 0;
        es[n++] = arbk::gen_norm(st, L.attn_norm, s.H, seed, ARB_W_ATTN_NORM, l, sms);
        es[n++] = arbk::gen_norm(st, L.q_a_norm, s.rq, seed, ARB_W_Q_A_NORM, l, sms);
        es[n++] = arbk::gen_norm(st, L.kv_a_norm, s.rkv, seed, ARB_W_KV_A_NORM, l, sms);
        es[n++] = arbk::gen_norm(st, L.ffn_norm, s.H, seed, ARB_W_FFN_NORM, l, sms);
        es[n++] = lin(L.qkv_a, ARB_W_Q_A, l, 1, s.rq, s.H, 0, 0, s.rq, s.H, c64_of(s.H, 0, Lz));
        es[n++] = lin(L.qkv_a + (size_t)s.rq * s.H, ARB_W_KV_A, l, 1, s.rkv + s.dr, s.H, 0, 0, s.rkv + s.dr, s.H,
                      c64_of(s.H, 0, Lz));
        es[n++] = lin(L.q_b, ARB_W_Q_B, l, 1, qb_rows, s.rq, r * qb_rows, 0, d.heads * (s.dn + s.dr), s.rq,
                      c64_of(s.rq, 0, Lz));
        es[n++] = lin(L.kv_b, ARB_W_KV_B, l, 1, kvb_rows, s.rkv, r * kvb_rows, 0, d.heads * (s.dn + s.dv), s.rkv,
                      c64_of(s.rkv, 0, Lz));
        es[n++] = lin(L.o_proj, ARB_W_O, l, 1, s.H, ocols, 0, r * ocols, s.H, d.heads * s.dv,
                      c64_of(d.heads * s.dv, 1, Lz));
        if (L.dense) {
            es[n++] = lin(L.gate, ARB_W_DENSE_GATE, l, 1, s.Id, s.H, s.Id0, 0, d.dense_inter, s.H, c64_of(s.H, 0, Lz));
            es[n++] = lin(L.up, ARB_W_DENSE_UP, l, 1, s.Id, s.H, s.Id0, 0, d.dense_inter, s.H, c64_of(s.H, 0, Lz));
            es[n++] = lin(L.down, ARB_W_DENSE_DOWN, l, 1, s.H, s.Id, 0, s.Id0, s.H, d.dense_inter,
                          c64_of(d.dense_inter, 1, Lz));
        } else {
            const arbk::moe_weights &w = L.moe;
            es[n++] = lin(L.router, ARB_W_ROUTER, l, 1, s.E, s.H, 0, 0, s.E, s.H, c64_of(s.H, 0, Lz));
            es[n++] = arbk::gen_bias(st, L.router_bias, s.E, seed, ARB_W_ROUTER_BIAS, l, sms);
            es[n++] = lin(const_cast<bf16 *>(w.sh_gate), ARB_W_SHARED_GATE, l, 1, s.Is, s.H, s.Is0, 0, Is_all, s.H,
                          c64_of(s.H, 0, Lz));
            es[n++] = lin(const_cast<bf16 *>(w.sh_up), ARB_W_SHARED_UP, l, 1, s.Is, s.H, s.Is0, 0, Is_all, s.H,
                          c64_of(s.H, 0, Lz));
            es[n++] = lin(const_cast<bf16 *>(w.sh_down), ARB_W_SHARED_DOWN, l, 1, s.H, s.Is, 0, s.Is0, s.H, Is_all,
                          c64_of(Is_all, 1, Lz));
            if (m->o.format == ARB_GPU_INT4) {
                es[n++] = int4(w.gate, w.gate_s, ARB_W_EXP_GATE, ARB_W_EXP_GATE_SCALE, l, s.I, s.H, s.I0, 0, Ie, s.H,
                               c64_of(s.H, 0, Lz));
                es[n++] = int4(w.up, w.up_s, ARB_W_EXP_UP, ARB_W_EXP_UP_SCALE, l, s.I, s.H, s.I0, 0, Ie, s.H,
                               c64_of(s.H, 0, Lz));
                es[n++] = int4(w.down, w.down_s, ARB_W_EXP_DOWN, ARB_W_EXP_DOWN_SCALE, l, s.H, s.I, 0, s.I0, s.H, Ie,
                               c64_of(Ie, 1, Lz));
            } else {
                bf16 *g = static_cast<bf16 *>(const_cast<void *>(w.gate));
                bf16 *u = static_cast<bf16 *>(const_cast<void *>(w.up));
                bf16 *dn = static_cast<bf16 *>(const_cast<void *>(w.down));
                const arbk::wgen_block bg = {seed, ARB_W_EXP_GATE, l, s.E, s.I, s.H, s.I0, 0, Ie, s.H, (float)c64_of(s.H, 0, Lz)};
                arbk::wgen_block bu = bg;
                bu.tensor = ARB_W_EXP_UP;
                const arbk::wgen_block bd = {seed, ARB_W_EXP_DOWN, l, s.E, s.H, s.I, 0, s.I0, s.H, Ie, (float)c64_of(Ie, 1, Lz)};
                es[n++] = arbk::gen_linear(st, g, bg, sms);
                es[n++] = arbk::gen_linear(st, u, bu, sms);
                es[n++] = arbk::gen_linear(st, dn, bd, sms);
            }
        }
        for (int i = 0; i < n; i++)
            if (es[i] != cudaSuccess)
                e = es[i];
    }
    if (e == cudaSuccess)
        e = arbk::gen_norm(st, m->final_norm, s.H, seed, ARB_W_FINAL_NORM, 0, sms);
    if (e == cudaSuccess)
        e = lin(m->lm_head, ARB_W_LM_HEAD, 0, 1, s.Vr, s.H, s.V0, 0, d.vocab, s.H, c64_of(s.H, 0, Lz));
    if (e == cudaSuccess)
        e = cudaMemsetAsync(m->cache, 0, m->mem.kv_cache, st);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(st);
    if (e != cudaSuccess) {
        ARB_WHY(why, why_len, "gpu model: weight generation: %s", cudaGetErrorString(e));
        rs = ARB_CUDA_STATUS_(e);
    }
    cudaStreamDestroy(st);
    return rs;
}
