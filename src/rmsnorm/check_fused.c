/* SPDX-License-Identifier: MIT */
#include "rmsnorm/check_fused.h"

#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "rmsnorm/rmsnorm.h"

/* Seeds: x from (salt, k, rank), the residual from (salt, k, -1), the weight from (salt, 99, -3). */
static uint64_t seed_of(unsigned salt, unsigned k, int who)
{
    return ((uint64_t)salt << 32) ^ ((uint64_t)k << 16) ^ (uint64_t)(who + 7);
}

void arb_fused_fill_x(uint16_t *x, size_t n, unsigned salt, unsigned k, int rank)
{
    arb_fill_bf16_exact_partials(x, n, seed_of(salt, k, rank));
}

void arb_fused_fill_residual(uint16_t *res, size_t n, unsigned salt, unsigned k)
{
    arb_fill_bf16_random(res, n, seed_of(salt, k, -1), 1.0f);
}

void arb_fused_fill_weight(uint16_t *w, unsigned hidden, unsigned salt)
{
    arb_fill_bf16_random(w, hidden, seed_of(salt, 99, -3), 1.0f);
}

void arb_fused_check_free(arb_fused_check_t *c)
{
    if (c->xs)
        for (int q = 0; q < c->nranks; q++)
            free(c->xs[q]);
    free(c->xs);
    free(c->res_in);
    free(c->w);
    free(c->ref_res);
    free(c->ref_out);
    memset(c, 0, sizeof *c);
}

arb_status_t arb_fused_check_init(arb_fused_check_t *c, int nranks, unsigned tokens, unsigned hidden, float eps,
                                  char *why, size_t why_len)
{
    size_t n = (size_t)tokens * hidden;
    memset(c, 0, sizeof *c);
    c->nranks = nranks;
    c->tokens = tokens;
    c->hidden = hidden;
    c->eps = eps;
    c->xs = calloc((size_t)nranks, sizeof *c->xs);
    c->res_in = malloc(n * 2);
    c->w = malloc((size_t)hidden * 2);
    c->ref_res = malloc(n * sizeof(double));
    c->ref_out = malloc(n * sizeof(double));
    int bad = !c->xs || !c->res_in || !c->w || !c->ref_res || !c->ref_out;
    for (int q = 0; !bad && q < nranks; q++)
        bad = !(c->xs[q] = malloc(n * 2));
    if (bad) {
        arb_fused_check_free(c);
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory for the fused check (%u x %u on %d ranks)", tokens, hidden, nranks);
    }
    return ARB_OK;
}

static unsigned long long fnv(const void *p, size_t n, unsigned long long h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

unsigned long long arb_fused_check_slot(arb_fused_check_t *c, unsigned salt, unsigned k, const uint16_t *got_res,
                                        const uint16_t *got_out, unsigned long long *hash)
{
    size_t n = (size_t)c->tokens * c->hidden;
    arb_fused_fill_weight(c->w, c->hidden, salt);
    for (int q = 0; q < c->nranks; q++)
        arb_fused_fill_x(c->xs[q], n, salt, k, q);
    arb_fused_fill_residual(c->res_in, n, salt, k);
    arb_rmsnorm_reference((const uint16_t *const *)c->xs, c->nranks, c->res_in, c->w, c->tokens, c->hidden, c->eps,
                          c->ref_res, c->ref_out);
    unsigned long long wrong = arb_rmsnorm_count_wrong(got_res, c->ref_res, n, ARB_RMSNORM_RTOL);
    wrong += arb_rmsnorm_count_wrong(got_out, c->ref_out, n, ARB_RMSNORM_RTOL);
    *hash = fnv(got_res, n * 2, *hash ? *hash : 1469598103934665603ull);
    *hash = fnv(got_out, n * 2, *hash);
    return wrong;
}
