/* SPDX-License-Identifier: MIT */
/*
 * Fused all-reduce + residual add + RMSNorm over the p2p transports (p2p_fused.cu):
 * one kernel per call sums the ranks' x (fp32, rank order 0..n-1), adds the sum into
 * residual (rounded to bf16, stored), and writes out = RMSNorm(residual) * weight.
 *
 * Work split: the grid is fixed per plugin instance, G = NC clusters of P CTAs
 * (P = row_blocks, a thread-block cluster). Token row t of a launch belongs to
 * cluster t % NC; inside it, unit j of the row (E elements: 8 for push and pull,
 * 4 for flag-free) belongs to thread j % (P*T) of CTA (j / T) % P. Each CTA sums
 * its share of the row's squares, the P partials meet through distributed shared
 * memory (one cluster barrier) and every CTA of the cluster adds them in the same
 * order, so every rank computes the same 1/rms. Every CTA runs in every launch, so
 * the per-CTA epochs (p2p_dev_state.fused_epoch) count launches and agree everywhere.
 *
 * Fused area layout (S = slot_bytes, n = nranks, set = epoch & 1); a unit of row t
 * sits at index t * units_per_row + j, 16 bytes each:
 *   oneshot-pull      staging[2][S]        my x, read by every peer
 *   oneshot-push      slots[2][n][S]       slot src: rank src's x, written by src
 *   oneshot-flagfree  lines[2][n][S]       {data, epoch, data, epoch} lines
 */
#ifndef P2P_FUSED_H
#define P2P_FUSED_H

#include <stddef.h>
#include <stdint.h>

#include "p2p_kernels.h"
#include "p2p_params.h"

/* Rows one cluster handles per launch (its squares' partials live in shared memory);
 * the plugin splits larger calls into launches. */
#define P2P_FUSED_MAX_ROWS_PER_CLUSTER 32

typedef struct p2p_fused_launch {
    p2p_launch_t net;     /* payload[] = every rank's fused area, area_bytes = slot bytes;
                             state, flags, rank, nranks, timeout_ns, hang as for the
                             all-reduce; send, recv, count unused */
    const void *x;        /* bf16 [rows x hidden], this rank's partial sums */
    void *residual;       /* bf16 [rows x hidden], read and written */
    const void *weight;   /* bf16 [hidden] */
    void *out;            /* bf16 [rows x hidden] */
    unsigned rows;        /* token rows in this launch, <= NC * P2P_FUSED_MAX_ROWS_PER_CLUSTER */
    unsigned hidden;      /* elements per row */
    float eps;
    int whole_units;      /* hidden % E == 0 and x, residual, weight, out aligned to 2E bytes */
} p2p_fused_launch_t;

/* Elements of bf16 per unit of a variant: 8 (16-byte vectors) or 4 (flag-free lines
 * carry 8 bytes); 0 for a variant without a fused kernel (twoshot, ping). */
int p2p_fused_unit_elems(p2p_variant_t v);

/* Fused area bytes per rank for slots of slot_bytes (a multiple of 16). */
size_t p2p_fused_area_bytes(p2p_variant_t v, int nranks, size_t slot_bytes);

/* Flag-free register kernel (p2p_fused_ff.cu): used for a launch of whole rows per
 * CTA (row_blocks 1) whose units are whole and where every thread holds all its units
 * of all its rows at once (at most 8 for up to 256 threads, 4 for 512, 2 for 1024).
 * Returns 1 and the units per thread per row in *upt when it fits, else 0 (the
 * general kernel runs). */
int p2p_fused_ff_fits(const p2p_fused_launch_t *a, int blocks, int row_blocks, int threads, unsigned *upt);

#ifdef __cplusplus
#include <cuda_runtime.h>
/* The register kernel's launch (blocks CTAs, no clusters) and its most resident CTAs. */
cudaError_t p2p_fused_ff_launch(const p2p_fused_launch_t *a, unsigned upt, int blocks, int threads, bool pdl,
                                cudaStream_t stream);
cudaError_t p2p_fused_ff_max_blocks(int threads, int *blocks);

/* Most clusters of row_blocks CTAs of `threads` that can be resident at once on the
 * current device (cudaOccupancyMaxActiveClusters; for row_blocks 1, CTAs per SM
 * times SMs), into *clusters; for flag-free single CTAs, the fewer of its two kernels. */
cudaError_t p2p_fused_max_clusters(p2p_variant_t v, int row_blocks, int threads, int *clusters);

/* Enqueues one fused launch of blocks CTAs (a multiple of row_blocks) on stream:
 * clusters of row_blocks CTAs, or plain CTAs for row_blocks 1. Flag-free launches
 * that fit (p2p_fused_ff_fits: single CTAs) run the register kernel, the others the
 * general one. pdl: with programmatic dependent launch (both kernels wait in
 * griddepcontrol.wait before any load). Every launch of one
 * instance must use the same blocks (the per-CTA epochs count launches); row_blocks
 * may differ between launches. */
cudaError_t p2p_fused_launch(p2p_variant_t v, const p2p_fused_launch_t *a, int blocks, int row_blocks, int threads,
                             bool pdl, cudaStream_t stream);
#endif

#endif
