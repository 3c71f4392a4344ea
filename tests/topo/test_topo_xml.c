/* SPDX-License-Identifier: MIT */
/*
 * Pair classes, fabric labels and preflight warnings on the hand-written hwloc XML
 * machines of tests/topo (see gen_topologies.py). No GPU, no MPI. TAP output.
 * Usage: test_topo_xml DIR_WITH_XML_FILES
 */
#include "topo/topo.h"

#include <hwloc.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"

static const char *xml_dir;


/* Loads DIR/name and fills node with its NVIDIA GPUs, classified. Exits on failure. */
static hwloc_topology_t load(const char *name, arb_topo_node_t *node, int *ngpus)
{
    char path[PATH_MAX], err[512];
    hwloc_topology_t topo;
    snprintf(path, sizeof path, "%s/%s", xml_dir, name);
    if (arb_topo_load(&topo, path, err, sizeof err) != 0) {
        printf("Bail out! %s\n", err);
        exit(1);
    }
    arb_topo_node_init(node);
    *ngpus = arb_topo_node_from_pci(topo, node, err, sizeof err);
    arb_topo_node_classify(topo, node);
    return topo;
}

static void expect_link(const arb_topo_node_t *node, int a, int b, arb_link_t want)
{
    tap_ok(node->link[a][b] == want && node->link[b][a] == want, "GPU%d-GPU%d is %s (got %s)", a, b,
       arb_link_name(want), arb_link_name(node->link[a][b]));
}

static void expect_label(const arb_topo_node_t *node, const char *want, const char *reason_part)
{
    char label[ARB_FABRIC_LEN], reasons[1024];
    arb_topo_node_label(node, label, reasons, sizeof reasons);
    tap_ok(strcmp(label, want) == 0, "label %s (got %s)", want, label);
    tap_ok(strstr(reasons, reason_part) != NULL, "reasons mention '%s' (got: %s)", reason_part, reasons);
}

/* A node of a subset of the GPUs in `full`, classified again. */
static void subset(hwloc_topology_t topo, const arb_topo_node_t *full, const int *idx, int n, arb_topo_node_t *out)
{
    char err[256];
    arb_topo_node_init(out);
    for (int i = 0; i < n; i++)
        arb_topo_node_add(out, full->gpu[idx[i]].busid, -1, err, sizeof err);
    arb_topo_node_classify(topo, out);
}

static void test_switch_box(arb_topo_node_t *node, arb_topo_node_t *sub)
{
    int n;
    hwloc_topology_t topo = load("pcie8_4switch_2socket.xml", node, &n);
    tap_ok(n == 8, "8-GPU box: 8 NVIDIA GPUs found, NIC, BMC VGA and GPU audio functions ignored (got %d)", n);
    tap_ok(strcmp(node->gpu[0].busid, "0000:13:00.0") == 0 && strcmp(node->gpu[7].busid, "0000:74:00.0") == 0,
       "GPUs in bus order (GPU0 %s, GPU7 %s)", node->gpu[0].busid, node->gpu[7].busid);
    expect_link(node, 0, 1, ARB_LINK_PIX);
    expect_link(node, 6, 7, ARB_LINK_PIX);
    expect_link(node, 0, 2, ARB_LINK_NODE);
    expect_link(node, 5, 7, ARB_LINK_NODE);
    expect_link(node, 0, 4, ARB_LINK_SYS);
    expect_link(node, 3, 6, ARB_LINK_SYS);
    int pix = 0, node_pairs = 0, sys = 0;
    for (int i = 0; i < 8; i++)
        for (int j = i + 1; j < 8; j++) {
            pix += node->link[i][j] == ARB_LINK_PIX;
            node_pairs += node->link[i][j] == ARB_LINK_NODE;
            sys += node->link[i][j] == ARB_LINK_SYS;
        }
    tap_ok(pix == 4 && node_pairs == 8 && sys == 16, "pair counts 4 PIX, 8 NODE, 16 SYS (got %d, %d, %d)", pix,
       node_pairs, sys);
    tap_ok(strcmp(node->gpu[0].numa, "0") == 0 && strcmp(node->gpu[0].cpus, "0-7") == 0 && node->gpu[0].package == 0,
       "GPU0 is local to numa0, cpus 0-7, package 0 (got numa%s cpus %s package %d)", node->gpu[0].numa,
       node->gpu[0].cpus, node->gpu[0].package);
    tap_ok(strcmp(node->gpu[7].numa, "1") == 0 && strcmp(node->gpu[7].cpus, "8-15") == 0 && node->gpu[7].package == 1,
       "GPU7 is local to numa1, cpus 8-15, package 1 (got numa%s cpus %s package %d)", node->gpu[7].numa,
       node->gpu[7].cpus, node->gpu[7].package);
    expect_label(node, "pcie-xsocket", "worst pair GPU0-GPU4 is SYS");

    int same_switch[] = { 2, 3 }, same_socket[] = { 0, 1, 2, 3 }, one[] = { 5 };
    subset(topo, node, same_switch, 2, sub);
    expect_label(sub, "pcie-switch", "1 PIX");
    subset(topo, node, same_socket, 4, sub);
    expect_label(sub, "pcie-hostbridge", "is NODE");
    subset(topo, node, one, 1, sub);
    expect_label(sub, "single", "0000:54:00.0");

    /* bind_near on a topology that is not this machine: never binds, says so. */
    char binding[256] = "", warnings[512] = "";
    arb_topo_bind_near(topo, &node->gpu[7], 1, binding, sizeof binding, warnings, sizeof warnings);
    tap_ok(strcmp(binding, "unbound: the topology is not this machine's (XML); would be numa1:cpus=8-15") == 0,
       "binding from XML is refused with the would-be binding (got '%s')", binding);
    arb_topo_bind_near(topo, &node->gpu[7], 0, binding, sizeof binding, warnings, sizeof warnings);
    tap_ok(strcmp(binding, "off") == 0 && warnings[0] == '\0', "bind 0 gives 'off' (got '%s', warnings '%s')", binding,
       warnings);

    /* Export and reload: what `arbench topo --export-xml` writes must classify the same. */
    char path[] = "/tmp/arb_topo_export_XXXXXX", err[256];
    int fd = mkstemp(path);
    tap_ok(fd >= 0 && hwloc_topology_export_xml(topo, path, 0) == 0, "export to %s", path);
    if (fd >= 0)
        close(fd);
    hwloc_topology_t again;
    if (arb_topo_load(&again, path, err, sizeof err) == 0) {
        arb_topo_node_init(sub);
        arb_topo_node_from_pci(again, sub, err, sizeof err);
        arb_topo_node_classify(again, sub);
        expect_label(sub, "pcie-xsocket", "16 SYS");
        hwloc_topology_destroy(again);
    } else {
        tap_ok(0, "reload of the export: %s", err);
    }
    unlink(path);
    hwloc_topology_destroy(topo);
}

static void test_hostbridge_box(arb_topo_node_t *node)
{
    int n;
    hwloc_topology_t topo = load("pcie4_hostbridge.xml", node, &n);
    tap_ok(n == 4, "4-GPU box: 4 GPUs (got %d)", n);
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            expect_link(node, i, j, ARB_LINK_PHB);
    expect_label(node, "pcie-hostbridge", "6 PHB");

    /* A GPU that hwloc does not have makes the label unknown rather than a guess. */
    char err[256];
    tap_ok(arb_topo_node_add(node, "0000:99:00.0", -1, err, sizeof err) == 4, "add a GPU hwloc does not know");
    arb_topo_node_classify(topo, node);
    tap_ok(!node->gpu[4].in_hwloc && node->link[0][4] == ARB_LINK_UNKNOWN, "its pairs are unknown (%s)",
       arb_link_name(node->link[0][4]));
    expect_label(node, "unknown", "0000:99:00.0");
    hwloc_topology_destroy(topo);
}

static void test_cascade_box(arb_topo_node_t *node)
{
    int n;
    hwloc_topology_t topo = load("pcie4_cascade.xml", node, &n);
    tap_ok(n == 4, "cascaded switches: 4 GPUs (got %d)", n);
    expect_link(node, 0, 1, ARB_LINK_PIX);
    expect_link(node, 2, 3, ARB_LINK_PIX);
    expect_link(node, 0, 2, ARB_LINK_PXB);
    expect_link(node, 1, 3, ARB_LINK_PXB);
    expect_label(node, "pcie-switch", "4 PXB");
    hwloc_topology_destroy(topo);
}

static void test_nvlink_boxes(arb_topo_node_t *node)
{
    int n;
    hwloc_topology_t topo = load("nvlink2.xml", node, &n);
    tap_ok(n == 2, "NVLink box: 2 GPUs (got %d)", n);
    expect_link(node, 0, 1, ARB_LINK_NVL);
    expect_label(node, "nvlink", "NVLinkBandwidth");
    hwloc_topology_destroy(topo);

    topo = load("nvlink4_pairs.xml", node, &n);
    tap_ok(n == 4, "NVLink pairs box: 4 GPUs (got %d)", n);
    expect_link(node, 0, 1, ARB_LINK_NVL);
    expect_link(node, 2, 3, ARB_LINK_NVL);
    expect_link(node, 0, 2, ARB_LINK_NODE);
    expect_link(node, 1, 3, ARB_LINK_NODE);
    expect_label(node, "mixed", "2 of 6 GPU pairs are NVLink");
    hwloc_topology_destroy(topo);
}

static void test_busids_and_multinode(arb_topo_node_t *node)
{
    char err[256];
    arb_topo_node_init(node);
    tap_ok(arb_topo_node_add(node, "17:00.0", -1, err, sizeof err) == 0 && strcmp(node->gpu[0].busid, "0000:17:00.0") == 0,
       "short bus id 17:00.0 -> %s", node->gpu[0].busid);
    tap_ok(arb_topo_node_add(node, "00000000:17:00.0", -1, err, sizeof err) == 0 && node->ngpus == 1,
       "NVML's 8-digit domain form is the same GPU");
    tap_ok(arb_topo_node_add(node, "0000:3B:00.0", 2, err, sizeof err) == 1 && strcmp(node->gpu[1].busid, "0000:3b:00.0") == 0,
       "upper-case hex is canonicalised (%s)", node->gpu[1].busid);
    err[0] = '\0';
    tap_ok(arb_topo_node_add(node, "gpu0", -1, err, sizeof err) == -1 && strstr(err, "'gpu0'") && strstr(err, "expected"),
       "bad bus id rejected: %s", err);
    tap_ok(arb_topo_node_add(node, "0000:17:20.0", -1, err, sizeof err) == -1, "device number > 0x1f rejected");

    char labels[3][ARB_FABRIC_LEN] = { "pcie-switch", "pcie-switch", "pcie-xsocket" }, out[ARB_FABRIC_LEN],
         reasons[512] = "";
    arb_topo_combine_labels((const char(*)[ARB_FABRIC_LEN])labels, 1, out, reasons, sizeof reasons);
    tap_ok(strcmp(out, "pcie-switch") == 0, "one node keeps its label (got %s)", out);
    arb_topo_combine_labels((const char(*)[ARB_FABRIC_LEN])labels, 2, out, reasons, sizeof reasons);
    tap_ok(strcmp(out, "multinode-pcie-switch") == 0, "two alike nodes: multinode-pcie-switch (got %s)", out);
    reasons[0] = '\0';
    arb_topo_combine_labels((const char(*)[ARB_FABRIC_LEN])labels, 3, out, reasons, sizeof reasons);
    tap_ok(strcmp(out, "multinode-mixed") == 0 && strstr(reasons, "node2 is pcie-xsocket"),
       "differing nodes: multinode-mixed (got %s: %s)", out, reasons);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* A fake /sys: IOMMU groups 1..3; GPU0 in group 1, GPU1 in `gpu1_group`. */
static void fake_sysfs(const char *root, int gpu1_group)
{
    char p[PATH_MAX], target[PATH_MAX];
    const char *dirs[] = { "kernel", "kernel/iommu_groups", "kernel/iommu_groups/1", "kernel/iommu_groups/2",
                           "kernel/iommu_groups/3", "bus", "bus/pci", "bus/pci/devices",
                           "bus/pci/devices/0000:13:00.0", "bus/pci/devices/0000:14:00.0" };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
        mkdir(p, 0755);
    }
    snprintf(p, sizeof p, "%s/bus/pci/devices/0000:13:00.0/iommu_group", root);
    unlink(p);
    if (symlink("../../../../kernel/iommu_groups/1", p) != 0)
        perror(p);
    snprintf(p, sizeof p, "%s/bus/pci/devices/0000:14:00.0/iommu_group", root);
    snprintf(target, sizeof target, "../../../../kernel/iommu_groups/%d", gpu1_group);
    unlink(p);
    if (symlink(target, p) != 0)
        perror(p);
}

static void test_iommu(arb_topo_node_t *node)
{
    int n;
    hwloc_topology_t topo = load("pcie8_4switch_2socket.xml", node, &n);
    char root[] = "/tmp/arb_topo_sysfs_XXXXXX", cmdline[PATH_MAX], warn[1024];
    if (!mkdtemp(root)) {
        tap_ok(0, "mkdtemp");
        return;
    }
    snprintf(cmdline, sizeof cmdline, "%s/cmdline", root);

    write_file(cmdline, "BOOT_IMAGE=/vmlinuz root=/dev/sda1 quiet\n");
    warn[0] = '\0';
    arb_topo_preflight_iommu(node, root, cmdline, warn, sizeof warn);
    tap_ok(warn[0] == '\0', "no IOMMU groups, no IOMMU options: no warning (got '%s')", warn);

    fake_sysfs(root, 2);
    write_file(cmdline, "BOOT_IMAGE=/vmlinuz intel_iommu=on quiet\n");
    warn[0] = '\0';
    arb_topo_preflight_iommu(node, root, cmdline, warn, sizeof warn);
    tap_ok(strstr(warn, "IOMMU is on (3 groups") && strstr(warn, "intel_iommu=on"), "IOMMU on, translating: warned (%s)",
       warn);
    tap_ok(strstr(warn, "GPU0 (0000:13:00.0) and GPU1 (0000:14:00.0) share a PCIe switch but sit in different IOMMU groups (1, 2)") != NULL,
       "ACS: GPUs under one switch in different groups warned");

    write_file(cmdline, "intel_iommu=on iommu=pt\n");
    warn[0] = '\0';
    arb_topo_preflight_iommu(node, root, cmdline, warn, sizeof warn);
    tap_ok(!strstr(warn, "translates DMA") && strstr(warn, "ACS likely redirects"),
       "iommu=pt: no translation warning, ACS warning stays (%s)", warn);

    fake_sysfs(root, 1);
    warn[0] = '\0';
    arb_topo_preflight_iommu(node, root, cmdline, warn, sizeof warn);
    tap_ok(warn[0] == '\0', "iommu=pt and both GPUs in one group: no warning (got '%s')", warn);

    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    hwloc_topology_destroy(topo);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR_WITH_XML_FILES\n", argv[0]);
        return 2;
    }
    xml_dir = argv[1];
    arb_topo_node_t *node = malloc(sizeof *node), *sub = malloc(sizeof *sub);
    if (!node || !sub)
        return 1;
    test_switch_box(node, sub);
    test_hostbridge_box(node);
    test_cascade_box(node);
    test_nvlink_boxes(node);
    test_busids_and_multinode(node);
    test_iommu(node);
    free(sub);
    free(node);
    return tap_done();
}
