/* SPDX-License-Identifier: MIT */
/* The timeline's launch numbers from the CTAs' ordinals (kernels/timeline.h,
 * arb_tl_number_launches): plain C, tested without a GPU (tests/engine/gpu/test_engine_gpu_timeline.c). */
#include <stdio.h>
#include <stdlib.h>

#include "gpu/kernels/timeline.h"

static const arb_tl_rec_t *g_sort_recs; /* qsort has no context argument in C99 */

static int by_tag_ordinal(const void *a, const void *b)
{
    const arb_tl_rec_t *x = g_sort_recs + *(const size_t *)a, *y = g_sort_recs + *(const size_t *)b;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    return x->launch < y->launch ? -1 : x->launch > y->launch;
}

int arb_tl_number_launches(arb_tl_rec_t *r, size_t n, char *why, size_t why_len)
{
    if (!n)
        return 0;
    size_t *ix = malloc(n * sizeof *ix);
    uint32_t *num = malloc(n * sizeof *num);
    if (!ix || !num) {
        free(ix), free(num);
        snprintf(why, why_len, "timeline: no host memory to number %zu records", n);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        ix[i] = i;
    g_sort_recs = r;
    qsort(ix, n, sizeof *ix, by_tag_ordinal);
    int rc = 0;
    uint32_t launch = 0;
    uint64_t end = 0; /* one past the current launch's last ordinal */
    for (size_t k = 0; k < n && !rc; k++) {
        const arb_tl_rec_t *x = r + ix[k], *prev = k ? r + ix[k - 1] : NULL;
        if (!x->grid || x->block >= x->grid) {
            snprintf(why, why_len, "timeline: record %zu (tag %s) has block %u of a grid of %u", ix[k],
                     arb_tl_tag_name(x->tag), x->block, x->grid);
            rc = -1;
        } else if (prev && prev->tag == x->tag && prev->launch == x->launch) {
            snprintf(why, why_len, "timeline: CTA ordinal %u of tag %s recorded twice", x->launch,
                     arb_tl_tag_name(x->tag));
            rc = -1;
        } else if (!prev || prev->tag != x->tag) { /* a tag's first launch */
            launch = 0, end = (uint64_t)x->launch + x->grid;
        } else if (x->launch >= end) {
            launch++, end = (uint64_t)x->launch + x->grid;
        } else if (x->grid != prev->grid) {
            snprintf(why, why_len, "timeline: tag %s's CTA ordinal %u has a grid of %u inside a launch of %u",
                     arb_tl_tag_name(x->tag), x->launch, x->grid, prev->grid);
            rc = -1;
        }
        num[ix[k]] = launch;
    }
    if (!rc)
        for (size_t i = 0; i < n; i++)
            r[i].launch = num[i];
    free(ix), free(num);
    return rc;
}
