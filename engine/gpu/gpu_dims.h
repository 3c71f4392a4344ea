/* SPDX-License-Identifier: MIT */
/*
 * The GPU model's dimensions from the engine's parsed config (engine/model/config.h, after
 * overrides) and RoPE tables (engine/model/rope.h): the one place where arb_gpu_dims_t is filled.
 */
#ifndef ARB_ENGINE_GPU_DIMS_H
#define ARB_ENGINE_GPU_DIMS_H

#include "model/config.h"
#include "gpu/gpu_model.h"
#include "model/rope.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dims of shard `shard` of tp_shape for cfg; rope must outlive dims (dims->inv_freq points
 * into it). ARB_ERR_INVALID naming the field for a model the GPU kernels cannot run
 * (scoring_func other than sigmoid, norm_topk_prob off). */
arb_status_t arb_gpu_dims_from_config(const arb_model_config_t *cfg, const arb_rope_t *rope, unsigned tp_shape,
                                      unsigned shard, arb_gpu_dims_t *dims, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
