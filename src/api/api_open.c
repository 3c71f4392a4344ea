/* SPDX-License-Identifier: MIT */
/*
 * The implementations a communicator opens at creation: every (impl, params) the profile
 * can choose for this job, found by asking the choice rule itself at each entry's smallest
 * size (allreduce) and at every row count (fused), then the fallback. Opening is
 * collective, so it happens here, once, in the same order on every rank; a profile's
 * implementation that cannot open here (a decline, a load failure, a reference floor that
 * moves no data) is logged and its sizes go to the fallback.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_priv.h"
#include "arbench/status.h"
#include "base/common.h"

int api_find_slot(const arbench_comm_t *c, const char *impl, const char *params, arb_op_t op)
{
    for (int i = 0; i < c->nslots; i++)
        if (c->slots[i].op == op && strcmp(c->slots[i].impl, impl) == 0 && strcmp(c->slots[i].params, params) == 0)
            return i;
    return -1;
}

static arb_status_t agree(arb_mpi_t *m, arb_status_t st, char *why, size_t why_len)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", st != ARB_OK ? why : "");
    int worst = arb_allmax_int(m, (int)st);
    if (worst != ARB_OK && arb_agree_failure(m, st != ARB_OK, msg, sizeof msg) >= 0)
        snprintf(why, why_len, "%s", msg);
    return (arb_status_t)worst;
}

static arb_status_t stage_buffers(arbench_comm_t *c, api_slot_t *s, char *why, size_t why_len)
{
    int needs_alloc = (arb_inst_caps(s->inst) & ARB_CAP_NEEDS_ALLOC) != 0;
    if (s->op == ARB_OP_ALLREDUCE) {
        ARB_TRY(arb_inst_alloc(s->inst, c->cfg.max_bytes, &s->stage_send, why, why_len));
        if (needs_alloc)
            ARB_TRY(arb_inst_alloc(s->inst, c->cfg.max_bytes, &s->stage_recv, why, why_len));
    } else if (needs_alloc) {
        ARB_TRY(arb_inst_alloc(s->inst, (size_t)c->cfg.max_tokens * c->cfg.hidden * 2, &s->stage_send, why, why_len));
    }
    return ARB_OK;
}

/* Collective. Opens (impl, params) for op into a new slot; *idx -1 (and ARB_OK) when it
 * cannot serve here, with the reason in why. */
static arb_status_t open_slot(arbench_comm_t *c, const char *impl, const char *params, arb_op_t op, int *idx,
                              char *why, size_t why_len)
{
    *idx = api_find_slot(c, impl, params, op);
    if (*idx >= 0)
        return ARB_OK;
    if (c->nslots == API_MAX_SLOTS)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "more than %d implementations to open for this job", API_MAX_SLOTS);
    api_slot_t *s = &c->slots[c->nslots];
    memset(s, 0, sizeof *s);
    snprintf(s->impl, sizeof s->impl, "%s", impl);
    snprintf(s->params, sizeof s->params, "%s", params);
    s->op = op;
    arb_status_t st = arb_plugin_load(impl, &s->lp, why, why_len);
    if (st == ARB_OK && (s->lp.plugin->caps & ARB_CAP_REFERENCE))
        ARB_WHY(why, why_len, "%s is a reference floor (it moves no data); never used for a call", impl), st = ARB_DECLINE;
    st = agree(&c->mpi, st, why, why_len);
    if (st != ARB_OK) {
        if (s->lp.handle)
            arb_plugin_unload(&s->lp);
        return ARB_OK;
    }
    arb_use_t use = {.op = op, .dtype = ARB_DTYPE_BF16, .mode = c->cfg.graph ? ARB_MODE_GRAPH : ARB_MODE_EAGER,
                     .max_bytes = c->cfg.max_bytes, .max_tokens = op == ARB_OP_ALLREDUCE_RMSNORM ? c->cfg.max_tokens : 0,
                     .hidden = c->cfg.hidden, .cuda_device = c->cfg.cuda_device};
    st = arb_inst_open(&c->mpi, &s->lp, params, &use, &s->inst, why, why_len);
    if (st == ARB_OK) {
        st = stage_buffers(c, s, why, why_len);
        if (st != ARB_OK)
            arb_inst_close(s->inst);
    }
    if (st != ARB_OK) {
        arb_plugin_unload(&s->lp);
        return ARB_OK;
    }
    *idx = c->nslots++;
    return ARB_OK;
}

static arb_status_t want(arbench_comm_t *c, const arb_choice_t *ch, arb_op_t op, char *why, size_t why_len)
{
    if (!ch->from_profile || api_find_slot(c, ch->impl, ch->params, op) >= 0)
        return ARB_OK;
    int idx;
    why[0] = '\0';
    ARB_TRY(open_slot(c, ch->impl, ch->params, op, &idx, why, why_len));
    if (idx < 0 && c->mpi.rank == 0)
        arb_info("%s%s%s for %s cannot serve here, its sizes go to %s: %s", ch->impl, *ch->params ? ":" : "", ch->params, arb_op_name(op), c->fallback, why);
    return ARB_OK;
}

static arb_status_t open_profiled(arbench_comm_t *c, arb_mode_t mode, char *why, size_t why_len)
{
    arb_choice_t ch;
    for (size_t i = 0; i < c->profile.n; i++) {
        const arb_profile_entry_t *e = &c->profile.e[i];
        size_t b = e->min_bytes < 2 ? 2 : (e->min_bytes + 1) & ~(size_t)1;
        if (b > e->max_bytes || b > c->cfg.max_bytes)
            continue;
        ARB_TRY(api_choose(c, ARB_OP_ALLREDUCE, b, mode, &ch, why, why_len));
        if (ch.entry == e)
            ARB_TRY(want(c, &ch, ARB_OP_ALLREDUCE, why, why_len));
    }
    for (unsigned t = 1; t <= c->cfg.max_tokens; t++) {
        ARB_TRY(api_choose(c, ARB_OP_ALLREDUCE_RMSNORM, (size_t)t * c->cfg.hidden * 2, mode, &ch, why, why_len));
        ARB_TRY(want(c, &ch, ARB_OP_ALLREDUCE_RMSNORM, why, why_len));
    }
    return ARB_OK;
}

arb_status_t api_open_slots(arbench_comm_t *c, char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    if (c->have_profile) {
        st = open_profiled(c, ARB_MODE_EAGER, why, why_len);
        if (st == ARB_OK && c->cfg.graph)
            st = open_profiled(c, ARB_MODE_GRAPH, why, why_len);
        if (st != ARB_OK)
            goto err_close_slots;
    }
    for (int op = 0; op <= (c->cfg.hidden ? 1 : 0); op++) {
        st = open_slot(c, c->fallback, "", (arb_op_t)op, &c->fallback_slot[op], why, why_len);
        if (st == ARB_OK && c->fallback_slot[op] < 0)
            st = ARB_DECLINE; /* why holds the fallback's own reason */
        if (st != ARB_OK) {
            char inner[768];
            snprintf(inner, sizeof inner, "%s", why);
            ARB_WHY(why, why_len, "the fallback %s cannot serve %s here: %s", c->fallback, arb_op_name((arb_op_t)op), inner);
            goto err_close_slots;
        }
    }
    return ARB_OK;

err_close_slots:
    api_close_slots(c);
    return st;
}

void api_close_slots(arbench_comm_t *c)
{
    while (c->nslots) {
        api_slot_t *s = &c->slots[--c->nslots];
        arb_inst_close(s->inst); /* frees the staging buffers */
        arb_plugin_unload(&s->lp);
    }
}
