/* SPDX-License-Identifier: MIT */
#include "analysis_opts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int analysis_opt_number(const char *cmd, const char *name, const char *s, double lo, double hi,
                        double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "arbench %s: %s '%s': expected a number in [%g, %g]\n", cmd, name, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int analysis_opt_bootstrap(const char *cmd, int c, const char *arg, double *alpha, unsigned *reps,
                           uint64_t *seed)
{
    double v;
    switch (c) {
    case 'a': return analysis_opt_number(cmd, "--alpha", arg, 1e-6, 0.5, alpha);
    case 'r':
        if (analysis_opt_number(cmd, "--reps", arg, 100, 1e6, &v))
            return -1;
        *reps = (unsigned)v;
        return 0;
    case 's':
        if (analysis_opt_number(cmd, "--seed", arg, 0, 9007199254740992.0, &v))
            return -1;
        *seed = (uint64_t)v;
        return 0;
    default: return -1;
    }
}

int analysis_opt_list(char *s, const char **v, size_t cap)
{
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n + 1 >= cap)
            return -1;
        v[n++] = t;
    }
    v[n] = NULL;
    return 0;
}

int analysis_load(const char *cmd, arb_pointset_t *ps, const char *path)
{
    char err[1024];
    if (arb_points_load(ps, path, err, sizeof err)) {
        fprintf(stderr, "arbench %s: %s\n", cmd, err);
        return -1;
    }
    return 0;
}
