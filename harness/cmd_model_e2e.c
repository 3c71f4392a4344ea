/* SPDX-License-Identifier: MIT */
/* arbench model e2e: predicted tok/s of a target from modeled-plugin engine runs (docs/model.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "base/outfile.h"
#include "costmodel/model_e2e.h"
#include "costmodel/model_gpu.h"

static void usage(FILE *f)
{
    fputs("usage: arbench model e2e --pred PRED.csv --out E2E.csv [--force] [--target-read-gbs 1792] [--h200-peak-gbs 4800]\n"
          "                         [--hidden 7168] [--kernels NOOP-kernels.csv [--launch-band 0.3] [--gpu SPEC --gpu-ref SPEC]]\n"
          "                         [--accept-rate P] [--compute-at-floor X] ENGINE.csv...\n"
          "  ENGINE.csv: `arbench engine` results with --impl 'modeled:table=PRED.csv,impl=NAME,...,params=...' (one\n"
          "  choice per file or several in one; at least one run with the compute-only replay). Writes predicted decode\n"
          "  and speculative tok/s per choice with bands (source=model). --kernels: the compute-only run's per-kernel\n"
          "  table: compute on the target by kernel family (streaming part scaled, the rest kept, +-launch-band).\n"
          "  --gpu/--gpu-ref: GPU specs (model/gpus/) of the target and the H200: bandwidths, launch band and the\n"
          "  instruction-rate range (SMs x clock) from their sourced facts, instead of the numbers above. --accept-rate:\n"
          "  the spec rows of that acceptance (runs with several); default each choice's first. --compute-at-floor X:\n"
          "  a scenario, not a prediction: each step's compute set to X times its bytes over the target's bandwidth\n"
          "  (what the all-reduce choices would weigh beside an engine at X x its floor; X >= 1).\n"
          "  Exit 2 on invalid input. docs/model.md\n", f);
}

static int parse_pos(const char *name, const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (*end || !(v > 0 && v < 1e9)) {
        fprintf(stderr, "arbench model e2e: --%s '%s': expected a positive number\n", name, s);
        return -1;
    }
    *out = v;
    return 0;
}

int cmd_model_e2e(int argc, char **argv)
{
    static const struct option opts[] = {
        {"pred", required_argument, NULL, 'p'},          {"out", required_argument, NULL, 'o'},
        {"target-read-gbs", required_argument, NULL, 't'}, {"h200-peak-gbs", required_argument, NULL, 'P'},
        {"hidden", required_argument, NULL, 'H'},        {"help", no_argument, NULL, 'h'},
        {"force", no_argument, NULL, 'y'},
        {"kernels", required_argument, NULL, 'k'},       {"launch-band", required_argument, NULL, 'b'},
        {"gpu", required_argument, NULL, 'g'},           {"gpu-ref", required_argument, NULL, 'r'},
        {"accept-rate", required_argument, NULL, 'a'},
        {"compute-at-floor", required_argument, NULL, 'x'},
        {NULL, 0, NULL, 0},
    };
    /* RTX PRO 6000 Blackwell: 1792 GB/s GDDR7; H200: 4.8 TB/s HBM3e (sources: model/gpus/). */
    /* launch band 0.3: the same assumed band as the specs' gpu_band (launch floor and latencies
     * carried from SM90 to SM120 unmeasured, model/fabrics/) */
    arb_e2e_opts_t o = {.target_read_gbs = 1792, .h200_peak_gbs = 4800, .hidden = 7168, .launch_band = 0.3};
    const char *pred = NULL, *out = NULL;
    double hidden = 7168;
    int c, force = 0;
    optind = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'p': pred = optarg; break;
        case 'o': out = optarg; break;
        case 't': if (parse_pos("target-read-gbs", optarg, &o.target_read_gbs)) return 2; break;
        case 'P': if (parse_pos("h200-peak-gbs", optarg, &o.h200_peak_gbs)) return 2; break;
        case 'H': if (parse_pos("hidden", optarg, &hidden)) return 2; break;
        case 'y': force = 1; break;
        case 'k': o.kernels_csv = optarg; break;
        case 'g': o.gpu_spec = optarg; break;
        case 'a':
            if (parse_pos("accept-rate", optarg, &o.accept_rate) || o.accept_rate > 1) {
                fprintf(stderr, "arbench model e2e: --accept-rate '%s': expected an acceptance rate in (0, 1]\n", optarg);
                return 2;
            }
            break;
        case 'r': o.gpu_ref_spec = optarg; break;
        case 'x':
            if (parse_pos("compute-at-floor", optarg, &o.compute_floor_x) || o.compute_floor_x < 1 || o.compute_floor_x > 100) {
                fprintf(stderr, "arbench model e2e: --compute-at-floor '%s': expected a multiple of the floor in [1, 100]\n",
                        optarg);
                return 2;
            }
            break;
        case 'b':
            if (parse_pos("launch-band", optarg, &o.launch_band) || o.launch_band >= 1) {
                fprintf(stderr, "arbench model e2e: --launch-band '%s': expected a fraction in (0, 1)\n", optarg);
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    o.hidden = (int)hidden;
    char err[1024], args[4096];
    if (!o.gpu_spec != !o.gpu_ref_spec || (o.gpu_spec && !o.kernels_csv)) {
        fprintf(stderr, "arbench model e2e: --gpu SPEC and --gpu-ref SPEC go together, with --kernels (model/gpus/NAME.spec)\n");
        return 2;
    }
    if (o.gpu_spec) { /* the sourced facts of both GPUs replace the numeric options */
        arb_gpu_spec_t g, ref;
        if (arb_gpu_read(o.gpu_spec, &g, err, sizeof err) || arb_gpu_read(o.gpu_ref_spec, &ref, err, sizeof err)) {
            fprintf(stderr, "arbench model e2e: %s\n", err);
            return 2;
        }
        o.target_read_gbs = g.mem_gbs.v, o.h200_peak_gbs = ref.mem_gbs.v, o.launch_band = g.launch_scale.band;
        o.issue_lo = arb_gpu_issue_ratio(&g, &ref, -1), o.issue_hi = arb_gpu_issue_ratio(&g, &ref, +1);
    }
    if (!pred || !out || optind >= argc) {
        fprintf(stderr, "arbench model e2e: needs --pred PRED.csv (the prediction table the plugin replayed), --out E2E.csv and ENGINE.csv...\n");
        return 2;
    }
    static arb_e2e_result_t res;
    const arb_io_file_t inputs[] = {{"--pred", pred}, {"--kernels", o.kernels_csv}, {"--gpu", o.gpu_spec}, {"--gpu-ref", o.gpu_ref_spec}};
    if (arb_out_check_inputs("--out", out, force ? ARB_OUT_FORCE : ARB_OUT_NEW, "--force", inputs, 4, argv + optind,
                             (size_t)(argc - optind), "engine results file", err, sizeof err)) {
        fprintf(stderr, "arbench model e2e: %s\n", err);
        return 2;
    }
    size_t n = (size_t)snprintf(args, sizeof args, "arbench model");
    for (int i = 0; i < argc && n < sizeof args; i++)
        n += (size_t)snprintf(args + n, sizeof args - n, " %s", argv[i]);
    if (arb_e2e_predict((const char *const *)argv + optind, (size_t)(argc - optind), pred, &o, &res, err, sizeof err)) {
        fprintf(stderr, "arbench model e2e: %s\n", err);
        return 2;
    }
    if (arb_e2e_write(&res, out, args, err, sizeof err)) {
        fprintf(stderr, "arbench model e2e: %s\n", err);
        return 1;
    }
    arb_e2e_print(&res, &o, stdout);
    printf("arbench model e2e: %zu predicted rows, wrote %s\n", res.nrows, out);
    return 0;
}
