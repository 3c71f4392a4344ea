/* SPDX-License-Identifier: MIT */
/*
 * The options of `arbench engine` as one struct (parsed by engine/model/engine_opts.c, used by
 * the driver, the CPU reference and the GPU step). Stable: fields are only added.
 */
#ifndef ARB_ENGINE_OPTS_H
#define ARB_ENGINE_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/config.h"
#include "sweep/plan.h" /* arb_impl_spec_t, arb_mode_t */
#include "model/shard.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum arb_engine_backend {
    ARB_ENGINE_GPU = 0, /* CUDA kernels and graphs (engine/gpu_*) */
    ARB_ENGINE_CPU = 1, /* the float64 reference (engine/cpu_ref*), host memory, host plugins */
} arb_engine_backend_t;

/* How the GPU backend launches a step's kernels (engine/gpu/persist.h). */
typedef enum arb_step_form {
    ARB_STEP_LAUNCHES = 0,   /* one launch per kernel, about 14 a layer */
    ARB_STEP_PERSISTENT = 1, /* one persistent launch per layer segment between call sites */
    ARB_STEP_PERSISTENT_ATTN = 2, /* the attention persistent, the MoE block as launches */
} arb_step_form_t;

/* --l2-ahead: later kernels' weights that earlier, latency-bound kernels of the launches form
 * pull toward L2 after their wait (engine/gpu/gpu_step.cu), bits */
enum {
    ARB_L2_AHEAD_O_PROJ = 1, /* o_proj's, by the absorption's CTAs */
    ARB_L2_AHEAD_ROUTER = 2, /* the router's, by W_uv's CTAs */
};

/* --l2-side: a layer's weights that a side branch of the launches form's step (its own stream,
 * forked from the main one) pulls toward L2 while the chain runs (engine/gpu/gpu_step.cu), bits */
enum {
    ARB_L2_SIDE_O_PROJ = 1, /* o_proj's, forked after qkv_a (during the attention's chain) */
    ARB_L2_SIDE_ROUTER = 2, /* the router's, forked after qkv_a */
    ARB_L2_SIDE_SHARED = 4, /* the shared expert's gate, up and down, forked after qkv_a */
    ARB_L2_SIDE_QKV_A = 8,  /* the next layer's q_a + kv_a, forked after this layer's router */
    ARB_L2_SIDE_CACHE = 16, /* this layer's latent cache (every position of its capacity), forked after qkv_a */
    ARB_L2_SIDE_ALL = 31,   /* every bit above: the model's check and the tests take it from here */
};

/* --wave-fit: projections of the launches form whose grid is folded into one wave of
 * co-resident blocks, each block running several tiles (engine/gpu/kernels/wave_fit.h), bits */
enum {
    ARB_WAVE_FIT_QKV_A = 1,  /* q_a + kv_a with the prep (qkva_prep) */
    ARB_WAVE_FIT_O_PROJ = 2, /* o_proj */
};

/* --fuse: launches of the launches form run as one (engine/gpu/kernels), bits. qb_absorb's
 * results are bit-identical to the launches it replaces; merge_uv sums W_uv's products in its own
 * order (per 64 latent columns, then the blocks in order), so its o differs from the two launches'
 * in the last bits (both are checked against a double reference). Which apply to a model:
 * engine/gpu/kernels/qb_fit.h's arb_fuse_applied. */
enum {
    ARB_FUSE_QB_ABSORB = 1, /* q_b and the absorption (mla_qb.cu), where the shapes fit it */
    ARB_FUSE_MERGE_UV = 2,  /* the attention's merge and W_uv (attend_ops.cuh), where the shapes fit it */
    ARB_FUSE_PREP_QB = 4,   /* the MLA prep in qb_absorb's launch instead of qkv_a's last block (mla_qb.cu),
                               bit-identical; needs qb_absorb */
};

#define ARB_ENGINE_DEFAULT_CONFIG "kimi-k2"
#define ARB_ENGINE_DEFAULT_CONTEXT 4096u
#define ARB_ENGINE_DEFAULT_STEPS 32u
#define ARB_ENGINE_DEFAULT_SPEC_K 2u     /* verify T = k + 1 = 3 tokens: 43,008 B at hidden 7168 */
#define ARB_ENGINE_DEFAULT_SEED 1u
#define ARB_ENGINE_DEFAULT_PREFILL_CHUNK 8u  /* the GPU step's largest T (ARB_GPU_MAX_T) */
/* --moe-early spec, where the MoE runs as the GPU's launches (else dropped): decode -2.85%, verify
 * +0.04% (not shown) on an H100, four rounds (results/engine-h100/77935d4-spec/) */
#define ARB_ENGINE_DEFAULT_MOE_EARLY 3
#define ARB_ENGINE_MAX_RATES 16u          /* acceptance rates in one --accept-rate list */

typedef struct arb_engine_opts {
    char config[1024];               /* --config NAME|PATH */
    arb_config_overrides_t overrides; /* --layers, --experts, --topk, --vocab */
    arb_weight_format_t weights;     /* --weights bf16|int4 (routed experts only) */
    unsigned tp_shape;               /* --tp-shape K; 0 = the number of ranks */
    unsigned context;                /* --context L: tokens in the KV cache before timing */
    unsigned steps;                  /* --steps S: timed decode steps and verify steps per mode */
    unsigned spec_k;                 /* --spec-k k: verify steps have T = k + 1 */
    unsigned prefill_chunk;          /* --prefill-chunk T: tokens per prefill step */
    arb_impl_spec_t impl;            /* --impl NAME[:params], every call site */
    int impl_given;                  /* 0: the default (nccl on GPU, mpi-host on CPU) */
    unsigned modes;                  /* --modes: bits (1 << ARB_MODE_GRAPH), (1 << ARB_MODE_EAGER) */
    uint64_t seed;                   /* --seed S: weights and prompt */
    char out[4096];                  /* --out FILE ("" = results/engine-<UTC>-<host>.csv) */
    arb_engine_backend_t backend;    /* --backend gpu|cpu */
    int dry_run;                     /* --dry-run: print the memory plan and exit */
    int quiet;                       /* --quiet: no progress lines */
    int no_compute_only;             /* --no-noop-replay: skip the noop (compute-only) replay */
    unsigned check_steps;            /* --check-steps N: GPU vs CPU reference, tokens of the first N steps (0: none) */
    char dump_logits[4096];          /* --dump-logits FILE: last step's logits (rank 0's view), for tests */
    char dump_tokens[4096];          /* --dump-tokens FILE: greedy tokens of every step, for tests */
    double accept_rate;              /* --accept-rate p: speculative cycles, each draft right with probability p (< 0: off) */
    /* per-site choice, A/B and speculative cycles (docs/engine-e2e.md) */
    char profile[4096];              /* --profile FILE: per-site choice from a tuning profile (CSV or JSON) */
    int tune;                        /* --tune: sweep the call-site shapes first and use that profile */
    arb_impl_spec_t baseline;        /* --baseline IMPL[:params]: A/B against it in the same run */
    int baseline_given;
    /* --accept-rate p1,p2,...: speculative cycles once per rate, in this order, on the same
     * model (one prefill for all); accept_rate above is accept_rates[0] (or < 0: off) */
    double accept_rates[ARB_ENGINE_MAX_RATES];
    unsigned naccept;
    int append; /* --append: add rows to an existing --out */
    int force;  /* --force: replace existing --dump-tokens / --dump-logits / --out-ids files */
    /* real weights and tokens (engine/run/run_weights.h) */
    char weights_dir[1024];  /* --weights-dir DIR: a Hugging Face checkpoint; config = DIR/config.json */
    char prompt_ids[4096];   /* --prompt-ids FILE: the prompt as token ids (decimal, whitespace-separated) */
    char out_ids[4096];      /* --out-ids FILE: the greedy continuation's ids, the same format */
    int config_given, weights_given, context_given; /* the option was on the command line */
    char draft_dir[4096]; /* --draft-dir DIR: an EAGLE-3 draft head (engine/draft); measured acceptance */
    /* gpu: how a step is launched (engine/gpu/gpu_step.cu) */
    int pdl;              /* --pdl on|off: programmatic dependent launch between the step's kernels (default on) */
    arb_step_form_t step_form; /* --step-form launches|persistent|persistent-attn (default launches) */
    unsigned l2_ahead;         /* --l2-ahead none|LIST: ARB_L2_AHEAD_* bits */
    unsigned l2_side;          /* --l2-side none|LIST: ARB_L2_SIDE_* bits (default router in the GPU's launches
                                  form, none elsewhere: the parser drops the default there) */
    int l2_side_given;         /* --l2-side was given: refused outside the GPU's launches form */
    unsigned side_upto;        /* --l2-side-upto T: the side branch in steps of at most T tokens (default 8) */
    unsigned wave_fit;         /* --wave-fit none|LIST: ARB_WAVE_FIT_* bits (default none) */
    unsigned wave_from;        /* --wave-fit-from T: the fold in steps of at least T tokens (default 1) */
    unsigned fuse;             /* --fuse none|LIST: ARB_FUSE_* bits (default qb_absorb, where the shapes fit it) */
    int fuse_given;            /* --fuse was given: what it names must fit the model (else refused) */
    int moe_stage;             /* --moe-stage none|smem: 1 smem (the routed INT4 gate/up at T <= 3 stages more
                                  groups in shared memory; an experiment, default none) */
    int moe_order;             /* --moe-order auto|shared-first|routed-first|spread: 0 .. 3 (the MoE gate/up grid's order;
                                  default 0 auto) */
    int moe_early;             /* --moe-early off|on|l2|spec|spec-sync: 1 on (the MoE down launch reads the selection
                                  and issues its first round of routed weights before its PDL wait; gate/up triggers
                                  it after its own), 2 l2 (on, and its later rounds' INT4 weights toward L2 there):
                                  both withdrawn; 3 spec (on's loads from a guess of the selection, read again after
                                  the wait and the first round issued again where it differs), 4 spec-sync (spec's
                                  down, gate/up triggering at its start); default 3 spec where the MoE runs as the
                                  GPU's launches, else 0 */
    int moe_early_given;       /* --moe-early was given: spec and spec-sync refused where there are no MoE launches */
    unsigned attn_min_rows;    /* --attn-min-rows N: the attention's row groups keep at least N of the step's
                                  T x heads rows, 1..64 (0: the kernels' default, 4) */
    unsigned attn_fill;        /* --attn-fill N: the attention's grid aims at N CTAs an SM, 1..16 (0: the kernels'
                                  default, 3) */
    unsigned attn_wide_from;   /* --attn-wide-from T: steps of at least T tokens whose T x heads rows pass 16 run
                                  the attention in wide CTAs (16 warps, up to 32 rows a chunk), 1..8 (0: never,
                                  the default); the GPU's launches form only */
} arb_engine_opts_t;

void arb_engine_opts_defaults(arb_engine_opts_t *o);

/* The options that take none or a comma list of names, each name a bit (engine_opts_bits.c). */
typedef enum arb_engine_bits {
    ARB_BITS_L2_AHEAD = 0, /* --l2-ahead: ARB_L2_AHEAD_* */
    ARB_BITS_WAVE_FIT = 1, /* --wave-fit: ARB_WAVE_FIT_* */
    ARB_BITS_FUSE = 2,     /* --fuse: ARB_FUSE_* */
    ARB_BITS_L2_SIDE = 3,  /* --l2-side: ARB_L2_SIDE_* */
} arb_engine_bits_t;

/* The option `which`'s value (none, or a comma list of its names, each once) into its bits; 0, or
 * -1 with a message naming the option, the value and the accepted form in err (the parser of
 * arb_engine_opts_parse; engine_gpu_bench's too). */
int arb_engine_opts_bits_parse(arb_engine_bits_t which, const char *v, unsigned *bits, char *err, size_t err_len);

/* The names of `which`'s bits joined by '+', as the option takes them, into buf [n]; "none" for
 * no bit. */
const char *arb_engine_opts_bits_str(arb_engine_bits_t which, unsigned bits, char *buf, size_t n);

/* --moe-order's value: its name by number (0 auto, 1 shared-first, 2 routed-first, 3 spread; NULL
 * past them), and a name into its number: 0, or -1 with a message naming the option, the value and
 * the accepted names in err (arb_engine_opts_parse's; engine_gpu_bench's too). */
const char *arb_engine_opts_moe_order_name(int order);
int arb_engine_opts_moe_order(const char *v, int *order, char *err, size_t err_len);

/* --attn-wide-from's value: a token count 1..8 (ARB_GPU_MAX_T) into out, 0; or -1 with a message naming
 * the option, the value and the range in err (arb_engine_opts_parse's; engine_gpu_bench's too). */
int arb_engine_opts_attn_wide_from(const char *v, unsigned *out, char *err, size_t err_len);

/* --moe-early's value, the same way: 0 off, 1 on, 2 l2 (both withdrawn: arb_engine_opts_parse refuses
 * them), 3 spec, 4 spec-sync. */
const char *arb_engine_opts_moe_early_name(int early);
int arb_engine_opts_moe_early(const char *v, int *early, char *err, size_t err_len);

/* Parses `arbench engine` arguments (argv[0] is the subcommand). Returns 0, 1 when
 * --help was given, -1 on bad input with a one-line message naming the option and the
 * accepted form in err. */
int arb_engine_opts_parse(int argc, char **argv, arb_engine_opts_t *o, char *err, size_t err_len);

/* The options against each other, once arb_engine_opts_parse has read them all (engine_opts_check.c;
 * it calls this last): the config path from --weights-dir, the launches-form defaults (--l2-side,
 * --moe-early) dropped where the form given does not run, and the refusals of options given together
 * or where their form does not run. 0, or -1 with a one-line message naming the options and the way
 * out in err. */
int arb_engine_opts_settle(arb_engine_opts_t *o, char *err, size_t err_len);

/* The usage text. */
void arb_engine_opts_usage(FILE *f);

#ifdef __cplusplus
}
#endif

#endif
