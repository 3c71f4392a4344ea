/* SPDX-License-Identifier: MIT */
/* Unit tests of the regression gate: the bootstrap, planted regressions in synthetic
 * sweeps, the run-to-run noise estimate on exact numbers, and the committed 2 x H200
 * repeat sweeps. TAP output. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/tap.h"
#include "fixture.h"
#include "analysis/gate.h"
#include "analysis/resample.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_resample(void)
{
    arb_rng_t r;
    arb_rng_seed(&r, 42);
    int all = 1;
    for (size_t n = 1; n < 60; n++) {
        double v[60], w[60];
        for (size_t i = 0; i < n; i++)
            v[i] = w[i] = (double)arb_rng_below(&r, 7); /* many ties */
        qsort(w, n, sizeof *w, cmp_d);
        double want = n % 2 ? w[n / 2] : 0.5 * (w[n / 2 - 1] + w[n / 2]);
        all &= arb_median_inplace(v, n) == want;
    }
    tap_ok(all, "median by selection equals the sorted median for n = 1..59 with ties");
    double a[200], b[200];
    for (size_t i = 0; i < 200; i++) {
        a[i] = 12.0 * (1 + 0.05 * (arb_rng_uniform(&r) - 0.5));
        b[i] = 10.0 * (1 + 0.05 * (arb_rng_uniform(&r) - 0.5));
    }
    double lo1, hi1, lo2, hi2;
    int rc = arb_bootstrap_ratio_ci(a, 200, b, 200, 0.05, 2000, 7, &lo1, &hi1);
    rc |= arb_bootstrap_ratio_ci(a, 200, b, 200, 0.05, 2000, 7, &lo2, &hi2);
    tap_ok(rc == 0 && lo1 == lo2 && hi1 == hi2, "bootstrap is reproducible with a seed");
    tap_ok(lo1 < 1.2 && 1.2 < hi1 && hi1 - lo1 < 0.05, "95%% interval [%.4f, %.4f] holds the true ratio 1.2 and is tight", lo1, hi1);
    tap_ok(arb_bootstrap_ratio_ci(a, 0, b, 200, 0.05, 100, 1, &lo1, &hi1) != 0, "bootstrap refuses an empty set");
}

static int gate(const char *b, const char *c, arb_gate_result_t *r, arb_pointset_t *pb, arb_pointset_t *pc)
{
    arb_gate_opts_t o;
    char err[512];
    arb_gate_opts_default(&o);
    if (fx_load(pb, b) || fx_load(pc, c))
        return -1;
    if (arb_gate_compare(pb, pc, &o, r, err, sizeof err)) {
        printf("# gate %s %s: %s\n", b, c, err);
        arb_points_free(pb);
        arb_points_free(pc);
        return -1;
    }
    return 0;
}

static void gate_done(arb_gate_result_t *r, arb_pointset_t *pb, arb_pointset_t *pc)
{
    arb_gate_free(r);
    arb_points_free(pb);
    arb_points_free(pc);
}

static void test_gate(void)
{
    arb_gate_result_t r;
    arb_pointset_t b, c;
    if (gate("base.csv", "cand_same.csv", &r, &b, &c) == 0) {
        tap_ok(r.n == 32 && arb_gate_exit_status(&r) == 0 && r.count[ARB_GATE_REGRESSION] == 0 && r.nfallback == 0,
           "resampled-identical candidate: 32 points, no regression, all by bootstrap");
        gate_done(&r, &b, &c);
    } else {
        tap_ok(0, "gate base vs cand_same");
    }
    if (gate("base.csv", "cand_regress.csv", &r, &b, &c) == 0) {
        const arb_gate_point_t *g = NULL;
        for (size_t i = 0; i < r.n; i++)
            if (r.pts[i].verdict == ARB_GATE_REGRESSION)
                g = &r.pts[i];
        tap_ok(r.count[ARB_GATE_REGRESSION] == 1 && g && g->cand->bytes == 43008 && strcmp(g->cand->mode, "graph") == 0 &&
               strcmp(g->cand->impl, "p2p") == 0 && g->lo > 1.05 && arb_gate_exit_status(&r) == 1,
           "planted 20%% slowdown of p2p at 43008 graph is the one regression (ratio %.3f, interval [%.3f, %.3f])",
           g ? g->ratio : 0, g ? g->lo : 0, g ? g->hi : 0);
        gate_done(&r, &b, &c);
    } else {
        tap_ok(0, "gate base vs cand_regress");
    }
    if (gate("base.csv", "cand_fail.csv", &r, &b, &c) == 0) {
        tap_ok(r.count[ARB_GATE_FAILED] == 1 && arb_gate_exit_status(&r) == 1, "a failed check in the candidate fails the gate");
        gate_done(&r, &b, &c);
    } else {
        tap_ok(0, "gate base vs cand_fail");
    }
    if (gate("base.csv", "cand_upgrade.csv", &r, &b, &c) == 0) {
        tap_ok(r.n == 32 && r.nonly_base == 0 && arb_gate_exit_status(&r) == 0, "nccl=VERSION in params is ignored when matching");
        gate_done(&r, &b, &c);
    } else {
        tap_ok(0, "gate base vs cand_upgrade");
    }
    if (gate("base_nosamples.csv", "cand_regress_nosamples.csv", &r, &b, &c) == 0) {
        tap_ok(r.nfallback == r.ncompared && r.ncompared == 24 && r.count[ARB_GATE_REGRESSION] == 1, "without samples_us the p10/p90 rule still finds the 20%% slowdown (24 payload points compared, the 8 floors not)");
        gate_done(&r, &b, &c);
    } else {
        tap_ok(0, "gate without samples");
    }
    arb_gate_opts_t o;
    char err[512];
    arb_gate_opts_default(&o);
    if (fx_load(&b, "base.csv") == 0 && fx_load(&c, "other_fabric.csv") == 0) {
        tap_ok(arb_gate_compare(&b, &c, &o, &r, err, sizeof err) != 0 && strstr(err, "no point in common"),
           "no common points is an error: %s", err);
        arb_points_free(&b);
        arb_points_free(&c);
    }
}

/* Writes rows of one point (p2p graph 43008) with exact medians: one per run. */
static int write_runs_exact(const char *name, const char *mode, const double *med, const char *const *runs, size_t n)
{
    arb_results_writer_t *w = fx_create(fx_at(name));
    int rc = w ? 0 : -1;
    for (size_t i = 0; w && i < n; i++) {
        fx_point_t p = {.fabric = "pcie-gen5", .impl = "p2p", .params = "variant=oneshot-push", .op = "allreduce",
                        .fusion = "", .dtype = "bf16", .mode = mode, .check = "pass", .run_id = runs[i],
                        .ranks = 2, .bytes = 43008, .median_us = med[i], .sigma = 0, .nsamples = 20, .seed = 1};
        rc |= fx_append(w, &p);
    }
    return w && arb_results_close(w) == 0 ? rc : -1;
}

static const arb_gate_point_t *find_cand(const arb_gate_result_t *r, const arb_point_t *cand)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->pts[i].cand == cand)
            return &r->pts[i];
    return NULL;
}

static const arb_gate_point_t *find_point(const arb_gate_result_t *r, const char *impl, const char *mode, size_t bytes)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->pts[i].cand->impl, impl) == 0 && strcmp(r->pts[i].cand->mode, mode) == 0 &&
            r->pts[i].cand->bytes == bytes)
            return &r->pts[i];
    return NULL;
}

/* The noise estimate on exact numbers: runs at 10, 11, 12 us. */
static void test_gate_noise_estimate(void)
{
    static const double med3[] = {10, 11, 12}, cand[] = {11.5};
    static const char *const runs[] = {"r1", "r2", "r3"}, *const cr[] = {"c"};
    if (write_runs_exact("est_base.csv", "graph", med3, runs, 3) || write_runs_exact("est_cand.csv", "graph", cand, cr, 1)) {
        tap_ok(0, "write the estimation fixtures");
        return;
    }
    arb_gate_result_t r;
    arb_pointset_t b, c;
    if (gate("est_base.csv", "est_cand.csv", &r, &b, &c)) {
        tap_ok(0, "gate est_base vs est_cand");
        return;
    }
    const arb_gate_point_t *g = find_point(&r, "p2p", "graph", 43008);
    double l[3] = {log(10), log(11), log(12)}, mean = (l[0] + l[1] + l[2]) / 3, ss = 0;
    for (int i = 0; i < 3; i++)
        ss += (l[i] - mean) * (l[i] - mean);
    double sd = sqrt(ss / 2), allow = exp(4.0 * sd * sqrt(1 + 1.0 / 3));
    tap_ok(g && r.nruns_base == 3 && g->nruns == 3 && fabs(g->spread - 1.2) < 1e-12 && fabs(g->base_us - exp(mean)) < 1e-9 &&
           fabs(g->noise_sd - sd) < 1e-12 && fabs(g->allow - allow) < 1e-9 && fabs(g->bar - allow) < 1e-9 &&
           g->noise_src == ARB_GATE_NOISE_RUNS && g->verdict == ARB_GATE_OK,
       "3 runs at 10/11/12 us: centre %.4f (geo mean), spread %.3f, sd %.5f (expected %.5f), allowance %.4f (expected %.4f)",
       g ? g->base_us : 0, g ? g->spread : 0, g ? g->noise_sd : 0, sd, g ? g->allow : 0, allow);
    tap_ok(r.nmodes == 1 && r.modes[0].dof == 2 && fabs(r.modes[0].sd - sd) < 1e-12, "pooled graph sd over 1 point, 2 dof");
    gate_done(&r, &b, &c);

    /* One run: the mode default; the same run twice (one run_id) is still one run. */
    static const double one[] = {10, 10}, slow[] = {11.5};
    static const char *const same[] = {"r1", "r1"};
    if (write_runs_exact("one_base.csv", "eager", one, same, 2) == 0 && write_runs_exact("one_cand.csv", "eager", slow, cr, 1) == 0 &&
        gate("one_base.csv", "one_cand.csv", &r, &b, &c) == 0) {
        g = find_point(&r, "p2p", "eager", 43008);
        tap_ok(g && r.nruns_base == 1 && r.ndup_base == 1 && g->noise_src == ARB_GATE_NOISE_DEFAULT && g->allow == 1.25 &&
               g->verdict == ARB_GATE_OK,
           "one baseline run: eager default allowance 1.25 keeps a 15%% eager difference ok");
        gate_done(&r, &b, &c);
    } else {
        tap_ok(0, "gate one_base vs one_cand");
    }
}

/* The committed 2 x H200 repeat sweeps: real run-to-run noise. */
static void test_gate_repeats(const char *path_a, const char *path_b)
{
    arb_gate_opts_t o;
    arb_gate_result_t r;
    arb_pointset_t a = {0}, b = {0}, ab = {0};
    char err[512];
    arb_gate_opts_default(&o);
    if (arb_points_load(&a, path_a, err, sizeof err) || arb_points_load(&b, path_b, err, sizeof err) ||
        arb_points_load(&ab, path_a, err, sizeof err) || arb_points_load(&ab, path_b, err, sizeof err)) {
        tap_ok(0, "load the repeat runs: %s", err);
        goto done;
    }
    if (arb_gate_compare(&a, &b, &o, &r, err, sizeof err) == 0) {
        const arb_gate_point_t *g = NULL;
        double worst = 0;
        for (size_t i = 0; i < r.n; i++)
            if (r.pts[i].ratio > worst)
                worst = r.pts[i].ratio, g = &r.pts[i];
        tap_ok(r.n == 104 && arb_gate_exit_status(&r) == 0 && r.nnoise[ARB_GATE_NOISE_DEFAULT] == 104 && g &&
               strcmp(g->cand->mode, "eager") == 0 && worst > 1.15,
           "repeat b vs a: 104 points pass on the mode defaults (worst ratio %.3f, %s %s)", worst, g ? g->cand->impl : "?",
           g ? g->cand->mode : "?");
        arb_gate_free(&r);
    } else {
        tap_ok(0, "gate repeat a vs b: %s", err);
    }
    /* Plant a 30% slowdown of one graph point of b (median, spread and samples). */
    arb_point_t *slow = NULL;
    for (size_t i = 0; i < b.n; i++)
        if (strcmp(b.p[i].impl, "p2p") == 0 && strcmp(b.p[i].params, "variant=oneshot-flagfree,blocks=24,threads=256") == 0 &&
            strcmp(b.p[i].mode, "graph") == 0 && b.p[i].bytes == 43008)
            slow = &b.p[i];
    if (!slow) {
        tap_ok(0, "repeat b has a p2p graph 43008 point");
        goto done;
    }
    slow->median_us *= 1.3, slow->p10_us *= 1.3, slow->p90_us *= 1.3;
    for (size_t k = 0; k < slow->nsamples; k++)
        slow->samples_us[k] *= 1.3;
    if (arb_gate_compare(&a, &b, &o, &r, err, sizeof err) == 0) {
        const arb_gate_point_t *g = find_cand(&r, slow);
        tap_ok(r.count[ARB_GATE_REGRESSION] == 1 && g && g->cand == slow && g->verdict == ARB_GATE_REGRESSION,
           "30%% slowdown of one graph point in b: the one regression (ratio %.3f, bar %.3f)", g ? g->ratio : 0, g ? g->bar : 0);
        arb_gate_free(&r);
    } else {
        tap_ok(0, "gate repeat a vs slowed b: %s", err);
    }
    if (arb_gate_compare(&ab, &b, &o, &r, err, sizeof err) == 0) {
        const arb_gate_point_t *g = find_cand(&r, slow);
        tap_ok(r.nruns_base == 2 && r.nnoise[ARB_GATE_NOISE_RUNS] == r.n && r.count[ARB_GATE_REGRESSION] == 1 && g &&
               g->verdict == ARB_GATE_REGRESSION && r.nmodes == 2,
           "baseline a+b (2 runs) vs slowed b: the slowdown is a regression (bar %.3f; %zu regressions in all)",
           g ? g->bar : 0, r.count[ARB_GATE_REGRESSION]);
        for (size_t i = 0; i < r.n; i++)
            if (r.pts[i].verdict == ARB_GATE_REGRESSION && &r.pts[i] != g)
                printf("# also: %s %s %s %zu ratio %.3f bar %.3f\n", r.pts[i].cand->impl, r.pts[i].cand->params,
                       r.pts[i].cand->mode, r.pts[i].cand->bytes, r.pts[i].ratio, r.pts[i].bar);
        arb_gate_free(&r);
    } else {
        tap_ok(0, "gate repeat a+b vs slowed b: %s", err);
    }
    if (arb_gate_compare(&ab, &a, &o, &r, err, sizeof err) == 0) {
        tap_ok(arb_gate_exit_status(&r) == 0 && r.nruns_base == 2, "baseline a+b vs candidate a: pass");
        arb_gate_free(&r);
    } else {
        tap_ok(0, "gate repeat a+b vs a: %s", err);
    }
done:
    arb_points_free(&a);
    arb_points_free(&b);
    arb_points_free(&ab);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        printf("Bail out! usage: test_analysis_gate REPEAT_A.csv REPEAT_B.csv (the committed repeat sweeps)\n");
        return 1;
    }
    if (fx_dir_create()) {
        printf("Bail out! cannot create a temporary directory\n");
        return 1;
    }
    fx_sweep_t base = fx_base_sweep();
    fx_sweep_t same = base, slow = base, fail = base, up = base, nsb = base, nsc = base, nv = base;
    same.run_id = "cand", same.seed = 9000;
    slow = same, slow.slow_bytes = 43008, slow.slow_mode = "graph", slow.slow_factor = 1.2;
    fail.seed = 9100, fail.fail_bytes = 43008, fail.fail_mode = "eager";
    up.seed = 9200, up.nccl_version = "2.28.9";
    nsb.nsamples = 0;
    nsc = slow, nsc.nsamples = 0, nsc.seed = 9300;
    nv.fabric = "nvlink";
    if (fx_write_sweep(fx_at("base.csv"), &base) || fx_write_sweep(fx_at("cand_same.csv"), &same) ||
        fx_write_sweep(fx_at("cand_regress.csv"), &slow) || fx_write_sweep(fx_at("cand_fail.csv"), &fail) ||
        fx_write_sweep(fx_at("cand_upgrade.csv"), &up) || fx_write_sweep(fx_at("base_nosamples.csv"), &nsb) ||
        fx_write_sweep(fx_at("cand_regress_nosamples.csv"), &nsc) || fx_write_sweep(fx_at("other_fabric.csv"), &nv)) {
        printf("Bail out! cannot write fixtures in %s\n", fx_dir());
        return 1;
    }
    test_resample();
    test_gate();
    test_gate_noise_estimate();
    test_gate_repeats(argv[1], argv[2]);
    int rc = tap_done();
    if (rc == 0 && fx_dir_remove())
        printf("# could not remove %s\n", fx_dir());
    return rc;
}
