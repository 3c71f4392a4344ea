/* SPDX-License-Identifier: MIT */
/*
 * The run driver's state (engine/README.md): setup (config, shards, memory plan,
 * call-site instances), the run configurations (a set of sites: the chosen
 * implementation, the compute-only replay, an A/B baseline), what each (configuration,
 * mode, phase) measured, and the row each measurement hands to the row sink
 * (engine/run/run_rows.h writes them: docs/engine.md). Types only: every driver module
 * includes this header and none includes the driver's others back.
 */
#ifndef ARB_ENGINE_RUN_STATE_H
#define ARB_ENGINE_RUN_STATE_H

#include <stdint.h>

#include "base/meta.h"
#include "base/stats.h"
#include "draft/draft_weights.h"
#include "model/backend.h"
#include "results/results.h"
#include "runtime/hostops.h"
#include "runtime/loader.h"
#include "stats/ab.h"
#include "stats/spec.h"
#include "weights/load.h"

#define ARB_ENGINE_MAX_CFGS 4
#define ARB_ENGINE_MAX_INSTS 8 /* distinct instances of one configuration */

/* decode: T = 1; verify: T = k + 1 on the decode chain; spec: speculative cycles (--accept-rate) */
enum { ARB_PHASE_DECODE = 0, ARB_PHASE_VERIFY = 1, ARB_PHASE_SPEC = 2, ARB_PHASES };
extern const char *const arb_phase_names[ARB_PHASES];

/* What a run configuration is for: the compute-only replay (noop on the GPU, no
 * communication on the CPU), the chosen implementation (the one that gets rows), the
 * --baseline of the A/B. */
typedef enum arb_cfg_role { ARB_CFG_COMPUTE_ONLY, ARB_CFG_IMPL, ARB_CFG_BASELINE, ARB_CFG_ROLES } arb_cfg_role_t;
extern const char *const arb_cfg_role_names[ARB_CFG_ROLES]; /* "compute-only", "impl", "baseline" */

/* What one (configuration, mode, phase) measured. */
typedef struct arb_phase_result {
    int ran;              /* 0: not run */
    unsigned T, nsteps;   /* spec: nsteps counts the cycles */
    double *us;           /* [nsteps] step (spec: cycle) time, max over ranks */
    arb_stats_t st;
    double bytes;         /* mean bytes a step must read (max over ranks) */
    double experts;       /* distinct routed experts per MoE layer, mean over steps */
    uint32_t *tokens;     /* decode: [nsteps + spec_k + 1] the greedy chain; verify: [nsteps * T]; spec: [produced] */
    unsigned agree, compared; /* verify, spec: outputs equal to the decode run's tokens */
    double moe_ours_us, moe_ours_bytes, moe_cublas_us, moe_cublas_bytes; /* < 0: not measured */
    unsigned produced;    /* spec: tokens the cycles produced (accepted drafts + one per cycle) */
    double accept_rate;   /* spec: the p these cycles ran at */
    arb_spec_summary_t spec; /* spec: medians, tok/s, ratio to this mode's decode, break-even (engine/stats/spec.h) */
} arb_phase_result_t;

/* One run configuration: which instance serves each site. */
typedef struct arb_runcfg {
    arb_cfg_role_t role;
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
    arb_phase_result_t res[ARB_MODE_COUNT][ARB_PHASES]; /* [.][ARB_PHASE_SPEC] unused: see specs */
    arb_phase_result_t specs[ARB_MODE_COUNT][ARB_ENGINE_MAX_RATES]; /* per --accept-rate value, in its order */
    int borrowed;          /* the instances belong to a registry (engine/run/run_profile.h) */
    char note[96];         /* "fallback IMPL at site S: why" when a profile's choice fell back: every row's note */
} arb_runcfg_t;

/* One side of an A/B phase (docs/engine-e2e.md): its interleaved steps and the comparison. */
typedef struct arb_run_ab_row {
    int side;                       /* ARB_AB_A (the baseline) or ARB_AB_B (the candidate) */
    const arb_runcfg_t *baseline;
    unsigned T;
    const double *us;               /* [n] this side's step times, max over ranks */
    size_t n;
    const arb_ab_result_t *cmp;     /* speedup = median(A) / median(B), its interval, each side's statistics */
    const arb_agreement_t *agree;
} arb_run_ab_row_t;

/* What a measurement hands to the row sink. */
typedef struct arb_run_row {
    const arb_runcfg_t *c;
    int mode, phase;
    unsigned rate;                  /* spec: the index of its --accept-rate value */
    const arb_phase_result_t *res;  /* decode, verify, spec; NULL for an A/B row */
    const arb_run_ab_row_t *ab;         /* an A/B row (phase: decode or verify) */
} arb_run_row_t;

struct arb_engine_run;
typedef void (*arb_row_sink_fn)(struct arb_engine_run *r, const arb_run_row_t *row);

typedef struct arb_engine_run {
    const arb_engine_opts_t *o; /* &opts */
    arb_engine_opts_t opts;     /* the command line's, with what the checkpoint and the prompt decide (run_weights.h) */
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
    unsigned check_agree, check_compared;
    double check_rel_diff;        /* the largest |gpu - cpu| over the reference's logit RMS, per step */
    size_t check_experts_differ;  /* selected experts of the GPU absent from the reference's, all steps */
    size_t check_experts_total;   /* selected experts compared */
    int check_first_layer;        /* the lowest layer with a differing expert; -1: none */
    arb_row_sink_fn sink;    /* rank 0: where the implementation's measurements go; NULL elsewhere */
    arb_results_writer_t *rows;  /* the sink's CSV */
    int progress;            /* rank 0 writes progress lines to a terminal */
    char out[4096];
    arb_draft_config_t dcfg; /* --draft-dir: the EAGLE-3 head's config and this rank's shard of it */
    arb_draft_shard_t dshard;
    /* real weights and tokens (engine/run/run_weights.h) */
    arb_wload_t *wload;          /* --weights-dir, NULL: weights from --seed */
    arb_wload_stats_t load_stats; /* the last model's load */
    uint32_t *prompt;            /* --prompt-ids [nprompt], NULL: the seeded prompt */
    unsigned nprompt;
} arb_engine_run_t;

/* Speculative phases per mode: one measured with --draft-dir, else one per --accept-rate. */
static inline unsigned arb_run_nspec(const arb_engine_run_t *r)
{
    return r->o->draft_dir[0] ? 1u : r->o->naccept;
}

/* The configuration of that role, or NULL. */
arb_runcfg_t *arb_run_find(arb_engine_run_t *r, arb_cfg_role_t role);
const arb_runcfg_t *arb_run_find_const(const arb_engine_run_t *r, arb_cfg_role_t role);

/* Hands a measurement to the sink (rank 0); the other ranks have none. */
static inline void arb_run_emit(arb_engine_run_t *r, const arb_run_row_t *row)
{
    if (r->sink)
        r->sink(r, row);
}

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
