/* SPDX-License-Identifier: MIT */
/* `arbench engine`'s rank agreement (runtime/agree.h): the arguments, and the config and
 * profile files by content (so two paths to the same bytes agree). */
#ifndef ARB_ENGINE_AGREE_H
#define ARB_ENGINE_AGREE_H

#include <stddef.h>

#include "model/engine_opts.h"
#include "runtime/hostops.h"

/* Collective: 0 when every rank agrees, -1 on every rank otherwise (rank 0's msg names the
 * first differing argument or file and the ranks). */
int arb_engine_agree(const arb_engine_opts_t *o, arb_mpi_t *m, int argc, char **argv, char *msg, size_t len);

#endif
