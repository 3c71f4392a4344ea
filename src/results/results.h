/* SPDX-License-Identifier: MIT */
/*
 * The results CSV: one row per measured point, every row self-describing.
 * docs/results.md documents each column. Written with libcsv; read back by
 * arb_results_read (profile, gate, plots, tests).
 */
#ifndef ARB_RESULTS_H
#define ARB_RESULTS_H

#include <stddef.h>
#include <stdio.h>

/* X(name): the schema, in file order. Readers look columns up by name, never by
 * position, and accept files from before a column was appended at the end (`role`:
 * src/results/role.h derives it for those). Bump ARB_RESULTS_SCHEMA when a column's meaning
 * changes. */
#define ARB_RESULT_COLUMNS(X)                                                        \
    X(schema) X(run_id) X(time) X(git_rev) X(arbench_version) X(host) X(argv)        \
    X(gpu) X(sm) X(driver) X(cuda) X(nccl) X(nccl_header) X(mpi) X(fabric)          \
    X(binding) X(ranks) X(nodes) X(impl) X(params) X(backend) X(env)                 \
    X(op) X(fusion) X(dtype) X(bytes) X(count) X(tokens) X(hidden) X(mode) X(timing) \
    X(warmup) X(iters) X(median_us) X(p10_us) X(p90_us) X(p99_us) X(mean_us)         \
    X(stdev_us) X(min_us) X(max_us) X(algbw_gbs) X(busbw_gbs) X(check) X(wrong)      \
    X(tolerance) X(note) X(samples_us) X(role)                                       \
    X(source) X(band_lo_us) X(band_hi_us)

#define ARB_RESULTS_SCHEMA 1

/* samples_us holds at most this many samples: with more, every ceil(n / 4096)-th of the
 * n samples in time order (docs/results.md); `iters` keeps n. */
#define ARB_RESULTS_MAX_STORED_SAMPLES 4096

enum arb_result_col {
#define ARB_COL_ENUM(name) ARB_COL_##name,
    ARB_RESULT_COLUMNS(ARB_COL_ENUM)
#undef ARB_COL_ENUM
    ARB_COL_COUNT
};

extern const char *const arb_result_col_names[ARB_COL_COUNT];

/* One row as strings; NULL fields are written empty. */
typedef struct arb_row {
    const char *f[ARB_COL_COUNT];
} arb_row_t;

typedef struct arb_results_writer arb_results_writer_t;

/* Creates path atomically with just the header (written to path.tmp.PID, fsynced,
 * renamed). If the file exists and starts with the same header, rows are appended.
 * Returns NULL and writes a message into err on failure. */
arb_results_writer_t *arb_results_open(const char *path, char *err, size_t err_len);
/* Appends one row, flushes and fsyncs it, so an interrupted sweep keeps it. */
int arb_results_append(arb_results_writer_t *w, const arb_row_t *row);
int arb_results_close(arb_results_writer_t *w);
/* The same writer for another schema (the engine's rows, docs/engine.md): `header` names
 * the ncols columns; rows are appended with arb_csv_append (ncols fields, NULL = empty)
 * and the file is closed with arb_results_close. */
arb_results_writer_t *arb_csv_open(const char *path, const char *const *header, size_t ncols, char *err,
                                   size_t err_len);
int arb_csv_append(arb_results_writer_t *w, const char *const *fields, size_t n);

/* ---- reading ---- */
typedef struct arb_table {
    size_t ncols, nrows;
    char **header;  /* [ncols] */
    char ***rows;   /* [nrows][ncols] */
} arb_table_t;

/* Reads a CSV with a header row. Rejects: no header, duplicate header names, a row
 * whose field count differs from the header, fields over 1 MiB, a file that does not end
 * with a newline (its last row was cut off). The message names the file, line and problem. */
int arb_table_read(const char *path, arb_table_t *t, char *err, size_t err_len);
int arb_table_read_mem(const char *data, size_t len, const char *name, arb_table_t *t,
                       char *err, size_t err_len);
void arb_table_free(arb_table_t *t);
/* Column index by name, or -1. */
int arb_table_col(const arb_table_t *t, const char *name);
/* Checks that every name in `required` (NULL-terminated) is a column; on failure names
 * the missing one. */
int arb_table_require(const arb_table_t *t, const char *const *required, const char *path,
                      char *err, size_t err_len);

#endif
