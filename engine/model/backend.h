/* SPDX-License-Identifier: MIT */
/*
 * What the run driver needs from a backend (the CPU reference, or the GPU model of
 * engine/gpu/gpu_model.h): a model built for one set of call-site instances, one timed
 * step, the distributed argmax's local half, the selected experts. One model exists at
 * a time; a run configuration (a set of sites: the chosen implementation, or noop for
 * the compute-only replay) creates its own.
 */
#ifndef ARB_ENGINE_BACKEND_H
#define ARB_ENGINE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "model/engine_opts.h"
#include "runtime/instance.h"
#include "model/rope.h"
#include "model/shard.h"

typedef struct arb_engine_setup {
    const arb_engine_opts_t *opts;
    const arb_model_config_t *cfg;
    arb_rope_t rope;
    unsigned tp_shape;       /* K */
    unsigned shard_first;    /* held shards of this rank */
    unsigned shard_count;
    arb_shard_t shard;       /* their union */
    unsigned max_tokens;     /* largest T: max(spec_k + 1, prefill chunk) */
    unsigned positions;      /* cache capacity */
    int cuda_device;         /* -1 on the CPU backend */
    /* --draft-dir: the target layers whose outputs the EAGLE-3 draft fuses (naux 0: none) */
    unsigned naux;
    unsigned aux_layers[4];
    /* --weights-dir: the checkpoint every model of the run is read from (engine/weights/load.h),
     * NULL: weights generated from --seed. load_progress: a progress line (rank 0's terminal);
     * load_stats: the last load's bytes and time, written by create. */
    const struct arb_wload *wload;
    int load_progress;
    struct arb_wload_stats *load_stats;
} arb_engine_setup_t;

/* Where one step's time goes by kind of launch (the backend's names: "qkv_a", "attend", ...). */
#define ARB_KERNEL_KINDS_MAX 32
typedef struct arb_kernel_times {
    unsigned n;
    const char *name[ARB_KERNEL_KINDS_MAX]; /* static strings */
    double us[ARB_KERNEL_KINDS_MAX];        /* per step, microseconds (may be < 0: noise); NAN: not measured */
    double step_us;                         /* the whole step in the same measurement */
    char method[200];                       /* how, in words */
    /* chain (kernel_times' graph 2): the layers measured alone and what each added to the
     * chain, microseconds; n 0 otherwise */
    unsigned nlayers;
    unsigned layer[3];
    int layer_dense[3];
    double layer_us[3];
} arb_kernel_times_t;

typedef struct arb_backend_ops {
    const char *name; /* "cpu", "gpu" */
    /* Device (or host) memory free for this rank, bytes; < 0 when unknown. */
    double (*available)(const arb_engine_setup_t *s, char *what, size_t what_len);
    /* What the backend's own model would allocate for this rank, bytes (NULL: the memory
     * plan is all there is). The driver checks the larger of the two against `available`. */
    double (*model_bytes)(const arb_engine_setup_t *s, char *why, size_t why_len);
    /* Builds and fills the model (weights from the seed); sites [2 * layers], entries may be
     * NULL; sites_t1 [2 * layers] or NULL: the instances of one-token steps where they differ. */
    arb_status_t (*create)(const arb_engine_setup_t *s, arb_inst_t *const *sites, arb_inst_t *const *sites_t1,
                           void **model, char *why, size_t why_len);
    /* One step of T tokens at pos0, finished on return; *us = its time on this rank.
     * mode ARB_MODE_GRAPH replays a graph captured at the first step of each T. */
    arb_status_t (*step)(void *model, const uint32_t *tokens, unsigned T, unsigned pos0, arb_mode_t mode,
                         double *us, char *why, size_t why_len);
    /* This rank's (max logit, global index) per token of the last step. */
    arb_status_t (*argmax)(void *model, unsigned T, float *best, uint32_t *index, char *why, size_t why_len);
    /* experts[(l * T + t) * topk + j] of the last step (-1 in dense layers). */
    arb_status_t (*experts)(void *model, unsigned T, int32_t *experts, char *why, size_t why_len);
    /* This rank's logits [T x vocab_rank] of the last step; *vocab_rank, *vocab_base. */
    arb_status_t (*logits)(void *model, unsigned T, float *out, unsigned *vocab_rank, unsigned *vocab_base,
                           char *why, size_t why_len);
    /* Which path site s took at the last step (ARB_FUSION_PLUGIN/_COMPOSED; _AUTO: no instance). */
    arb_fusion_t (*site_path)(void *model, unsigned site);
    /* Streaming-read bandwidth, bytes/s (NULL: not measured on this backend). */
    arb_status_t (*read_bandwidth)(void *model, double *bytes_per_s, char *why, size_t why_len);
    /* One layer's MoE block vs a per-expert cuBLAS loop at T (NULL: not on this backend). On
     * success why may hold a note (e.g. over which layers it was timed), printed by the driver. */
    arb_status_t (*moe_bench)(void *model, unsigned T, double *ours_us, double *ours_bytes, double *cublas_us,
                              double *cublas_bytes, char *why, size_t why_len);
    /* The kernel profile of a step of T tokens at pos0 (NULL: not on this backend). graph 0:
     * an eager step with an event after every launch; 1: graph replay, each kind's time what
     * it adds to the replayed step; 2: graph replay of windows, each kind's segments of the
     * chain (they add up to about the step; refused with keep_sites); keep_sites: the call
     * sites run in every replay (a collective run) and are not measured in graph replay.
     * Every rank makes the same call. */
    arb_status_t (*kernel_times)(void *model, const uint32_t *tokens, unsigned T, unsigned pos0, int graph,
                                 int keep_sites, arb_kernel_times_t *out, char *why, size_t why_len);
    /* The EAGLE-3 draft's inputs (NULL: no draft head on this backend): the target's input
     * embeddings of tokens[0..T), bf16 [T x H]; the residual stream after the setup's
     * aux_layers at positions pos0 .. pos0 + T - 1 as the last steps left it, bf16
     * [T x naux x H]. */
    arb_status_t (*embed)(void *model, const uint32_t *tokens, unsigned T, uint16_t *out, char *why, size_t why_len);
    arb_status_t (*aux_hidden)(void *model, unsigned pos0, unsigned T, uint16_t *out, char *why, size_t why_len);
    /* The same on the device, for a draft head that runs there (NULL: host only): the kept
     * states [positions x naux x H], the embedding table [vocab x H] (bf16, device
     * addresses) and the stream the steps run on (finished when step returns). */
    arb_status_t (*device_inputs)(void *model, const void **aux, const void **embed, void **stream, char *why,
                                  size_t why_len);
    void (*destroy)(void *model);
} arb_backend_ops_t;

extern const arb_backend_ops_t arb_engine_backend_cpu;
/* The GPU backend, or NULL when this build has no GPU engine (no CUDA). */
const arb_backend_ops_t *arb_engine_backend_gpu(void);

#endif
