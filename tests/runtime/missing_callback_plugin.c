/* SPDX-License-Identifier: MIT */
/* Right ABI, but no allreduce callback: the loader must refuse it. */
#include "arbench/plugin.h"

static arb_status_t init(const arb_comm_info_t *i, const arb_host_ops_t *o, const char *p, void **s, char *w, size_t n)
{
    (void)i, (void)o, (void)p, (void)s, (void)w, (void)n;
    return ARB_OK;
}
static void fin(void *s) { (void)s; }

ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "missing-callback",
    .caps = ARB_CAP_HOST_MEMORY | ARB_CAP_BF16,
    .init = init,
    .finalize = fin,
};
