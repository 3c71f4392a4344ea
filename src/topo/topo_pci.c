/* SPDX-License-Identifier: MIT */
/*
 * The PCI view of a node: GPUs in hwloc's PCI tree, how each pair connects, and the
 * fabric label that follows from the pair classes. Pure functions of an hwloc
 * topology, so the tests can feed them hand-written XML machines.
 */
#include "topo/topo.h"

#include <hwloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"

#define NVIDIA_VENDOR_ID 0x10de
#define PCI_CLASS_VGA 0x0300
#define PCI_CLASS_3D 0x0302

const char *arb_link_name(arb_link_t link)
{
    switch (link) {
    case ARB_LINK_SELF: return "X";
    case ARB_LINK_NVL: return "NVL";
    case ARB_LINK_PIX: return "PIX";
    case ARB_LINK_PXB: return "PXB";
    case ARB_LINK_PHB: return "PHB";
    case ARB_LINK_NODE: return "NODE";
    case ARB_LINK_SYS: return "SYS";
    case ARB_LINK_UNKNOWN: break;
    }
    return "?";
}

void arb_topo_append(char *list, size_t len, const char *fmt, ...)
{
    size_t used = strnlen(list, len);
    if (used + 1 >= len)
        return;
    if (used > 0) {
        snprintf(list + used, len - used, "; ");
        used = strnlen(list, len);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(list + used, len - used, fmt, ap);
    va_end(ap);
}

arb_status_t arb_topo_load(struct hwloc_topology **topo, const char *xml_path, char *err, size_t err_len)
{
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) != 0) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "hwloc_topology_init failed");
    }
    /* Bridges and every PCI device stay: the pair classes walk the bridges, and the GPUs
     * (class 0x0302 "3D controller") must not be filtered out as unimportant. */
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (xml_path && hwloc_topology_set_xml(t, xml_path) != 0) {
        snprintf(err, err_len, "--xml %s: hwloc cannot read it as an XML topology (expected a file from lstopo --of xml or arbench topo --export-xml)", xml_path);
        goto err_destroy_topo;
    }
    if (hwloc_topology_load(t) != 0) {
        snprintf(err, err_len, "hwloc_topology_load failed%s%s", xml_path ? " for " : "", xml_path ? xml_path : "");
        goto err_destroy_topo;
    }
    *topo = t;
    return ARB_OK;

err_destroy_topo:
    hwloc_topology_destroy(t);
    return ARB_ERR_INVALID;
}

void arb_topo_node_init(arb_topo_node_t *node)
{
    memset(node, 0, sizeof *node);
    memset(node->p2p_access, -1, sizeof node->p2p_access);
    memset(node->p2p_atomics, -1, sizeof node->p2p_atomics);
    for (int i = 0; i < ARB_TOPO_MAX_GPUS; i++)
        for (int j = 0; j < ARB_TOPO_MAX_GPUS; j++) {
            node->p2p_rank[i][j] = -1;
            node->link[i][j] = i == j ? ARB_LINK_SELF : ARB_LINK_UNKNOWN;
        }
}

static int parse_busid(const char *s, unsigned *domain, unsigned *bus, unsigned *dev, unsigned *func)
{
    char tail;
    *domain = 0;
    if (sscanf(s, "%x:%x:%x.%x%c", domain, bus, dev, func, &tail) == 4)
        return 0;
    *domain = 0;
    if (sscanf(s, "%x:%x.%x%c", bus, dev, func, &tail) == 3)
        return 0;
    return -1;
}

int arb_topo_node_add(arb_topo_node_t *node, const char *busid, int cuda_device, char *err, size_t err_len)
{
    unsigned domain, bus, dev, func;
    if (parse_busid(busid, &domain, &bus, &dev, &func) != 0 || domain > 0xffff || bus > 0xff || dev > 0x1f ||
        func > 7) {
        snprintf(err, err_len, "PCI bus id '%s': expected domain:bus:device.function in hex, e.g. 0000:17:00.0", busid);
        return -1;
    }
    for (int i = 0; i < node->ngpus; i++) {
        const arb_topo_gpu_t *g = &node->gpu[i];
        if (g->domain == domain && g->bus == bus && g->dev == dev && g->func == func)
            return i;
    }
    if (node->ngpus >= ARB_TOPO_MAX_GPUS) {
        snprintf(err, err_len, "more than %d GPUs on one node: raise ARB_TOPO_MAX_GPUS in src/topo/topo.h", ARB_TOPO_MAX_GPUS);
        return -1;
    }
    arb_topo_gpu_t *g = &node->gpu[node->ngpus];
    memset(g, 0, sizeof *g);
    g->domain = domain;
    g->bus = bus;
    g->dev = dev;
    g->func = func;
    snprintf(g->busid, sizeof g->busid, "%04x:%02x:%02x.%x", domain, bus, dev, func);
    g->package = -1;
    snprintf(g->numa, sizeof g->numa, "?");
    snprintf(g->cpus, sizeof g->cpus, "?");
    g->cuda_device = cuda_device;
    return node->ngpus++;
}

int arb_topo_node_from_pci(struct hwloc_topology *topo, arb_topo_node_t *node, char *err, size_t err_len)
{
    int added = 0;
    /* hwloc lists PCI devices in bus-id order, which makes GPU numbering deterministic. */
    for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, NULL); o; o = hwloc_get_next_pcidev(topo, o)) {
        const struct hwloc_pcidev_attr_s *p = &o->attr->pcidev;
        if (p->vendor_id != NVIDIA_VENDOR_ID || (p->class_id != PCI_CLASS_3D && p->class_id != PCI_CLASS_VGA))
            continue;
        char busid[ARB_BUSID_LEN];
        snprintf(busid, sizeof busid, "%04x:%02x:%02x.%x", (unsigned)p->domain, (unsigned)p->bus,
                 (unsigned)p->dev, (unsigned)p->func);
        if (arb_topo_node_add(node, busid, -1, err, err_len) < 0)
            return -1;
        added++;
    }
    return added;
}

static hwloc_obj_t gpu_obj(hwloc_topology_t topo, const arb_topo_gpu_t *g)
{
    return hwloc_get_pcidev_by_busid(topo, g->domain, g->bus, g->dev, g->func);
}

static int is_host_bridge(hwloc_obj_t o)
{
    return o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST;
}

static hwloc_obj_t package_of(hwloc_topology_t topo, hwloc_obj_t nonio)
{
    if (nonio->type == HWLOC_OBJ_PACKAGE)
        return nonio;
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, nonio);
    if (pkg)
        return pkg;
    /* Attached above the packages: on a one-package machine that package is still local. */
    if (hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE) == 1)
        return hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
    return NULL;
}

/* Lowest object that has both a and b below it. hwloc_get_common_ancestor_obj() needs
 * objects with a depth in the normal tree, which I/O objects do not have. */
static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    for (hwloc_obj_t x = a; x; x = x->parent)
        for (hwloc_obj_t y = b; y; y = y->parent)
            if (x == y)
                return x;
    return NULL;
}

static int bridges_between(hwloc_obj_t obj, hwloc_obj_t ancestor)
{
    int n = 0;
    for (hwloc_obj_t x = obj->parent; x && x != ancestor; x = x->parent)
        n += x->type == HWLOC_OBJ_BRIDGE;
    return n;
}

static arb_link_t classify_pair(hwloc_topology_t topo, hwloc_obj_t a, hwloc_obj_t b)
{
    if (a == b)
        return ARB_LINK_SELF;
    hwloc_obj_t c = common_ancestor(a, b);
    if (!c)
        return ARB_LINK_UNKNOWN;
    if (is_host_bridge(c))
        return ARB_LINK_PHB;
    if (c->type == HWLOC_OBJ_BRIDGE) {
        /* Under one switch: GPU -> downstream port -> upstream port (the common bridge). */
        int na = bridges_between(a, c), nb = bridges_between(b, c);
        return (na > nb ? na : nb) <= 1 ? ARB_LINK_PIX : ARB_LINK_PXB;
    }
    if (c->type == HWLOC_OBJ_PCI_DEVICE || c->type == HWLOC_OBJ_OS_DEVICE)
        return ARB_LINK_UNKNOWN; /* GPUs are leaves of the PCI tree; not expected */
    hwloc_obj_t pa = package_of(topo, hwloc_get_non_io_ancestor_obj(topo, a));
    hwloc_obj_t pb = package_of(topo, hwloc_get_non_io_ancestor_obj(topo, b));
    /* Unknown package on a multi-package machine: assume the worse path. */
    return pa && pb && pa == pb ? ARB_LINK_NODE : ARB_LINK_SYS;
}

/* The GPU's PCI device for an object in an NVLinkBandwidth matrix: hwloc's NVML backend
 * puts OS devices ("nvml0") there, below the GPU's PCI device. */
static hwloc_obj_t pci_of(hwloc_obj_t o)
{
    while (o && o->type == HWLOC_OBJ_OS_DEVICE)
        o = o->parent;
    return o && o->type == HWLOC_OBJ_PCI_DEVICE ? o : NULL;
}

static void nvlink_from_distances(hwloc_topology_t topo, arb_topo_node_t *node, hwloc_obj_t *objs)
{
    struct hwloc_distances_s *d[4];
    unsigned nr = 4;
    if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, d, 0) != 0 || nr == 0) {
        if (!node->nvlink_source[0])
            snprintf(node->nvlink_source, sizeof node->nvlink_source, "hwloc has no NVLinkBandwidth distances");
        return;
    }
    if (nr > 4)
        nr = 4;
    int pairs = 0;
    for (unsigned k = 0; k < nr; k++) {
        for (unsigned r = 0; r < d[k]->nbobjs; r++)
            for (unsigned c = 0; c < d[k]->nbobjs; c++) {
                /* Bandwidth matrix: a non-zero entry off the diagonal is an NVLink connection. */
                if (r == c || d[k]->values[r * d[k]->nbobjs + c] == 0)
                    continue;
                hwloc_obj_t pr = pci_of(d[k]->objs[r]), pc = pci_of(d[k]->objs[c]);
                int ir = -1, ic = -1;
                for (int i = 0; i < node->ngpus; i++) {
                    if (objs[i] && objs[i] == pr)
                        ir = i;
                    if (objs[i] && objs[i] == pc)
                        ic = i;
                }
                if (ir >= 0 && ic >= 0 && ir != ic) {
                    arb_topo_node_set_nvlink(node, ir, ic);
                    pairs++;
                }
            }
        hwloc_distances_release(topo, d[k]);
    }
    snprintf(node->nvlink_source, sizeof node->nvlink_source, "hwloc NVLinkBandwidth distances (%d GPU pairs)",
             pairs / 2);
}

void arb_topo_node_set_nvlink(arb_topo_node_t *node, int a, int b)
{
    if (a == b || a < 0 || b < 0 || a >= node->ngpus || b >= node->ngpus)
        return;
    node->link[a][b] = ARB_LINK_NVL;
    node->link[b][a] = ARB_LINK_NVL;
}

void arb_topo_node_classify(struct hwloc_topology *topo, arb_topo_node_t *node)
{
    hwloc_obj_t objs[ARB_TOPO_MAX_GPUS];
    for (int i = 0; i < node->ngpus; i++) {
        arb_topo_gpu_t *g = &node->gpu[i];
        objs[i] = gpu_obj(topo, g);
        g->in_hwloc = objs[i] != NULL;
        if (!objs[i])
            continue;
        hwloc_obj_t nonio = hwloc_get_non_io_ancestor_obj(topo, objs[i]);
        hwloc_obj_t pkg = package_of(topo, nonio);
        g->package = pkg ? (int)pkg->os_index : -1;
        hwloc_bitmap_list_snprintf(g->numa, sizeof g->numa, nonio->nodeset);
        hwloc_bitmap_list_snprintf(g->cpus, sizeof g->cpus, nonio->cpuset);
    }
    for (int i = 0; i < node->ngpus; i++)
        for (int j = 0; j < node->ngpus; j++) {
            if (node->link[i][j] == ARB_LINK_NVL)
                continue; /* set before by NVML */
            node->link[i][j] = i == j ? ARB_LINK_SELF
                               : objs[i] && objs[j] ? classify_pair(topo, objs[i], objs[j])
                                                    : ARB_LINK_UNKNOWN;
        }
    nvlink_from_distances(topo, node, objs);
}

void arb_topo_node_label(const arb_topo_node_t *node, char label[ARB_FABRIC_LEN], char *reasons, size_t reasons_len)
{
    int count[ARB_LINK_UNKNOWN + 1] = { 0 };
    arb_link_t worst_pcie = ARB_LINK_SELF;
    int wi = -1, wj = -1;
    reasons[0] = '\0';
    if (node->ngpus == 0) {
        snprintf(label, ARB_FABRIC_LEN, "host");
        arb_topo_append(reasons, reasons_len, "no GPU on this node: host");
        return;
    }
    if (node->ngpus == 1) {
        snprintf(label, ARB_FABRIC_LEN, "single");
        arb_topo_append(reasons, reasons_len, "one GPU (%s) on this node: single", node->gpu[0].busid);
        return;
    }
    for (int i = 0; i < node->ngpus; i++)
        for (int j = i + 1; j < node->ngpus; j++) {
            arb_link_t l = node->link[i][j];
            count[l]++;
            if (l != ARB_LINK_NVL && l > worst_pcie) {
                worst_pcie = l;
                wi = i;
                wj = j;
            }
        }
    int npairs = node->ngpus * (node->ngpus - 1) / 2;
    if (count[ARB_LINK_UNKNOWN] > 0) {
        snprintf(label, ARB_FABRIC_LEN, "unknown");
        arb_topo_append(reasons, reasons_len, "%d of %d GPU pairs have no known path (GPU %s not in hwloc's PCI tree?): unknown",
                        count[ARB_LINK_UNKNOWN], npairs, node->gpu[wi].in_hwloc ? node->gpu[wj].busid : node->gpu[wi].busid);
        return;
    }
    if (count[ARB_LINK_NVL] == npairs) {
        snprintf(label, ARB_FABRIC_LEN, "nvlink");
        arb_topo_append(reasons, reasons_len, "all %d GPU pairs are NVLink (%s): nvlink", npairs, node->nvlink_source);
        return;
    }
    if (count[ARB_LINK_NVL] > 0) {
        snprintf(label, ARB_FABRIC_LEN, "mixed");
        arb_topo_append(reasons, reasons_len, "%d of %d GPU pairs are NVLink, the others PCIe (worst %s, GPU%d-GPU%d): mixed",
                        count[ARB_LINK_NVL], npairs, arb_link_name(worst_pcie), wi, wj);
        return;
    }
    const char *name = worst_pcie == ARB_LINK_SYS                                 ? "pcie-xsocket"
                       : worst_pcie == ARB_LINK_NODE || worst_pcie == ARB_LINK_PHB ? "pcie-hostbridge"
                                                                                   : "pcie-switch";
    snprintf(label, ARB_FABRIC_LEN, "%s", name);
    arb_topo_append(reasons, reasons_len, "no NVLink pairs (NVLink source: %s)",
                    node->nvlink_source[0] ? node->nvlink_source : "none consulted");
    arb_topo_append(reasons, reasons_len, "pairs: %d PIX, %d PXB, %d PHB, %d NODE, %d SYS", count[ARB_LINK_PIX],
                    count[ARB_LINK_PXB], count[ARB_LINK_PHB], count[ARB_LINK_NODE], count[ARB_LINK_SYS]);
    arb_topo_append(reasons, reasons_len, "worst pair GPU%d-GPU%d is %s: %s", wi, wj, arb_link_name(worst_pcie), name);
}

void arb_topo_combine_labels(const char (*node_labels)[ARB_FABRIC_LEN], int nnodes, char out[ARB_FABRIC_LEN],
                             char *reasons, size_t reasons_len)
{
    if (nnodes <= 1) {
        snprintf(out, ARB_FABRIC_LEN, "%s", nnodes == 1 ? node_labels[0] : "unknown");
        return;
    }
    int same = 1;
    for (int i = 1; i < nnodes; i++)
        same = same && strcmp(node_labels[i], node_labels[0]) == 0;
    if (same) {
        snprintf(out, ARB_FABRIC_LEN, "multinode-%.*s", ARB_FABRIC_LEN - 11, node_labels[0]);
        arb_topo_append(reasons, reasons_len, "%d nodes, all %s: %s", nnodes, node_labels[0], out);
    } else {
        snprintf(out, ARB_FABRIC_LEN, "multinode-mixed");
        arb_topo_append(reasons, reasons_len, "%d nodes with different labels (node0 %s): multinode-mixed", nnodes,
                        node_labels[0]);
        for (int i = 1; i < nnodes; i++)
            if (strcmp(node_labels[i], node_labels[0]) != 0) {
                arb_topo_append(reasons, reasons_len, "node%d is %s", i, node_labels[i]);
                break;
            }
    }
}
