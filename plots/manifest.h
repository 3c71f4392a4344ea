/* SPDX-License-Identifier: MIT */
/*
 * arb-plotdata's gnuplot output: one manifest (FIG.gp) per figure, naming its series
 * files (FIG__sN.dat), their colours and dash types, the subsets each kind of panel
 * draws (payload without the floors, speedup of the candidates only), the token marks
 * and the axes fitted to the data. docs/plots.md describes what render.sh does with them.
 */
#ifndef ARB_PLOTS_MANIFEST_H
#define ARB_PLOTS_MANIFEST_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/points.h"
#include "results/role.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

typedef const arb_point_t *pt_t;

/* Per size of a figure: its floor and fastest baseline (role.h). */
typedef struct size_refs {
    size_t bytes;
    arb_refs_t refs;
} size_refs_t;

/* A manifest being written: its series files, colours, dash types and subsets. */
typedef struct manifest {
    FILE *f;
    size_t token; /* bytes of one token: hidden x element size */
    double lo, hi; /* smallest p10 and largest p90 over the series (us) */
    char dir[4096], base[700];
    size_t nser;
    char files[1 << 15], colors[1 << 12], dts[1 << 10];
    char payload[1 << 15], payload_colors[1 << 12];  /* without the floors */
    char speedup[1 << 15], speedup_colors[1 << 12];  /* candidates only */
} manifest_t;

/* Opens DIR/BASE.gp and writes its title lines; f: a row of the figure (its dtype sets
 * the token size). Returns 0, or -1 with a message on stderr. */
int manifest_open(manifest_t *m, const char *dir, const char *base, const char *title, const char *env, pt_t f);
/* Writes the token marks, the axes for [minb, maxb] bytes, the panel kinds and the file
 * lists, and closes the manifest. */
int manifest_close(manifest_t *m, size_t minb, size_t maxb, const char *kinds);
/* Writes one series (rows v[0..n), ascending bytes) and registers it in m. */
int write_series(manifest_t *m, const char *label, const char *color, int dt, arb_role_t role, pt_t *v,
                 size_t n, const size_refs_t *refs, size_t nrefs);

/* Appends s to the space-separated list in buf (cap bytes, always terminated). */
void list_append(char *buf, size_t cap, const char *s);
/* Text for a gnuplot double-quoted string: quotes and backslashes become '. */
void gp_text(char *out, size_t len, const char *s);

#endif
