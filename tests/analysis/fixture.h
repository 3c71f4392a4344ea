/* SPDX-License-Identifier: MIT */
/* Synthetic results files for the analysis tests, written with the real results writer. */
#ifndef ARB_TEST_FIXTURE_H
#define ARB_TEST_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/points.h"
#include "results/results.h"

typedef struct fx_point {
    const char *fabric, *impl, *params, *op, *fusion, *dtype, *mode, *check, *run_id;
    int ranks;
    size_t bytes;
    double median_us; /* the distribution's median */
    double sigma;     /* log-normal spread of the samples */
    size_t nsamples;  /* 0: samples_us left empty */
    uint64_t seed;
    const char *override_col, *override_val; /* a hostile field, or NULL */
    const char *role, *note; /* role NULL: derived as for a file without the column (role.h) */
} fx_point_t;

/* Appends one row drawn from the point's distribution; stats computed from the draws. */
int fx_append(arb_results_writer_t *w, const fx_point_t *p);
/* Removes path and opens a fresh results file there. */
arb_results_writer_t *fx_create(const char *path);

/* The standard sweep: fabric pcie-gen5, 2 ranks, bf16 allreduce, eager and graph, sizes
 * 14336, 43008, 86016, 1048576; nccl Ring/LL and Ring/Simple (nccl=VERSION in params),
 * p2p oneshot-push (clearly faster at the two small sizes, 1.3% faster at 86016,
 * slower at 1M), a noop reference row. slow_bytes/slow_mode/slow_factor plant a
 * slowdown of p2p at one point (factor 1 = none); fail_* plants check=fail; run_sigma
 * gives each run its own shift of every median (one run of a random-effects model). */
typedef struct fx_sweep {
    const char *run_id, *nccl_version;
    uint64_t seed;
    size_t nsamples;
    size_t slow_bytes;
    const char *slow_mode;
    double slow_factor;
    size_t fail_bytes;
    const char *fail_mode;
    const char *fabric;
    /* Run-to-run noise: every point's median is multiplied by exp(run_sigma[mode] * z),
     * z standard normal drawn from run_seed and the point (eager 0, graph 1); 0: none. */
    double run_sigma[2];
    uint64_t run_seed;
} fx_sweep_t;

int fx_write_sweep(const char *path, const fx_sweep_t *s);

/* Copies the results file src to dst with the one row (impl, params, mode, bytes)
 * slowed by factor (times, samples_us; bandwidths divided), every run_id replaced by
 * run_id unless NULL. Fails unless exactly one row matches. */
int fx_copy_scaled(const char *src, const char *dst, const char *impl, const char *params, const char *mode,
                   size_t bytes, double factor, const char *run_id);
/* The same; scale_samples 0 leaves samples_us as it was (statistics that the row's own
 * samples contradict: an edited file). */
int fx_copy_scaled_ex(const char *src, const char *dst, const char *impl, const char *params, const char *mode,
                      size_t bytes, double factor, const char *run_id, int scale_samples);

/* A test program's scratch directory (/tmp/arb-analysis-XXXXXX) for its fixture files. */
int fx_dir_create(void);
/* The path of `name` in it; the last four results stay valid. */
const char *fx_at(const char *name);
/* Loads fx_at(name) into a zeroed ps; on error prints a TAP diagnostic and returns -1. */
int fx_load(arb_pointset_t *ps, const char *name);
/* Removes the directory and everything in it. */
int fx_dir_remove(void);
const char *fx_dir(void);

/* The standard sweep as the profile and gate tests write it to base.csv (run base-run,
 * NCCL 2.28.3, 200 samples per point, nothing planted). */
fx_sweep_t fx_base_sweep(void);

#endif
