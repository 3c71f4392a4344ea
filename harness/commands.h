/* SPDX-License-Identifier: MIT */
/* The arbench subcommands: each is `int cmd_NAME(int argc, char **argv)` with argv[0]
 * the subcommand's name, returning the process exit status. */
#ifndef ARB_COMMANDS_H
#define ARB_COMMANDS_H

int cmd_sweep(int argc, char **argv);   /* harness/cmd_sweep.c */
int cmd_plugins(int argc, char **argv); /* harness/cmd_plugins.c */
int cmd_topo(int argc, char **argv);    /* harness/cmd_topo.c */
int cmd_profile(int argc, char **argv); /* harness/cmd_profile.c */
int cmd_gate(int argc, char **argv);    /* harness/cmd_gate.c */
int cmd_engine(int argc, char **argv);  /* harness/cmd_engine.c */
int cmd_model(int argc, char **argv);   /* harness/cmd_model.c */
int cmd_model_e2e(int argc, char **argv); /* harness/cmd_model_e2e.c: arbench model e2e */
int cmd_model_compute(int argc, char **argv); /* harness/cmd_model_compute.c: arbench model compute */

#endif
