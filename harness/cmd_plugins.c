/* SPDX-License-Identifier: MIT */
/* `arbench plugins`: what this build can load, and whether a GPU is visible. */
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "commands.h"
#include "runtime/loader.h"
#include "base/meta.h"
#include "sweep/runner.h"

static void caps_text(uint32_t caps, char *buf, size_t len)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {{ARB_CAP_HOST_MEMORY, "host"},      {ARB_CAP_DEVICE_MEMORY, "device"},
                 {ARB_CAP_GRAPH_SAFE, "graph"},      {ARB_CAP_NEEDS_P2P, "p2p"},
                 {ARB_CAP_SINGLE_NODE, "single-node"}, {ARB_CAP_BF16, "bf16"},
                 {ARB_CAP_FP32, "fp32"},             {ARB_CAP_REFERENCE, "reference"},
                 {ARB_CAP_NEEDS_ALLOC, "own-alloc"}, {ARB_CAP_BASELINE, "baseline"}};
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (caps & names[i].bit)
            used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s", used ? "," : "", names[i].name);
}

int cmd_plugins(int argc, char **argv)
{
    int verbose = argc > 1 && !strcmp(argv[1], "-v");
    if (argc > 1 && !verbose) {
        if (!strcmp(argv[1], "--help")) {
            printf("usage: arbench plugins [-v]   (-v: the paths tried for plugins that are missing)\n");
            return 0;
        }
        fprintf(stderr, "arbench plugins: unexpected argument '%s' (expected -v or nothing)\n", argv[1]);
        return 2;
    }
    char why[512] = "", lib[32], hdr[32];
    int ngpu = arb_gpu_count(why, sizeof why);
    arb_nccl_versions(lib, sizeof lib, hdr, sizeof hdr, NULL, NULL);
    printf("GPUs visible: %d%s%s\n", ngpu, ngpu ? "" : " - ", ngpu ? "" : why);
    printf("NCCL: library %s, headers %s\n", lib, hdr);
    for (size_t i = 0; arb_known_plugins[i]; i++) {
        arb_loaded_plugin_t lp;
        char err[8192];
        if (arb_plugin_load(arb_known_plugins[i], &lp, err, sizeof err)) {
            printf("%-11s not available%s%s\n", arb_known_plugins[i], verbose ? ": " : "", verbose ? err : "");
            continue;
        }
        char caps[256];
        caps_text(lp.plugin->caps, caps, sizeof caps);
        printf("%-11s %s\n            caps: %s\n            path: %s\n", lp.plugin->name,
               lp.plugin->description ? lp.plugin->description : "", caps, lp.path);
        if (lp.plugin->variants)
            for (size_t k = 0; lp.plugin->variants[k]; k++)
                printf("            variant: %s\n", lp.plugin->variants[k][0] ? lp.plugin->variants[k] : "(default)");
        arb_plugin_unload(&lp);
    }
    return 0;
}
