/* SPDX-License-Identifier: MIT */
/*
 * The PCIe cost model's description of a machine: path classes, the constants of each
 * path with their uncertainty and source, the GPU placement (model_fabric.c, and
 * model_fabric_xml.c for a placement read from an hwloc XML). docs/model.md states every
 * equation and every constant with its source.
 *
 * Units: bytes per rank, microseconds, GB/s = 1e9 B/s (so bytes / (1e3 x GB/s) = us).
 */
#ifndef ARB_MODEL_FABRIC_H
#define ARB_MODEL_FABRIC_H

#include <stddef.h>

#include "arbench/status.h"

#define ARB_MODEL_MAX_GPUS 64
#define ARB_MODEL_SOURCE_LEN 200

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

/* The spec format shared by fabric and GPU specs: `key = value [+-REL] [# source]` per line.
 * apply returns NULL, or what it expected (the message then names file, line, key). */
typedef const char *(*arb_spec_apply_fn)(void *ctx, const char *key, const char *val, const char *src);
arb_status_t arb_spec_parse(const char *text, const char *name, arb_spec_apply_fn apply, void *ctx, char *err,
                            size_t err_len);
/* Reads the whole file (at most 64 KiB) and hands it to parse(text, path, out, ...); `what`
 * names what was expected when the file cannot be read. */
typedef arb_status_t (*arb_spec_mem_fn)(const char *text, const char *name, void *out, char *err, size_t err_len);
arb_status_t arb_spec_read(const char *path, const char *what, arb_spec_mem_fn parse, void *out, char *err,
                           size_t err_len);
/* "48" or "48 +-0.15" with its source: 0; -1 not a value; -2 no source. */
int arb_q_parse(const char *val, const char *source, arb_quantity_t *q);
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

/* A latency-like constant at a band corner (v x (1 + corner x band)) and a
 * bandwidth-like one (v x (1 - corner x band), never below 5% of v). */
double arb_q_lat(const arb_quantity_t *q, int corner);
double arb_q_bw(const arb_quantity_t *q, int corner);

#endif
