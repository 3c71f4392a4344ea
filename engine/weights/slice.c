/* SPDX-License-Identifier: MIT */
/* A plan checked against a checkpoint, and one rank's block read (engine/weights/slice.h). */
#include "weights/slice.h"

#include <stdio.h>
#include <string.h>

#include "arbench/status.h"
#include "rmsnorm/rmsnorm.h"
#include "weights/fp8.h"
#include "weights/int4_ct.h"
#include "weights/quant.h"

static void shape_str(char *buf, size_t len, unsigned ndim, const uint64_t *shape)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (unsigned d = 0; d < ndim && used < len; d++)
        used += (size_t)snprintf(buf + used, len - used, d ? ", %llu" : "%llu", (unsigned long long)shape[d]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

static int64_t shape_value(const arb_st_file_t *f, const arb_st_tensor_t *t, unsigned i)
{
    const uint8_t *p = (const uint8_t *)arb_st_data(f, t);
    if (t->dtype == ARB_ST_I64) {
        int64_t v;
        memcpy(&v, p + 8 * i, 8);
        return v;
    }
    int32_t v;
    memcpy(&v, p + 4 * i, 4);
    return v;
}

/* P.weight_scale_inv of P.weight into buf; 0 when s's name does not end in ".weight". */
static int scale_inv_name(const arb_wspec_t *s, char *buf, size_t len)
{
    size_t n = strlen(s->name);
    if (n < 7 || strcmp(s->name + n - 7, ".weight") != 0 || n + 10 > len)
        return 0;
    snprintf(buf, len, "%s_scale_inv", s->name);
    return 1;
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static arb_status_t check_fp8_scale(const arb_wplan_t *plan, const arb_ckpt_t *ckpt, const arb_wspec_t *s,
                                    const char *file, char *why, size_t len)
{
    char sname[160], got[64];
    uint64_t want[2] = {ceil_div(s->shape[0], ARB_FP8_BLOCK), ceil_div(s->shape[1], ARB_FP8_BLOCK)};
    if (!scale_inv_name(s, sname, sizeof sname))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s' is F8_E4M3 but is not a P.weight (expected BF16)", file,
                  s->name);
    const arb_ckpt_entry_t *e = arb_ckpt_find(ckpt, sname);
    if (!e)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: tensor '%s' is F8_E4M3 but '%s' is missing (expected F32 [%llu, %llu]: 128x128 blocks, from %s)",
                  file, s->name, sname, (unsigned long long)want[0], (unsigned long long)want[1], plan->config);
    const arb_st_tensor_t *t = e->t;
    if (t->dtype != ARB_ST_F32 || t->ndim != 2 || t->shape[0] != want[0] || t->shape[1] != want[1]) {
        shape_str(got, sizeof got, t->ndim, t->shape);
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: tensor '%s' is %s %s (expected F32 [%llu, %llu]: one scale per 128x128 block of '%s')",
                  arb_ckpt_file(ckpt, e)->path, sname, arb_st_dtype_name(t->dtype), got, (unsigned long long)want[0],
                  (unsigned long long)want[1], s->name);
    }
    return ARB_OK;
}

void arb_wspec_view(const arb_ckpt_t *ckpt, const arb_wspec_t *s, const void **p)
{
    *p = NULL;
    const arb_ckpt_entry_t *e = arb_ckpt_find(ckpt, s->name);
    if (!e || s->part == ARB_WPART_PACKED || s->part == ARB_WPART_SHAPE || e->t->dtype != s->dtype ||
        (s->ndim == 2 && s->split == ARB_WSPLIT_COLS) || s->ndim != e->t->ndim || e->t->shape[0] != s->shape[0] ||
        (s->ndim == 2 && e->t->shape[1] != s->shape[1]))
        return;
    const uint8_t *src = (const uint8_t *)arb_st_data(arb_ckpt_file(ckpt, e), e->t);
    uint64_t row = s->ndim == 2 ? s->shape[1] * arb_st_dtype_size(s->dtype) : 0;
    *p = s->ndim == 2 && s->split == ARB_WSPLIT_ROWS ? src + s->first * row : src;
}

int arb_wspec_is_fp8(const arb_ckpt_t *ckpt, const arb_wspec_t *s)
{
    const arb_ckpt_entry_t *e = arb_ckpt_find(ckpt, s->name);
    return e && e->t->dtype == ARB_ST_F8_E4M3 && s->part == ARB_WPART_WEIGHT && s->ndim == 2 && s->dtype == ARB_ST_BF16;
}

static arb_status_t check_one(const arb_wplan_t *plan, const arb_ckpt_t *ckpt, const arb_wspec_t *s, char *why,
                              size_t len)
{
    char want[64], got[64];
    shape_str(want, sizeof want, s->ndim, s->shape);
    const arb_ckpt_entry_t *e = arb_ckpt_find(ckpt, s->name);
    if (!e)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s' is missing (expected %s %s: %s, from %s)", ckpt->dir,
                  s->name, arb_st_dtype_name(s->dtype), want, s->why_shape, plan->config);
    const arb_st_file_t *f = arb_ckpt_file(ckpt, e);
    const arb_st_tensor_t *t = e->t;
    int fp8 = plan->fp8 && arb_wspec_is_fp8(ckpt, s);
    if (!fp8 && t->dtype != s->dtype && (!s->dtype_alt || t->dtype != s->dtype_alt))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s' has dtype %s (expected %s%s%s)", f->path, s->name,
                  arb_st_dtype_name(t->dtype), arb_st_dtype_name(s->dtype), s->dtype_alt ? " or " : "",
                  s->dtype_alt ? arb_st_dtype_name(s->dtype_alt) : "");
    if (fp8)
        ARB_TRY(check_fp8_scale(plan, ckpt, s, f->path, why, len));
    int same = t->ndim == s->ndim;
    for (unsigned d = 0; same && d < s->ndim; d++)
        same = t->shape[d] == s->shape[d];
    if (!same) {
        shape_str(got, sizeof got, t->ndim, t->shape);
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s' has shape %s but %s gives %s (%s)", f->path, s->name, got,
                  plan->config, want, s->why_shape);
    }
    if (s->part == ARB_WPART_SHAPE) {
        int64_t out = shape_value(f, t, 0), in = shape_value(f, t, 1);
        if (out != (int64_t)s->logical[0] || in != (int64_t)s->logical[1])
            ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s' holds {%lld, %lld} but %s gives {%llu, %llu}",
                      f->path, s->name, (long long)out, (long long)in, plan->config, (unsigned long long)s->logical[0],
                      (unsigned long long)s->logical[1]);
    }
    return ARB_OK;
}

const char *arb_wplan_detect_prefix(const arb_ckpt_t *ck)
{
    static const char *prefixes[] = {"", "language_model."};
    char name[64];
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        snprintf(name, sizeof name, "%smodel.embed_tokens.weight", prefixes[i]);
        if (arb_ckpt_find(ck, name))
            return prefixes[i];
    }
    return NULL;
}

arb_status_t arb_wplan_check(const arb_wplan_t *plan, const arb_ckpt_t *ckpt, uint64_t *rank_bytes, char *why,
                             size_t len)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < plan->n; i++) {
        const arb_wspec_t *s = &plan->specs[i];
        ARB_TRY(check_one(plan, ckpt, s, why, len));
        if (s->part != ARB_WPART_SHAPE)
            bytes += arb_wspec_rank_numel(s) * arb_st_dtype_size(arb_ckpt_find(ckpt, s->name)->t->dtype);
    }
    if (rank_bytes)
        *rank_bytes = bytes;
    return ARB_OK;
}

arb_status_t arb_wspec_read(const arb_ckpt_t *ckpt, const arb_wspec_t *s, void *dst, size_t dst_len, char *why,
                            size_t len)
{
    const arb_ckpt_entry_t *e = arb_ckpt_find(ckpt, s->name);
    if (!e)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s' is missing", ckpt->dir, s->name);
    if (s->part == ARB_WPART_SHAPE)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s' is checked, not loaded", ckpt->dir, s->name);
    const arb_st_tensor_t *t = e->t;
    size_t es = arb_st_dtype_size(t->dtype);
    uint64_t need = arb_wspec_rank_numel(s) * es;
    if (need > dst_len)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s': this rank's block is %llu bytes, the buffer %zu",
                  ckpt->dir, s->name, (unsigned long long)need, dst_len);
    if (t->ndim != s->ndim || t->shape[0] != s->shape[0] || (s->ndim == 2 && t->shape[1] != s->shape[1]))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s' does not have the planned shape (check it first)",
                  ckpt->dir, s->name);
    uint64_t extent = s->ndim == 1 ? s->shape[0] : s->split == ARB_WSPLIT_COLS ? s->shape[1] : s->shape[0];
    if (s->first + s->count > extent)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s': block %llu..%llu lies outside its %llu", ckpt->dir,
                  s->name, (unsigned long long)s->first, (unsigned long long)(s->first + s->count),
                  (unsigned long long)extent);
    const uint8_t *src = (const uint8_t *)arb_st_data(arb_ckpt_file(ckpt, e), t);
    if (s->ndim == 1 || s->split == ARB_WSPLIT_WHOLE) {
        memcpy(dst, src, need);
    } else if (s->split == ARB_WSPLIT_ROWS) {
        memcpy(dst, src + s->first * s->shape[1] * es, need);
    } else {
        uint64_t row = s->shape[1] * es, part = s->count * es;
        for (uint64_t r = 0; r < s->shape[0]; r++)
            memcpy((uint8_t *)dst + r * part, src + r * row + s->first * es, part);
    }
    if (s->part == ARB_WPART_PACKED)
        arb_int4_ct_convert((int32_t *)dst, (size_t)(need / 4));
    return ARB_OK;
}

arb_status_t arb_wspec_read_fp8(const arb_ckpt_t *ckpt, const arb_wspec_t *s, uint16_t *dst, size_t dst_len, char *why,
                                size_t len)
{
    char sname[160];
    const arb_ckpt_entry_t *e = arb_ckpt_find(ckpt, s->name), *se = NULL;
    if (!arb_wspec_is_fp8(ckpt, s) || !scale_inv_name(s, sname, sizeof sname) || !(se = arb_ckpt_find(ckpt, sname)))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s' is not an FP8 weight with a scale (check it first)",
                  ckpt->dir, s->name);
    uint64_t n = arb_wspec_rank_numel(s);
    if (n * 2 > dst_len)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: tensor '%s': this rank's block is %llu bytes, the buffer %zu",
                  ckpt->dir, s->name, (unsigned long long)(n * 2), dst_len);
    const uint8_t *w = (const uint8_t *)arb_st_data(arb_ckpt_file(ckpt, e), e->t);
    const uint8_t *sc = (const uint8_t *)arb_st_data(arb_ckpt_file(ckpt, se), se->t);
    const uint64_t rows = s->shape[0], cols = s->shape[1], scols = ceil_div(cols, ARB_FP8_BLOCK);
    uint64_t r0 = 0, nr = rows, c0 = 0, nc = cols;
    if (s->split == ARB_WSPLIT_ROWS)
        r0 = s->first, nr = s->count;
    else if (s->split == ARB_WSPLIT_COLS)
        c0 = s->first, nc = s->count;
    float lut[256];
    for (int v = 0; v < 256; v++)
        lut[v] = arb_fp8_e4m3_to_f32((uint8_t)v);
    for (uint64_t r = 0; r < nr; r++) {
        const uint64_t gr = r0 + r;
        const uint8_t *row = w + gr * cols;
        const uint8_t *srow = sc + 4 * (gr / ARB_FP8_BLOCK) * scols;
        uint16_t *out = dst + r * nc;
        for (uint64_t c = 0; c < nc;) {
            const uint64_t gc = c0 + c, blk = gc / ARB_FP8_BLOCK;
            const uint64_t run = (blk + 1) * ARB_FP8_BLOCK - gc < nc - c ? (blk + 1) * ARB_FP8_BLOCK - gc : nc - c;
            float scale;
            memcpy(&scale, srow + 4 * blk, 4);
            for (uint64_t j = 0; j < run; j++)
                out[c + j] = arb_f32_to_bf16(lut[row[gc + j]] * scale);
            c += run;
        }
    }
    return ARB_OK;
}
