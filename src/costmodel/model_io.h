/* SPDX-License-Identifier: MIT */
/* The cost model's files (model_io.c, docs/model.md): measured rows in, fitted constants
 * out and back. */
#ifndef ARB_MODEL_IO_H
#define ARB_MODEL_IO_H

#include <stddef.h>

#include "arbench/status.h"
#include "costmodel/model_cost.h"

typedef struct arb_obs {
    char impl[32], params[256], mode[16], op[24], source[256];
    arb_variant_key_t key;
    arb_transport_t transport;
    int ranks;
    double bytes, median_us;
} arb_obs_t;

typedef struct arb_obs_set {
    size_t n, cap;
    arb_obs_t *o;
    char fabric[32]; /* the runs' fabric label (all files must agree) */
} arb_obs_set_t;

/* Appends the measured rows of a results file: check=pass rows and the reference floors
 * (noop, ping: check=skip with statistics). Transport from env (NCCL_P2P_DISABLE=1: SHM).
 * Rows of op other than allreduce, dtype other than bf16 and unmodeled families are
 * left out. */
arb_status_t arb_obs_load(arb_obs_set_t *s, const char *path, char *err, size_t err_len);
void arb_obs_free(arb_obs_set_t *s);
/* params without the items that do not change the algorithm (nccl=, timeout_ms=,
 * row_blocks=auto), for grouping rows of several runs. */
void arb_model_params_key(const char *params, char *out, size_t len);

arb_status_t arb_fit_write(const arb_fit_t *fit, const char *path, char *err, size_t err_len);
arb_status_t arb_fit_read(const char *path, arb_fit_t *fit, char *err, size_t err_len);
/* Frees the entries of a fit (read or fitted) and zeroes it. */
void arb_fit_free(arb_fit_t *fit);

#endif
