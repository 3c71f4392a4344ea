// SPDX-License-Identifier: MIT
// The EAGLE-3 draft head's GPU forward (engine/draft/draft_gpu.h): draft_cpu.c's step as
// launches, the projections through arbk::gemv.
#define OMPI_SKIP_MPICXX 1 // instance.h includes mpi.h: the C API only
#include "draft/draft_gpu.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime.h>

#include "arbench/status.h"
#include "gpu/kernels/kernels.h"
#include "rmsnorm/rmsnorm.h"

using arbk::bf16;

struct arb_draft_gpu {
    arb_draft_cpu_opts_t o;
    const arb_draft_config_t *c;
    int64_t *d2t;                            // host [Vd]
    void *wmem;                              // one device allocation for the weights
    bf16 *fc, *in_norm, *hidden_norm, *post_norm, *norm, *q, *k, *v, *o_proj, *gate, *up, *down, *lm_head;
    void *smem;                              // one device allocation for the step state
    float2 *rope_cs;                         // [positions x hd/2] (cos, sin)
    bf16 *kcache, *vcache;                   // [positions x kv_heads x hd]
    bf16 *res, *x, *qb, *att, *act;          // [T x H], [T x 2H], [T x heads hd] x 2, [T x inter]
    float *logits, *best;                    // [T x vocab], [T]
    int32_t *tokens, *best_index;            // [T], [T]
    float best_h[arbk::kMaxT];
    int32_t index_h[arbk::kMaxT];
    arb_draft_parts_t parts; // [T x H] of each site slot
    bf16 *local_part;
    unsigned T;
};

namespace {

// out[t][:H] = rmsnorm(in[t], w) (ld_in, ld_out the row strides); tokens: in rows gathered
// from a table by id. One block per row.
__global__ void rms_rows(const bf16 *in, const int32_t *tokens, int ld_in, const bf16 *w, bf16 *out, int ld_out, int H,
                         float eps)
{
    const int t = blockIdx.x;
    const bf16 *r = in + (size_t)(tokens ? tokens[t] : t) * ld_in;
    __shared__ float part[32];
    float s = 0;
    for (int i = threadIdx.x; i < H; i += blockDim.x) {
        float a = __bfloat162float(r[i]);
        s += a * a;
    }
    for (int o = 16; o; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.f;
        for (int o = 16; o; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0)
            part[0] = s;
    }
    __syncthreads();
    const float inv = rsqrtf(part[0] / H + eps);
    for (int i = threadIdx.x; i < H; i += blockDim.x)
        out[(size_t)t * ld_out + i] = __float2bfloat16(__bfloat162float(r[i]) * inv * __bfloat162float(w[i]));
}

// Rotate-half RoPE of `heads` head vectors per row (row t at position pos0 + t), in place:
// rows of stride ld. grid (T, heads), block hd / 2.
__global__ void rope_rows(bf16 *x, int ld, const float2 *cs, int pos0, int hd)
{
    const int t = blockIdx.x, h = blockIdx.y, i = threadIdx.x, half = hd / 2;
    bf16 *v = x + (size_t)t * ld + (size_t)h * hd;
    const float2 c = cs[(size_t)(pos0 + t) * half + i];
    const float a = __bfloat162float(v[i]), b = __bfloat162float(v[i + half]);
    v[i] = __float2bfloat16(a * c.x - b * c.y);
    v[i + half] = __float2bfloat16(b * c.x + a * c.y);
}

// Causal GQA attention: grid (T, heads), one block; query row t at P = pos0 + t reads cache
// rows 0 .. P of kv head (head0 + h) / group - kv0. scores in dynamic shared memory.
__global__ void attend(const bf16 *q, const bf16 *kc, const bf16 *vc, bf16 *out, int pos0, int nq, int nkv, int hd,
                       int head0, int group, int kv0, float scale)
{
    extern __shared__ float sc[];
    __shared__ float red[2];
    const int t = blockIdx.x, h = blockIdx.y, P = pos0 + t, kvh = (head0 + h) / group - kv0;
    const bf16 *qh = q + ((size_t)t * nq + h) * hd;
    for (int p = threadIdx.x; p <= P; p += blockDim.x) {
        const bf16 *kr = kc + ((size_t)p * nkv + kvh) * hd;
        float s = 0;
        for (int d = 0; d < hd; d++)
            s += __bfloat162float(qh[d]) * __bfloat162float(kr[d]);
        sc[p] = s * scale;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float mx = -INFINITY, z = 0;
        for (int p = 0; p <= P; p++)
            mx = fmaxf(mx, sc[p]);
        for (int p = 0; p <= P; p++)
            z += __expf(sc[p] - mx);
        red[0] = mx, red[1] = z;
    }
    __syncthreads();
    const float mx = red[0], z = red[1];
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float a = 0;
        for (int p = 0; p <= P; p++)
            a += __expf(sc[p] - mx) * __bfloat162float(vc[((size_t)p * nkv + kvh) * hd + d]);
        out[((size_t)t * nq + h) * hd + d] = __float2bfloat16(a / z);
    }
}

} // namespace

extern "C" void arb_draft_gpu_destroy(arb_draft_gpu_t *m)
{
    if (!m)
        return;
    arb_draft_parts_free(&m->parts);
    cudaFree(m->wmem), cudaFree(m->smem);
    free(m->d2t);
    free(m);
}

extern "C" arb_status_t arb_draft_gpu_create(const arb_draft_cpu_opts_t *o, arb_draft_weights_t *w,
                                             arb_draft_gpu_t **out, char *why, size_t len)
{
    *out = nullptr;
    arb_draft_gpu_t *m = static_cast<arb_draft_gpu_t *>(calloc(1, sizeof *m));
    arb_status_t st = ARB_OK;
    const arb_draft_config_t *c = o->cfg;
    const arb_draft_shard_t &sh = o->shard;
    const size_t T = o->max_tokens, H = c->hidden_size, hd = c->head_dim, P = o->positions;
    const size_t qd = (size_t)sh.heads * hd, kd = (size_t)sh.kv_heads * hd, I = sh.inter, V = sh.vocab;
    if (!m) {
        arb_draft_weights_free(w);
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "draft head: out of host memory");
    }
    m->o = *o, m->c = c;
    if (T == 0 || T > (size_t)arbk::kMaxT || H % 8 || qd % 8 || I % 8 || hd % 2 || hd > 2048)
        ARB_RAISE_GOTO(st, ARB_ERR_INVALID, err, why, len,
                       "gpu draft head: steps of %zu rows (1 .. %d), hidden %zu, held q width %zu and intermediate %zu "
                       "(multiples of 8), head_dim %zu (even, <= 2048) expected",
                       T, arbk::kMaxT, H, qd, I, hd);
    {
        struct {
            bf16 **dst;
            const uint16_t *src;
            size_t n;
        } ws[] = {{&m->fc, w->fc, H * 3 * H},      {&m->in_norm, w->in_norm, H}, {&m->hidden_norm, w->hidden_norm, H},
                  {&m->post_norm, w->post_norm, H}, {&m->norm, w->norm, H},       {&m->q, w->q, qd * 2 * H},
                  {&m->k, w->k, kd * 2 * H},        {&m->v, w->v, kd * 2 * H},    {&m->o_proj, w->o, H * qd},
                  {&m->gate, w->gate, I * H},       {&m->up, w->up, I * H},       {&m->down, w->down, H * I},
                  {&m->lm_head, w->lm_head, V * H}};
        size_t total = 0;
        for (auto &e : ws)
            total += (e.n * 2 + 255) / 256 * 256;
        ARB_CUDA_GOTO(st, cudaMalloc(&m->wmem, total), err, why, len);
        char *p = static_cast<char *>(m->wmem);
        for (auto &e : ws) {
            *e.dst = reinterpret_cast<bf16 *>(p);
            ARB_CUDA_GOTO(st, cudaMemcpy(p, e.src, e.n * 2, cudaMemcpyHostToDevice), err, why, len);
            p += (e.n * 2 + 255) / 256 * 256;
        }
        if (!(m->d2t = static_cast<int64_t *>(malloc(sizeof(int64_t) * c->draft_vocab_size))))
            ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err, why, len, "draft head: out of host memory");
        memcpy(m->d2t, w->d2t, sizeof(int64_t) * c->draft_vocab_size);
    }
    {
        struct {
            void **dst;
            size_t bytes;
        } ss[] = {{(void **)&m->rope_cs, P * (hd / 2) * sizeof(float2)},
                  {(void **)&m->kcache, P * kd * 2},
                  {(void **)&m->vcache, P * kd * 2},
                  {(void **)&m->res, T * H * 2},
                  {(void **)&m->x, T * 2 * H * 2},
                  {(void **)&m->qb, T * qd * 2},
                  {(void **)&m->att, T * qd * 2},
                  {(void **)&m->act, T * (I ? I : 1) * 2},
                  {(void **)&m->logits, T * V * 4},
                  {(void **)&m->best, T * 4},
                  {(void **)&m->tokens, T * 4},
                  {(void **)&m->best_index, T * 4},
                  {(void **)&m->local_part, T * H * 2}};
        size_t total = 0;
        for (auto &e : ss)
            total += (e.bytes + 255) / 256 * 256;
        ARB_CUDA_GOTO(st, cudaMalloc(&m->smem, total), err, why, len);
        ARB_CUDA_GOTO(st, cudaMemset(m->smem, 0, total), err, why, len);
        char *p = static_cast<char *>(m->smem);
        for (auto &e : ss)
            *e.dst = p, p += (e.bytes + 255) / 256 * 256;
        float2 *cs = static_cast<float2 *>(malloc(P * (hd / 2) * sizeof(float2)));
        if (!cs)
            ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err, why, len, "draft head: out of host memory");
        for (size_t q = 0; q < P; q++) // HF's LlamaRotaryEmbedding without rope_scaling, from float64
            for (size_t i = 0; i < hd / 2; i++) {
                const double a = (double)q * pow(c->rope_theta, -2.0 * (double)i / (double)hd);
                cs[q * (hd / 2) + i] = make_float2((float)cos(a), (float)sin(a));
            }
        cudaError_t e = cudaMemcpy(m->rope_cs, cs, P * (hd / 2) * sizeof(float2), cudaMemcpyHostToDevice);
        free(cs);
        ARB_CUDA_GOTO(st, e, err, why, len);
    }
    arb_draft_weights_free(w);
    ARB_TRY_GOTO(st, arb_draft_parts_alloc(&m->o, T * H * 2, m->local_part, &m->parts, why, len), err);
    *out = m;
    return ARB_OK;
err:
    arb_draft_weights_free(w);
    arb_draft_gpu_destroy(m);
    return st;
}

// SITE: res = res + allreduce(part); h = rmsnorm(res, norm) (h in x's first H of each row:
// the buffer is free by then; rows of stride H, so x is read as [T x H] there).
static arb_status_t site(arb_draft_gpu_t *m, unsigned s, const bf16 *norm, bf16 *h, cudaStream_t st, char *why,
                         size_t len)
{
    const unsigned slot = m->T == 1 ? s + 2 : s, H = m->c->hidden_size;
    arb_inst_t *in = arb_draft_site_inst(&m->o, slot);
    bf16 *part = static_cast<bf16 *>(m->parts.part[slot]);
    if (!in)
        return arb_rmsnorm_residual_launch_pdl(m->res, part, norm, h, m->T, H, (float)m->c->rms_norm_eps, 0,
                                               st, why, len);
    const arb_rmsnorm_args_t a = {part, m->res, norm, h, m->T, H, (float)m->c->rms_norm_eps};
    return arb_inst_allreduce_rmsnorm(in, &a, ARB_FUSION_AUTO, st, nullptr, why, len);
}

extern "C" arb_status_t arb_draft_gpu_step(arb_draft_gpu_t *m, const void *aux, unsigned from, const void *embed,
                                           const uint32_t *tokens, unsigned T, unsigned pos0, void *stream, char *why,
                                           size_t len)
{
    const arb_draft_config_t *c = m->c;
    const arb_draft_shard_t &sh = m->o.shard;
    const int H = (int)c->hidden_size, hd = (int)c->head_dim, nq = (int)sh.heads, nkv = (int)sh.kv_heads,
              I = (int)sh.inter, V = (int)sh.vocab, t = (int)T;
    const float eps = (float)c->rms_norm_eps;
    if (T == 0 || T > m->o.max_tokens || pos0 + T > m->o.positions || (!aux && (T != 1 || from >= m->T)))
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "gpu draft step: %u rows at position %u (from row %u); expected 1 to %u rows inside %u positions", T,
                  pos0, from, m->o.max_tokens, m->o.positions);
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    const arbk::launch_ctx lc = {st, 0, {}, 0, 0, 0, 0};
    int32_t ids[arbk::kMaxT];
    for (unsigned i = 0; i < T; i++) {
        if (tokens[i] >= c->vocab_size)
            ARB_RAISE(ARB_ERR_INVALID, why, len, "gpu draft step: token %u >= vocab_size %u", tokens[i], c->vocab_size);
        ids[i] = (int32_t)tokens[i];
    }
    ARB_CUDA_TRY(cudaMemcpyAsync(m->tokens, ids, sizeof(int32_t) * T, cudaMemcpyHostToDevice, st), why, len);
    const bf16 *auxp = static_cast<const bf16 *>(aux);
    if (auxp) // res = fc([a_low, a_mid, a_high])
        ARB_CUDA_TRY(arbk::gemv(lc, arbk::GEMV_BF16, m->fc, nullptr, auxp + (size_t)pos0 * 3 * H, 3 * H, H, 3 * H,
                                m->res, H, t),
                     why, len);
    else if (from) // the previous step's pre-norm output row
        ARB_CUDA_TRY(cudaMemcpyAsync(m->res, m->res + (size_t)from * H, (size_t)H * 2, cudaMemcpyDeviceToDevice, st),
                     why, len);
    m->T = T;
    // x = [input_layernorm(embed[token]), hidden_norm(res)]
    rms_rows<<<t, 256, 0, st>>>(static_cast<const bf16 *>(embed), m->tokens, H, m->in_norm, m->x, 2 * H, H, eps);
    rms_rows<<<t, 256, 0, st>>>(m->res, nullptr, H, m->hidden_norm, m->x + H, 2 * H, H, eps);
    ARB_CUDA_TRY(cudaGetLastError(), why, len);
    // q = x @ q_r^T; k, v -> cache rows pos0 ..; RoPE on q and k
    bf16 *kp = m->kcache + (size_t)pos0 * nkv * hd, *vp = m->vcache + (size_t)pos0 * nkv * hd;
    ARB_CUDA_TRY(arbk::gemv(lc, arbk::GEMV_BF16, m->q, nullptr, m->x, 2 * H, nq * hd, 2 * H, m->qb, nq * hd, t), why,
                 len);
    ARB_CUDA_TRY(arbk::gemv(lc, arbk::GEMV_BF16, m->k, nullptr, m->x, 2 * H, nkv * hd, 2 * H, kp, nkv * hd, t), why,
                 len);
    ARB_CUDA_TRY(arbk::gemv(lc, arbk::GEMV_BF16, m->v, nullptr, m->x, 2 * H, nkv * hd, 2 * H, vp, nkv * hd, t), why,
                 len);
    rope_rows<<<dim3(t, nq), hd / 2, 0, st>>>(m->qb, nq * hd, m->rope_cs, (int)pos0, hd);
    rope_rows<<<dim3(t, nkv), hd / 2, 0, st>>>(kp, nkv * hd, m->rope_cs, (int)pos0, hd);
    const size_t smem = sizeof(float) * (pos0 + T);
    const int group = (int)(c->num_attention_heads / c->num_key_value_heads);
    if (smem > 48 * 1024)
        ARB_CUDA_TRY(cudaFuncSetAttribute(attend, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem), why, len);
    attend<<<dim3(t, nq), 128, smem, st>>>(m->qb, m->kcache, m->vcache, m->att, (int)pos0, nq, nkv, hd, (int)sh.head0,
                                          group, (int)sh.kv0, 1.0f / sqrtf((float)hd));
    ARB_CUDA_TRY(cudaGetLastError(), why, len);
    bf16 *pa = static_cast<bf16 *>(m->parts.part[T == 1 ? 2 : 0]), *pb = static_cast<bf16 *>(m->parts.part[T == 1 ? 3 : 1]),
         *h = m->x; // h [T x H] in x
    ARB_CUDA_TRY(arbk::gemv(lc, arbk::GEMV_BF16, m->o_proj, nullptr, m->att, nq * hd, H, nq * hd, pa, H, t), why, len);
    ARB_TRY(site(m, 0, m->post_norm, h, st, why, len)); // SITE A
    // part = down_r(silu(gate_r h) * up_r h)
    ARB_CUDA_TRY(arbk::gemv(lc, arbk::GEMV_SILU_MUL, m->gate, m->up, h, H, I, H, m->act, I, t), why, len);
    ARB_CUDA_TRY(arbk::gemv(lc, arbk::GEMV_BF16, m->down, nullptr, m->act, I, H, I, pb, H, t), why, len);
    ARB_TRY(site(m, 1, m->norm, h, st, why, len)); // SITE B
    // logits_r = h @ lm_head_r^T (fp32); the shard's (max, draft id)
    ARB_CUDA_TRY(arbk::gemv(lc, arbk::GEMV_F32, m->lm_head, nullptr, h, H, V, H, m->logits, V, t), why, len);
    ARB_CUDA_TRY(arbk::argmax(lc, m->logits, V, (int)sh.vocab0, m->best, m->best_index, t), why, len);
    ARB_CUDA_TRY(cudaMemcpyAsync(m->best_h, m->best, sizeof(float) * T, cudaMemcpyDeviceToHost, st), why, len);
    ARB_CUDA_TRY(cudaMemcpyAsync(m->index_h, m->best_index, sizeof(int32_t) * T, cudaMemcpyDeviceToHost, st), why,
                 len);
    ARB_CUDA_TRY(cudaStreamSynchronize(st), why, len);
    return ARB_OK;
}

extern "C" void arb_draft_gpu_argmax(const arb_draft_gpu_t *m, unsigned t, float *best, uint32_t *draft_id)
{
    *best = m->best_h[t];
    *draft_id = (uint32_t)m->index_h[t];
}

extern "C" uint32_t arb_draft_gpu_target_id(const arb_draft_gpu_t *m, uint32_t draft_id)
{
    return (uint32_t)((int64_t)draft_id + m->d2t[draft_id]);
}
