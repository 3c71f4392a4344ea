/* SPDX-License-Identifier: MIT */
/* Group-limited top-k routing (engine/model/router.h). */
#include "model/router.h"

/* a beats b: larger value, or equal and lower index. */
static int better(double va, unsigned a, double vb, unsigned b)
{
    return va > vb || (va == vb && a < b);
}

int arb_route(const arb_router_cfg_t *rc, const float *scores, const float *bias, unsigned *idx, double *weight)
{
    unsigned E = rc->experts, G = rc->n_group ? rc->n_group : 1;
    if (E == 0 || E > ARB_ROUTER_MAX_EXPERTS || rc->topk == 0 || rc->topk > ARB_ROUTER_MAX_TOPK || E % G ||
        rc->topk_group == 0 || rc->topk_group > G)
        return -1;
    unsigned per = E / G;
    double choice[ARB_ROUTER_MAX_EXPERTS];
    int allowed[ARB_ROUTER_MAX_EXPERTS];
    for (unsigned e = 0; e < E; e++) {
        choice[e] = (double)scores[e] + (double)bias[e];
        allowed[e] = 1;
    }
    if (G > 1) {
        if (per < 2)
            return -1;
        double gscore[ARB_ROUTER_MAX_EXPERTS];
        for (unsigned g = 0; g < G; g++) {
            /* the two largest choice values of the group */
            double b1 = -1e300, b2 = -1e300;
            for (unsigned e = g * per; e < (g + 1) * per; e++) {
                if (choice[e] > b1) {
                    b2 = b1;
                    b1 = choice[e];
                } else if (choice[e] > b2) {
                    b2 = choice[e];
                }
            }
            gscore[g] = b1 + b2;
        }
        int keep[ARB_ROUTER_MAX_EXPERTS] = {0};
        for (unsigned n = 0; n < rc->topk_group; n++) {
            int best = -1;
            for (unsigned g = 0; g < G; g++)
                if (!keep[g] && (best < 0 || better(gscore[g], g, gscore[best], (unsigned)best)))
                    best = (int)g;
            keep[best] = 1;
        }
        for (unsigned e = 0; e < E; e++)
            allowed[e] = keep[e / per];
    }
    unsigned navail = 0;
    for (unsigned e = 0; e < E; e++)
        navail += (unsigned)allowed[e];
    if (rc->topk > navail)
        return -1;
    double sum = 0;
    for (unsigned j = 0; j < rc->topk; j++) {
        int best = -1;
        for (unsigned e = 0; e < E; e++)
            if (allowed[e] && (best < 0 || better(choice[e], e, choice[best], (unsigned)best)))
                best = (int)e;
        allowed[best] = 0;
        idx[j] = (unsigned)best;
        sum += scores[best];
    }
    for (unsigned j = 0; j < rc->topk; j++) {
        double s = scores[idx[j]];
        weight[j] = (rc->norm_topk_prob ? s / sum : s) * rc->routed_scaling_factor;
    }
    return 0;
}
