/* SPDX-License-Identifier: MIT */
#include "commands.h"
int main(int argc, char **argv) { (void)argc; (void)argv; return 0; }
