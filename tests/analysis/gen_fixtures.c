/* SPDX-License-Identifier: MIT */
/* gen_fixtures DIR: writes the analysis test fixtures (good and hostile results files). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fixture.h"

static char dir[4096];

static const char *at(const char *name)
{
    static char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static int write_text(const char *name, const char *text, size_t len)
{
    FILE *f = fopen(at(name), "wb");
    if (!f)
        return -1;
    int bad = fwrite(text, 1, len, f) != len;
    return fclose(f) || bad ? -1 : 0;
}

/* A copy of base.csv's header and first data row with one field replaced. */
static int write_hostile(const char *name, const char *col, const char *val)
{
    arb_results_writer_t *w = fx_create(at(name));
    if (!w)
        return -1;
    fx_point_t p = {.fabric = "pcie-gen5", .impl = "p2p", .params = "variant=oneshot-push", .op = "allreduce",
                    .fusion = "", .dtype = "bf16", .mode = "graph", .check = "pass", .run_id = "hostile",
                    .ranks = 2, .bytes = 43008, .median_us = 7, .sigma = 0.03, .nsamples = 20, .seed = 5,
                    .override_col = col, .override_val = val};
    int rc = fx_append(w, &p);
    return arb_results_close(w) || rc ? -1 : 0;
}

/* Rows for the fused-vs-unfused plot: allreduce_rmsnorm, fusion fused|unfused. */
static int append_rmsnorm(const char *name)
{
    arb_results_writer_t *w = fx_create(at(name));
    static const size_t sizes[] = {14336, 43008, 86016, 1048576};
    int rc = w ? 0 : -1;
    for (size_t i = 0; w && i < 4; i++) {
        fx_point_t f = {.fabric = "pcie-gen5", .impl = "p2p", .params = "variant=oneshot-push", .op = "allreduce_rmsnorm",
                        .fusion = "fused", .dtype = "bf16", .mode = "graph", .check = "pass", .run_id = "rms",
                        .ranks = 2, .bytes = sizes[i], .median_us = 8.0 + (double)sizes[i] / 20000, .sigma = 0.03,
                        .nsamples = 40, .seed = 700 + i};
        fx_point_t u = f;
        u.fusion = "unfused";
        u.median_us *= 1.4;
        u.seed += 100;
        fx_point_t n = u;
        n.impl = "nccl";
        n.params = "algo=Ring,proto=LL,nccl=2.28.3";
        n.median_us *= 1.5;
        n.seed += 100;
        rc |= fx_append(w, &f) | fx_append(w, &u) | fx_append(w, &n);
    }
    return w && arb_results_close(w) == 0 ? rc : -1;
}

/* many_impls.csv: 10 candidate implementations, a baseline and two floors at 3 sizes,
 * more than an overview figure may draw (it keeps 8 lines: the plots test). */
static int write_many_impls(const char *name)
{
    arb_results_writer_t *w = fx_create(at(name));
    static const size_t sizes[] = {14336, 43008, 86016};
    static const char *const floors[] = {"noop", "ping"};
    int rc = w ? 0 : -1;
    uint64_t seed = 5000;
    for (size_t i = 0; w && i < 3; i++) {
        fx_point_t p = {.fabric = "pcie-gen5", .impl = "nccl", .params = "algo=Ring,proto=LL,nccl=2.28.3", .op = "allreduce",
                        .fusion = "", .dtype = "bf16", .mode = "graph", .check = "pass", .run_id = "many", .ranks = 2,
                        .bytes = sizes[i], .median_us = 12, .sigma = 0.03, .nsamples = 30, .seed = seed++};
        rc |= fx_append(w, &p);
        char impl[16];
        for (int k = 0; k < 10; k++) {
            snprintf(impl, sizeof impl, "impl%d", k);
            fx_point_t c = p;
            c.impl = impl, c.params = "variant=x,timeout_ms=5000", c.role = "candidate", c.seed = seed++;
            c.median_us = 4.0 + k;
            rc |= fx_append(w, &c);
        }
        for (int k = 0; k < 2; k++) {
            fx_point_t f = p;
            f.impl = floors[k], f.params = "", f.check = "skip", f.role = "reference", f.seed = seed++;
            f.note = "reference floor: no payload, not checked", f.median_us = 1.0 + 2 * k;
            rc |= fx_append(w, &f);
        }
    }
    return w && arb_results_close(w) == 0 ? rc : -1;
}

/* Appends the data rows of file `from` (its header line skipped) to file `to`. */
static int append_rows(const char *to, const char *from)
{
    char src[8192];
    snprintf(src, sizeof src, "%s", at(from));
    FILE *in = fopen(src, "rb"), *out = fopen(at(to), "ab");
    int rc = in && out ? 0 : -1, c, header = 1;
    while (!rc && (c = fgetc(in)) != EOF) {
        if (!header)
            rc = fputc(c, out) == EOF ? -1 : 0;
        else if (c == '\n')
            header = 0;
    }
    if (in)
        fclose(in);
    if (out && fclose(out))
        rc = -1;
    return rc;
}

/* Baselines of 3 runs with run-to-run noise (eager medians move with sd 6% between
 * runs, graph with 1%), as 3 files and as one file with 3 run_ids, and candidates drawn
 * from the same model: unchanged, p2p 43008 slowed 12% in eager, and in graph. */
static int write_runs(void)
{
    fx_sweep_t r = {.nccl_version = "2.28.3", .nsamples = 100, .slow_factor = 1, .run_sigma = {0.06, 0.01}};
    static const char *const names[] = {"base_run1.csv", "base_run2.csv", "base_run3.csv"};
    static const char *const ids[] = {"run1", "run2", "run3"};
    int rc = 0;
    for (int i = 0; i < 3; i++) {
        r.run_id = ids[i], r.seed = 20000 + 1000 * (uint64_t)i, r.run_seed = 77 + (uint64_t)i;
        rc |= fx_write_sweep(at(names[i]), &r);
    }
    rc |= fx_write_sweep(at("base_runs_all.csv"), &(fx_sweep_t){.run_id = "run1", .nccl_version = "2.28.3",
        .nsamples = 100, .slow_factor = 1, .run_sigma = {0.06, 0.01}, .seed = 20000, .run_seed = 77});
    rc |= append_rows("base_runs_all.csv", "base_run2.csv") | append_rows("base_runs_all.csv", "base_run3.csv");
    r.run_id = "cand-runs", r.seed = 30000, r.run_seed = 90;
    rc |= fx_write_sweep(at("cand_runs_same.csv"), &r);
    r.slow_bytes = 43008, r.slow_factor = 1.12, r.slow_mode = "eager";
    rc |= fx_write_sweep(at("cand_runs_eager12.csv"), &r);
    r.slow_mode = "graph";
    rc |= fx_write_sweep(at("cand_runs_graph12.csv"), &r);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: gen_fixtures DIR [REPEAT_B.csv] (REPEAT_B: a real results file to plant a 30%% slowdown in)\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    mkdir(dir, 0777); /* may exist already; a failure shows when the first file is written */
    int rc = 0;
    fx_sweep_t base = {.run_id = "base-run", .nccl_version = "2.28.3", .seed = 100, .nsamples = 200, .slow_factor = 1};
    rc |= fx_write_sweep(at("base.csv"), &base);
    fx_sweep_t s = base;
    s.run_id = "cand-run", s.seed = 9000;
    rc |= fx_write_sweep(at("cand_same.csv"), &s);
    s.slow_bytes = 43008, s.slow_mode = "graph", s.slow_factor = 1.2;
    rc |= fx_write_sweep(at("cand_regress.csv"), &s);
    fx_sweep_t fl = base;
    fl.run_id = "cand-fail", fl.seed = 9100, fl.fail_bytes = 43008, fl.fail_mode = "eager";
    rc |= fx_write_sweep(at("cand_fail.csv"), &fl);
    fx_sweep_t up = base;
    up.run_id = "cand-upgrade", up.seed = 9200, up.nccl_version = "2.28.9";
    rc |= fx_write_sweep(at("cand_upgrade.csv"), &up);
    fx_sweep_t ns = base;
    ns.run_id = "base-nosamples", ns.nsamples = 0;
    rc |= fx_write_sweep(at("base_nosamples.csv"), &ns);
    ns.run_id = "cand-nosamples", ns.seed = 9300, ns.slow_bytes = 43008, ns.slow_mode = "graph", ns.slow_factor = 1.2;
    rc |= fx_write_sweep(at("cand_regress_nosamples.csv"), &ns);
    fx_sweep_t nv = base;
    nv.run_id = "nvlink", nv.fabric = "nvlink";
    rc |= fx_write_sweep(at("other_fabric.csv"), &nv);
    rc |= append_rmsnorm("rmsnorm.csv");
    rc |= write_many_impls("many_impls.csv");
    rc |= write_runs();
    /* The committed repeat run b with one graph point 30% slower (a real regression on
     * real noise): p2p flag-free at 43008 B, the 3-token verify message. */
    if (argc == 3)
        rc |= fx_copy_scaled(argv[2], at("repeat_b_slow30.csv"), "p2p", "variant=oneshot-flagfree,blocks=24,threads=256",
                             "graph", 43008, 1.3, "repeat-b-slow30");

    /* More samples than the writer stores (10000: every 3rd kept), read as consistent. */
    fx_sweep_t st = base;
    st.run_id = "strided", st.seed = 9400, st.nsamples = 10000;
    rc |= fx_write_sweep(at("strided.csv"), &st);
    /* An edited file: one row's statistics x1.3, its samples_us left as they were. */
    char base_path[8192];
    snprintf(base_path, sizeof base_path, "%s", at("base.csv")); /* at() has one buffer */
    rc |= fx_copy_scaled_ex(base_path, at("inconsistent.csv"), "p2p", "variant=oneshot-push,blocks=8", "graph", 43008,
                            1.3, NULL, 0);

    /* Hostile inputs: each must be refused with a message and exit 2, never crash. */
    rc |= write_hostile("short_samples.csv", "samples_us", "7.0 7.1 7.2");
    rc |= write_hostile("bad_role.csv", "role", "judge");
    rc |= write_text("empty.csv", "", 0);
    rc |= write_hostile("nan_median.csv", "median_us", "nan");
    rc |= write_hostile("inf_median.csv", "median_us", "inf");
    rc |= write_hostile("neg_median.csv", "median_us", "-3.5");
    rc |= write_hostile("text_bytes.csv", "bytes", "42K");
    rc |= write_hostile("neg_bytes.csv", "bytes", "-1");
    rc |= write_hostile("schema2.csv", "schema", "2");
    rc |= write_hostile("bad_samples.csv", "samples_us", "7.0 7.1 x 7.2");
    rc |= write_hostile("zero_ranks.csv", "ranks", "0");
    char *huge = malloc((2u << 20) + 1);
    if (huge) {
        memset(huge, 'A', 2u << 20);
        huge[2u << 20] = '\0';
        rc |= write_hostile("huge_field.csv", "params", huge);
        free(huge);
    } else {
        rc = 1;
    }
    static const char missing[] = "schema,run_id,fabric,ranks,nodes,impl,params,op,fusion,dtype,bytes,mode,p10_us,p90_us,check,samples_us\n"
                                  "1,r,pcie,2,1,p2p,,allreduce,,bf16,43008,graph,1,2,pass,\n";
    rc |= write_text("missing_col.csv", missing, sizeof missing - 1);
    static const char foreign[] = "size,time_us,algbw\n43008,12.5,3.4\n";
    rc |= write_text("foreign.csv", foreign, sizeof foreign - 1);
    static const char binary[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0\0,\"\n\xff\xfe";
    rc |= write_text("binary.csv", binary, sizeof binary - 1);
    /* truncated.csv: base.csv cut in the middle of its last row's quoted argv field. */
    FILE *f = fopen(at("base.csv"), "rb");
    char *buf = malloc(1 << 20);
    size_t len = f && buf ? fread(buf, 1, 1 << 20, f) : 0;
    if (f)
        fclose(f);
    /* cut_mid_row.csv: base.csv without its last 7 bytes (a file cut inside samples_us). */
    if (len > 7)
        rc |= write_text("cut_mid_row.csv", buf, len - 7);
    char *cut = NULL;
    for (size_t i = 0; i + 1 < len; i++) /* the last row's argv field is quoted: find its quote */
        if (buf[i] == '\n' && i + 1 < len)
            cut = buf + i + 1;
    if (cut && (cut = strchr(cut, '"')) != NULL) {
        rc |= write_text("truncated.csv", buf, (size_t)(cut - buf) + 6);
        /* wrong_count.csv: the header and a row with a field missing. */
        char *eol = strchr(buf, '\n');
        char row[] = "1,r\n";
        size_t hl = (size_t)(eol - buf) + 1;
        memcpy(buf + hl, row, sizeof row - 1);
        rc |= write_text("wrong_count.csv", buf, hl + sizeof row - 1);
    } else {
        rc = 1;
    }
    free(buf);
    if (rc)
        fprintf(stderr, "gen_fixtures: failed to write some fixtures in %s\n", dir);
    return rc ? 1 : 0;
}
