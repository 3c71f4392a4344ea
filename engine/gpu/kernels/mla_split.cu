// SPDX-License-Identifier: MIT
// MLA attention over the latent cache, the merge and W_uv in one launch (forward.md):
//   grid (head h, split s): split s takes a contiguous run of 32-position chunks of the
//   cache (the run's length from P0 on the device, so a captured step replays at any P0)
//   for the T rows of head h. Per chunk, double-buffered with cp.async: scores with each
//   warp's kPosPerWarp positions widened once into registers and swept against the T
//   queries; softmax pieces with a lane per position, folded into the split's running
//   (max, sum); the exp-weighted latent sum by a thread per 8 columns in four strands of
//   positions, added in strand order at the end. The split's (sum, max, exp-sum) go to
//   its slot of `partial`; then an integer ticket per head: the head's last CTA merges
//   the splits in ascending order, rounds olat to bf16 and projects it,
//   o[t,h] = olat[t,h] @ W_uv[h]^T. Every sum has a fixed order (no atomics on floats),
//   so replays are bit-identical. The splits' CTAs of one head read the whole cache; the
//   heads of one split are adjacent in the grid, so the cache streams from DRAM once.
#include "gpu/kernels/kernels.h"

#include <cmath>

#include "gpu/kernels/common.cuh"

namespace arbk {
namespace {

constexpr int kAttnWarps = 8;
constexpr int kPosPerWarp = kAttnChunk / kAttnWarps;
constexpr int kLatVecs = kMaxLatent / 8;                // 16-byte vectors of a latent row, at most
constexpr int kPvStrands = kAttnWarps * kWarp / kLatVecs; // position strands of the weighted sum
constexpr int kMaxSplits = 64;
static_assert(kAttnChunk <= kWarp && kAttnChunk % kAttnWarps == 0, "a lane per position of a chunk");
static_assert(kAttnWarps >= kMaxT, "a warp per row in the softmax");
static_assert(kPvStrands >= 1, "a thread per latent vector");

__device__ __forceinline__ void cp_async16(void *dst, const void *src)
{
    const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// Chunk ch's n positions (ckv rows then kpe rows) into a staging buffer, one group.
__device__ __forceinline__ void load_chunk(uint4 *buf, const bf16 *cache_ckv, const bf16 *cache_kpe, int ch, int L,
                                           int nv, int nvr)
{
    const int c0 = ch * kAttnChunk, n = min(kAttnChunk, L - c0);
    const uint4 *ckv = reinterpret_cast<const uint4 *>(cache_ckv) + (size_t)c0 * nv;
    const uint4 *kpe = reinterpret_cast<const uint4 *>(cache_kpe) + (size_t)c0 * nvr;
    for (int i = threadIdx.x; i < n * nv; i += blockDim.x)
        cp_async16(buf + i, ckv + i);
    for (int i = threadIdx.x; i < n * nvr; i += blockDim.x)
        cp_async16(buf + kAttnChunk * nv + i, kpe + i);
    cp_async_commit();
}

// The split's (max, exp-sum) per row and the factor its running sums take this chunk.
struct row_stats {
    float m[kMaxT], l[kMaxT], alpha[kMaxT];
};

// Dynamic shared memory (16-byte vectors): two staging buffers of kAttnChunk x (nv + nvr),
// the queries [T x nv] and [T x nvr], the scores [kMaxT x kAttnChunk] fp32. After the last
// chunk the staging buffers hold the strands' sums, then olat [T x rkv] fp32.
__global__ void __launch_bounds__(kAttnWarps *kWarp)
    mla_attention_kernel(const bf16 *__restrict__ qlat, const bf16 *__restrict__ qpe,
                         const bf16 *__restrict__ cache_ckv, const bf16 *__restrict__ cache_kpe,
                         const int32_t *__restrict__ pos0, const bf16 *__restrict__ kv_b, float *partial, bf16 *o,
                         int nh_r, int dn, int dr, int dv, int rkv, float scale, int T)
{
    extern __shared__ uint4 smem_v[];
    __shared__ row_stats st;
    __shared__ float wsp[kMaxT][kMaxSplits];
    __shared__ float lsum_s[kMaxT];
    __shared__ int last;
    const int h = blockIdx.x, s = blockIdx.y, nsplit = gridDim.y, R = T * nh_r, ps = rkv + 4;
    const int nv = rkv / 8, nvr = dr / 8, lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    const bf16 *wuv = kv_b + ((size_t)h * (dn + dv) + dn) * rkv;
    const int bufv = kAttnChunk * (nv + nvr); // vectors of one staging buffer
    uint4 *ql = smem_v + 2 * bufv, *qp = ql + T * nv;
    float *sc = reinterpret_cast<float *>(qp + T * nvr);
    pdl_launch_dependents();
    { // W_uv[h] toward L2 for the head's last CTA: this split's share of its 128-byte lines
        const int lines = (dv * rkv * 2 + 127) / 128;
        for (int i = s * blockDim.x + threadIdx.x; i < lines; i += nsplit * blockDim.x)
            asm volatile("prefetch.global.L2 [%0];" ::"l"(reinterpret_cast<const char *>(wuv) + (size_t)i * 128));
    }
    // P0 comes from the host before the step, never from a predecessor kernel; cache rows
    // before P0 are not written by this step, so a first chunk below P0 loads before the wait.
    const int P0 = *pos0, L = P0 + T, nch = (L + kAttnChunk - 1) / kAttnChunk;
    const int cps = (nch + nsplit - 1) / nsplit, ch0 = s * cps, ch1 = min(nch, ch0 + cps);
    const int used = (nch + cps - 1) / cps; // splits with at least one chunk
    const bool early = ch0 < ch1 && (ch0 + 1) * kAttnChunk <= P0;
    if (early)
        load_chunk(smem_v, cache_ckv, cache_kpe, ch0, L, nv, nvr);
    pdl_wait();
    if (ch0 < ch1 && !early)
        load_chunk(smem_v, cache_ckv, cache_kpe, ch0, L, nv, nvr);
    for (int i = threadIdx.x; i < T * nv; i += blockDim.x)
        ql[i] = reinterpret_cast<const uint4 *>(qlat + ((size_t)(i / nv) * nh_r + h) * rkv)[i % nv];
    for (int i = threadIdx.x; i < T * nvr; i += blockDim.x)
        qp[i] = reinterpret_cast<const uint4 *>(qpe + ((size_t)(i / nvr) * nh_r + h) * dr)[i % nvr];
    if (threadIdx.x < kMaxT)
        st.m[threadIdx.x] = -INFINITY, st.l[threadIdx.x] = 0.0f;
    const int cv = threadIdx.x % kLatVecs, strand = threadIdx.x / kLatVecs;
    float acc[kMaxT][8] = {}; // this thread's 8 columns of every row, its strand's positions
    for (int ch = ch0; ch < ch1; ch++) {
        const int cur = (ch - ch0) & 1, c0 = ch * kAttnChunk, n = min(kAttnChunk, L - c0);
        if (ch + 1 < ch1)
            load_chunk(smem_v + (cur ^ 1) * bufv, cache_ckv, cache_kpe, ch + 1, L, nv, nvr), cp_async_wait<1>();
        else
            cp_async_wait<0>();
        __syncthreads();
        const uint4 *ckv = smem_v + cur * bufv, *kpe = ckv + kAttnChunk * nv;
        { // scores: this warp's positions against the T rows; lane holds latent vectors lane + 32 i
            float kf[kPosPerWarp][kMaxLatVec][8], rf[kPosPerWarp][8];
#pragma unroll
            for (int j = 0; j < kPosPerWarp; j++) {
                const int p = warp * kPosPerWarp + j;
#pragma unroll
                for (int i = 0; i < kMaxLatVec; i++) {
                    const int v = lane + kWarp * i;
                    if (p < n && v < nv)
                        unpack8(ckv[p * nv + v], kf[j][i]);
                    else
#pragma unroll
                        for (int q8 = 0; q8 < 8; q8++)
                            kf[j][i][q8] = 0.0f;
                }
                if (p < n && lane < nvr)
                    unpack8(kpe[p * nvr + lane], rf[j]);
                else
#pragma unroll
                    for (int q8 = 0; q8 < 8; q8++)
                        rf[j][q8] = 0.0f;
            }
            for (int t = 0; t < T; t++) {
                float sj[kPosPerWarp] = {};
#pragma unroll
                for (int i = 0; i < kMaxLatVec; i++) {
                    const int v = lane + kWarp * i;
                    if (v < nv) {
                        float qf[8];
                        unpack8(ql[t * nv + v], qf);
#pragma unroll
                        for (int j = 0; j < kPosPerWarp; j++)
#pragma unroll
                            for (int q8 = 0; q8 < 8; q8++)
                                sj[j] = fmaf(qf[q8], kf[j][i][q8], sj[j]);
                    }
                }
                if (lane < nvr) {
                    float qf[8];
                    unpack8(qp[t * nvr + lane], qf);
#pragma unroll
                    for (int j = 0; j < kPosPerWarp; j++)
#pragma unroll
                        for (int q8 = 0; q8 < 8; q8++)
                            sj[j] = fmaf(qf[q8], rf[j][q8], sj[j]);
                }
#pragma unroll
                for (int off = kWarp / 2; off > 0; off >>= 1)
#pragma unroll
                    for (int j = 0; j < kPosPerWarp; j++)
                        sj[j] += __shfl_xor_sync(0xffffffffu, sj[j], off);
                float mine = sj[0]; // lane j < kPosPerWarp stores position j of the warp
#pragma unroll
                for (int j = 1; j < kPosPerWarp; j++)
                    mine = lane == j ? sj[j] : mine;
                if (lane < kPosPerWarp) {
                    const int p = warp * kPosPerWarp + lane; // p >= n: past L, so masked
                    sc[t * kAttnChunk + p] = c0 + p <= P0 + t ? mine * scale : -INFINITY;
                }
            }
        }
        __syncthreads();
        if (warp < T) { // softmax pieces of row t: a lane per position, folded into the split's
            const int t = warp;
            const float x = lane < kAttnChunk ? sc[t * kAttnChunk + lane] : -INFINITY;
            const float m_old = st.m[t], m_new = fmaxf(m_old, warp_max(x));
            const float e = x == -INFINITY ? 0.0f : expf(x - m_new);
            const float alpha = m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
            const float l = warp_sum(e);
            if (lane < kAttnChunk)
                sc[t * kAttnChunk + lane] = e;
            __syncwarp();
            if (lane == 0)
                st.m[t] = m_new, st.l[t] = fmaf(st.l[t], alpha, l), st.alpha[t] = alpha;
        }
        __syncthreads();
        if (cv < nv) {
#pragma unroll
            for (int t = 0; t < kMaxT; t++)
                if (t < T)
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        acc[t][j] *= st.alpha[t];
            for (int p = strand; p < n; p += kPvStrands) {
                float kf[8];
                unpack8(ckv[p * nv + cv], kf);
#pragma unroll
                for (int t = 0; t < kMaxT; t++)
                    if (t < T) {
                        const float e = sc[t * kAttnChunk + p];
#pragma unroll
                        for (int j = 0; j < 8; j++)
                            acc[t][j] = fmaf(e, kf[j], acc[t][j]);
                    }
            }
        }
        __syncthreads(); // the buffer and the scores are rewritten next chunk
    }
    // The strands' sums in strand order into the split's slot: sum, max, exp-sum.
    float *red = reinterpret_cast<float *>(smem_v); // [kPvStrands - 1][T][rkv]
    if (ch0 < ch1) {
        if (strand > 0 && cv < nv)
#pragma unroll
            for (int t = 0; t < kMaxT; t++)
                if (t < T)
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        red[((strand - 1) * T + t) * rkv + 8 * cv + j] = acc[t][j];
        __syncthreads();
        if (strand == 0 && cv < nv)
#pragma unroll
            for (int t = 0; t < kMaxT; t++) {
                if (t >= T)
                    break;
                float v8[8];
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    v8[j] = acc[t][j];
                    for (int q = 1; q < kPvStrands; q++)
                        v8[j] += red[((q - 1) * T + t) * rkv + 8 * cv + j];
                }
                float4 *dst = reinterpret_cast<float4 *>(partial + ((size_t)s * R + t * nh_r + h) * ps) + 2 * cv;
                dst[0] = make_float4(v8[0], v8[1], v8[2], v8[3]);
                dst[1] = make_float4(v8[4], v8[5], v8[6], v8[7]);
            }
        if (threadIdx.x < T) {
            float *dst = partial + ((size_t)s * R + threadIdx.x * nh_r + h) * ps;
            dst[rkv] = st.m[threadIdx.x], dst[rkv + 1] = st.l[threadIdx.x];
        }
    }
    // Release this split's slot, take the head's ticket (word rkv + 2 of row h of slot 0).
    unsigned *ticket = reinterpret_cast<unsigned *>(partial + (size_t)h * ps + rkv + 2);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(ticket, 1u) == (unsigned)nsplit - 1;
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    if (threadIdx.x == 0)
        *ticket = 0; // ready for the next launch
    if (threadIdx.x < T) { // split weights exp(m_s - M) and the merged exp-sum, ascending splits
        const int t = threadIdx.x;
        float M = -INFINITY;
        for (int q = 0; q < used; q++)
            M = fmaxf(M, __ldcg(partial + ((size_t)q * R + t * nh_r + h) * ps + rkv));
        float lsum = 0.0f;
        for (int q = 0; q < used; q++) {
            const float *row = partial + ((size_t)q * R + t * nh_r + h) * ps;
            const float mq = __ldcg(row + rkv), w = mq == -INFINITY ? 0.0f : expf(mq - M);
            wsp[t][q] = w;
            lsum = fmaf(w, __ldcg(row + rkv + 1), lsum);
        }
        lsum_s[t] = lsum;
    }
    __syncthreads();
    float *olat = reinterpret_cast<float *>(smem_v); // [T][rkv], the bf16-rounded olat
    for (int i = threadIdx.x; i < T * rkv; i += blockDim.x) {
        const int t = i / rkv, c = i % rkv;
        float a = 0.0f;
        for (int q = 0; q < used; q++)
            a = fmaf(wsp[t][q], __ldcg(partial + ((size_t)q * R + t * nh_r + h) * ps + c), a);
        olat[i] = bf(to_bf(a / lsum_s[t])); // olat is stored bf16 (forward.md)
    }
    __syncthreads();
    for (int j = warp; j < dv; j += kAttnWarps) { // o[t,h,j] = olat[t] . W_uv[h][j]
        const uint4 *w = reinterpret_cast<const uint4 *>(wuv + (size_t)j * rkv);
        float a[kMaxT] = {};
#pragma unroll
        for (int i = 0; i < kMaxLatVec; i++) {
            const int v = lane + kWarp * i;
            if (v < nv) {
                float wf[8];
                unpack8(ld_stream(w + v), wf);
#pragma unroll
                for (int t = 0; t < kMaxT; t++)
                    if (t < T)
#pragma unroll
                        for (int q8 = 0; q8 < 8; q8++)
                            a[t] = fmaf(wf[q8], olat[t * rkv + 8 * v + q8], a[t]);
            }
        }
#pragma unroll
        for (int t = 0; t < kMaxT; t++)
            if (t < T) {
                const float sum = warp_sum(a[t]);
                if (lane == t)
                    o[((size_t)t * nh_r + h) * dv + j] = to_bf(sum);
            }
    }
}

} // namespace

size_t mla_attention_smem(int rkv, int dr, int T)
{
    return (2 * (size_t)kAttnChunk + T) * (rkv + dr) * sizeof(bf16) + (size_t)kMaxT * kAttnChunk * sizeof(float);
}

cudaError_t mla_setup(int rkv, int dr, int nh_r)
{
    (void)nh_r;
    return cudaFuncSetAttribute(mla_attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)mla_attention_smem(rkv, dr, kMaxT));
}

int mla_attention_splits(int nh_r, int context, int sms)
{
    const int chunks = (context + kAttnChunk - 1) / kAttnChunk;
    int n = sms / nh_r; // one wave of CTAs over the heads (~200 registers a thread: one CTA per SM)
    n = n > chunks ? chunks : n;
    n = n > kMaxSplits ? kMaxSplits : n;
    return n < 1 ? 1 : n;
}

cudaError_t mla_attention(const launch_ctx &c, const bf16 *qlat, const bf16 *qpe, const bf16 *cache_ckv,
                          const bf16 *cache_kpe, const int32_t *pos0, const bf16 *kv_b, float *partial, bf16 *o,
                          int nh_r, int dn, int dr, int dv, int rkv, float scale, int T, int context, int sms)
{
    if (rkv % 8 || rkv > kMaxLatent || dr % 8 || dr > 8 * kWarp || T < 1 || T > kMaxT)
        return cudaErrorInvalidValue;
    const dim3 grid(nh_r, mla_attention_splits(nh_r, context, sms));
    return launch(c, mla_attention_kernel, grid, dim3(kAttnWarps * kWarp), mla_attention_smem(rkv, dr, T), qlat, qpe,
                  cache_ckv, cache_kpe, pos0, kv_b, partial, o, nh_r, dn, dr, dv, rkv, scale, T);
}

} // namespace arbk
