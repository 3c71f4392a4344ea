/* SPDX-License-Identifier: MIT */
/* The cost model on hand-made fabrics, a fit on synthetic data with known constants,
 * spec errors, and the modeled plugin's table lookup. TAP; no GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "modeled_table.h"
#include "tap.h"
#include "runtime/loader.h"
#include "costmodel/model_fit.h"
#include "results/results.h"

#define NEAR(a, b, tol) (fabs((a) - (b)) <= (tol))

/* 4 GPUs, two switches of two on one socket: the numbers are chosen so each bound is exact. */
static const char *quad_spec =
    "name = test-quad\nlabel = pcie-hostbridge\ngpus = 4\nsockets = 1\nswitches_per_socket = 2\n"
    "gpus_per_switch = 2\nlink_gbs = 50 # test\nuplink_gbs = 25 # test\nhost_gbs = 1000 # test\ngpu_band = 0.3 # test\n"
    "switch.write_gbs = 50 # t\nswitch.read_gbs = 10 # t\nswitch.lat_us = 0.5 +-0.2 # t\nswitch.rtt_us = 1 # t\n"
    "hostbridge.write_gbs = 40 # t\nhostbridge.read_gbs = 10 # t\nhostbridge.lat_us = 1 +-0.5 # t\nhostbridge.rtt_us = 2 # t\n"
    "host.write_gbs = 50 # t\nhost.read_gbs = 50 # t\nhost.lat_us = 1 # t\nhost.rtt_us = 1 # t\n";

static const char *nvl_spec =
    "name = test-nvl\nlabel = nvlink\ngpus = 2\nsockets = 1\nnvlink = 1\nlink_gen = 5\nlink_width = 16\n"
    "host_gbs = 1000 # t\ngpu_band = 0 # t\nnvlink.write_gbs = 1000 # t\nnvlink.read_gbs = 1000 # t\n"
    "nvlink.lat_us = 0.5 # t\nnvlink.rtt_us = 1 # t\nhost.write_gbs = 50 # t\nhost.read_gbs = 50 # t\n"
    "host.lat_us = 1 # t\nhost.rtt_us = 1 # t\n";

static void test_fabric_paths(void)
{
    arb_fabric_t f;
    char err[512];
    TAP_CHECK(arb_fabric_read_mem(quad_spec, "quad", &f, err, sizeof err) == 0);
    TAP_CHECK(arb_fabric_path(&f, 0, 1) == ARB_PATH_SWITCH);
    TAP_CHECK(arb_fabric_path(&f, 1, 2) == ARB_PATH_HOSTBRIDGE);
    TAP_CHECK(arb_fabric_path(&f, 3, -1) == ARB_PATH_HOST);
    TAP_CHECK(arb_fabric_worst_path(&f, 2) == ARB_PATH_SWITCH && arb_fabric_worst_path(&f, 4) == ARB_PATH_HOSTBRIDGE);
    arb_fabric_t n;
    TAP_CHECK(arb_fabric_read_mem(nvl_spec, "nvl", &n, err, sizeof err) == 0);
    TAP_CHECK(NEAR(n.link_gbs.v, 48.0, 1e-12)); /* NCCL's width x speed / 80 for Gen5 x16 */
    TAP_CHECK(arb_fabric_path(&n, 0, 1) == ARB_PATH_NVLINK);
}

/* The committed 2 x H200 topology export: two GPUs on one host bridge (the VM's XML has no
 * NVLink distances), placed by the XML, constants from the spec. */
static void test_fabric_xml(void)
{
    arb_fabric_t f;
    char err[512];
    TAP_CHECK(arb_fabric_read_mem(quad_spec, "quad", &f, err, sizeof err) == 0);
    TAP_CHECK(arb_fabric_apply_xml(&f, ARB_TEST_XML, err, sizeof err) == 0);
    TAP_CHECK(f.ngpus == 2 && f.sockets == 1 && f.switch_of[0] == -1 && f.switch_of[1] == -1 && !f.nvlink);
    TAP_CHECK(arb_fabric_path(&f, 0, 1) == ARB_PATH_HOSTBRIDGE);
    TAP_CHECK(arb_fabric_apply_xml(&f, "/nonexistent.xml", err, sizeof err) != 0 && strstr(err, "nonexistent"));
}

static void test_spec_errors(void)
{
    arb_fabric_t f;
    char err[512], buf[4096];
    /* a constant without its source */
    snprintf(buf, sizeof buf, "%s", quad_spec);
    char *p = strstr(buf, "uplink_gbs = 25 # test");
    memcpy(p, "uplink_gbs = 25       ", 22);
    TAP_CHECK(arb_fabric_read_mem(buf, "nosrc", &f, err, sizeof err) != 0 && strstr(err, "source") && strstr(err, "nosrc:8"));
    TAP_CHECK(arb_fabric_read_mem("name = x\nlabel = y\ngpus = 8\nsockets = 3\nlink_gbs = 1 # s\nxsocket_gbs = 1 # s\nhost_gbs = 1 # s\ngpu_band = 0 # s\n", "odd", &f, err, sizeof err) != 0 && strstr(err, "sockets"));
    TAP_CHECK(arb_fabric_read_mem("name = x\nbogus = 1 # s\n", "bogus", &f, err, sizeof err) != 0 && strstr(err, "bogus:2"));
    /* a path class the GPUs use but the spec does not describe */
    const char *cut = strstr(quad_spec, "hostbridge.write_gbs");
    snprintf(buf, sizeof buf, "%.*s", (int)(cut - quad_spec), quad_spec);
    strcat(buf, "host.write_gbs = 50 # t\nhost.read_gbs = 50 # t\nhost.lat_us = 1 # t\nhost.rtt_us = 1 # t\n");
    TAP_CHECK(arb_fabric_read_mem(buf, "nohb", &f, err, sizeof err) != 0 && strstr(err, "hostbridge.write_gbs"));
}

static void test_phase_contention(void)
{
    arb_fabric_t f;
    char err[512];
    TAP_CHECK(arb_fabric_read_mem(quad_spec, "quad", &f, err, sizeof err) == 0);
    arb_flow_t fl[16];
    size_t k = 0;
    double S = 1e6; /* push: every GPU writes S into each of 3 peers */
    for (int g = 0; g < 4; g++)
        for (int q = 0; q < 4; q++)
            if (q != g)
                fl[k++] = (arb_flow_t){g, q, g, 'w', S};
    /* Each switch's uplink carries 2 GPUs x 2 peers outside x 1 MB = 4 MB at 25 GB/s: 160 us,
     * above each issuer's 1 MB at 50 + 2 MB at 40 GB/s = 70 us and each link's 3 MB / 50 = 60 us. */
    TAP_CHECK(NEAR(arb_model_phase_us(&f, fl, k, 0, 1.0, 0), 160.0, 1e-9));
    f.uplink_gbs.v = 100; /* now the issuers bound it */
    TAP_CHECK(NEAR(arb_model_phase_us(&f, fl, k, 0, 1.0, 0), 70.0, 1e-9));
    TAP_CHECK(NEAR(arb_model_phase_us(&f, fl, k, 10.0, 1.0, 0), 300.0, 1e-9)); /* a 10 GB/s kernel: 3 MB */
    /* reads are rated apart: GPU0 pulls 1 MB from GPU1 over the switch at 10 GB/s */
    arb_flow_t r = {1, 0, 0, 'r', S};
    TAP_CHECK(NEAR(arb_model_phase_us(&f, &r, 1, 0, 1.0, 0), 100.0, 1e-9));
    /* a band corner moves a +-0 constant not at all and widens nothing else here */
    TAP_CHECK(NEAR(arb_model_phase_us(&f, &r, 1, 0, 1.0, 1), 100.0, 1e-9));
}

/* Synthetic measurements from known constants, through the real fit. */
static const double L = 0.7, FLAG = 2.2, FF_O = 0.3, FF_BW = 120, NC_O = 5.0, NC_BW = 150, SHM_HOP = 1.8, SHM_BW = 10;

static void add_obs(arb_obs_set_t *s, const char *impl, const char *params, arb_transport_t tr, double bytes, double us)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->o = realloc(s->o, s->cap * sizeof *s->o);
    }
    arb_obs_t *o = &s->o[s->n++];
    memset(o, 0, sizeof *o);
    snprintf(o->impl, sizeof o->impl, "%s", impl);
    snprintf(o->params, sizeof o->params, "%s", params);
    snprintf(o->mode, sizeof o->mode, "graph");
    snprintf(o->op, sizeof o->op, "allreduce");
    snprintf(o->source, sizeof o->source, "synthetic");
    o->key = arb_model_family(impl, params);
    o->transport = tr;
    o->ranks = 2;
    o->bytes = bytes;
    o->median_us = us;
}

static void synthetic(arb_obs_set_t *s, double noise)
{
    memset(s, 0, sizeof *s);
    const double hop = arb_nccl_hw_lat_nvlink_us[ARB_NCCL_RING][ARB_NCCL_LL];
    for (int i = 0; i < 8; i++) {
        double S = 14336.0 * (1 << i), wobble = 1 + noise * ((i % 2) ? 1 : -1);
        add_obs(s, "noop", "", ARB_TRANSPORT_P2P, S, L);
        add_obs(s, "ping", "timeout_ms=2000", ARB_TRANSPORT_P2P, S, L + FLAG);
        add_obs(s, "p2p", "variant=oneshot-flagfree,blocks=24", ARB_TRANSPORT_P2P, S,
                wobble * (L + FLAG + FF_O + 2 * S / (1e3 * FF_BW)));
        add_obs(s, "nccl", "algo=Ring,proto=LL,nccl=2.28.3", ARB_TRANSPORT_P2P, S,
                wobble * (L + NC_O + 2 * hop + S / (1e3 * NC_BW)));
        add_obs(s, "nccl", "algo=Ring,proto=LL,nccl=2.28.3", ARB_TRANSPORT_SHM, S,
                wobble * (L + NC_O + 2 * SHM_HOP + S / (1e3 * SHM_BW)));
    }
}

static void test_fit_recovers(void)
{
    arb_fabric_t nvl;
    char err[512];
    TAP_CHECK(arb_fabric_read_mem(nvl_spec, "nvl", &nvl, err, sizeof err) == 0);
    arb_obs_set_t s;
    synthetic(&s, 0);
    arb_fit_t fit;
    TAP_CHECK(arb_model_fit(&s, &nvl, 0, 1e9, &fit, err, sizeof err) == 0);
    TAP_CHECK(NEAR(fit.launch_us[1], L, 1e-9) && NEAR(fit.flag_us[1], FLAG, 1e-9));
    TAP_CHECK(isnan(fit.launch_us[0]));
    const arb_fit_entry_t *ff = arb_fit_find(&fit, "p2p", "variant=oneshot-flagfree,blocks=24", "graph", ARB_TRANSPORT_P2P);
    const arb_fit_entry_t *nc = arb_fit_find(&fit, "nccl", "algo=Ring,proto=LL", "graph", ARB_TRANSPORT_P2P);
    const arb_fit_entry_t *sh = arb_fit_find(&fit, "nccl", "algo=Ring,proto=LL", "graph", ARB_TRANSPORT_SHM);
    TAP_CHECK(ff && NEAR(ff->offset_us, FF_O, 1e-6) && NEAR(ff->bw_gbs, FF_BW, 1e-4) && ff->rel_err < 1e-9);
    TAP_CHECK(nc && NEAR(nc->offset_us, NC_O, 1e-6) && NEAR(nc->bw_gbs, NC_BW, 1e-4));
    TAP_CHECK(sh && NEAR(sh->hop_us, SHM_HOP, 1e-6) && NEAR(sh->bw_gbs, SHM_BW, 1e-5));
    /* The fitted model reproduces its own data and round-trips through its file. */
    arb_prediction_t p;
    if (ff) {
        arb_model_predict_one(&fit, &nvl, ff, NULL, &nvl, 2, 57344, &p);
        TAP_CHECK(!p.why_not && NEAR(p.us, L + FLAG + FF_O + 2 * 57344 / (1e3 * FF_BW), 1e-6));
        TAP_CHECK(p.lo_us <= p.us && p.hi_us >= p.us);
    }
    char path[] = "/tmp/arbench-test-fit-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    snprintf(fit.fabric_file, sizeof fit.fabric_file, "nvl");
    TAP_CHECK(arb_fit_write(&fit, path, err, sizeof err) == 0);
    arb_fit_t back;
    TAP_CHECK(arb_fit_read(path, &back, err, sizeof err) == 0 && back.n == fit.n);
    if (back.n == fit.n)
        TAP_CHECK(NEAR(back.e[0].bw_gbs, fit.e[0].bw_gbs, 1e-4 * fit.e[0].bw_gbs) && NEAR(back.launch_us[1], L, 1e-9));
    unlink(path);
    arb_fit_free(&back);
    arb_fit_free(&fit);
    /* Noisy data: the residual shows in rel_err, the constants stay close. */
    arb_obs_free(&s);
    synthetic(&s, 0.05);
    TAP_CHECK(arb_model_fit(&s, &nvl, 0, 1e9, &fit, err, sizeof err) == 0);
    ff = arb_fit_find(&fit, "p2p", "variant=oneshot-flagfree,blocks=24", "graph", ARB_TRANSPORT_P2P);
    TAP_CHECK(ff && ff->rel_err > 0.03 && ff->rel_err < 0.08 && NEAR(ff->bw_gbs, FF_BW, 0.15 * FF_BW));
    arb_fit_free(&fit);
    arb_obs_free(&s);
    /* No floors: refused with a reason. */
    arb_obs_set_t none = {0};
    add_obs(&none, "p2p", "variant=oneshot-push", ARB_TRANSPORT_P2P, 1000, 5);
    TAP_CHECK(arb_model_fit(&none, &nvl, 0, 1e9, &fit, err, sizeof err) != 0 && strstr(err, "noop"));
    arb_obs_free(&none);
}

/* Prediction on a hand-made PCIe fabric from known constants: every term by hand. */
static void test_predict_pcie(void)
{
    arb_fabric_t nvl, q;
    char err[512];
    TAP_CHECK(arb_fabric_read_mem(nvl_spec, "nvl", &nvl, err, sizeof err) == 0);
    TAP_CHECK(arb_fabric_read_mem(quad_spec, "quad", &q, err, sizeof err) == 0);
    q.uplink_gbs.v = 100;
    arb_fit_t fit = {.launch_us = {NAN, L, NAN}, .flag_us = {NAN, FLAG, NAN}};
    arb_fit_entry_t push = {.impl = "p2p", .params = "variant=oneshot-push", .mode = "graph",
                            .key = {.family = ARB_FAM_PUSH}, .offset_us = 0.4, .bw_gbs = 1000};
    arb_prediction_t p;
    double S = 1e6;
    arb_model_predict_one(&fit, &nvl, &push, NULL, &q, 4, S, &p);
    /* L + O + 2 flags x (FLAG + hostbridge lat 1 - nvlink lat 0.5) + the 70 us phase, then
     * the band: the hostbridge latency at +-50%, gpu_band 0.3 on top. */
    double t = L + 0.4 + 2 * (FLAG + 0.5) + 70.0;
    TAP_CHECK(!p.why_not && NEAR(p.us, t, 1e-9));
    TAP_CHECK(NEAR(p.hi_us, (t + 2 * 0.5) * 1.3, 1e-9) && NEAR(p.lo_us, (t - 2 * 0.5) * 0.7, 1e-9));
    /* LL128 on PCIe: declined with NCCL's reason */
    arb_fit_entry_t ll128 = {.impl = "nccl", .params = "algo=Ring,proto=LL128", .mode = "graph",
                             .key = {.family = ARB_FAM_NCCL, .algo = ARB_NCCL_RING, .proto = ARB_NCCL_LL128}};
    arb_model_predict_one(&fit, &nvl, &ll128, NULL, &q, 4, S, &p);
    TAP_CHECK(p.why_not && strstr(p.why_not, "LL128"));
    /* NCCL Ring LL over 2 GPUs of one switch (P2P): base + 2 PCI hops + bytes / (link x 0.5) */
    arb_fit_entry_t ll = {.impl = "nccl", .params = "algo=Ring,proto=LL", .mode = "graph",
                          .key = {.family = ARB_FAM_NCCL, .algo = ARB_NCCL_RING, .proto = ARB_NCCL_LL},
                          .offset_us = 5.0, .bw_gbs = 1000};
    arb_model_predict_one(&fit, &nvl, &ll, NULL, &q, 2, S, &p);
    TAP_CHECK(!p.why_not && NEAR(p.us, L + 5.0 + 2 * arb_nccl_hw_lat_pci_us[1][0] + S / (1e3 * 25.0), 1e-9));
    /* ... and over 4 GPUs NCCL crosses the switches through SHM, which this fit lacks */
    arb_model_predict_one(&fit, &nvl, &ll, NULL, &q, 4, S, &p);
    TAP_CHECK(p.why_not && strstr(p.why_not, "SHM"));
    /* With its SHM twin (hop 2 us, 10 GB/s): the spec's route (P2P in a switch, SHM across)
     * and all-SHM both cost L + 5 + 6 x 2 + 1.5 MB / 10 GB/s; the band also covers P2P on
     * every pair, whose fast corner is L + 5 + 6 x 0.7 + 1.5 MB / (40 x 0.5 GB/s). */
    arb_fit_entry_t shm = {.impl = "nccl", .params = "algo=Ring,proto=LL", .mode = "graph",
                           .key = ll.key, .transport = ARB_TRANSPORT_SHM, .hop_us = 2.0, .bw_gbs = 10};
    arb_model_predict_one(&fit, &nvl, &ll, &shm, &q, 4, S, &p);
    TAP_CHECK(!p.why_not && NEAR(p.us, L + 5 + 12 + 150, 1e-9));
    TAP_CHECK(NEAR(p.lo_us, (L + 5 + 6 * 0.7 + 75) * 0.7, 1e-9) && NEAR(p.hi_us, (L + 167) * 1.3, 1e-9));
    TAP_CHECK(strstr(p.detail, "routes spec/all-P2P/all-SHM") != NULL);
}

static void write_table(const char *path)
{
    char err[256];
    unlink(path);
    arb_results_writer_t *w = arb_results_open(path, err, sizeof err);
    TAP_CHECK(w != NULL);
    if (!w)
        return;
    const double b[] = {1000, 4000, 16000}, us[] = {2, 8, 50};
    char bytes[32], med[32];
    for (int mode = 0; mode < 2; mode++)
        for (int i = 0; i < 3; i++) {
            arb_row_t r = {0};
            snprintf(bytes, sizeof bytes, "%.0f", b[i]);
            snprintf(med, sizeof med, "%g", us[i] * (mode ? 2 : 1));
            r.f[ARB_COL_schema] = "1", r.f[ARB_COL_impl] = "nccl", r.f[ARB_COL_params] = "algo=Ring,proto=LL";
            r.f[ARB_COL_mode] = mode ? "eager" : "graph", r.f[ARB_COL_ranks] = "8", r.f[ARB_COL_op] = "allreduce";
            r.f[ARB_COL_bytes] = bytes, r.f[ARB_COL_median_us] = med, r.f[ARB_COL_check] = "model";
            arb_results_append(w, &r);
        }
    arb_results_close(w);
}

static void test_table_lookup(void)
{
    char path[] = "/tmp/arbench-test-table-XXXXXX", why[512], params[700];
    int fd = mkstemp(path);
    close(fd);
    write_table(path);
    modeled_select_t sel;
    modeled_table_t t;
    double us;
    snprintf(params, sizeof params, "table=%s,impl=nccl,params=algo=Ring,proto=LL", path);
    TAP_CHECK(modeled_parse_params(params, &sel, why, sizeof why) == 0 && strcmp(sel.params, "algo=Ring,proto=LL") == 0);
    TAP_CHECK(modeled_table_load(&sel, 1, &t, why, sizeof why) == 0 && t.n == 3); /* graph by default, ranks 8 */
    TAP_CHECK(modeled_table_lookup(&t, 4000, &us, why, sizeof why) == 0 && NEAR(us, 8, 1e-12));
    TAP_CHECK(modeled_table_lookup(&t, 2000, &us, why, sizeof why) == 0 && NEAR(us, 2 + 6 * log(2.0) / log(4.0), 1e-12));
    TAP_CHECK(modeled_table_lookup(&t, 999, &us, why, sizeof why) != 0 && strstr(why, path) && strstr(why, "999"));
    TAP_CHECK(modeled_table_lookup(&t, 16001, &us, why, sizeof why) != 0);
    modeled_table_free(&t);
    snprintf(params, sizeof params, "table=%s,mode=eager,scale=0.5,offset_us=1", path);
    TAP_CHECK(modeled_parse_params(params, &sel, why, sizeof why) == 0 && modeled_table_load(&sel, 1, &t, why, sizeof why) == 0);
    TAP_CHECK(modeled_table_lookup(&t, 16000, &us, why, sizeof why) == 0 && NEAR(us, 50 * 2 * 0.5 - 1, 1e-12));
    modeled_table_free(&t);
    snprintf(params, sizeof params, "table=%s,ranks=2", path);
    TAP_CHECK(modeled_parse_params(params, &sel, why, sizeof why) == 0 && modeled_table_load(&sel, 1, &t, why, sizeof why) != 0 && strstr(why, "ranks=2"));
    TAP_CHECK(modeled_parse_params("impl=nccl", &sel, why, sizeof why) != 0 && strstr(why, "table"));
    TAP_CHECK(modeled_parse_params("table=x,mode=fast", &sel, why, sizeof why) != 0 && strstr(why, "graph"));
    TAP_CHECK(modeled_parse_params("table=x,colour=red", &sel, why, sizeof why) != 0 && strstr(why, "colour"));
    /* a table that cannot be opened is an error naming it, not a decline (callers fall back on those) */
    TAP_CHECK(modeled_parse_params("table=/nonexistent/t.csv,impl=nccl", &sel, why, sizeof why) == ARB_OK);
    TAP_CHECK(modeled_table_load(&sel, 1, &t, why, sizeof why) == ARB_ERR_INVALID && strstr(why, "/nonexistent/t.csv"));
    unlink(path);
}

/* The committed prediction and its profile, as the engine's modeled plugin would read them. */
static void test_table_from_prediction(void)
{
    modeled_select_t sel;
    modeled_table_t t;
    char why[512], params[700];
    double us;
    snprintf(params, sizeof params, "table=%s/results/model-pcie-switch-pairs-8.csv,impl=nccl,params=algo=auto,proto=auto", ARB_TEST_ROOT);
    TAP_CHECK(modeled_parse_params(params, &sel, why, sizeof why) == ARB_OK);
    TAP_CHECK(modeled_table_load(&sel, 1, &t, why, sizeof why) == ARB_OK); /* graph, ranks 8: the table's only */
    TAP_CHECK(modeled_table_lookup(&t, 43008, &us, why, sizeof why) == ARB_OK && us > 20 && us < 80);
    TAP_CHECK(strstr(t.desc, "mode=graph") && strstr(t.desc, "ranks=8"));
    modeled_table_free(&t);
    /* several variants match impl=p2p: declined, naming them */
    snprintf(params, sizeof params, "table=%s/results/model-pcie-switch-pairs-8.csv,impl=p2p", ARB_TEST_ROOT);
    TAP_CHECK(modeled_parse_params(params, &sel, why, sizeof why) == ARB_OK);
    TAP_CHECK(modeled_table_load(&sel, 1, &t, why, sizeof why) == ARB_DECLINE && strstr(why, "several variants"));
    /* the profile's choices, without impl= */
    snprintf(params, sizeof params, "table=%s/results/model-profile-pcie-switch-pairs-8.csv,mode=graph", ARB_TEST_ROOT);
    TAP_CHECK(modeled_parse_params(params, &sel, why, sizeof why) == ARB_OK);
    TAP_CHECK(modeled_table_load(&sel, 1, &t, why, sizeof why) == ARB_OK && t.n >= 2);
    TAP_CHECK(modeled_table_lookup(&t, t.bytes[0], &us, why, sizeof why) == ARB_OK && us > 0);
    modeled_table_free(&t);
}

/* The module through the real loader: one exported struct of ABI v2; parameters and tables
 * are checked before any CUDA call, so this runs without a GPU. */
static void test_plugin_loader(void)
{
#ifdef ARB_TEST_PLUGIN
    arb_loaded_plugin_t lp;
    char err[4096], why[512], params[700];
    TAP_CHECK(arb_plugin_load(ARB_TEST_PLUGIN, &lp, err, sizeof err) == 0);
    if (!lp.plugin)
        return;
    const arb_plugin_t *pl = lp.plugin;
    TAP_CHECK(strcmp(pl->name, "modeled") == 0 && (pl->caps & ARB_CAP_REFERENCE) && (pl->caps & ARB_CAP_GRAPH_SAFE));
    arb_comm_info_t info = {.nranks = 1, .local_nranks = 1, .nnodes = 1};
    arb_host_ops_t ops = {0};
    void *st = NULL;
    TAP_CHECK(pl->init(&info, &ops, "impl=nccl", &st, why, sizeof why) == ARB_ERR_INVALID && strstr(why, "table="));
    snprintf(params, sizeof params, "table=%s/results/model-pcie-switch-pairs-8.csv,impl=nosuch", ARB_TEST_ROOT);
    TAP_CHECK(pl->init(&info, &ops, params, &st, why, sizeof why) == ARB_DECLINE && strstr(why, "impl=nosuch"));
    TAP_CHECK(st == NULL);
    arb_plugin_unload(&lp);
#else
    printf("# built without CUDA: no arb-modeled.so to load\n");
#endif
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"fabric_paths", test_fabric_paths},     {"fabric_xml", test_fabric_xml},     {"spec_errors", test_spec_errors},
        {"phase_contention", test_phase_contention}, {"fit_recovers", test_fit_recovers},
        {"predict_pcie", test_predict_pcie},     {"table_lookup", test_table_lookup},
        {"table_from_prediction", test_table_from_prediction}, {"plugin_loader", test_plugin_loader},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
