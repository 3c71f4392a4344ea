/* SPDX-License-Identifier: MIT */
#include "results/role.h"

#include <math.h>
#include <string.h>

#include <arbench/plugin.h>

static const char *const role_names[ARB_ROLE_COUNT] = {
    [ARB_ROLE_CANDIDATE] = "candidate", [ARB_ROLE_BASELINE] = "baseline", [ARB_ROLE_REFERENCE] = "reference"};

arb_role_t arb_role_of_caps(uint32_t caps)
{
    if (caps & ARB_CAP_REFERENCE)
        return ARB_ROLE_REFERENCE;
    return caps & ARB_CAP_BASELINE ? ARB_ROLE_BASELINE : ARB_ROLE_CANDIDATE;
}

const char *arb_role_name(arb_role_t r) { return r < ARB_ROLE_COUNT ? role_names[r] : "?"; }

int arb_role_parse(const char *s, arb_role_t *out)
{
    for (int r = 0; r < ARB_ROLE_COUNT; r++)
        if (s && strcmp(s, role_names[r]) == 0) {
            *out = (arb_role_t)r;
            return 0;
        }
    return -1;
}

arb_role_t arb_role_of_legacy_row(const char *impl, const char *note)
{
    if (note && strncmp(note, "reference floor", 15) == 0)
        return ARB_ROLE_REFERENCE;
    return impl && strcmp(impl, "nccl") == 0 ? ARB_ROLE_BASELINE : ARB_ROLE_CANDIDATE;
}

void arb_refs_add(arb_refs_t *r, arb_role_t role, int pass, double median_us, const char *impl,
                  const char *params)
{
    if (!(median_us > 0))
        return;
    if (role == ARB_ROLE_REFERENCE) {
        if (arb_floor_raise(&r->floor_us, median_us))
            r->floor_impl = impl;
    } else if (role == ARB_ROLE_BASELINE && pass && (!r->baseline_us || median_us < r->baseline_us)) {
        r->baseline_us = median_us;
        r->baseline_impl = impl;
        r->baseline_params = params;
    }
}

int arb_floor_raise(double *floor_us, double median_us)
{
    if (!(median_us > *floor_us))
        return 0;
    *floor_us = median_us;
    return 1;
}

double arb_ratio(double median_us, double ref_us)
{
    return ref_us > 0 && median_us > 0 ? median_us / ref_us : NAN;
}
