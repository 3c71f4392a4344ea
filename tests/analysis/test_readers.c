/* SPDX-License-Identifier: MIT */
/* Unit tests of the analysis readers: strict number fields, params stripping, a row's
 * statistics against its own samples, profile files (the committed ones and hostile
 * ones). TAP output. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/tap.h"
#include "analysis/profile.h"
#include "analysis/resample.h"
#include "base/stats.h"

static void test_parsers(void)
{
    unsigned long long v;
    tap_ok(arb_parse_u64_field("43008", 1ull << 62, &v) == 0 && v == 43008, "u64 parses 43008");
    tap_ok(arb_parse_u64_field("18446744073709551615", UINT64_MAX, &v) == 0 && v == UINT64_MAX, "u64 parses UINT64_MAX");
    tap_ok(arb_parse_u64_field("18446744073709551616", UINT64_MAX, &v) != 0, "u64 rejects overflow");
    const char *bad[] = {"", "-1", "42K", " 1", "1 ", "0x10", "+5"};
    int all = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        all &= arb_parse_u64_field(bad[i], UINT64_MAX, &v) != 0;
    tap_ok(all, "u64 rejects '', -1, 42K, spaces, hex, sign");
    double d;
    tap_ok(arb_parse_double_field("7.25", &d) == 0 && d == 7.25, "double parses 7.25");
    tap_ok(arb_parse_double_field("nan", &d) && arb_parse_double_field("inf", &d) && arb_parse_double_field("1e999", &d) &&
           arb_parse_double_field("", &d) && arb_parse_double_field("1.0x", &d),
       "double rejects nan, inf, overflow, empty, trailing junk");
    char out[128];
    static const char *const drop[] = {"nccl", NULL};
    arb_params_strip("algo=Ring,proto=LL,nccl=2.28.3", drop, out, sizeof out);
    tap_ok(strcmp(out, "algo=Ring,proto=LL") == 0, "params_strip drops nccl= (got '%s')", out);
    arb_params_strip("nccl=2.28.3,algo=Tree,ncclx=1", drop, out, sizeof out);
    tap_ok(strcmp(out, "algo=Tree,ncclx=1") == 0, "params_strip keeps keys that only start with nccl (got '%s')", out);
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
        tap_ok(rc == 0, "committed profile %s reads (%s)", strrchr(path, '/') + 1, rc ? err : "ok");
        if (rc == 0)
            arb_profile_free(&p);
        n++;
    }
    if (ls)
        pclose(ls);
    tap_ok(n >= 1, "committed profiles found: %d", n);
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
    tap_ok(!bad, "200 stored samples and their own statistics agree (%s)", bad ? why : "");
    bad = arb_points_check_samples(all, 200, 200, st.median * 1.3, st.p10 * 1.3, st.p90 * 1.3, NAN, NAN, NAN, why, sizeof why);
    tap_ok(bad && !strcmp(bad, "median_us") && strstr(why, "200 samples"), "statistics x1.3 over unchanged samples: median_us refused (%s)", why);
    bad = arb_points_check_samples(all, 200, 200, st.median + 0.002, st.p10, st.p90, NAN, NAN, NAN, why, sizeof why);
    tap_ok(bad && !strcmp(bad, "median_us"), "a median 0.002 us off (beyond the 3-decimal rounding) is refused");
    bad = arb_points_check_samples(all, 200, 200, st.median, st.p10, st.p90, st.min, st.max, st.mean + 0.01, why, sizeof why);
    tap_ok(bad && !strcmp(bad, "mean_us"), "a mean the samples do not give is refused (%s)", why);
    bad = arb_points_check_samples(all, 199, 200, st.median, st.p10, st.p90, NAN, NAN, NAN, why, sizeof why);
    tap_ok(bad && !strcmp(bad, "samples_us"), "199 samples where iters=200: refused (a cut samples_us) (%s)", why);
    /* 10000 taken, every 3rd stored: 3334 samples, statistics of all 10000. */
    size_t stride = (N + ARB_RESULTS_MAX_STORED_SAMPLES - 1) / ARB_RESULTS_MAX_STORED_SAMPLES, n = 0;
    for (size_t i = 0; i < N; i += stride)
        kept[n++] = all[i];
    arb_stats_compute(all, N, &st);
    bad = arb_points_check_samples(kept, n, N, st.median, st.p10, st.p90, st.min, st.max, st.mean, why, sizeof why);
    tap_ok(!bad && n == 3334, "strided (stride %zu, %zu stored): the full set's statistics pass (%s)", stride, n, bad ? why : "");
    bad = arb_points_check_samples(kept, n, N, st.median * 1.3, st.p10 * 1.3, st.p90 * 1.3, NAN, NAN, NAN, why, sizeof why);
    tap_ok(bad && !strcmp(bad, "median_us"), "strided: statistics x1.3 refused (%s)", why);
    memcpy(sorted, kept, n * sizeof *sorted);
    for (size_t i = 1; i < n; i++) /* insertion sort: the test's own order statistic */
        for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
            double t = sorted[j];
            sorted[j] = sorted[j - 1], sorted[j - 1] = t;
        }
    double q58 = sorted[(size_t)(0.58 * (double)n)], q53 = sorted[(size_t)(0.53 * (double)n)];
    bad = arb_points_check_samples(kept, n, N, q58, st.p10, st.p90, NAN, NAN, NAN, why, sizeof why);
    tap_ok(bad && !strcmp(bad, "median_us"), "strided: a median at the subset's 0.58 quantile is refused (%s)", why);
    bad = arb_points_check_samples(kept, n, N, q53, st.p10, st.p90, NAN, NAN, NAN, why, sizeof why);
    tap_ok(!bad, "strided: a median at the subset's 0.53 quantile is within the slack (%s)", bad ? why : "");
    bad = arb_points_check_samples(kept, n, N, st.median, st.p10, st.p90, sorted[0] + 0.5, NAN, NAN, why, sizeof why);
    tap_ok(bad && !strcmp(bad, "min_us"), "strided: min_us above the smallest stored sample is refused (%s)", why);
    bad = arb_points_check_samples(kept, 3000, N, st.median, st.p10, st.p90, NAN, NAN, NAN, why, sizeof why);
    tap_ok(bad && !strcmp(bad, "samples_us"), "strided: 3000 stored where iters=10000 means 3334: refused (%s)", why);
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
        tap_ok(rc != 0 && strstr(err, "bad.csv"), "profile reader rejects %s: %s", what[i], err);
    }
    static const char good[] = "schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params,extra\n"
                               "1,f,2,,bf16,allreduce,graph,0,10,nccl,\"algo=Ring,proto=LL\",x\n"
                               "1,f,2,,bf16,allreduce,graph,11,18446744073709551615,p2p,,y\n";
    arb_profile_t p;
    char err[512];
    int rc = arb_profile_read_mem(good, sizeof good - 1, "good.csv", &p, err, sizeof err);
    const arb_profile_entry_t *e = rc ? NULL : arb_profile_lookup(&p, "f", 2, 1, "bf16", "allreduce", "graph", 11);
    tap_ok(e && strcmp(e->impl, "p2p") == 0, "profile reader: extra columns ignored, empty nodes matches any, lookup finds 11");
    if (!rc)
        arb_profile_free(&p);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        printf("Bail out! usage: test_analysis_readers REPEAT_A.csv (a committed repeat sweep: the profiles next to it are read)\n");
        return 1;
    }
    test_parsers();
    test_sample_check();
    test_committed_profiles(argv[1]);
    test_profile_reader();
    return tap_done();
}
