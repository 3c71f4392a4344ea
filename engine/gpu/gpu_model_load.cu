// SPDX-License-Identifier: MIT
// The GPU model's weights from a checkpoint (engine/weights/load.h) instead of the seed:
// each block of this rank's plan placed where gpu_model.cu's layout put that tensor, staged
// through two pinned host chunks (one fills while the other's copies run), the routed INT4
// experts reshuffled on the host from the packed rows into the fragment layout of
// kernels/moe_int4_layout.h.
#define OMPI_SKIP_MPICXX 1 // instance.h includes mpi.h: the C API only
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <cuda_runtime.h>

#include "arbench/status.h"
#include "gpu/gpu_layout.h"
#include "gpu/kernels/moe_int4_layout.h"
#include "model/wgen.h"

using arbk::bf16;

extern "C" void arb_gpu_int4_to_frag(const int32_t *src, uint32_t *dst, unsigned rows, unsigned cols)
{
    const size_t words = (size_t)rows * cols / 8;
    for (size_t w = 0; w < words; w++) {
        uint32_t out = 0;
        for (int v = 0; v < 8; v++) {
            unsigned r, c;
            arbk::int4_frag_rc(w, v, cols, &r, &c);
            const uint32_t word = (uint32_t)src[((size_t)r * cols + c) / 8];
            out |= ((word >> (4 * (c % 8))) & 0xfu) << (4 * v);
        }
        dst[w] = out;
    }
}

extern "C" void arb_gpu_scales_to_frag(const uint16_t *src, uint16_t *dst, unsigned rows, unsigned cols)
{
    const unsigned groups = cols / 32;
    const size_t n = (size_t)rows * groups;
    for (size_t i = 0; i < n; i++) {
        unsigned r, g;
        arbk::int4_frag_scale_rg(i, groups, &r, &g);
        dst[i] = src[(size_t)r * groups + g];
    }
}

namespace {

double now_s()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

constexpr size_t kChunk = 64u << 20; // bytes per pinned staging chunk

struct stager {
    arb_gpu_model_t *m;
    cudaStream_t st;
    unsigned char *pinned[2];
    cudaEvent_t done[2];
    int cur;
    size_t fill;
    void *tmp; // the INT4 reshuffle's output
    size_t tmp_cap;
};

cudaError_t flip(stager &s)
{
    cudaError_t e = cudaEventRecord(s.done[s.cur], s.st);
    s.cur ^= 1;
    s.fill = 0;
    return e == cudaSuccess ? cudaEventSynchronize(s.done[s.cur]) : e; // the other chunk's copies are done
}

// bytes from host src to device dst through the pinned chunks
cudaError_t stage(stager &s, void *dst, const void *src, size_t bytes)
{
    const unsigned char *p = static_cast<const unsigned char *>(src);
    unsigned char *d = static_cast<unsigned char *>(dst);
    while (bytes) {
        if (s.fill == kChunk) {
            cudaError_t e = flip(s);
            if (e != cudaSuccess)
                return e;
        }
        const size_t take = bytes < kChunk - s.fill ? bytes : kChunk - s.fill;
        unsigned char *stage_at = s.pinned[s.cur] + s.fill;
        memcpy(stage_at, p, take);
        cudaError_t e = cudaMemcpyAsync(d, stage_at, take, cudaMemcpyHostToDevice, s.st);
        if (e != cudaSuccess)
            return e;
        s.fill += take, p += take, d += take, bytes -= take;
    }
    return cudaSuccess;
}

// Where the model keeps spec s's block, and its bytes there (0: none).
void *place(arb_gpu_model_t *m, const arb_wspec_t *w, size_t *bytes)
{
    const arb_gpu_shapes &s = m->s;
    *bytes = 0;
    if (w->part == ARB_WPART_SHAPE)
        return nullptr;
    const bool global = w->tensor == ARB_W_EMBED || w->tensor == ARB_W_FINAL_NORM || w->tensor == ARB_W_LM_HEAD;
    if (!global && w->layer >= s.Lz)
        return nullptr;
    arb_gpu_layer &L = m->layers[global ? 0 : w->layer];
    const size_t per_expert = (size_t)s.I * s.H, e = w->expert < 0 ? 0 : (size_t)w->expert;
    size_t es = 2;
    void *p = nullptr;
    switch (w->tensor) {
    case ARB_W_EMBED: p = m->embed; break;
    case ARB_W_FINAL_NORM: p = m->final_norm; break;
    case ARB_W_LM_HEAD: p = m->lm_head; break;
    case ARB_W_ATTN_NORM: p = L.attn_norm; break;
    case ARB_W_Q_A: p = L.qkv_a; break;
    case ARB_W_KV_A: p = L.qkv_a + (size_t)s.rq * s.H; break;
    case ARB_W_Q_A_NORM: p = L.q_a_norm; break;
    case ARB_W_KV_A_NORM: p = L.kv_a_norm; break;
    case ARB_W_Q_B: p = L.q_b; break;
    case ARB_W_KV_B: p = L.kv_b; break;
    case ARB_W_O: p = L.o_proj; break;
    case ARB_W_FFN_NORM: p = L.ffn_norm; break;
    case ARB_W_DENSE_GATE: p = L.gate; break;
    case ARB_W_DENSE_UP: p = L.up; break;
    case ARB_W_DENSE_DOWN: p = L.down; break;
    case ARB_W_ROUTER: p = L.router; break;
    case ARB_W_ROUTER_BIAS: p = L.router_bias, es = 4; break;
    case ARB_W_SHARED_GATE: p = const_cast<bf16 *>(L.moe.sh_gate); break;
    case ARB_W_SHARED_UP: p = const_cast<bf16 *>(L.moe.sh_up); break;
    case ARB_W_SHARED_DOWN: p = const_cast<bf16 *>(L.moe.sh_down); break;
    case ARB_W_EXP_GATE:
    case ARB_W_EXP_UP:
    case ARB_W_EXP_DOWN: {
        const void *b = w->tensor == ARB_W_EXP_GATE ? L.moe.gate : w->tensor == ARB_W_EXP_UP ? L.moe.up : L.moe.down;
        if (w->part == ARB_WPART_PACKED)
            p = const_cast<uint32_t *>(static_cast<const uint32_t *>(b)) + e * per_expert / 8, es = 4;
        else
            p = const_cast<bf16 *>(static_cast<const bf16 *>(b)) + e * per_expert;
        break;
    }
    case ARB_W_EXP_GATE_SCALE: p = const_cast<bf16 *>(L.moe.gate_s) + e * per_expert / 32; break;
    case ARB_W_EXP_UP_SCALE: p = const_cast<bf16 *>(L.moe.up_s) + e * per_expert / 32; break;
    case ARB_W_EXP_DOWN_SCALE: p = const_cast<bf16 *>(L.moe.down_s) + e * per_expert / 32; break;
    default: return nullptr;
    }
    *bytes = (size_t)arb_wspec_rank_numel(w) * es;
    return p;
}

arb_status_t sink(void *ctx, const arb_wspec_t *w, const void *data, size_t bytes, char *why, size_t len)
{
    stager &s = *static_cast<stager *>(ctx);
    size_t have = 0;
    void *dst = place(s.m, w, &have);
    if (!dst || have != bytes)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "gpu model: no place for tensor '%s' (%zu bytes; the layout holds %zu)",
                  w->name, bytes, have);
    const bool frag = w->part == ARB_WPART_PACKED || w->part == ARB_WPART_SCALE;
    if (frag) { // one expert's [rows x cols]: rows of the block, cols its logical inputs
        const unsigned rows = (unsigned)w->shape[0];
        const unsigned cols = (unsigned)(w->split == ARB_WSPLIT_COLS ? w->count : w->shape[1]) *
                              (w->part == ARB_WPART_PACKED ? ARB_INT4_PER_WORD : ARB_INT4_GROUP);
        const unsigned held_rows = w->split == ARB_WSPLIT_ROWS ? (unsigned)w->count : rows;
        if (bytes > s.tmp_cap) {
            void *t = realloc(s.tmp, bytes);
            if (!t)
                ARB_RAISE(ARB_ERR_SYSTEM, why, len, "gpu model: out of host memory for tensor '%s'", w->name);
            s.tmp = t, s.tmp_cap = bytes;
        }
        if (w->part == ARB_WPART_PACKED)
            arb_gpu_int4_to_frag(static_cast<const int32_t *>(data), static_cast<uint32_t *>(s.tmp), held_rows, cols);
        else
            arb_gpu_scales_to_frag(static_cast<const uint16_t *>(data), static_cast<uint16_t *>(s.tmp), held_rows,
                                   cols);
        data = s.tmp;
    }
    cudaError_t e = stage(s, dst, data, bytes);
    if (e != cudaSuccess)
        ARB_RAISE(ARB_CUDA_STATUS_(e), why, len, "gpu model: copying tensor '%s': %s", w->name, cudaGetErrorString(e));
    return ARB_OK;
}

} // namespace

extern "C" arb_status_t arb_gpu_model_load(arb_gpu_model_t *m, const arb_wload_t *w, const arb_wplan_t *plan,
                                           int progress, arb_wload_stats_t *stats, char *why, size_t why_len)
{
    if ((w->format == ARB_WEIGHTS_INT4) != (m->o.format == ARB_GPU_INT4))
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "gpu model: %s holds %s routed experts, the model was built for %s",
                  w->dir, w->format == ARB_WEIGHTS_INT4 ? "int4" : "bf16", m->o.format == ARB_GPU_INT4 ? "int4" : "bf16");
    stager s = {};
    s.m = m;
    const double t0 = now_s();
    arb_status_t rs = ARB_OK;
    ARB_CUDA_TRY(cudaStreamCreateWithFlags(&s.st, cudaStreamNonBlocking), why, why_len);
    for (int i = 0; i < 2 && rs == ARB_OK; i++) {
        ARB_CUDA_GOTO(rs, cudaHostAlloc(reinterpret_cast<void **>(&s.pinned[i]), kChunk, cudaHostAllocDefault), out,
                      why, why_len);
        ARB_CUDA_GOTO(rs, cudaEventCreateWithFlags(&s.done[i], cudaEventDisableTiming), out, why, why_len);
    }
    ARB_CUDA_GOTO(rs, cudaEventRecord(s.done[1], s.st), out, why, why_len); // chunk 1 starts free
    ARB_TRY_GOTO(rs, arb_wload_fill(w, plan, sink, &s, progress, stats, why, why_len), out);
    ARB_CUDA_GOTO(rs, cudaMemsetAsync(m->cache, 0, m->mem.kv_cache, s.st), out, why, why_len);
    ARB_CUDA_GOTO(rs, cudaStreamSynchronize(s.st), out, why, why_len);
    if (stats)
        stats->seconds = now_s() - t0; // the last chunk's copies included
out:
    if (s.st)
        cudaStreamSynchronize(s.st);
    for (int i = 0; i < 2; i++) {
        if (s.pinned[i])
            cudaFreeHost(s.pinned[i]);
        if (s.done[i])
            cudaEventDestroy(s.done[i]);
    }
    free(s.tmp);
    cudaStreamDestroy(s.st);
    return rs;
}
