/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the results reader + validation (arb_points_load_mem), the profile
 * builder and gate on whatever loads, and the profile CSV reader. The first input byte
 * picks the reader; the rest is the file. Built and run by fuzz.sh.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/gate.h"
#include "analysis/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    char err[512];
    if (data[0] & 1) {
        arb_profile_t p;
        if (arb_profile_read_mem(text, len, "fuzz.csv", &p, err, sizeof err) == 0) {
            (void)arb_profile_lookup(&p, "pcie", 2, 1, "bf16", "allreduce", "graph", 43008);
            arb_profile_free(&p);
        }
        return 0;
    }
    arb_pointset_t ps = {0};
    if (arb_points_load_mem(&ps, text, len, "fuzz.csv", err, sizeof err) != 0)
        return 0;
    arb_profile_opts_t po;
    arb_profile_opts_default(&po);
    po.reps = 20; /* the resampling itself is not what is fuzzed */
    arb_profile_t p;
    if (arb_profile_build(&ps, &po, &p, err, sizeof err) == 0)
        arb_profile_free(&p);
    arb_gate_opts_t go;
    arb_gate_opts_default(&go);
    go.reps = 20;
    arb_gate_result_t r;
    if (arb_gate_compare(&ps, &ps, &go, &r, err, sizeof err) == 0) {
        FILE *devnull = fopen("/dev/null", "w");
        if (devnull) {
            arb_gate_report_text(devnull, &r, &go, &ps, &ps);
            fclose(devnull);
        }
        arb_gate_free(&r);
    }
    arb_points_free(&ps);
    return 0;
}
