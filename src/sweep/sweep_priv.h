/* SPDX-License-Identifier: MIT */
/*
 * The sweep's parts: setup (plan agreement, device, topology, results file:
 * sweep_setup.c), one variant's points on an instance (sweep_variant.c), rows and
 * verdict counts (sweep_rows.c), floors (sweep_floors.c); arb_sweep in sweep.c.
 */
#ifndef ARB_SWEEP_PRIV_H
#define ARB_SWEEP_PRIV_H

#include <stddef.h>

#include "arbench/status.h"
#include "runtime/loader.h"
#include "base/meta.h"
#include "sweep/report.h"
#include "results/results.h"
#include "results/role.h"
#include "sweep/runner.h"
#include "base/sizes.h"
#include "base/stats.h"
#include "sweep/plan.h"
#include "runtime/hostops.h"

/* Samples written per row: 4096 x ~8 characters stays far below the readers' 1 MiB field limit. */
#define ARB_MAX_STORED_SAMPLES ARB_RESULTS_MAX_STORED_SAMPLES

typedef struct sweep {
    arb_plan_t *plan;
    arb_mpi_t *m;
    arb_meta_t meta;
    const arb_runner_ops_t *runner;
    arb_results_writer_t *out; /* rank 0 only */
    arb_report_t report;
    int device;                /* this rank's CUDA device, -1 for the host backend */
    size_t max_bytes;
    unsigned max_tokens;
    double floor[ARB_MAX_SIZES][ARB_MODE_COUNT]; /* the highest reference median (role.h) */
    char floor_name[ARB_MAX_SIZES][ARB_MODE_COUNT][24];
    double *maxbuf;
    size_t maxcap;
    size_t npass, nfail, nskip;
    unsigned salt;
    arb_role_t cur_role; /* of the variant being run, from its plugin's capabilities */
    int interrupted;   /* every rank saw the stop flag (sweep_stop.h): stop after this point */
} sweep_t;

/* sweep_setup.c; each is collective and returns ARB_OK, or an error with the message in msg on every rank. */
arb_status_t sweep_agree_plan(sweep_t *s);
arb_status_t sweep_setup_device(sweep_t *s, char *msg, size_t len);
arb_status_t sweep_trim_host_modes(sweep_t *s, char *msg, size_t len);
arb_status_t sweep_setup_topology(sweep_t *s, char *msg, size_t len);
arb_status_t sweep_open_results(sweep_t *s, char *msg, size_t len);

/* sweep_rows.c */
void sweep_fill_point(const sweep_t *s, size_t si, arb_mode_t mode, int fz, arb_point_t *pt);
const char *sweep_fusion_name(const arb_plan_t *p, int fz);
/* Each (size, mode, fusion) of one variant, in plan order; fz 0 = composed ("unfused"), 1 = the plugin's fused kernel. */
#define SWEEP_FOR_EACH_POINT(s, si, mode, fz)                                                        \
    for (size_t si = 0; si < (s)->plan->nsizes; si++)                                                \
        for (int mode = 0; mode < ARB_MODE_COUNT; mode++)                                            \
            if ((s)->plan->modes & (1u << mode))                                                     \
                for (int fz = 0; fz < ((s)->plan->op == ARB_OP_ALLREDUCE_RMSNORM ? 2 : 1); fz++)
/* The row of one point: rank 0 writes it to the CSV and the table and counts its verdict;
 * other ranks return at once. */
void sweep_write_row(sweep_t *s, const char *impl, const char *params, const arb_point_t *pt, const char *fusion,
                     const char *check, unsigned long long wrong, const char *note, const arb_stats_t *st,
                     const double *samples, size_t nsamples, const char *timing, double tol);
/* Every point of a variant that did not run, as skip or fail with the reason. */
void sweep_rows_all(sweep_t *s, const char *impl, const char *params, const char *check, const char *why);

/* sweep_floors.c: the floor medians (ping preferred, else noop) of this run. */
void sweep_floor_record(sweep_t *s, const char *impl, size_t si, arb_mode_t mode, double median);
/* median / floor at this size and mode, 0 when no floor was measured; *name " ping" or " noop". */
double sweep_floor_ratio(const sweep_t *s, size_t bytes, arb_mode_t mode, double median, const char **name);

/* sweep_variant.c: every point of one variant. ARB_OK (also when interrupted: s->interrupted),
 * ARB_ERR_SYSTEM when the GPU became unusable. */
arb_status_t sweep_run_variant(sweep_t *s, arb_loaded_plugin_t *lp, const char *params);

#endif
