/* SPDX-License-Identifier: MIT */
/* Unit tests of the analysis library (points, resampling, profile, gate). TAP output. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arbench/plugin.h>

#include "fixture.h"
#include "analysis/gate.h"
#include "analysis/profile.h"
#include "analysis/resample.h"
#include "base/stats.h"

static int ntest, nfail;
static char dir[] = "/tmp/arb-analysis-XXXXXX";

static void ok(int cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", cond ? "ok" : "not ok", ++ntest);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    nfail += !cond;
}

static const char *at(const char *name)
{
    static char path[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", dir, name);
    return path[k];
}

static int load(arb_pointset_t *ps, const char *name)
{
    char err[512];
    memset(ps, 0, sizeof *ps);
    if (arb_points_load(ps, at(name), err, sizeof err)) {
        printf("# load %s: %s\n", name, err);
        return -1;
    }
    return 0;
}

static void test_parsers(void)
{
    unsigned long long v;
    ok(arb_parse_u64_field("43008", 1ull << 62, &v) == 0 && v == 43008, "u64 parses 43008");
    ok(arb_parse_u64_field("18446744073709551615", UINT64_MAX, &v) == 0 && v == UINT64_MAX, "u64 parses UINT64_MAX");
    ok(arb_parse_u64_field("18446744073709551616", UINT64_MAX, &v) != 0, "u64 rejects overflow");
    const char *bad[] = {"", "-1", "42K", " 1", "1 ", "0x10", "+5"};
    int all = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        all &= arb_parse_u64_field(bad[i], UINT64_MAX, &v) != 0;
    ok(all, "u64 rejects '', -1, 42K, spaces, hex, sign");
    double d;
    ok(arb_parse_double_field("7.25", &d) == 0 && d == 7.25, "double parses 7.25");
    ok(arb_parse_double_field("nan", &d) && arb_parse_double_field("inf", &d) && arb_parse_double_field("1e999", &d) &&
           arb_parse_double_field("", &d) && arb_parse_double_field("1.0x", &d),
       "double rejects nan, inf, overflow, empty, trailing junk");
    char out[128];
    static const char *const drop[] = {"nccl", NULL};
    arb_params_strip("algo=Ring,proto=LL,nccl=2.28.3", drop, out, sizeof out);
    ok(strcmp(out, "algo=Ring,proto=LL") == 0, "params_strip drops nccl= (got '%s')", out);
    arb_params_strip("nccl=2.28.3,algo=Tree,ncclx=1", drop, out, sizeof out);
    ok(strcmp(out, "algo=Tree,ncclx=1") == 0, "params_strip keeps keys that only start with nccl (got '%s')", out);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Every committed profile (results/ *profile*.csv, next to the repeat runs) passes the reader. */
static void test_committed_profiles(const char *repeat_a)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ls \"$(dirname '%s')\"/*profile*.csv 2>/dev/null", repeat_a);
    FILE *ls = popen(cmd, "r");
    char path[4096];
    int n = 0;
    while (ls && fgets(path, sizeof path, ls)) {
        path[strcspn(path, "\n")] = '\0';
        arb_profile_t p;
        char err[1024] = "";
        int rc = arb_profile_read(path, &p, err, sizeof err);
        ok(rc == 0, "committed profile %s reads (%s)", strrchr(path, '/') + 1, rc ? err : "ok");
        if (rc == 0)
            arb_profile_free(&p);
        n++;
    }
    if (ls)
        pclose(ls);
    ok(n >= 1, "committed profiles found: %d", n);
}

/* Roles from capabilities, and the one floor/baseline rule every consumer uses. */
static void test_roles(void)
{
    ok(arb_role_of_caps(ARB_CAP_DEVICE_MEMORY | ARB_CAP_REFERENCE) == ARB_ROLE_REFERENCE &&
           arb_role_of_caps(ARB_CAP_DEVICE_MEMORY | ARB_CAP_BASELINE) == ARB_ROLE_BASELINE &&
           arb_role_of_caps(ARB_CAP_DEVICE_MEMORY) == ARB_ROLE_CANDIDATE &&
           arb_role_of_caps(ARB_CAP_REFERENCE | ARB_CAP_BASELINE) == ARB_ROLE_REFERENCE,
       "roles from capabilities: reference, baseline, candidate (reference wins)");
    arb_role_t r = ARB_ROLE_CANDIDATE;
    ok(arb_role_parse("baseline", &r) == 0 && r == ARB_ROLE_BASELINE && arb_role_parse("Baseline", &r) != 0 &&
           arb_role_parse("", &r) != 0 && !strcmp(arb_role_name(ARB_ROLE_REFERENCE), "reference"),
       "role names parse exactly");
    ok(arb_role_of_legacy_row("ping", "reference floor: no payload, not checked") == ARB_ROLE_REFERENCE &&
           arb_role_of_legacy_row("nccl", "") == ARB_ROLE_BASELINE && arb_role_of_legacy_row("p2p", "") == ARB_ROLE_CANDIDATE,
       "files without the role column: floors by their note, nccl the baseline");
    arb_refs_t refs = {0};
    arb_refs_add(&refs, ARB_ROLE_REFERENCE, 0, 0.71, "noop", "");
    arb_refs_add(&refs, ARB_ROLE_REFERENCE, 0, 2.93, "ping", "");
    arb_refs_add(&refs, ARB_ROLE_BASELINE, 1, 7.94, "nccl", "algo=Ring");
    arb_refs_add(&refs, ARB_ROLE_BASELINE, 1, 7.71, "nccl", "algo=auto");
    arb_refs_add(&refs, ARB_ROLE_BASELINE, 0, 1.00, "nccl", "algo=broken"); /* not passing: never the baseline */
    arb_refs_add(&refs, ARB_ROLE_CANDIDATE, 1, 3.37, "p2p", "");
    ok(refs.floor_us == 2.93 && !strcmp(refs.floor_impl, "ping") && refs.baseline_us == 7.71 &&
           !strcmp(refs.baseline_params, "algo=auto"),
       "floor = the highest reference (ping 2.93 over noop 0.71), baseline = the fastest passing one (7.71)");
    ok(fabs(arb_ratio(3.37, refs.baseline_us) - 0.437) < 0.001 && isnan(arb_ratio(3.37, 0)),
       "ratio to the baseline 0.437; NAN without a reference");
}

/* Statistics against the row's own samples: exact with every sample stored, quantile
 * ranks with a strided subset (the writer keeps every ceil(n/4096)-th of n). */
static void test_sample_check(void)
{
    enum { N = 10000 };
    static double all[N], kept[N], sorted[N];
    arb_rng_t r;
    arb_rng_seed(&r, 4242);
    for (size_t i = 0; i < N; i++) /* 3-decimal values, as the writer prints them */
        all[i] = round((5.0 + 2.0 * arb_rng_uniform(&r) + (i % 7 == 0 ? 3.0 : 0.0)) * 1000) / 1000;
    arb_stats_t st;
    arb_stats_compute(all, 200, &st);
    char why[256];
    const char *bad = arb_points_check_samples(all, 200, 200, st.median, st.p10, st.p90, st.min, st.max, st.mean, why, sizeof why);
    ok(!bad, "200 stored samples and their own statistics agree (%s)", bad ? why : "");
    bad = arb_points_check_samples(all, 200, 200, st.median * 1.3, st.p10 * 1.3, st.p90 * 1.3, NAN, NAN, NAN, why, sizeof why);
    ok(bad && !strcmp(bad, "median_us") && strstr(why, "200 samples"), "statistics x1.3 over unchanged samples: median_us refused (%s)", why);
    bad = arb_points_check_samples(all, 200, 200, st.median + 0.002, st.p10, st.p90, NAN, NAN, NAN, why, sizeof why);
    ok(bad && !strcmp(bad, "median_us"), "a median 0.002 us off (beyond the 3-decimal rounding) is refused");
    bad = arb_points_check_samples(all, 200, 200, st.median, st.p10, st.p90, st.min, st.max, st.mean + 0.01, why, sizeof why);
    ok(bad && !strcmp(bad, "mean_us"), "a mean the samples do not give is refused (%s)", why);
    bad = arb_points_check_samples(all, 199, 200, st.median, st.p10, st.p90, NAN, NAN, NAN, why, sizeof why);
    ok(bad && !strcmp(bad, "samples_us"), "199 samples where iters=200: refused (a cut samples_us) (%s)", why);
    /* 10000 taken, every 3rd stored: 3334 samples, statistics of all 10000. */
    size_t stride = (N + ARB_RESULTS_MAX_STORED_SAMPLES - 1) / ARB_RESULTS_MAX_STORED_SAMPLES, n = 0;
    for (size_t i = 0; i < N; i += stride)
        kept[n++] = all[i];
    arb_stats_compute(all, N, &st);
    bad = arb_points_check_samples(kept, n, N, st.median, st.p10, st.p90, st.min, st.max, st.mean, why, sizeof why);
    ok(!bad && n == 3334, "strided (stride %zu, %zu stored): the full set's statistics pass (%s)", stride, n, bad ? why : "");
    bad = arb_points_check_samples(kept, n, N, st.median * 1.3, st.p10 * 1.3, st.p90 * 1.3, NAN, NAN, NAN, why, sizeof why);
    ok(bad && !strcmp(bad, "median_us"), "strided: statistics x1.3 refused (%s)", why);
    memcpy(sorted, kept, n * sizeof *sorted);
    for (size_t i = 1; i < n; i++) /* insertion sort: the test's own order statistic */
        for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
            double t = sorted[j];
            sorted[j] = sorted[j - 1], sorted[j - 1] = t;
        }
    double q58 = sorted[(size_t)(0.58 * (double)n)], q53 = sorted[(size_t)(0.53 * (double)n)];
    bad = arb_points_check_samples(kept, n, N, q58, st.p10, st.p90, NAN, NAN, NAN, why, sizeof why);
    ok(bad && !strcmp(bad, "median_us"), "strided: a median at the subset's 0.58 quantile is refused (%s)", why);
    bad = arb_points_check_samples(kept, n, N, q53, st.p10, st.p90, NAN, NAN, NAN, why, sizeof why);
    ok(!bad, "strided: a median at the subset's 0.53 quantile is within the slack (%s)", bad ? why : "");
    bad = arb_points_check_samples(kept, n, N, st.median, st.p10, st.p90, sorted[0] + 0.5, NAN, NAN, why, sizeof why);
    ok(bad && !strcmp(bad, "min_us"), "strided: min_us above the smallest stored sample is refused (%s)", why);
    bad = arb_points_check_samples(kept, 3000, N, st.median, st.p10, st.p90, NAN, NAN, NAN, why, sizeof why);
    ok(bad && !strcmp(bad, "samples_us"), "strided: 3000 stored where iters=10000 means 3334: refused (%s)", why);
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
    ok(all, "median by selection equals the sorted median for n = 1..59 with ties");
    double a[200], b[200];
    for (size_t i = 0; i < 200; i++) {
        a[i] = 12.0 * (1 + 0.05 * (arb_rng_uniform(&r) - 0.5));
        b[i] = 10.0 * (1 + 0.05 * (arb_rng_uniform(&r) - 0.5));
    }
    double lo1, hi1, lo2, hi2;
    int rc = arb_bootstrap_ratio_ci(a, 200, b, 200, 0.05, 2000, 7, &lo1, &hi1);
    rc |= arb_bootstrap_ratio_ci(a, 200, b, 200, 0.05, 2000, 7, &lo2, &hi2);
    ok(rc == 0 && lo1 == lo2 && hi1 == hi2, "bootstrap is reproducible with a seed");
    ok(lo1 < 1.2 && 1.2 < hi1 && hi1 - lo1 < 0.05, "95%% interval [%.4f, %.4f] holds the true ratio 1.2 and is tight", lo1, hi1);
    ok(arb_bootstrap_ratio_ci(a, 0, b, 200, 0.05, 100, 1, &lo1, &hi1) != 0, "bootstrap refuses an empty set");
}

static const arb_profile_entry_t *find(const arb_profile_t *p, const char *mode, size_t bytes)
{
    return arb_profile_lookup(p, "pcie-gen5", 2, 1, "bf16", "allreduce", mode, bytes);
}

static void test_profile(void)
{
    arb_pointset_t ps;
    arb_profile_t p;
    arb_profile_opts_t o;
    char err[512];
    arb_profile_opts_default(&o);
    if (load(&ps, "base.csv")) {
        ok(0, "load base.csv");
        return;
    }
    ok(arb_profile_build(&ps, &o, &p, err, sizeof err) == 0, "profile builds from base.csv");
    ok(p.n == 6, "3 ranges per mode, 2 modes (got %zu)", p.n);
    const arb_profile_entry_t *e = find(&p, "graph", 43008);
    ok(e && strcmp(e->impl, "p2p") == 0 && e->min_bytes == 0 && e->max_bytes == 64512 && e->points == 2,
       "graph [0, 64512]: p2p over 2 sizes (boundary halfway between 43008 and 86016)");
    ok(e && strcmp(e->confidence, "ci95") == 0 && e->speedup > 1.6 && e->speedup < 1.7 && e->rep_bytes == 14336,
       "p2p row: ci95, speedup %.3f taken at its weaker size 14336 (10/6, not 12/7)", e ? e->speedup : 0);
    e = find(&p, "graph", 86016);
    ok(e && strcmp(e->impl, "nccl") == 0 && strstr(e->params, "proto=LL") && strcmp(e->confidence, "tie") == 0 &&
           e->min_bytes == 64513 && e->max_bytes == 567296,
       "graph 86016: p2p's 1.3%% lead is below --min-speedup, NCCL Ring/LL keeps it as a tie");
    e = find(&p, "graph", SIZE_MAX);
    ok(e && strstr(e->params, "proto=Simple") && strcmp(e->confidence, "baseline") == 0 && e->max_bytes == SIZE_MAX,
       "graph 1M and up: NCCL Ring/Simple is fastest outright");
    int noop = 0;
    for (size_t i = 0; i < p.n; i++)
        noop |= strcmp(p.e[i].impl, "noop") == 0;
    ok(!noop, "the noop reference row is never chosen");
    ok(p.nsources == 1 && strcmp(p.source_runs[0], "base-run") == 0, "profile records its source and run_id");

    /* Round trip through the CSV and JSON files. */
    arb_profile_t back;
    ok(arb_profile_write_csv(&p, at("profile.csv"), err, sizeof err) == 0, "profile CSV written");
    ok(arb_profile_read(at("profile.csv"), &back, err, sizeof err) == 0 && back.n == p.n, "profile CSV reads back");
    int same = back.n == p.n;
    for (size_t i = 0; same && i < p.n; i++)
        same = back.e[i].min_bytes == p.e[i].min_bytes && back.e[i].max_bytes == p.e[i].max_bytes &&
               strcmp(back.e[i].params, p.e[i].params) == 0 && strcmp(back.e[i].sources, p.e[i].sources) == 0 &&
               fabs(back.e[i].median_us - p.e[i].median_us) < 1e-3;
    ok(same, "the CSV round trip keeps ranges, params (with commas), sources and medians");
    arb_profile_free(&back);
    ok(arb_profile_write_json(&p, at("profile.json"), err, sizeof err) == 0, "profile JSON written");
    json_error_t je;
    json_t *j = json_load_file(at("profile.json"), 0, &je);
    json_t *entries = json_object_get(j, "entries");
    ok(j && json_integer_value(json_object_get(j, "schema")) == 1 && json_array_size(entries) == p.n,
       "JSON: schema 1 and one entry per range");
    json_t *last = json_array_get(entries, 2);
    ok(json_is_null(json_object_get(last, "max_bytes")) &&
           json_integer_value(json_object_get(json_array_get(entries, 0), "max_bytes")) == 64512,
       "JSON: open-ended max_bytes is null, others integers");
    json_decref(j);
    arb_profile_free(&p);
    arb_points_free(&ps);
}

/* A custom impl a little faster than NCCL with heavy noise and few samples, or
 * clearly faster with little noise. */
static void test_profile_noise(void)
{
    struct { double factor, sigma; size_t n; const char *want; } cases[] = {
        {0.97, 0.30, 20, "nccl"},
        {0.80, 0.03, 200, "p2p"},
    };
    for (size_t c = 0; c < 2; c++) {
        arb_results_writer_t *w = fx_create(at("noise.csv"));
        fx_point_t n = {.fabric = "pcie-gen5", .impl = "nccl", .params = "algo=Ring,proto=LL", .op = "allreduce",
                        .fusion = "", .dtype = "bf16", .mode = "graph", .check = "pass", .run_id = "noise",
                        .ranks = 2, .bytes = 43008, .median_us = 10, .sigma = cases[c].sigma, .nsamples = cases[c].n,
                        .seed = 11};
        fx_point_t q = n;
        q.impl = "p2p", q.params = "variant=oneshot-push", q.median_us = 10 * cases[c].factor, q.seed = 12;
        int rc = !w || fx_append(w, &n) || fx_append(w, &q) || arb_results_close(w);
        arb_pointset_t ps;
        arb_profile_t p;
        arb_profile_opts_t o;
        char err[512];
        arb_profile_opts_default(&o);
        o.min_speedup = 1.0; /* only the statistics decide */
        rc = rc || load(&ps, "noise.csv") || arb_profile_build(&ps, &o, &p, err, sizeof err);
        ok(!rc && p.n == 1 && strcmp(p.e[0].impl, cases[c].want) == 0,
           "factor %.2f, sigma %.2f, %zu samples: %s keeps 43008 (%s)", cases[c].factor, cases[c].sigma, cases[c].n,
           cases[c].want, !rc && p.n ? p.e[0].confidence : "-");
        if (!rc) {
            arb_profile_free(&p);
            arb_points_free(&ps);
        }
    }
}

static void test_profile_reader(void)
{
    static const char *const bad[] = {
        "schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params\n2,f,2,1,bf16,allreduce,graph,0,10,nccl,\n",
        "schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params\n1,f,2,1,bf16,allreduce,graph,20,10,nccl,\n",
        "schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params\n1,f,2,1,bf16,allreduce,graph,0,10,nccl,\n1,f,2,1,bf16,allreduce,graph,10,20,p2p,\n",
        "schema,fabric,ranks,dtype,op,mode,min_bytes,max_bytes,impl,params\n1,f,2,bf16,allreduce,graph,0,10,nccl,\n",
        "schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params\n1,f,x,1,bf16,allreduce,graph,0,10,nccl,\n",
    };
    static const char *const what[] = {"schema 2", "min > max", "overlapping ranges", "missing nodes column", "ranks x"};
    for (size_t i = 0; i < 5; i++) {
        arb_profile_t p;
        char err[512] = "";
        int rc = arb_profile_read_mem(bad[i], strlen(bad[i]), "bad.csv", &p, err, sizeof err);
        ok(rc != 0 && strstr(err, "bad.csv"), "profile reader rejects %s: %s", what[i], err);
    }
    static const char good[] = "schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params,extra\n"
                               "1,f,2,,bf16,allreduce,graph,0,10,nccl,\"algo=Ring,proto=LL\",x\n"
                               "1,f,2,,bf16,allreduce,graph,11,18446744073709551615,p2p,,y\n";
    arb_profile_t p;
    char err[512];
    int rc = arb_profile_read_mem(good, sizeof good - 1, "good.csv", &p, err, sizeof err);
    const arb_profile_entry_t *e = rc ? NULL : arb_profile_lookup(&p, "f", 2, 1, "bf16", "allreduce", "graph", 11);
    ok(e && strcmp(e->impl, "p2p") == 0, "profile reader: extra columns ignored, empty nodes matches any, lookup finds 11");
    if (!rc)
        arb_profile_free(&p);
}

static int gate(const char *b, const char *c, arb_gate_result_t *r, arb_pointset_t *pb, arb_pointset_t *pc)
{
    arb_gate_opts_t o;
    char err[512];
    arb_gate_opts_default(&o);
    if (load(pb, b) || load(pc, c))
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
        ok(r.n == 32 && arb_gate_exit_status(&r) == 0 && r.count[ARB_GATE_REGRESSION] == 0 && r.nfallback == 0,
           "resampled-identical candidate: 32 points, no regression, all by bootstrap");
        gate_done(&r, &b, &c);
    } else {
        ok(0, "gate base vs cand_same");
    }
    if (gate("base.csv", "cand_regress.csv", &r, &b, &c) == 0) {
        const arb_gate_point_t *g = NULL;
        for (size_t i = 0; i < r.n; i++)
            if (r.pts[i].verdict == ARB_GATE_REGRESSION)
                g = &r.pts[i];
        ok(r.count[ARB_GATE_REGRESSION] == 1 && g && g->cand->bytes == 43008 && strcmp(g->cand->mode, "graph") == 0 &&
               strcmp(g->cand->impl, "p2p") == 0 && g->lo > 1.05 && arb_gate_exit_status(&r) == 1,
           "planted 20%% slowdown of p2p at 43008 graph is the one regression (ratio %.3f, interval [%.3f, %.3f])",
           g ? g->ratio : 0, g ? g->lo : 0, g ? g->hi : 0);
        gate_done(&r, &b, &c);
    } else {
        ok(0, "gate base vs cand_regress");
    }
    if (gate("base.csv", "cand_fail.csv", &r, &b, &c) == 0) {
        ok(r.count[ARB_GATE_FAILED] == 1 && arb_gate_exit_status(&r) == 1, "a failed check in the candidate fails the gate");
        gate_done(&r, &b, &c);
    } else {
        ok(0, "gate base vs cand_fail");
    }
    if (gate("base.csv", "cand_upgrade.csv", &r, &b, &c) == 0) {
        ok(r.n == 32 && r.nonly_base == 0 && arb_gate_exit_status(&r) == 0, "nccl=VERSION in params is ignored when matching");
        gate_done(&r, &b, &c);
    } else {
        ok(0, "gate base vs cand_upgrade");
    }
    if (gate("base_nosamples.csv", "cand_regress_nosamples.csv", &r, &b, &c) == 0) {
        ok(r.nfallback == r.ncompared && r.ncompared == 24 && r.count[ARB_GATE_REGRESSION] == 1, "without samples_us the p10/p90 rule still finds the 20%% slowdown (24 payload points compared, the 8 floors not)");
        gate_done(&r, &b, &c);
    } else {
        ok(0, "gate without samples");
    }
    arb_gate_opts_t o;
    char err[512];
    arb_gate_opts_default(&o);
    if (load(&b, "base.csv") == 0 && load(&c, "other_fabric.csv") == 0) {
        ok(arb_gate_compare(&b, &c, &o, &r, err, sizeof err) != 0 && strstr(err, "no point in common"),
           "no common points is an error: %s", err);
        arb_points_free(&b);
        arb_points_free(&c);
    }
}

/* Writes rows of one point (p2p graph 43008) with exact medians: one per run. */
static int write_runs_exact(const char *name, const char *mode, const double *med, const char *const *runs, size_t n)
{
    arb_results_writer_t *w = fx_create(at(name));
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
        ok(0, "write the estimation fixtures");
        return;
    }
    arb_gate_result_t r;
    arb_pointset_t b, c;
    if (gate("est_base.csv", "est_cand.csv", &r, &b, &c)) {
        ok(0, "gate est_base vs est_cand");
        return;
    }
    const arb_gate_point_t *g = find_point(&r, "p2p", "graph", 43008);
    double l[3] = {log(10), log(11), log(12)}, mean = (l[0] + l[1] + l[2]) / 3, ss = 0;
    for (int i = 0; i < 3; i++)
        ss += (l[i] - mean) * (l[i] - mean);
    double sd = sqrt(ss / 2), allow = exp(4.0 * sd * sqrt(1 + 1.0 / 3));
    ok(g && r.nruns_base == 3 && g->nruns == 3 && fabs(g->spread - 1.2) < 1e-12 && fabs(g->base_us - exp(mean)) < 1e-9 &&
           fabs(g->noise_sd - sd) < 1e-12 && fabs(g->allow - allow) < 1e-9 && fabs(g->bar - allow) < 1e-9 &&
           g->noise_src == ARB_GATE_NOISE_RUNS && g->verdict == ARB_GATE_OK,
       "3 runs at 10/11/12 us: centre %.4f (geo mean), spread %.3f, sd %.5f (expected %.5f), allowance %.4f (expected %.4f)",
       g ? g->base_us : 0, g ? g->spread : 0, g ? g->noise_sd : 0, sd, g ? g->allow : 0, allow);
    ok(r.nmodes == 1 && r.modes[0].dof == 2 && fabs(r.modes[0].sd - sd) < 1e-12, "pooled graph sd over 1 point, 2 dof");
    gate_done(&r, &b, &c);

    /* One run: the mode default; the same run twice (one run_id) is still one run. */
    static const double one[] = {10, 10}, slow[] = {11.5};
    static const char *const same[] = {"r1", "r1"};
    if (write_runs_exact("one_base.csv", "eager", one, same, 2) == 0 && write_runs_exact("one_cand.csv", "eager", slow, cr, 1) == 0 &&
        gate("one_base.csv", "one_cand.csv", &r, &b, &c) == 0) {
        g = find_point(&r, "p2p", "eager", 43008);
        ok(g && r.nruns_base == 1 && r.ndup_base == 1 && g->noise_src == ARB_GATE_NOISE_DEFAULT && g->allow == 1.25 &&
               g->verdict == ARB_GATE_OK,
           "one baseline run: eager default allowance 1.25 keeps a 15%% eager difference ok");
        gate_done(&r, &b, &c);
    } else {
        ok(0, "gate one_base vs one_cand");
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
        ok(0, "load the repeat runs: %s", err);
        goto done;
    }
    if (arb_gate_compare(&a, &b, &o, &r, err, sizeof err) == 0) {
        const arb_gate_point_t *g = NULL;
        double worst = 0;
        for (size_t i = 0; i < r.n; i++)
            if (r.pts[i].ratio > worst)
                worst = r.pts[i].ratio, g = &r.pts[i];
        ok(r.n == 104 && arb_gate_exit_status(&r) == 0 && r.nnoise[ARB_GATE_NOISE_DEFAULT] == 104 && g &&
               strcmp(g->cand->mode, "eager") == 0 && worst > 1.15,
           "repeat b vs a: 104 points pass on the mode defaults (worst ratio %.3f, %s %s)", worst, g ? g->cand->impl : "?",
           g ? g->cand->mode : "?");
        arb_gate_free(&r);
    } else {
        ok(0, "gate repeat a vs b: %s", err);
    }
    /* Plant a 30% slowdown of one graph point of b (median, spread and samples). */
    arb_point_t *slow = NULL;
    for (size_t i = 0; i < b.n; i++)
        if (strcmp(b.p[i].impl, "p2p") == 0 && strcmp(b.p[i].params, "variant=oneshot-flagfree,blocks=24,threads=256") == 0 &&
            strcmp(b.p[i].mode, "graph") == 0 && b.p[i].bytes == 43008)
            slow = &b.p[i];
    if (!slow) {
        ok(0, "repeat b has a p2p graph 43008 point");
        goto done;
    }
    slow->median_us *= 1.3, slow->p10_us *= 1.3, slow->p90_us *= 1.3;
    for (size_t k = 0; k < slow->nsamples; k++)
        slow->samples_us[k] *= 1.3;
    if (arb_gate_compare(&a, &b, &o, &r, err, sizeof err) == 0) {
        const arb_gate_point_t *g = find_cand(&r, slow);
        ok(r.count[ARB_GATE_REGRESSION] == 1 && g && g->cand == slow && g->verdict == ARB_GATE_REGRESSION,
           "30%% slowdown of one graph point in b: the one regression (ratio %.3f, bar %.3f)", g ? g->ratio : 0, g ? g->bar : 0);
        arb_gate_free(&r);
    } else {
        ok(0, "gate repeat a vs slowed b: %s", err);
    }
    if (arb_gate_compare(&ab, &b, &o, &r, err, sizeof err) == 0) {
        const arb_gate_point_t *g = find_cand(&r, slow);
        ok(r.nruns_base == 2 && r.nnoise[ARB_GATE_NOISE_RUNS] == r.n && r.count[ARB_GATE_REGRESSION] == 1 && g &&
               g->verdict == ARB_GATE_REGRESSION && r.nmodes == 2,
           "baseline a+b (2 runs) vs slowed b: the slowdown is a regression (bar %.3f; %zu regressions in all)",
           g ? g->bar : 0, r.count[ARB_GATE_REGRESSION]);
        for (size_t i = 0; i < r.n; i++)
            if (r.pts[i].verdict == ARB_GATE_REGRESSION && &r.pts[i] != g)
                printf("# also: %s %s %s %zu ratio %.3f bar %.3f\n", r.pts[i].cand->impl, r.pts[i].cand->params,
                       r.pts[i].cand->mode, r.pts[i].cand->bytes, r.pts[i].ratio, r.pts[i].bar);
        arb_gate_free(&r);
    } else {
        ok(0, "gate repeat a+b vs slowed b: %s", err);
    }
    if (arb_gate_compare(&ab, &a, &o, &r, err, sizeof err) == 0) {
        ok(arb_gate_exit_status(&r) == 0 && r.nruns_base == 2, "baseline a+b vs candidate a: pass");
        arb_gate_free(&r);
    } else {
        ok(0, "gate repeat a+b vs a: %s", err);
    }
done:
    arb_points_free(&a);
    arb_points_free(&b);
    arb_points_free(&ab);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        printf("Bail out! usage: test_analysis REPEAT_A.csv REPEAT_B.csv (the committed repeat sweeps)\n");
        return 1;
    }
    if (!mkdtemp(dir)) {
        printf("Bail out! cannot create a temporary directory\n");
        return 1;
    }
    fx_sweep_t base = {.run_id = "base-run", .nccl_version = "2.28.3", .seed = 100, .nsamples = 200, .slow_factor = 1};
    fx_sweep_t same = base, slow = base, fail = base, up = base, nsb = base, nsc = base, nv = base;
    same.run_id = "cand", same.seed = 9000;
    slow = same, slow.slow_bytes = 43008, slow.slow_mode = "graph", slow.slow_factor = 1.2;
    fail.seed = 9100, fail.fail_bytes = 43008, fail.fail_mode = "eager";
    up.seed = 9200, up.nccl_version = "2.28.9";
    nsb.nsamples = 0;
    nsc = slow, nsc.nsamples = 0, nsc.seed = 9300;
    nv.fabric = "nvlink";
    if (fx_write_sweep(at("base.csv"), &base) || fx_write_sweep(at("cand_same.csv"), &same) ||
        fx_write_sweep(at("cand_regress.csv"), &slow) || fx_write_sweep(at("cand_fail.csv"), &fail) ||
        fx_write_sweep(at("cand_upgrade.csv"), &up) || fx_write_sweep(at("base_nosamples.csv"), &nsb) ||
        fx_write_sweep(at("cand_regress_nosamples.csv"), &nsc) || fx_write_sweep(at("other_fabric.csv"), &nv)) {
        printf("Bail out! cannot write fixtures in %s\n", dir);
        return 1;
    }
    test_parsers();
    test_sample_check();
    test_roles();
    test_committed_profiles(argv[1]);
    test_resample();
    test_profile();
    test_profile_noise();
    test_profile_reader();
    test_gate();
    test_gate_noise_estimate();
    test_gate_repeats(argv[1], argv[2]);
    printf("1..%d\n", ntest);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (nfail == 0 && system(cmd) != 0)
        printf("# could not remove %s\n", dir);
    return nfail ? 1 : 0;
}
