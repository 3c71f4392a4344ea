/* SPDX-License-Identifier: MIT */
/*
 * Rank agreement: every MPI command records what determines its work (its arguments and
 * the bytes of every input file it reads) and checks, before any work, that every rank
 * recorded the same; a difference names the first differing argument or file and the
 * ranks that differ from rank 0.
 *
 * What is compared:
 *  - the arguments after normalisation: `--opt=value` and `--opt value` are one item
 *    keyed by the option; order between different options does not matter, a repeated
 *    option is one item holding its values in order, a positional argument is keyed by
 *    its place;
 *    a default given explicitly on one rank only is a difference (the ranks were launched
 *    differently);
 *  - input files by content, not by path: the options listed as file options are left
 *    out of the argument items and the command records each file it reads under the
 *    option's name; two paths with the same bytes agree, one path with different bytes on
 *    different nodes does not;
 *  - nothing per rank is left out of the arguments; the environment is not compared
 *    (what it changes about the inputs shows in the files' contents).
 */
#ifndef ARB_AGREE_H
#define ARB_AGREE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/hostops.h"

#define ARB_AGREE_MAX_ITEMS 96u

typedef struct arb_agree_item {
    char key[48];    /* "--weights", "argument 3" */
    char shown[112]; /* the value as given, or "path (N bytes)" for a file */
    uint64_t hash;   /* of the value, or of the file's bytes */
} arb_agree_item_t;

typedef struct arb_agree {
    unsigned n;
    unsigned dropped; /* items past ARB_AGREE_MAX_ITEMS: still in `overflow` */
    uint64_t overflow;
    arb_agree_item_t item[ARB_AGREE_MAX_ITEMS];
} arb_agree_t;

void arb_agree_init(arb_agree_t *a);

/* Records argv[1..argc-1] (argv[0] is the subcommand). file_opts: a NULL-terminated
 * list of options ("--config") whose values name input files, or NULL. */
void arb_agree_args(arb_agree_t *a, int argc, char **argv, const char *const *file_opts);

/* Records the contents of the file at path under key; an unreadable file is recorded as
 * such (the reader's own error follows, the same on every rank). */
void arb_agree_file(arb_agree_t *a, const char *key, const char *path);

/* Compares every rank's record (collective over m->world). Returns 0 when all agree;
 * otherwise -1 on every rank, with the one-line message in msg on rank 0 (and a short
 * one elsewhere). */
int arb_agree_check(const arb_agree_t *a, arb_mpi_t *m, char *msg, size_t len);

/* For a command that reads no input file: records argv and checks (as above). */
int arb_agree_argv(arb_mpi_t *m, int argc, char **argv, char *msg, size_t len);

/* The record's digest (independent of the order of the items). */
uint64_t arb_agree_digest(const arb_agree_t *a);

#endif
