/* SPDX-License-Identifier: MIT */
/*
 * arbench topo [--xml FILE] [--export-xml FILE [--force]] [--no-bind] [--gpu N]
 * This machine's (or an hwloc XML file's) GPUs: the pair matrix in nvidia-smi's
 * notation, each GPU's bus id, NUMA node and CPUs, CUDA P2P attributes, the fabric
 * label with the rules that fired, and preflight warnings. No MPI, no GPU needed.
 */
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "base/outfile.h"
#include "topo/topo.h"

typedef struct topo_opts {
    const char *xml;        /* read this hwloc XML instead of the machine */
    const char *export_xml; /* write the topology used here as hwloc XML */
    int bind;               /* bind near GPU `gpu` (a real machine only) */
    int gpu;                /* the GPU whose CPUs the binding and its check use */
    int force;              /* replace an existing --export-xml file */
} topo_opts_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: arbench topo [--xml FILE] [--export-xml FILE [--force]] [--no-bind] [--gpu N]\n"
               "  --xml FILE         use this hwloc XML topology (lstopo --of xml) instead of this machine;\n"
               "                     its GPUs are the NVIDIA (0x10de) PCI devices of class 0x0302/0x0300\n"
               "  --export-xml FILE  write the topology used as hwloc XML (for results/); an existing file\n"
               "                     is refused unless --force is given\n"
               "  --no-bind          do not bind this process to the CPUs near the GPU\n"
               "  --gpu N            the GPU (index in the table) to bind near and check; default 0\n");
}

static int parse_args(int argc, char **argv, topo_opts_t *o)
{
    *o = (topo_opts_t){ .bind = 1 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(a, "--no-bind") == 0) {
            o->bind = 0;
        } else if (strcmp(a, "--force") == 0) {
            o->force = 1;
        } else if ((strcmp(a, "--xml") == 0 || strcmp(a, "--export-xml") == 0 || strcmp(a, "--gpu") == 0) &&
                   i + 1 < argc) {
            const char *v = argv[++i];
            if (strcmp(a, "--xml") == 0) {
                o->xml = v;
            } else if (strcmp(a, "--export-xml") == 0) {
                o->export_xml = v;
            } else {
                char *end;
                long g = strtol(v, &end, 10);
                if (end == v || *end || g < 0 || g >= ARB_TOPO_MAX_GPUS) {
                    fprintf(stderr, "arbench topo: --gpu '%s': expected a GPU index from 0 to %d\n", v, ARB_TOPO_MAX_GPUS - 1);
                    return -1;
                }
                o->gpu = (int)g;
            }
        } else {
            fprintf(stderr, "arbench topo: unexpected argument '%s' (or a missing value after it)\n", a);
            usage(stderr);
            return -1;
        }
    }
    return 0;
}

/* The topology as hwloc XML, by temporary name and rename (base/outfile.h). */
static int export_xml(hwloc_topology_t topo, const char *path, char *err, size_t len)
{
    char *xml = NULL;
    int n = 0;
    if (hwloc_topology_export_xmlbuffer(topo, &xml, &n, 0) != 0 || n <= 0) {
        snprintf(err, len, "%s: hwloc could not write it", path);
        return -1;
    }
    arb_outfile_t of;
    int bad = !arb_outfile_open(&of, "--export-xml", path, err, len);
    /* n counts the terminating NUL */
    if (!bad && fwrite(xml, 1, (size_t)n - 1, of.f) != (size_t)n - 1) {
        snprintf(err, len, "%s: cannot write", path);
        arb_outfile_discard(&of);
        bad = 1;
    } else if (!bad) {
        bad = arb_outfile_commit(&of, err, len) != 0;
    }
    hwloc_free_xmlbuffer(topo, xml);
    return bad ? -1 : 0;
}

/* Prints a '; '-separated list one item per line. */
static void print_list(const char *title, const char *list, const char *empty)
{
    printf("%s:%s\n", title, list[0] ? "" : empty);
    const char *p = list;
    while (*p) {
        const char *sep = strstr(p, "; ");
        int n = sep ? (int)(sep - p) : (int)strlen(p);
        printf("  - %.*s\n", n, p);
        p += n + (sep ? 2 : 0);
    }
}

static void print_matrix(const arb_topo_node_t *node)
{
    printf("\n      ");
    for (int j = 0; j < node->ngpus; j++)
        printf(" GPU%-3d", j);
    printf("\n");
    for (int i = 0; i < node->ngpus; i++) {
        printf("GPU%-3d", i);
        for (int j = 0; j < node->ngpus; j++)
            printf(" %-6s", arb_link_name(node->link[i][j]));
        printf("\n");
    }
    printf("\nLegend: X = self, NVL = NVLink, PIX = one PCIe switch, PXB = several PCIe bridges (cascaded switches),\n"
           "        PHB = one PCIe host bridge, NODE = host bridges of one socket, SYS = across sockets, ? = unknown\n\n");
    printf("%-6s %-14s %-6s %-8s %-5s %s\n", "GPU", "bus id", "NUMA", "package", "CUDA", "CPUs");
    for (int i = 0; i < node->ngpus; i++) {
        const arb_topo_gpu_t *g = &node->gpu[i];
        char pkg[16] = "?", cuda[16] = "-";
        if (g->package >= 0)
            snprintf(pkg, sizeof pkg, "%d", g->package);
        if (g->cuda_device >= 0)
            snprintf(cuda, sizeof cuda, "%d", g->cuda_device);
        printf("GPU%-3d %-14s %-6s %-8s %-5s %s%s\n", i, g->busid, g->numa, pkg, cuda, g->cpus,
               g->in_hwloc ? "" : "  (not in hwloc's PCI tree)");
    }
    if (!node->p2p_queried)
        return;
    printf("\nCUDA P2P from row to column: access/native atomics/performance rank (- = not asked)\n      ");
    for (int j = 0; j < node->ngpus; j++)
        printf(" GPU%-5d", j);
    printf("\n");
    for (int i = 0; i < node->ngpus; i++) {
        printf("GPU%-3d", i);
        for (int j = 0; j < node->ngpus; j++) {
            char cell[24] = "X";
            if (i != j && node->p2p_access[i][j] < 0)
                snprintf(cell, sizeof cell, "-");
            else if (i != j)
                snprintf(cell, sizeof cell, "%d/%d/%d", node->p2p_access[i][j], node->p2p_atomics[i][j],
                         node->p2p_rank[i][j]);
            printf(" %-8s", cell);
        }
        printf("\n");
    }
}

/* The GPUs: CUDA's devices in CUDA order when CUDA sees any (and no XML was given),
 * otherwise the NVIDIA PCI devices hwloc sees. Returns -1 on a hard error. */
static int find_gpus(hwloc_topology_t topo, const topo_opts_t *o, arb_topo_node_t *node, char *source,
                     size_t source_len)
{
    char why[256] = "";
    int ncuda = o->xml ? 0 : arb_topo_cuda_count(why, sizeof why);
    if (o->xml)
        snprintf(source, source_len, "hwloc XML %s: GPUs are its NVIDIA PCI devices, CUDA not consulted", o->xml);
    else if (ncuda == 0)
        snprintf(source, source_len, "%s; using hwloc's PCI view only",
                 strncmp(why, "no CUDA device visible", 22) == 0 ? why : "no CUDA device visible");
    else
        snprintf(source, source_len, "CUDA devices in CUDA order, located in this machine's hwloc topology");
    for (int d = 0; d < ncuda; d++) {
        char busid[ARB_BUSID_LEN];
        if (arb_topo_cuda_busid(d, busid, why, sizeof why) != 0 ||
            arb_topo_node_add(node, busid, d, why, sizeof why) < 0) {
            fprintf(stderr, "arbench topo: %s\n", why);
            return -1;
        }
    }
    if (ncuda == 0 && arb_topo_node_from_pci(topo, node, why, sizeof why) < 0) {
        fprintf(stderr, "arbench topo: %s\n", why);
        return -1;
    }
    return 0;
}

int cmd_topo(int argc, char **argv)
{
    topo_opts_t o;
    int r = parse_args(argc, argv, &o);
    if (r != 0)
        return r > 0 ? 0 : 2;

    int status = 1;
    char err[512], source[512], label[ARB_FABRIC_LEN], reasons[1024] = "", warnings[2048] = "", binding[256];
    hwloc_topology_t topo;
    const arb_io_file_t input = {"--xml", o.xml};
    if (o.export_xml &&
        arb_out_check("--export-xml", o.export_xml, o.force ? ARB_OUT_FORCE : ARB_OUT_NEW, "--force", &input, 1, err, sizeof err)) {
        fprintf(stderr, "arbench topo: %s\n", err);
        return 2;
    }
    if (arb_topo_load(&topo, o.xml, err, sizeof err) != 0) {
        fprintf(stderr, "arbench topo: %s\n", err);
        return 1;
    }
    arb_topo_node_t *node = malloc(sizeof *node);
    if (!node) {
        fprintf(stderr, "arbench topo: out of memory\n");
        goto err_destroy_topo;
    }
    arb_topo_node_init(node);
    if (find_gpus(topo, &o, node, source, sizeof source) != 0)
        goto err_free_node;
    if (o.gpu > 0 && o.gpu >= node->ngpus) {
        fprintf(stderr, "arbench topo: --gpu %d: there are only %d GPUs (0 to %d)\n", o.gpu, node->ngpus, node->ngpus - 1);
        goto err_free_node;
    }

    arb_topo_node_classify(topo, node);
    if (!o.xml && node->ngpus > 1) {
        char why[256];
        arb_topo_nvml_nvlink(node, why, sizeof why);
        arb_topo_cuda_p2p(node);
    }
    arb_topo_node_label(node, label, reasons, sizeof reasons);
    if (node->ngpus > 0)
        arb_topo_bind_near(topo, &node->gpu[o.gpu], o.bind, binding, sizeof binding, warnings, sizeof warnings);
    else
        snprintf(binding, sizeof binding, o.bind ? "unbound: no GPU to bind near" : "off");
    arb_topo_node_warnings(node, warnings, sizeof warnings);
    if (!o.xml)
        arb_topo_preflight_iommu(node, "/sys", "/proc/cmdline", warnings, sizeof warnings);

    printf("arbench topo: %d GPU%s (%s)\n", node->ngpus, node->ngpus == 1 ? "" : "s", source);
    if (node->ngpus > 0)
        print_matrix(node);
    printf("\nfabric: %s\n", label);
    print_list("reasons", reasons, " none");
    if (node->ngpus > 0)
        printf("binding (near GPU%d): %s\n", o.gpu, binding);
    else
        printf("binding: %s\n", binding);
    print_list("warnings", warnings, " none");
    if (o.xml)
        printf("note: IOMMU/ACS and binding checks read this machine, not the XML file: skipped\n");
    printf("note: P2P that CUDA reports but that does not work (IOMMU/ACS) is not detected here: the p2p plugin checks that itself\n");

    if (o.export_xml && export_xml(topo, o.export_xml, err, sizeof err) != 0) {
        fprintf(stderr, "arbench topo: --export-xml %s\n", err);
        goto err_free_node;
    }
    if (o.export_xml)
        printf("wrote hwloc XML topology to %s\n", o.export_xml);
    status = 0;

err_free_node:
    free(node);
err_destroy_topo:
    hwloc_topology_destroy(topo);
    return status;
}
