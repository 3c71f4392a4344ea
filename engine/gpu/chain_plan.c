/* SPDX-License-Identifier: MIT */
/* The chain profile's plan (chain_plan.h). */
#include "gpu/chain_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The window [first, last]'s index, added when new. */
static unsigned var_of(arb_chain_plan_t *p, unsigned first, unsigned last)
{
    for (unsigned i = 0; i < p->nvar; i++)
        if (p->var[i].first == first && p->var[i].last == last)
            return i;
    p->var[p->nvar] = (arb_chain_var_t){first, last};
    return p->nvar++;
}

/* Segments of marks lo .. hi (inclusive) in windows starting at `first`, the one before lo
 * the base. */
static void add_run(arb_chain_plan_t *p, const int *kinds, unsigned first, unsigned lo, unsigned hi, int layer,
                    double weight)
{
    unsigned base = lo > first ? var_of(p, first, lo - 1) : ARB_CHAIN_NO_VAR;
    for (unsigned j = lo; j <= hi; j++) {
        const unsigned v = var_of(p, first, j);
        p->seg[p->nseg++] = (arb_chain_seg_t){v, base, kinds[j], layer, weight};
        base = v;
    }
}

arb_status_t arb_chain_plan_build(const int *kinds, unsigned nmarks, const int *dense, unsigned nlayers, int head_kind,
                                  int end_kind, unsigned lead, arb_chain_plan_t *p, char *why, size_t why_len)
{
    memset(p, 0, sizeof *p);
    if (nmarks == 0 || nlayers == 0 || lead == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "chain plan: %u marks, %u layers, lead %u (need at least 1 each)",
                  nmarks, nlayers, lead);
    unsigned ends = 0, head = 0;
    while (head < nmarks && kinds[head] == head_kind)
        head++;
    for (unsigned j = 0; j < nmarks; j++)
        ends += kinds[j] == end_kind;
    if (ends != nlayers)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "chain plan: %u layer-end marks (kind %d) for %u layers", ends,
                  end_kind, nlayers);
    /* b[l], e[l]: layer l's first and last mark */
    unsigned *b = malloc(sizeof(unsigned) * 2 * nlayers), *e = b ? b + nlayers : NULL;
    if (!b)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "chain plan: out of host memory");
    for (unsigned j = 0, l = 0, start = head; j < nmarks && l < nlayers; j++)
        if (kinds[j] == end_kind) {
            b[l] = start, e[l] = j, start = j + 1;
            if (b[l] == e[l]) {
                free(b);
                ARB_RAISE(ARB_ERR_INVALID, why, why_len, "chain plan: layer %u has no mark before its end (mark %u)", l,
                          j);
            }
            l++;
        }
    unsigned nd = 0, nm = 0, last_dense = 0;
    for (unsigned l = 0; l < nlayers; l++) {
        if (dense[l])
            nd++, last_dense = l;
    }
    nm = nlayers - nd;
    /* the measured layers, ascending; each with its class's weight */
    unsigned moe_pick[2], npick = 0;
    if (nm) {
        const unsigned want[2] = {nm / 3, 2 * nm / 3};
        for (unsigned w = 0; w < 2; w++) {
            if (w == 1 && want[1] == want[0])
                break;
            for (unsigned l = 0, i = 0; l < nlayers; l++)
                if (!dense[l] && i++ == want[w])
                    moe_pick[npick++] = l;
        }
    }
    if (nd)
        p->measured[p->nmeasured++] = last_dense;
    for (unsigned i = 0; i < npick; i++)
        p->measured[p->nmeasured++] = moe_pick[i];
    for (unsigned i = 1; i < p->nmeasured; i++) /* at most three: insertion */
        for (unsigned k = i; k > 0 && p->measured[k - 1] > p->measured[k]; k--) {
            const unsigned x = p->measured[k];
            p->measured[k] = p->measured[k - 1], p->measured[k - 1] = x;
        }
    p->tail = e[nlayers - 1] + 1 < nmarks;
    /* at most one window and one segment per mark measured, and the bases */
    const size_t cap = (size_t)nmarks + 2 * ARB_CHAIN_MAX_MEASURED + 2;
    p->var = malloc(sizeof *p->var * cap);
    p->seg = malloc(sizeof *p->seg * cap);
    if (!p->var || !p->seg) {
        free(b);
        arb_chain_plan_free(p);
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "chain plan: out of host memory");
    }
    for (unsigned i = 0; i < p->nmeasured; i++) {
        const unsigned l = p->measured[i];
        const unsigned first = l >= lead ? b[l - lead] : 0;
        /* one dense layer stands for the dense ones, each MoE layer measured for nm / npick */
        add_run(p, kinds, first, b[l], e[l], (int)l, dense[l] ? (double)nd : (double)nm / npick);
    }
    if (p->tail) {
        add_run(p, kinds, nlayers >= lead ? b[nlayers - lead] : 0, e[nlayers - 1] + 1, nmarks - 1, -1, 1.0);
    }
    free(b);
    return ARB_OK;
}

void arb_chain_plan_eval(const arb_chain_plan_t *p, const double *t, double *us, unsigned nkinds, double *layer_us)
{
    for (unsigned k = 0; k < nkinds; k++)
        us[k] = NAN;
    for (unsigned i = 0; i < p->nmeasured; i++)
        layer_us[i] = 0;
    for (unsigned s = 0; s < p->nseg; s++) {
        const arb_chain_seg_t *g = &p->seg[s];
        const double d = t[g->var] - (g->base == ARB_CHAIN_NO_VAR ? 0.0 : t[g->base]);
        if (g->kind >= 0 && (unsigned)g->kind < nkinds)
            us[g->kind] = (isnan(us[g->kind]) ? 0.0 : us[g->kind]) + g->weight * d;
        for (unsigned i = 0; i < p->nmeasured; i++)
            if (g->layer == (int)p->measured[i])
                layer_us[i] += d;
    }
}

void arb_chain_plan_free(arb_chain_plan_t *p)
{
    free(p->var), free(p->seg);
    p->var = NULL, p->seg = NULL;
    p->nvar = p->nseg = 0;
}
