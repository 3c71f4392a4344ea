/* SPDX-License-Identifier: MIT */
/*
 * Topology: each rank's GPU -> hwloc object, NUMA node and CPU set; CPU binding;
 * per GPU pair connection class; the fabric label that keys results and profiles.
 */
#ifndef ARB_TOPO_H
#define ARB_TOPO_H

#include <stddef.h>

#define ARB_FABRIC_LEN 32

typedef struct arb_topo_result {
    char fabric[ARB_FABRIC_LEN]; /* "host", "nvlink", "pcie-switch", "pcie-hostbridge", "pcie-xsocket", "mixed", "multinode" */
    char binding[256];           /* this rank's binding, e.g. "numa0:cpus0-15" or "off" */
    char warnings[1024];         /* preflight warnings, '; '-separated, empty if none */
} arb_topo_result_t;

/* Collective over `mpi_comm` (an MPI_Comm *): discovers the local topology, binds this
 * rank to the CPUs near its GPU unless bind is 0, and agrees on one fabric label over
 * all ranks. cuda_device < 0 means a host-only run (label "host"). Returns 0, or -1
 * with a message in err (every rank returns the same). */
int arb_topo_setup(void *mpi_comm, int cuda_device, int bind, arb_topo_result_t *out,
                   char *err, size_t err_len);

#endif
