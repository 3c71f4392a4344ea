/* SPDX-License-Identifier: MIT */
/* The floors of this run: each result is read as a ratio to the tightest floor measured
 * at its size and mode, the highest reference median (role.h: a cross-GPU flag round trip
 * over a bare launch). */
#include <stdio.h>

#include "results/role.h"
#include "sweep/sweep_priv.h"

void sweep_floor_record(sweep_t *s, const char *impl, size_t si, arb_mode_t mode, double median)
{
    if (arb_floor_raise(&s->floor[si][mode], median))
        snprintf(s->floor_name[si][mode], sizeof s->floor_name[si][mode], " %s", impl);
}

double sweep_floor_ratio(const sweep_t *s, size_t bytes, arb_mode_t mode, double median, const char **name)
{
    double ratio = 0;
    for (size_t si = 0; si < s->plan->nsizes; si++)
        if (s->plan->sizes[si] == bytes && s->floor[si][mode] > 0) {
            ratio = arb_ratio(median, s->floor[si][mode]);
            *name = s->floor_name[si][mode];
        }
    return ratio;
}
