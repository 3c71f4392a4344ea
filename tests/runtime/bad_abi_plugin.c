/* SPDX-License-Identifier: MIT */
/* A module built for a future ABI: the loader must refuse it. */
#include "arbench/plugin.h"

static arb_status_t init(const arb_comm_info_t *i, const arb_host_ops_t *o, const char *p, void **s, char *w, size_t n)
{
    (void)i, (void)o, (void)p, (void)s, (void)w, (void)n;
    return ARB_OK;
}
static arb_status_t ar(void *s, const void *a, void *b, size_t c, arb_dtype_t d, void *st, char *w, size_t n)
{
    (void)s, (void)a, (void)b, (void)c, (void)d, (void)st, (void)w, (void)n;
    return ARB_OK;
}
static void fin(void *s) { (void)s; }

ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION + 98,
    .name = "bad-abi",
    .caps = ARB_CAP_HOST_MEMORY | ARB_CAP_BF16,
    .init = init,
    .allreduce = ar,
    .finalize = fin,
};
