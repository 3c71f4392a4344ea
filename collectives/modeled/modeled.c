/* SPDX-License-Identifier: MIT */
/*
 * arb-modeled.so: replays another machine's all-reduce latencies. Per call it looks the
 * latency up in a table (results or profile CSV: measured elsewhere, or predicted by
 * `arbench model predict`) and holds the stream that long with one 1-thread spin kernel.
 * REFERENCE: it moves no data and its results are not checked. README.md in this folder.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "arbench/plugin.h"
#include "arbench/status.h"
#include "modeled_spin.h"
#include "modeled_table.h"

typedef struct modeled_state {
    modeled_table_t table;
    modeled_timer_t timer;
    char describe[1024];
} modeled_state_t;

static arb_status_t modeled_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *params,
                                 void **state, char *why, size_t why_len)
{
    (void)ops;
    modeled_select_t sel;
    ARB_TRY(modeled_parse_params(params, &sel, why, why_len));
    modeled_state_t *s = calloc(1, sizeof *s);
    if (!s)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "modeled: out of host memory");
    arb_status_t st = modeled_table_load(&sel, info->nranks, &s->table, why, why_len);
    if (st != ARB_OK) {
        free(s);
        return st;
    }
    int err = modeled_timer_probe(&s->timer);
    if (err) {
        ARB_WHY(why, why_len, "modeled: timer probe kernel (%%globaltimer must advance): %s", modeled_error_string(err));
        modeled_table_free(&s->table);
        free(s);
        return ARB_ERR_SYSTEM;
    }
    snprintf(s->describe, sizeof s->describe, "%s,timer=%s,globaltimer_ns=%.0f", params,
             s->timer.use_clock ? "clock64" : "globaltimer", s->timer.resolution_ns);
    *state = s;
    return ARB_OK;
}

static arb_status_t modeled_allreduce(void *state, const void *send, void *recv, size_t count, arb_dtype_t dtype,
                                      void *stream, char *why, size_t why_len)
{
    (void)send, (void)recv;
    modeled_state_t *s = state;
    double bytes = (double)count * (dtype == ARB_DTYPE_FP32 ? 4.0 : 2.0), us;
    ARB_TRY(modeled_table_lookup(&s->table, bytes, &us, why, why_len));
    int err = modeled_spin_launch((unsigned long long)llround(us * 1e3), &s->timer, stream);
    if (err) {
        ARB_WHY(why, why_len, "modeled: spin kernel launch: %s", modeled_error_string(err));
        return ARB_ERR_SYSTEM;
    }
    return ARB_OK;
}

static const char *modeled_describe(void *state)
{
    return ((modeled_state_t *)state)->describe;
}

static void modeled_finalize(void *state)
{
    modeled_state_t *s = state;
    modeled_table_free(&s->table);
    free(s);
}

ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "modeled",
    .description = "replays a latency table (another machine's or predicted): one spin kernel per call, no data moved",
    .caps = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_BF16 | ARB_CAP_FP32 | ARB_CAP_REFERENCE,
    .variants = NULL,
    .init = modeled_init,
    .allreduce = modeled_allreduce,
    .describe = modeled_describe,
    .finalize = modeled_finalize,
};
