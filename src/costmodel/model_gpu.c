/* SPDX-License-Identifier: MIT */
/* GPU specs for the per-kernel compute scaling (model_gpu.h). */
#include "costmodel/model_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *gpu_apply(void *ctx, const char *key, const char *val, const char *src)
{
    arb_gpu_spec_t *g = ctx;
    if (!strcmp(key, "name") || !strcmp(key, "gpu")) {
        char *dst = key[0] == 'n' ? g->name : g->gpu;
        size_t len = key[0] == 'n' ? sizeof g->name : sizeof g->gpu;
        if (!*val || strlen(val) >= len)
            return "a non-empty string";
        snprintf(dst, len, "%s", val);
        return NULL;
    }
    static const char *const keys[] = {"mem_gbs", "sms", "clock_mhz", "launch_scale", "smem_per_sm_kb", "l2_mb",
                                       "pcie_gen", "pcie_width"};
    arb_quantity_t *slot[] = {&g->mem_gbs, &g->sms, &g->clock_mhz, &g->launch_scale, &g->smem_per_sm_kb, &g->l2_mb,
                              &g->pcie_gen, &g->pcie_width};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        if (strcmp(key, keys[k]))
            continue;
        int r = arb_q_parse(val, src, slot[k]);
        return r == -2 ? "a '# source' comment: every value keeps its source" : r ? "a number >= 0 [+-REL]" : NULL;
    }
    return "a known key (name, gpu, mem_gbs, sms, clock_mhz, launch_scale, smem_per_sm_kb, l2_mb, pcie_gen, pcie_width)";
}

arb_status_t arb_gpu_read_mem(const char *text, const char *name, arb_gpu_spec_t *g, char *err, size_t err_len)
{
    memset(g, 0, sizeof *g);
    snprintf(g->path, sizeof g->path, "%s", name);
    ARB_TRY(arb_spec_parse(text, name, gpu_apply, g, err, err_len));
    const char *need[] = {"mem_gbs", "sms", "clock_mhz", "launch_scale"};
    const arb_quantity_t *q[] = {&g->mem_gbs, &g->sms, &g->clock_mhz, &g->launch_scale};
    for (int k = 0; k < 4; k++)
        if (!q[k]->set || !(q[k]->v > 0))
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: no %s > 0 (a GPU spec needs mem_gbs, sms, clock_mhz, launch_scale)", name, need[k]);
    return ARB_OK;
}

static arb_status_t gpu_mem(const char *text, const char *name, void *out, char *err, size_t err_len)
{
    return arb_gpu_read_mem(text, name, out, err, err_len);
}

arb_status_t arb_gpu_read(const char *path, arb_gpu_spec_t *g, char *err, size_t err_len)
{
    return arb_spec_read(path, "a GPU spec file, e.g. model/gpus/*.spec", gpu_mem, g, err, err_len);
}

double arb_gpu_issue_ratio(const arb_gpu_spec_t *target, const arb_gpu_spec_t *ref, int corner)
{
    /* corner +1: the target slow, the reference fast (and the reverse for -1) */
    const double t = target->sms.v * arb_q_bw(&target->clock_mhz, corner);
    const double r = ref->sms.v * arb_q_bw(&ref->clock_mhz, -corner);
    return r / t;
}
