/* SPDX-License-Identifier: MIT */
/*
 * Real weights and tokens for the driver: --weights-dir (the checkpoint opened once, its
 * quantization deciding --weights, every rank's plan checked before a model is built),
 * --prompt-ids (the prompt that fills the cache instead of the seeded one) and --out-ids
 * (the greedy continuation written whole, src/base/outfile.h).
 *
 * Token-id files: decimal integers in 0 .. vocab_size - 1 separated by whitespace (spaces,
 * tabs, newlines), nothing else; --out-ids writes them on one line, so an output can be
 * given back as a prompt.
 */
#ifndef ARB_ENGINE_RUN_WEIGHTS_H
#define ARB_ENGINE_RUN_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "run/run_state.h"

/* Before the shards are made: opens --weights-dir (sets the run's --weights from it),
 * reads --prompt-ids (sets --context to its length). 0, or -1 with the reason in msg. */
int arb_run_weights_open(arb_engine_run_t *r, char *msg, size_t len);

/* After the shards are made: checks this rank's plan against the checkpoint (nothing is
 * read yet) and says on rank 0 what the load will read. 0, or -1. */
int arb_run_weights_check(arb_engine_run_t *r, char *msg, size_t len);

/* Reads a token-id file (the format above) into *ids (malloc'd), *n of them; every id must
 * be below vocab. ARB_ERR_INVALID naming the file, the position and what was expected. */
arb_status_t arb_token_ids_read(const char *path, unsigned vocab, uint32_t **ids, unsigned *n, char *why,
                                size_t len);

/* Writes n ids to path (temporary name, then renamed into place). */
arb_status_t arb_token_ids_write(const char *path, const uint32_t *ids, unsigned n, char *why, size_t len);

/* Rank 0, after the first decode phase of the implementation: --out-ids, if given. */
void arb_run_write_out_ids(const arb_engine_run_t *r, const uint32_t *ids, unsigned n);

/* Collective, after a model was created from the checkpoint: the slowest rank's load time
 * and the bytes all ranks read, printed on rank 0 (nothing without --weights-dir); the run's
 * load_stats keep that time and this rank's bytes for the rows. */
void arb_run_report_load(arb_engine_run_t *r, const char *what);

/* What the last load read, for rows and the table: GB/s (< 0: no load) and seconds. */
double arb_run_load_gbs(const arb_engine_run_t *r);

void arb_run_weights_close(arb_engine_run_t *r);

#endif
