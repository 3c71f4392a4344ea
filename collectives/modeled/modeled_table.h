/* SPDX-License-Identifier: MIT */
/*
 * The modeled plugin's latency table: rows of a results CSV (measured elsewhere or
 * predicted by `arbench model predict`) or a profile CSV, selected by implementation,
 * params, mode, ranks and op, interpolated in log(bytes). Plain C: unit-tested on the CPU.
 */
#ifndef ARB_MODELED_TABLE_H
#define ARB_MODELED_TABLE_H

#include <stddef.h>

#include "arbench/plugin.h"

typedef struct modeled_select {
    char table[512];  /* path of the CSV */
    char impl[64];    /* "" = any (a profile: its choices) */
    char params[512]; /* items that must all be in the row's params; "" = any */
    char mode[16];    /* "" = graph if the rows have it, else the only mode */
    char op[24];      /* allreduce */
    int ranks;        /* 0 = the only ranks value of the rows, else default_ranks */
    double scale;     /* latencies are multiplied by this */
    double offset_us; /* and this is subtracted (the launch floor of the replaying GPU) */
} modeled_select_t;

typedef struct modeled_table {
    size_t n;
    double *bytes, *us; /* ascending bytes, one latency each (microseconds, scaled) */
    char desc[768];     /* what was selected: for decline reasons and describe() */
} modeled_table_t;

/* Parses "table=PATH,impl=NAME,mode=graph,ranks=8,scale=1.0,offset_us=0,params=K=V,K=V".
 * params= takes the rest of the string (its value holds commas; ';' also separates its
 * items). ARB_OK, or ARB_ERR_INVALID with a message naming the bad item and the accepted form. */
arb_status_t modeled_parse_params(const char *params, modeled_select_t *sel, char *why, size_t why_len);

/* Loads the rows sel names. default_ranks: the communicator's size. ARB_OK, or ARB_DECLINE
 * with why naming the table and what did not match (no rows, several variants, ...). */
arb_status_t modeled_table_load(const modeled_select_t *sel, int default_ranks, modeled_table_t *t, char *why,
                       size_t why_len);
void modeled_table_free(modeled_table_t *t);

/* The latency at `bytes` per rank, interpolated linearly in log(bytes) between the two
 * nearest sizes (exact at a size of the table). Outside the table: ARB_DECLINE and why
 * names the table, the shape and the range it covers. */
arb_status_t modeled_table_lookup(const modeled_table_t *t, double bytes, double *us, char *why, size_t why_len);

#endif
