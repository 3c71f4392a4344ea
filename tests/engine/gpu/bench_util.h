// SPDX-License-Identifier: MIT
// What the one-GPU benches written in CUDA share (engine_chain_bench, engine_stream_bench): a CUDA
// call that must succeed, an integer option in a range, no operands, the no-GPU exit (77), the
// device's properties and versions, a graph's launches timed, and --out written
// by the project's output rule (src/base/outfile.h: an existing file refused unless --force,
// written whole through a temporary). Each bench sets bench::name to its own first.
#ifndef ARB_TESTS_ENGINE_GPU_BENCH_UTIL_H
#define ARB_TESTS_ENGINE_GPU_BENCH_UTIL_H

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <string>
#include <vector>

extern "C" {
#include "base/outfile.h"
}

namespace bench {

inline const char *name = "bench"; // the program's name in its messages

// A CUDA call that must succeed: else its text and error, exit 1.
#define BENCH_CK(x)                                                                                                    \
    do {                                                                                                               \
        const cudaError_t e_ = (x);                                                                                    \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s: %s: %s\n", bench::name, #x, cudaGetErrorString(e_));                                  \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

// --opt's value as an integer in lo .. hi; else a message naming it, exit 2.
inline long parse(const char *opt, const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    const long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "%s: --%s '%s': expected an integer in %ld .. %ld\n", name, opt, v, lo, hi);
        exit(2);
    }
    return x;
}

// After getopt: an operand left over is refused, exit 2.
inline void no_operands(int optind_, int argc, char **argv)
{
    if (optind_ < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", name, argv[optind_]);
        exit(2);
    }
}

// Device 0's properties and the driver's and runtime's versions.
struct device {
    cudaDeviceProp prop;
    int driver = 0, runtime = 0;
};
inline device device_info()
{
    device d;
    BENCH_CK(cudaGetDeviceProperties(&d.prop, 0));
    BENCH_CK(cudaDriverGetVersion(&d.driver));
    BENCH_CK(cudaRuntimeGetVersion(&d.runtime));
    return d;
}

// ge launched `launches` times back to back, timed by events, seven times: each time in us over
// `per` (what one time is of: launches x kernels a graph, say), sorted (median t[3]).
inline std::vector<float> time_graph(cudaGraphExec_t ge, cudaStream_t st, int launches, double per)
{
    cudaEvent_t a, b;
    BENCH_CK(cudaEventCreate(&a));
    BENCH_CK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int r = 0; r < 7; r++) {
        BENCH_CK(cudaEventRecord(a, st));
        for (int i = 0; i < launches; i++)
            BENCH_CK(cudaGraphLaunch(ge, st));
        BENCH_CK(cudaEventRecord(b, st));
        BENCH_CK(cudaEventSynchronize(b));
        float ms;
        BENCH_CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back((float)(ms * 1e3 / per));
    }
    std::sort(t.begin(), t.end());
    BENCH_CK(cudaEventDestroy(a));
    BENCH_CK(cudaEventDestroy(b));
    return t;
}

// 0 where --out may be written (none given, a new path, or --force); else the reason, 2.
inline int check_out(const char *out, bool force)
{
    char err[512];
    if (out &&
        arb_out_check("--out", out, force ? ARB_OUT_FORCE : ARB_OUT_NEW, "--force", nullptr, 0, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", name, err);
        return 2;
    }
    return 0;
}

// 0 with a CUDA device; else what was found, 77 (the suite's skip).
inline int device_or_skip()
{
    int ndev = 0;
    const cudaError_t de = cudaGetDeviceCount(&ndev);
    if (de != cudaSuccess || ndev == 0) {
        fprintf(stderr, "%s: no CUDA device (%s): nothing to measure\n", name,
                de != cudaSuccess ? cudaGetErrorString(de) : "none found");
        return 77;
    }
    return 0;
}

// The start of a bench's main, after its options: --out checked, a device found (0), else the
// exit status (2: --out refused; 77: no device).
inline int start(const char *out, bool force)
{
    if (const int bad = check_out(out, force))
        return bad;
    return device_or_skip();
}

// csv into --out (nothing without one): 0, or the reason and 1.
inline int write_out(const char *out, const std::string &csv)
{
    if (!out)
        return 0;
    char err[512];
    arb_outfile_t of;
    FILE *f = arb_outfile_open(&of, "--out", out, err, sizeof err);
    if (f && fputs(csv.c_str(), f) < 0) {
        arb_outfile_discard(&of);
        snprintf(err, sizeof err, "--out '%s': cannot write (%s)", out, strerror(errno));
        f = nullptr;
    }
    if (!f || arb_outfile_commit(&of, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", name, err);
        return 1;
    }
    return 0;
}

} // namespace bench

#endif
