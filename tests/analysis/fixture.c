/* SPDX-License-Identifier: MIT */
#include "fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/points.h"
#include "analysis/resample.h"
#include "base/stats.h"

static double normal(arb_rng_t *r)
{
    /* Box-Muller; 1 - u keeps the logarithm finite. */
    double u = 1.0 - arb_rng_uniform(r), v = arb_rng_uniform(r);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

arb_results_writer_t *fx_create(const char *path)
{
    char err[512];
    unlink(path);
    arb_results_writer_t *w = arb_results_open(path, err, sizeof err);
    if (!w)
        fprintf(stderr, "fixture: %s\n", err);
    return w;
}

int fx_append(arb_results_writer_t *w, const fx_point_t *p)
{
    size_t n = p->nsamples ? p->nsamples : 50;
    double *s = malloc(n * sizeof *s);
    char *samples = malloc(n * 24 + 1);
    if (!s || !samples) {
        free(s);
        free(samples);
        return -1;
    }
    arb_rng_t r;
    arb_rng_seed(&r, p->seed);
    size_t len = 0;
    samples[0] = '\0';
    /* Stored as the sweep stores them: beyond the cap, every stride-th sample. */
    size_t stride = (n + ARB_RESULTS_MAX_STORED_SAMPLES - 1) / ARB_RESULTS_MAX_STORED_SAMPLES;
    for (size_t i = 0; i < n; i++) {
        s[i] = p->median_us * exp(p->sigma * normal(&r));
        if (p->nsamples && i % stride == 0)
            len += (size_t)snprintf(samples + len, 24, "%s%.3f", i ? " " : "", s[i]);
    }
    arb_stats_t st;
    arb_stats_compute(s, n, &st);
    char ranks[32], bytes[32], count[32], tokens[32], iters[32], med[32], p10[32], p90[32], p99[32];
    char mean[32], sd[32], mn[32], mx[32], alg[32], bus[32];
    snprintf(ranks, sizeof ranks, "%d", p->ranks);
    snprintf(bytes, sizeof bytes, "%zu", p->bytes);
    snprintf(count, sizeof count, "%zu", p->bytes / 2);
    snprintf(tokens, sizeof tokens, "%zu", p->bytes / 14336);
    snprintf(iters, sizeof iters, "%zu", n);
    snprintf(med, sizeof med, "%.3f", st.median);
    snprintf(p10, sizeof p10, "%.3f", st.p10);
    snprintf(p90, sizeof p90, "%.3f", st.p90);
    snprintf(p99, sizeof p99, "%.3f", st.p99);
    snprintf(mean, sizeof mean, "%.3f", st.mean);
    snprintf(sd, sizeof sd, "%.3f", st.stdev);
    snprintf(mn, sizeof mn, "%.3f", st.min);
    snprintf(mx, sizeof mx, "%.3f", st.max);
    /* The writer's rounding: statistics of the 3-decimal samples, as a reader recomputes them. */
    snprintf(alg, sizeof alg, "%.3f", arb_algbw_gbs(p->bytes, st.median));
    snprintf(bus, sizeof bus, "%.3f", arb_busbw_gbs(p->bytes, st.median, p->ranks));
    const char *role = p->role ? p->role : arb_role_name(arb_role_of_legacy_row(p->impl, p->note));
    int timed = strcmp(p->check, "pass") == 0 || strcmp(role, "reference") == 0; /* floors are timed */
    arb_row_t row = {.f = {
        [ARB_COL_schema] = "1", [ARB_COL_run_id] = p->run_id, [ARB_COL_time] = "2025-01-01T00:00:00Z",
        [ARB_COL_git_rev] = "fixture", [ARB_COL_arbench_version] = "0.1.0", [ARB_COL_host] = "testhost",
        [ARB_COL_argv] = "arbench sweep --impl p2p,nccl", [ARB_COL_gpu] = "Fixture GPU", [ARB_COL_sm] = "120",
        [ARB_COL_fabric] = p->fabric, [ARB_COL_ranks] = ranks, [ARB_COL_nodes] = "1",
        [ARB_COL_impl] = p->impl, [ARB_COL_params] = p->params, [ARB_COL_op] = p->op,
        [ARB_COL_fusion] = p->fusion, [ARB_COL_dtype] = p->dtype, [ARB_COL_bytes] = bytes,
        [ARB_COL_count] = count, [ARB_COL_tokens] = tokens, [ARB_COL_hidden] = "7168",
        [ARB_COL_mode] = p->mode, [ARB_COL_timing] = "events", [ARB_COL_warmup] = "5",
        [ARB_COL_iters] = iters, [ARB_COL_median_us] = timed ? med : "", [ARB_COL_p10_us] = timed ? p10 : "",
        [ARB_COL_p90_us] = timed ? p90 : "", [ARB_COL_p99_us] = timed ? p99 : "",
        [ARB_COL_mean_us] = timed ? mean : "", [ARB_COL_stdev_us] = timed ? sd : "",
        [ARB_COL_min_us] = timed ? mn : "", [ARB_COL_max_us] = timed ? mx : "",
        [ARB_COL_algbw_gbs] = timed ? alg : "", [ARB_COL_busbw_gbs] = timed ? bus : "",
        [ARB_COL_check] = p->check, [ARB_COL_wrong] = strcmp(p->check, "fail") ? "0" : "12",
        [ARB_COL_samples_us] = timed ? samples : "", [ARB_COL_role] = role, [ARB_COL_note] = p->note,
    }};
    if (p->override_col)
        for (int c = 0; c < ARB_COL_COUNT; c++)
            if (strcmp(arb_result_col_names[c], p->override_col) == 0)
                row.f[c] = p->override_val;
    int rc = arb_results_append(w, &row);
    free(s);
    free(samples);
    return rc;
}

int fx_write_sweep(const char *path, const fx_sweep_t *s)
{
    static const size_t sizes[] = {14336, 43008, 86016, 1048576};
    /* Graph-mode medians in us per size: Ring/LL, Ring/Simple, p2p. */
    static const double med[4][3] = {{10, 14, 6}, {12, 15, 7}, {16, 18, 15.8}, {80, 60, 90}};
    static const char *const modes[] = {"eager", "graph"};
    char ll[128], simple[128];
    snprintf(ll, sizeof ll, "algo=Ring,proto=LL,nccl=%s", s->nccl_version);
    snprintf(simple, sizeof simple, "algo=Ring,proto=Simple,nccl=%s", s->nccl_version);
    const char *impls[3][2] = {{"nccl", ll}, {"nccl", simple}, {"p2p", "variant=oneshot-push,blocks=8"}};
    arb_results_writer_t *w = fx_create(path);
    if (!w)
        return -1;
    int rc = 0;
    uint64_t seed = s->seed;
    arb_rng_t run_rng;
    arb_rng_seed(&run_rng, s->run_seed);
    for (size_t m = 0; m < 2; m++)
        for (size_t i = 0; i < 4; i++) {
            for (size_t k = 0; k < 3; k++) {
                int is_p2p = k == 2;
                int slow = is_p2p && sizes[i] == s->slow_bytes && s->slow_mode && strcmp(modes[m], s->slow_mode) == 0;
                int fail = is_p2p && sizes[i] == s->fail_bytes && s->fail_mode && strcmp(modes[m], s->fail_mode) == 0;
                double run_effect = exp(s->run_sigma[m] * normal(&run_rng)); /* drawn even if 0 */
                fx_point_t p = {
                    .fabric = s->fabric ? s->fabric : "pcie-gen5", .impl = impls[k][0], .params = impls[k][1],
                    .op = "allreduce", .fusion = "", .dtype = "bf16", .mode = modes[m],
                    .check = fail ? "fail" : "pass", .run_id = s->run_id, .ranks = 2, .bytes = sizes[i],
                    .median_us = (med[i][k] + (m == 0 ? 5.0 : 0.0)) * (slow ? s->slow_factor : 1.0) * run_effect,
                    .sigma = 0.03, .nsamples = s->nsamples, .seed = seed++,
                };
                rc |= fx_append(w, &p);
            }
            fx_point_t ref = {.fabric = s->fabric ? s->fabric : "pcie-gen5", .impl = "noop", .params = "",
                              .op = "allreduce", .fusion = "", .dtype = "bf16", .mode = modes[m],
                              .check = "skip", .role = "reference", .note = "reference floor: no payload, not checked", .run_id = s->run_id, .ranks = 2, .bytes = sizes[i],
                              .median_us = 2.0, .sigma = 0.03, .nsamples = s->nsamples, .seed = seed++};
            rc |= fx_append(w, &ref);
        }
    rc |= arb_results_close(w);
    return rc;
}

/* Writes v * factor into buf with the precision of the harness (3 decimals). */
static const char *scaled(char *buf, size_t n, const char *v, double factor)
{
    double x;
    if (arb_parse_double_field(v, &x))
        return v; /* empty on rows that did not pass */
    snprintf(buf, n, "%.3f", x * factor);
    return buf;
}

/* Recomputes a row's statistics from its samples_us text (3 decimals each). */
static int restat(const char *samples, arb_row_t *row, char num[][32])
{
    size_t n = 0, cap = strlen(samples) / 2 + 2;
    double *v = malloc(cap * sizeof *v);
    for (const char *s = samples; v && *s && n < cap;) {
        char *end;
        v[n] = strtod(s, &end);
        if (end == s)
            break;
        n++, s = end;
    }
    arb_stats_t st;
    if (!v || arb_stats_compute(v, n, &st)) {
        free(v);
        return -1;
    }
    const struct { int col; double v; } out[] = {
        {ARB_COL_median_us, st.median}, {ARB_COL_p10_us, st.p10}, {ARB_COL_p90_us, st.p90}, {ARB_COL_p99_us, st.p99},
        {ARB_COL_mean_us, st.mean}, {ARB_COL_stdev_us, st.stdev}, {ARB_COL_min_us, st.min}, {ARB_COL_max_us, st.max}};
    for (size_t k = 0; k < sizeof out / sizeof out[0]; k++) {
        snprintf(num[out[k].col], 32, "%.3f", out[k].v);
        row->f[out[k].col] = num[out[k].col];
    }
    free(v);
    return 0;
}

int fx_copy_scaled(const char *src, const char *dst, const char *impl, const char *params, const char *mode,
                   size_t bytes, double factor, const char *run_id)
{
    return fx_copy_scaled_ex(src, dst, impl, params, mode, bytes, factor, run_id, 1);
}

int fx_copy_scaled_ex(const char *src, const char *dst, const char *impl, const char *params, const char *mode,
                      size_t bytes, double factor, const char *run_id, int scale_samples)
{
    static const char *const times[] = {"median_us", "p10_us", "p90_us", "p99_us", "mean_us",
                                        "stdev_us", "min_us", "max_us"};
    char err[512], num[ARB_COL_COUNT][32], bstr[32];
    arb_table_t t;
    if (arb_table_read(src, &t, err, sizeof err)) {
        fprintf(stderr, "fixture: %s\n", err);
        return -1;
    }
    arb_results_writer_t *w = fx_create(dst);
    int rc = w ? 0 : -1, hits = 0;
    snprintf(bstr, sizeof bstr, "%zu", bytes);
    int ci = arb_table_col(&t, "impl"), cp = arb_table_col(&t, "params"), cm = arb_table_col(&t, "mode");
    int cb = arb_table_col(&t, "bytes");
    for (size_t r = 0; w && r < t.nrows && ci >= 0 && cp >= 0 && cm >= 0 && cb >= 0; r++) {
        char **f = t.rows[r];
        int hit = strcmp(f[ci], impl) == 0 && strcmp(f[cp], params) == 0 && strcmp(f[cm], mode) == 0 &&
                  strcmp(f[cb], bstr) == 0;
        hits += hit;
        char *samples = NULL;
        arb_row_t row = {0};
        for (int c = 0; c < ARB_COL_COUNT; c++) {
            int tc = arb_table_col(&t, arb_result_col_names[c]);
            row.f[c] = tc >= 0 ? f[tc] : NULL;
            if (!hit || tc < 0)
                continue;
            for (size_t k = 0; k < sizeof times / sizeof times[0]; k++)
                if (strcmp(arb_result_col_names[c], times[k]) == 0)
                    row.f[c] = scaled(num[c], sizeof num[c], f[tc], factor);
            if (c == ARB_COL_algbw_gbs || c == ARB_COL_busbw_gbs)
                row.f[c] = scaled(num[c], sizeof num[c], f[tc], 1.0 / factor);
            if (c == ARB_COL_samples_us && *f[tc] && scale_samples) {
                samples = malloc(strlen(f[tc]) * 2 + 64);
                size_t len = 0;
                for (char *s = f[tc], *end; samples && *s; s = end) {
                    double x = strtod(s, &end);
                    if (end == s)
                        break;
                    len += (size_t)sprintf(samples + len, "%s%.3f", len ? " " : "", x * factor);
                }
                row.f[c] = samples;
            }
        }
        if (!row.f[ARB_COL_role]) /* a file from before the role column */
            row.f[ARB_COL_role] = arb_role_name(arb_role_of_legacy_row(row.f[ARB_COL_impl], row.f[ARB_COL_note]));
        if (samples) /* statistics of the scaled, rounded samples: what the writer would store */
            rc |= restat(samples, &row, num);
        if (run_id)
            row.f[ARB_COL_run_id] = run_id;
        rc |= arb_results_append(w, &row);
        free(samples);
    }
    if (w)
        rc |= arb_results_close(w);
    arb_table_free(&t);
    if (hits != 1) {
        fprintf(stderr, "fixture: %s: %d rows match %s %s %s %zu, expected 1\n", src, hits, impl, params, mode, bytes);
        rc = -1;
    }
    return rc;
}

static char scratch[] = "/tmp/arb-analysis-XXXXXX";

int fx_dir_create(void) { return mkdtemp(scratch) ? 0 : -1; }

const char *fx_dir(void) { return scratch; }

const char *fx_at(const char *name)
{
    static char path[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", scratch, name);
    return path[k];
}

int fx_load(arb_pointset_t *ps, const char *name)
{
    char err[512];
    memset(ps, 0, sizeof *ps);
    if (arb_points_load(ps, fx_at(name), err, sizeof err)) {
        printf("# load %s: %s\n", name, err);
        return -1;
    }
    return 0;
}

int fx_dir_remove(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
    return system(cmd) == 0 ? 0 : -1;
}

fx_sweep_t fx_base_sweep(void)
{
    return (fx_sweep_t){.run_id = "base-run", .nccl_version = "2.28.3", .seed = 100, .nsamples = 200, .slow_factor = 1};
}
