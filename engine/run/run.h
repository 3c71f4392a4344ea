/* SPDX-License-Identifier: MIT */
/*
 * `arbench engine` (engine/README.md, docs/engine.md): setup (config, shards, memory
 * plan, call-site instances), then per run configuration (the compute-only replay, the
 * chosen implementation, a --baseline) a model, the prefill to --context, and per mode
 * the decode, verify and speculative phases (engine/run/run_phases.h), the A/B last
 * (engine/run/run_ab.h); rows to the results CSV as each phase finishes and a table on
 * rank 0 (engine/run/run_rows.h).
 */
#ifndef ARB_ENGINE_RUN_H
#define ARB_ENGINE_RUN_H

#include "model/engine_opts.h"
#include "runtime/hostops.h"

/* After option parsing; returns the exit status. */
int arb_engine_main(const arb_engine_opts_t *o, arb_mpi_t *m, int argc, char **argv);

#endif
