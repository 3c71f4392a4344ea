/* SPDX-License-Identifier: MIT */
/* The cost equations per implementation family (model_cost.c, docs/model.md "Equations"):
 * families, NCCL's constants, the fitted constants they take, data phases over the fabric. */
#ifndef ARB_MODEL_COST_H
#define ARB_MODEL_COST_H

#include <stddef.h>

#include "costmodel/model_fabric.h"

typedef enum arb_family {
    ARB_FAM_NONE = 0,   /* not modeled (nccl-symm, unknown plugins) */
    ARB_FAM_LAUNCH,     /* noop: the launch floor */
    ARB_FAM_FLAG,       /* ping: one cross-GPU flag latency, no payload */
    ARB_FAM_FLAGFREE,   /* one-shot, LL lines carry their epoch: writes 2(n-1)S */
    ARB_FAM_PUSH,       /* one-shot push: writes (n-1)S, barrier */
    ARB_FAM_PULL,       /* one-shot pull: barrier, reads (n-1)S */
    ARB_FAM_TWOSHOT,    /* reduce-scatter + all-gather: reads and writes (n-1)S/n each */
    ARB_FAM_HOSTSTAGED, /* writes S to host, one host flag, reads (n-1)S from host */
    ARB_FAM_NCCL,       /* NCCL Ring/Tree x LL/LL128/Simple (algo, proto below) */
    ARB_FAM_NCCL_AUTO,  /* NCCL's own choice */
} arb_family_t;

typedef enum arb_nccl_algo { ARB_NCCL_TREE = 0, ARB_NCCL_RING = 1 } arb_nccl_algo_t;
typedef enum arb_nccl_proto { ARB_NCCL_LL = 0, ARB_NCCL_LL128 = 1, ARB_NCCL_SIMPLE = 2 } arb_nccl_proto_t;

/* NCCL 2.28.3 src/graph/tuning.cc constants (ncclTunerConstantsDefaults), [algo][proto]. */
extern const double arb_nccl_base_lat_us[2][3];
extern const double arb_nccl_hw_lat_nvlink_us[2][3];
extern const double arb_nccl_hw_lat_pci_us[2][3];

typedef struct arb_variant_key {
    arb_family_t family;
    arb_nccl_algo_t algo;
    arb_nccl_proto_t proto;
} arb_variant_key_t;

/* Family of a results row from its impl and params ("variant=oneshot-push,...",
 * "algo=Ring,proto=LL,..."). ARB_FAM_NONE for what the model does not cover. */
arb_variant_key_t arb_model_family(const char *impl, const char *params);
const char *arb_family_name(arb_family_t f);

/* Structural counts of a family, the same on every fabric (docs/model.md, table 1). */
typedef struct arb_family_shape {
    int flag_latencies; /* one-way flag latencies on the critical path */
    int read_rtts;      /* read round trips on the critical path */
} arb_family_shape_t;
arb_family_shape_t arb_family_shape(arb_family_t f);

/* Message bytes one GPU issues per call at n ranks (what the kernel's issue rate limits). */
double arb_family_issue_bytes(arb_family_t f, double bytes, int n);

/* ---- fitted constants (model_fit.c fits them, model_io.c reads and writes them) ---- */

typedef enum arb_transport {
    ARB_TRANSPORT_P2P = 0, /* GPU to GPU (NVLink or PCIe P2P) */
    ARB_TRANSPORT_SHM,     /* NCCL with P2P disabled: through host shared memory */
} arb_transport_t;

/* Fitted constants of one variant in one mode. */
typedef struct arb_fit_entry {
    char impl[32], params[256], mode[16];
    arb_variant_key_t key;
    arb_transport_t transport;
    double offset_us; /* O: the fixed part beyond launch, flags and hops (us) */
    double hop_us;    /* NCCL SHM rows: one SHM hop's latency (us); 0 otherwise */
    double bw_gbs;    /* issue rate (custom kernels) or bus bandwidth (NCCL), GB/s */
    double rel_err;   /* largest relative residual of the fit over its points */
    int points;
    char sources[256];
} arb_fit_entry_t;

typedef struct arb_fit {
    char fabric_file[256]; /* the spec of the machine the runs were measured on */
    int ranks;             /* ranks of the fitted runs */
    double launch_us[3];   /* noop per mode (eager, graph, context); NAN when not measured */
    double flag_us[3];     /* ping - noop per mode */
    size_t n;
    arb_fit_entry_t *e;
} arb_fit_t;

/* Mode name -> index 0..2 (eager, graph, context), -1 for anything else. */
int arb_model_mode_index(const char *mode);
extern const char *const arb_model_modes[3];

/* ---- prediction ---- */

typedef struct arb_prediction {
    double us, lo_us, hi_us; /* point estimate and band */
    const char *why_not;     /* non-NULL: this variant cannot run on the fabric (a reason) */
    char detail[160];        /* the terms, for check/debug output */
} arb_prediction_t;

/* Predicts one call of `e` at `bytes` per rank on n ranks (GPUs 0..n-1 of fab), using
 * the fit's launch/flag constants measured on `fit_fab`. NCCL SHM hop costs come from
 * the fit's SHM entry of the same variant and mode (shm may be NULL: then SHM hops are
 * not predictable and why_not says so). */
void arb_model_predict_one(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const arb_fit_entry_t *e,
                           const arb_fit_entry_t *shm, const arb_fabric_t *fab, int n, double bytes,
                           arb_prediction_t *out);

/* The time of one data phase: flows issued by every GPU at `issue_gbs` at most, over the
 * fabric's resources (links, switch uplinks, inter-socket link, host memory), each shared
 * by the flows that cross it. kind 'w' or 'r'. Exposed for the tests. */
typedef struct arb_flow {
    int src, dst; /* GPU indices; -1 = host memory */
    int issuer;   /* the GPU whose kernel issues it */
    char kind;    /* 'w' posted write, 'r' read */
    double bytes;
} arb_flow_t;
/* corner: 0 nominal, -1 every spec constant at its fast end, +1 at its slow end. */
/* Each flow's issuer sends at min(issue_gbs, path rate x path_eff). */
double arb_model_phase_us(const arb_fabric_t *fab, const arb_flow_t *flows, size_t nflows, double issue_gbs,
                          double path_eff, int corner);

#endif
