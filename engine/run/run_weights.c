/* SPDX-License-Identifier: MIT */
/* --weights-dir, --prompt-ids, --out-ids (engine/run/run_weights.h). */
#include "run/run_weights.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "base/outfile.h"
#include "weights/load.h"

arb_status_t arb_token_ids_read(const char *path, unsigned vocab, uint32_t **ids, unsigned *n, char *why, size_t len)
{
    *ids = NULL, *n = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "--prompt-ids %s: cannot open (%s)", path, strerror(errno));
    size_t cap = 0, k = 0;
    uint32_t *v = NULL;
    arb_status_t st = ARB_OK;
    char tok[32];
    int c = 0;
    while (st == ARB_OK) {
        while ((c = fgetc(f)) != EOF && isspace(c))
            ;
        if (c == EOF)
            break;
        size_t tl = 0;
        int ok = 1;
        for (; c != EOF && !isspace(c); c = fgetc(f)) {
            ok &= isdigit(c) && tl < sizeof tok - 1;
            if (tl < sizeof tok - 1)
                tok[tl++] = (char)c;
        }
        tok[tl] = '\0';
        unsigned long long x = ok ? strtoull(tok, NULL, 10) : 0;
        if (!ok || tl > 10 || x >= vocab) {
            st = ARB_ERR_INVALID;
            ARB_WHY(why, len, "--prompt-ids %s: token %zu '%s%s' is not a token id (expected decimal integers in 0..%u "
                    "separated by whitespace)", path, k + 1, tok, ok ? "" : "...", vocab - 1);
            break;
        }
        if (k == cap) {
            cap = cap ? 2 * cap : 1024;
            uint32_t *nv = realloc(v, cap * sizeof *v);
            if (!nv) {
                st = ARB_ERR_SYSTEM;
                ARB_WHY(why, len, "--prompt-ids %s: out of host memory", path);
                break;
            }
            v = nv;
        }
        v[k++] = (uint32_t)x;
    }
    if (st == ARB_OK && ferror(f)) {
        st = ARB_ERR_INVALID;
        ARB_WHY(why, len, "--prompt-ids %s: read error", path);
    }
    fclose(f);
    if (st == ARB_OK && k == 0) {
        st = ARB_ERR_INVALID;
        ARB_WHY(why, len, "--prompt-ids %s: no token ids (expected at least one decimal integer)", path);
    }
    if (st != ARB_OK) {
        free(v);
        return st;
    }
    *ids = v, *n = (unsigned)k;
    return ARB_OK;
}

arb_status_t arb_token_ids_write(const char *path, const uint32_t *ids, unsigned n, char *why, size_t len)
{
    arb_outfile_t of;
    char err[512];
    FILE *f = arb_outfile_open(&of, "--out-ids", path, err, sizeof err);
    if (!f)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s", err);
    for (unsigned i = 0; i < n; i++)
        fprintf(f, "%u%c", ids[i], i + 1 == n ? '\n' : ' ');
    if (arb_outfile_commit(&of, err, sizeof err) != 0)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "--out-ids %s", err);
    return ARB_OK;
}

int arb_run_weights_open(arb_engine_run_t *r, char *msg, size_t len)
{
    arb_engine_opts_t *o = &r->opts;
    if (o->weights_dir[0]) {
        r->wload = calloc(1, sizeof *r->wload);
        if (!r->wload) {
            snprintf(msg, len, "out of host memory");
            return -1;
        }
        if (o->overrides.experts || o->overrides.vocab) {
            snprintf(msg, len, "--%s with --weights-dir: the checkpoint's tensors have its config.json's %s "
                     "(--layers may keep the first layers of a checkpoint; --experts and --vocab cannot cut one)",
                     o->overrides.experts ? "experts" : "vocab", o->overrides.experts ? "n_routed_experts" : "vocab_size");
            return -1;
        }
        if (arb_wload_open(o->weights_dir, r->wload, msg, len) != ARB_OK) {
            free(r->wload);
            r->wload = NULL;
            return -1;
        }
        if (o->weights_given && o->weights != r->wload->format) {
            snprintf(msg, len, "--weights %s: %s holds %s routed experts (leave --weights out with --weights-dir)",
                     o->weights == ARB_WEIGHTS_INT4 ? "int4" : "bf16", r->wload->dir,
                     r->wload->format == ARB_WEIGHTS_INT4 ? "INT4 (compressed-tensors)" : "bf16");
            return -1;
        }
        o->weights = r->wload->format;
        /* rows and tables name the model after the checkpoint's folder, not "config" */
        const char *d = r->wload->dir, *end = d + strlen(d);
        while (end > d + 1 && end[-1] == '/')
            end--;
        const char *base = end;
        while (base > d && base[-1] != '/')
            base--;
        snprintf(r->cfg.name, sizeof r->cfg.name, "%.*s", (int)(end - base < 63 ? end - base : 63), base);
        r->s.wload = r->wload;
        r->s.load_progress = r->progress;
        r->s.load_stats = &r->load_stats;
    }
    if (o->prompt_ids[0]) {
        char why[1024];
        if (arb_token_ids_read(o->prompt_ids, r->cfg.vocab_size, &r->prompt, &r->nprompt, why, sizeof why) != ARB_OK) {
            snprintf(msg, len, "%s", why);
            return -1;
        }
        if (o->context_given && o->context != r->nprompt) {
            snprintf(msg, len, "--context %u with --prompt-ids %s of %u tokens: the prompt fills the cache (leave --context out)",
                     o->context, o->prompt_ids, r->nprompt);
            return -1;
        }
        o->context = r->nprompt;
    }
    return 0;
}

int arb_run_weights_check(arb_engine_run_t *r, char *msg, size_t len)
{
    if (!r->wload)
        return 0;
    arb_wplan_t plan;
    uint64_t bytes = 0;
    if (arb_wload_plan(r->wload, &r->cfg, &r->s.shard, &plan, &bytes, msg, len) != ARB_OK)
        return -1;
    if (r->m->rank == 0) {
        const arb_wload_t *w = r->wload;
        printf("# weights: %s (%zu tensors in %zu file(s)%s%s): rank 0 reads %zu tensors, %.3f GB; routed experts %s%s\n",
               w->dir, w->ckpt.n, w->ckpt.nshards, w->prefix[0] ? ", names under " : "", w->prefix, plan.n,
               (double)bytes / 1e9, w->format == ARB_WEIGHTS_INT4 ? "INT4 (compressed-tensors, converted)" : "bf16",
               w->quant.fp8 ? "; FP8 128x128-block tensors dequantized to bf16 at load" : "");
        fflush(stdout);
    }
    arb_wplan_free(&plan);
    return 0;
}

void arb_run_write_out_ids(const arb_engine_run_t *r, const uint32_t *ids, unsigned n)
{
    char why[1024];
    if (r->m->rank != 0 || !r->o->out_ids[0])
        return;
    if (arb_token_ids_write(r->o->out_ids, ids, n, why, sizeof why) != ARB_OK)
        fprintf(stderr, "# %s\n", why);
    else if (!r->o->quiet)
        printf("# --out-ids: %u token ids in %s\n", n, r->o->out_ids);
}

void arb_run_report_load(arb_engine_run_t *r, const char *what)
{
    if (!r->wload)
        return;
    arb_wload_stats_t *s = &r->load_stats;
    double secs = s->seconds, bytes = (double)s->bytes, all = 0;
    MPI_Allreduce(&secs, &s->seconds, 1, MPI_DOUBLE, MPI_MAX, r->m->world);
    MPI_Allreduce(&bytes, &all, 1, MPI_DOUBLE, MPI_SUM, r->m->world);
    if (r->m->rank == 0) {
        printf("# %s model loaded from %s on the %s backend: %.3f GB over %d rank(s) in %.2f s (slowest rank), "
               "%.2f GB/s per rank%s\n",
               what, r->wload->dir, r->be->name, all / 1e9, r->m->nranks, s->seconds, arb_run_load_gbs(r),
               s->dequantized ? "; FP8 tensors dequantized to bf16" : "");
        fflush(stdout);
    }
}

double arb_run_load_gbs(const arb_engine_run_t *r)
{
    const arb_wload_stats_t *s = &r->load_stats;
    return r->wload && s->seconds > 0 ? (double)s->bytes / 1e9 / s->seconds : -1;
}

void arb_run_weights_close(arb_engine_run_t *r)
{
    if (r->wload) {
        arb_wload_close(r->wload);
        free(r->wload);
        r->wload = NULL;
    }
    free(r->prompt);
    r->prompt = NULL;
}
