/* SPDX-License-Identifier: MIT */
/* arbench profile: results files -> tuning profile (CSV, optional JSON). docs/profile.md */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arb_config.h"
#include "analysis_opts.h"
#include "commands.h"
#include "base/outfile.h"
#include "analysis/profile.h"

static void usage(FILE *f)
{
    fputs("usage: arbench profile [--out PROFILE.csv] [--json PROFILE.json] [--min-speedup 1.05] [--alpha 0.05] [--reps 2000] [--seed 1] [--exclude IMPL,...] [--force] [--quiet] [--emit env] RESULTS.csv...\n", f);
    fputs("  Picks the fastest implementation per (fabric, ranks, nodes, dtype, op, mode) and size among check=pass rows (reference floors never win; --exclude names more), keeps it only where its lead over the best baseline (NCCL) variant is beyond noise and at least --min-speedup, merges sizes into ranges. --emit env (needs --out) prints, instead of the table, the exports a server needs: the NCCL tuner plugin and its profile, libarbench and its profile. Exit 0 ok, 1 cannot write, 2 invalid input.\n", f);
}

/* The environment of a server that uses this profile (docs/tuner.md, include/arbench/arbench.h). */
static void emit_env(const char *out)
{
    char abs[PATH_MAX];
    const char *p = realpath(out, abs) ? abs : out;
    printf("export NCCL_TUNER_PLUGIN=%s/libnccl-tuner-arbench.so\n", ARB_INSTALL_LIB_DIR);
    printf("export ARBENCH_TUNER_PROFILE=%s\n", p);
    printf("export ARBENCH_LIB=%s/libarbench.so\n", ARB_INSTALL_LIB_DIR);
    printf("export ARBENCH_PROFILE=%s\n", p);
}

int cmd_profile(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},     {"json", required_argument, NULL, 'j'},
        {"min-speedup", required_argument, NULL, 'm'}, ANALYSIS_BOOTSTRAP_OPTIONS,
        {"exclude", required_argument, NULL, 'x'}, {"quiet", no_argument, NULL, 'q'},
        {"emit", required_argument, NULL, 'e'},
        {"help", no_argument, NULL, 'h'},          {"force", no_argument, NULL, 'F'},
        {NULL, 0, NULL, 0},
    };
    arb_profile_opts_t o;
    arb_profile_opts_default(&o);
    const char *out = NULL, *json = NULL;
    const char *exclude[64];
    char *exclude_buf = NULL;
    int quiet = 0, force = 0, emit = 0, rc = 2, c;
    optind = 0; /* glibc: restart option parsing for this argv */
    while ((c = getopt_long(argc, argv, "o:j:q", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'j': json = optarg; break;
        case 'q': quiet = 1; break;
        case 'F': force = 1; break;
        case 'm':
            if (analysis_opt_number("profile", "--min-speedup", optarg, 1.0, 1e6, &o.min_speedup))
                goto err_usage;
            break;
        case 'a':
        case 'r':
        case 's':
            if (analysis_opt_bootstrap("profile", c, optarg, &o.alpha, &o.reps, &o.seed))
                goto err_usage;
            break;
        case 'x':
            free(exclude_buf);
            exclude_buf = strdup(optarg);
            if (!exclude_buf || analysis_opt_list(exclude_buf, exclude, 64)) {
                fprintf(stderr, "arbench profile: --exclude '%s': expected a comma-separated list of at most 63 impl names\n", optarg);
                goto err_usage;
            }
            o.exclude = exclude;
            break;
        case 'e':
            if (strcmp(optarg, "env") != 0) {
                fprintf(stderr, "arbench profile: --emit '%s': expected env\n", optarg);
                goto err_usage;
            }
            emit = quiet = 1;
            break;
        case 'h': usage(stdout); free(exclude_buf); return 0;
        default: goto err_usage;
        }
    }
    if (emit && !out) {
        fprintf(stderr, "arbench profile: --emit env needs --out PROFILE.csv (the file the environment names)\n");
        goto err_usage;
    }
    if (optind >= argc) {
        fprintf(stderr, "arbench profile: no results files given; expected one or more RESULTS.csv\n");
        goto err_usage;
    }
    arb_pointset_t ps = {0};
    arb_profile_t prof;
    char err[1024];
    const arb_io_file_t outs[] = {{"--out", out}, {"--json", json}};
    for (int i = 0; i < 2; i++)
        if (outs[i].path && arb_out_check_inputs(outs[i].what, outs[i].path, force ? ARB_OUT_FORCE : ARB_OUT_NEW, "--force",
                                                 &outs[1 - i], 1, argv + optind, (size_t)(argc - optind), "results file", err, sizeof err)) {
            fprintf(stderr, "arbench profile: %s\n", err);
            goto err_usage_quiet;
        }
    for (int i = optind; i < argc; i++)
        if (analysis_load("profile", &ps, argv[i]))
            goto err_free_points;
    if (arb_profile_build(&ps, &o, &prof, err, sizeof err)) {
        fprintf(stderr, "arbench profile: %s\n", err);
        goto err_free_points;
    }
    rc = 0;
    if (!quiet)
        arb_profile_print(&prof, stdout);
    if (out && arb_profile_write_csv(&prof, out, err, sizeof err)) {
        fprintf(stderr, "arbench profile: --out %s\n", err);
        rc = 1;
    }
    if (json && arb_profile_write_json(&prof, json, err, sizeof err)) {
        fprintf(stderr, "arbench profile: --json %s\n", err);
        rc = 1;
    }
    if (!quiet && rc == 0)
        fprintf(stderr, "arbench profile: %zu ranges from %zu rows in %zu files%s%s%s%s\n", prof.n, ps.n, ps.nfiles,
                out ? ", wrote " : "", out ? out : "", json ? ", wrote " : "", json ? json : "");
    if (emit && rc == 0)
        emit_env(out);
    arb_profile_free(&prof);
err_free_points:
    arb_points_free(&ps);
    free(exclude_buf);
    return rc;
err_usage:
    usage(stderr);
err_usage_quiet:
    free(exclude_buf);
    return 2;
}
