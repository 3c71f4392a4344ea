/* SPDX-License-Identifier: MIT */
/* Call sites -> one instance per distinct (impl, params, mode); see site_registry.h. */
#include "sites/site_registry.h"

#include <string.h>

#include "arbench/status.h"

void arb_site_registry_init(arb_site_registry_t *r, const char *fallback)
{
    memset(r, 0, sizeof *r);
    snprintf(r->fallback, sizeof r->fallback, "%s", fallback && *fallback ? fallback : ARB_SITE_FALLBACK);
}

arb_status_t arb_site_registry_add(arb_site_registry_t *r, const arb_site_t *site, const arb_choice_t *choice,
                                   size_t *slot, char *why, size_t why_len)
{
    if (r->opened)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "site %s: added after the registry was opened", site->name ? site->name : "?");
    if (r->nsites == ARB_REG_MAX_SITES)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "site %s: more than %d call-site shapes", site->name ? site->name : "?", ARB_REG_MAX_SITES);
    if (!site->tokens || !site->hidden || !site->fabric)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "site %s: expected tokens >= 1, hidden >= 1 and a fabric label", site->name ? site->name : "?");
    arb_reg_site_t *s = &r->sites[r->nsites];
    s->site = *site;
    snprintf(s->name, sizeof s->name, "%s", site->name ? site->name : "?");
    snprintf(s->fabric, sizeof s->fabric, "%s", site->fabric);
    s->site.name = s->name;
    s->site.fabric = s->fabric;
    s->choice = *choice;
    s->choice.entry = choice->entry; /* borrowed from the caller's profile */
    *slot = r->nsites++;
    return ARB_OK;
}

static int same_key(const arb_reg_inst_t *k, const char *impl, const char *params, arb_mode_t mode)
{
    return strcmp(k->impl, impl) == 0 && strcmp(k->params, params) == 0 && k->mode == mode;
}

static int is_fallback(const arb_site_registry_t *r, const arb_choice_t *c)
{
    return strcmp(c->impl, r->fallback) == 0 && !*c->params;
}

/* The instance key of a site, added when new; every site of a key widens its use. */
static arb_status_t key_for(arb_site_registry_t *r, arb_reg_site_t *s, int cuda_device, char *why, size_t why_len)
{
    size_t i = 0;
    while (i < r->ninsts && !same_key(&r->insts[i], s->choice.impl, s->choice.params, s->site.mode))
        i++;
    if (i == r->ninsts) {
        if (r->ninsts == ARB_REG_MAX_INSTS)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "site %s: more than %d distinct implementations", s->name, ARB_REG_MAX_INSTS);
        arb_reg_inst_t *k = &r->insts[r->ninsts++];
        memset(k, 0, sizeof *k);
        snprintf(k->impl, sizeof k->impl, "%s", s->choice.impl);
        snprintf(k->params, sizeof k->params, "%s", s->choice.params);
        k->mode = s->site.mode;
        k->use = (arb_use_t){.op = ARB_OP_ALLREDUCE, .dtype = ARB_DTYPE_BF16, .mode = s->site.mode,
                             .hidden = s->site.hidden, .cuda_device = cuda_device};
    }
    arb_reg_inst_t *k = &r->insts[i];
    k->from_profile |= s->choice.from_profile;
    if (k->use.hidden != s->site.hidden)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "site %s: hidden %u differs from another site's %u on %s", s->name, s->site.hidden, k->use.hidden, k->impl);
    size_t bytes = arb_site_bytes(&s->site);
    if (bytes > k->use.max_bytes)
        k->use.max_bytes = bytes;
    if (s->site.op == ARB_OP_ALLREDUCE_RMSNORM) {
        k->use.op = ARB_OP_ALLREDUCE_RMSNORM;
        if (s->site.tokens > k->use.max_tokens)
            k->use.max_tokens = s->site.tokens;
    }
    s->inst = i;
    return ARB_OK;
}

static void to_fallback(const arb_site_registry_t *r, arb_reg_site_t *s, const char *declined, const char *verb,
                        const char *reason)
{
    int fused = s->site.op == ARB_OP_ALLREDUCE_RMSNORM;
    snprintf(s->choice.impl, sizeof s->choice.impl, "%s", r->fallback);
    s->choice.params[0] = '\0';
    s->choice.fusion = fused ? ARB_FUSION_COMPOSED : ARB_FUSION_AUTO;
    s->choice.from_profile = 0;
    s->choice.entry = NULL;
    snprintf(s->choice.note, sizeof s->choice.note, "site %s: %s %s (%s) -> %s (its own choice)%s", s->name, declined, verb,
             reason, r->fallback, fused ? ", composed" : "");
}

arb_status_t arb_site_registry_open(arb_site_registry_t *r, const arb_inst_backend_t *b, int cuda_device,
                                    char *why, size_t why_len)
{
    if (r->opened)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "site registry opened twice");
    r->backend = *b;
    r->opened = 1;
    r->ninsts = 0;
    /* Pass 1: every chosen (impl, params, mode) but the fallback, in order of first use. */
    for (size_t i = 0; i < r->nsites; i++)
        if (!is_fallback(r, &r->sites[i].choice))
            ARB_TRY(key_for(r, &r->sites[i], cuda_device, why, why_len));
    size_t chosen = r->ninsts;
    for (size_t k = 0; k < chosen; k++) {
        arb_reg_inst_t *in = &r->insts[k];
        char reason[512] = "";
        arb_status_t st = b->open(b->ctx, in->impl, in->params, &in->use, &in->inst, reason, sizeof reason);
        if (st == ARB_DECLINE || (st == ARB_ERR_INVALID && in->from_profile)) {
            in->inst = NULL;
            char label[340];
            for (size_t i = 0; i < r->nsites; i++)
                if (!is_fallback(r, &r->sites[i].choice) && r->sites[i].inst == k) {
                    arb_choice_label(&r->sites[i].choice, label, sizeof label);
                    to_fallback(r, &r->sites[i], label, st == ARB_DECLINE ? "declined" : "refused its params", reason);
                }
        } else if (st != ARB_OK) {
            in->inst = NULL;
            ARB_RAISE(st, why, why_len, "opening %s%s%s for the engine's call sites: %s", in->impl, *in->params ? ":" : "", in->params, reason);
        }
    }
    /* Pass 2: the fallback, with the union of every site that ended up on it. */
    for (size_t i = 0; i < r->nsites; i++)
        if (is_fallback(r, &r->sites[i].choice))
            ARB_TRY(key_for(r, &r->sites[i], cuda_device, why, why_len));
    for (size_t k = chosen; k < r->ninsts; k++) {
        arb_reg_inst_t *in = &r->insts[k];
        char reason[512] = "";
        arb_status_t st = b->open(b->ctx, in->impl, in->params, &in->use, &in->inst, reason, sizeof reason);
        if (st != ARB_OK) {
            in->inst = NULL;
            ARB_RAISE(st, why, why_len, "opening the fallback %s (%s mode) for the engine's call sites: %s", r->fallback, arb_mode_names[in->mode], reason);
        }
    }
    /* A fused choice on a plugin without a fused kernel runs composed. */
    for (size_t i = 0; i < r->nsites; i++) {
        arb_reg_site_t *s = &r->sites[i];
        if (s->choice.fusion == ARB_FUSION_PLUGIN && b->has_fused && !b->has_fused(b->ctx, r->insts[s->inst].inst)) {
            s->choice.fusion = ARB_FUSION_COMPOSED;
            size_t n = strlen(s->choice.note);
            snprintf(s->choice.note + n, sizeof s->choice.note - n, "; %s has no fused kernel: composed", s->choice.impl);
        }
    }
    return ARB_OK;
}

arb_inst_t *arb_site_registry_instance(const arb_site_registry_t *r, size_t slot, arb_fusion_t *fusion)
{
    if (!r->opened || slot >= r->nsites)
        return NULL;
    if (fusion)
        *fusion = r->sites[slot].choice.fusion;
    return r->insts[r->sites[slot].inst].inst;
}

const arb_choice_t *arb_site_registry_choice(const arb_site_registry_t *r, size_t slot)
{
    return slot < r->nsites ? &r->sites[slot].choice : NULL;
}

void arb_site_registry_print(const arb_site_registry_t *r, FILE *f)
{
    for (size_t i = 0; i < r->nsites; i++) {
        const arb_reg_site_t *s = &r->sites[i];
        char label[340];
        arb_choice_label(&s->choice, label, sizeof label);
        fprintf(f, "%-16s %8zu B  %-44s %s\n", s->name, arb_site_bytes(&s->site), label, s->choice.note);
    }
}

void arb_site_registry_close(arb_site_registry_t *r)
{
    for (size_t k = r->ninsts; k-- > 0;)
        if (r->insts[k].inst) {
            r->backend.close(r->backend.ctx, r->insts[k].inst);
            r->insts[k].inst = NULL;
        }
    r->ninsts = 0;
}

arb_status_t arb_site_registry_require(const arb_site_registry_t *r, size_t slot, const char *what, const char *impl,
                                       char *why, size_t why_len)
{
    const arb_reg_site_t *s = &r->sites[slot];
    if (strcmp(s->choice.impl, impl) == 0)
        return ARB_OK;
    ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s %s: does not run here (%s); a baseline is never replaced by another implementation: choose one that runs here (arbench plugins)",
              what, impl, s->choice.note);
}

void arb_site_registry_fallback_note(const arb_site_registry_t *r, size_t slot, char *buf, size_t len)
{
    const arb_reg_site_t *s = &r->sites[slot];
    buf[0] = '\0';
    if (s->choice.from_profile)
        return;
    /* the note reads "site NAME (shape...): why -> IMPL (its own choice)": keep the why */
    const char *why = strstr(s->choice.note, "): "), *colon = strstr(s->choice.note, ": ");
    why = why ? why + 3 : colon ? colon + 2 : s->choice.note;
    snprintf(buf, len, "fallback %s at site %s: %s", s->choice.impl, s->name, why);
}
