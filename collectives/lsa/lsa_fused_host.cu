/* SPDX-License-Identifier: MIT */
/*
 * Host side of lsa's fused all-reduce + residual add + RMSNorm (the kernels and the
 * algorithm are in lsa_fused.cu): the fused line area's size, the fused grid resolved
 * at init from every rank's resident-cluster counts, and per call the launch shape
 * (cluster size, units per thread, rows per launch) and the launches.
 */
#include "lsa_device.cuh"

#include "arb_plugin_util.h"

#include <stdio.h>
#include <string.h>

/* Bytes of one fused line set of one source: a 16-byte line per 4 elements of every
 * row of the largest call, at most 8 MiB (larger calls run in several launches), at
 * least one row. */
size_t lsa_fused_set_bytes(const lsa_config_t *cfg)
{
    if (cfg->variant != LSA_ONESHOT_FLAGFREE || !cfg->max_tokens || !cfg->hidden)
        return 0;
    const size_t row = ((size_t)cfg->hidden + LSA_FUSED_UNIT_ELEMS - 1) / LSA_FUSED_UNIT_ELEMS * 16, cap = 2 * LSA_FF_CHUNK_BYTES;
    size_t bytes = (size_t)cfg->max_tokens * row;
    if (bytes > cap)
        bytes = row > cap ? row : cap / row * row;
    return (bytes + 255) / 256 * 256;
}

arb_status_t lsa_fused_resolve_grid(lsa_dev_t *d, lsa_config_t *cfg, const arb_host_ops_t *ops, int nranks, char *why,
                                    size_t why_len)
{
    enum { NP = ARB_GRID_SIZES }; /* P = 1, 2, 4, 8 */
    static_assert(1 << (NP - 1) == LSA_FUSED_MAX_P, "cluster sizes 1 .. LSA_FUSED_MAX_P");
    int mine[NP] = {0}, fewest[NP];
    cfg->fused_ctas = cfg->fused_pmax = 0;
    cfg->fused_pmask = 0;
    const int wanted = lsa_fused_set_bytes(cfg) > 0;
    /* A size the device cannot launch (an error here) counts as 0 resident clusters. */
    cudaError_t ce = cudaSuccess;
    for (int i = 0; i < NP && wanted; i++) {
        const cudaError_t e = lsa_fused_max_clusters(1 << i, cfg->threads, &mine[i]);
        if (e != cudaSuccess) {
            ce = e;
            mine[i] = 0;
            cudaGetLastError();
        }
    }
    /* Every rank takes part, also those that want no fused op (all ranks run the same
     * variant with the same info, so they agree on `wanted`). */
    ARB_TRY(arb_grid_agree(ops, nranks, mine, fewest, "lsa", why, why_len));
    if (!wanted) {
        snprintf(d->fused_why, sizeof d->fused_why,
                 cfg->variant == LSA_ONESHOT_FLAGFREE
                     ? "lsa: this instance was set up without a fused op (info->max_tokens x hidden is 0)"
                     : "lsa: the fused allreduce_rmsnorm runs on variant=oneshot-flagfree only");
        return ARB_OK;
    }
    /* The grid: the most CTAs (<= blocks) in whole clusters of some resident size P,
     * ties to the larger P; then every P' <= P whose G/P' clusters are resident. */
    int best_g = 0;
    const int best_i = arb_grid_largest(fewest, cfg->ctas, &best_g);
    if (best_i < 0) {
        snprintf(d->fused_why, sizeof d->fused_why,
                 "lsa: no fused grid of %d CTAs x %d threads can be resident on every rank (%s)", cfg->ctas,
                 cfg->threads, ce == cudaSuccess ? "occupancy query" : cudaGetErrorString(ce));
        return ARB_OK;
    }
    cfg->fused_pmask = arb_grid_fit_mask(fewest, best_g, 1 << best_i);
    cfg->fused_ctas = best_g;
    cfg->fused_pmax = 1 << best_i;
    return ARB_OK;
}

namespace {

/* One launch shape for a call: cluster size, units per thread per row, rows per launch. */
struct fused_shape {
    int p;
    unsigned upt, rows_per_launch;
};

/* Fewest launches, then fewest units per thread (each costs memory latency in
 * series), then the smaller cluster. False when no shape fits the registers. */
bool pick_shape(const lsa_config_t &c, unsigned tokens, unsigned hidden, size_t set_bytes, fused_shape *out)
{
    const unsigned upr = (hidden + LSA_FUSED_UNIT_ELEMS - 1) / LSA_FUSED_UNIT_ELEMS, kmax = (unsigned)lsa_fused_kmax(c.threads);
    const size_t rows_fit = set_bytes / ((size_t)upr * 16);
    bool found = false;
    unsigned best_launches = 0, best_units = 0;
    for (int i = 0; (1 << i) <= c.fused_pmax; i++) {
        if (!(c.fused_pmask >> i & 1) || (c.fused_row_blocks && c.fused_row_blocks != 1 << i))
            continue;
        const unsigned p = 1u << i, nc = (unsigned)c.fused_ctas / p;
        const unsigned upt = (upr + p * (unsigned)c.threads - 1) / (p * (unsigned)c.threads);
        if (upt > kmax)
            continue;
        size_t rpl = (size_t)nc * (kmax / upt);
        rpl = rpl < rows_fit ? rpl : rows_fit;
        if (rpl == 0)
            continue;
        const unsigned launches = (unsigned)((tokens + rpl - 1) / rpl);
        const unsigned first = tokens < rpl ? tokens : (unsigned)rpl;
        const unsigned units = upt * ((first + nc - 1) / nc);
        if (!found || launches < best_launches || (launches == best_launches && units < best_units)) {
            found = true;
            best_launches = launches;
            best_units = units;
            *out = fused_shape{(int)p, upt, (unsigned)rpl};
        }
    }
    return found;
}

bool aligned8(const void *p) { return ((uintptr_t)p & 7u) == 0; }

} // namespace

extern "C" arb_status_t lsa_dev_allreduce_rmsnorm(lsa_dev_t *d, const arb_rmsnorm_args_t *args, void *stream,
                                                  char *why, size_t why_len)
{
    if (d->dead) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "lsa: an earlier spin timed out, this variant's epochs are out of step; re-init it");
    }
    const lsa_config_t &c = d->cfg;
    if (!c.fused_ctas) {
        ARB_RAISE(ARB_DECLINE, why, why_len, "%s", d->fused_why);
    }
    if (args->tokens == 0)
        return ARB_OK;
    fused_shape sh;
    /* pmask bit i: clusters of 2^i CTAs are usable. */
    if (c.fused_row_blocks && (c.fused_row_blocks > c.fused_pmax || !(c.fused_pmask >> __builtin_ctz((unsigned)c.fused_row_blocks) & 1))) {
        ARB_RAISE(ARB_DECLINE, why, why_len, "lsa: row_blocks=%d is not usable with the fused grid of %d CTAs (largest resident cluster size on every rank: %d)",
                 c.fused_row_blocks, c.fused_ctas, c.fused_pmax);
    }
    if (!pick_shape(c, args->tokens, args->hidden, d->fused_bytes, &sh)) {
        const size_t most = (size_t)lsa_fused_kmax(c.threads) * LSA_FUSED_UNIT_ELEMS * (size_t)c.fused_pmax * (size_t)c.threads;
        const size_t by_area = d->fused_bytes / 16 * LSA_FUSED_UNIT_ELEMS;
        ARB_RAISE(ARB_DECLINE, why, why_len, "lsa: fused hidden=%u is more than this instance's grid holds (%zu elements per row with %d CTAs x %d threads, %zu by its fused area)",
                 args->hidden, most, c.fused_ctas, c.threads, by_area);
    }
    const bool whole = args->hidden % LSA_FUSED_UNIT_ELEMS == 0 && aligned8(args->x) && aligned8(args->residual) &&
                       aligned8(args->weight) && aligned8(args->out);
    lsa_fargs a;
    memset(&a, 0, sizeof a);
    memcpy(a.peers.scratch_peer, d->scratch_peer, sizeof a.peers.scratch_peer);
    a.peers.area_off = d->fused_off;
    a.peers.area_bytes = d->fused_bytes;
    a.peers.words = d->words;
    a.timeout_ns = c.timeout_ns;
    a.rank = d->lsa_rank;
    a.nranks = d->lsa_size;
    a.hang = c.hang_rank == d->lsa_rank;
    a.weight = args->weight;
    a.hidden = args->hidden;
    a.upt = sh.upt;
    a.eps = args->eps;
    cudaError_t ce = cudaSuccess;
    /* Launches of whole rows, each a complete fused op of its rows (elements). */
    for (unsigned row0 = 0; row0 < args->tokens && ce == cudaSuccess; row0 += sh.rows_per_launch) {
        const size_t e0 = (size_t)row0 * args->hidden;
        a.x = (const __nv_bfloat16 *)args->x + e0;
        a.residual = (__nv_bfloat16 *)args->residual + e0;
        a.out = (__nv_bfloat16 *)args->out + e0;
        a.rows = args->tokens - row0 < sh.rows_per_launch ? args->tokens - row0 : sh.rows_per_launch;
        ce = lsa_fused_launch(a, whole, c.fused_ctas, sh.p, c.threads, c.fused_pdl != 0, (cudaStream_t)stream);
    }
    if (ce != cudaSuccess) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "lsa: fused kernel launch (%d CTAs in clusters of %d): %s", c.fused_ctas, sh.p,
                 cudaGetErrorString(ce));
    }
    return ARB_OK;
}
