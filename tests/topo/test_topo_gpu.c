/* SPDX-License-Identifier: MIT */
/*
 * The topology of the visible GPUs on a real machine: every CUDA device found in
 * hwloc's PCI tree with its CPUs, a known label, P2P attributes answered for pairs.
 * Exit 77 (skipped) when no CUDA device is visible. TAP output.
 */
#include "topo.h"

#include <hwloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tests_run, tests_failed;

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...)
{
    va_list ap;
    tests_run++;
    tests_failed += !cond;
    printf("%sok %d - ", cond ? "" : "not ", tests_run);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

int main(void)
{
    char why[512] = "";
    int n = arb_topo_cuda_count(why, sizeof why);
    if (n <= 0) {
        printf("1..0 # SKIP %s\n", why);
        return 77;
    }
    hwloc_topology_t topo;
    arb_topo_node_t *node = malloc(sizeof *node);
    if (!node || arb_topo_load(&topo, NULL, why, sizeof why) != 0) {
        printf("Bail out! %s\n", node ? why : "out of memory");
        return 1;
    }
    arb_topo_node_init(node);
    for (int d = 0; d < n && d < ARB_TOPO_MAX_GPUS; d++) {
        char busid[ARB_BUSID_LEN];
        int got = arb_topo_cuda_busid(d, busid, why, sizeof why) == 0;
        ok(got && arb_topo_node_add(node, busid, d, why, sizeof why) == d, "CUDA device %d has bus id %s", d,
           got ? busid : why);
    }
    arb_topo_node_classify(topo, node);
    int nvl = arb_topo_nvml_nvlink(node, why, sizeof why);
    printf("# NVML: %s\n", nvl < 0 ? why : node->nvlink_source);
    arb_topo_cuda_p2p(node);
    for (int i = 0; i < node->ngpus; i++)
        ok(node->gpu[i].in_hwloc && strcmp(node->gpu[i].cpus, "?") != 0, "GPU%d %s is in hwloc: numa%s, cpus %s", i,
           node->gpu[i].busid, node->gpu[i].numa, node->gpu[i].cpus);
    char label[ARB_FABRIC_LEN], reasons[1024];
    arb_topo_node_label(node, label, reasons, sizeof reasons);
    ok(strcmp(label, "unknown") != 0 && strcmp(label, "host") != 0, "label %s (%s)", label, reasons);
    if (node->ngpus == 1)
        ok(strcmp(label, "single") == 0, "one GPU: single");
    if (node->ngpus > 1) {
        ok(node->p2p_queried && node->p2p_access[0][1] >= 0 && node->p2p_rank[0][1] >= 0,
           "CUDA answered P2P for GPU0->GPU1: access %d, atomics %d, rank %d", node->p2p_access[0][1],
           node->p2p_atomics[0][1], node->p2p_rank[0][1]);
        for (int i = 0; i < node->ngpus; i++)
            for (int j = i + 1; j < node->ngpus; j++)
                printf("# GPU%d-GPU%d %s\n", i, j, arb_link_name(node->link[i][j]));
        if (nvl >= 0 && nvl == node->ngpus * (node->ngpus - 1) / 2)
            ok(strcmp(label, "nvlink") == 0, "NVML says every pair is NVLink: label nvlink (got %s)", label);
    }
    char binding[256] = "", warnings[1024] = "";
    arb_topo_bind_near(topo, &node->gpu[0], 1, binding, sizeof binding, warnings, sizeof warnings);
    ok(strncmp(binding, "numa", 4) == 0 && !strstr(warnings, "none near its GPU"), "bound near GPU0: %s", binding);
    printf("1..%d\n", tests_run);
    hwloc_topology_destroy(topo);
    free(node);
    return tests_failed ? 1 : 0;
}
