/* SPDX-License-Identifier: MIT */
/*
 * The topology of the visible GPUs on a real machine: every CUDA device found in
 * hwloc's PCI tree with its CPUs, a known label, P2P attributes answered for pairs,
 * every pair's class known, symmetric and agreeing with NVML's NVLink count, and, per
 * machine, the class the meson test expects (--expect-pair NVL --expect-on H200: on
 * 2 x H200 every pair is NVLink).
 * Exit 77 (skipped) when no CUDA device is visible. TAP output.
 *   test_topo_gpu [--expect-pair CLASS] [--expect-on GPU]
 */
#include "topo/topo.h"

#include <hwloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/gpu_device.h"
#include "tap.h"

int main(int argc, char **argv)
{
    const char *expect_pair = NULL, *expect_on = NULL;
    for (int a = 1; a < argc; a += 2) {
        if (a + 1 < argc && !strcmp(argv[a], "--expect-pair"))
            expect_pair = argv[a + 1];
        else if (a + 1 < argc && !strcmp(argv[a], "--expect-on"))
            expect_on = argv[a + 1];
        else {
            fprintf(stderr, "usage: test_topo_gpu [--expect-pair X|NVL|PIX|PXB|PHB|NODE|SYS] [--expect-on GPU]\n");
            return 2;
        }
    }
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
        tap_ok(got && arb_topo_node_add(node, busid, d, why, sizeof why) == d, "CUDA device %d has bus id %s", d,
           got ? busid : why);
    }
    arb_topo_node_classify(topo, node);
    int nvl = arb_topo_nvml_nvlink(node, why, sizeof why);
    printf("# NVML: %s\n", nvl < 0 ? why : node->nvlink_source);
    arb_topo_cuda_p2p(node);
    for (int i = 0; i < node->ngpus; i++)
        tap_ok(node->gpu[i].in_hwloc && strcmp(node->gpu[i].cpus, "?") != 0, "GPU%d %s is in hwloc: numa%s, cpus %s", i,
           node->gpu[i].busid, node->gpu[i].numa, node->gpu[i].cpus);
    char label[ARB_FABRIC_LEN], reasons[1024];
    arb_topo_node_label(node, label, reasons, sizeof reasons);
    tap_ok(strcmp(label, "unknown") != 0 && strcmp(label, "host") != 0, "label %s (%s)", label, reasons);
    if (node->ngpus == 1)
        tap_ok(strcmp(label, "single") == 0, "one GPU: single");
    if (node->ngpus > 1) {
        tap_ok(node->p2p_queried && node->p2p_access[0][1] >= 0 && node->p2p_rank[0][1] >= 0,
           "CUDA answered P2P for GPU0->GPU1: access %d, atomics %d, rank %d", node->p2p_access[0][1],
           node->p2p_atomics[0][1], node->p2p_rank[0][1]);
        arb_gpu_info_t gi;
        char gwhy[256];
        const char *gpu = arb_gpu_select(0, &gi, gwhy, sizeof gwhy) == ARB_OK ? gi.name : "?";
        int expect_here = expect_pair && (!expect_on || strstr(gpu, expect_on));
        int nvl_pairs = 0;
        for (int i = 0; i < node->ngpus; i++)
            for (int j = i + 1; j < node->ngpus; j++) {
                arb_link_t l = node->link[i][j];
                printf("# GPU%d-GPU%d %s\n", i, j, arb_link_name(l));
                nvl_pairs += l == ARB_LINK_NVL;
                tap_ok(l != ARB_LINK_UNKNOWN && l != ARB_LINK_SELF && l == node->link[j][i],
                       "GPU%d-GPU%d has a known class, the same both ways: %s / %s", i, j, arb_link_name(l),
                       arb_link_name(node->link[j][i]));
                if (expect_here)
                    tap_ok(!strcmp(arb_link_name(l), expect_pair), "GPU%d-GPU%d is %s on this %s (got %s)", i, j,
                           expect_pair, gpu, arb_link_name(l));
                else if (expect_pair)
                    tap_skip("the expectation is for another GPU", "GPU%d-GPU%d is %s on %s (this GPU: %s)", i, j,
                             expect_pair, expect_on, gpu);
            }
        if (nvl >= 0)
            tap_ok(nvl_pairs == nvl, "NVL pairs %d = NVML's NVLink pairs %d", nvl_pairs, nvl);
        if (nvl >= 0 && nvl == node->ngpus * (node->ngpus - 1) / 2)
            tap_ok(strcmp(label, "nvlink") == 0, "NVML says every pair is NVLink: label nvlink (got %s)", label);
    }
    char binding[256] = "", warnings[1024] = "";
    arb_topo_bind_near(topo, &node->gpu[0], 1, binding, sizeof binding, warnings, sizeof warnings);
    tap_ok(strncmp(binding, "numa", 4) == 0 && !strstr(warnings, "none near its GPU"), "bound near GPU0: %s", binding);
    hwloc_topology_destroy(topo);
    free(node);
    return tap_done();
}
