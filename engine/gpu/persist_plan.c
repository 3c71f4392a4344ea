/* SPDX-License-Identifier: MIT */
/* The persistent form's instruction lists (persist_plan.h). */
#include "gpu/persist_plan.h"

#include <stdlib.h>
#include <string.h>

arb_status_t arb_persist_plan_build(const unsigned *tiles, unsigned nstages, unsigned nctas, arb_persist_plan_t *p,
                                    char *why, size_t why_len)
{
    memset(p, 0, sizeof *p);
    if (nstages == 0 || nstages > ARB_PERSIST_MAX_STAGES)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "persistent plan: %u stages, expected 1 .. %u", nstages,
                  ARB_PERSIST_MAX_STAGES);
    if (nctas == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "persistent plan: no CTAs to run on");
    size_t total = 0;
    for (unsigned s = 0; s < nstages; s++) {
        if (tiles[s] == 0 || tiles[s] >= ARB_PERSIST_MAX_TILES)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "persistent plan: stage %u has %u tiles, expected 1 .. %u", s,
                      tiles[s], ARB_PERSIST_MAX_TILES - 1);
        total += tiles[s];
    }
    p->nstages = nstages, p->nctas = nctas;
    memcpy(p->tiles, tiles, nstages * sizeof *tiles);
    p->off = calloc((size_t)nctas + 1, sizeof *p->off);
    p->ent = malloc(total * sizeof *p->ent);
    unsigned *first = malloc((size_t)nstages * sizeof *first);
    if (!p->off || !p->ent || !first) {
        free(first);
        arb_persist_plan_free(p);
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "persistent plan: out of host memory for %zu entries", total);
    }
    /* stage s starts at CTA first[s]; count each CTA's entries, then place them */
    unsigned start = 0;
    for (unsigned s = 0; s < nstages; s++) {
        first[s] = start;
        for (unsigned j = 0; j < tiles[s]; j++)
            p->off[(start + j) % nctas + 1]++;
        start = (unsigned)((start + tiles[s]) % nctas);
    }
    for (unsigned c = 0; c < nctas; c++)
        p->off[c + 1] += p->off[c];
    uint32_t *fill = malloc((size_t)nctas * sizeof *fill);
    if (!fill) {
        free(first);
        arb_persist_plan_free(p);
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "persistent plan: out of host memory for %u CTAs", nctas);
    }
    memcpy(fill, p->off, (size_t)nctas * sizeof *fill);
    for (unsigned s = 0; s < nstages; s++) /* in stage order, so each list ascends by stage */
        for (unsigned j = 0; j < tiles[s]; j++)
            p->ent[fill[(first[s] + j) % nctas]++] = arb_persist_entry(s, j);
    free(fill);
    free(first);
    return ARB_OK;
}

arb_status_t arb_persist_plan_check(const arb_persist_plan_t *p, char *why, size_t why_len)
{
    if (!p->off || !p->ent || p->nctas == 0 || p->nstages == 0 || p->nstages > ARB_PERSIST_MAX_STAGES)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "persistent plan: empty or not built");
    size_t total = 0;
    for (unsigned s = 0; s < p->nstages; s++)
        total += p->tiles[s];
    if (p->off[0] != 0 || p->off[p->nctas] != total)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "persistent plan: offsets span %u .. %u, expected 0 .. %zu", p->off[0],
                  p->off[p->nctas], total);
    size_t base[ARB_PERSIST_MAX_STAGES + 1] = {0};
    for (unsigned s = 0; s < p->nstages; s++)
        base[s + 1] = base[s] + p->tiles[s];
    unsigned char *seen = calloc(total ? total : 1, 1);
    if (!seen)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "persistent plan: out of host memory");
    arb_status_t rs = ARB_OK;
    for (unsigned c = 0; c < p->nctas && rs == ARB_OK; c++) {
        if (p->off[c + 1] < p->off[c]) {
            ARB_RAISE_GOTO(rs, ARB_ERR_INVALID, out, why, why_len, "persistent plan: CTA %u's offsets descend", c);
        }
        unsigned prev = 0;
        for (uint32_t i = p->off[c]; i < p->off[c + 1]; i++) {
            const unsigned s = arb_persist_stage(p->ent[i]), t = arb_persist_tile(p->ent[i]);
            if (s >= p->nstages || t >= p->tiles[s])
                ARB_RAISE_GOTO(rs, ARB_ERR_INVALID, out, why, why_len,
                               "persistent plan: CTA %u entry %u names stage %u tile %u, outside the plan", c,
                               i - p->off[c], s, t);
            if (s < prev)
                ARB_RAISE_GOTO(rs, ARB_ERR_INVALID, out, why, why_len,
                               "persistent plan: CTA %u runs stage %u after stage %u (a wait could close a cycle)", c,
                               s, prev);
            if (seen[base[s] + t]++)
                ARB_RAISE_GOTO(rs, ARB_ERR_INVALID, out, why, why_len, "persistent plan: stage %u tile %u listed twice",
                               s, t);
            prev = s;
        }
    }
out:
    free(seen);
    return rs;
}

void arb_persist_plan_free(arb_persist_plan_t *p)
{
    free(p->off);
    free(p->ent);
    p->off = NULL, p->ent = NULL;
}
