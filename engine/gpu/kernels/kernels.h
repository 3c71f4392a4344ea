// SPDX-License-Identifier: MIT
// The engine's kernels: one launcher per kernel, each enqueued on the launch context's
// stream (a plain launch, so it may be captured in a CUDA graph) and returning the
// launch's cudaError_t. Shapes are per rank (engine/forward.md); T <= kMaxT tokens.
// Inputs that change between replays of one captured step (token ids, P0) are read from
// device memory. C++ only (the step and the tests are .cu).
#ifndef ARB_ENGINE_KERNELS_H
#define ARB_ENGINE_KERNELS_H

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace arbk {

using bf16 = __nv_bfloat16;

// Weights a later kernel of the step reads (nothing in the step writes them), for a launch
// to pull toward L2 after its wait: each CTA one contiguous share of the 128-byte lines.
// Only the kernels that say so (mla_absorb, mla_uv) honour it; the others ignore it.
struct l2_ahead {
    const void *p = nullptr;
    size_t bytes = 0;
};

struct launch_ctx {
    cudaStream_t stream;
    int pdl;        // 1: launch with programmatic stream serialization (PDL)
    l2_ahead ahead; // none unless set
    int wave;       // 1: a projection's grid folded into one wave (wave_fit.h); gemv and qkva_prep honour it
    int moe_stage;  // 1: the routed INT4 gate/up tiles at T <= 3 stage more groups in shared memory (moe.cu)
    int moe_early;  // 1: gate/up triggers its dependents after its wait, and down reads the selection and issues its
                    // first round of routed weights before its own (moe.cu); 2: and pulls its later rounds' INT4
                    // weights toward L2 there (1 and 2 withdrawn: a race); 3 spec: gate/up as 1, down's
                    // selection before its wait only a guess, read again after it and the first round issued
                    // again where it differs (moe_down_ops.cuh); 4 spec-sync: 3's down after a gate/up that
                    // triggers at its start; give gate/up and down the same context
    int moe_order;  // the gate/up grid's order: 0 auto (routed tiles first where they fit one an SM), 1 the shared
                    // expert's parts first, 2 the routed tiles first, 3 spread (as many routed tiles as SMs, the
                    // shared parts, the other routed tiles; moe.cu); the same bits in every order
};

constexpr int kMaxT = 8;          // tokens per step (ARB_GPU_MAX_T)
constexpr int kMaxNope = 256;     // qk_nope_head_dim
constexpr int kMaxLatVec = 2;     // 16-byte vectors of a latent row per lane
constexpr int kMaxLatent = kMaxLatVec * 32 * 8; // kv_lora_rank <= 512
constexpr int kAttnChunk = 32;    // cache positions per attention CTA (<= 32: a lane per position)
constexpr int kPosWarps = 8;      // warps of the attend CTA (mla_split.cu; persist.cu's stage)
constexpr int kWideWarps = 16;    // warps of the wide attend CTA (--attn-wide-from: up to two m16 tiles of rows)
constexpr int kMaxChunks = 4096;  // context <= kMaxChunks * kAttnChunk (131072 positions)
constexpr int kMaxExperts = 1024; // n_routed_experts
constexpr int kMaxTopk = 16;      // num_experts_per_tok
constexpr int kMaxGroups = 32;    // n_group: one lane per group
constexpr int kMaxSlots = 128;    // distinct experts of one step (min(T k, E))
// The MoE kernels alone take up to kMoeMaxT tokens (tree verify; the step's other kernels
// stop at kMaxT): NH = moe_halves(T) halves of 8 tokens (mma.sync's n), and act's and coef's
// token stride moe_tstride(T) = 8 NH (8 for every T the step runs, the router's layout).
constexpr int kMoeMaxT = 16;
constexpr int moe_halves(int T) { return T <= 8 ? 1 : 2; }
constexpr int moe_tstride(int T) { return 8 * moe_halves(T); }
static_assert(moe_tstride(kMaxT) == kMaxT, "the router writes coef with the stride of T <= kMaxT");
// The MoE gate/up grid's order (moe.cu, launch_ctx.moe_order): block bx of a grid of sh shared
// parts and the routed tiles whose first `head` routed tiles lead it, as the logical block (the
// shared parts 0 .. sh - 1, then the routed tiles) it runs: the first head blocks routed tiles
// 0 .. head - 1, the next sh the shared parts, the rest the other routed tiles in order.
__host__ __device__ constexpr int moe_gate_up_block(int bx, int sh, int head)
{
    return bx < head ? sh + bx : bx < head + sh ? bx - head : bx;
}

// ---- embed.cu: res[t] = embed[token[t]]; h[t] = rmsnorm(res[t], norm) ----
cudaError_t embed_rmsnorm(const launch_ctx &c, const bf16 *table, const int32_t *tokens, const bf16 *norm, bf16 *res,
                          bf16 *h, int H, float eps, int T);

// ---- gemv.cu: y[t][n] = W[n] . x[t] for T <= 8 (x [T x ldx], y [T x ldy]) ----
enum gemv_epilogue {
    GEMV_BF16 = 0,     // y bf16
    GEMV_F32 = 1,      // y fp32
    GEMV_SILU_MUL = 2, // y bf16 = silu(W[n] . x) * (W2[n] . x)
};
cudaError_t gemv(const launch_ctx &c, gemv_epilogue epi, const bf16 *W, const bf16 *W2, const bf16 *x, int ldx,
                 int N, int K, void *y, int ldy, int T);

// ---- mla_prep.cu: qa = norm(qkva[:, :rq]); cache rows P0+t: norm(ckv), rope(kpe) ----
// rq, rkv, dr multiples of 8.
cudaError_t mla_prep(const launch_ctx &c, const bf16 *qkva, const bf16 *q_a_norm, const bf16 *kv_a_norm,
                     const float2 *rope_cs, const int32_t *pos0, bf16 *qa, bf16 *cache_ckv, bf16 *cache_kpe, int rq,
                     int rkv, int dr, float eps, int T);
// qkva = x @ W^T (W [(rq + rkv + dr) x K], gemv's bf16 epilogue) and then mla_prep, in one
// launch (the projection's last block runs the prep); results bit-identical to gemv + mla_prep.
// ticket: one device word, zero before the first launch and left zero by each. jobs false: the
// projection only (no ticket, no prep: --fuse prep_qb, where mla_qb_absorb runs the prep).
cudaError_t qkva_prep(const launch_ctx &c, const bf16 *W, const bf16 *x, int K, bf16 *qkva, const bf16 *q_a_norm,
                      const bf16 *kv_a_norm, const float2 *rope_cs, const int32_t *pos0, bf16 *qa, bf16 *cache_ckv,
                      bf16 *cache_kpe, int rq, int rkv, int dr, float eps, unsigned *ticket, int T, bool jobs = true);

// ---- mla.cu, mla_split.cu: absorbed attention over the latent cache ----
// rope_cs [context x dr/2] (cos * m, sin * m); partial [chunks x T nh_r x (rkv + 4)] fp32.
// Once per process: the attend kernel's shared memory and rows per block. smem_cap bytes
// per block (0: the device's opt-in limit) bound the rows a block holds; fill_ctas (0: three
// per SM of the device) is the grid the launch aims for: the step's rows are split over
// grid.y groups of at least min_rows rows (0: 4) while chunks x groups stays within it, and
// wherever they do not fit the shared memory (no row's operations change). wide_from (0: never;
// 1..kMaxT): steps of at least that many tokens whose rows pass one m16 tile (T nh_r > 16) take the
// wide CTAs instead (16 warps, a group of up to 32 rows a chunk; the same bits).
cudaError_t mla_setup(int rkv, int dr, int nh_r, size_t smem_cap, int fill_ctas, int min_rows, int wide_from = 0);
// qlat[t,h] = q_nope[t,h] @ W_uk[h]; qpe[t,h] = rope(q_pe[t,h], P0 + t); c.ahead pulled
// toward L2 after the wait (as mla_uv does)
cudaError_t mla_absorb(const launch_ctx &c, const bf16 *q, const bf16 *kv_b, const float2 *rope_cs,
                       const int32_t *pos0, bf16 *qlat, bf16 *qpe, int nh_r, int dn, int dr, int dv, int rkv, int T);
// q = qa @ q_b^T, then mla_absorb's qlat and qpe, in one launch with the bits of the two
// (mla_qb.cu): where mla_qb_absorb_fits (dn 128, dr a multiple of 16, q_b's rows in one or two
// parts); scratch [mla_qb_absorb_scratch_floats], tickets [nh_r] zero before the first launch
// With prep.qkva set (--fuse prep_qb, where mla_qb_prep_fits) it also runs mla_prep's jobs:
// every CTA forms its own qa from qkva's first rq columns (the q_a norm, a warp a token, into
// shared memory: mla_prep's bits) after its wait, and one CTA writes qa and the cache rows P0 + t
// (the latent's norm, RoPE) for attend; qkva_prep then runs with jobs 0. The same bits as
// qkva_prep with its jobs and this launch without.
struct qb_prep {
    const bf16 *qkva = nullptr; // nullptr: qa is given (the prep ran in qkva_prep's last block)
    const bf16 *q_a_norm = nullptr, *kv_a_norm = nullptr;
    bf16 *cache_ckv = nullptr, *cache_kpe = nullptr;
    bf16 *qa = nullptr; // where qa is written (the launch's qa argument is then not read)
    float eps = 0.0f;
};
bool mla_qb_absorb_fits(int rq, int dn, int dr, int rkv);
bool mla_qb_prep_fits(int rq, int dn, int dr, int rkv);
size_t mla_qb_absorb_scratch_floats(int nh_r, int rkv);
cudaError_t mla_qb_absorb(const launch_ctx &c, const bf16 *qa, const bf16 *Wqb, const bf16 *kv_b, const float2 *rope_cs,
                          const int32_t *pos0, bf16 *q, bf16 *qlat, bf16 *qpe, float *scratch, unsigned *tickets,
                          int nh_r, int rq, int dn, int dr, int dv, int rkv, int T, const qb_prep &prep = qb_prep());
// mla_attend_pos writes a chunk's partials; mla_merge leaves olat (bf16, [T nh_r x rkv],
// the layout of qlat) and mla_uv projects it: o[t,h] = olat[t,h] @ W_uv[h]^T.
size_t mla_attend_pos_smem(int rkv, int dr, int rows);
// The attend grid mla_attend_pos launches for T tokens over `context` positions aiming at
// fill CTAs (0: mla_setup's target): chunks x groups blocks of up to Rg rows, each of *warps warps
// (the wide CTAs where mla_setup's wide_from says so; warps nullptr: the 8-warp grid, as the
// persistent form's stage runs it).
void mla_attend_grid(int T, int nh_r, int context, int fill, int *chunks, int *groups, int *Rg, int *warps = nullptr);
cudaError_t mla_attend_pos(const launch_ctx &c, const bf16 *qlat, const bf16 *qpe, const bf16 *cache_ckv,
                           const bf16 *cache_kpe, const int32_t *pos0, float *partial, int nh_r, int dr, int rkv,
                           float scale, int T, int context);
cudaError_t mla_merge(const launch_ctx &c, const float *partial, const int32_t *pos0, bf16 *olat, int nh_r, int rkv,
                      int T);
cudaError_t mla_uv(const launch_ctx &c, const bf16 *olat, const bf16 *kv_b, bf16 *o, int nh_r, int dn, int dv, int rkv,
                   int T);
// --fuse merge_uv: the merge and W_uv in one launch, a block per (row, 64 latent columns) as the
// merge's, each block's W_uv columns loaded before the PDL wait and its products over them summed
// into scratch; a row's last block to arrive (a ticket per row) adds the blocks in order. Not
// bit-identical to mla_merge + mla_uv (W_uv's products in another order). Where
// mla_merge_uv_fits (dv <= 128, rkv a multiple of 8 up to 512); scratch
// [mla_merge_uv_scratch_floats], tickets [kMaxT nh_r] zero before the first launch (left zero).
bool mla_merge_uv_fits(int dv, int rkv);
size_t mla_merge_uv_scratch_floats(int nh_r, int dv, int rkv);
cudaError_t mla_merge_uv(const launch_ctx &c, const float *partial, const int32_t *pos0, const bf16 *kv_b, bf16 *o,
                         float *scratch, unsigned *tickets, int nh_r, int dn, int dv, int rkv, int T);

// ---- router.cu and moe.cu ----
struct moe_route {   // device buffers the router fills and the MoE kernels read
    int32_t *experts; // [T x k] this layer's selection, router order
    float *coef;      // [kMaxSlots x moe_tstride(T)]: weight token t gives expert uniq[u] (0: not selected)
    int32_t *uniq;    // [kMaxSlots] distinct selected experts, ascending
    int32_t *n_uniq;  // [1]
    // The shared expert's gate/up is split over its inputs in parts of a block each (moe.cu):
    // each part's fp32 sums [moe_sh_part_floats(H, Is)] and a ticket per 16-row tile
    // [moe_sh_tickets(Is)], zero before the first launch and left zero; unused (may be NULL)
    // where moe_sh_part_floats is 0 (one part).
    float *sh_part;
    unsigned *sh_ticket;
};
size_t moe_sh_part_floats(int H, int Is);
int moe_sh_tickets(int Is);
// One launch: the logits, then the top-k and dedupe by the logits' last block (a ticket);
// logits [T x E] fp32 scratch; ticket: one device word, zero before the first launch and
// left zero by each.
cudaError_t router(const launch_ctx &c, const bf16 *h, const bf16 *W, const float *bias, float *logits,
                   const moe_route &rt, int H, int E, int k, int n_group, int topk_group, float scaling,
                   unsigned *ticket, int T);

struct moe_weights {
    const void *gate, *up, *down;       // routed: bf16 [E x I x H], [E x H x I]; or INT4 (in / 8 words per row) and
    const bf16 *gate_s, *up_s, *down_s; // scales (rows x in / 32), both in moe_int4_layout.h's layout; NULL: bf16

    const bf16 *sh_gate, *sh_up, *sh_down; // shared expert bf16 [Is x H], [H x Is]
    int H, I, Is;                       // hidden, routed and shared intermediate per rank
    int E;                              // routed experts (0: not given; --moe-early spec needs it: its guessed
                                        // selection is clamped to 0 .. E - 1 before any load)
};
// act [max_slots x moe_tstride(T) x I], act_sh [moe_tstride(T) x Is] bf16 scratch; part
// [T x H] bf16; T <= kMoeMaxT. max_slots: the grid's bound on distinct experts, min(T k, E).
// H, I and Is multiples of 32.
// The two launches of moe_block, for a step that marks each (gate/up, then down).
cudaError_t moe_gate_up(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h, bf16 *act,
                        bf16 *act_sh, int T, int max_slots);
cudaError_t moe_down(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *act,
                     const bf16 *act_sh, bf16 *part, int T);
cudaError_t moe_block(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h, bf16 *act,
                      bf16 *act_sh, bf16 *part, int T, int max_slots);
// A timeline build's count of MoE down CTAs (moe.cu's launches) that issued their first round again
// because --moe-early spec's guessed selection was wrong, since the last call; read and cleared after
// the device is idle. cudaErrorNotSupported (and 0) in any other build.
cudaError_t moe_reissues(unsigned *n);

// ---- persist.cu: a layer's segment between call sites as one persistent launch ----
// (engine/gpu/persist_plan.h: the stages, their tiles, the lists and the counters.) Each
// stage is one of the kernels above, run tile by tile (a tile = one block index of its
// kernel form, the same operations, so the results are bit-identical to the launches).
struct persist_ctl {
    const uint32_t *off, *ent;    // the plan's lists (device)
    unsigned *cnt;                // [stages] counters, zero before the launch
    int *err;                     // 0, or code_base + stage + 1 of the first wait past its deadline
    int code_base;
    unsigned long long timeout_ns; // a wait's deadline
    int nctas;                    // the grid (every CTA resident)
};
enum { PA_QKV_A, PA_PREP, PA_Q_B, PA_ABSORB, PA_ATTEND, PA_MERGE, PA_UV, PA_O_PROJ, PA_STAGES };
struct persist_attn_args { // attention of one layer, h -> part (gpu_step.cu's attention())
    const bf16 *h, *qkv_a, *q_a_norm, *kv_a_norm, *q_b, *kv_b, *o_proj;
    bf16 *cache_ckv, *cache_kpe, *qkva, *qa, *q, *qlat, *qpe, *olat, *o_heads, *part;
    float *partial;
    const float2 *rope_cs;
    const int32_t *pos0;
    int H, qkva_w, rq, rkv, dr, dn, dv, nh_r, context;
    float eps, scale;
    int chunks, groups, Rg; // the attend grid (persist_attn_plan)
    unsigned tiles[PA_STAGES];
};
enum { PM_LOGITS, PM_TOPK, PM_GATE_UP, PM_DOWN, PM_STAGES };
constexpr int kPersistMaxExperts = 512; // the MoE launch's top-k: routed experts at most (Kimi-K2 384, DeepSeek-V3 256)
struct persist_moe_args { // the MoE block of one layer, h -> part (gpu_step.cu's moe()); E <= kPersistMaxExperts
    const bf16 *h, *router;
    const float *router_bias;
    float *logits;
    moe_route rt;
    moe_weights w;
    bf16 *act, *act_sh, *part;
    int H, E, k, n_group, topk_group, max_slots;
    float scaling;
    unsigned tiles[PM_STAGES];
};
// Fill a's attend grid and tiles for T tokens; the dynamic shared memory the launch needs.
void persist_attn_plan(persist_attn_args &a, int T, size_t *smem);
void persist_moe_plan(persist_moe_args &a, int T, size_t *smem);
// CTAs of the launch resident per SM at that shared memory (0: it cannot run); sets the
// kernel's dynamic shared memory limit.
cudaError_t persist_attn_occupancy(int T, size_t smem, int *per_sm);
cudaError_t persist_moe_occupancy(int T, bool int4, size_t smem, int *per_sm);
cudaError_t persist_attn(const launch_ctx &c, const persist_attn_args &a, const persist_ctl &ctl, size_t smem, int T);
cudaError_t persist_moe(const launch_ctx &c, const persist_moe_args &a, const persist_ctl &ctl, size_t smem, int T);
// A test of the launch's stage wait (cta_wait): one CTA waits on *cnt >= target; returns when
// it is, or sets *err = code after timeout_ns.
cudaError_t persist_wait_probe(cudaStream_t s, const unsigned *cnt, unsigned target, int *err, int code,
                               unsigned long long timeout_ns);

// ---- argmax.cu: best[t] over logits [T x Vr], global index = vocab_base + v ----
cudaError_t argmax(const launch_ctx &c, const float *logits, int Vr, int vocab_base, float *best_logit,
                   int32_t *best_index, int T);

// ---- wgen.cu: device weight generation (engine/model/wgen.h, forward.md "Weights") ----
struct wgen_block {
    uint64_t seed;
    uint32_t tensor, layer;
    unsigned experts;     // 1 for a plain tensor
    unsigned rows, cols;  // the block held, per expert
    unsigned row0, col0;  // its first global row and column
    unsigned grows, gcols; // the unsharded tensor's rows and columns per expert
    float c;              // bf16(c * u); for INT4 unused
};
cudaError_t gen_linear(cudaStream_t s, bf16 *dst, const wgen_block &b, int sms);
cudaError_t gen_norm(cudaStream_t s, bf16 *dst, size_t n, uint64_t seed, uint32_t tensor, uint32_t layer, int sms);
cudaError_t gen_bias(cudaStream_t s, float *dst, size_t n, uint64_t seed, uint32_t tensor, uint32_t layer, int sms);
cudaError_t gen_int4(cudaStream_t s, uint32_t *packed, bf16 *scale, const wgen_block &b, uint32_t scale_tensor,
                     float cs, int sms);

// ---- bw.cu: read `bytes` (a multiple of 16) once; sink: one word per block (4 per SM) ----
cudaError_t stream_read(cudaStream_t s, const void *src, size_t bytes, uint32_t *sink, int sms);

// ---- l2_pull.cu: weights toward L2 from a side branch of the step (--l2-side) ----
// Up to kL2PullRanges ranges (each 16-byte aligned at its start, or its first bytes are left
// out up to the next 16; the last bytes short of 16 too), pulled toward L2 by kL2PullCtas CTAs of
// one warp, each lane issuing whole pieces of kL2PullPiece bytes (cp.async.bulk.prefetch.L2 on
// SM90 and later: one instruction a piece). A hint: nothing waits for the bytes, and the results
// of every kernel are the same with or without it. A plain launch (no PDL) on `s`.
constexpr int kL2PullRanges = 8;
constexpr int kL2PullCtas = 32;
constexpr size_t kL2PullPiece = 64 * 1024;
struct l2_pulls {
    l2_ahead r[kL2PullRanges];
    int n;
};
cudaError_t l2_pull(cudaStream_t s, const l2_pulls &a);

} // namespace arbk

#endif
