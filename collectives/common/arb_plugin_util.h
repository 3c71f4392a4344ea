/* SPDX-License-Identifier: MIT */
/*
 * Host helpers every plugin needs, in one static PIC library (libarb-plugin-util.a,
 * linked into each module; collectives/common/meson.build): the key=value parameter
 * parser, plugin logging, the CUDA device check and the resolver of a fused grid of
 * thread-block clusters that every rank can keep resident. C11; arbench/status.h for
 * the error model. Nothing here keeps state between calls.
 */
#ifndef ARB_PLUGIN_UTIL_H
#define ARB_PLUGIN_UTIL_H

#include <stddef.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ARB_PLOG_PRINTF_(f, a) __attribute__((format(printf, f, a)))
#else
#define ARB_PLOG_PRINTF_(f, a)
#endif

/* ---- parameters: "key=value,key=value" ---- */

/* Longest parameter string (characters). */
#define ARB_KV_MAX_CHARS 511

typedef struct arb_kv_key {
    const char *name;       /* the key */
    const char *deprecated; /* an old spelling of the same knob, accepted with a log line; NULL: none */
} arb_kv_key_t;

/* Called once per item in order; key is the index into keys (a deprecated spelling
 * arrives as its key). Returns ARB_OK, or an error with one line in why that names
 * the key, the value and the accepted form. */
typedef arb_status_t (*arb_kv_fn)(void *ctx, int key, const char *value, char *why, size_t why_len);

/*
 * Splits params (NULL or "": no items) and calls on_pair for each item. Rejected with
 * ARB_ERR_INVALID and one line starting "<plugin>: ": a string longer than
 * ARB_KV_MAX_CHARS, an empty item (",," or a trailing ','), an item that is not
 * key=value (no '=', an empty key or an empty value), a key not in keys ("unknown
 * parameter 'k' (keys: ...)"), a key given twice (also under its two spellings), and
 * whatever on_pair rejects. A deprecated spelling logs one line through ops (when
 * ops is not NULL) naming the key to use.
 */
arb_status_t arb_kv_parse(const char *plugin, const char *params, const arb_kv_key_t *keys, int nkeys,
                          arb_kv_fn on_pair, void *ctx, const arb_host_ops_t *ops, char *why, size_t why_len);

/* A whole decimal integer in [lo, hi] (no sign for lo >= 0, no trailing text): 0 and
 * *out, or -1. */
int arb_kv_int(const char *value, long lo, long hi, int *out);

/* ---- logging ---- */

/* One diagnostic line through ops->log (the harness prefixes rank and plugin); on
 * stderr prefixed "arb-<plugin>: " where ops has no log. At most 1 KiB. */
void arb_plog(const arb_host_ops_t *ops, const char *plugin, const char *fmt, ...) ARB_PLOG_PRINTF_(3, 4);

/* ---- the device ---- */

/*
 * The CUDA device check of a GPU plugin's init, before its first other CUDA call:
 * ARB_DECLINE "<plugin> needs a CUDA device (this run is host-only)" when the harness
 * made no device current (info->cuda_device < 0); ARB_ERR_SYSTEM "no CUDA device
 * visible: ..." when cudaGetDeviceCount fails or finds none; ARB_ERR_INVALID when
 * info->cuda_device is not one of the visible devices. Does not change the current
 * device.
 */
arb_status_t arb_plugin_device_check(const arb_comm_info_t *info, const char *plugin, char *why, size_t why_len);

/* ---- a fused grid of clusters resident on every rank ---- */

/* Cluster sizes 1, 2, 4, 8 CTAs (index i: 2^i CTAs; 8 is the portable cluster limit). */
#define ARB_GRID_SIZES 4

/* Collective (every rank, in the same order): allgathers every rank's resident-
 * cluster counts (mine[i]: clusters of 2^i CTAs that can be resident at once; 0 where
 * unknown) and writes the fewest over ranks into fewest. ARB_ERR_SYSTEM when the
 * allgather fails. nranks <= 64. */
arb_status_t arb_grid_agree(const arb_host_ops_t *ops, int nranks, const int mine[ARB_GRID_SIZES],
                            int fewest[ARB_GRID_SIZES], const char *plugin, char *why, size_t why_len);

/* Bit i set when clusters of 2^i CTAs keep all `grid` CTAs resident on every rank
 * (fewest[i] x 2^i >= grid), for 2^i <= max_p. grid is a multiple of those sizes. */
unsigned arb_grid_fit_mask(const int fewest[ARB_GRID_SIZES], int grid, int max_p);

/* The largest grid of at most ctas CTAs made of whole clusters of one size whose
 * clusters are all resident (ties to the larger size): returns i (the size 2^i) and
 * the grid in *grid, or -1 (and *grid = 0) when no size fits. */
int arb_grid_largest(const int fewest[ARB_GRID_SIZES], int ctas, int *grid);

#ifdef __cplusplus
}
#endif

#endif
