/* SPDX-License-Identifier: MIT */
/*
 * The engine's call sites and the instances that serve them: each site (or group of
 * sites of one shape) is added with its choice (site_choice.h); opening then opens each
 * distinct (impl, params, mode) once, for the union of its sites' uses (the largest
 * payload, the fused op if any site is fused), so one run can hold lsa for 3-token
 * sites and NCCL for 64-token ones at the same time. A choice whose open declines here
 * (lsa without P2P, say) falls back to the fallback implementation's own choice (NCCL on
 * the GPU engine, mpi-host on the CPU reference) for its sites, with a note.
 *
 * Opening goes through an arb_inst_backend_t: site_registry_inst.c binds it to
 * src/runtime/instance.h (arb_inst_open/close); tests bind it to a recorder. Collective
 * where the backend is: every rank adds the same sites in the same order.
 */
#ifndef ARB_ENGINE_SITE_REGISTRY_H
#define ARB_ENGINE_SITE_REGISTRY_H

#include <stdio.h>

#include "sites/site_choice.h"

#define ARB_REG_MAX_SITES 64
#define ARB_REG_MAX_INSTS 16

typedef struct arb_inst_backend {
    /* Collective: open `impl` with `params` for `use`; ARB_DECLINE when it cannot serve it here. */
    arb_status_t (*open)(void *ctx, const char *impl, const char *params, const arb_use_t *use, arb_inst_t **out,
                         char *why, size_t why_len);
    int (*has_fused)(void *ctx, const arb_inst_t *in); /* the plugin has its own fused kernel */
    void (*close)(void *ctx, arb_inst_t *in);
    void *ctx;
} arb_inst_backend_t;

typedef struct arb_reg_site {
    arb_site_t site;     /* strings copied into name/fabric below */
    char name[64], fabric[64];
    arb_choice_t choice; /* after open: what actually serves the site */
    size_t inst;         /* index into insts, valid after open */
} arb_reg_site_t;

typedef struct arb_reg_inst {
    char impl[64], params[256];
    arb_mode_t mode;
    arb_use_t use;
    arb_inst_t *inst;
    int from_profile; /* the choice came from a profile (not the command line) */
} arb_reg_inst_t;

typedef struct arb_site_registry {
    arb_reg_site_t sites[ARB_REG_MAX_SITES];
    size_t nsites;
    arb_reg_inst_t insts[ARB_REG_MAX_INSTS];
    size_t ninsts;
    arb_inst_backend_t backend;
    char fallback[64]; /* the implementation sites fall back to, opened with no params */
    int opened;
} arb_site_registry_t;

/* `fallback`: NULL for ARB_SITE_FALLBACK (nccl). */
void arb_site_registry_init(arb_site_registry_t *r, const char *fallback);
/* Adds a site with its choice; *slot is its handle. ARB_ERR_INVALID when full or after open. */
arb_status_t arb_site_registry_add(arb_site_registry_t *r, const arb_site_t *site, const arb_choice_t *choice,
                                   size_t *slot, char *why, size_t why_len);
/* Collective. Opens every distinct (impl, params, mode), the fallback last. Sites whose
 * choice declines move to the fallback (its own choice) and their note says why; a
 * fused choice whose plugin has no fused kernel runs composed. A profile's params that
 * the plugin refuses (ARB_ERR_INVALID: a describe string its init does not take) fall
 * back the same way, with the reason; params given on the command line are an error.
 * ARB_DECLINE or an error otherwise only when the fallback itself cannot open (what is
 * open stays open: call close). */
arb_status_t arb_site_registry_open(arb_site_registry_t *r, const arb_inst_backend_t *b, int cuda_device,
                                    char *why, size_t why_len);
/* The instance and fusion path of a slot (after open). */
arb_inst_t *arb_site_registry_instance(const arb_site_registry_t *r, size_t slot, arb_fusion_t *fusion);
const arb_choice_t *arb_site_registry_choice(const arb_site_registry_t *r, size_t slot);

/* After open, for a choice given on the command line (--baseline): ARB_OK when the site
 * at slot runs `impl`, else ARB_ERR_INVALID naming `what` and why it would have run on
 * the fallback instead (no silent stand-in). */
arb_status_t arb_site_registry_require(const arb_site_registry_t *r, size_t slot, const char *what, const char *impl,
                                       char *why, size_t why_len);

/* After open, for choices from a profile: a short note ("fallback mpi-host at site
 * verify: no entry ...") when the site at slot runs on the fallback, else "". For every
 * row's note. */
void arb_site_registry_fallback_note(const arb_site_registry_t *r, size_t slot, char *buf, size_t len);
/* One line per site: name, bytes, what serves it, the note. */
void arb_site_registry_print(const arb_site_registry_t *r, FILE *f);
/* Collective. Closes every open instance. */
void arb_site_registry_close(arb_site_registry_t *r);

#endif
