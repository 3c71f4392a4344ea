// SPDX-License-Identifier: MIT
// Where a replayed step's time goes, per kind of launch (gpu_model.h,
// arb_gpu_model_profile_graph). The step is captured once; while it is captured, every
// launch's mark (gpu_step.cu) files the graph nodes created since the previous mark under
// that launch's kind. The instantiated graph is then replayed whole and, for each kind,
// with that kind's nodes disabled (cudaGraphNodeSetEnabled: a disabled node acts as an
// empty node, so every dependency stays), the variants interleaved replay by replay. A
// kind's time is median(whole) - median(whole without it): what it adds to a replayed step,
// its launch latency and any wait it causes included.
//
// arb_gpu_model_profile_chain replays windows of the same capture instead (chain_plan.h):
// each window a clone of the captured graph with the nodes outside it destroyed, so a window
// ends when its last kernel does, and window(j) - window(j - 1) is mark j's segment of the
// chain. The segments of a layer add up to what the layer adds to the step.
#define OMPI_SKIP_MPICXX 1 // instance.h includes mpi.h: the C API only
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstring>
#include <thread>
#include <unordered_set>
#include <vector>

#include <cuda_runtime.h>

#include "arbench/status.h"
#include "gpu/chain_plan.h"
#include "gpu/gpu_layout.h"

struct arb_gpu_prof_graph {
    std::unordered_set<cudaGraphNode_t> seen;
    std::vector<cudaGraphNode_t> nodes[ARB_GPU_PROF_KINDS]; // by kind, in capture order
    std::vector<int> other[ARB_GPU_PROF_KINDS];             // node types that cannot be disabled
    std::vector<std::vector<cudaGraphNode_t>> marks;        // every node, by the mark that filed it, in capture order
    std::vector<int> mark_kind;                             // each mark's kind
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
    std::vector<cudaGraphNode_t> fresh;
    for (size_t i = 0; e == cudaSuccess && i < n; i++) {
        if (!pg->seen.insert(all[i]).second)
            continue;
        fresh.push_back(all[i]);
        cudaGraphNodeType t;
        e = cudaGraphNodeGetType(all[i], &t);
        if (e != cudaSuccess || t == cudaGraphNodeTypeEmpty)
            continue;
        if (t == cudaGraphNodeTypeKernel || t == cudaGraphNodeTypeMemset || t == cudaGraphNodeTypeMemcpy)
            pg->nodes[kind].push_back(all[i]);
        else
            pg->other[kind].push_back((int)t);
    }
    pg->marks.push_back(std::move(fresh));
    pg->mark_kind.push_back(kind);
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
                      "gpu profile: a replay did not finish in %d s (a kernel waiting on a disabled one?)",
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

// Both profiles' outputs not measured, then their arguments checked.
arb_status_t start(const arb_gpu_model_t *m, int reps, const char *what, double us[ARB_GPU_PROF_KINDS],
                   double *step_us, char *why, size_t len)
{
    for (int k = 0; k < ARB_GPU_PROF_KINDS; k++)
        us[k] = NAN;
    *step_us = NAN;
    if (reps < 1)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "gpu %s profile: reps %d, need at least 1", what, reps);
    if (m->persist)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "gpu %s profile: the per-kernel times are of the launches form (a persistent launch runs several kinds)",
                  what);
    return ARB_OK;
}

// One step of T tokens captured, its nodes filed by mark (and by kind) in pg.
arb_status_t capture(arb_gpu_model_t *m, unsigned T, cudaStream_t st, arb_gpu_prof_graph &pg, cudaGraph_t *graph,
                     char *why, size_t len)
{
    ARB_CUDA_TRY(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), why, len);
    m->prof_graph = &pg;
    arb_status_t rs = arb_gpu_model_step(m, T, st, why, len);
    m->prof_graph = nullptr;
    cudaError_t ce = cudaStreamEndCapture(st, graph);
    if (rs != ARB_OK) { // the step's own reason; a failed launch also fails the capture: take that error back
        if (ce == cudaSuccess && *graph)
            cudaGraphDestroy(*graph), *graph = nullptr;
        if (ce != cudaSuccess || pg.err != cudaSuccess)
            (void)cudaGetLastError();
        return rs;
    }
    ARB_CUDA_TRY(ce, why, len);
    if (pg.err != cudaSuccess)
        ARB_RAISE(ARB_CUDA_STATUS_(pg.err), why, len, "gpu graph profile: reading the captured nodes: %s",
                  cudaGetErrorString(pg.err));
    return ARB_OK;
}

} // namespace

extern "C" arb_status_t arb_gpu_model_profile_graph(arb_gpu_model_t *m, unsigned T, int reps, unsigned keep_mask,
                                                    void *stream, double us[ARB_GPU_PROF_KINDS], double *step_us,
                                                    char *why, size_t why_len)
{
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    ARB_TRY(start(m, reps, "graph", us, step_us, why, why_len));
    arb_gpu_prof_graph pg;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t ex = nullptr;
    arb_status_t rs = ARB_OK;
    bool measure[ARB_GPU_PROF_KINDS];
    ARB_TRY_GOTO(rs, capture(m, T, st, pg, &graph, why, why_len), out);
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

namespace {

// Where a window starts from: res and h as the step leaves them before the window's first
// launch. Without it a window that starts mid-model would run on what the previous replay left
// (the residual growing replay by replay, the routing of T > 1 drifting with it).
struct restore {
    const void *res, *h; // the snapshot; nullptr: none (a window from the head: the embedding sets both)
    void *res_dst, *h_dst;
    size_t bytes;
};

// A clone of g without the nodes of marks outside [first, last], instantiated; with r.res, two
// copies of the snapshot into res and h before every root of the window.
arb_status_t window_exec(cudaGraph_t g, const arb_gpu_prof_graph &pg, const arb_chain_var_t &v, const restore &r,
                         cudaGraphExec_t *ex, char *why, size_t len)
{
    cudaGraph_t c = nullptr;
    arb_status_t rs = ARB_OK;
    ARB_CUDA_TRY(cudaGraphClone(&c, g), why, len);
    for (size_t j = 0; j < pg.marks.size(); j++) {
        if (j >= v.first && j <= v.last)
            continue;
        for (cudaGraphNode_t n : pg.marks[j]) {
            cudaGraphNode_t cn = nullptr;
            ARB_CUDA_GOTO(rs, cudaGraphNodeFindInClone(&cn, n, c), out, why, len);
            ARB_CUDA_GOTO(rs, cudaGraphDestroyNode(cn), out, why, len);
        }
    }
    if (r.res) {
        size_t nroots = 0;
        ARB_CUDA_GOTO(rs, cudaGraphGetRootNodes(c, nullptr, &nroots), out, why, len);
        std::vector<cudaGraphNode_t> roots(nroots);
        if (nroots)
            ARB_CUDA_GOTO(rs, cudaGraphGetRootNodes(c, roots.data(), &nroots), out, why, len);
        cudaGraphNode_t cp[2];
        ARB_CUDA_GOTO(rs, cudaGraphAddMemcpyNode1D(&cp[0], c, nullptr, 0, r.res_dst, r.res, r.bytes, cudaMemcpyDeviceToDevice),
                      out, why, len);
        ARB_CUDA_GOTO(rs, cudaGraphAddMemcpyNode1D(&cp[1], c, nullptr, 0, r.h_dst, r.h, r.bytes, cudaMemcpyDeviceToDevice),
                      out, why, len);
        for (cudaGraphNode_t root : roots)
            for (cudaGraphNode_t from : cp)
                ARB_CUDA_GOTO(rs, cudaGraphAddDependencies(c, &from, &root, nullptr, 1), out, why, len);
    }
    ARB_CUDA_GOTO(rs, cudaGraphInstantiate(ex, c, 0), out, why, len);
out:
    cudaGraphDestroy(c);
    return rs;
}

} // namespace

extern "C" arb_status_t arb_gpu_model_profile_chain(arb_gpu_model_t *m, unsigned T, int reps, void *stream,
                                                    double us[ARB_GPU_PROF_KINDS], double *step_us,
                                                    arb_gpu_chain_layers_t *layers, char *why, size_t why_len)
{
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    memset(layers, 0, sizeof *layers);
    ARB_TRY(start(m, reps, "chain", us, step_us, why, why_len));
    arb_gpu_prof_graph pg;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t whole = nullptr;
    std::vector<cudaGraphExec_t> ex;
    arb_chain_plan_t plan = {};
    cudaEvent_t a = nullptr, b = nullptr;
    arb_status_t rs = ARB_OK;
    std::vector<int> dense(m->s.Lz);
    std::vector<double> t, layer_us(ARB_CHAIN_MAX_MEASURED);
    std::vector<std::vector<double>> runs;
    std::vector<unsigned> firsts; // the windows' distinct starts past the head, each with a snapshot
    char *snap = nullptr;
    const size_t sbytes = (size_t)T * m->s.H * sizeof(arbk::bf16);
    double x = 0;
    for (unsigned l = 0; l < m->s.Lz; l++)
        dense[l] = m->layers[l].dense;
    ARB_TRY_GOTO(rs, capture(m, T, st, pg, &graph, why, why_len), out);
    ARB_TRY_GOTO(rs,
                 arb_chain_plan_build(pg.mark_kind.data(), (unsigned)pg.mark_kind.size(), dense.data(), m->s.Lz,
                                      ARB_GPU_PROF_EMBED, ARB_GPU_PROF_SITE_B, ARB_GPU_CHAIN_LEAD, &plan, why, why_len),
                 out);
    ARB_CUDA_GOTO(rs, cudaGraphInstantiate(&whole, graph, 0), out, why, why_len);
    ARB_CUDA_GOTO(rs, cudaEventCreate(&a), out, why, why_len);
    ARB_CUDA_GOTO(rs, cudaEventCreate(&b), out, why, why_len);
    for (unsigned v = 0; v < plan.nvar; v++)
        if (plan.var[v].first > 0 && std::find(firsts.begin(), firsts.end(), plan.var[v].first) == firsts.end())
            firsts.push_back(plan.var[v].first);
    if (!firsts.empty())
        ARB_CUDA_GOTO(rs, cudaMalloc(&snap, 2 * sbytes * firsts.size()), out, why, why_len);
    for (size_t i = 0; i < firsts.size(); i++) { // the step up to each start, then its res and h kept
        cudaGraphExec_t pre = nullptr;
        ARB_TRY_GOTO(rs, window_exec(graph, pg, arb_chain_var_t{0, firsts[i] - 1}, restore{}, &pre, why, why_len), out);
        arb_status_t ps = replay_us(pre, st, a, b, &x, why, why_len);
        cudaGraphExecDestroy(pre);
        ARB_TRY_GOTO(rs, ps, out);
        ARB_CUDA_GOTO(rs, cudaMemcpyAsync(snap + 2 * i * sbytes, m->res, sbytes, cudaMemcpyDeviceToDevice, st), out, why,
                      why_len);
        ARB_CUDA_GOTO(rs, cudaMemcpyAsync(snap + (2 * i + 1) * sbytes, m->h, sbytes, cudaMemcpyDeviceToDevice, st), out,
                      why, why_len);
    }
    ARB_CUDA_GOTO(rs, cudaStreamSynchronize(st), out, why, why_len);
    ex.assign(plan.nvar, nullptr);
    for (unsigned v = 0; v < plan.nvar; v++) {
        restore r = {};
        const size_t i = std::find(firsts.begin(), firsts.end(), plan.var[v].first) - firsts.begin();
        if (i < firsts.size())
            r = {snap + 2 * i * sbytes, snap + (2 * i + 1) * sbytes, m->res, m->h, sbytes};
        ARB_TRY_GOTO(rs, window_exec(graph, pg, plan.var[v], r, &ex[v], why, why_len), out);
    }
    runs.assign(plan.nvar + 1, {});
    for (int w = 0; w < 2; w++) // warm-up: each executable graph's first-launch upload
        for (unsigned v = 0; v <= plan.nvar; v++)
            ARB_TRY_GOTO(rs, replay_us(v ? ex[v - 1] : whole, st, a, b, &x, why, why_len), out);
    for (int r = 0; r < reps; r++)
        for (unsigned v = 0; v <= plan.nvar; v++) {
            ARB_TRY_GOTO(rs, replay_us(v ? ex[v - 1] : whole, st, a, b, &x, why, why_len), out);
            runs[v].push_back(x);
        }
    *step_us = median(runs[0]);
    for (unsigned v = 0; v < plan.nvar; v++)
        t.push_back(median(runs[v + 1]));
    arb_chain_plan_eval(&plan, t.data(), us, ARB_GPU_PROF_KINDS, layer_us.data());
    layers->n = plan.nmeasured;
    for (unsigned i = 0; i < plan.nmeasured; i++) {
        layers->layer[i] = plan.measured[i];
        layers->dense[i] = dense[plan.measured[i]];
        layers->us[i] = layer_us[i];
    }
out:
    // a replay past its deadline may still run: cudaFree would wait for it, so the snapshot is
    // left allocated then (the run reports the chain as not measured and goes on)
    const bool busy = rs != ARB_OK && b && cudaEventQuery(b) == cudaErrorNotReady;
    if (busy)
        (void)cudaGetLastError();
    if (a)
        cudaEventDestroy(a);
    if (b)
        cudaEventDestroy(b);
    for (cudaGraphExec_t e : ex)
        if (e)
            cudaGraphExecDestroy(e);
    if (whole)
        cudaGraphExecDestroy(whole);
    if (!busy)
        cudaFree(snap);
    if (graph)
        cudaGraphDestroy(graph);
    arb_chain_plan_free(&plan);
    return rs;
}
