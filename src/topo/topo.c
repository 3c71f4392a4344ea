/* SPDX-License-Identifier: MIT */
/*
 * arb_topo_setup: the collective part of the topology module. Each rank finds its GPU
 * in hwloc and binds near it; the first rank of each node (MPI_COMM_TYPE_SHARED)
 * classifies the node's GPU pairs and labels the node; the node labels are then
 * combined so that every rank returns the same fabric label.
 */
#include "topo/topo.h"

#include <errno.h>
#include <hwloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"

void arb_topo_bind_near(struct hwloc_topology *topo, const arb_topo_gpu_t *gpu, int bind, char *binding,
                        size_t binding_len, char *warnings, size_t warnings_len)
{
    hwloc_obj_t obj = hwloc_get_pcidev_by_busid(topo, gpu->domain, gpu->bus, gpu->dev, gpu->func);
    if (!obj) {
        snprintf(binding, binding_len, "unbound: GPU %s is not in hwloc's PCI tree", gpu->busid);
        arb_topo_append(warnings, warnings_len, "GPU %s is not in hwloc's PCI tree: its NUMA node and CPUs are unknown", gpu->busid);
        return;
    }
    hwloc_obj_t nonio = hwloc_get_non_io_ancestor_obj(topo, obj);
    char numa[32], cpus[160];
    hwloc_bitmap_list_snprintf(numa, sizeof numa, nonio->nodeset);
    hwloc_bitmap_list_snprintf(cpus, sizeof cpus, nonio->cpuset);
    if (!bind)
        snprintf(binding, binding_len, "off");
    else if (!hwloc_topology_is_thissystem(topo))
        snprintf(binding, binding_len, "unbound: the topology is not this machine's (XML); would be numa%s:cpus=%s", numa, cpus);
    else if (hwloc_set_cpubind(topo, nonio->cpuset, HWLOC_CPUBIND_PROCESS) != 0)
        snprintf(binding, binding_len, "unbound: hwloc_set_cpubind(cpus=%s): %s", cpus, strerror(errno));
    else
        snprintf(binding, binding_len, "numa%s:cpus=%s", numa, cpus);

    if (!hwloc_topology_is_thissystem(topo))
        return;
    hwloc_bitmap_t cur = hwloc_bitmap_alloc();
    if (cur && hwloc_get_cpubind(topo, cur, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_intersects(cur, nonio->cpuset)) {
        char now[160];
        hwloc_bitmap_list_snprintf(now, sizeof now, cur);
        arb_topo_append(warnings, warnings_len, "this rank runs on cpus %s, none near its GPU %s (numa%s:cpus=%s): host work crosses NUMA nodes; drop --no-bind or fix mpirun's binding",
                        now, gpu->busid, numa, cpus);
    }
    hwloc_bitmap_free(cur);
}

/* Every rank learns whether any rank failed and gets the first failing rank's message.
 * Returns 1 when some rank failed. */
static int agree_failure(MPI_Comm comm, int failed, char *err, size_t err_len)
{
    int rank, nranks, first;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    int mine = failed ? rank : nranks;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == nranks)
        return 0;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rank == first ? err : "");
    MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, first, comm);
    snprintf(err, err_len, "rank %d: %s", first, msg);
    return 1;
}

/* The node leader's work: classify the node's GPUs, label it, run the preflight checks. */
static void label_node(hwloc_topology_t topo, const char *busids, int local_n, char label[ARB_FABRIC_LEN],
                       char *reasons, size_t reasons_len, char *warnings, size_t warnings_len, int *node_gpus)
{
    arb_topo_node_t *node = malloc(sizeof *node);
    if (!node) {
        snprintf(label, ARB_FABRIC_LEN, "unknown");
        arb_topo_append(reasons, reasons_len, "out of memory while classifying the node");
        return;
    }
    arb_topo_node_init(node);
    char why[256];
    for (int r = 0; r < local_n; r++)
        if (arb_topo_node_add(node, busids + (size_t)r * ARB_BUSID_LEN, -1, why, sizeof why) < 0)
            arb_topo_append(warnings, warnings_len, "%s", why);
    *node_gpus = node->ngpus;
    arb_topo_node_classify(topo, node);
    if (node->ngpus > 1)
        arb_topo_nvml_nvlink(node, why, sizeof why); /* on failure it notes why in nvlink_source */
    arb_topo_cuda_p2p(node);
    arb_topo_node_label(node, label, reasons, reasons_len);

    arb_topo_node_warnings(node, warnings, warnings_len);
    if (node->ngpus > 1)
        arb_topo_preflight_iommu(node, "/sys", "/proc/cmdline", warnings, warnings_len);
    free(node);
}

arb_status_t arb_topo_setup(void *mpi_comm, int cuda_device, int bind, arb_topo_result_t *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (!mpi_comm) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "arb_topo_setup: mpi_comm is NULL; expected an MPI_Comm *");
    }
    MPI_Comm comm = *(MPI_Comm *)mpi_comm;
    int rank, nranks, local_rank, local_n, any_host, leader, nnodes;
    MPI_Comm local;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local) != MPI_SUCCESS) {
        ARB_RAISE(ARB_ERR_SYSTEM, err, err_len, "topology: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
    }
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_size(local, &local_n);
    leader = local_rank == 0;
    MPI_Allreduce(&leader, &nnodes, 1, MPI_INT, MPI_SUM, comm);
    int host = cuda_device < 0;
    MPI_Allreduce(&host, &any_host, 1, MPI_INT, MPI_MAX, comm);
    out->nnodes = nnodes;

    int ret = -1, failed = 0;
    char node_label[ARB_FABRIC_LEN] = "", node_reasons[sizeof out->reasons] = "", node_warn[sizeof out->warnings] = "";
    char *busids = NULL;
    hwloc_topology_t topo = NULL;
    err[0] = '\0';

    if (!any_host)
        failed = arb_topo_cuda_busid(cuda_device, out->busid, err, err_len) != 0;
    if (agree_failure(comm, failed, err, err_len))
        goto err_free_local;
    failed = arb_topo_load(&topo, NULL, err, err_len) != 0;
    if (agree_failure(comm, failed, err, err_len))
        goto err_free_local;

    if (any_host) {
        /* No GPU to be near: record where the rank runs. */
        hwloc_bitmap_t cur = hwloc_bitmap_alloc();
        char cpus[160] = "?";
        if (cur && hwloc_get_cpubind(topo, cur, HWLOC_CPUBIND_PROCESS) == 0)
            hwloc_bitmap_list_snprintf(cpus, sizeof cpus, cur);
        hwloc_bitmap_free(cur);
        if (bind)
            snprintf(out->binding, sizeof out->binding, "unbound: host-only run, no GPU to bind near (cpus=%s)", cpus);
        else
            snprintf(out->binding, sizeof out->binding, "off");
        snprintf(node_label, sizeof node_label, "host");
        snprintf(node_reasons, sizeof node_reasons, "host-only run (no CUDA device): host");
    } else {
        arb_topo_gpu_t mine;
        memset(&mine, 0, sizeof mine);
        arb_topo_node_t *one = malloc(sizeof *one);
        failed = !one;
        if (one) {
            arb_topo_node_init(one);
            failed = arb_topo_node_add(one, out->busid, cuda_device, err, err_len) < 0;
            mine = one->gpu[0];
            free(one);
        } else {
            snprintf(err, err_len, "out of memory");
        }
        busids = calloc((size_t)local_n, ARB_BUSID_LEN);
        if (!busids && !failed) {
            snprintf(err, err_len, "out of memory");
            failed = 1;
        }
        if (agree_failure(comm, failed, err, err_len))
            goto err_free_busids;
        arb_topo_bind_near(topo, &mine, bind, out->binding, sizeof out->binding, out->warnings, sizeof out->warnings);
        MPI_Allgather(out->busid, ARB_BUSID_LEN, MPI_CHAR, busids, ARB_BUSID_LEN, MPI_CHAR, local);
        if (leader)
            label_node(topo, busids, local_n, node_label, node_reasons, sizeof node_reasons, node_warn,
                       sizeof node_warn, &out->node_gpus);
    }
    MPI_Bcast(node_label, (int)sizeof node_label, MPI_CHAR, 0, local);
    MPI_Bcast(node_reasons, (int)sizeof node_reasons, MPI_CHAR, 0, local);
    MPI_Bcast(node_warn, (int)sizeof node_warn, MPI_CHAR, 0, local);
    MPI_Bcast(&out->node_gpus, 1, MPI_INT, 0, local);
    if (node_warn[0])
        arb_topo_append(out->warnings, sizeof out->warnings, "%s", node_warn);
    snprintf(out->reasons, sizeof out->reasons, "%s", node_reasons);

    /* Every rank sends its node's label; the leaders' entries, in rank order, are the nodes. */
    char(*all)[ARB_FABRIC_LEN] = calloc((size_t)nranks, ARB_FABRIC_LEN);
    int *leaders = calloc((size_t)nranks, sizeof *leaders);
    failed = !all || !leaders;
    if (failed)
        snprintf(err, err_len, "out of memory");
    if (agree_failure(comm, failed, err, err_len)) {
        free(leaders);
        free(all);
        goto err_free_busids;
    }
    MPI_Allgather(node_label, ARB_FABRIC_LEN, MPI_CHAR, all, ARB_FABRIC_LEN, MPI_CHAR, comm);
    MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, comm);
    int n = 0;
    for (int r = 0; r < nranks; r++)
        if (leaders[r])
            memmove(all[n++], all[r], ARB_FABRIC_LEN);
    arb_topo_combine_labels((const char(*)[ARB_FABRIC_LEN])all, n, out->fabric, out->reasons, sizeof out->reasons);
    free(leaders);
    free(all);
    ret = 0;

err_free_busids:
    free(busids);
    hwloc_topology_destroy(topo);
err_free_local:
    MPI_Comm_free(&local);
    return ret;
}
