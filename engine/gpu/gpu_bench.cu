// SPDX-License-Identifier: MIT
// Measurements the floors need, taken on the device in the engine's own run:
// - streaming-read bandwidth (the HBM floor's denominator), reading the model's weights;
// - one layer's MoE block, ours (two kernels, the model's format) against the reference
//   to beat: a per-expert cuBLAS loop over the same selected experts in bf16 (gate|up GEMM,
//   SiLU * up, down GEMM, weighted add; the shared expert as one more expert). Each form is
//   captured in one CUDA graph over every MoE layer, so weights rotate past L2.
#define OMPI_SKIP_MPICXX 1 // instance.h includes mpi.h: the C API only
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "arbench/status.h"
#include "gpu/gpu_layout.h"
#include "model/wgen.h"

using arbk::bf16;

namespace {

constexpr size_t kMinReadBytes = (size_t)1 << 30; // past any L2 with room

// Median of `reps` timings (ms) of a graph replay.
arb_status_t time_graph(cudaGraphExec_t exec, cudaStream_t st, int reps, double *ms, char *why, size_t len)
{
    cudaEvent_t a, b;
    ARB_CUDA_TRY(cudaEventCreate(&a), why, len);
    ARB_CUDA_TRY(cudaEventCreate(&b), why, len);
    std::vector<double> t;
    cudaError_t e = cudaGraphLaunch(exec, st); // warm-up
    for (int i = 0; i < reps && e == cudaSuccess; i++) {
        float x = 0;
        e = cudaEventRecord(a, st);
        if (e == cudaSuccess)
            e = cudaGraphLaunch(exec, st);
        if (e == cudaSuccess)
            e = cudaEventRecord(b, st);
        if (e == cudaSuccess)
            e = cudaEventSynchronize(b);
        if (e == cudaSuccess)
            e = cudaEventElapsedTime(&x, a, b);
        t.push_back(x);
    }
    cudaEventDestroy(a), cudaEventDestroy(b);
    if (e != cudaSuccess)
        ARB_RAISE(ARB_CUDA_STATUS_(e), why, len, "gpu bench: timing a graph: %s", cudaGetErrorString(e));
    std::sort(t.begin(), t.end());
    *ms = t[t.size() / 2];
    return ARB_OK;
}

__global__ void silu_mul_kernel(const bf16 *gu, int I, bf16 *act, int T)
{ // gu [T x 2I] (gate then up), act [T x I]
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < T * I; i += gridDim.x * blockDim.x) {
        const int t = i / I, j = i % I;
        const float g = __bfloat162float(gu[(size_t)t * 2 * I + j]), u = __bfloat162float(gu[(size_t)t * 2 * I + I + j]);
        act[i] = __float2bfloat16_rn(g / (1.0f + expf(-g)) * u);
    }
}

__global__ void weighted_add_kernel(const float *z, const float *coef, float *acc, int H, int T)
{ // acc[t] += coef[t] z[t], [T x H]
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < T * H; i += gridDim.x * blockDim.x)
        acc[i] += coef[i / H] * z[i];
}

__global__ void to_bf16_kernel(const float *acc, bf16 *out, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = __float2bfloat16_rn(acc[i]);
}

} // namespace

extern "C" arb_status_t arb_gpu_read_bandwidth(arb_gpu_model_t *m, int reps, void *stream, double *bytes_per_s,
                                               char *why, size_t why_len)
{
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    const void *src = m->weights;
    size_t bytes = std::min(m->weight_bytes, (size_t)8 << 30) & ~(size_t)15;
    void *own = nullptr;
    arb_status_t rs = ARB_OK;
    if (bytes < kMinReadBytes) { // a small model: read a buffer of our own instead
        ARB_CUDA_TRY(cudaMalloc(&own, kMinReadBytes), why, why_len);
        ARB_CUDA_TRY(cudaMemset(own, 0, kMinReadBytes), why, why_len);
        src = own, bytes = kMinReadBytes;
    }
    uint32_t *sink = nullptr;
    cudaEvent_t a = nullptr, b = nullptr;
    std::vector<double> t;
    cudaError_t e = cudaMalloc(&sink, sizeof(uint32_t) * 4 * m->sms);
    if (e == cudaSuccess)
        e = cudaEventCreate(&a);
    if (e == cudaSuccess)
        e = cudaEventCreate(&b);
    if (e == cudaSuccess)
        e = arbk::stream_read(st, src, bytes, sink, m->sms); // warm-up
    for (int i = 0; i < (reps > 0 ? reps : 1) && e == cudaSuccess; i++) {
        float ms = 0;
        e = cudaEventRecord(a, st);
        if (e == cudaSuccess)
            e = arbk::stream_read(st, src, bytes, sink, m->sms);
        if (e == cudaSuccess)
            e = cudaEventRecord(b, st);
        if (e == cudaSuccess)
            e = cudaEventSynchronize(b);
        if (e == cudaSuccess)
            e = cudaEventElapsedTime(&ms, a, b);
        t.push_back(bytes / (ms * 1e-3));
    }
    if (e != cudaSuccess) {
        ARB_WHY(why, why_len, "gpu bench: streaming read: %s", cudaGetErrorString(e));
        rs = ARB_CUDA_STATUS_(e);
    } else {
        std::sort(t.begin(), t.end());
        *bytes_per_s = t[t.size() / 2];
    }
    if (a)
        cudaEventDestroy(a);
    if (b)
        cudaEventDestroy(b);
    cudaFree(sink);
    cudaFree(own);
    return rs;
}

namespace {

// Per MoE layer: the distinct experts the last step selected and their per-token weights.
struct layer_sel {
    unsigned layer;
    std::vector<int32_t> uniq;
    std::vector<float> coef; // [uniq x moe_tstride(T)]
};

std::vector<layer_sel> selections(arb_gpu_model_t *m, unsigned T, const int32_t *experts)
{
    std::vector<layer_sel> out;
    const unsigned k = m->s.k;
    for (unsigned l = 0; l < m->s.Lz; l++) {
        if (m->layers[l].dense)
            continue;
        layer_sel ls;
        ls.layer = l;
        const int32_t *sel = experts + (size_t)l * T * k;
        for (unsigned i = 0; i < T * k; i++)
            if (std::find(ls.uniq.begin(), ls.uniq.end(), sel[i]) == ls.uniq.end())
                ls.uniq.push_back(sel[i]);
        std::sort(ls.uniq.begin(), ls.uniq.end());
        const size_t ts = (size_t)arbk::moe_tstride((int)T);
        ls.coef.assign(ls.uniq.size() * ts, 0.0f);
        for (unsigned i = 0; i < T * k; i++) { // timing only needs the pattern: weight 1/k each
            const size_t u = std::find(ls.uniq.begin(), ls.uniq.end(), sel[i]) - ls.uniq.begin();
            ls.coef[u * ts + i / k] = 1.0f / k;
        }
        out.push_back(ls);
    }
    return out;
}

} // namespace

static_assert(ARB_GPU_MOE_MAX_T == arbk::kMoeMaxT, "gpu_model.h's bound is the MoE kernels'");

extern "C" arb_status_t arb_gpu_moe_bench(arb_gpu_model_t *m, unsigned T, int reps, void *stream,
                                          arb_gpu_moe_bench_t *out, char *why, size_t why_len)
{
    if (m->last_T != T)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "gpu moe bench: the last step had T %u, not %u: run a step of T first",
                  m->last_T, T);
    std::vector<int32_t> experts((size_t)m->s.Lz * T * m->s.k);
    ARB_TRY(arb_gpu_model_read_experts(m, T, experts.data(), why, why_len));
    return arb_gpu_moe_bench_sel(m, T, experts.data(), reps, stream, out, why, why_len);
}

extern "C" arb_status_t arb_gpu_moe_bench_sel(arb_gpu_model_t *m, unsigned T, const int32_t *experts, int reps,
                                              void *stream, arb_gpu_moe_bench_t *out, char *why, size_t why_len)
{
    const arb_gpu_shapes &s = m->s;
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    if (T < 1 || T > ARB_GPU_MOE_MAX_T)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "gpu moe bench: T %u: expected 1 .. %d tokens", T, ARB_GPU_MOE_MAX_T);
    if (reps < 1)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "gpu moe bench: reps %d: expected at least 1", reps);
    for (unsigned l = 0; l < s.Lz; l++) {
        if (m->layers[l].dense)
            continue;
        for (unsigned i = 0; i < T * s.k; i++) {
            const int32_t e = experts[((size_t)l * T) * s.k + i];
            if (e < 0 || (unsigned)e >= s.E)
                ARB_RAISE(ARB_ERR_INVALID, why, why_len,
                          "gpu moe bench: layer %u, choice %u: expert %d, expected 0 .. %u", l, i, (int)e, s.E - 1);
        }
    }
    std::vector<layer_sel> sel = selections(m, T, experts);
    if (sel.empty())
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "gpu moe bench: the model has no MoE layer");
    for (const layer_sel &ls : sel)
        if (ls.uniq.size() > (size_t)arbk::kMaxSlots)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len,
                      "gpu moe bench: layer %u selects %zu distinct experts at T %u, more than the kernels' %d",
                      ls.layer, ls.uniq.size(), T, arbk::kMaxSlots);
    const int H = (int)s.H, I = (int)s.I, Is = (int)s.Is;
    // The model's h, act and part buffers hold max_tokens rows and max_slots experts: past
    // either (always past the step's T), the bench's own (h zero: the kernels' time does not
    // depend on the values).
    bool own_io = T > m->o.max_tokens;
    for (const layer_sel &ls : sel)
        own_io = own_io || ls.uniq.size() > (size_t)s.max_slots;
    const size_t ts = (size_t)arbk::moe_tstride((int)T);
    // own buffers: h, part [T x H], act [kMaxSlots x ts x I], act_sh [ts x Is], bf16; each carve rounds to 256
    const size_t io_size[4] = {(size_t)T * H * 2, (size_t)T * H * 2, (size_t)arbk::kMaxSlots * ts * I * 2, ts * Is * 2};
    size_t io_bytes = 0;
    for (size_t b : io_size)
        io_bytes += own_io ? (b + 255) / 256 * 256 : 0;
    const size_t expert_elems = (size_t)3 * I * H, ws_bytes = (size_t)32 << 20;
    const int R = std::max(I, Is); // rows of the widest expert (routed or shared)
    // Device copies of the layers' routes, and for the cuBLAS loop bf16 copies of the
    // selected experts ([2I x H] gate|up and [H x I] down each) plus the shared expert:
    // the bytes for the first n MoE layers.
    auto bytes_for = [&](size_t n, size_t *uniq) {
        size_t u = 0;
        for (size_t i = 0; i < n; i++)
            u += sel[i].uniq.size();
        *uniq = u;
        const size_t route_bytes = n * (arbk::kMaxSlots * (ts * 4 + 4) + 256 * 3);
        const size_t scratch = (size_t)T * (2 * R + R) * 2 + (size_t)T * H * 4 * 2 + (size_t)T * 4 * (u + n) + 4096;
        return route_bytes + (u + 1) * expert_elems * 2 + ws_bytes + scratch + io_bytes + 4096;
    };
    // Every MoE layer where the copies fit beside the model (78.5 GB of Kimi-K2's shard leave an
    // 80 GB card too little for all of them at T = 3); else the first ones that fit, as long as
    // our kernels' bytes over them span four L2s (read from HBM as in the step), else refused.
    size_t total_uniq = 0, free_b = 0, total_b = 0;
    ARB_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b), why, why_len);
    const size_t margin = (size_t)256 << 20, room = free_b > margin ? free_b - margin : 0;
    const size_t all = sel.size();
    size_t fit = all;
    while (fit > 0 && bytes_for(fit, &total_uniq) > room)
        fit--;
    const size_t dev_bytes = bytes_for(fit, &total_uniq); // and total_uniq of those layers
    if (fit < all) {
        int dev_id = 0, l2 = 0;
        ARB_CUDA_TRY(cudaGetDevice(&dev_id), why, why_len);
        ARB_CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev_id), why, why_len);
        size_t u_all = 0;
        // our kernels' bytes over those layers: the selected INT4 (or bf16) experts and the shared expert's
        const double ours = (double)total_uniq * arb_gpu_expert_bytes(m) + (double)fit * 3.0 * Is * H * 2;
        if (fit == 0 || ours < 4.0 * l2)
            ARB_RAISE(ARB_ERR_SYSTEM, why, why_len,
                      "gpu moe bench: the cuBLAS loop's bf16 copies of %zu MoE layers' experts need %.2f GB with %.2f GB "
                      "free; the %zu layers that fit read %.0f MB with our kernels, under four L2s (%.0f MB): not timed",
                      all, bytes_for(all, &u_all) / 1e9, free_b / 1e9, fit, ours / 1e6, 4.0 * l2 / 1e6);
        sel.resize(fit);
    }
    const int nl = (int)sel.size();
    arb_status_t rs = ARB_OK;
    cudaError_t e = cudaSuccess;
    char *dev = nullptr;
    cublasHandle_t blas = nullptr;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    double ours_ms = 0, blas_ms = 0;
    e = cudaMalloc(&dev, dev_bytes);
    if (e != cudaSuccess) {
        const arb_status_t fs = ARB_CUDA_STATUS_(e); // first: takes back the allocation's error (status.h)
        (void)cudaMemGetInfo(&free_b, &total_b);
        ARB_RAISE(fs, why, why_len,
                  "gpu moe bench: cudaMalloc of %.2f GB (bf16 copies of the %zu selected experts for the cuBLAS loop) "
                  "with %.2f GB free: %s",
                  dev_bytes / 1e9, total_uniq, free_b / 1e9, cudaGetErrorString(e));
    }
    char *p = dev;
    auto carve = [&](size_t bytes) {
        char *r = p;
        p += (bytes + 255) & ~(size_t)255;
        return r;
    };
    std::vector<arbk::moe_route> routes(nl);
    for (int i = 0; i < nl && e == cudaSuccess; i++) {
        arbk::moe_route &rt = routes[i];
        rt.experts = nullptr;
        rt.coef = reinterpret_cast<float *>(carve(sizeof(float) * arbk::kMaxSlots * ts));
        rt.uniq = reinterpret_cast<int32_t *>(carve(sizeof(int32_t) * arbk::kMaxSlots));
        rt.n_uniq = reinterpret_cast<int32_t *>(carve(sizeof(int32_t)));
        rt.sh_part = m->route.sh_part, rt.sh_ticket = m->route.sh_ticket; // the model's: the layers run in turn
        const int32_t n = (int32_t)sel[i].uniq.size();
        e = cudaMemcpy(rt.coef, sel[i].coef.data(), sizeof(float) * sel[i].coef.size(), cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(rt.uniq, sel[i].uniq.data(), sizeof(int32_t) * n, cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(rt.n_uniq, &n, sizeof n, cudaMemcpyHostToDevice);
    }
    bf16 *pool = reinterpret_cast<bf16 *>(carve((total_uniq + 1) * expert_elems * 2));
    void *ws = carve(ws_bytes);
    bf16 *gu = reinterpret_cast<bf16 *>(carve((size_t)T * 2 * R * 2));
    bf16 *act = reinterpret_cast<bf16 *>(carve((size_t)T * R * 2));
    float *z = reinterpret_cast<float *>(carve((size_t)T * H * 4));
    float *acc = reinterpret_cast<float *>(carve((size_t)T * H * 4));
    float *coefs = reinterpret_cast<float *>(carve((size_t)T * 4 * (total_uniq + nl)));
    bf16 *h_in = m->h, *act_moe = m->act_moe, *act_sh = m->act_sh, *part = m->local_part;
    if (own_io) {
        h_in = reinterpret_cast<bf16 *>(carve(io_size[0]));
        part = reinterpret_cast<bf16 *>(carve(io_size[1]));
        act_moe = reinterpret_cast<bf16 *>(carve(io_size[2]));
        act_sh = reinterpret_cast<bf16 *>(carve(io_size[3]));
        if (e == cudaSuccess)
            e = cudaMemsetAsync(h_in, 0, (size_t)T * H * 2, st);
    }
    { // bf16 experts from the generator (values do not matter for timing; real ones anyway)
        const uint64_t seed = m->o.seed;
        const unsigned Ie = m->o.dims.moe_inter, Lz = s.Lz;
        const float cg = (float)(1.7320508075688772 / sqrt((double)H)),
                    cd = (float)(1.7320508075688772 / sqrt((double)Ie) / sqrt(2.0 * Lz));
        size_t slot = 0;
        std::vector<float> hc;
        for (int i = 0; i < nl && e == cudaSuccess; i++)
            for (size_t u = 0; u < sel[i].uniq.size() && e == cudaSuccess; u++, slot++) {
                const unsigned ex = (unsigned)sel[i].uniq[u], l = sel[i].layer;
                bf16 *base = pool + slot * expert_elems;
                // row0 = ex * rows + the shard's first row puts the single block at the expert's index
                arbk::wgen_block bg = {seed, ARB_W_EXP_GATE, l, 1, (unsigned)I, (unsigned)H, ex * Ie + s.I0, 0, Ie * s.E, (unsigned)H, cg};
                e = arbk::gen_linear(st, base, bg, m->sms);
                bg.tensor = ARB_W_EXP_UP;
                if (e == cudaSuccess)
                    e = arbk::gen_linear(st, base + (size_t)I * H, bg, m->sms);
                arbk::wgen_block bd = {seed, ARB_W_EXP_DOWN, l, 1, (unsigned)H, (unsigned)I, ex * (unsigned)H, s.I0, (unsigned)H * s.E, Ie, cd};
                if (e == cudaSuccess)
                    e = arbk::gen_linear(st, base + (size_t)2 * I * H, bd, m->sms);
                for (unsigned t = 0; t < T; t++)
                    hc.push_back(sel[i].coef[u * ts + t]);
            }
        for (int i = 0; i < nl; i++)
            for (unsigned t = 0; t < T; t++)
                hc.push_back(1.0f); // the shared expert's weight
        if (e == cudaSuccess)
            e = cudaMemcpy(coefs, hc.data(), sizeof(float) * hc.size(), cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(st);
    }
    if (e != cudaSuccess)
        ARB_RAISE_GOTO(rs, ARB_CUDA_STATUS_(e), err_free, why, why_len, "gpu moe bench: setup: %s", cudaGetErrorString(e));

    { // ours: the model's two MoE kernels per layer, as the step launches them (--moe-stage, --moe-early)
        const arbk::launch_ctx lc = {st, m->o.pdl, {}, 0, m->o.moe_stage, m->o.moe_early, m->o.moe_order};
        ARB_CUDA_GOTO(rs, cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), err_free, why, why_len);
        for (int i = 0; i < nl && e == cudaSuccess; i++)
            e = arbk::moe_block(lc, m->layers[sel[i].layer].moe, routes[i], h_in, act_moe, act_sh, part, (int)T,
                                (int)sel[i].uniq.size());
        cudaError_t ec = cudaStreamEndCapture(st, &graph);
        if (e == cudaSuccess)
            e = ec;
        if (e == cudaSuccess)
            e = cudaGraphInstantiate(&exec, graph, 0);
        if (e != cudaSuccess)
            ARB_RAISE_GOTO(rs, ARB_CUDA_STATUS_(e), err_free, why, why_len, "gpu moe bench: our graph: %s",
                           cudaGetErrorString(e));
        ARB_TRY_GOTO(rs, time_graph(exec, st, reps, &ours_ms, why, why_len), err_free);
        cudaGraphExecDestroy(exec), cudaGraphDestroy(graph);
        exec = nullptr, graph = nullptr;
    }
    { // the per-expert cuBLAS loop
        if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS)
            ARB_RAISE_GOTO(rs, ARB_ERR_SYSTEM, err_free, why, why_len, "gpu moe bench: cublasCreate failed");
        cublasSetStream(blas, st);
        cublasSetWorkspace(blas, ws, ws_bytes);
        const float one = 1.0f, zero = 0.0f;
        ARB_CUDA_GOTO(rs, cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), err_free, why, why_len);
        size_t slot = 0, ci = 0;
        cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
        for (int i = 0; i < nl && e == cudaSuccess && bs == CUBLAS_STATUS_SUCCESS; i++) {
            e = cudaMemsetAsync(acc, 0, (size_t)T * H * 4, st);
            const arb_gpu_layer &L = m->layers[sel[i].layer];
            const size_t n_ex = sel[i].uniq.size();
            for (size_t u = 0; u <= n_ex && e == cudaSuccess && bs == CUBLAS_STATUS_SUCCESS; u++) {
                // u == n_ex: the shared expert (gate and up are separate tensors there)
                const bool shared = u == n_ex;
                const int rows = shared ? Is : I;
                const bf16 *wd = shared ? L.moe.sh_down : pool + slot * expert_elems + (size_t)2 * I * H;
                if (shared) {
                    bs = cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, Is, (int)T, H, &one, L.moe.sh_gate, CUDA_R_16BF, H,
                                      h_in, CUDA_R_16BF, H, &zero, gu, CUDA_R_16BF, 2 * Is, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT);
                    if (bs == CUBLAS_STATUS_SUCCESS)
                        bs = cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, Is, (int)T, H, &one, L.moe.sh_up, CUDA_R_16BF,
                                          H, h_in, CUDA_R_16BF, H, &zero, gu + Is, CUDA_R_16BF, 2 * Is,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
                } else {
                    bs = cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, 2 * I, (int)T, H, &one,
                                      pool + slot * expert_elems, CUDA_R_16BF, H, h_in, CUDA_R_16BF, H, &zero, gu,
                                      CUDA_R_16BF, 2 * I, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
                }
                silu_mul_kernel<<<(T * rows + 255) / 256, 256, 0, st>>>(gu, rows, act, (int)T);
                if (bs == CUBLAS_STATUS_SUCCESS)
                    bs = cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, H, (int)T, rows, &one, wd, CUDA_R_16BF, rows, act,
                                      CUDA_R_16BF, rows, &zero, z, CUDA_R_32F, H, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT);
                weighted_add_kernel<<<(T * H + 255) / 256, 256, 0, st>>>(z, coefs + ci * T, acc, H, (int)T);
                ci++;
                if (!shared)
                    slot++;
            }
            to_bf16_kernel<<<(T * H + 255) / 256, 256, 0, st>>>(acc, part, (int)T * H);
            if (e == cudaSuccess)
                e = cudaGetLastError();
        }
        cudaError_t ec = cudaStreamEndCapture(st, &graph);
        if (e == cudaSuccess)
            e = ec;
        if (bs != CUBLAS_STATUS_SUCCESS)
            ARB_RAISE_GOTO(rs, ARB_ERR_SYSTEM, err_free, why, why_len, "gpu moe bench: cublasGemmEx failed (status %d)",
                           (int)bs);
        if (e == cudaSuccess)
            e = cudaGraphInstantiate(&exec, graph, 0);
        if (e != cudaSuccess)
            ARB_RAISE_GOTO(rs, ARB_CUDA_STATUS_(e), err_free, why, why_len, "gpu moe bench: cuBLAS graph: %s",
                           cudaGetErrorString(e));
        ARB_TRY_GOTO(rs, time_graph(exec, st, reps, &blas_ms, why, why_len), err_free);
    }
    {
        const double shared_bytes = 3.0 * Is * H * 2;
        out->T = T;
        out->layers_timed = nl;
        out->layers_total = (int)all;
        out->experts_per_layer = (double)total_uniq / nl;
        out->ours_us = ours_ms * 1e3 / nl;
        out->ours_bytes = out->experts_per_layer * arb_gpu_expert_bytes(m) + shared_bytes;
        out->cublas_us = blas_ms * 1e3 / nl;
        out->cublas_bytes = out->experts_per_layer * 3.0 * I * H * 2 + shared_bytes;
    }

err_free:
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    if (blas)
        cublasDestroy(blas);
    cudaStreamSynchronize(st);
    cudaFree(dev);
    return rs;
}
