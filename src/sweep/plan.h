/* SPDX-License-Identifier: MIT */
/* The sweep plan: implementations x sizes x modes, identical on every rank. */
#ifndef ARB_PLAN_H
#define ARB_PLAN_H

#include <stddef.h>

#include "arbench/plugin.h"
#include "base/sizes.h"
#include "base/vocab.h" /* arb_mode_t, arb_op_t and their names: every user of the plan needs them */

#define ARB_MAX_IMPLS 128

typedef struct arb_impl_spec {
    char name[64];    /* plugin name or path */
    char params[256]; /* after ':' in --impl; empty: the plugin's own variants */
    int has_params;
} arb_impl_spec_t;

typedef struct arb_plan {
    arb_impl_spec_t impls[ARB_MAX_IMPLS];
    size_t nimpls;
    int impls_default;            /* no --impl given: every implementation that can run */
    size_t sizes[ARB_MAX_SIZES];  /* bytes per rank */
    unsigned tokens[ARB_MAX_SIZES]; /* token count when sizes[i] = tokens * hidden * elt, else 0 */
    size_t nsizes;
    unsigned hidden;
    unsigned modes;               /* bit (1 << arb_mode_t) */
    arb_dtype_t dtype;
    arb_op_t op;
    unsigned iters, warmup;
    unsigned graph_ops;           /* K: calls captured per graph */
    unsigned graph_replays;       /* timed replays in graph and context modes */
    double context_us;            /* compute kernel duration in context mode */
    float eps;                    /* RMSNorm epsilon */
    int check;                    /* 0: --no-check (points recorded as check=skip) */
    char out[4096];
    int append;                   /* --append: add rows to an existing --out file (else refused) */
    int bind;                     /* bind ranks to CPUs near their GPU */
    int host_only;                /* --host: run host backends even where GPUs exist */
} arb_plan_t;

/* Defaults: dense around 42 KB (32K:56K:+2K, which holds 43,008 B = 3 x 7168 x 2) plus
 * token multiples 1,2,3,4,6,8,12,16,24,32,48,64 of hidden 7168, all three modes, bf16. */
void arb_plan_defaults(arb_plan_t *p);

arb_status_t arb_plan_parse_modes(const char *list, unsigned *modes, char *err, size_t err_len);
arb_status_t arb_plan_parse_dtype(const char *s, arb_dtype_t *d, char *err, size_t err_len);
arb_status_t arb_plan_parse_op(const char *s, arb_op_t *op, char *err, size_t err_len);
/* "nccl,p2p:variant=oneshot-push,blocks=8|16|24" -> one spec per implementation and per
 * combination of '|'-separated parameter values (a tuning grid). */
arb_status_t arb_plan_parse_impls(const char *list, arb_plan_t *p, char *err, size_t err_len);
/* Sets sizes from a size list (tokens 0) or from tokens x hidden x element size. */
arb_status_t arb_plan_set_sizes(arb_plan_t *p, const char *list, char *err, size_t err_len);
arb_status_t arb_plan_set_tokens(arb_plan_t *p, const char *list, char *err, size_t err_len);
/* Sorts sizes ascending and checks every size is a whole number of elements. */
arb_status_t arb_plan_finish(arb_plan_t *p, char *err, size_t err_len);

/* Canonical text of the plan (what every rank must agree on) and its 64-bit hash. */
size_t arb_plan_canonical(const arb_plan_t *p, char *buf, size_t len);
unsigned long long arb_plan_hash(const arb_plan_t *p);

#endif
