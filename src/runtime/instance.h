/* SPDX-License-Identifier: MIT */
/*
 * Plugin instances for any consumer (the sweep, the engine): open a plugin variant for
 * a use, allocate the buffers it needs, call all-reduce and the fused all-reduce +
 * residual + RMSNorm (composed from all-reduce and our kernel when the plugin has no
 * fused kernel or declines it), learn why a call declined, close.
 *
 * Every function marked "collective" must be called by every rank in the same order
 * with the same sizes (the plugin may use collective host operations inside), and
 * returns the same status on every rank: the maximum over ranks (severity order of
 * arb_status_t, include/arbench/plugin.h), with the first failing rank's reason.
 * Calls (allreduce, allreduce_rmsnorm) are not collective on the host: they enqueue on
 * the caller's stream, return this rank's status and reason, and may be captured into a
 * CUDA graph when the instance was opened for ARB_MODE_GRAPH.
 */
#ifndef ARB_INSTANCE_H
#define ARB_INSTANCE_H

#include <stddef.h>
#include <stdint.h>

#include "arbench/plugin.h"
#include "runtime/hostops.h"
#include "runtime/loader.h"
#include "base/vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the consumer will do with the instance; capability gating happens against it. */
typedef struct arb_use {
    arb_op_t op;         /* ARB_OP_ALLREDUCE, or ARB_OP_ALLREDUCE_RMSNORM (fused or composed) */
    arb_dtype_t dtype;   /* of allreduce calls (the fused op is always bf16) */
    arb_mode_t mode;     /* ARB_MODE_EAGER, or GRAPH/CONTEXT: calls will be captured in CUDA graphs */
    size_t max_bytes;    /* largest allreduce payload per rank, bytes */
    unsigned max_tokens; /* largest fused call, rows; 0 when op is ALLREDUCE */
    unsigned hidden;     /* row length of fused calls, elements */
    int cuda_device;     /* the current device, -1 for host-only consumers */
} arb_use_t;

/* Which path allreduce_rmsnorm takes. */
typedef enum arb_fusion {
    ARB_FUSION_AUTO = 0,     /* the plugin's fused kernel when it has one and accepts the call, else composed */
    ARB_FUSION_PLUGIN = 1,   /* the plugin's fused kernel only (ARB_DECLINE when it has none) */
    ARB_FUSION_COMPOSED = 2, /* allreduce into the instance's scratch, then our residual + RMSNorm kernel */
} arb_fusion_t;

typedef struct arb_inst arb_inst_t;

/* Collective. Gates the plugin's capabilities against `use` (dtype, memory kind, graph
 * safety, single node; peer access is the plugin's init's to check), calls init with `params`, agrees on the outcome across
 * ranks, and for the fused op allocates the composed path's scratch. ARB_DECLINE
 * (with the reason) when the plugin cannot serve this use here; *out is NULL unless
 * ARB_OK. `lp` must outlive the instance. */
arb_status_t arb_inst_open(arb_mpi_t *m, const arb_loaded_plugin_t *lp, const char *params, const arb_use_t *use,
                           arb_inst_t **out, char *why, size_t why_len);

const arb_plugin_t *arb_inst_plugin(const arb_inst_t *in);
/* The resolved parameters (the plugin's describe, else the params string). */
const char *arb_inst_describe(const arb_inst_t *in);
/* The plugin's capability bits (enum arb_cap). */
uint32_t arb_inst_caps(const arb_inst_t *in);
/* What init was given (ranks, device, largest sizes). */
const arb_comm_info_t *arb_inst_info(const arb_inst_t *in);
/* The same gating as open, for calls in another `mode` by the path `fusion`: ARB_OK, or
 * ARB_DECLINE with the reason (e.g. a graph mode for a plugin that is not graph safe,
 * ARB_FUSION_PLUGIN for one without a fused kernel). Not collective; the same on every
 * rank. A consumer that runs several modes opens for the first and gates the others. */
arb_status_t arb_inst_gate(const arb_inst_t *in, arb_mode_t mode, arb_fusion_t fusion, char *why, size_t why_len);
/* 1 when the plugin has its own fused allreduce_rmsnorm. */
int arb_inst_has_fused(const arb_inst_t *in);

/* Collective. One allocation policy for buffers that are passed to the plugin: the
 * plugin's mem_alloc when it has one (required with ARB_CAP_NEEDS_ALLOC), otherwise
 * cudaMalloc (device-memory plugins) or 256-byte aligned malloc (host-memory plugins);
 * zero-filled. For the fused op the composed path's scratch grows to the largest
 * buffer allocated, so that x at offset o of its buffer sums into offset o of the
 * scratch: allocate buffers before capturing graphs that use them. */
arb_status_t arb_inst_alloc(arb_inst_t *in, size_t bytes, void **ptr, char *why, size_t why_len);
/* Collective; frees what arb_inst_alloc returned. */
void arb_inst_free(arb_inst_t *in, void *ptr);

/* recv = sum over ranks of send (count elements of dtype), enqueued on stream. */
arb_status_t arb_inst_allreduce(arb_inst_t *in, const void *send, void *recv, size_t count, arb_dtype_t dtype,
                                void *stream, char *why, size_t why_len);

/* The fused op of the ABI (arb_rmsnorm_args_t) by the path `fusion` selects; *used (may
 * be NULL) says which path ran: ARB_FUSION_PLUGIN or ARB_FUSION_COMPOSED. args->x must
 * lie in a buffer from arb_inst_alloc when the plugin needs its own memory. */
arb_status_t arb_inst_allreduce_rmsnorm(arb_inst_t *in, const arb_rmsnorm_args_t *args, arb_fusion_t fusion,
                                        void *stream, arb_fusion_t *used, char *why, size_t why_len);

/* After the caller synchronized the stream: device-side failures since the last query
 * (a spin that timed out), cleared. ARB_OK when the plugin reports none. */
arb_status_t arb_inst_query_error(arb_inst_t *in, char *why, size_t why_len);

/* Collective. Frees the scratch and every buffer still allocated, then finalizes. */
void arb_inst_close(arb_inst_t *in);

#ifdef __cplusplus
}
#endif

#endif
