/* SPDX-License-Identifier: MIT */
/*
 * The tuner's view of an arbench profile (docs/profile.md, docs/tuner.md): the rows
 * that tell NCCL which algorithm, protocol and channel count to use for all-reduce of
 * a byte range, for one communicator's rank and node count.
 */
#ifndef ARB_TUNER_RULES_H
#define ARB_TUNER_RULES_H

#include <stddef.h>
#include <stdint.h>

/* algo/proto value of a row whose params say algo=auto or proto=auto: NCCL's own choice. */
#define TUNER_NCCL_CHOICE (-1)

typedef struct tuner_rule {
    uint64_t min_bytes, max_bytes; /* inclusive range of message bytes per rank */
    int mode_rank;                 /* preference among matching rows: graph 0, context 1, eager 2 */
    int dtype_rank;                /* then bf16 0, fp32 1, anything else 2 */
    int algo, proto;               /* NCCL cost-table indices, or TUNER_NCCL_CHOICE */
    int channels;                  /* 0: the row does not set a channel count */
    size_t line;                   /* the row's line in the profile, for messages */
    char what[96];                 /* "Ring/LL channels=4 (graph, bf16)", for messages */
    int warned_unavailable;        /* set once NCCL reported this row's cell unavailable */
} tuner_rule_t;

typedef struct tuner_rules {
    tuner_rule_t *v;
    size_t n;
} tuner_rules_t;

/* Receives one diagnostic line (no trailing newline) about a row that was skipped. */
typedef void (*tuner_warn_fn)(void *arg, const char *msg);

/*
 * Reads the profile at `path` and keeps the rows with impl=nccl, op=allreduce,
 * ranks == nranks, nodes empty or == nnodes and params naming algo= and proto=.
 * A row whose algo, proto, mode or channels is not understood is skipped with a call
 * to `warn`. Returns 0 on success (possibly with no rules). Returns -1 with a message
 * in err, and no rules, when the file cannot be read, is not CSV, lacks a required
 * column, has a schema other than 1 or a field that is not a valid number.
 */
int tuner_rules_load(const char *path, size_t nranks, size_t nnodes, tuner_rules_t *out,
                     tuner_warn_fn warn, void *warn_arg, char *err, size_t err_len);

/* The preferred rule covering nbytes (mode, then dtype, then the narrowest range, then
 * the earliest line), or NULL. */
tuner_rule_t *tuner_rules_find(const tuner_rules_t *rules, uint64_t nbytes);

void tuner_rules_free(tuner_rules_t *rules);

/* Names as NCCL_ALGO / NCCL_PROTO spell them ("Ring", "LL"), or "?" when out of range. */
const char *tuner_algo_name(int algo);
const char *tuner_proto_name(int proto);

#endif
