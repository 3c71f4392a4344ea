/* SPDX-License-Identifier: MIT */
/*
 * Topology: each rank's GPU -> hwloc object, NUMA node and CPU set; CPU binding;
 * per GPU pair connection class; the fabric label that keys results and profiles.
 * The rules are in docs/topology.md.
 */
#ifndef ARB_TOPO_H
#define ARB_TOPO_H

#include <stddef.h>

#include "arbench/plugin.h"

#define ARB_FABRIC_LEN 32

typedef struct arb_topo_result {
    char fabric[ARB_FABRIC_LEN]; /* "host", "single", "nvlink", "pcie-switch", "pcie-hostbridge",
                                    "pcie-xsocket", "mixed", "unknown"; "multinode-<one of those>" */
    char binding[256];           /* this rank's binding, e.g. "numa0:cpus=0-15" or "off" */
    char warnings[1024];         /* preflight warnings, '; '-separated, empty if none */
    /* Added by the topology module: */
    char busid[32];              /* this rank's GPU, "0000:17:00.0"; "" for host-only runs */
    char reasons[1024];          /* the label rules that fired, '; '-separated */
    int nnodes;                  /* nodes in the communicator */
    int node_gpus;               /* distinct GPUs of the ranks on this node */
} arb_topo_result_t;

/* Collective over `mpi_comm` (an MPI_Comm *): discovers the local topology, binds this
 * rank to the CPUs near its GPU unless bind is 0, and agrees on one fabric label over
 * all ranks. cuda_device < 0 means a host-only run (label "host"). Returns ARB_OK, or
 * an error with a message in err (every rank returns the same). */
arb_status_t arb_topo_setup(void *mpi_comm, int cuda_device, int bind, arb_topo_result_t *out,
                   char *err, size_t err_len);

/* ---------------------------------------------------------------------------------
 * The pieces arb_topo_setup is made of; `arbench topo` and the tests use them alone.
 * hwloc topologies are passed as `struct hwloc_topology *` (hwloc_topology_t) so that
 * this header does not pull in hwloc.h.
 */
struct hwloc_topology;

#define ARB_TOPO_MAX_GPUS 32
#define ARB_BUSID_LEN 32

/* How two GPUs connect, best first; the worst pair decides a PCIe label. The names
 * are those of `nvidia-smi topo -m`. */
typedef enum arb_link {
    ARB_LINK_SELF = 0, /* X: the same GPU */
    ARB_LINK_NVL,      /* NVLink (from NVML or an hwloc "NVLinkBandwidth" distances matrix) */
    ARB_LINK_PIX,      /* one PCIe switch: at most one bridge below the common bridge on each side */
    ARB_LINK_PXB,      /* several PCIe bridges (cascaded switches), no host bridge crossed */
    ARB_LINK_PHB,      /* the same PCIe host bridge (root complex) */
    ARB_LINK_NODE,     /* different host bridges of one package (socket) */
    ARB_LINK_SYS,      /* different packages: crosses the inter-socket link */
    ARB_LINK_UNKNOWN,  /* a GPU is missing from hwloc's PCI tree */
} arb_link_t;

const char *arb_link_name(arb_link_t link); /* "X", "NVL", "PIX", "PXB", "PHB", "NODE", "SYS", "?" */

typedef struct arb_topo_gpu {
    char busid[ARB_BUSID_LEN]; /* canonical "dddd:bb:dd.f", lower-case hex */
    unsigned domain, bus, dev, func;
    int in_hwloc;              /* hwloc's PCI tree has this device */
    int package;               /* os_index of the package it is local to; -1 unknown */
    char numa[32];             /* local NUMA nodes as a list ("0", "0-1"); "?" unknown */
    char cpus[160];            /* local CPUs as a list ("0-15,32-47"); "?" unknown */
    int cuda_device;           /* CUDA device index in this process; -1 not visible */
} arb_topo_gpu_t;

typedef struct arb_topo_node {
    int ngpus;
    arb_topo_gpu_t gpu[ARB_TOPO_MAX_GPUS];
    arb_link_t link[ARB_TOPO_MAX_GPUS][ARB_TOPO_MAX_GPUS];
    char nvlink_source[256];   /* where NVLink pairs came from; "" none consulted */
    int p2p_queried;           /* the p2p_* matrices hold CUDA's answers */
    signed char p2p_access[ARB_TOPO_MAX_GPUS][ARB_TOPO_MAX_GPUS];  /* 1/0, -1 unknown */
    signed char p2p_atomics[ARB_TOPO_MAX_GPUS][ARB_TOPO_MAX_GPUS]; /* 1/0, -1 unknown */
    int p2p_rank[ARB_TOPO_MAX_GPUS][ARB_TOPO_MAX_GPUS];            /* CUDA performance rank, -1 unknown */
} arb_topo_node_t;

/* hwloc with PCI devices and bridges kept (HWLOC_TYPE_FILTER_KEEP_ALL for I/O), from
 * this machine or, when xml_path is not NULL, from that hwloc XML file. */
arb_status_t arb_topo_load(struct hwloc_topology **topo, const char *xml_path, char *err, size_t err_len);

void arb_topo_node_init(arb_topo_node_t *node);
/* Adds a GPU by PCI bus id ("0000:17:00.0", "17:00.0" or NVML's 8-digit domain form).
 * Returns its index (an existing one when the bus id is already there), or -1. */
int arb_topo_node_add(arb_topo_node_t *node, const char *busid, int cuda_device, char *err, size_t err_len);
/* Adds every NVIDIA (vendor 0x10de) PCI device of class 0x0302 or 0x0300 in bus order.
 * Returns how many were added, or -1 when there are more than ARB_TOPO_MAX_GPUS. */
int arb_topo_node_from_pci(struct hwloc_topology *topo, arb_topo_node_t *node, char *err, size_t err_len);
/* Fills each GPU's locality and the link matrix from hwloc: PCI ancestry, packages and
 * NVLink pairs from an "NVLinkBandwidth" distances matrix when the topology has one. */
void arb_topo_node_classify(struct hwloc_topology *topo, arb_topo_node_t *node);
void arb_topo_node_set_nvlink(arb_topo_node_t *node, int a, int b);

/* The node's label and the rules that fired ('; '-separated). */
void arb_topo_node_label(const arb_topo_node_t *node, char label[ARB_FABRIC_LEN], char *reasons, size_t reasons_len);
/* One label from the per-node labels of nnodes nodes: "multinode-<label>" when they all
 * agree, "multinode-mixed" when they differ; the single label when nnodes is 1. */
void arb_topo_combine_labels(const char (*node_labels)[ARB_FABRIC_LEN], int nnodes, char out[ARB_FABRIC_LEN],
                             char *reasons, size_t reasons_len);

/* Binds this process (HWLOC_CPUBIND_PROCESS) to the CPUs local to `gpu` unless bind is 0,
 * writes the binding text ("numa0:cpus=0-15", "off", "unbound: <why>") and warns when the
 * process ends up on no CPU near the GPU. */
void arb_topo_bind_near(struct hwloc_topology *topo, const arb_topo_gpu_t *gpu, int bind,
                        char *binding, size_t binding_len, char *warnings, size_t warnings_len);

/* IOMMU/ACS preflight: reads <sysfs_root>/kernel/iommu_groups,
 * <sysfs_root>/bus/pci/devices/<busid>/iommu_group and the kernel command line file
 * (normally "/sys" and "/proc/cmdline"); appends warnings. */
void arb_topo_preflight_iommu(const arb_topo_node_t *node, const char *sysfs_root, const char *cmdline_path,
                              char *warnings, size_t warnings_len);

/* Warnings about the node itself: GPUs missing from hwloc, pairs without CUDA P2P access. */
void arb_topo_node_warnings(const arb_topo_node_t *node, char *warnings, size_t warnings_len);

/* Appends one item to a '; '-separated list, truncating cleanly when full. */
void arb_topo_append(char *list, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* CUDA and NVML (src/topo/topo_gpu.c). Each says why in `why` when it cannot answer. */
int arb_topo_cuda_count(char *why, size_t why_len); /* visible devices; 0 with why when none */
int arb_topo_cuda_busid(int cuda_device, char busid[ARB_BUSID_LEN], char *why, size_t why_len);
/* P2P access, native atomics and performance rank for GPU pairs visible in this process. */
void arb_topo_cuda_p2p(arb_topo_node_t *node);
/* Marks NVLink pairs that NVML (libnvidia-ml.so.1, loaded with dlopen) reports.
 * Returns the number of NVLink pairs, or -1 with why when NVML cannot be used. */
int arb_topo_nvml_nvlink(arb_topo_node_t *node, char *why, size_t why_len);

#endif
