/* SPDX-License-Identifier: MIT */
/* The registry's backend on src/runtime/instance.h: plugins loaded once by name, instances opened
 * collectively. Needs src/runtime/instance.c (the instance API) in libarbench. */
#include "sites/site_registry_inst.h"

#include <string.h>

#include "arbench/status.h"
#include "runtime/hostops.h"

static arb_status_t inst_open(void *ctx, const char *impl, const char *params, const arb_use_t *use, arb_inst_t **out,
                              char *why, size_t why_len)
{
    arb_reg_plugins_t *pl = ctx;
    size_t i = 0;
    while (i < pl->n && strcmp(pl->names[i], impl) != 0)
        i++;
    /* A load that fails on one rank must fail on all, or the others would wait in
     * arb_inst_open's collective agreement. */
    int failed = 0;
    char err[2048] = "";
    if (i == pl->n) {
        if (pl->n == ARB_REG_MAX_INSTS)
            failed = 1, snprintf(err, sizeof err, "more than %d plugins", ARB_REG_MAX_INSTS);
        else if (arb_plugin_load(impl, &pl->lp[i], err, sizeof err) != 0)
            failed = 1;
        else
            snprintf(pl->names[pl->n++], sizeof pl->names[0], "%s", impl);
    }
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", err); /* in: this rank's reason; out: the first failing rank's */
    if (arb_agree_failure(pl->mpi, failed, msg, sizeof msg) >= 0) /* stays loaded where it did load */
        ARB_RAISE(ARB_DECLINE, why, why_len, "plugin %s not loadable: %s", impl, msg);
    return arb_inst_open(pl->mpi, &pl->lp[i], params, use, out, why, why_len);
}

static int inst_has_fused(void *ctx, const arb_inst_t *in)
{
    (void)ctx;
    return arb_inst_has_fused(in);
}

static void inst_close(void *ctx, arb_inst_t *in)
{
    (void)ctx;
    arb_inst_close(in);
}

void arb_reg_plugins_init(arb_reg_plugins_t *pl, arb_mpi_t *m, arb_inst_backend_t *b)
{
    memset(pl, 0, sizeof *pl);
    pl->mpi = m;
    *b = (arb_inst_backend_t){.open = inst_open, .has_fused = inst_has_fused, .close = inst_close, .ctx = pl};
}

void arb_reg_plugins_unload(arb_reg_plugins_t *pl)
{
    for (size_t i = 0; i < pl->n; i++)
        arb_plugin_unload(&pl->lp[i]);
    pl->n = 0;
}
