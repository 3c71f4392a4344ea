/* SPDX-License-Identifier: MIT */
/* The project's words for what is measured: timing modes, operations, element types
 * (arb_dtype_t is the plugin ABI's, arbench/plugin.h). Used from the runtime up. */
#ifndef ARB_VOCAB_H
#define ARB_VOCAB_H

#include <stddef.h>

#include "arbench/plugin.h"

typedef enum arb_mode {
    ARB_MODE_EAGER = 0,   /* CUDA events around each call, back to back */
    ARB_MODE_GRAPH = 1,   /* K calls captured in one graph, replayed */
    ARB_MODE_CONTEXT = 2, /* each call after a compute kernel in a graph, compute-only graph subtracted */
    ARB_MODE_COUNT
} arb_mode_t;

typedef enum arb_op {
    ARB_OP_ALLREDUCE = 0,
    ARB_OP_ALLREDUCE_RMSNORM = 1,
} arb_op_t;

extern const char *const arb_mode_names[ARB_MODE_COUNT];
const char *arb_dtype_name(arb_dtype_t d);
size_t arb_dtype_size(arb_dtype_t d);
const char *arb_op_name(arb_op_t op);

#endif
