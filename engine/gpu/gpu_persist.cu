// SPDX-License-Identifier: MIT
// The persistent form of the step (opts.persistent; kernels/persist.cu, persist_plan.h): per T
// the segments' stage tiles, the grid (every CTA resident: the occupancy times the SMs) and the
// instruction lists, built once at create and uploaded, so a captured step only launches;
// per step one memset of every segment's counters; per layer one launch for the attention
// (h -> site 2l's part) and, with bit 2, one for the MoE block (h -> site 2l+1's part).
#include <cstdlib>
#include <cstring>

#include "arbench/status.h"
#include "gpu/gpu_layout.h"
#include "gpu/persist_plan.h"

using namespace arbk;

namespace {

constexpr unsigned long long kWaitTimeoutNs = 2000000000ull; // a stage's wait: 2 s (a step is milliseconds)

// The attention's shapes (pointers of a layer filled at launch).
persist_attn_args attn_shapes(const arb_gpu_model *m)
{
    const arb_gpu_shapes &s = m->s;
    persist_attn_args a;
    memset(&a, 0, sizeof a);
    a.rope_cs = m->rope_cs, a.pos0 = m->pos0, a.h = m->h;
    a.qkva = m->qkva, a.qa = m->qa, a.q = m->q, a.qlat = m->qlat, a.qpe = m->qpe,
    a.olat = m->qlat; // olat in qlat's buffer
    a.o_heads = m->o_heads, a.partial = m->partial;
    a.H = (int)s.H, a.qkva_w = (int)s.qkva_w, a.rq = (int)s.rq, a.rkv = (int)s.rkv, a.dr = (int)s.dr;
    a.dn = (int)s.dn, a.dv = (int)s.dv, a.nh_r = (int)s.nh_r, a.context = (int)m->o.context;
    a.eps = m->o.dims.rms_eps, a.scale = m->o.dims.softmax_scale;
    return a;
}

persist_moe_args moe_shapes(const arb_gpu_model *m, unsigned T)
{
    const arb_gpu_shapes &s = m->s;
    persist_moe_args a;
    memset(&a, 0, sizeof a);
    a.h = m->h, a.logits = m->router_logits, a.rt = m->route, a.act = m->act_moe, a.act_sh = m->act_sh;
    a.H = (int)s.H, a.E = (int)s.E, a.k = (int)s.k, a.n_group = (int)m->o.dims.n_group;
    a.topk_group = (int)m->o.dims.topk_group, a.scaling = m->o.dims.routed_scaling;
    a.max_slots = (int)(T * s.k < s.E ? T * s.k : s.E);
    for (unsigned l = 0; l < s.Lz; l++) // the MoE weights' sizes and format (any MoE layer's)
        if (!m->layers[l].dense) {
            a.w = m->layers[l].moe;
            break;
        }
    return a;
}

// The plan of `nst` stages over nctas CTAs, checked and uploaded into dev (off, then ent).
arb_status_t upload_plan(const unsigned *tiles, unsigned nst, unsigned nctas, const char *what, unsigned T,
                         uint32_t **dev, char *why, size_t len)
{
    arb_persist_plan_t p;
    ARB_TRY(arb_persist_plan_build(tiles, nst, nctas, &p, why, len));
    arb_status_t rs = arb_persist_plan_check(&p, why, len);
    size_t total = p.off[nctas];
    if (rs == ARB_OK) {
        cudaError_t e = cudaMalloc(dev, sizeof(uint32_t) * (nctas + 1 + total));
        if (e == cudaSuccess)
            e = cudaMemcpy(*dev, p.off, sizeof(uint32_t) * (nctas + 1), cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(*dev + nctas + 1, p.ent, sizeof(uint32_t) * total, cudaMemcpyHostToDevice);
        if (e != cudaSuccess)
            ARB_RAISE_GOTO(rs, ARB_CUDA_STATUS_(e), out, why, len, "persistent form: the %s plan of T = %u: %s", what,
                           T, cudaGetErrorString(e));
    }
out:
    arb_persist_plan_free(&p);
    return rs;
}

persist_ctl ctl_of(const arb_gpu_model *m, const uint32_t *dev, int nctas, unsigned seg)
{
    persist_ctl c;
    c.off = dev, c.ent = dev + nctas + 1, c.nctas = nctas;
    c.cnt = m->pcnt + (size_t)seg * ARB_PERSIST_MAX_STAGES;
    c.err = m->perr, c.code_base = (int)(seg * ARB_PERSIST_MAX_STAGES);
    c.timeout_ns = kWaitTimeoutNs;
    return c;
}

} // namespace

arb_status_t arb_gpu_persist_setup(arb_gpu_model *m, char *why, size_t len)
{
    const unsigned Tm = m->o.max_tokens, segs = 2 * m->s.Lz;
    m->persist = static_cast<arb_gpu_persist *>(calloc(Tm + 1, sizeof *m->persist));
    if (!m->persist)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "persistent form: out of host memory");
    ARB_CUDA_TRY(cudaMalloc(&m->pcnt, sizeof(unsigned) * segs * ARB_PERSIST_MAX_STAGES + sizeof(int)), why, len);
    m->perr = reinterpret_cast<int *>(m->pcnt + segs * ARB_PERSIST_MAX_STAGES);
    ARB_CUDA_TRY(cudaMemset(m->pcnt, 0, sizeof(unsigned) * segs * ARB_PERSIST_MAX_STAGES + sizeof(int)), why, len);
    bool any_moe = false;
    for (unsigned l = 0; l < m->s.Lz; l++)
        any_moe |= !m->layers[l].dense;
    if ((m->o.persistent & 2) && any_moe && m->s.E > (unsigned)kPersistMaxExperts)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "persistent form: %u routed experts; its MoE segment's top-k holds at most %d (use --step-form "
                  "persistent-attn)",
                  m->s.E, kPersistMaxExperts);
    for (unsigned T = 1; T <= Tm; T++) {
        arb_gpu_persist &p = m->persist[T];
        p.attn = attn_shapes(m);
        persist_attn_plan(p.attn, (int)T, &p.smem_attn);
        int per_sm = 0;
        ARB_CUDA_TRY(persist_attn_occupancy((int)T, p.smem_attn, &per_sm), why, len);
        if (per_sm < 1)
            ARB_RAISE(ARB_ERR_INVALID, why, len,
                      "persistent form: the attention launch of T = %u (%zu B of shared memory) fits no SM", T,
                      p.smem_attn);
        p.nctas_attn = per_sm * m->sms;
        ARB_TRY(upload_plan(p.attn.tiles, PA_STAGES, (unsigned)p.nctas_attn, "attention", T, &p.dev_attn, why, len));
        if (!(m->o.persistent & 2) || !any_moe)
            continue;
        p.moe = moe_shapes(m, T);
        persist_moe_plan(p.moe, (int)T, &p.smem_moe);
        ARB_CUDA_TRY(persist_moe_occupancy((int)T, p.moe.w.gate_s != nullptr, p.smem_moe, &per_sm), why, len);
        if (per_sm < 1)
            ARB_RAISE(ARB_ERR_INVALID, why, len,
                      "persistent form: the MoE launch of T = %u (%zu B of shared memory) fits no SM", T, p.smem_moe);
        p.nctas_moe = per_sm * m->sms;
        ARB_TRY(upload_plan(p.moe.tiles, PM_STAGES, (unsigned)p.nctas_moe, "MoE", T, &p.dev_moe, why, len));
    }
    return ARB_OK;
}

void arb_gpu_persist_free(arb_gpu_model *m)
{
    if (m->persist)
        for (unsigned T = 0; T <= m->o.max_tokens; T++)
            cudaFree(m->persist[T].dev_attn), cudaFree(m->persist[T].dev_moe);
    free(m->persist);
    cudaFree(m->pcnt);
    m->persist = nullptr, m->pcnt = nullptr, m->perr = nullptr;
}

arb_status_t arb_gpu_persist_begin(arb_gpu_model *m, cudaStream_t st, char *why, size_t len)
{
    ARB_CUDA_TRY(cudaMemsetAsync(m->pcnt, 0, sizeof(unsigned) * 2 * m->s.Lz * ARB_PERSIST_MAX_STAGES, st), why, len);
    return ARB_OK;
}

arb_status_t arb_gpu_persist_attention(arb_gpu_model *m, unsigned l, unsigned T, const launch_ctx &lc, char *why,
                                       size_t len)
{
    const arb_gpu_persist &p = m->persist[T];
    const arb_gpu_layer &L = m->layers[l];
    persist_attn_args a = p.attn;
    a.qkv_a = L.qkv_a, a.q_a_norm = L.q_a_norm, a.kv_a_norm = L.kv_a_norm, a.q_b = L.q_b, a.kv_b = L.kv_b;
    a.o_proj = L.o_proj, a.cache_ckv = L.cache_ckv, a.cache_kpe = L.cache_kpe;
    a.part = arb_gpu_site_at(m, 2 * l, T).part;
    ARB_CUDA_TRY(persist_attn(lc, a, ctl_of(m, p.dev_attn, p.nctas_attn, 2 * l), p.smem_attn, (int)T), why, len);
    return ARB_OK;
}

arb_status_t arb_gpu_persist_moe(arb_gpu_model *m, unsigned l, unsigned T, const launch_ctx &lc, char *why, size_t len)
{
    const arb_gpu_persist &p = m->persist[T];
    const arb_gpu_layer &L = m->layers[l];
    persist_moe_args a = p.moe;
    a.router = L.router, a.router_bias = L.router_bias, a.w = L.moe;
    a.rt.experts = m->experts + (size_t)l * T * m->s.k;
    a.part = arb_gpu_site_at(m, 2 * l + 1, T).part;
    ARB_CUDA_TRY(persist_moe(lc, a, ctl_of(m, p.dev_moe, p.nctas_moe, 2 * l + 1), p.smem_moe, (int)T), why, len);
    return ARB_OK;
}

arb_status_t arb_gpu_persist_check(const arb_gpu_model *m, char *why, size_t len)
{
    if (!m->perr)
        return ARB_OK;
    int code = 0;
    ARB_CUDA_TRY(cudaMemcpy(&code, m->perr, sizeof code, cudaMemcpyDeviceToHost), why, len);
    if (!code)
        return ARB_OK;
    const unsigned seg = (unsigned)(code - 1) / ARB_PERSIST_MAX_STAGES,
                   stage = (unsigned)(code - 1) % ARB_PERSIST_MAX_STAGES;
    ARB_RAISE(ARB_ERR_SYSTEM, why, len,
              "persistent step: layer %u's %s segment, stage %u, waited %.1f s for the stage before it and gave up "
              "(its results are wrong; a CTA not resident, or a stage that never finished)",
              seg / 2, seg % 2 ? "MoE" : "attention", stage, kWaitTimeoutNs / 1e9);
}

extern "C" arb_status_t arb_gpu_persist_probe(unsigned value, unsigned target, unsigned long long timeout_ns, int code,
                                              int *err, double *seconds, char *why, size_t why_len)
{
    unsigned *d = nullptr;
    cudaEvent_t e0 = nullptr, e1 = nullptr;
    arb_status_t rs = ARB_OK;
    const unsigned init[2] = {value, 0u};
    float ms = 0;
    ARB_CUDA_GOTO(rs, cudaMalloc(&d, 2 * sizeof(unsigned)), out, why, why_len);
    ARB_CUDA_GOTO(rs, cudaMemcpy(d, init, sizeof init, cudaMemcpyHostToDevice), out, why, why_len);
    ARB_CUDA_GOTO(rs, cudaEventCreate(&e0), out, why, why_len);
    ARB_CUDA_GOTO(rs, cudaEventCreate(&e1), out, why, why_len);
    ARB_CUDA_GOTO(rs, cudaEventRecord(e0, 0), out, why, why_len);
    ARB_CUDA_GOTO(rs, persist_wait_probe(0, d, target, reinterpret_cast<int *>(d + 1), code, timeout_ns), out, why,
                  why_len);
    ARB_CUDA_GOTO(rs, cudaEventRecord(e1, 0), out, why, why_len);
    ARB_CUDA_GOTO(rs, cudaEventSynchronize(e1), out, why, why_len);
    ARB_CUDA_GOTO(rs, cudaEventElapsedTime(&ms, e0, e1), out, why, why_len);
    ARB_CUDA_GOTO(rs, cudaMemcpy(err, d + 1, sizeof(int), cudaMemcpyDeviceToHost), out, why, why_len);
    *seconds = ms / 1e3;
out:
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    cudaFree(d);
    return rs;
}
