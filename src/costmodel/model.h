/* SPDX-License-Identifier: MIT */
/*
 * The PCIe cost model: a fabric description of a machine (model_fabric.c), the cost
 * equations per implementation family (model_cost.c), the constants fitted on measured
 * runs (model_fit.c) and the files that carry them (model_io.c). docs/model.md states
 * every equation and every constant with its source.
 *
 * Units: bytes per rank, microseconds, GB/s = 1e9 B/s (so bytes / (1e3 x GB/s) = us).
 */
#ifndef ARB_MODEL_H
#define ARB_MODEL_H

#include <stddef.h>
#include <stdio.h>

#include "arbench/status.h"

#define ARB_MODEL_MAX_GPUS 64
#define ARB_MODEL_SOURCE_LEN 200

/* ---------------------------------------------------------------- fabric ---------- */

/* How two endpoints connect, fastest first. */
typedef enum arb_path {
    ARB_PATH_NVLINK = 0, /* NVLink between every pair (the machine the constants are fitted on) */
    ARB_PATH_SWITCH,     /* both GPUs below one PCIe switch (nvidia-smi PIX/PXB) */
    ARB_PATH_HOSTBRIDGE, /* through the root complex of one socket (PHB/NODE) */
    ARB_PATH_XSOCKET,    /* across the inter-socket link (SYS) */
    ARB_PATH_HOST,       /* GPU to pinned host memory and back (host-staged, NCCL SHM) */
    ARB_PATH_COUNT
} arb_path_t;

const char *arb_path_name(arb_path_t p); /* "nvlink", "switch", "hostbridge", "xsocket", "host" */

/* A constant with its uncertainty and where it comes from. */
typedef struct arb_quantity {
    double v;    /* value (unit in the field's name) */
    double band; /* relative half-width of its uncertainty: 0.2 = +-20% */
    char source[ARB_MODEL_SOURCE_LEN];
    int set;
} arb_quantity_t;

typedef struct arb_path_props {
    arb_quantity_t write_gbs; /* posted writes one GPU issues over this path, aggregate, each direction */
    arb_quantity_t read_gbs;  /* non-posted reads one GPU issues over this path, aggregate */
    arb_quantity_t lat_us;    /* one-way latency of a small posted write (flag) */
    arb_quantity_t rtt_us;    /* round trip of a small read */
} arb_path_props_t;

typedef struct arb_fabric {
    char name[64];        /* the spec's name */
    char label[32];       /* fabric label written into results (docs/topology.md) */
    char gpu[96], sm[16]; /* target GPU name and compute capability, for the rows */
    char path_file[256];  /* where it was read from */
    int ngpus, sockets, switches_per_socket, gpus_per_switch; /* gpus_per_switch 0: no switches */
    int nvlink;           /* every pair joined by NVLink */
    int link_gen, link_width;
    arb_quantity_t link_gbs;    /* each GPU's PCIe link, each direction (NCCL: width x speed / 80) */
    arb_quantity_t uplink_gbs;  /* a switch's uplink to its root port, each direction */
    arb_quantity_t xsocket_gbs; /* GPU traffic over the inter-socket link, each direction */
    arb_quantity_t host_gbs;    /* host memory bandwidth that PCIe traffic can use, both directions together */
    arb_quantity_t gpu_band;    /* relative band on constants fitted on another GPU model */
    arb_path_props_t path[ARB_PATH_COUNT];
    arb_path_t cuda_p2p_max;    /* CUDA peer access works up to this path class */
    arb_path_t nccl_p2p_max;    /* NCCL uses P2P up to this class, SHM beyond (2.28 default: switch) */
    int from_xml;         /* the placement came from an hwloc XML (arb_fabric_apply_xml) */
    int switch_of[ARB_MODEL_MAX_GPUS]; /* -1: attached to a root port directly */
    int socket_of[ARB_MODEL_MAX_GPUS];
} arb_fabric_t;

/* Reads a spec file (docs/model.md: `key = value [+-REL] [# source]` lines). Every
 * constant the model needs must be given with a source comment. Returns ARB_OK, or
 * ARB_ERR_INVALID with a message naming the file, line and the accepted form. */
arb_status_t arb_fabric_read(const char *path, arb_fabric_t *f, char *err, size_t err_len);
arb_status_t arb_fabric_read_mem(const char *text, const char *name, arb_fabric_t *f, char *err, size_t err_len);
/* The GPU placement (switch_of, socket_of) from the counts; called by the readers. */
arb_status_t arb_fabric_layout(arb_fabric_t *f, char *err, size_t err_len);
/* Replaces the placement (GPUs, switches, sockets, NVLink) with that of an hwloc XML
 * (`arbench topo --export-xml`): GPUs below one PCIe switch (PIX/PXB) share a switch,
 * packages are sockets. The constants stay the spec's; fails when the XML's layout
 * needs a path class or uplink the spec does not describe (model_fabric_xml.c). */
arb_status_t arb_fabric_apply_xml(arb_fabric_t *f, const char *xml_path, char *err, size_t err_len);
/* Every path class the GPUs use (and host) is described; uplink/xsocket where needed. */
arb_status_t arb_fabric_check_paths(const arb_fabric_t *f, char *err, size_t err_len);
/* Path class between GPUs a != b; ARB_PATH_HOST for a GPU and host memory (b < 0). */
arb_path_t arb_fabric_path(const arb_fabric_t *f, int a, int b);
/* Worst (slowest) GPU-GPU path class among GPUs 0..n-1. */
arb_path_t arb_fabric_worst_path(const arb_fabric_t *f, int n);

/* ------------------------------------------------------------ families ---------- */

typedef enum arb_family {
    ARB_FAM_NONE = 0,  /* not modeled (nccl-symm, unknown plugins) */
    ARB_FAM_LAUNCH,    /* noop: the launch floor */
    ARB_FAM_FLAG,      /* ping: one cross-GPU flag latency, no payload */
    ARB_FAM_FLAGFREE,  /* one-shot, LL lines carry their epoch: writes 2(n-1)S */
    ARB_FAM_PUSH,      /* one-shot push: writes (n-1)S, barrier */
    ARB_FAM_PULL,      /* one-shot pull: barrier, reads (n-1)S */
    ARB_FAM_TWOSHOT,   /* reduce-scatter + all-gather: reads and writes (n-1)S/n each */
    ARB_FAM_HOSTSTAGED,/* writes S to host, one host flag, reads (n-1)S from host */
    ARB_FAM_NCCL,      /* NCCL Ring/Tree x LL/LL128/Simple (algo, proto below) */
    ARB_FAM_NCCL_AUTO, /* NCCL's own choice */
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

/* ------------------------------------------------------------- constants ---------- */

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
    char fabric_file[256];  /* the spec of the machine the runs were measured on */
    int ranks;              /* ranks of the fitted runs */
    double launch_us[3];    /* noop per mode (eager, graph, context); NAN when not measured */
    double flag_us[3];      /* ping - noop per mode */
    size_t n;
    arb_fit_entry_t *e;
} arb_fit_t;

/* Mode name -> index 0..2 (eager, graph, context), -1 for anything else. */
int arb_model_mode_index(const char *mode);
extern const char *const arb_model_modes[3];

/* -------------------------------------------------------------- measured ---------- */

typedef struct arb_obs {
    char impl[32], params[256], mode[16], op[24], source[256];
    arb_variant_key_t key;
    arb_transport_t transport;
    int ranks;
    double bytes, median_us;
} arb_obs_t;

typedef struct arb_obs_set {
    size_t n, cap;
    arb_obs_t *o;
    char fabric[32]; /* the runs' fabric label (all files must agree) */
} arb_obs_set_t;

/* Appends the measured rows of a results file: check=pass rows and the reference floors
 * (noop, ping: check=skip with statistics). Transport from env (NCCL_P2P_DISABLE=1: SHM).
 * Rows of op other than allreduce, dtype other than bf16 and unmodeled families are
 * left out. */
arb_status_t arb_obs_load(arb_obs_set_t *s, const char *path, char *err, size_t err_len);
void arb_obs_free(arb_obs_set_t *s);
/* params without the items that do not change the algorithm (nccl=, timeout_ms=,
 * row_blocks=auto), for grouping rows of several runs. */
void arb_model_params_key(const char *params, char *out, size_t len);

/* ------------------------------------------------------------------- fit ---------- */

/* Fits launch and flag latencies and every variant's constants on fab (the machine the
 * observations come from). Only sizes in [min_bytes, max_bytes] are used. Returns 0,
 * or -1 with err (no noop/ping rows, fewer than 2 sizes for a variant, ...). */
arb_status_t arb_model_fit(const arb_obs_set_t *obs, const arb_fabric_t *fab, double min_bytes, double max_bytes,
                  arb_fit_t *fit, char *err, size_t err_len);
void arb_fit_free(arb_fit_t *fit);
/* The entry for (impl, params key, mode, transport), or NULL. */
const arb_fit_entry_t *arb_fit_find(const arb_fit_t *fit, const char *impl, const char *params_key,
                                    const char *mode, arb_transport_t transport);

arb_status_t arb_fit_write(const arb_fit_t *fit, const char *path, char *err, size_t err_len);
arb_status_t arb_fit_read(const char *path, arb_fit_t *fit, char *err, size_t err_len);

/* ------------------------------------------------------------------- cost ---------- */

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
    int src, dst;   /* GPU indices; -1 = host memory */
    int issuer;     /* the GPU whose kernel issues it */
    char kind;      /* 'w' posted write, 'r' read */
    double bytes;
} arb_flow_t;
/* corner: 0 nominal, -1 every spec constant at its fast end, +1 at its slow end. */
/* Each flow's issuer sends at min(issue_gbs, path rate x path_eff). */
double arb_model_phase_us(const arb_fabric_t *fab, const arb_flow_t *flows, size_t nflows, double issue_gbs,
                          double path_eff, int corner);

/* A latency-like constant at a band corner (v x (1 + corner x band)) and a
 * bandwidth-like one (v x (1 - corner x band), never below 5% of v). */
double arb_q_lat(const arb_quantity_t *q, int corner);
double arb_q_bw(const arb_quantity_t *q, int corner);

/* --------------------------------------------------------- predict, check ---------- */

/* Writes a results-schema CSV (docs/results.md; source=model, band_lo_us/band_hi_us, check=model)
 * of every fitted variant, every mode and size, plus NCCL's modeled choice, on GPUs
 * 0..n-1 of fab. A variant that cannot run there is a check=skip row saying why. */
arb_status_t arb_model_write_predictions(const arb_fit_t *fit, const char *fit_path, const arb_fabric_t *fit_fab,
                                const arb_fabric_t *fab, int n, const size_t *sizes, size_t nsizes,
                                const char *out_path, const char *argv, size_t *nrows, char *err, size_t err_len);

/* Prints, per size, the fastest predicted variant and NCCL's modeled choice in `mode`. */
void arb_model_print_summary(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const arb_fabric_t *fab, int n,
                             const size_t *sizes, size_t nsizes, const char *mode, FILE *out);

/* Predicts every measured point in [min_bytes, max_bytes] on the fit fabric and prints
 * the error per point (print_points) and per group. *failing_groups: the gated groups
 * (NCCL, one-shots, hoststaged) whose largest |error| exceeds tol. ARB_ERR_INVALID when
 * no point matches a fitted variant. */
arb_status_t arb_model_check(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const arb_obs_set_t *obs,
                             double min_bytes, double max_bytes, double tol, int print_points, FILE *out,
                             int *failing_groups, char *err, size_t err_len);

#endif
