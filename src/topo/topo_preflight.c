/* SPDX-License-Identifier: MIT */
/*
 * IOMMU/ACS preflight. With the IOMMU translating DMA, or with ACS on a switch's
 * downstream ports redirecting peer requests up to the root complex, PCIe P2P between
 * GPUs can be slow or hang. Linux shows both in sysfs: IOMMU groups exist when the
 * IOMMU is on, and two devices behind one switch land in different groups when ACS
 * isolates them (without ACS they would share the switch's group).
 */
#include "topo/topo.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int count_iommu_groups(const char *sysfs_root)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/kernel/iommu_groups", sysfs_root);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int n = 0;
    for (struct dirent *e = readdir(d); e; e = readdir(d))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The IOMMU group number of a PCI device, -1 when sysfs does not say. */
static long iommu_group_of(const char *sysfs_root, const char *busid)
{
    char path[PATH_MAX], target[PATH_MAX];
    snprintf(path, sizeof path, "%s/bus/pci/devices/%s/iommu_group", sysfs_root, busid);
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0)
        return -1;
    target[n] = '\0';
    const char *base = strrchr(target, '/');
    base = base ? base + 1 : target;
    char *end;
    long g = strtol(base, &end, 10);
    return end != base && *end == '\0' ? g : -1;
}

/* True when the command line has `word` as a whole parameter or as its "key=" prefix. */
static int cmdline_has(const char *cmdline, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = strstr(cmdline, word); p; p = strstr(p + 1, word)) {
        int starts = p == cmdline || p[-1] == ' ';
        char after = p[wl];
        int ends = word[wl - 1] == '=' || after == '\0' || after == ' ' || after == '\n';
        if (starts && ends)
            return 1;
    }
    return 0;
}

void arb_topo_preflight_iommu(const arb_topo_node_t *node, const char *sysfs_root, const char *cmdline_path,
                              char *warnings, size_t warnings_len)
{
    char cmdline[4096] = "";
    FILE *f = fopen(cmdline_path, "r");
    if (f) {
        size_t n = fread(cmdline, 1, sizeof cmdline - 1, f);
        cmdline[n] = '\0';
        fclose(f);
    }
    int groups = count_iommu_groups(sysfs_root);
    int passthrough = cmdline_has(cmdline, "iommu=pt") || cmdline_has(cmdline, "iommu.passthrough=1");
    char asked[96] = "";
    if (cmdline_has(cmdline, "intel_iommu=on"))
        arb_topo_append(asked, sizeof asked, "intel_iommu=on");
    if (cmdline_has(cmdline, "amd_iommu=") && !cmdline_has(cmdline, "amd_iommu=off"))
        arb_topo_append(asked, sizeof asked, "amd_iommu=...");
    if (passthrough)
        arb_topo_append(asked, sizeof asked, "iommu=pt");
    for (char *c = strchr(asked, ';'); c; c = strchr(c, ';'))
        *c = ','; /* asked is one item of the '; '-separated warnings */

    if (groups > 0 && !passthrough)
        arb_topo_append(warnings, warnings_len, "IOMMU is on (%d groups in %s/kernel/iommu_groups, kernel cmdline: %s) and translates DMA: GPU P2P may be slow or hang; iommu=pt on the kernel command line avoids the translation",
                        groups, sysfs_root, asked[0] ? asked : "no iommu options");
    else if (groups == 0 && asked[0] && !passthrough)
        arb_topo_append(warnings, warnings_len, "kernel cmdline asks for the IOMMU (%s) but %s/kernel/iommu_groups is empty: cannot tell whether DMA is translated",
                        asked, sysfs_root);
    if (groups == 0)
        return;

    /* ACS: GPUs under one switch (PIX/PXB) in different IOMMU groups. */
    int reported = 0;
    for (int i = 0; i < node->ngpus && reported < 4; i++)
        for (int j = i + 1; j < node->ngpus && reported < 4; j++) {
            arb_link_t l = node->link[i][j];
            if (l != ARB_LINK_PIX && l != ARB_LINK_PXB)
                continue;
            long gi = iommu_group_of(sysfs_root, node->gpu[i].busid);
            long gj = iommu_group_of(sysfs_root, node->gpu[j].busid);
            if (gi < 0 || gj < 0 || gi == gj)
                continue;
            arb_topo_append(warnings, warnings_len, "GPU%d (%s) and GPU%d (%s) share a PCIe switch but sit in different IOMMU groups (%ld, %ld): ACS likely redirects their P2P through the root complex (slow, may hang); disable ACS on the switch ports for P2P",
                            i, node->gpu[i].busid, j, node->gpu[j].busid, gi, gj);
            reported++;
        }
}

void arb_topo_node_warnings(const arb_topo_node_t *node, char *warnings, size_t warnings_len)
{
    for (int i = 0; i < node->ngpus; i++)
        if (!node->gpu[i].in_hwloc)
            arb_topo_append(warnings, warnings_len, "GPU %s is not in hwloc's PCI tree: its NUMA node, CPUs and pair classes are unknown",
                            node->gpu[i].busid);
    for (int i = 0; i < node->ngpus; i++)
        for (int j = 0; j < node->ngpus; j++)
            if (node->p2p_access[i][j] == 0)
                arb_topo_append(warnings, warnings_len, "CUDA reports no P2P access from GPU%d (%s) to GPU%d (%s): P2P plugins will decline",
                                i, node->gpu[i].busid, j, node->gpu[j].busid);
}
