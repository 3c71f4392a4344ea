/* SPDX-License-Identifier: MIT */
/* Fitting the cost model's constants on measured runs (model_fit.c, docs/model.md "Fit"). */
#ifndef ARB_MODEL_FIT_H
#define ARB_MODEL_FIT_H

#include "arbench/status.h"
#include "costmodel/model_cost.h"
#include "costmodel/model_io.h"

/* Fits launch and flag latencies and every variant's constants on fab (the machine the
 * observations come from). Only sizes in [min_bytes, max_bytes] are used. Returns 0,
 * or -1 with err (no noop/ping rows, fewer than 2 sizes for a variant, ...). */
arb_status_t arb_model_fit(const arb_obs_set_t *obs, const arb_fabric_t *fab, double min_bytes, double max_bytes,
                           arb_fit_t *fit, char *err, size_t err_len);
/* The entry for (impl, params key, mode, transport), or NULL. */
const arb_fit_entry_t *arb_fit_find(const arb_fit_t *fit, const char *impl, const char *params_key, const char *mode,
                                    arb_transport_t transport);

#endif
