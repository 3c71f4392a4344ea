/* SPDX-License-Identifier: MIT */
/* A fabric's GPU placement from an hwloc XML (`arbench topo --export-xml` on the real box):
 * GPUs joined below a PCIe switch (PIX/PXB) share a switch, packages are sockets. The
 * constants still come from a spec file. */
#include <hwloc.h>
#include <stdio.h>
#include <string.h>

#include "costmodel/model_fabric.h"
#include "topo/topo.h"

static int find_root(int *parent, int g)
{
    while (parent[g] != g)
        g = parent[g] = parent[parent[g]];
    return g;
}

arb_status_t arb_fabric_apply_xml(arb_fabric_t *f, const char *xml_path, char *err, size_t err_len)
{
    hwloc_topology_t topo;
    char why[512];
    if (arb_topo_load(&topo, xml_path, why, sizeof why)) {
        ARB_WHY(err, err_len, "%s: %s (expected an hwloc XML, e.g. from `arbench topo --export-xml FILE`)", xml_path, why);
        return ARB_ERR_INVALID;
    }
    static arb_topo_node_t node;
    arb_topo_node_init(&node);
    int n = arb_topo_node_from_pci(topo, &node, why, sizeof why);
    if (n > 0)
        arb_topo_node_classify(topo, &node);
    hwloc_topology_destroy(topo);
    if (n <= 0 || n > ARB_MODEL_MAX_GPUS) {
        ARB_WHY(err, err_len, "%s: %s", xml_path, n < 0 ? why : "no NVIDIA GPU in its PCI tree");
        return ARB_ERR_INVALID;
    }
    int parent[ARB_MODEL_MAX_GPUS], nvl = 1;
    for (int g = 0; g < n; g++)
        parent[g] = g;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            arb_link_t l = node.link[a][b];
            nvl &= l == ARB_LINK_NVL;
            if (l == ARB_LINK_UNKNOWN) {
                ARB_WHY(err, err_len, "%s: GPU %s is missing from hwloc's PCI tree: cannot place it", xml_path, node.gpu[b].busid);
                return ARB_ERR_INVALID;
            }
            if (l == ARB_LINK_PIX || l == ARB_LINK_PXB)
                parent[find_root(parent, a)] = find_root(parent, b);
        }
    /* Switch groups of one GPU are GPUs on a root port: no switch. Number what remains. */
    int members[ARB_MODEL_MAX_GPUS] = {0}, sw_id[ARB_MODEL_MAX_GPUS], nsw = 0;
    int pkg_id[ARB_MODEL_MAX_GPUS], npkg = 0, pkg_of[ARB_MODEL_MAX_GPUS];
    for (int g = 0; g < n; g++) {
        members[find_root(parent, g)]++;
        sw_id[g] = -1;
    }
    for (int g = 0; g < n; g++) {
        int r = find_root(parent, g);
        if (members[r] > 1 && sw_id[r] < 0)
            sw_id[r] = nsw++;
        int k;
        for (k = 0; k < npkg && pkg_id[k] != node.gpu[g].package; k++)
            ;
        if (k == npkg)
            pkg_id[npkg++] = node.gpu[g].package;
        pkg_of[g] = k;
    }
    f->ngpus = n;
    f->nvlink = nvl && n > 1;
    f->sockets = npkg;
    f->gpus_per_switch = f->switches_per_socket = 0; /* the placement below is explicit */
    for (int g = 0; g < n; g++) {
        f->switch_of[g] = members[find_root(parent, g)] > 1 ? sw_id[find_root(parent, g)] : -1;
        f->socket_of[g] = pkg_of[g];
    }
    f->from_xml = 1;
    snprintf(f->path_file + strlen(f->path_file), sizeof f->path_file - strlen(f->path_file), "+%s", xml_path);
    return arb_fabric_check_paths(f, err, err_len);
}
