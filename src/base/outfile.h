/* SPDX-License-Identifier: MIT */
/*
 * The one output rule, for every command that writes a file:
 *  - an output is never one of the command's inputs, nor another of its outputs (the same
 *    file by device and inode, or by real path when it does not exist yet);
 *  - an existing output is refused unless the command was told what to do with it:
 *    --append (row files: results, predictions) or --force (files written whole: fits,
 *    profiles, reports, dumps);
 *  - appending first checks that the file holds the same header and only complete rows
 *    (every row has the header's number of fields, the file ends on a newline), else it is
 *    refused naming the line;
 *  - a file written whole goes to a temporary name in the same folder and is renamed into
 *    place, so a reader sees the old file or the new one, never half of one; a row file
 *    is created the same way (its header), then grows one whole row per write;
 *  - side files (the engine's memory plan) carry the run id in their name, so a second
 *    run never replaces the first's, and are written only once --out was accepted.
 */
#ifndef ARB_OUTFILE_H
#define ARB_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

typedef enum arb_out_mode {
    ARB_OUT_NEW = 0, /* an existing file is refused */
    ARB_OUT_APPEND,  /* rows are added to an existing file (checked by arb_out_check_rows) */
    ARB_OUT_FORCE,   /* an existing file is replaced (written whole) */
} arb_out_mode_t;

/* A file the command reads or writes, named by its option ("--config", "results"). */
typedef struct arb_io_file {
    const char *what;
    const char *path; /* NULL or "": not given, skipped */
} arb_io_file_t;

/* Checks output `what` at path before any work: not one of others[0..n) (the command's
 * inputs and its other outputs), a regular file if it exists, and an existing file only
 * in APPEND or FORCE mode; `allow` names the option that would permit an existing file
 * ("--append", "--force") for the message. 0, or -1 with a one-line message in err. */
int arb_out_check(const char *what, const char *path, arb_out_mode_t mode, const char *allow,
                  const arb_io_file_t *others, size_t n, char *err, size_t len);

/* arb_out_check, with the positional input files files[0..nfiles) (named files_what in
 * the message) among the others. */
int arb_out_check_inputs(const char *what, const char *path, arb_out_mode_t mode, const char *allow,
                         const arb_io_file_t *others, size_t n, char *const *files, size_t nfiles,
                         const char *files_what, char *err, size_t len);

/* Same file? By device and inode when both exist, else by real path. */
int arb_same_file(const char *a, const char *b);

/* Before appending to the CSV at path: its first line is header (ncols names joined by
 * ','), every later row has ncols fields (quotes understood) and the file ends on a newline.
 * An empty or absent file passes. 0, or -1 naming the line in err. */
int arb_out_check_rows(const char *what, const char *path, const char *const *header, size_t ncols, char *err,
                       size_t len);

/* A file written whole: open() gives a FILE on a temporary name in path's folder,
 * commit() flushes, syncs and renames it onto path, discard() removes it. */
typedef struct arb_outfile {
    FILE *f;
    char path[4096];
    char tmp[4160];
} arb_outfile_t;

FILE *arb_outfile_open(arb_outfile_t *o, const char *what, const char *path, char *err, size_t len);
int arb_outfile_commit(arb_outfile_t *o, char *err, size_t len);
void arb_outfile_discard(arb_outfile_t *o);

/* A side file of output `out` for run `run_id`: "<out without .csv>-<tag>-<run_id><ext>"
 * ("<out without .csv>-<run_id><ext>" for tag ""). */
void arb_out_side_path(const char *out, const char *tag, const char *run_id, const char *ext, char *buf, size_t len);

#endif
