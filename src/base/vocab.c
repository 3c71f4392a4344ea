/* SPDX-License-Identifier: MIT */
#include "base/vocab.h"

const char *const arb_mode_names[ARB_MODE_COUNT] = {"eager", "graph", "context"};

const char *arb_dtype_name(arb_dtype_t d) { return d == ARB_DTYPE_FP32 ? "fp32" : "bf16"; }
size_t arb_dtype_size(arb_dtype_t d) { return d == ARB_DTYPE_FP32 ? 4 : 2; }
const char *arb_op_name(arb_op_t op) { return op == ARB_OP_ALLREDUCE_RMSNORM ? "allreduce_rmsnorm" : "allreduce"; }
