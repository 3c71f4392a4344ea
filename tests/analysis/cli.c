/* SPDX-License-Identifier: MIT */
/* analysis-cli profile|gate ARGS...: the arbench subcommands cmd_profile and cmd_gate
 * (the same harness/ sources) without the GPU/MPI parts of the arbench program, so the
 * CLI tests do not depend on the rest of the harness building. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "profile") == 0)
        return cmd_profile(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "gate") == 0)
        return cmd_gate(argc - 1, argv + 1);
    fprintf(stderr, "usage: analysis-cli profile|gate ARGS... (expected a subcommand, got '%s')\n", argc >= 2 ? argv[1] : "");
    return 2;
}
