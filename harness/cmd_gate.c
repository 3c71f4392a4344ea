/* SPDX-License-Identifier: MIT */
/* arbench gate: baseline vs candidate results; exit 0 pass, 1 regression, 2 invalid input.
 * docs/gate.md */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_opts.h"
#include "commands.h"
#include "base/outfile.h"
#include "analysis/gate.h"

static void usage(FILE *f)
{
    fputs("usage: arbench gate --baseline B.csv [--baseline B2.csv ...] --candidate C.csv [--threshold 0.05] [--alpha 0.01] [--reps 2000] [--seed 1] [--min-samples 10] [--volatile nccl] [--noise-k 4] [--default-noise eager=1.25,graph=1.05,context=1.05] [--allow-missing] [--report-md FILE [--force]]\n", f);
    fputs("  Each baseline run (a file, or a run_id within one) is one sample of run-to-run noise; with one run the per-mode --default-noise allowances apply.\n", f);
    fputs("  Exit 0 pass, 1 regression, failed check, lost coverage (measured baseline points missing or skipped in the candidate) or nothing compared, 2 invalid input (unreadable or damaged file, missing columns, no common points).\n", f);
    fputs("  --allow-missing: lost coverage and zero comparisons are reported but do not fail the gate.\n", f);
}

/* --default-noise MODE=RATIO[,MODE=RATIO...]: modes eager, graph, context; ratios >= 1. */
static int parse_default_noise(const char *s, double *out)
{
    char *buf = strdup(s);
    int rc = buf ? 0 : -1;
    for (char *save = NULL, *t = buf ? strtok_r(buf, ",", &save) : NULL; t && !rc; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        int m = ARB_GATE_NMODES;
        if (eq) {
            *eq = '\0';
            for (m = 0; m < ARB_GATE_NMODES && strcmp(t, arb_gate_mode_names[m]) != 0; m++)
                ;
        }
        char *end = NULL;
        double v = eq ? strtod(eq + 1, &end) : NAN;
        if (m == ARB_GATE_NMODES || end == eq + 1 || *end || !(v >= 1 && v <= 100))
            rc = -1;
        else
            out[m] = v;
    }
    if (rc)
        fprintf(stderr, "arbench gate: --default-noise '%s': expected MODE=RATIO items separated by commas, MODE one of eager, graph, context, RATIO a number in [1, 100]\n", s);
    free(buf);
    return rc;
}

int cmd_gate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"baseline", required_argument, NULL, 'b'}, {"candidate", required_argument, NULL, 'c'},
        {"threshold", required_argument, NULL, 't'}, ANALYSIS_BOOTSTRAP_OPTIONS,
        {"min-samples", required_argument, NULL, 'n'}, {"volatile", required_argument, NULL, 'v'},
        {"report-md", required_argument, NULL, 'm'}, {"help", no_argument, NULL, 'h'},
        {"noise-k", required_argument, NULL, 'k'}, {"default-noise", required_argument, NULL, 'd'},
        {"allow-missing", no_argument, NULL, 'M'}, {"force", no_argument, NULL, 'F'},
        {NULL, 0, NULL, 0},
    };
    arb_gate_opts_t o;
    arb_gate_opts_default(&o);
    enum { MAX_BASELINES = 64 };
    const char *base_paths[MAX_BASELINES], *cand_path = NULL, *md = NULL;
    size_t nbase = 0;
    const char *vol[64];
    char *vol_buf = NULL;
    int c, rc = 2, force = 0;
    double v;
    optind = 0; /* glibc: restart option parsing for this argv */
    while ((c = getopt_long(argc, argv, "b:c:", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (nbase == MAX_BASELINES) {
                fprintf(stderr, "arbench gate: --baseline '%s': expected at most %d baseline files\n", optarg, MAX_BASELINES);
                goto err_usage;
            }
            base_paths[nbase++] = optarg;
            break;
        case 'k':
            if (analysis_opt_number("gate", "--noise-k", optarg, 0, 100, &o.noise_k))
                goto err_usage;
            break;
        case 'd':
            if (parse_default_noise(optarg, o.default_noise))
                goto err_usage;
            break;
        case 'c': cand_path = optarg; break;
        case 'M': o.allow_missing = 1; break;
        case 'F': force = 1; break;
        case 'm': md = optarg; break;
        case 't':
            if (analysis_opt_number("gate", "--threshold", optarg, 0, 10, &o.threshold))
                goto err_usage;
            break;
        case 'a':
        case 'r':
        case 's':
            if (analysis_opt_bootstrap("gate", c, optarg, &o.alpha, &o.reps, &o.seed))
                goto err_usage;
            break;
        case 'n':
            if (analysis_opt_number("gate", "--min-samples", optarg, 2, 1e6, &v))
                goto err_usage;
            o.min_samples = (size_t)v;
            break;
        case 'v':
            /* A comma list of params keys to ignore when matching; "" ignores none. */
            free(vol_buf);
            vol_buf = strdup(optarg);
            vol[0] = NULL;
            if (vol_buf && analysis_opt_list(vol_buf, vol, 64)) {
                fprintf(stderr, "arbench gate: --volatile '%s': expected at most 63 keys\n", optarg);
                goto err_usage;
            }
            o.volatile_params = vol;
            break;
        case 'h': usage(stdout); free(vol_buf); return 0;
        default: goto err_usage;
        }
    }
    if (!nbase || !cand_path || optind != argc) {
        fprintf(stderr, "arbench gate: expected --baseline B.csv (one or more) and --candidate C.csv and no other arguments\n");
        goto err_usage;
    }
    arb_pointset_t base = {0}, cand = {0};
    arb_gate_result_t r;
    char err[1024];
    arb_io_file_t inputs[MAX_BASELINES + 1] = {{"--candidate", cand_path}};
    for (size_t i = 0; i < nbase; i++)
        inputs[i + 1] = (arb_io_file_t){"--baseline", base_paths[i]};
    if (md && arb_out_check("--report-md", md, force ? ARB_OUT_FORCE : ARB_OUT_NEW, "--force", inputs, nbase + 1, err, sizeof err)) {
        fprintf(stderr, "arbench gate: %s\n", err);
        free(vol_buf);
        return 2;
    }
    /* All baseline files into one set: each file, or each run_id in one, is a run. */
    for (size_t i = 0; i < nbase; i++)
        if (analysis_load("gate", &base, base_paths[i]))
            goto err_free_points;
    if (analysis_load("gate", &cand, cand_path))
        goto err_free_points;
    if (arb_gate_compare(&base, &cand, &o, &r, err, sizeof err)) {
        fprintf(stderr, "arbench gate: %s\n", err);
        goto err_free_points;
    }
    arb_gate_report_text(stdout, &r, &o, &base, &cand);
    rc = arb_gate_exit_status(&r);
    if (md && arb_gate_report_md(md, &r, &o, &base, &cand, err, sizeof err)) {
        fprintf(stderr, "arbench gate: %s\n", err);
        rc = 2;
    }
    arb_gate_free(&r);
err_free_points:
    arb_points_free(&cand);
    arb_points_free(&base);
    free(vol_buf);
    return rc;
err_usage:
    usage(stderr);
    free(vol_buf);
    return 2;
}
