/* SPDX-License-Identifier: MIT */
/*
 * `arbench engine --tune`: before the engine runs, sweep exactly its call-site shapes
 * (each T in use x hidden, the given op and modes: allreduce_rmsnorm in graph mode for
 * the GPU engine; every implementation that can run), build the profile from that sweep with
 * the profile rules (docs/profile.md), write both next to the engine's results and load
 * the profile for the per-site choice. Profiles are only as good as the shapes they were
 * measured at: this one is measured at exactly the shapes it will serve.
 */
#ifndef ARB_ENGINE_TUNE_H
#define ARB_ENGINE_TUNE_H

#include <stddef.h>

#include "runtime/hostops.h"
#include "base/vocab.h"
#include "analysis/profile.h"

typedef struct arb_tune_request {
    const unsigned *tokens; /* each T the engine's steps use (decode 1, verify k + 1, prefill chunk) */
    size_t ntokens;
    unsigned hidden;        /* elements per row */
    unsigned modes;         /* bits (1 << arb_mode_t) */
    arb_op_t op;            /* ALLREDUCE_RMSNORM on the GPU (fused kernels compete with
                             * all-reduce + our RMSNorm); ALLREDUCE for the host backends,
                             * whose fused op is always composed (the sites then take the
                             * allreduce entries, docs/engine-e2e.md) */
    int host_only;          /* the CPU reference engine: host backends only */
    const char *results;    /* the engine's results CSV; the tune files are named after it */
} arb_tune_request_t;

/* RESULTS.csv -> RESULTS.tune.csv (the sweep) and RESULTS.profile.csv (the profile);
 * a name without .csv gets the suffixes appended. */
void arb_tune_paths(const char *results, char *sweep_csv, size_t sweep_len, char *profile_csv, size_t profile_len);

/* Collective. Runs the sweep (an older RESULTS.tune.csv is replaced, not appended to),
 * builds and writes the profile on rank 0, and loads it on every rank into *out (free
 * with arb_profile_free). Single node: every rank reads the file rank 0 wrote.
 * ARB_ERR_INVALID for a bad request, ARB_ERR_SYSTEM when the sweep could not run or
 * measured nothing that passed. */
arb_status_t arb_engine_tune(arb_mpi_t *m, const arb_tune_request_t *rq, int argc, char **argv, arb_profile_t *out,
                             char *profile_path, size_t profile_path_len, char *why, size_t why_len);

#endif
