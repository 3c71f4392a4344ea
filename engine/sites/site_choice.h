/* SPDX-License-Identifier: MIT */
/*
 * Which all-reduce serves an engine call site, read from a tuning profile (the CSV or
 * JSON of `arbench profile`, docs/profile.md). A call site is described by what the
 * profile was measured at: op, bytes = tokens x hidden x 2 (bf16), mode, ranks, nodes
 * and the fabric label. docs/engine-e2e.md states the matching rule; in short:
 *
 *   1. fabric and ranks must be equal (a profile of another fabric or rank count is no
 *      evidence for this one); nodes equal, or 0 on either side (not recorded);
 *      dtype bf16 (the engine's all-reduces are bf16);
 *   2. mode must be equal (an eager measurement says nothing about graph replay);
 *   3. op: for a fused site (allreduce_rmsnorm) the allreduce_rmsnorm entries first,
 *      then allreduce entries (their all-reduce, composed with arbench's RMSNorm);
 *      for an allreduce site only allreduce entries;
 *   4. the entry's [min_bytes, max_bytes] contains the site's bytes (inclusive).
 *   Several matches: the earlier op tier wins, then an entry with the exact node count
 *   over one with nodes 0; the profile reader refuses overlapping ranges within one
 *   key, so no tie remains (a site with nodes 0, unknown, takes the first such entry
 *   in file order). No match: NCCL with its own choice (no params), composed
 *   for a fused site, and one line that names the site and what was missing (the CPU
 *   reference engine falls back to its mpi-host backend instead).
 */
#ifndef ARB_ENGINE_SITE_CHOICE_H
#define ARB_ENGINE_SITE_CHOICE_H

#include <stddef.h>

#include "arbench/plugin.h"
#include "runtime/instance.h"
#include "base/vocab.h"
#include "analysis/profile.h"

/* One call site (or a group of sites of the same shape: every layer's site A at T=3). */
typedef struct arb_site {
    const char *name;   /* for messages and rows, e.g. "verify.attn" */
    arb_op_t op;        /* ARB_OP_ALLREDUCE_RMSNORM for the engine's fused sites */
    unsigned tokens;    /* T: rows of the call */
    unsigned hidden;    /* row length, elements */
    arb_mode_t mode;    /* graph or eager, as the step runs */
    int ranks, nodes;   /* nodes 0 = unknown (matches any entry) */
    const char *fabric; /* the topology label of this run (docs/topology.md) */
} arb_site_t;

/* bytes per rank of one call: tokens x hidden x 2 (bf16). */
size_t arb_site_bytes(const arb_site_t *s);

typedef struct arb_choice {
    char impl[64];       /* plugin name */
    char params[256];    /* what to open it with: the profile's params less volatile items */
    arb_fusion_t fusion; /* PLUGIN (fused), COMPOSED (unfused) or AUTO (not recorded) */
    int from_profile;    /* 0: the NCCL fallback */
    const arb_profile_entry_t *entry; /* the matching entry (borrowed), NULL on fallback */
    char note[1024];     /* one line: what matched, or why the site fell back */
} arb_choice_t;

/* Items of a profile's params that describe the run, not the variant (the library
 * version); they are dropped before the params are handed to the plugin's init. */
extern const char *const arb_site_volatile_params[];

/* Reads a profile file: JSON when its first non-blank byte is '{', CSV otherwise.
 * Both are validated by the profile reader (schema, numbers, disjoint ranges); a
 * malformed file is ARB_ERR_INVALID with a reason that names the file. */
arb_status_t arb_site_profile_load(const char *path, arb_profile_t *p, char *why, size_t why_len);
/* The same for JSON text in memory; `name` stands for the file in messages. */
arb_status_t arb_site_profile_from_json(const char *data, size_t len, const char *name, arb_profile_t *p,
                                        char *why, size_t why_len);

/* The fallback of a site without a matching entry: NCCL on the GPU engine. The CPU
 * reference engine, which has no NCCL, passes its own backend (mpi-host). */
#define ARB_SITE_FALLBACK "nccl"

/* The choice for one site. `p` may be NULL (no profile: every site falls back).
 * `profile_name` names the profile in notes; `fallback` is the implementation used,
 * with its own choice (no params), where nothing matches (NULL: ARB_SITE_FALLBACK).
 * ARB_ERR_INVALID for a site that is not one (tokens or hidden 0, no fabric). */
arb_status_t arb_site_choose(const arb_profile_t *p, const char *profile_name, const arb_site_t *site,
                             const char *fallback, arb_choice_t *out, char *why, size_t why_len);

/* "IMPL[:params]" (the --baseline and --impl form) as a choice, fusion AUTO. ARB_ERR_INVALID
 * for an empty name, a name over 63 bytes or params over 255. */
arb_status_t arb_choice_parse(const char *spec, arb_choice_t *out, char *why, size_t why_len);

/* "impl[:params][ fused|unfused]" for tables and rows. */
void arb_choice_label(const arb_choice_t *c, char *buf, size_t len);

#endif
