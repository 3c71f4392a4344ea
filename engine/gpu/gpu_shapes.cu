// SPDX-License-Identifier: MIT
// The GPU model's per-rank shapes from its options (gpu_layout.h's arb_gpu_shapes_of), refusing
// splits that are not exact and options the model cannot run; moved unchanged out of gpu_model.cu
// (its allocation, layout and read-backs).
#define OMPI_SKIP_MPICXX 1 // instance.h includes mpi.h: the C API only
#include "arbench/status.h"
#include "gpu/gpu_layout.h"
#include "model/engine_opts.h"

arb_status_t arb_gpu_shapes_of(const arb_gpu_model_opts_t *o, arb_gpu_shapes *s, char *why, size_t len)
{
    const arb_gpu_dims_t *d = &o->dims;
    const unsigned K = d->tp_shape, r = d->shard;
    if (K == 0 || r >= K)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "gpu model: shard %u of tp_shape %u: need tp_shape >= 1 and shard < tp_shape", r, K);
#define ARB_GPU_SPLIT(field, value)                                                                                  \
    if ((value) % K)                                                                                                 \
        ARB_RAISE(ARB_ERR_INVALID, why, len, "gpu model: " field " %u is not a multiple of tp_shape %u", (unsigned)(value), K);
    ARB_GPU_SPLIT("num_attention_heads", d->heads)
    ARB_GPU_SPLIT("moe_intermediate_size", d->moe_inter)
    ARB_GPU_SPLIT("n_shared_experts * moe_intermediate_size", d->n_shared * d->moe_inter)
    ARB_GPU_SPLIT("intermediate_size", d->dense_inter)
#undef ARB_GPU_SPLIT
    *s = arb_gpu_shapes{};
    s->H = d->hidden, s->Lz = d->layers, s->nh_r = d->heads / K, s->dn = d->nope, s->dr = d->rope, s->dv = d->v_head;
    s->rq = d->q_lora, s->rkv = d->kv_lora, s->E = d->experts, s->k = d->topk;
    s->I = d->moe_inter / K, s->I0 = r * s->I;
    s->Is = d->n_shared * d->moe_inter / K, s->Is0 = r * s->Is;
    s->Id = d->dense_inter / K, s->Id0 = r * s->Id;
    s->Vr = d->vocab / K, s->V0 = r * s->Vr;
    if (r == K - 1)
        s->Vr = d->vocab - r * s->Vr; // the last rank takes the remainder
    s->qkva_w = s->rq + s->rkv + s->dr;
    struct {
        const char *what;
        int bad;
        const char *need;
    } const lim[] = {
        {"hidden_size", s->H == 0 || s->H % 32, "a positive multiple of 32"},
        {"num_hidden_layers", s->Lz == 0, ">= 1"},
        {"kv_lora_rank", s->rkv == 0 || s->rkv % 8 || s->rkv > (unsigned)arbk::kMaxLatent, "a multiple of 8 up to 512"},
        {"qk_rope_head_dim", s->dr == 0 || s->dr % 8 || s->dr > 256, "a multiple of 8 up to 256"},
        {"qk_nope_head_dim", s->dn == 0 || s->dn > (unsigned)arbk::kMaxNope, "1 .. 256"},
        {"v_head_dim", s->dv == 0 || (s->nh_r * s->dv) % 8, "with heads/tp_shape x v_head_dim a multiple of 8"},
        {"q_lora_rank", s->rq == 0 || s->rq % 8, "a positive multiple of 8"},
        {"vocab_size", s->Vr == 0, "at least tp_shape"},
        {"n_routed_experts", s->E == 0 || s->E > (unsigned)arbk::kMaxExperts, "1 .. 1024"},
        {"num_experts_per_tok", s->k == 0 || s->k > (unsigned)arbk::kMaxTopk || s->k > s->E, "1 .. min(16, n_routed_experts)"},
        {"n_group", d->n_group == 0 || d->n_group > (unsigned)arbk::kMaxGroups || s->E % d->n_group, "1 .. 32 dividing n_routed_experts"},
        {"topk_group", d->topk_group == 0 || d->topk_group > d->n_group || (d->n_group > 0 && s->k > d->topk_group * (s->E / d->n_group)), "1 .. n_group, with room for num_experts_per_tok"},
        {"moe_intermediate_size / tp_shape", s->I == 0 || s->I % 32, "a positive multiple of 32 (the MoE kernels' 16-row tiles and 32-column groups)"},
        {"n_shared_experts * moe_intermediate_size / tp_shape", s->Is % 32 || s->Is == 0, "a positive multiple of 32"},
        {"intermediate_size / tp_shape", d->first_dense > 0 && (s->Id == 0 || s->Id % 8), "a positive multiple of 8"},
        {"max_tokens", o->max_tokens == 0 || o->max_tokens > ARB_GPU_MAX_T, "1 .. 8"},
        {"context", o->context == 0 || o->context > (unsigned)(arbk::kMaxChunks * arbk::kAttnChunk), "1 .. 131072"},
        {"format", o->format != ARB_GPU_BF16 && o->format != ARB_GPU_INT4, "bf16 or int4"},
        {"inv_freq", d->inv_freq == nullptr, "the RoPE table (engine/model/rope.h)"},
    };
    for (const auto &l : lim)
        if (l.bad)
            ARB_RAISE(ARB_ERR_INVALID, why, len, "gpu model: %s must be %s", l.what, l.need);
    if ((o->fuse & ARB_FUSE_QB_ABSORB) && !arbk::mla_qb_absorb_fits((int)s->rq, (int)s->dn, (int)s->dr, (int)s->rkv))
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "gpu model: --fuse qb_absorb needs qk_nope_head_dim 128, qk_rope_head_dim a multiple of 16 and "
                  "a q_lora_rank whose q_b rows split in at most two parts (not q_lora_rank / 8 >= 512 and a "
                  "multiple of 4); this model has %u, %u and %u (give --fuse none)",
                  s->dn, s->dr, s->rq);
    if ((o->fuse & ARB_FUSE_PREP_QB) && !(o->fuse & ARB_FUSE_QB_ABSORB))
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "gpu model: --fuse prep_qb runs the prep in qb_absorb's launch: give --fuse qb_absorb,prep_qb");
    if ((o->fuse & ARB_FUSE_PREP_QB) && !arbk::mla_qb_prep_fits((int)s->rq, (int)s->dn, (int)s->dr, (int)s->rkv))
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "gpu model: --fuse prep_qb needs q_b's rows in parts of at least 256 inputs and q_lora_rank + "
                  "kv_lora_rank at most 4096; this model has %u and %u (give --fuse qb_absorb)",
                  s->rq, s->rkv);
    if ((o->fuse & ARB_FUSE_MERGE_UV) && !arbk::mla_merge_uv_fits((int)s->dv, (int)s->rkv))
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "gpu model: --fuse merge_uv needs v_head_dim 1 .. 128 and kv_lora_rank a multiple of 8 up to 512; "
                  "this model has %u and %u (give --fuse none or qb_absorb)",
                  s->dv, s->rkv);
    if (o->l2_side && o->persistent)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "gpu model: --l2-side with a persistent form: the side branch is the launches form's (give "
                  "--step-form launches or --l2-side none)");
    if (o->l2_side & ~(unsigned)ARB_L2_SIDE_ALL)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "gpu model: l2_side bits 0x%x: expected ARB_L2_SIDE_* (0x1 .. 0x%x)",
                  o->l2_side, (unsigned)ARB_L2_SIDE_ALL);
    s->max_slots = o->max_tokens * s->k < s->E ? o->max_tokens * s->k : s->E;
    s->chunks = (o->context + arbk::kAttnChunk - 1) / arbk::kAttnChunk;
    return ARB_OK;
}
