/* SPDX-License-Identifier: MIT */
/* arbench model compute: the compute-only step on another GPU from one GPU's per-kernel table,
 * and, with --against, the check of that prediction on the other GPU's own table (docs/model.md). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "base/sizes.h"
#include "costmodel/model_e2e_kernels.h"
#include "costmodel/model_gpu.h"

#define MAX_T 16

static void usage(FILE *f)
{
    fputs("usage: arbench model compute --kernels REF-kernels.csv --gpu SPEC --gpu-ref SPEC [--tokens 1,3]\n"
          "                             [--against TARGET-kernels.csv]\n"
          "  The compute-only step (an `arbench engine --impl noop` run's per-kernel table, measured on the GPU of\n"
          "  --gpu-ref) predicted on the GPU of --gpu (model/gpus/NAME.spec): per T, the reference step, its\n"
          "  streaming part (scaled by the bandwidths), the rest (kept, with the spec's launch band and instruction-\n"
          "  rate range) and the target's step with its band, as `arbench model e2e --kernels` computes it.\n"
          "  --against: a compute-only table measured on the target: its step beside the prediction; exit 1 when a\n"
          "  measured step falls outside its band or no T could be compared. Exit 2 on invalid input. docs/model.md\n",
          f);
}

int cmd_model_compute(int argc, char **argv)
{
    static const struct option opts[] = {
        {"kernels", required_argument, NULL, 'k'},
        {"gpu", required_argument, NULL, 'g'},
        {"gpu-ref", required_argument, NULL, 'r'},
        {"tokens", required_argument, NULL, 't'},
        {"against", required_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *kernels = NULL, *gpu = NULL, *ref = NULL, *against = NULL, *tokens = "1,3";
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'k': kernels = optarg; break;
        case 'g': gpu = optarg; break;
        case 'r': ref = optarg; break;
        case 't': tokens = optarg; break;
        case 'a': against = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "arbench model compute: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!kernels || !gpu || !ref) {
        fprintf(stderr, "arbench model compute: needs --kernels REF-kernels.csv, --gpu SPEC and --gpu-ref SPEC\n");
        return 2;
    }
    unsigned ts[MAX_T];
    size_t nt = 0;
    char err[1024];
    if (arb_parse_uint_list(tokens, ts, MAX_T, &nt, err, sizeof err)) { /* the sweep's --tokens grammar */
        fprintf(stderr, "arbench model compute: --tokens '%s': %s\n", tokens, err);
        return 2;
    }
    for (size_t i = 0; i < nt; i++)
        if (ts[i] > MAX_T) {
            fprintf(stderr, "arbench model compute: --tokens '%s': T %u above %d\n", tokens, ts[i], MAX_T);
            return 2;
        }
    arb_gpu_spec_t g, r;
    if (arb_gpu_read(gpu, &g, err, sizeof err) || arb_gpu_read(ref, &r, err, sizeof err)) {
        fprintf(stderr, "arbench model compute: %s\n", err);
        return 2;
    }
    if (against && arb_e2e_kernel_same_step(kernels, against, err, sizeof err)) {
        fprintf(stderr, "arbench model compute: --against %s\n", err);
        return 2;
    }
    const double lo = arb_gpu_issue_ratio(&g, &r, -1), hi = arb_gpu_issue_ratio(&g, &r, +1);
    printf("# compute-only step on %s (%s, %.0f GB/s spec) from %s's table (%s, %.0f GB/s spec): %s\n", g.name, g.gpu,
           g.mem_gbs.v, r.name, r.gpu, r.mem_gbs.v, kernels);
    printf("# launch band +-%.2f, instruction-rate ratio %.3f .. %.3f%s%s\n", g.launch_scale.band, lo, hi,
           against ? "; measured: " : "", against ? against : "");
    printf("# %3s %10s %10s %10s %10s %10s %10s %10s %10s %9s %s\n", "T", "ref_us", "stream_us", "rest_us", "target_us",
           "lo_us", "hi_us", "floor_us", "measured", "vs_pred", "verdict");
    int outside = 0, compared = 0;
    for (size_t i = 0; i < nt; i++) {
        arb_e2e_kernel_compute_t k;
        if (arb_e2e_kernel_compute(kernels, ts[i], g.mem_gbs.v, r.mem_gbs.v, g.launch_scale.band, lo, hi, &k, err,
                                   sizeof err)) {
            fprintf(stderr, "arbench model compute: %s\n", err);
            return 2;
        }
        double m = NAN, m_read = NAN;
        const char *verdict = "-";
        if (against) {
            arb_status_t st = arb_e2e_kernel_step(against, ts[i], &m, &m_read, err, sizeof err);
            if (st == ARB_ERR_INVALID) {
                fprintf(stderr, "arbench model compute: %s\n", err);
                return 2;
            }
            if (st == ARB_OK) {
                compared++;
                const int in = m >= k.target_us.lo && m <= k.target_us.hi;
                outside += !in;
                verdict = in ? "inside the band" : "OUTSIDE the band";
            } else {
                verdict = "not in the measured table";
            }
        }
        char mb[24] = "-", vb[24] = "-";
        if (isfinite(m)) {
            snprintf(mb, sizeof mb, "%.1f", m);
            snprintf(vb, sizeof vb, "%+.1f%%", (m / k.target_us.v - 1) * 100);
        }
        printf("  %3u %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10s %9s %s\n", ts[i], k.h200_step_us,
               k.stream_h200_us, k.rest_us, k.target_us.v, k.target_us.lo, k.target_us.hi, k.floor_target_us, mb, vb,
               verdict);
    }
    if (against && !compared) {
        fprintf(stderr,
                "arbench model compute: %s: no step row with a graph time at any of --tokens %s: nothing compared\n",
                against, tokens);
        return 1;
    }
    if (against)
        printf("arbench model compute: %d of %d measured steps inside their bands\n", compared - outside, compared);
    return outside ? 1 : 0;
}
