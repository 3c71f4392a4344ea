/* SPDX-License-Identifier: MIT */
/*
 * The per-call choice: the engine's per-call-site rule (engine/sites/site_choice.h) on a
 * call's size and mode, made once per (op, dtype, bytes, mode), remembered in an
 * open-addressing table and written to stderr on rank 0 then.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_priv.h"
#include "arbench/status.h"
#include "base/common.h"

arb_status_t api_choose(const arbench_comm_t *c, arb_op_t op, size_t bytes, arb_mode_t mode, arb_choice_t *out,
                        char *why, size_t why_len)
{
    int fused = op == ARB_OP_ALLREDUCE_RMSNORM;
    arb_site_t site = {.name = arb_op_name(op), .op = op, .mode = mode, .ranks = c->mpi.nranks,
                       .nodes = c->mpi.nnodes, .fabric = c->fabric,
                       .tokens = fused ? (unsigned)(bytes / 2 / c->cfg.hidden) : 1,
                       .hidden = fused ? c->cfg.hidden : (unsigned)(bytes / 2)};
    return arb_site_choose(c->have_profile ? &c->profile : NULL, c->profile_path, &site, c->fallback, out, why,
                           why_len);
}

static size_t hash_key(int op, int dtype, size_t bytes, int mode)
{
    uint64_t h = (uint64_t)bytes * 0x9e3779b97f4a7c15ull ^ (uint64_t)(op * 8 + dtype * 2 + mode) * 0xc2b2ae3d27d4eb4full;
    return (size_t)(h ^ (h >> 29));
}

static api_pick_t *slot_for(api_pick_t *t, size_t cap, int op, int dtype, size_t bytes, int mode)
{
    for (size_t i = hash_key(op, dtype, bytes, mode) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (!t[i].used || (t[i].op == op * 2 + dtype && t[i].bytes == bytes && t[i].mode == mode))
            return &t[i];
}

static int grow(arbench_comm_t *c)
{
    size_t cap = c->npicks_cap ? 2 * c->npicks_cap : 64;
    api_pick_t *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < c->npicks_cap; i++)
        if (c->picks[i].used)
            *slot_for(t, cap, c->picks[i].op / 2, c->picks[i].op % 2, c->picks[i].bytes, c->picks[i].mode) = c->picks[i];
    free(c->picks);
    c->picks = t;
    c->npicks_cap = cap;
    return 0;
}

static void decide(arbench_comm_t *c, api_pick_t *p, arb_op_t op, arb_dtype_t dtype, size_t bytes, arb_mode_t mode)
{
    char head[96], why[512];
    snprintf(head, sizeof head, "%s %zu B %s %s", arb_op_name(op), bytes, arb_dtype_name(dtype), arb_mode_names[mode]);
    int fb = c->fallback_slot[op];
    p->fusion = op == ARB_OP_ALLREDUCE_RMSNORM ? ARB_FUSION_COMPOSED : ARB_FUSION_AUTO;
    if (dtype != ARB_DTYPE_BF16) {
        p->slot = fb;
        snprintf(p->note, sizeof p->note, "%s: profiles are measured in bf16 -> %s (its own choice)", head, c->fallback);
        return;
    }
    if (op == ARB_OP_ALLREDUCE_RMSNORM && (!c->cfg.hidden || bytes % ((size_t)2 * c->cfg.hidden))) {
        p->slot = -1;
        snprintf(p->note, sizeof p->note, "%s: not a fused call of this communicator (hidden %u, max_tokens %u)", head, c->cfg.hidden, c->cfg.max_tokens);
        return;
    }
    arb_choice_t ch;
    if (api_choose(c, op, bytes, mode, &ch, why, sizeof why) != ARB_OK) {
        p->slot = -1;
        snprintf(p->note, sizeof p->note, "%s: %s", head, why);
        return;
    }
    int s = ch.from_profile ? api_find_slot(c, ch.impl, ch.params, op) : fb;
    if (s < 0) {
        p->slot = fb;
        snprintf(p->note, sizeof p->note, "%s: %.800s; it did not open here (see above) -> %s (its own choice)", head, ch.note, c->fallback);
        return;
    }
    p->slot = s;
    if (ch.from_profile)
        p->fusion = ch.fusion;
    snprintf(p->note, sizeof p->note, "%s: %.900s", head, ch.note);
}

const api_pick_t *api_pick_dtype(arbench_comm_t *c, arb_op_t op, arb_dtype_t dtype, size_t bytes, arb_mode_t mode)
{
    if ((c->npicks + 1) * 2 > c->npicks_cap && grow(c))
        return NULL;
    api_pick_t *p = slot_for(c->picks, c->npicks_cap, (int)op, (int)dtype, bytes, (int)mode);
    if (p->used)
        return p;
    *p = (api_pick_t){.bytes = bytes, .op = (int)op * 2 + (int)dtype, .mode = (int)mode, .used = 1};
    c->npicks++;
    decide(c, p, op, dtype, bytes, mode);
    if (c->mpi.rank == 0)
        arb_info("%s", p->note);
    return p;
}

const api_pick_t *api_pick(arbench_comm_t *c, arb_op_t op, size_t bytes, arb_mode_t mode)
{
    return api_pick_dtype(c, op, ARB_DTYPE_BF16, bytes, mode);
}
