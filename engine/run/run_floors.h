/* SPDX-License-Identifier: MIT */
/*
 * The per-kernel floor table of `arbench engine` (docs/engine.md, "Per-kernel floors"):
 * for each kernel family of a step, the bytes it must read per layer (weights by kind from
 * the shard's shapes, the latent cache at the step's positions, the distinct experts the
 * step touched), the floor at the run's measured streaming bandwidth, the measured time
 * (the chain profile: what each launch adds to the end of a replayed window of the step;
 * graph replay without each kind; the eager profile with events between launches) and
 * measured / floor.
 * Printed on rank 0 and written to <results>-kernels-<run_id>.csv (temp file + rename).
 *
 * The families are the GPU profile's kinds (engine/gpu/gpu_model.h, arb_gpu_prof_name); a
 * kind a backend reports under another name is summed into "other" (no bytes).
 */
#ifndef ARB_ENGINE_RUN_FLOORS_H
#define ARB_ENGINE_RUN_FLOORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/backend.h"
#include "model/config.h"
#include "model/shard.h"

typedef enum arb_floor_family {
    ARB_FLOOR_EMBED = 0, /* embedding rows + input_layernorm[0]; once per step */
    ARB_FLOOR_QKV_A,     /* q_a + kv_a, replicated */
    ARB_FLOOR_MLA_PREP,  /* q_a / kv_a norms */
    ARB_FLOOR_Q_B,
    ARB_FLOOR_ABSORB,    /* W_uk: the dn rows per head of kv_b */
    ARB_FLOOR_ATTEND,    /* latent cache rows 0 .. pos0+T-1 */
    ARB_FLOOR_COMBINE,   /* W_uv: the dv rows per head of kv_b */
    ARB_FLOOR_O_PROJ,
    ARB_FLOOR_SITE_A,    /* post_attention_layernorm */
    ARB_FLOOR_ROUTER,    /* router [E x H] bf16 + fp32 bias, replicated; MoE layers */
    ARB_FLOOR_MOE_GATE_UP, /* distinct experts' gate + up (+ INT4 scales), shared expert's gate + up */
    ARB_FLOOR_MOE_DOWN,  /* distinct experts' down (+ scales), shared expert's down */
    ARB_FLOOR_DENSE,     /* dense layers' gate, up, down */
    ARB_FLOOR_SITE_B,    /* next input_layernorm (model.norm after the last layer) */
    ARB_FLOOR_LM_HEAD,   /* lm_head shard; once per step */
    ARB_FLOOR_OTHER,     /* kinds the table does not know (no bytes) */
    ARB_FLOOR_FAMILIES
} arb_floor_family_t;

extern const char *const arb_floor_family_names[ARB_FLOOR_FAMILIES];
/* The family of a backend's kind name; ARB_FLOOR_OTHER when unknown. */
arb_floor_family_t arb_floor_family_of(const char *name);

/* Bytes one step of T tokens at pos0 must read, per family and rank. */
typedef struct arb_floor_bytes {
    double per_layer[ARB_FLOOR_FAMILIES]; /* per layer where the family runs (per step: embed, lm_head) */
    unsigned layers[ARB_FLOOR_FAMILIES];  /* layers where it runs (1: embed, lm_head) */
    double step[ARB_FLOOR_FAMILIES];      /* per_layer x layers */
    double total;
} arb_floor_bytes_t;

/* distinct_experts: distinct routed experts per MoE layer, mean over the step's layers. The
 * families add up to arb_step_bytes' total for the same step (memplan.h). */
void arb_floor_bytes(const arb_model_config_t *cfg, const arb_shard_t *sh, arb_weight_format_t wf, unsigned T,
                     unsigned pos0, double distinct_experts, arb_floor_bytes_t *out);

/* One launch runs two families (a fused kernel: `arbench engine --fuse`): from's bytes counted in
 * into's row, which the launch's time is filed under; from then runs in no layer, so its row is
 * neither printed nor written. The total is unchanged. Both must run in the same layers (else
 * nothing moves and -1). */
int arb_floor_fold(arb_floor_bytes_t *b, arb_floor_family_t into, arb_floor_family_t from);

/* One row: per-layer figures (per step for embed, lm_head); times NAN when not measured, ratios
 * NAN then or when the family reads no bytes. A graph time may be negative (noise around 0). */
typedef struct arb_floor_row {
    unsigned layers;
    double bytes_layer, bytes_step;
    double floor_us;              /* per layer: bytes_layer / bandwidth */
    double chain_us, chain_ratio; /* per layer: the chain profile's step estimate / layers */
    double graph_us, graph_ratio; /* per layer: the graph-replay time over the step / layers */
    double eager_us, eager_ratio; /* per layer: the eager profile's */
} arb_floor_row_t;

typedef struct arb_floor_table {
    unsigned T, pos0;
    double experts;     /* distinct routed experts per MoE layer */
    double bytes_per_s; /* the streaming bandwidth the floors use */
    arb_floor_row_t row[ARB_FLOOR_FAMILIES];
    arb_floor_row_t step;        /* the whole step: bytes, floor, the measurements' step times */
    double chain_sum_us;         /* sum of the families' chain estimates (about step.chain_us, the embedding left out) */
    double graph_sum_us;         /* sum of the families' graph times (overlap: != step.graph_us) */
    double eager_sum_us;
    double phase_graph_us;       /* the graph-mode phase's median step (the results row), NAN: none */
    char chain_method[200], graph_method[200], eager_method[200];
    unsigned chain_layers;       /* the chain profile's measured layers and what each added (us) */
    unsigned chain_layer[3];
    int chain_dense[3];
    double chain_layer_us[3];
    char note[160];              /* a line printed under the header (a fused launch's rows), "" for none */
} arb_floor_table_t;

/* The rows from the bytes and the measurements (any may be NULL): chain (the backend's
 * graph 2), graph (1), eager (0). */
void arb_floor_table_fill(arb_floor_table_t *t, const arb_floor_bytes_t *b, unsigned T, unsigned pos0, double experts,
                          double bytes_per_s, const arb_kernel_times_t *chain, const arb_kernel_times_t *graph,
                          const arb_kernel_times_t *eager);

/* The table, "# "-prefixed lines. */
void arb_floor_table_print(FILE *f, const arb_floor_table_t *t);

/* What identifies the run in every CSV row. */
typedef struct arb_floor_csv_info {
    const char *run_id, *git_rev, *host, *gpu, *argv, *config, *weights, *impl;
    unsigned tp_shape, context, layers, experts;
} arb_floor_csv_info_t;

/* The tables to path (a temporary file in the same folder, then rename): one row per
 * (table, family) and one "step" row per table. 0 or -1 with err set. */
int arb_floor_write_csv(const char *path, const arb_floor_csv_info_t *info, const arb_floor_table_t *t, unsigned n,
                        char *err, size_t err_len);

/* "<results without .csv>-kernels-<run_id>.csv": a side file per run, so a second run
 * appending to the same results never replaces the first's table */
void arb_floor_csv_path(const char *results, const char *run_id, char *out, size_t len);

struct arb_stepper;
/* The driver's call after the implementation's phases (collective), on that configuration's
 * stepper (run/step.h, with ARB_STEP_BYTES scratch): the table at T = 1 and T = k + 1 at
 * P0 = --context on the decode chain, printed and written on rank 0; a backend without a
 * kernel profile says so. A failure is reported, not fatal. */
void arb_run_floors(struct arb_stepper *s);

#endif
