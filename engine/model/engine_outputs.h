/* SPDX-License-Identifier: MIT */
/* `arbench engine`'s outputs under the one output rule (base/outfile.h): --out, the dumps
 * and the memory plan's side file. */
#ifndef ARB_ENGINE_OUTPUTS_H
#define ARB_ENGINE_OUTPUTS_H

#include <stddef.h>

#include "model/engine_opts.h"
#include "model/memplan.h"
#include "runtime/hostops.h"

/* Collective, before any work: rank 0 checks --out (an existing one only with --append,
 * and then only with the engine's header and complete rows; header and ncolumns are the
 * row schema), --dump-tokens and --dump-logits (existing ones only with --force), none of
 * them an input (the config, the profile) or another output. 0, or -1 on every rank with
 * the message in msg. */
int arb_engine_check_outputs(const arb_engine_opts_t *o, arb_mpi_t *m, const char *const *header, unsigned ncolumns,
                             char *msg, size_t len);

/* Writes the memory plan next to out as <out>-memplan-<run_id>.txt (temporary name, then
 * renamed); says where on stdout, or why not on stderr. */
void arb_engine_write_memplan(const arb_memplan_t *plan, const char *title, const char *out, const char *run_id);

#endif
