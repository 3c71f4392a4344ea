/* SPDX-License-Identifier: MIT */
/* The cost model's outputs (model_predict.c): predicted results files with bands, a
 * per-size summary, and `model check` of the predictions against measured runs. */
#ifndef ARB_MODEL_PREDICT_H
#define ARB_MODEL_PREDICT_H

#include <stddef.h>
#include <stdio.h>

#include "arbench/status.h"
#include "costmodel/model_cost.h"
#include "costmodel/model_io.h"

/* Writes a results-schema CSV (docs/results.md; source=model, band_lo_us/band_hi_us, check=model)
 * of every fitted variant, every mode and size, plus NCCL's modeled choice, on GPUs
 * 0..n-1 of fab. A variant that cannot run there is a check=skip row saying why. */
arb_status_t arb_model_write_predictions(const arb_fit_t *fit, const char *fit_path, const arb_fabric_t *fit_fab,
                                         const arb_fabric_t *fab, int n, const size_t *sizes, size_t nsizes,
                                         const char *out_path, const char *argv, size_t *nrows, char *err,
                                         size_t err_len);

/* Prints, per size, the fastest predicted variant and NCCL's modeled choice in `mode`. */
void arb_model_print_summary(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const arb_fabric_t *fab, int n,
                             const size_t *sizes, size_t nsizes, const char *mode, FILE *out);

/* The prediction for one configuration on n GPUs of fab: NCCL's own choice (f = ARB_FAM_NCCL_AUTO),
 * an NCCL variant with its hops forced onto `transport`, or another fitted variant (params_key:
 * arb_model_params_key of its params). 0 when no fitted variant matches; p->why_not says when
 * the variant cannot run there. */
int arb_model_predict_point(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const arb_fabric_t *fab, int n,
                            arb_family_t f, const char *impl, const char *params_key, const char *mode,
                            arb_transport_t transport, double bytes, arb_prediction_t *p);

/* Predicts every measured point in [min_bytes, max_bytes] on the fit fabric and prints
 * the error per point (print_points) and per group. *failing_groups: the gated groups
 * (NCCL, one-shots, hoststaged) whose largest |error| exceeds tol. ARB_ERR_INVALID when
 * no point matches a fitted variant. */
arb_status_t arb_model_check(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const arb_obs_set_t *obs,
                             double min_bytes, double max_bytes, double tol, int print_points, FILE *out,
                             int *failing_groups, char *err, size_t err_len);

#endif
