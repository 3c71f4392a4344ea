/* SPDX-License-Identifier: MIT */
/*
 * The two largest logits of a token over the vocabulary shards of all ranks, for the
 * A/B agreement's margin (engine/stats/ab.h): each rank finds the top two of its shard, then
 * the ranks' pairs are combined. Ties go to the lower global index, as in the greedy
 * argmax (MPI_MAXLOC's rule); NaN logits are never chosen.
 */
#ifndef ARB_ENGINE_TOP2_H
#define ARB_ENGINE_TOP2_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/hostops.h"

typedef struct arb_top2 {
    float v1, v2;   /* largest and second largest logit; -INFINITY when absent */
    int32_t i1, i2; /* their global indices; -1 when absent */
} arb_top2_t;

/* The top two of logits[0..n) whose global indices start at `base`. */
arb_top2_t arb_top2_local(const float *logits, size_t n, int32_t base);
/* The top two of the union of parts[0..nparts). */
arb_top2_t arb_top2_merge(const arb_top2_t *parts, size_t nparts);
/* Collective over m->world: every rank gets the merged top two of each of T tokens. */
int arb_top2_allreduce(arb_mpi_t *m, const arb_top2_t *mine, arb_top2_t *out, unsigned T);

#endif
