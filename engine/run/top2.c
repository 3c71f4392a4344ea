/* SPDX-License-Identifier: MIT */
/* Top-two logits over vocabulary shards: local scan, merge, MPI gather. */
#include "run/top2.h"

#include <math.h>
#include <stdlib.h>

/* a before b: larger value, or equal value and lower index. */
static int better(float va, int32_t ia, float vb, int32_t ib)
{
    return ia >= 0 && (ib < 0 || va > vb || (va == vb && ia < ib));
}

static void offer(arb_top2_t *t, float v, int32_t i)
{
    if (isnan(v) || i < 0 || i == t->i1 || i == t->i2)
        return;
    if (better(v, i, t->v1, t->i1)) {
        t->v2 = t->v1, t->i2 = t->i1;
        t->v1 = v, t->i1 = i;
    } else if (better(v, i, t->v2, t->i2)) {
        t->v2 = v, t->i2 = i;
    }
}

static arb_top2_t empty(void) { return (arb_top2_t){-INFINITY, -INFINITY, -1, -1}; }

arb_top2_t arb_top2_local(const float *logits, size_t n, int32_t base)
{
    arb_top2_t t = empty();
    for (size_t j = 0; j < n; j++)
        offer(&t, logits[j], base + (int32_t)j);
    return t;
}

arb_top2_t arb_top2_merge(const arb_top2_t *parts, size_t nparts)
{
    arb_top2_t t = empty();
    for (size_t p = 0; p < nparts; p++) {
        offer(&t, parts[p].v1, parts[p].i1);
        offer(&t, parts[p].v2, parts[p].i2);
    }
    return t;
}

int arb_top2_allreduce(arb_mpi_t *m, const arb_top2_t *mine, arb_top2_t *out, unsigned T)
{
    size_t n = (size_t)m->nranks * T;
    arb_top2_t *all = malloc(n * sizeof *all);
    if (!all)
        return -1;
    /* plain structs of two floats and two int32: gathered as bytes */
    int rc = MPI_Allgather(mine, (int)(T * sizeof *mine), MPI_BYTE, all, (int)(T * sizeof *mine), MPI_BYTE, m->world);
    arb_top2_t *parts = malloc((size_t)m->nranks * sizeof *parts);
    if (rc == MPI_SUCCESS && parts)
        for (unsigned t = 0; t < T; t++) {
            for (int r = 0; r < m->nranks; r++)
                parts[r] = all[(size_t)r * T + t];
            out[t] = arb_top2_merge(parts, (size_t)m->nranks);
        }
    int bad = rc != MPI_SUCCESS || !parts;
    free(parts);
    free(all);
    return bad ? -1 : 0;
}
