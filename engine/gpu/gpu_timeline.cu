// SPDX-License-Identifier: MIT
// The step's timeline on the host (gpu_model.h's arb_gpu_timeline_*; the kernels' side is
// kernels/timeline.cuh): one device buffer at a time, since every file's __constant__ buffer
// is the process's.
#define OMPI_SKIP_MPICXX 1 // gpu_model.h includes mpi.h: the C API only
#include <cuda_runtime_api.h>
#include <stdlib.h>

#include "arbench/status.h"
#include "gpu/gpu_model.h"
#include "gpu/kernels/kernels.h"
#include "gpu/kernels/timeline.h"

namespace {

struct tl_state {
    arb_tl_rec_t *rec = nullptr;
    unsigned *counters = nullptr; // [0] records used, [1 ..] CTAs per tag
    size_t cap = 0;
};
tl_state g_tl;

void tl_free()
{
    cudaFree(g_tl.rec), cudaFree(g_tl.counters);
    g_tl = tl_state();
}

} // namespace

extern "C" arb_status_t arb_gpu_timeline_begin(size_t cap, char *why, size_t why_len)
{
    if (!arb_tl_built())
        ARB_RAISE(ARB_DECLINE, why, why_len,
                  "timeline: this build records none (configure with meson -Dengine_timeline=true)");
    if (g_tl.rec)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "timeline: already recording (arb_gpu_timeline_end first)");
    if (cap < 1 || cap > (1u << 26))
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "timeline: room for %zu records; expected 1 .. %u", cap, 1u << 26);
    // ARB_TL_MARK=k: the wait's stamp taken at the kernels' ARB_TL_MARK(k) instead (timeline.cuh;
    // 1 .. kTlMarks); unset or empty: none
    unsigned mark = 0;
    if (const char *m = getenv("ARB_TL_MARK"); m && *m) {
        char *end = nullptr;
        const unsigned long v = strtoul(m, &end, 10);
        if (*end || v > arbk::kTlMarks || m[0] == '-')
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "timeline: ARB_TL_MARK='%s'; expected 0 .. %u (a kernel's mark)",
                      m, arbk::kTlMarks);
        mark = (unsigned)v;
    }
    arb_status_t rs = ARB_OK;
    ARB_CUDA_GOTO(rs, cudaMalloc(&g_tl.rec, cap * sizeof(arb_tl_rec_t)), fail, why, why_len);
    ARB_CUDA_GOTO(rs, cudaMalloc(&g_tl.counters, (1 + ARB_TL_TAGS) * sizeof(unsigned)), fail, why, why_len);
    ARB_CUDA_GOTO(rs, cudaMemset(g_tl.counters, 0, (1 + ARB_TL_TAGS) * sizeof(unsigned)), fail, why, why_len);
    g_tl.cap = cap;
    {
        const arbk::tl_buf b = {g_tl.rec, g_tl.counters, g_tl.counters + 1, (unsigned)cap, mark};
        ARB_CUDA_GOTO(rs, arbk::tl_attach(b), fail, why, why_len);
    }
    ARB_CUDA_GOTO(rs, cudaDeviceSynchronize(), fail, why, why_len);
    return ARB_OK;
fail : {
    const arbk::tl_buf off = {};
    arbk::tl_attach(off);
}
    tl_free();
    return rs;
}

extern "C" arb_status_t arb_gpu_timeline_end(arb_tl_rec_t *out, size_t cap, size_t *n, size_t *dropped, char *why,
                                             size_t why_len)
{
    if (!g_tl.rec)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "timeline: not recording (arb_gpu_timeline_begin first)");
    arb_status_t rs = ARB_OK;
    unsigned used = 0;
    size_t keep = 0;
    ARB_CUDA_GOTO(rs, cudaDeviceSynchronize(), out, why, why_len);
    {
        const arbk::tl_buf off = {};
        ARB_CUDA_GOTO(rs, arbk::tl_attach(off), out, why, why_len);
    }
    ARB_CUDA_GOTO(rs, cudaMemcpy(&used, g_tl.counters, sizeof used, cudaMemcpyDeviceToHost), out, why, why_len);
    keep = used < g_tl.cap ? used : g_tl.cap;
    keep = keep < cap ? keep : cap;
    if (keep)
        ARB_CUDA_GOTO(rs, cudaMemcpy(out, g_tl.rec, keep * sizeof(arb_tl_rec_t), cudaMemcpyDeviceToHost), out, why,
                      why_len);
    if (arb_tl_number_launches(out, keep, why, why_len)) // the device wrote each CTA's ordinal
        rs = ARB_ERR_SYSTEM;
    *n = keep;
    *dropped = used - keep;
out:
    tl_free();
    return rs;
}

extern "C" arb_status_t arb_gpu_moe_reissues(unsigned *n, char *why, size_t why_len)
{
    *n = 0;
    if (!arb_tl_built())
        ARB_RAISE(ARB_DECLINE, why, why_len,
                  "moe reissues: this build counts none (configure with meson -Dengine_timeline=true)");
    ARB_CUDA_TRY(cudaDeviceSynchronize(), why, why_len);
    ARB_CUDA_TRY(arbk::moe_reissues(n), why, why_len);
    return ARB_OK;
}
