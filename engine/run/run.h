/* SPDX-License-Identifier: MIT */
/*
 * The run driver of `arbench engine` (engine/README.md): setup (config, shards, memory
 * plan, call-site instances), then per run configuration (a set of sites: the chosen
 * implementation, then noop/no communication for the compute-only replay) a model,
 * the prefill to --context, and per mode S decode steps and S verify steps; rows to
 * the results CSV (docs/engine.md) and a table on rank 0.
 *
 * Issue 15 extends it: a run configuration holds one instance per distinct site choice
 * (sites[] may point at different instances), and further configurations (a baseline)
 * are more entries of `cfgs`.
 */
#ifndef ARB_ENGINE_RUN_H
#define ARB_ENGINE_RUN_H

#include <stdint.h>

#include "stats/ab.h"
#include "model/backend.h"
#include "runtime/hostops.h"
#include "runtime/loader.h"
#include "base/meta.h"
#include "results/results.h"
#include "base/stats.h"

#define ARB_ENGINE_MAX_CFGS 4
#define ARB_ENGINE_MAX_INSTS 8 /* distinct instances of one configuration */

/* decode: T = 1; verify: T = k + 1 on the decode chain; spec: speculative cycles (--accept-rate) */
enum { ARB_PHASE_DECODE = 0, ARB_PHASE_VERIFY = 1, ARB_PHASE_SPEC = 2, ARB_PHASES };
extern const char *const arb_phase_names[ARB_PHASES];

/* What one (configuration, mode, phase) measured. */
typedef struct arb_phase_result {
    int ran;              /* 0: not run (the mode was declined: note says why) */
    char note[256];
    unsigned T, nsteps;
    double *us;           /* [nsteps] step time, max over ranks */
    arb_stats_t st;
    double bytes;         /* mean bytes a step must read (max over ranks) */
    double experts;       /* distinct routed experts per MoE layer, mean over steps */
    uint32_t *tokens;     /* decode: [nsteps + spec_k] greedy outputs; verify: [nsteps * T] */
    unsigned agree, compared; /* verify outputs equal to the decode run's tokens */
    double moe_ours_us, moe_ours_bytes, moe_cublas_us, moe_cublas_bytes; /* < 0: not measured */
    unsigned produced;    /* spec: tokens the cycles produced (accepted drafts + one per cycle) */
    double total_us;      /* spec: sum of the cycles' times */
    double draft_us, verify_us; /* spec: medians per cycle of the draft's k steps and of the verify (max over ranks) */
    double accept_rate;   /* spec: the p these cycles ran at */
} arb_phase_result_t;

/* One run configuration: which instance serves each site. */
typedef struct arb_runcfg {
    char label[32];        /* "impl" or "compute-only" */
    arb_impl_spec_t spec;  /* the implementation at every site ("" name: no communication) */
    arb_loaded_plugin_t lp[ARB_ENGINE_MAX_INSTS];
    arb_inst_t *inst[ARB_ENGINE_MAX_INSTS];
    unsigned ninst;
    arb_inst_t **sites;    /* [2 * layers] */
    arb_inst_t **sites_t1; /* [2 * layers] or NULL: one-token steps' instances where a profile chose differently */
    arb_impl_spec_t spec_t1; /* their implementation (rows of the decode phase) */
    char describe_t1[256];
    char describe[256];    /* the instance's resolved parameters */
    char fusion[32];       /* path of the fused op: plugin, composed, mixed, local */
    arb_phase_result_t res[ARB_MODE_COUNT][ARB_PHASES]; /* [.][ARB_PHASE_SPEC] unused: see spec */
    arb_phase_result_t specs[ARB_MODE_COUNT][ARB_ENGINE_MAX_RATES]; /* per --accept-rate value, in its order */
    int borrowed;          /* the instances belong to the profile's registry (engine/run/run_profile.h) */
    char note[96];         /* "fallback IMPL at site S: why" when a profile's choice fell back: every row's note */
} arb_runcfg_t;

typedef struct arb_engine_run {
    const arb_engine_opts_t *o;
    arb_mpi_t *m;
    int argc;
    char **argv;
    arb_model_config_t cfg;
    arb_engine_setup_t s;
    const arb_backend_ops_t *be;
    arb_meta_t meta;
    arb_runcfg_t cfgs[ARB_ENGINE_MAX_CFGS];
    unsigned ncfgs;
    unsigned modes;          /* bits of the modes that run */
    double bandwidth;        /* bytes/s, streaming read, < 0 when not measured */
    double check_max_logit_diff; /* --check-steps: |gpu - cpu| logits, < 0: not checked */
    arb_results_writer_t *rows;  /* rank 0 */
    unsigned check_agree, check_compared;
    int progress;            /* rank 0 writes progress lines to a terminal */
    char out[4096];
} arb_engine_run_t;

/* run.c: `arbench engine` after option parsing; returns the exit status. */
int arb_engine_main(const arb_engine_opts_t *o, arb_mpi_t *m, int argc, char **argv);

/* run_steps.c */
arb_status_t arb_run_config(arb_engine_run_t *r, arb_runcfg_t *c, char *why, size_t len);
arb_status_t arb_run_check(arb_engine_run_t *r, void *gpu_model, uint32_t gpu_g0, char *why, size_t len);
/* run_spec.c: speculative cycles at acceptance p on the decode chain g (--accept-rate) */
arb_status_t arb_run_spec_phase(arb_engine_run_t *r, arb_runcfg_t *c, void *model, arb_mode_t mode, const uint32_t *g,
                                double p, arb_phase_result_t *pr, int32_t *ebuf, char *why, size_t len);
/* run_steps.c helpers shared with run_check.c and run_spec.c */
arb_status_t arb_run_phase_alloc(arb_phase_result_t *pr, unsigned T, unsigned nsteps, size_t ntokens, double **mine,
                                 char *why, size_t len);
arb_status_t arb_run_step_bytes(arb_engine_run_t *r, void *model, unsigned T, unsigned pos0, double *bytes,
                                double *experts, int32_t *ebuf, char *why, size_t len);
arb_status_t arb_run_finish_times(arb_engine_run_t *r, arb_phase_result_t *pr, double *mine, char *why, size_t len);
void arb_run_progress(const arb_engine_run_t *r, const char *what, unsigned done, unsigned total);
arb_status_t arb_run_agree(arb_engine_run_t *r, arb_status_t st, char *why, size_t len);
arb_status_t arb_run_greedy(arb_engine_run_t *r, const arb_backend_ops_t *be, void *model, unsigned T, uint32_t *out,
                            char *why, size_t len);
arb_status_t arb_run_prefill(arb_engine_run_t *r, const arb_backend_ops_t *be, arb_runcfg_t *c, void *model,
                             uint32_t *g0, char *why, size_t len);
arb_status_t arb_run_step(arb_engine_run_t *r, const arb_backend_ops_t *be, arb_runcfg_t *c, void *model,
                          const uint32_t *tokens, unsigned T, unsigned pos0, arb_mode_t mode, double *us, char *why,
                          size_t len);
uint32_t arb_prompt_token(const arb_engine_run_t *r, unsigned pos);

/* 1 for the configuration of the chosen implementation (the one that gets rows). */
int arb_run_is_impl(const arb_runcfg_t *c);

/* run_rows.c (rank 0): the results CSV (docs/engine.md), one row per (mode, phase) of
 * the implementation's configuration, written as soon as the phase finished. */
int arb_run_open_rows(arb_engine_run_t *r, char *err, size_t len);
void arb_run_row(arb_engine_run_t *r, const arb_runcfg_t *c, int mode, int phase);
/* the row of the speculative cycles at the i-th --accept-rate value */
void arb_run_spec_row(arb_engine_run_t *r, const arb_runcfg_t *c, int mode, unsigned i);
void arb_run_ab_row(arb_engine_run_t *r, const arb_runcfg_t *c, int mode, int phase, int role, const double *us,
                    size_t n, unsigned T, const arb_ab_result_t *cmp, const arb_agreement_t *ag, const char *bname,
                    const char *bparams);
void arb_run_close_rows(arb_engine_run_t *r);
void arb_run_print_table(const arb_engine_run_t *r);
extern const char *const arb_engine_columns[];
extern const unsigned arb_engine_ncolumns;

/* Logits of two computations of the same function (GPU vs the CPU reference, TP=1 vs
 * TP=2) agree when |a - b| <= ARB_ENGINE_LOGIT_TOL everywhere. Why 0.25: logits here
 * have a standard deviation of about 1 (lm_head rows of unit variance over H, h of RMS
 * 1); every stored activation is bf16 (8 significant bits, 2^-9 relative per rounding),
 * and where the two computations round a value differently (another summation order,
 * fp32 vs float64, a per-rank bf16 partial) the difference of one ulp propagates
 * through the remaining layers; on the tiny config, TP=1 vs TP=2 (bf16 partials summed
 * by mpi-host) differ by at most 0.024 over 14 decode steps (tests/engine/run/engine_mpi.sh,
 * seed 1).
 * 0.25 leaves 4x margin, and is still far below the logit gap between the top token
 * and a random other one (about 3). */
#define ARB_ENGINE_LOGIT_TOL 0.25

#endif
