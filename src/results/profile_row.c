/* SPDX-License-Identifier: MIT */
#include "results/profile_row.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/role.h"

/* 1 when s (non-NULL, non-empty) is wholly a finite number, stored in *v. */
static int number(const char *s, double *v)
{
    if (!s || !*s || *s == ' ')
        return 0;
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return !*end && errno != ERANGE && isfinite(*v);
}

/* 1 when s is wholly a decimal integer. */
static int integer(const char *s, unsigned long long *v)
{
    if (!s || *s < '0' || *s > '9')
        return 0;
    char *end;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return !*end && errno != ERANGE;
}

const char *arb_profile_row_check(const arb_profile_row_t *r, char *why, size_t why_len)
{
    unsigned long long lo, hi, rep, pts;
    if (r->rep_bytes && *r->rep_bytes && integer(r->min_bytes, &lo) && integer(r->max_bytes, &hi)) {
        if (!integer(r->rep_bytes, &rep) || rep < lo || rep > hi) {
            snprintf(why, why_len, "rep_bytes '%.40s' is not a size within [%llu, %llu]", r->rep_bytes, lo, hi);
            return "rep_bytes";
        }
    }
    if (r->points && *r->points && (!integer(r->points, &pts) || pts == 0)) {
        snprintf(why, why_len, "points '%.40s' is not a count >= 1", r->points);
        return "points";
    }
    double m = NAN, b = NAN, s = NAN;
    if (r->median_us && *r->median_us && (!number(r->median_us, &m) || !(m > 0))) {
        snprintf(why, why_len, "median_us '%.40s' is not a positive number of microseconds", r->median_us);
        return "median_us";
    }
    if (r->baseline_median_us && *r->baseline_median_us && (!number(r->baseline_median_us, &b) || !(b > 0))) {
        snprintf(why, why_len, "baseline_median_us '%.40s' is not a positive number of microseconds", r->baseline_median_us);
        return "baseline_median_us";
    }
    if (r->speedup && *r->speedup && (!number(r->speedup, &s) || !(s > 0))) {
        snprintf(why, why_len, "speedup '%.40s' is not a positive ratio", r->speedup);
        return "speedup";
    }
    if (r->speedup && r->baseline_median_us && isnan(s) != isnan(b)) {
        snprintf(why, why_len, "speedup '%.20s' and baseline_median_us '%.20s': one is given without the other", r->speedup, r->baseline_median_us);
        return "speedup";
    }
    if (!isnan(s) && !isnan(b) && !isnan(m)) {
        /* Rounding: each median to 0.0005 us, the speedup to 0.00005. */
        double want = b / m, tol = 0.00006 + want * (0.0006 / b + 0.0006 / m);
        if (fabs(s - want) > tol) {
            snprintf(why, why_len, "speedup %.4f, but baseline_median_us / median_us = %.3f / %.3f = %.4f", s, b, m, want);
            return "speedup";
        }
    }
    arb_role_t role;
    if (r->role && *r->role && (arb_role_parse(r->role, &role) || role == ARB_ROLE_REFERENCE)) {
        snprintf(why, why_len, "role '%.40s', expected baseline or candidate (a floor is never chosen)", r->role);
        return "role";
    }
    return NULL;
}
