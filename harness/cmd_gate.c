/* SPDX-License-Identifier: MIT */
/* Placeholder until its module lands. */
#include <stdio.h>

#include "commands.h"

int cmd_gate(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "arbench %s: not built yet\n", argv[0]);
    return 2;
}
