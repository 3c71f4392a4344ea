/* SPDX-License-Identifier: MIT */
/* A predicted figure with its band: central value v, lowest lo, highest hi (same unit). */
#ifndef ARB_MODEL_BAND_H
#define ARB_MODEL_BAND_H

typedef struct arb_e2e_band {
    double v, lo, hi;
} arb_e2e_band_t;

#endif
