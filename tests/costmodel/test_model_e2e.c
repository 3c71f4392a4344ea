/* SPDX-License-Identifier: MIT */
/* arbench model e2e's arithmetic on hand-made fixtures (tests/costmodel/e2e/README.md). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "costmodel/model_e2e.h"
#include "costmodel/model_e2e_kernels.h"
#include "costmodel/model_gpu.h"

#define FIX ARB_TEST_ROOT "/tests/costmodel/e2e/"
#define NEAR(a, b) (fabs((double)(a) - (double)(b)) <= 1e-4 * fabs((double)(b)) + 1e-9)

static const arb_e2e_opts_t opts = {.target_read_gbs = 1800, .h200_peak_gbs = 4800, .hidden = 7168};
static arb_e2e_result_t res;

static const arb_e2e_row_t *find(const char *choice, const char *phase)
{
    for (size_t i = 0; i < res.nrows; i++)
        if (!strcmp(res.rows[i].choice, choice) && !strcmp(res.rows[i].phase, phase))
            return &res.rows[i];
    return NULL;
}

/* Worked by hand: r = 4000 / 1800; decode compute 8000 us, floor 6000 us; verify 9000 / 6500. */
static void t_decode(void)
{
    const char *files[] = {FIX "engine_fixture.csv"};
    char err[1024] = "";
    TAP_REQUIRE(arb_e2e_predict(files, 1, FIX "pred_fixture.csv", &opts, &res, err, sizeof err) == ARB_OK);
    TAP_EQ_INT((long long)res.nrows, 4);
    const double r = 4000.0 / 1800.0;
    const arb_e2e_row_t *n = find("nccl:algo=auto,proto=auto", "decode");
    TAP_REQUIRE(n != NULL);
    TAP_CHECK(NEAR(n->compute_us.v, 8000 * r));
    TAP_CHECK(NEAR(n->compute_us.lo, 6000 * r + 2000));     /* only the streaming floor scales */
    TAP_CHECK(NEAR(n->compute_us.hi, 8000 * 4800.0 / 1800)); /* the ratio of spec peaks */
    TAP_CHECK(NEAR(n->allreduce_us.v, 5000));                /* 13000 - 8000 */
    TAP_CHECK(NEAR(n->allreduce_us.lo, 2500) && NEAR(n->allreduce_us.hi, 10000)); /* 20/40, 80/40 */
    TAP_CHECK(NEAR(n->tok_s.v, 1e6 / (8000 * r + 5000)));
    TAP_CHECK(NEAR(n->tok_s.lo, 1e6 / (8000 * 4800.0 / 1800 + 10000)));
    TAP_CHECK(NEAR(n->tok_s.hi, 1e6 / (6000 * r + 2000 + 2500)));
    const arb_e2e_row_t *p = find("p2p:variant=twoshot,blocks=16,threads=512", "decode");
    TAP_REQUIRE(p != NULL);
    /* compute-only from the nccl run (same mode, phase, tokens); band 6/10 .. 15/10 */
    TAP_CHECK(NEAR(p->allreduce_us.v, 1220) && NEAR(p->allreduce_us.lo, 732) && NEAR(p->allreduce_us.hi, 1830));
    TAP_CHECK(NEAR(p->step_us.v, 8000 * r + 1220));
    TAP_CHECK(NEAR(p->tok_s.v, 52.6377));
}

static void t_spec(void)
{
    const double r = 4000.0 / 1800.0;
    const arb_e2e_row_t *s = find("p2p:variant=twoshot,blocks=16,threads=512", "spec");
    const arb_e2e_row_t *d = find("p2p:variant=twoshot,blocks=16,threads=512", "decode");
    TAP_REQUIRE(s != NULL && d != NULL);
    TAP_EQ_INT(s->spec_k, 2);
    /* draft: 440 us = k x 1220 / 61 = 40 us of all-reduce + 400 us compute; verify 9800 = 9000 + 800 */
    double cycle = 400 * r + 40 + 9000 * r + 800;
    TAP_CHECK(NEAR(s->step_us.v, cycle));
    TAP_CHECK(NEAR(s->allreduce_us.lo, 40 * 0.6 + 800 * 0.5)); /* verify at 43008 B: 6/12 */
    TAP_CHECK(NEAR(s->allreduce_us.hi, 40 * 1.5 + 800 * 2.0));
    TAP_CHECK(NEAR(s->tok_s.v, (1 + 0.7 + 0.49) * 1e6 / cycle));
    double R = cycle / d->step_us.v, pstar = (-1 + sqrt(1 + 4 * (R - 1))) / 2; /* 1 + p + p^2 = R */
    TAP_CHECK(NEAR(s->break_even.v, pstar));
    TAP_CHECK(s->break_even.lo <= s->break_even.v && s->break_even.v <= s->break_even.hi);
    TAP_CHECK(s->tok_s.lo < s->tok_s.v && s->tok_s.v < s->tok_s.hi);
}

/* Compute-free figures, by hand. NCCL: decode all-reduce 5000 (2500-10000), verify 14000 - 9000
 * = 5000 (43008 B: 22/44, 88/44 -> 2500-10000); p2p: decode 1220 (732-1830), verify 800 (400-1600). */
static void t_savings(void)
{
    const arb_e2e_row_t *d = find("p2p:variant=twoshot,blocks=16,threads=512", "decode");
    const arb_e2e_row_t *s = find("p2p:variant=twoshot,blocks=16,threads=512", "spec");
    const arb_e2e_row_t *n = find("nccl:algo=auto,proto=auto", "decode");
    TAP_REQUIRE(d != NULL && s != NULL && n != NULL);
    TAP_CHECK(NEAR(d->saving_us.v, 3780) && NEAR(d->saving_us.lo, 2500 - 1830) && NEAR(d->saving_us.hi, 10000 - 732));
    TAP_CHECK(NEAR(s->verify_allreduce_us.v, 800) && NEAR(s->verify_allreduce_us.lo, 400));
    TAP_CHECK(NEAR(s->verify_saving_us.v, 4200) && NEAR(s->verify_saving_us.lo, 2500 - 1600) &&
              NEAR(s->verify_saving_us.hi, 10000 - 400));
    TAP_CHECK(NEAR(n->saving_us.v, 0) && isnan(d->verify_saving_us.v)); /* NCCL against itself; no verify in decode */
    const double r = 4000.0 / 1800.0;
    TAP_CHECK(NEAR(n->allreduce_share.v, 5000 / (8000 * r + 5000)));
    TAP_CHECK(NEAR(n->allreduce_share.lo, 2500 / (2500 + 8000 * 4800.0 / 1800)));
    TAP_CHECK(NEAR(n->allreduce_share.hi, 10000 / (10000 + 6000 * r + 2000)));
    TAP_CHECK(!strcmp(res.fabric, "pcie-hostbridge") && res.ranks == 8);
    TAP_CHECK(strstr(res.pred_argv, "--ranks 8") != NULL && strstr(d->engine_csv, "engine_fixture.csv") != NULL);
}

static void write_file(const char *path, const char *text);

/* Compute by kernel family, by hand: T = 1 streams 61 x 10 + 60 x min(15, 20) + 61 x 5 (not
 * measured: its floor) = 1815 us of the 8000 us step, rest 6185; scaled 1815 x 4000 / 1800.
 * T = 3: 61 x 10 = 610 of 9000. The draft's compute follows decode's ratio to the table's step. */
static void t_kernels(void)
{
    arb_e2e_opts_t o = opts;
    o.kernels_csv = FIX "kernels_fixture.csv";
    o.launch_band = 0.3;
    const char *files[] = {FIX "engine_fixture.csv"};
    char err[1024] = "";
    TAP_REQUIRE(arb_e2e_predict(files, 1, FIX "pred_fixture.csv", &o, &res, err, sizeof err) == ARB_OK);
    const arb_e2e_row_t *n = find("nccl:algo=auto,proto=auto", "decode"), *s = find("nccl:algo=auto,proto=auto", "spec");
    TAP_REQUIRE(n != NULL && s != NULL);
    const double sc1 = 1815 * 4000.0 / 1800, sc3 = 610 * 4000.0 / 1800;
    TAP_CHECK(NEAR(n->compute_us.v, 6185 + sc1));
    TAP_CHECK(NEAR(n->compute_us.lo, 6185 * 0.7 + sc1) && NEAR(n->compute_us.hi, 6185 * 1.3 + sc1 * 1.2));
    const double dc = 400 * (6185 + sc1) / 8000; /* draft 563.93 us - 2 x 5000 / 61 of all-reduce */
    TAP_CHECK(NEAR(s->compute_us.v, dc + 8390 + sc3));
    TAP_CHECK(NEAR(s->compute_us.hi, 400 * (6185 * 1.3 + sc1 * 1.2) / 8000 + 8390 * 1.3 + sc3 * 1.2));
    char path[64];
    snprintf(path, sizeof path, "/tmp/arb_e2e_kern_%d.csv", (int)getpid());
    write_file(path, "schema,impl,tokens,read_gbs,family,family_layers,floor_us,graph_us\n"
                     "engine-kernels-1,nccl,1,4000,step,1,,8000\n");
    o.kernels_csv = path;
    err[0] = 0;
    TAP_CHECK(arb_e2e_predict(files, 1, FIX "pred_fixture.csv", &o, &res, err, sizeof err) != ARB_OK);
    TAP_CHECK(strstr(err, "expected noop") != NULL);
    remove(path);
}

/* Per-kernel scaling with GPU specs, by hand (e2e/gpu_*.spec, e2e/kernels_fixture.csv): issue
 * ratio 50 x 2000 / (100 x 2000) = 0.5, fast corner 50 x 2000 / (100 x 2200) = 0.4545, slow
 * 50 x 2000 / (100 x 1800) = 0.5556. T = 1: stream 1815, rest 6185 of which excess 61 x (12 - 10)
 * = 122 (qkv_a above its floor), gaps 6063; streaming at 4000 / 2000 = 3630 us. Fast end: gaps x 0.8
 * + excess x min(0.8, 0.4545) + 3630; slow end: rest x 1.2 + 3630 x 5000 / 4000. A step floor of
 * 5000 us at the H200's 4000 GB/s is 10000 us at 2000 GB/s: every end at least that. */
static void t_kernels_gpu(void)
{
    arb_gpu_spec_t g, r;
    char err[1024] = "";
    TAP_REQUIRE(arb_gpu_read(FIX "gpu_target.spec", &g, err, sizeof err) == ARB_OK);
    TAP_REQUIRE(arb_gpu_read(FIX "gpu_ref.spec", &r, err, sizeof err) == ARB_OK);
    const double ilo = arb_gpu_issue_ratio(&g, &r, -1), ihi = arb_gpu_issue_ratio(&g, &r, +1);
    TAP_CHECK(NEAR(arb_gpu_issue_ratio(&g, &r, 0), 0.5) && NEAR(ilo, 100000.0 / 220000) && NEAR(ihi, 100000.0 / 180000));
    arb_e2e_kernel_compute_t k;
    TAP_REQUIRE(arb_e2e_kernel_compute(FIX "kernels_fixture.csv", 1, g.mem_gbs.v, r.mem_gbs.v, g.launch_scale.band, ilo,
                                       ihi, &k, err, sizeof err) == ARB_OK);
    TAP_CHECK(NEAR(k.stream_h200_us, 1815) && NEAR(k.rest_us, 6185) && NEAR(k.excess_us, 122));
    TAP_CHECK(NEAR(k.target_us.v, 6185 + 3630));
    TAP_CHECK(NEAR(k.target_us.lo, 6063 * 0.8 + 122 * 100000.0 / 220000 + 3630));
    TAP_CHECK(NEAR(k.target_us.hi, 6185 * 1.2 + 3630 * 1.25));
    char path[64];
    snprintf(path, sizeof path, "/tmp/arb_e2e_floor_%d.csv", (int)getpid());
    write_file(path, "schema,impl,tokens,read_gbs,family,family_layers,floor_us,graph_us\n"
                     "engine-kernels-1,noop,1,4000,qkv_a,61,10,12\n"
                     "engine-kernels-1,noop,1,4000,step,1,5000,8000\n");
    TAP_REQUIRE(arb_e2e_kernel_compute(path, 1, 2000, 5000, 0.2, ilo, ihi, &k, err, sizeof err) == ARB_OK);
    TAP_CHECK(NEAR(k.floor_target_us, 10000) && NEAR(k.target_us.v, 10000) && NEAR(k.target_us.lo, 10000));
    TAP_CHECK(k.target_us.hi > 10000);
    remove(path);
    /* a value without its source is refused, naming the key */
    TAP_CHECK(arb_gpu_read_mem("mem_gbs = 1792\n", "x.spec", &g, err, sizeof err) != ARB_OK && strstr(err, "mem_gbs") && strstr(err, "source"));
    TAP_CHECK(arb_gpu_read_mem("sms = 188 # s\n", "x.spec", &g, err, sizeof err) != ARB_OK && strstr(err, "mem_gbs"));
}

static void t_break_even(void)
{
    TAP_CHECK(arb_e2e_break_even(2, 0.9) == 0);
    TAP_CHECK(isinf(arb_e2e_break_even(2, 3.5)));
    TAP_CHECK(NEAR(arb_e2e_break_even(1, 1.5), 0.5));
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void t_refusals(void)
{
    char err[1024] = "", path[64], nocmp[64];
    snprintf(path, sizeof path, "/tmp/arb_e2e_nocol_%d.csv", (int)getpid());
    write_file(path, "schema,impl,params,mode,phase,tokens,layers,median_us,read_gbs,hbm_floor_us,draft_us,verify_us,accept_rate\n"
                     "engine-1,modeled,\"impl=nccl\",graph,decode,1,61,13000,4000,6000,,,\n");
    const char *files[] = {path};
    TAP_CHECK(arb_e2e_predict(files, 1, FIX "pred_fixture.csv", &opts, &res, err, sizeof err) != ARB_OK);
    TAP_CHECK(strstr(err, "compute_only_us") != NULL);
    /* Every run with --no-noop-replay: no compute-only step to scale. */
    snprintf(nocmp, sizeof nocmp, "/tmp/arb_e2e_nocmp_%d.csv", (int)getpid());
    write_file(nocmp, "schema,impl,params,mode,phase,tokens,layers,median_us,compute_only_us,read_gbs,hbm_floor_us,draft_us,verify_us,accept_rate\n"
                      "engine-1,modeled,\"impl=nccl,params=algo=auto,proto=auto\",graph,decode,1,61,13000,,4000,6000,,,\n");
    files[0] = nocmp;
    err[0] = 0;
    TAP_CHECK(arb_e2e_predict(files, 1, FIX "pred_fixture.csv", &opts, &res, err, sizeof err) != ARB_OK);
    TAP_CHECK(strstr(err, "compute_only_us") != NULL);
    /* A prediction table without bands. */
    write_file(nocmp, "impl,params,mode,bytes,median_us,source\nnccl,\"algo=auto,proto=auto\",graph,14336,40,model\n");
    files[0] = FIX "engine_fixture.csv";
    err[0] = 0;
    TAP_CHECK(arb_e2e_predict(files, 1, nocmp, &opts, &res, err, sizeof err) != ARB_OK);
    TAP_CHECK(strstr(err, "band_lo_us") != NULL);
    /* A prediction table that does not say what it predicted (no fabric label). */
    write_file(nocmp, "impl,params,mode,bytes,median_us,band_lo_us,band_hi_us,source,ranks\n"
                      "nccl,\"algo=auto,proto=auto\",graph,14336,40,20,80,model,8\n");
    err[0] = 0;
    TAP_CHECK(arb_e2e_predict(files, 1, nocmp, &opts, &res, err, sizeof err) != ARB_OK);
    TAP_CHECK(strstr(err, "fabric") != NULL);
    remove(path);
    remove(nocmp);
}

/* --compute-at-floor 1.5, by hand: decode compute 1.5 x 6000 x r, verify 1.5 x 6500 x r, no band;
 * the draft's 400 us of compute x decode's scenario compute / its measured 8000; the all-reduce
 * replayed as before. A decode row without hbm_floor_us is refused. */
static void t_scenario(void)
{
    const char *files[] = {FIX "engine_fixture.csv"};
    char err[1024] = "";
    arb_e2e_opts_t o = opts;
    o.compute_floor_x = 1.5;
    TAP_REQUIRE(arb_e2e_predict(files, 1, FIX "pred_fixture.csv", &o, &res, err, sizeof err) == ARB_OK);
    const double r = 4000.0 / 1800.0, dec = 1.5 * 6000 * r, ver = 1.5 * 6500 * r;
    const arb_e2e_row_t *d = find("p2p:variant=twoshot,blocks=16,threads=512", "decode");
    const arb_e2e_row_t *s = find("p2p:variant=twoshot,blocks=16,threads=512", "spec");
    const arb_e2e_row_t *n = find("nccl:algo=auto,proto=auto", "decode");
    TAP_REQUIRE(d != NULL && s != NULL && n != NULL);
    TAP_CHECK(NEAR(d->compute_us.v, dec) && NEAR(d->compute_us.lo, dec) && NEAR(d->compute_us.hi, dec));
    TAP_CHECK(NEAR(n->compute_us.v, dec));
    TAP_CHECK(NEAR(d->allreduce_us.v, 1220) && NEAR(d->step_us.v, dec + 1220));
    const double cycle = 400 * dec / 8000 + 40 + ver + 800;
    TAP_CHECK(NEAR(s->step_us.v, cycle));
    const double R = cycle / (dec + 1220), pstar = (-1 + sqrt(1 + 4 * (R - 1))) / 2;
    TAP_CHECK(NEAR(s->break_even.v, pstar));
    TAP_CHECK(NEAR(res.compute_floor_x, 1.5));
    /* the scenario needs the floors */
    char path[64];
    snprintf(path, sizeof path, "/tmp/arb_e2e_nofloor_%d.csv", (int)getpid());
    write_file(path, "schema,impl,params,mode,phase,tokens,layers,median_us,compute_only_us,read_gbs,hbm_floor_us,draft_us,verify_us,accept_rate\n"
                     "engine-1,modeled,\"impl=nccl,params=algo=auto,proto=auto\",graph,decode,1,61,13000,8000,4000,,,,\n");
    files[0] = path;
    err[0] = 0;
    TAP_CHECK(arb_e2e_predict(files, 1, FIX "pred_fixture.csv", &o, &res, err, sizeof err) == ARB_ERR_INVALID);
    TAP_CHECK(strstr(err, "--compute-at-floor needs the decode row's hbm_floor_us") != NULL);
    remove(path);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"decode", t_decode}, {"spec", t_spec}, {"savings", t_savings}, {"kernels", t_kernels}, {"kernels_gpu", t_kernels_gpu}, {"break_even", t_break_even}, {"refusals", t_refusals}, {"scenario", t_scenario}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
