/* SPDX-License-Identifier: MIT */
/* arbench.h: registered buffers, the ranges a call may use in place (api_call.c). */
#include <stdlib.h>

#include "arb_config.h"
#include "api/api_priv.h"
#include "arbench/status.h"
#if ARB_HAVE_CUDA
#include <cuda_runtime.h>
#endif

const api_reg_t *api_find_reg(const arbench_comm_t *c, const void *buf)
{
    uintptr_t a = (uintptr_t)buf;
    for (size_t i = 0; i < c->nregs; i++)
        if (a >= c->regs[i].base && a - c->regs[i].base < c->regs[i].bytes)
            return &c->regs[i];
    return NULL;
}

/* Device memory on the communicator's device, as the calls will need it. */
static arb_status_t check_memory(const arbench_comm_t *c, const void *buf, char *why, size_t why_len)
{
    if (c->cfg.cuda_device < 0)
        return ARB_OK;
#if ARB_HAVE_CUDA
    struct cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, buf) != cudaSuccess) {
        cudaGetLastError();
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "arbench_register(%p): not a pointer CUDA knows", buf);
    }
    if (at.type != cudaMemoryTypeDevice || at.device != c->cfg.cuda_device)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "arbench_register(%p): memory of type %d on device %d, expected device memory on device %d (the communicator's)", buf, (int)at.type, at.device, c->cfg.cuda_device);
    return ARB_OK;
#else
    (void)buf;
    ARB_RAISE(ARB_ERR_INVALID, why, why_len, "device memory needs CUDA, and this libarbench was built without it");
#endif
}

static arb_status_t reg(arbench_comm_t *c, void *buf, size_t bytes, char *why, size_t why_len)
{
    if (!c || !buf || bytes == 0 || bytes > c->cfg.max_bytes)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "arbench_register of %zu bytes: expected a communicator, a buffer and 1 to %zu bytes (config max_bytes)", bytes, c ? c->cfg.max_bytes : 0);
    uintptr_t a = (uintptr_t)buf;
    for (size_t i = 0; i < c->nregs; i++)
        if (a < c->regs[i].base + c->regs[i].bytes && c->regs[i].base < a + bytes)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "arbench_register(%p, %zu): overlaps the registered %#zx + %zu bytes (deregister it first)", buf, bytes, (size_t)c->regs[i].base, c->regs[i].bytes);
    ARB_TRY(check_memory(c, buf, why, why_len));
    if (c->nregs == c->regs_cap) {
        size_t cap = c->regs_cap ? 2 * c->regs_cap : 8;
        api_reg_t *r = realloc(c->regs, cap * sizeof *r);
        if (!r)
            ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory for the registrations");
        c->regs = r, c->regs_cap = cap;
    }
    c->regs[c->nregs++] = (api_reg_t){.base = a, .bytes = bytes};
    return ARB_OK;
}

arbench_status_t arbench_register(arbench_comm_t *comm, void *buf, size_t bytes, char *why, size_t why_len)
{
    char local_why[1024];
    if (!why || !why_len)
        why = local_why, why_len = sizeof local_why;
    why[0] = '\0';
    return (arbench_status_t)reg(comm, buf, bytes, why, why_len);
}

arbench_status_t arbench_deregister(arbench_comm_t *comm, void *buf, char *why, size_t why_len)
{
    char local_why[1024];
    if (!why || !why_len)
        why = local_why, why_len = sizeof local_why;
    why[0] = '\0';
    for (size_t i = 0; comm && i < comm->nregs; i++)
        if (comm->regs[i].base == (uintptr_t)buf) {
            comm->regs[i] = comm->regs[--comm->nregs];
            return ARBENCH_OK;
        }
    ARB_WHY(why, why_len, "arbench_deregister(%p): not a registered buffer of this communicator", buf);
    return ARBENCH_ERR_INVALID;
}
