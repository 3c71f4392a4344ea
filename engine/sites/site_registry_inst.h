/* SPDX-License-Identifier: MIT */
/* Binds the site registry to src/runtime/instance.h: arb_reg_plugins_init fills a backend whose
 * open loads each plugin once by name (agreed across ranks) and calls arb_inst_open. */
#ifndef ARB_ENGINE_SITE_REGISTRY_INST_H
#define ARB_ENGINE_SITE_REGISTRY_INST_H

#include "runtime/hostops.h"
#include "runtime/loader.h"
#include "sites/site_registry.h"

typedef struct arb_reg_plugins {
    arb_mpi_t *mpi;
    arb_loaded_plugin_t lp[ARB_REG_MAX_INSTS];
    char names[ARB_REG_MAX_INSTS][64];
    size_t n;
} arb_reg_plugins_t;

/* `pl` must outlive the registry's instances (their plugins stay loaded). */
void arb_reg_plugins_init(arb_reg_plugins_t *pl, arb_mpi_t *m, arb_inst_backend_t *b);
/* After arb_site_registry_close. */
void arb_reg_plugins_unload(arb_reg_plugins_t *pl);

#endif
