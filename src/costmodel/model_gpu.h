/* SPDX-License-Identifier: MIT */
/*
 * A GPU's facts for the compute part of `arbench model e2e --kernels` (model/gpus/NAME.spec,
 * docs/model.md "Compute on the target by kernel"): the spec format of the fabric specs
 * (`key = value [+-REL] # source`, every value with its source), keys:
 *   name, gpu        the spec's name and the GPU it describes
 *   mem_gbs          memory bandwidth, spec peak (GB/s)
 *   sms, clock_mhz   SM count and the clock the SMs run at (the band: the clock's range)
 *   launch_scale     the target's launch/latency cost relative to the fit GPU's (1 +-band)
 *   smem_per_sm_kb, l2_mb, pcie_gen, pcie_width   recorded for the docs, not used by the equations
 */
#ifndef ARB_MODEL_GPU_H
#define ARB_MODEL_GPU_H

#include <stddef.h>

#include "arbench/status.h"
#include "costmodel/model_fabric.h"

typedef struct arb_gpu_spec {
    char name[64], gpu[96], path[256];
    arb_quantity_t mem_gbs, sms, clock_mhz, launch_scale, smem_per_sm_kb, l2_mb, pcie_gen, pcie_width;
} arb_gpu_spec_t;

/* Reads a GPU spec; refuses an unknown key, a value without its source and a spec lacking
 * mem_gbs, sms, clock_mhz or launch_scale, naming the file, line and key. */
arb_status_t arb_gpu_read(const char *path, arb_gpu_spec_t *g, char *err, size_t err_len);
arb_status_t arb_gpu_read_mem(const char *text, const char *name, arb_gpu_spec_t *g, char *err, size_t err_len);

/* The target's instruction rate relative to the reference GPU's, sms x clock, at the clock's
 * slow (corner +1), nominal (0) and fast (-1) end of both: ref / target time ratio. */
double arb_gpu_issue_ratio(const arb_gpu_spec_t *target, const arb_gpu_spec_t *ref, int corner);

#endif
