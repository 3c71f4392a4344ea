/* SPDX-License-Identifier: MIT */
/* Unit tests of the profile builder: roles, floors and baselines, the choice per size
 * range, its CSV and JSON files, and noise. TAP output. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arbench/plugin.h>

#include "../common/tap.h"
#include "fixture.h"
#include "analysis/profile.h"

/* Roles from capabilities, and the one floor/baseline rule every consumer uses. */
static void test_roles(void)
{
    tap_ok(arb_role_of_caps(ARB_CAP_DEVICE_MEMORY | ARB_CAP_REFERENCE) == ARB_ROLE_REFERENCE &&
           arb_role_of_caps(ARB_CAP_DEVICE_MEMORY | ARB_CAP_BASELINE) == ARB_ROLE_BASELINE &&
           arb_role_of_caps(ARB_CAP_DEVICE_MEMORY) == ARB_ROLE_CANDIDATE &&
           arb_role_of_caps(ARB_CAP_REFERENCE | ARB_CAP_BASELINE) == ARB_ROLE_REFERENCE,
       "roles from capabilities: reference, baseline, candidate (reference wins)");
    arb_role_t r = ARB_ROLE_CANDIDATE;
    tap_ok(arb_role_parse("baseline", &r) == 0 && r == ARB_ROLE_BASELINE && arb_role_parse("Baseline", &r) != 0 &&
           arb_role_parse("", &r) != 0 && !strcmp(arb_role_name(ARB_ROLE_REFERENCE), "reference"),
       "role names parse exactly");
    tap_ok(arb_role_of_legacy_row("ping", "reference floor: no payload, not checked") == ARB_ROLE_REFERENCE &&
           arb_role_of_legacy_row("nccl", "") == ARB_ROLE_BASELINE && arb_role_of_legacy_row("p2p", "") == ARB_ROLE_CANDIDATE,
       "files without the role column: floors by their note, nccl the baseline");
    arb_refs_t refs = {0};
    arb_refs_add(&refs, ARB_ROLE_REFERENCE, 0, 0.71, "noop", "");
    arb_refs_add(&refs, ARB_ROLE_REFERENCE, 0, 2.93, "ping", "");
    arb_refs_add(&refs, ARB_ROLE_BASELINE, 1, 7.94, "nccl", "algo=Ring");
    arb_refs_add(&refs, ARB_ROLE_BASELINE, 1, 7.71, "nccl", "algo=auto");
    arb_refs_add(&refs, ARB_ROLE_BASELINE, 0, 1.00, "nccl", "algo=broken"); /* not passing: never the baseline */
    arb_refs_add(&refs, ARB_ROLE_CANDIDATE, 1, 3.37, "p2p", "");
    tap_ok(refs.floor_us == 2.93 && !strcmp(refs.floor_impl, "ping") && refs.baseline_us == 7.71 &&
           !strcmp(refs.baseline_params, "algo=auto"),
       "floor = the highest reference (ping 2.93 over noop 0.71), baseline = the fastest passing one (7.71)");
    tap_ok(fabs(arb_ratio(3.37, refs.baseline_us) - 0.437) < 0.001 && isnan(arb_ratio(3.37, 0)),
       "ratio to the baseline 0.437; NAN without a reference");
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
    if (fx_load(&ps, "base.csv")) {
        tap_ok(0, "load base.csv");
        return;
    }
    tap_ok(arb_profile_build(&ps, &o, &p, err, sizeof err) == 0, "profile builds from base.csv");
    tap_ok(p.n == 6, "3 ranges per mode, 2 modes (got %zu)", p.n);
    const arb_profile_entry_t *e = find(&p, "graph", 43008);
    tap_ok(e && strcmp(e->impl, "p2p") == 0 && e->min_bytes == 0 && e->max_bytes == 64512 && e->points == 2,
       "graph [0, 64512]: p2p over 2 sizes (boundary halfway between 43008 and 86016)");
    tap_ok(e && strcmp(e->confidence, "ci95") == 0 && e->speedup > 1.6 && e->speedup < 1.7 && e->rep_bytes == 14336,
       "p2p row: ci95, speedup %.3f taken at its weaker size 14336 (10/6, not 12/7)", e ? e->speedup : 0);
    e = find(&p, "graph", 86016);
    tap_ok(e && strcmp(e->impl, "nccl") == 0 && strstr(e->params, "proto=LL") && strcmp(e->confidence, "tie") == 0 &&
           e->min_bytes == 64513 && e->max_bytes == 567296,
       "graph 86016: p2p's 1.3%% lead is below --min-speedup, NCCL Ring/LL keeps it as a tie");
    e = find(&p, "graph", SIZE_MAX);
    tap_ok(e && strstr(e->params, "proto=Simple") && strcmp(e->confidence, "baseline") == 0 && e->max_bytes == SIZE_MAX,
       "graph 1M and up: NCCL Ring/Simple is fastest outright");
    int noop = 0;
    for (size_t i = 0; i < p.n; i++)
        noop |= strcmp(p.e[i].impl, "noop") == 0;
    tap_ok(!noop, "the noop reference row is never chosen");
    tap_ok(p.nsources == 1 && strcmp(p.source_runs[0], "base-run") == 0, "profile records its source and run_id");

    /* Round trip through the CSV and JSON files. */
    arb_profile_t back;
    tap_ok(arb_profile_write_csv(&p, fx_at("profile.csv"), err, sizeof err) == 0, "profile CSV written");
    tap_ok(arb_profile_read(fx_at("profile.csv"), &back, err, sizeof err) == 0 && back.n == p.n, "profile CSV reads back");
    int same = back.n == p.n;
    for (size_t i = 0; same && i < p.n; i++)
        same = back.e[i].min_bytes == p.e[i].min_bytes && back.e[i].max_bytes == p.e[i].max_bytes &&
               strcmp(back.e[i].params, p.e[i].params) == 0 && strcmp(back.e[i].sources, p.e[i].sources) == 0 &&
               fabs(back.e[i].median_us - p.e[i].median_us) < 1e-3;
    tap_ok(same, "the CSV round trip keeps ranges, params (with commas), sources and medians");
    arb_profile_free(&back);
    tap_ok(arb_profile_write_json(&p, fx_at("profile.json"), err, sizeof err) == 0, "profile JSON written");
    json_error_t je;
    json_t *j = json_load_file(fx_at("profile.json"), 0, &je);
    json_t *entries = json_object_get(j, "entries");
    tap_ok(j && json_integer_value(json_object_get(j, "schema")) == 1 && json_array_size(entries) == p.n,
       "JSON: schema 1 and one entry per range");
    json_t *last = json_array_get(entries, 2);
    tap_ok(json_is_null(json_object_get(last, "max_bytes")) &&
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
        arb_results_writer_t *w = fx_create(fx_at("noise.csv"));
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
        rc = rc || fx_load(&ps, "noise.csv") || arb_profile_build(&ps, &o, &p, err, sizeof err);
        tap_ok(!rc && p.n == 1 && strcmp(p.e[0].impl, cases[c].want) == 0,
           "factor %.2f, sigma %.2f, %zu samples: %s keeps 43008 (%s)", cases[c].factor, cases[c].sigma, cases[c].n,
           cases[c].want, !rc && p.n ? p.e[0].confidence : "-");
        if (!rc) {
            arb_profile_free(&p);
            arb_points_free(&ps);
        }
    }
}

int main(void)
{
    if (fx_dir_create()) {
        printf("Bail out! cannot create a temporary directory\n");
        return 1;
    }
    fx_sweep_t base = fx_base_sweep();
    if (fx_write_sweep(fx_at("base.csv"), &base)) {
        printf("Bail out! cannot write fixtures in %s\n", fx_dir());
        return 1;
    }
    test_roles();
    test_profile();
    test_profile_noise();
    int rc = tap_done();
    if (rc == 0 && fx_dir_remove())
        printf("# could not remove %s\n", fx_dir());
    return rc;
}
