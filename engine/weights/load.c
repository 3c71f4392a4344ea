/* SPDX-License-Identifier: MIT */
/* A checkpoint folder handed to a backend block by block (engine/weights/load.h). */
#include "weights/load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arbench/status.h"
#include "rmsnorm/rmsnorm.h"
#include "weights/slice.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

arb_status_t arb_wload_open(const char *dir, arb_wload_t *w, char *why, size_t len)
{
    memset(w, 0, sizeof *w);
    if (strlen(dir) >= sizeof w->dir)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "--weights-dir: path longer than %zu characters", sizeof w->dir - 1);
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    snprintf(w->config, sizeof w->config, "%.1000s/config.json", dir);
    ARB_TRY(arb_weights_quant_load(w->config, &w->quant, why, len));
    w->format = w->quant.experts;
    ARB_TRY(arb_ckpt_open(dir, &w->ckpt, why, len));
    w->prefix = arb_wplan_detect_prefix(&w->ckpt);
    if (!w->prefix) {
        arb_ckpt_close(&w->ckpt);
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: neither model.embed_tokens.weight nor language_model.model.embed_tokens.weight is there "
                  "(expected a DeepSeek-V3-family checkpoint)",
                  dir);
    }
    return ARB_OK;
}

void arb_wload_close(arb_wload_t *w)
{
    arb_ckpt_close(&w->ckpt);
    w->prefix = NULL;
}

arb_status_t arb_wload_plan(const arb_wload_t *w, const arb_model_config_t *cfg, const arb_shard_t *sh,
                            arb_wplan_t *plan, uint64_t *bytes, char *why, size_t len)
{
    ARB_TRY(arb_wplan_make(cfg, w->format, sh, w->prefix, plan, why, len));
    snprintf(plan->config, sizeof plan->config, "%.1000s", w->config);
    plan->fp8 = w->quant.fp8;
    arb_status_t st = arb_wplan_check(plan, &w->ckpt, bytes, why, len);
    if (st != ARB_OK)
        arb_wplan_free(plan);
    return st;
}

/* A buffer that grows to the largest block. */
typedef struct grow {
    void *p;
    size_t cap;
} grow_t;

static void *grow_to(grow_t *g, size_t n)
{
    if (n <= g->cap)
        return g->p;
    void *q = realloc(g->p, n);
    if (!q)
        return NULL;
    g->p = q, g->cap = n;
    return q;
}

static void progress_line(const arb_wload_t *w, uint64_t done, uint64_t total, double t0, int last)
{
    double dt = now_s() - t0;
    fprintf(stderr, "\r# loading %s: %.2f of %.2f GB (%.0f%%), %.1f s, %.2f GB/s%s", w->dir, (double)done / 1e9,
            (double)total / 1e9, total ? 100.0 * (double)done / (double)total : 100.0, dt,
            dt > 0 ? (double)done / 1e9 / dt : 0.0, last ? "\n" : "   ");
    fflush(stderr);
}

arb_status_t arb_wload_fill(const arb_wload_t *w, const arb_wplan_t *plan, arb_wload_sink_fn sink, void *ctx,
                            int progress, arb_wload_stats_t *stats, char *why, size_t len)
{
    const arb_ckpt_t *ck = &w->ckpt;
    arb_wload_stats_t st = {0};
    uint64_t total = 0;
    for (size_t i = 0; i < plan->n; i++)
        if (plan->specs[i].part != ARB_WPART_SHAPE)
            total += arb_wspec_rank_numel(&plan->specs[i]) *
                     arb_st_dtype_size(arb_ckpt_find(ck, plan->specs[i].name)->t->dtype);
    grow_t raw = {0}, wide = {0};
    arb_status_t rs = ARB_OK;
    const double t0 = now_s();
    double shown = t0;
    for (size_t i = 0; i < plan->n && rs == ARB_OK; i++) {
        const arb_wspec_t *s = &plan->specs[i];
        if (s->part == ARB_WPART_SHAPE)
            continue;
        const arb_ckpt_entry_t *e = arb_ckpt_find(ck, s->name);
        if (!e)
            ARB_RAISE_GOTO(rs, ARB_ERR_INVALID, done, why, len, "%s: tensor '%s' is missing (check the plan first)",
                           ck->dir, s->name);
        const uint64_t n = arb_wspec_rank_numel(s);
        const size_t fsize = arb_st_dtype_size(e->t->dtype), esize = arb_st_dtype_size(s->dtype);
        const void *data;
        arb_wspec_view(ck, s, &data); /* contiguous in the mapping and in the engine's form: no copy */
        void *out = data ? NULL : grow_to(&raw, (size_t)n * (fsize > esize ? fsize : esize) + 1);
        if (!data && !out)
            ARB_RAISE_GOTO(rs, ARB_ERR_SYSTEM, done, why, len, "%s: out of host memory for tensor '%s' (%llu bytes)",
                           ck->dir, s->name, (unsigned long long)(n * fsize));
        if (!data && plan->fp8 && arb_wspec_is_fp8(ck, s)) {
            ARB_TRY_GOTO(rs, arb_wspec_read_fp8(ck, s, out, raw.cap, why, len), done);
            st.dequantized++;
            data = out;
        } else if (!data) {
            ARB_TRY_GOTO(rs, arb_wspec_read(ck, s, out, raw.cap, why, len), done);
            data = out;
            if (e->t->dtype == ARB_ST_BF16 && s->dtype == ARB_ST_F32) { /* a bf16 router bias, widened */
                float *f = grow_to(&wide, (size_t)n * 4 + 1);
                if (!f)
                    ARB_RAISE_GOTO(rs, ARB_ERR_SYSTEM, done, why, len, "%s: out of host memory", ck->dir);
                for (uint64_t k = 0; k < n; k++)
                    f[k] = arb_bf16_to_f32(((const uint16_t *)out)[k]);
                data = f;
            } else if (e->t->dtype != s->dtype) {
                ARB_RAISE_GOTO(rs, ARB_ERR_INVALID, done, why, len, "%s: tensor '%s' is %s; the engine holds it as %s",
                               arb_ckpt_file(ck, e)->path, s->name, arb_st_dtype_name(e->t->dtype),
                               arb_st_dtype_name(s->dtype));
            }
        }
        ARB_TRY_GOTO(rs, sink(ctx, s, data, (size_t)n * esize, why, len), done);
        st.bytes += n * fsize;
        st.tensors++;
        if (progress && now_s() - shown > 0.5) {
            progress_line(w, st.bytes, total, t0, 0);
            shown = now_s();
        }
    }
done:
    st.seconds = now_s() - t0;
    if (progress && rs == ARB_OK)
        progress_line(w, st.bytes, total, t0, 1);
    free(raw.p);
    free(wide.p);
    if (stats)
        *stats = st;
    return rs;
}
