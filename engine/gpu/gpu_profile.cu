// SPDX-License-Identifier: MIT
// Where a replayed step's time goes, per kind of launch (gpu_model.h,
// arb_gpu_model_profile_graph). The step is captured once; while it is captured, every
// launch's mark (gpu_step.cu) files the graph nodes created since the previous mark under
// that launch's kind. The instantiated graph is then replayed whole and, for each kind,
// with that kind's nodes disabled (cudaGraphNodeSetEnabled: a disabled node acts as an
// empty node, so every dependency stays), the variants interleaved replay by replay. A
// kind's time is median(whole) - median(whole without it): what it adds to a replayed step,
// its launch latency and any wait it causes included.
#define OMPI_SKIP_MPICXX 1 // instance.h includes mpi.h: the C API only
#include <algorithm>
#include <cmath>
#include <chrono>
#include <thread>
#include <unordered_set>
#include <vector>

#include <cuda_runtime.h>

#include "arbench/status.h"
#include "gpu/gpu_layout.h"

struct arb_gpu_prof_graph {
    std::unordered_set<cudaGraphNode_t> seen;
    std::vector<cudaGraphNode_t> nodes[ARB_GPU_PROF_KINDS]; // by kind, in capture order
    std::vector<int> other[ARB_GPU_PROF_KINDS];             // node types that cannot be disabled
    cudaError_t err = cudaSuccess;
};

void arb_gpu_prof_graph_mark(arb_gpu_model *m, cudaStream_t st, int kind)
{
    arb_gpu_prof_graph *pg = m->prof_graph;
    if (pg->err != cudaSuccess || kind < 0 || kind >= ARB_GPU_PROF_KINDS)
        return;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaGraph_t g = nullptr;
    cudaError_t e = cudaStreamGetCaptureInfo(st, &cs, nullptr, &g);
    if (e == cudaSuccess && (cs != cudaStreamCaptureStatusActive || !g))
        e = cudaErrorStreamCaptureInvalidated;
    size_t n = 0;
    if (e == cudaSuccess)
        e = cudaGraphGetNodes(g, nullptr, &n);
    std::vector<cudaGraphNode_t> all(n);
    if (e == cudaSuccess && n)
        e = cudaGraphGetNodes(g, all.data(), &n);
    for (size_t i = 0; e == cudaSuccess && i < n; i++) {
        if (!pg->seen.insert(all[i]).second)
            continue;
        cudaGraphNodeType t;
        e = cudaGraphNodeGetType(all[i], &t);
        if (e != cudaSuccess || t == cudaGraphNodeTypeEmpty)
            continue;
        if (t == cudaGraphNodeTypeKernel || t == cudaGraphNodeTypeMemset || t == cudaGraphNodeTypeMemcpy)
            pg->nodes[kind].push_back(all[i]);
        else
            pg->other[kind].push_back((int)t);
    }
    pg->err = e;
}

namespace {

constexpr int kReplayDeadlineS = 30;

arb_status_t set_enabled(cudaGraphExec_t ex, const std::vector<cudaGraphNode_t> &nodes, unsigned on, char *why,
                         size_t len)
{
    for (cudaGraphNode_t n : nodes)
        ARB_CUDA_TRY(cudaGraphNodeSetEnabled(ex, n, on), why, len);
    return ARB_OK;
}

arb_status_t replay_us(cudaGraphExec_t ex, cudaStream_t st, cudaEvent_t a, cudaEvent_t b, double *us, char *why,
                       size_t len)
{
    float ms = 0;
    ARB_CUDA_TRY(cudaEventRecord(a, st), why, len);
    ARB_CUDA_TRY(cudaGraphLaunch(ex, st), why, len);
    ARB_CUDA_TRY(cudaEventRecord(b, st), why, len);
    // polled with a deadline: a kernel that waits on a disabled one would never finish
    const auto t0 = std::chrono::steady_clock::now();
    cudaError_t q;
    while ((q = cudaEventQuery(b)) == cudaErrorNotReady) {
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(kReplayDeadlineS))
            ARB_RAISE(ARB_ERR_SYSTEM, why, len,
                      "gpu graph profile: a replay did not finish in %d s (a kernel waiting on a disabled one?)",
                      kReplayDeadlineS);
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    ARB_CUDA_TRY(q, why, len);
    ARB_CUDA_TRY(cudaEventElapsedTime(&ms, a, b), why, len);
    *us = (double)ms * 1e3;
    return ARB_OK;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? -1 : v[v.size() / 2];
}

// Replays: variant 0 the whole step, variant 1 + k the step without kind k (when measured).
arb_status_t time_variants(cudaGraphExec_t ex, const arb_gpu_prof_graph &pg, const bool *measure, int reps,
                           cudaStream_t st, double us[ARB_GPU_PROF_KINDS], double *step_us, char *why, size_t len)
{
    cudaEvent_t a = nullptr, b = nullptr;
    std::vector<double> t[1 + ARB_GPU_PROF_KINDS];
    arb_status_t rs = ARB_OK;
    double x = 0;
    ARB_CUDA_GOTO(rs, cudaEventCreate(&a), out, why, len);
    ARB_CUDA_GOTO(rs, cudaEventCreate(&b), out, why, len);
    for (int w = 0; w < 2; w++) // warm-up: first-launch upload of the executable graph
        ARB_TRY_GOTO(rs, replay_us(ex, st, a, b, &x, why, len), out);
    for (int r = 0; r < reps; r++)
        for (int v = 0; v <= ARB_GPU_PROF_KINDS; v++) {
            if (v > 0 && !measure[v - 1])
                continue;
            if (v > 0)
                ARB_TRY_GOTO(rs, set_enabled(ex, pg.nodes[v - 1], 0, why, len), out);
            arb_status_t ts = replay_us(ex, st, a, b, &x, why, len);
            if (v > 0)
                ARB_TRY_GOTO(rs, set_enabled(ex, pg.nodes[v - 1], 1, why, len), out);
            ARB_TRY_GOTO(rs, ts, out);
            t[v].push_back(x);
        }
    *step_us = median(t[0]);
    for (int k = 0; k < ARB_GPU_PROF_KINDS; k++)
        us[k] = measure[k] ? *step_us - median(t[1 + k]) : NAN;
out:
    if (a)
        cudaEventDestroy(a);
    if (b)
        cudaEventDestroy(b);
    return rs;
}

} // namespace

extern "C" arb_status_t arb_gpu_model_profile_graph(arb_gpu_model_t *m, unsigned T, int reps, unsigned keep_mask,
                                                    void *stream, double us[ARB_GPU_PROF_KINDS], double *step_us,
                                                    char *why, size_t why_len)
{
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    for (int k = 0; k < ARB_GPU_PROF_KINDS; k++)
        us[k] = NAN;
    *step_us = NAN;
    if (reps < 1)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "gpu graph profile: reps %d, need at least 1", reps);
    if (m->persist)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len,
                  "gpu graph profile: the per-kernel times are of the launches form (a persistent launch runs several kinds)");
    arb_gpu_prof_graph pg;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t ex = nullptr;
    arb_status_t rs = ARB_OK;
    bool measure[ARB_GPU_PROF_KINDS];
    ARB_CUDA_TRY(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), why, why_len);
    m->prof_graph = &pg;
    rs = arb_gpu_model_step(m, T, stream, why, why_len);
    m->prof_graph = nullptr;
    cudaError_t ce = cudaStreamEndCapture(st, &graph);
    if (rs != ARB_OK)
        goto out;
    ARB_CUDA_GOTO(rs, ce, out, why, why_len);
    if (pg.err != cudaSuccess)
        ARB_RAISE_GOTO(rs, ARB_CUDA_STATUS_(pg.err), out, why, why_len,
                       "gpu graph profile: reading the captured nodes: %s", cudaGetErrorString(pg.err));
    ARB_CUDA_GOTO(rs, cudaGraphInstantiate(&ex, graph, 0), out, why, why_len);
    // a kind is measured when it has nodes, all of which can be disabled, and is not kept
    for (int k = 0; k < ARB_GPU_PROF_KINDS; k++) {
        measure[k] = !pg.nodes[k].empty() && pg.other[k].empty() && !(keep_mask & (1u << k));
        if (!measure[k])
            continue;
        char pwhy[256];
        // a node the driver refuses to disable leaves its kind unmeasured, not the profile failed
        arb_status_t ps = set_enabled(ex, pg.nodes[k], 0, pwhy, sizeof pwhy);
        arb_status_t pe = set_enabled(ex, pg.nodes[k], 1, pwhy, sizeof pwhy);
        if (pe != ARB_OK)
            ARB_RAISE_GOTO(rs, pe, out, why, why_len, "gpu graph profile: re-enabling %s: %s", arb_gpu_prof_name(k), pwhy);
        measure[k] = ps == ARB_OK;
        (void)cudaGetLastError();
    }
    rs = time_variants(ex, pg, measure, reps, st, us, step_us, why, why_len);
out:
    if (ex)
        cudaGraphExecDestroy(ex);
    if (graph)
        cudaGraphDestroy(graph);
    return rs;
}
