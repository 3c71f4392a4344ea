/* SPDX-License-Identifier: MIT */
/*
 * What a row is for, from its plugin's capabilities, and the floors and ratios every
 * consumer (the sweep's table and summary, profile, gate, plots) reads results against.
 * Consumers compare roles, never implementation names.
 */
#ifndef ARB_ROLE_H
#define ARB_ROLE_H

#include <stddef.h>
#include <stdint.h>

typedef enum arb_role {
    ARB_ROLE_CANDIDATE = 0, /* an implementation being measured */
    ARB_ROLE_BASELINE,      /* ARB_CAP_BASELINE: what candidates are measured against (NCCL) */
    ARB_ROLE_REFERENCE,     /* ARB_CAP_REFERENCE: a floor (no payload, not checked) */
    ARB_ROLE_COUNT
} arb_role_t;

/* Reference wins over baseline when a plugin claims both. */
arb_role_t arb_role_of_caps(uint32_t caps);
const char *arb_role_name(arb_role_t r); /* "candidate", "baseline", "reference" */
/* 0 and *out set when s is one of those names, else -1. */
int arb_role_parse(const char *s, arb_role_t *out);
/* Rows written before the `role` column existed (schema 1 files up to 2026-12): the
 * sweep then marked ARB_CAP_REFERENCE rows with the note "reference floor: ...", and the
 * only ARB_CAP_BASELINE plugin was `nccl`. The one place a name decides a role. */
arb_role_t arb_role_of_legacy_row(const char *impl, const char *note);

/* The references measured at one point (one fabric, ranks, op, fusion, dtype, mode and
 * size): the floor is the highest reference median, the tightest lower bound (a cross-GPU
 * flag round trip over a bare launch); the baseline is its fastest passing variant. */
typedef struct arb_refs {
    double floor_us;     /* 0: no reference measured */
    const char *floor_impl;
    double baseline_us;  /* 0: no passing baseline */
    const char *baseline_impl, *baseline_params;
} arb_refs_t;

/* Adds one row's median (us; ignored unless > 0): reference rows raise the floor,
 * passing baseline rows lower the baseline. Strings are borrowed. */
void arb_refs_add(arb_refs_t *r, arb_role_t role, int pass, double median_us, const char *impl,
                  const char *params);
/* The floor rule alone, for a consumer that keeps its own floors (the sweep's table): 1
 * and *floor_us = median_us when this reference median is a tighter floor. */
int arb_floor_raise(double *floor_us, double median_us);
/* median / reference, NAN when the reference is absent (<= 0) or the median is not > 0. */
double arb_ratio(double median_us, double ref_us);

#endif
