/* SPDX-License-Identifier: MIT */
/*
 * arbench model e2e: decode and speculative tok/s of a target machine, predicted from
 * engine runs on one H200 whose call sites replayed the target's predicted all-reduce
 * latencies (the `modeled` plugin) and a prediction table's bands (docs/model.md,
 * "End to end").
 *
 * Rule: target step = compute_H200 x (read_gbs_H200 / read_gbs_target) + all-reduce time
 * replayed, where compute_H200 is the engine's compute-only replay (noop at every site) and
 * the all-reduce time is median_us - compute_only_us of the run with the modeled plugin.
 * Units: microseconds, GB/s = 1e9 B/s.
 */
#ifndef ARB_MODEL_E2E_H
#define ARB_MODEL_E2E_H

#include <stddef.h>
#include <stdio.h>

#include "arbench/status.h"
#include "costmodel/model_band.h"

#define ARB_E2E_MAX_ROWS 64

typedef struct arb_e2e_opts {
    double target_read_gbs; /* the target's memory bandwidth (RTX PRO 6000: 1792, model/gpus/rtx-pro-6000-server.spec) */
    double h200_peak_gbs;   /* H200's HBM3e spec bandwidth (4800): the band's slow end, see docs */
    int hidden;             /* hidden size: all-reduce bytes = tokens x hidden x 2 (bf16) */
    const char *kernels_csv; /* NULL, or the compute-only run's per-kernel table: compute by kernel family */
    double launch_band;      /* with kernels_csv: relative band of the part that is not streaming */
    double issue_lo, issue_hi; /* with kernels_csv: H200 / target instruction rate (0: 1, no GPU specs) */
    double accept_rate;      /* > 0: the spec rows of this acceptance rate (else each choice's first) */
    const char *gpu_spec, *gpu_ref_spec; /* the GPU specs these came from (NULL: the defaults), for the rows */
    /* > 0: a scenario, not a prediction: each step's compute set to this multiple of its bytes
     * over the target's bandwidth (the engine row's hbm_floor_us x read_gbs_H200 / target),
     * no band; the draft's compute scaled as decode's; the all-reduce replayed as always */
    double compute_floor_x;
} arb_e2e_opts_t;

/* A value with its band: lo <= v <= hi. */
typedef struct arb_e2e_row {
    char choice[256]; /* impl[:params] the modeled plugin replayed */
    char mode[16];
    char phase[8]; /* "decode" or "spec" */
    int spec_k;
    double accept_rate;       /* spec rows */
    double read_gbs_h200;     /* the engine's measured streaming read */
    double compute_h200_us;   /* the compute-only step (decode) or cycle compute (spec) on the H200 */
    arb_e2e_band_t compute_us; /* scaled to the target */
    arb_e2e_band_t allreduce_us;
    arb_e2e_band_t step_us;   /* decode: one step; spec: one cycle (k draft steps + verify) */
    arb_e2e_band_t tok_s;     /* lo from step hi, hi from step lo */
    arb_e2e_band_t break_even; /* spec rows; +inf where speculation loses at p = 1 */
    /* What does not depend on the compute scaling (NAN where it does not apply): */
    arb_e2e_band_t verify_allreduce_us; /* spec rows: the verify's replayed all-reduce */
    arb_e2e_band_t saving_us;           /* NCCL's all-reduce minus this choice's, per step or cycle */
    arb_e2e_band_t verify_saving_us;    /* spec rows: the same per verify */
    arb_e2e_band_t allreduce_share;     /* all-reduce / step (band: its ends against the compute's) */
    char engine_csv[256];               /* the engine run of this choice (its decode row) */
} arb_e2e_row_t;

typedef struct arb_e2e_result {
    char fabric[64], pred_csv[256], pred_argv[512]; /* the prediction table: its fabric label and command */
    int ranks;
    double target_read_gbs, h200_peak_gbs;
    char kernels_csv[256], gpu_spec[256], gpu_ref_spec[256]; /* empty: not given */
    double compute_floor_x; /* the scenario's multiple (0: none) */
    size_t nrows;
    arb_e2e_row_t rows[ARB_E2E_MAX_ROWS];
} arb_e2e_result_t;

/* Reads engine results CSVs (modeled-plugin rows: impl=modeled) and the prediction table
 * the plugin replayed; fills one decode row and, where the runs had spec rows, one spec row
 * per (choice, mode). Refuses files that lack a needed column, naming it. */
arb_status_t arb_e2e_predict(const char *const *engine_csvs, size_t nfiles, const char *pred_csv,
                             const arb_e2e_opts_t *o, arb_e2e_result_t *res, char *err, size_t err_len);

/* sum_{i=0..k} p^i = R solved for p by bisection (0 when R <= 1, +inf when R > k + 1). */
double arb_e2e_break_even(int k, double ratio);

/* Writes the predicted CSV atomically (source=model in every row). */
arb_status_t arb_e2e_write(const arb_e2e_result_t *res, const char *path, const char *argv_joined, char *err,
                           size_t err_len);
void arb_e2e_print(const arb_e2e_result_t *res, const arb_e2e_opts_t *o, FILE *f);

#endif
