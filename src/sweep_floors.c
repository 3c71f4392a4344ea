/* SPDX-License-Identifier: MIT */
/* The floors of this run: each result is read as a ratio to the cheapest collective
 * measured at its size and mode (ping, which moves a flag between GPUs, preferred over
 * noop, which moves nothing). */
#include <string.h>

#include "sweep_priv.h"

void sweep_floor_record(sweep_t *s, const char *impl, size_t si, arb_mode_t mode, double median)
{
    int is_ping = !strcmp(impl, "ping");
    if (is_ping || !s->floor_is_ping[si][mode]) {
        s->floor[si][mode] = median;
        s->floor_is_ping[si][mode] = is_ping;
    }
}

double sweep_floor_ratio(const sweep_t *s, size_t bytes, arb_mode_t mode, double median, const char **name)
{
    double ratio = 0;
    for (size_t si = 0; si < s->plan->nsizes; si++)
        if (s->plan->sizes[si] == bytes && s->floor[si][mode] > 0) {
            ratio = median / s->floor[si][mode];
            *name = s->floor_is_ping[si][mode] ? " ping" : " noop";
        }
    return ratio;
}
