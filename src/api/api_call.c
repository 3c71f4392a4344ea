/* SPDX-License-Identifier: MIT */
/*
 * The calls: validate against what was registered at creation, pick the implementation
 * for the size, stage the caller's buffer through the slot's own buffers, call the
 * instance. A call that the chosen implementation declines (a shape it does not handle;
 * the same on every rank) runs on the fallback instead.
 */
#include <string.h>

#include "arb_config.h"
#include "base/common.h"
#include "api/api_priv.h"
#include "arbench/status.h"
#if ARB_HAVE_CUDA
#include <cuda_runtime.h>
#endif

/* n bytes, on the stream for device memory (capturable), at once for host memory. */
static arb_status_t copy_bytes(const arbench_comm_t *c, void *dst, const void *src, size_t n, void *stream,
                               char *why, size_t why_len)
{
    if (c->cfg.cuda_device < 0) {
        memcpy(dst, src, n);
        return ARB_OK;
    }
#if ARB_HAVE_CUDA
    ARB_CUDA_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, (cudaStream_t)stream), why, why_len);
    return ARB_OK;
#else
    (void)dst, (void)src, (void)n, (void)stream;
    ARB_RAISE(ARB_ERR_INVALID, why, why_len, "device memory needs CUDA, and this libarbench was built without it");
#endif
}

/* GRAPH while the stream is being captured, else EAGER. */
static arb_status_t call_mode(const arbench_comm_t *c, void *stream, arb_mode_t *mode, char *why, size_t why_len)
{
    *mode = ARB_MODE_EAGER;
#if ARB_HAVE_CUDA
    if (c->cfg.cuda_device >= 0) {
        enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        ARB_CUDA_TRY(cudaStreamIsCapturing((cudaStream_t)stream, &cs), why, why_len);
        if (cs != cudaStreamCaptureStatusNone) {
            if (!c->cfg.graph)
                ARB_RAISE(ARB_ERR_INVALID, why, why_len, "a call inside CUDA graph capture on a communicator created with graph 0 (set config.graph = 1)");
            *mode = ARB_MODE_GRAPH;
        }
    }
#else
    (void)c, (void)stream, (void)why, (void)why_len;
#endif
    return ARB_OK;
}

/* A registered buffer runs in place where the implementation reduces in place and needs
 * no buffers of its own; said once per implementation on rank 0. */
static int in_place(arbench_comm_t *c, int slot, int registered)
{
    uint32_t caps = arb_inst_caps(c->slots[slot].inst);
    if (!registered || !(caps & ARB_CAP_IN_PLACE) || (caps & ARB_CAP_NEEDS_ALLOC))
        return 0;
    if (!c->logged_in_place[slot] && c->mpi.rank == 0)
        arb_info("allreduce on registered buffers by %s%s%s: in place, no staging copy", c->slots[slot].impl, *c->slots[slot].params ? ":" : "", c->slots[slot].params);
    c->logged_in_place[slot] = 1;
    return 1;
}

static arb_status_t allreduce_on(arbench_comm_t *c, int slot, void *buf, size_t count, arb_dtype_t dtype,
                                 int registered, void *stream, char *why, size_t why_len)
{
    api_slot_t *s = &c->slots[slot];
    size_t bytes = count * arb_dtype_size(dtype);
    if (in_place(c, slot, registered))
        return arb_inst_allreduce(s->inst, buf, buf, count, dtype, stream, why, why_len);
    ARB_TRY(copy_bytes(c, s->stage_send, buf, bytes, stream, why, why_len));
    void *recv = s->stage_recv ? s->stage_recv : buf;
    ARB_TRY(arb_inst_allreduce(s->inst, s->stage_send, recv, count, dtype, stream, why, why_len));
    if (s->stage_recv)
        ARB_TRY(copy_bytes(c, buf, s->stage_recv, bytes, stream, why, why_len));
    return ARB_OK;
}

static arb_status_t allreduce(arbench_comm_t *c, void *buf, size_t count, arbench_dtype_t dtype, void *stream,
                              char *why, size_t why_len)
{
    if (!c || !buf || count == 0 || (dtype != ARBENCH_BF16 && dtype != ARBENCH_FP32))
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "arbench_allreduce: expected a communicator, a buffer, count >= 1 and dtype ARBENCH_BF16 or ARBENCH_FP32 (got count %zu, dtype %d)", count, (int)dtype);
    arb_dtype_t dt = (arb_dtype_t)dtype;
    size_t esz = arb_dtype_size(dt);
    if (count > c->cfg.max_bytes / esz)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "arbench_allreduce of %zu %s elements (%zu bytes): over this communicator's registered max_bytes %zu", count, arb_dtype_name(dt), count * esz, c->cfg.max_bytes);
    const api_reg_t *r = api_find_reg(c, buf);
    if (r && count > (r->base + r->bytes - (uintptr_t)buf) / esz)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "arbench_allreduce of %zu bytes at %p: runs past the end of its registered buffer (%#zx + %zu bytes): register the whole buffer", count * esz, buf, (size_t)r->base, r->bytes);
    arb_mode_t mode;
    ARB_TRY(call_mode(c, stream, &mode, why, why_len));
    const api_pick_t *p = api_pick_dtype(c, ARB_OP_ALLREDUCE, dt, count * esz, mode);
    if (!p)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory for the choice table");
    if (p->slot < 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s", p->note);
    arb_status_t st = allreduce_on(c, p->slot, buf, count, dt, r != NULL, stream, why, why_len);
    if (st == ARB_DECLINE && p->slot != c->fallback_slot[ARB_OP_ALLREDUCE])
        st = allreduce_on(c, c->fallback_slot[ARB_OP_ALLREDUCE], buf, count, dt, r != NULL, stream, why, why_len);
    return st;
}

arbench_status_t arbench_allreduce(arbench_comm_t *comm, void *buf, size_t count, arbench_dtype_t dtype, void *stream,
                                   char *why, size_t why_len)
{
    char local_why[1024];
    if (!why || !why_len)
        why = local_why, why_len = sizeof local_why;
    why[0] = '\0';
    return (arbench_status_t)allreduce(comm, buf, count, dtype, stream, why, why_len);
}

static arb_status_t fused_on(arbench_comm_t *c, int slot, arb_fusion_t fusion, arb_rmsnorm_args_t a, void *stream,
                             char *why, size_t why_len)
{
    api_slot_t *s = &c->slots[slot];
    if (s->stage_send) {
        ARB_TRY(copy_bytes(c, s->stage_send, a.x, (size_t)a.tokens * a.hidden * 2, stream, why, why_len));
        a.x = s->stage_send;
    }
    return arb_inst_allreduce_rmsnorm(s->inst, &a, fusion, stream, NULL, why, why_len);
}

static arb_status_t fused(arbench_comm_t *c, const arb_rmsnorm_args_t *a, void *stream, char *why, size_t why_len)
{
    if (!c || !a->x || !a->residual || !a->weight || !a->out)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "arbench_allreduce_rmsnorm: expected a communicator and four buffers (x, residual, weight, out)");
    if (a->hidden != c->cfg.hidden || a->tokens == 0 || a->tokens > c->cfg.max_tokens)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "arbench_allreduce_rmsnorm of %u x %u: expected hidden %u and 1 to %u tokens (this communicator's registered max_tokens)", a->tokens, a->hidden, c->cfg.hidden, c->cfg.max_tokens);
    arb_mode_t mode;
    ARB_TRY(call_mode(c, stream, &mode, why, why_len));
    const api_pick_t *p = api_pick(c, ARB_OP_ALLREDUCE_RMSNORM, (size_t)a->tokens * a->hidden * 2, mode);
    if (!p)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory for the choice table");
    if (p->slot < 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s", p->note);
    arb_status_t st = fused_on(c, p->slot, p->fusion, *a, stream, why, why_len);
    int fb = c->fallback_slot[ARB_OP_ALLREDUCE_RMSNORM];
    if (st == ARB_DECLINE && p->slot != fb)
        st = fused_on(c, fb, ARB_FUSION_COMPOSED, *a, stream, why, why_len);
    return st;
}

arbench_status_t arbench_allreduce_rmsnorm(arbench_comm_t *comm, const void *x, void *residual, const void *weight,
                                           void *out, unsigned tokens, unsigned hidden, float eps, void *stream,
                                           char *why, size_t why_len)
{
    char local_why[1024];
    if (!why || !why_len)
        why = local_why, why_len = sizeof local_why;
    why[0] = '\0';
    arb_rmsnorm_args_t a = {x, residual, weight, out, tokens, hidden, eps};
    return (arbench_status_t)fused(comm, &a, stream, why, why_len);
}
