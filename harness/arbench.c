/* SPDX-License-Identifier: MIT */
/* arbench: all-reduce benchmark and tuning suite. `arbench help` lists the subcommands. */
#include <stdio.h>
#include <string.h>

#include "arb_config.h"
#include "commands.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *what;
} commands[] = {
    {"sweep", cmd_sweep, "measure all-reduce implementations over sizes and modes (run under mpirun)"},
    {"engine", cmd_engine, "run the MoE decode/verify engine with a plugin at every all-reduce call site (run under mpirun)"},
    {"plugins", cmd_plugins, "list the implementations this build can load, and GPUs visible"},
    {"topo", cmd_topo, "print the GPU topology, the fabric label and the reasoning"},
    {"profile", cmd_profile, "turn results into a tuning profile (CSV, JSON)"},
    {"gate", cmd_gate, "compare a candidate run against a baseline; exit 1 on a regression"},
    {"model", cmd_model, "fit, predict and check the PCIe cost model (docs/model.md)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: arbench COMMAND [OPTIONS]   (arbench COMMAND --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].what);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("arbench %s\n", ARB_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "arbench: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
