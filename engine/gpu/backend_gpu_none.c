/* SPDX-License-Identifier: MIT */
/* A build without the GPU engine (no CUDA toolkit): the driver says so. */
#include "model/backend.h"

const arb_backend_ops_t *arb_engine_backend_gpu(void)
{
    return NULL;
}
