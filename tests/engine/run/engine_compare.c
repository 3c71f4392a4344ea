/* SPDX-License-Identifier: MIT */
/*
 * Compares two `arbench engine --dump-logits` files (one line of full-vocabulary fp32
 * logits per decode step): same number of steps and entries, every |a - b| within
 * ARB_ENGINE_LOGIT_TOL (engine/run/run_state.h, where the bound is argued), or within the
 * tolerance given as a third argument. Prints the largest difference.
 * usage: engine_compare A B [TOL]       exit 0 agree, 1 differ, 2 bad input
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "run/run_state.h"

static double *read_all(const char *path, size_t *n, size_t *lines)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 1024;
    double *v = malloc(cap * sizeof *v);
    *n = 0, *lines = 0;
    int c, prev = '\n';
    double x;
    while (v && (c = fgetc(f)) != EOF) {
        if (c == '\n')
            (*lines)++;
        else if (c != ' ') {
            ungetc(c, f);
            if (fscanf(f, "%lf", &x) != 1)
                break;
            if (*n == cap) {
                double *nv = realloc(v, (cap *= 2) * sizeof *v);
                if (!nv)
                    break;
                v = nv;
            }
            v[(*n)++] = x;
        }
        prev = c;
    }
    (void)prev;
    fclose(f);
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: engine_compare A B [TOL]\n");
        return 2;
    }
    double tol = argc > 3 ? atof(argv[3]) : ARB_ENGINE_LOGIT_TOL;
    size_t na, nb, la, lb;
    double *a = read_all(argv[1], &na, &la), *b = read_all(argv[2], &nb, &lb);
    if (!a || !b || na == 0 || na != nb || la != lb) {
        fprintf(stderr, "engine_compare: %s (%zu values, %zu lines) and %s (%zu values, %zu lines) do not match\n",
                argv[1], a ? na : 0, a ? la : 0, argv[2], b ? nb : 0, b ? lb : 0);
        return 2;
    }
    double mx = 0;
    size_t at = 0;
    for (size_t i = 0; i < na; i++) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= mx)) /* NaN counts as the largest */
            mx = isnan(d) ? INFINITY : d, at = i;
    }
    printf("max |logit difference| %.6f at step %zu entry %zu over %zu logits of %zu steps (tolerance %.3f)\n", mx,
           at / (na / la), at % (na / la), na, la, tol);
    free(a), free(b);
    return mx <= tol ? 0 : 1;
}
