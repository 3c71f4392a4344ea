// SPDX-License-Identifier: MIT
// arb-p2p.so: custom all-reduce kernels over CUDA IPC peer memory, single node.
// Buffers: the harness's own (no ARB_CAP_NEEDS_ALLOC). send and recv are read and
// written only locally; what peers must see travels through this plugin's IPC
// window (see README.md for what each variant stages and what that costs).
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/plugin.h"
#include "arb_plugin_util.h"
#include "arbench/status.h"
#include "p2p_fused.h"
#include "p2p_kernels.h"
#include "p2p_params.h"
#include "p2p_team.h"

namespace {

// Largest payload of one launch; a call over this size is split into launches (each
// a complete all-reduce of its chunk), which bounds the window at any max_bytes.
constexpr size_t AREA_CAP_BYTES = 8u << 20;
constexpr size_t AREA_CAP_FLAGFREE_BYTES = 2u << 20; // LL lines double it
// Fused op: bytes of one rank's slot (rows x units per row x 16); larger calls are
// split into launches of whole rows.
constexpr size_t FUSED_SLOT_CAP_BYTES = 4u << 20;

struct p2p_state {
    p2p_params_t params;
    p2p_team_t team;
    const arb_host_ops_t *ops;
    int blocks;        // params.blocks clamped to the smallest SM count (co-residency)
    size_t area_bytes; // payload bytes per launch, multiple of 16
    p2p_launch_t base; // every launch argument except send, recv, count
    // Fused all-reduce + RMSNorm (p2p_fused.h); fused_blocks == 0: not set up, and
    // fused_why says why.
    int fused_blocks;      // the fixed grid of every fused launch, a multiple of row_blocks_max
    int row_blocks_max;    // params.row_blocks, or (auto) the most CTAs a row may use
    unsigned row_blocks_ok; // bit P: clusters of P CTAs fill the grid co-resident on every rank
    size_t fused_slot;     // bytes of one rank's slot, multiple of 16
    p2p_launch_t fused_net; // base, with payload[] = the fused areas
    char fused_why[200];
    char desc[200];
};

// Small grids for the small all-reduces; 64 CTAs of 1024 threads with whole rows per
// CTA for the fused op at 8 to 64 tokens (README.md, measured on 2 x H200).
const char *const p2p_variants[] = {
    "variant=oneshot-pull,blocks=8,threads=512",
    "variant=oneshot-push,blocks=24,threads=256",
    "variant=oneshot-push,blocks=64,threads=1024,row_blocks=1",
    "variant=twoshot,blocks=16,threads=512",
    "variant=oneshot-flagfree,blocks=24,threads=256",
    "variant=oneshot-flagfree,blocks=64,threads=1024,row_blocks=1",
    NULL,
};

// The fused grid, the same on every rank. row_blocks_max: params.row_blocks, or (auto)
// enough CTAs of `threads` for one unit per thread of an info->hidden row, a power of
// two up to 8. The grid: params.blocks rounded down to whole clusters of that size.
// Every cluster size a launch may use must keep the whole grid resident on every rank
// at once (CTAs of different ranks wait for each other); a rank that cannot leaves
// the fused op off on every rank (fused_why), not the all-reduce.
arb_status_t fused_setup(p2p_state *s, const arb_comm_info_t *info, int elems, char *why, size_t why_len)
{
    const int threads = s->params.threads;
    int rb = s->params.row_blocks;
    if (rb == 0) {
        const unsigned upr = (info->hidden + (unsigned)elems - 1) / (unsigned)elems;
        const unsigned need = (upr + (unsigned)threads - 1) / (unsigned)threads;
        for (rb = 1; rb < 8 && (unsigned)rb < need; rb *= 2)
            ;
    }
    while (rb > s->blocks)
        rb /= 2;
    if (s->params.row_blocks)
        s->params.row_blocks = rb; // describe() shows the size launched
    const int grid = s->blocks / rb * rb;
    // clusters[k]: resident clusters of 2^k CTAs on this rank (0 where the query fails).
    int clusters[ARB_GRID_SIZES] = {0, 0, 0, 0};
    for (int k = 0; (1 << k) <= rb; k++) {
        if (s->params.row_blocks && (1 << k) != rb)
            continue; // a fixed row_blocks launches one size only
        cudaError_t ce = p2p_fused_max_clusters(s->params.variant, 1 << k, threads, &clusters[k]);
        if (ce != cudaSuccess) {
            snprintf(s->fused_why, sizeof s->fused_why, "rank %d: resident clusters of %d CTAs of %d threads: %s",
                     info->rank, 1 << k, threads, cudaGetErrorString(ce));
            cudaGetLastError();
            clusters[k] = 0;
        }
    }
    int fewest[ARB_GRID_SIZES];
    ARB_TRY(arb_grid_agree(s->ops, info->nranks, clusters, fewest, "p2p", why, why_len));
    // bit P (not log2 P) of row_blocks_ok: clusters of P CTAs keep the grid resident
    const unsigned fit = arb_grid_fit_mask(fewest, grid, rb);
    unsigned ok = 0;
    for (int k = 0; (1 << k) <= rb; k++)
        if (fit >> k & 1)
            ok |= 1u << (1 << k);
    // A fixed size must fit; auto needs single CTAs (many rows) and uses what else fits.
    const unsigned need_bit = 1u << (s->params.row_blocks ? rb : 1);
    if (!(ok & need_bit)) {
        if (!s->fused_why[0])
            snprintf(s->fused_why, sizeof s->fused_why, "a rank cannot keep %d CTAs of %d threads resident in clusters of %d", grid,
                     threads, s->params.row_blocks ? rb : 1);
        s->fused_slot = 0;
        return ARB_OK;
    }
    s->row_blocks_max = rb;
    s->row_blocks_ok = ok;
    s->fused_blocks = grid;
    return ARB_OK;
}

// CTAs per row for a launch of `rows` rows: the fixed row_blocks, or (auto) the most
// that keep one cluster per row inside the grid. Few rows: a row spread over up to
// row_blocks_max CTAs (a cluster, its sum of squares through distributed shared
// memory); as many rows as CTAs or more: whole rows per CTA, no cluster.
int launch_row_blocks(const p2p_state *s, unsigned rows)
{
    if (s->params.row_blocks)
        return s->params.row_blocks;
    int rb = 1;
    while (rb * 2 <= s->row_blocks_max && (s->row_blocks_ok & (1u << (rb * 2))) &&
           (size_t)rows * (size_t)(rb * 2) <= (size_t)s->fused_blocks)
        rb *= 2;
    return rb;
}

arb_status_t p2p_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *params,
                      void **state, char *why, size_t why_len)
{
    p2p_params_t p;
    arb_status_t st;
    ARB_TRY(p2p_params_parse(params, 0, info->nranks, &p, why, why_len));
    // The device check (host-only runs decline) is p2p_team_open's, before its first CUDA call.
    p2p_state *s = (p2p_state *)calloc(1, sizeof *s);
    if (!s) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "p2p: out of host memory");
    }
    s->params = p;
    const size_t cap = p.variant == P2P_ONESHOT_FLAGFREE ? AREA_CAP_FLAGFREE_BYTES : AREA_CAP_BYTES;
    size_t want = (info->max_bytes + 15) / 16 * 16;
    s->area_bytes = want < 4096 ? 4096 : want > cap ? cap : want;
    s->ops = ops;
    // The fused area follows the all-reduce payload, 4 KiB-aligned.
    const size_t ar_bytes = (p2p_payload_bytes(p.variant, info->nranks, s->area_bytes) + 4095) / 4096 * 4096;
    const int fused_elems = p2p_fused_unit_elems(p.variant);
    if (info->max_tokens > 0 && info->hidden > 0 && fused_elems > 0) {
        const size_t row_bytes = (size_t)(info->hidden + fused_elems - 1) / fused_elems * 16;
        const size_t fused_want = (size_t)info->max_tokens * row_bytes;
        s->fused_slot = fused_want > FUSED_SLOT_CAP_BYTES ? FUSED_SLOT_CAP_BYTES : fused_want;
        if (s->fused_slot < row_bytes)
            s->fused_slot = row_bytes;
    } else {
        snprintf(s->fused_why, sizeof s->fused_why, "%s",
                 fused_elems == 0 ? "p2p has no fused kernel for this variant (pull, push and flag-free have one)"
                                  : "this instance was set up without max_tokens and hidden (not a fused sweep)");
    }
    const size_t fused_bytes = s->fused_slot ? p2p_fused_area_bytes(p.variant, info->nranks, s->fused_slot) : 0;
    ARB_TRY_GOTO(st, p2p_team_open(info, ops, ar_bytes + fused_bytes, &s->team, why, why_len), err_free_state);
    s->blocks = p.blocks < s->team.max_blocks ? p.blocks : s->team.max_blocks;
    s->params.blocks = s->blocks;
    s->base.rank = info->rank;
    s->base.nranks = info->nranks;
    for (int r = 0; r < info->nranks; r++) {
        s->base.payload[r] = p2p_team_payload(&s->team, r);
        s->base.flags[r] = &((p2p_window_head_t *)s->team.peer_window[r])->flags[0][0][0];
    }
    s->base.state = s->team.state;
    s->base.area_bytes = s->area_bytes;
    s->base.timeout_ns = (uint64_t)p.timeout_ms * 1000000u;
    s->base.hang = p.test_hang_rank == info->rank;
    if (s->fused_slot) {
        s->fused_net = s->base;
        for (int r = 0; r < info->nranks; r++)
            s->fused_net.payload[r] = s->base.payload[r] + ar_bytes;
        s->fused_net.area_bytes = s->fused_slot;
        ARB_TRY_GOTO(st, fused_setup(s, info, fused_elems, why, why_len), err_close_team);
    }
    p2p_params_describe(&s->params, s->desc, sizeof s->desc);
    if (s->fused_blocks && s->fused_blocks != s->blocks) {
        const size_t n = strlen(s->desc);
        snprintf(s->desc + n, sizeof s->desc - n, ",fused_blocks=%d", s->fused_blocks);
    }
    if (s->fused_blocks && !s->params.row_blocks) {
        const size_t n = strlen(s->desc);
        snprintf(s->desc + n, sizeof s->desc - n, ",row_blocks=auto");
    }
    *state = s;
    return ARB_OK;

err_close_team:
    p2p_team_close(&s->team);

err_free_state:
    free(s);
    return st;
}

arb_status_t p2p_allreduce(void *state, const void *send, void *recv, size_t count, arb_dtype_t dtype,
                           void *stream, char *why, size_t why_len)
{
    p2p_state *s = (p2p_state *)state;
    if (dtype != ARB_DTYPE_BF16 && dtype != ARB_DTYPE_FP32) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "p2p: allreduce: dtype %d, expected bf16 or fp32", (int)dtype);
    }
    if (((uintptr_t)send | (uintptr_t)recv) & 15) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "p2p: allreduce: send %p, recv %p: expected 16-byte aligned buffers (the ABI promises it)", send, recv);
    }
    if (count == 0)
        return ARB_OK;
    const size_t elt = dtype == ARB_DTYPE_BF16 ? 2 : 4;
    cudaStream_t cs = (cudaStream_t)stream;
    if (s->base.nranks == 1) {
        const cudaError_t ce = cudaMemcpyAsync(recv, send, count * elt, cudaMemcpyDeviceToDevice, cs);
        if (ce != cudaSuccess) {
            ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "p2p: one-rank copy of %zu bytes: %s", count * elt, cudaGetErrorString(ce));
        }
        return ARB_OK;
    }
    // Chunks of area_bytes (a multiple of 16) keep every launch's pointers aligned.
    const size_t chunk = s->area_bytes / elt;
    for (size_t off = 0; off < count; off += chunk) {
        p2p_launch_t a = s->base;
        a.send = (const char *)send + off * elt;
        a.recv = (char *)recv + off * elt;
        a.count = count - off < chunk ? count - off : chunk;
        const cudaError_t ce =
            p2p_launch_allreduce(s->params.variant, &a, dtype == ARB_DTYPE_BF16, s->blocks, s->params.threads,
                                 s->params.pdl != 0, cs);
        if (ce != cudaSuccess) {
            ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "p2p: kernel launch (%zu elements): %s", a.count, cudaGetErrorString(ce));
        }
    }
    return ARB_OK;
}

bool aligned_to(const void *p, size_t bytes) { return (uintptr_t)p % bytes == 0; }

arb_status_t p2p_allreduce_rmsnorm(void *state, const arb_rmsnorm_args_t *args, void *stream, char *why,
                                  size_t why_len)
{
    p2p_state *s = (p2p_state *)state;
    if (!args || !args->x || !args->residual || !args->weight || !args->out || args->hidden == 0 ||
        !(args->eps >= 0.0f) || isinf(args->eps)) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "allreduce_rmsnorm: bad arguments (NULL buffer, hidden 0 or eps not a finite number >= 0)");
    }
    if (args->tokens == 0)
        return ARB_OK;
    if (!s->fused_blocks) {
        ARB_RAISE(ARB_DECLINE, why, why_len, "allreduce_rmsnorm declined: %s", s->fused_why);
    }
    const int elems = p2p_fused_unit_elems(s->params.variant);
    const size_t row_bytes = (size_t)(args->hidden + elems - 1) / elems * 16;
    size_t rows_per_launch = s->fused_slot / row_bytes;
    // rows per cluster <= the cap at the largest cluster, hence at every size
    const size_t rows_cap = (size_t)(s->fused_blocks / s->row_blocks_max) * P2P_FUSED_MAX_ROWS_PER_CLUSTER;
    if (rows_per_launch > rows_cap)
        rows_per_launch = rows_cap;
    if (rows_per_launch == 0) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "allreduce_rmsnorm: hidden %u needs %zu bytes per row; this instance was set up for %zu (hidden at init)",
                 args->hidden, row_bytes, s->fused_slot);
    }
    p2p_fused_launch_t a = {};
    a.net = s->fused_net;
    a.hidden = args->hidden;
    a.eps = args->eps;
    // Whole-unit accesses where every row starts on a unit boundary; otherwise per
    // element (any hidden works). Row offsets keep the alignment: hidden % elems == 0.
    const size_t ub = 2 * (size_t)elems;
    a.whole_units = args->hidden % (unsigned)elems == 0 && aligned_to(args->x, ub) && aligned_to(args->residual, ub) &&
                    aligned_to(args->weight, ub) && aligned_to(args->out, ub);
    cudaStream_t cs = (cudaStream_t)stream;
    for (size_t t0 = 0; t0 < args->tokens; t0 += rows_per_launch) {
        const size_t off = t0 * args->hidden * 2; // bytes
        a.x = (const char *)args->x + off;
        a.residual = (char *)args->residual + off;
        a.weight = args->weight;
        a.out = (char *)args->out + off;
        a.rows = (unsigned)(args->tokens - t0 < rows_per_launch ? args->tokens - t0 : rows_per_launch);
        const int rb = launch_row_blocks(s, a.rows);
        const cudaError_t ce = p2p_fused_launch(s->params.variant, &a, s->fused_blocks, rb, s->params.threads,
                                                  s->params.pdl != 0, cs);
        if (ce != cudaSuccess) {
            ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "allreduce_rmsnorm: fused kernel launch (%u rows x %u hidden, %d CTAs in clusters of %d) failed: %s",
                     a.rows, a.hidden, s->fused_blocks, rb, cudaGetErrorString(ce));
        }
    }
    return ARB_OK;
}

arb_status_t p2p_query_error(void *state, char *why, size_t why_len)
{
    return p2p_team_query_error(&((p2p_state *)state)->team, why, why_len);
}

const char *p2p_describe(void *state) { return ((p2p_state *)state)->desc; }

void p2p_finalize(void *state)
{
    p2p_state *s = (p2p_state *)state;
    p2p_team_close(&s->team);
    free(s);
}

} // namespace

extern "C" ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "p2p",
    .description = "custom all-reduce kernels over CUDA IPC peer memory (one-shot pull/push, two-shot, flag-free one-shot), single node; fused all-reduce + residual + RMSNorm for the one-shot variants",
    .caps = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_NEEDS_P2P | ARB_CAP_SINGLE_NODE | ARB_CAP_BF16 |
            ARB_CAP_FP32,
    .variants = p2p_variants,
    .init = p2p_init,
    .mem_alloc = NULL,
    .mem_free = NULL,
    .allreduce = p2p_allreduce,
    .allreduce_rmsnorm = p2p_allreduce_rmsnorm,
    .query_error = p2p_query_error,
    .describe = p2p_describe,
    .finalize = p2p_finalize,
};
