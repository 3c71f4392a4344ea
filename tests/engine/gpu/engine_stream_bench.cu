// SPDX-License-Identifier: MIT
// Not a test: how fast a grid of a few CTAs an SM streams a fixed number of bytes from HBM, by how
// its lanes load them (issue 22). On an H200 the MoE's 128 routed gate/up tiles read ~14.7 MB a
// decode layer in 9-14 us once the router has ended, about 1.2 TB/s, a quarter of the card
// (results/engine-h200/6162998-moe-early/). Each such tile reads its own contiguous rows, each
// warp seven 8-byte loads a lane a round. Is that the loads' width, their number in flight, or
// the CTAs an SM? This bench reads --kb KB the same way: CTA c its own contiguous share, its
// warps in rounds, each lane W bytes a load (8: one uint2, as the INT4 tiles' ld_stream2; 16: one
// uint4) U times a round, all U issued before any is used (ld.global.nc.L1::no_allocate), folded
// into a word so the loads stay live. It runs every (W, U) of W 8, 16 and U 2, 4, 7, 8, 16 at each
// grid of --ctas (default 128, SMs, 2 SMs and 4 SMs; 256 threads a CTA): rows `share`; and some of
// them software-pipelined, the next round's loads issued before a round is used: rows `pipe`.
// Each launch reads another copy of the bytes (enough copies to pass 3x the L2), so every launch
// streams from HBM; a CUDA graph of --replays independent launches (no PDL), timed 7 times: the
// median, min and max a launch, each with its ramp and tail (a kernel's time, not a chain's), and
// the median's GB/s, with the kernel's registers and the CTAs an SM can hold (a grid past that
// runs in waves). The same kernel at U 4, W 16 over 4 SMs' CTAs on 256 MB gives the card's
// streaming rate in the same run (the `rate` row).
// Usage: engine_stream_bench [--kb K] [--ctas N[,N...]] [--replays R] [--out FILE.csv [--force]]
// Rows: schema stream-bench-1. --out follows the project's output rule (src/base/outfile.h: an
// existing file is refused unless --force, written whole through a temporary). No GPU: says so,
// exit 77.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <getopt.h>
#include <string>
#include <unistd.h>
#include <vector>

extern "C" {
#include "base/meta.h"
}

#include "bench_util.h"

namespace {

#define CK BENCH_CK
using bench::parse;

constexpr int kThreads = 256, kWarps = kThreads / 32;

template <int W> struct word;
template <> struct word<8> {
    uint2 v;
    __device__ __forceinline__ void load(const void *p)
    {
        asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    }
    __device__ __forceinline__ uint32_t fold() const { return v.x ^ v.y; }
};
template <> struct word<16> {
    uint4 v;
    __device__ __forceinline__ void load(const void *p)
    {
        asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p));
    }
    __device__ __forceinline__ uint32_t fold() const { return v.x ^ v.y ^ v.z ^ v.w; }
};

// The last part round of a share: the lane's W-byte loads of warp `warp`'s part of a round at r,
// one at a time, up to hi; folded into x.
template <int W, int U> __device__ __forceinline__ uint32_t last_part(const uint8_t *__restrict__ src, size_t r,
                                                                      size_t hi, int warp, int lane, uint32_t x)
{
    const size_t end = r + ((size_t)(warp + 1) * U * 32) * W;
    for (size_t off = r + ((size_t)warp * U * 32 + lane) * W; off + W <= hi && off < end; off += 32 * W) {
        word<W> a;
        a.load(src + off);
        x ^= a.fold();
    }
    return x;
}

// CTA c reads bytes [c share, min((c + 1) share, bytes)) of src: in rounds of kWarps * U * 32 * W
// bytes, warp w's load u of a round at (w U + u) 32 W + lane W (each warp instruction 32 W
// contiguous bytes).
// __launch_bounds__(kThreads, 1): without the second argument ptxas (CUDA 13.0, sm_90) held these
// kernels to 32 registers by issuing each load's use before the next load, ~6 of 16 uint4 loads in
// flight; with it every U is in flight (its registers and CTAs an SM are in each row).
template <int W, int U> __global__ void __launch_bounds__(kThreads, 1)
    stream_share(const uint8_t *__restrict__ src, size_t bytes, size_t share, uint32_t *sink)
{
    const size_t lo = (size_t)blockIdx.x * share, hi = lo + share < bytes ? lo + share : bytes;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    constexpr size_t round = (size_t)kWarps * U * 32 * W;
    uint32_t x = 0;
    size_t r = lo;
#pragma unroll 1                          // one round at a time: U loads in flight, not the compiler's choice of rounds
    for (; r + round <= hi; r += round) { // whole rounds: U loads, no test between them
        word<W> a[U];
        const uint8_t *p = src + r + ((size_t)warp * U * 32 + lane) * W;
#pragma unroll
        for (int u = 0; u < U; u++)
            a[u].load(p + (size_t)u * 32 * W);
#pragma unroll
        for (int u = 0; u < U; u++)
            x ^= a[u].fold();
    }
    x = last_part<W, U>(src, r, hi, warp, lane, x);
    if (x == 0x9e3779b9u) // practically never; keeps the loads live
        sink[blockIdx.x] = x;
}

// The same rounds software-pipelined: round r + 1's U loads issued before round r's are used, so
// a lane has between U and 2 U loads in flight and none of its wait for a round's last load is
// spent with nothing in flight (two buffers, twice the registers). The routed gate/up's rounds
// are the plain form above (issue, use, issue).
template <int W, int U> __global__ void __launch_bounds__(kThreads, 1)
    stream_pipe(const uint8_t *__restrict__ src, size_t bytes, size_t share, uint32_t *sink)
{
    const size_t lo = (size_t)blockIdx.x * share, hi = lo + share < bytes ? lo + share : bytes;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    constexpr size_t round = (size_t)kWarps * U * 32 * W;
    const size_t mine = ((size_t)warp * U * 32 + lane) * W;
    const auto load = [&](word<W>(&a)[U], size_t at) {
#pragma unroll
        for (int u = 0; u < U; u++)
            a[u].load(src + at + mine + (size_t)u * 32 * W);
    };
    const auto fold = [](const word<W>(&a)[U], uint32_t x) {
#pragma unroll
        for (int u = 0; u < U; u++)
            x ^= a[u].fold();
        return x;
    };
    uint32_t x = 0;
    size_t r = lo;
    word<W> a[U], b[U];
    // cur holds round r: the next round's loads into nxt first (while there is a whole one), then cur
    // used; false once no next round was issued
    const auto step = [&](const word<W>(&cur)[U], word<W>(&nxt)[U]) {
        const size_t r1 = r + round;
        const bool more = r1 + round <= hi;
        if (more)
            load(nxt, r1);
        x = fold(cur, x);
        r = r1;
        return more;
    };
    if (r + round <= hi) {
        load(a, r);
#pragma unroll 1
        while (step(a, b) && step(b, a)) {}
    }
    x = last_part<W, U>(src, r, hi, warp, lane, x);
    if (x == 0x9e3779b9u)
        sink[blockIdx.x] = x;
}

using kernel_t = void (*)(const uint8_t *, size_t, size_t, uint32_t *);
struct variant {
    int w, u;
    kernel_t k;
    const char *kind; // share: rounds issued then used; pipe: the next round issued first
};
const variant kVariants[] = {
    {8, 2, stream_share<8, 2>, "share"},   {8, 4, stream_share<8, 4>, "share"},
    {8, 7, stream_share<8, 7>, "share"},   {8, 8, stream_share<8, 8>, "share"},
    {8, 16, stream_share<8, 16>, "share"}, {16, 2, stream_share<16, 2>, "share"},
    {16, 4, stream_share<16, 4>, "share"}, {16, 7, stream_share<16, 7>, "share"},
    {16, 8, stream_share<16, 8>, "share"}, {16, 16, stream_share<16, 16>, "share"},
    {8, 4, stream_pipe<8, 4>, "pipe"},     {8, 7, stream_pipe<8, 7>, "pipe"},
    {16, 4, stream_pipe<16, 4>, "pipe"},   {16, 7, stream_pipe<16, 7>, "pipe"},
    {16, 8, stream_pipe<16, 8>, "pipe"},
};

struct settings {
    long kb = 14336;        // Kimi-K2's routed gate/up at T = 1, TP = 8: 8 experts x 2 x 256 rows x 7168 / 2 bytes
    std::vector<long> ctas; // empty: 128, SMs, 2 SMs, 4 SMs
    int replays = 20;
    const char *out = nullptr;
    bool force = false;
};

settings parse_args(int argc, char **argv)
{
    settings o;
    static const option opts[] = {
        {"kb", required_argument, nullptr, 'k'},      {"ctas", required_argument, nullptr, 'c'},
        {"replays", required_argument, nullptr, 'r'}, {"out", required_argument, nullptr, 'o'},
        {"force", no_argument, nullptr, 'f'},         {nullptr, 0, nullptr, 0}};
    for (int c; (c = getopt_long(argc, argv, "", opts, nullptr)) != -1;) {
        switch (c) {
        case 'k': o.kb = parse("kb", optarg, 1, 1 << 20); break;
        case 'c': {
            std::string s(optarg);
            for (size_t a = 0;;) {
                const size_t b = s.find(',', a);
                const std::string item = s.substr(a, b == std::string::npos ? std::string::npos : b - a);
                if (item.empty() || o.ctas.size() == 16) {
                    fprintf(stderr, "engine_stream_bench: --ctas '%s': expected 1 to 16 comma-separated integers\n",
                            optarg);
                    exit(2);
                }
                o.ctas.push_back(parse("ctas", item.c_str(), 1, 65536));
                if (b == std::string::npos)
                    break;
                a = b + 1;
            }
            break;
        }
        case 'r': o.replays = (int)parse("replays", optarg, 1, 10000); break;
        case 'o': o.out = optarg; break;
        case 'f': o.force = true; break;
        default:
            fprintf(stderr, "usage: engine_stream_bench [--kb K] [--ctas N[,N...]] [--replays R] [--out FILE.csv "
                            "[--force]]\n");
            exit(2);
        }
    }
    bench::no_operands(optind, argc, argv);
    return o;
}

// Median, min and max us a launch of k over `ctas` CTAs, each launch on the next of `copies`
// copies of `bytes` (a graph of `replays` launches, timed 7 times).
void time_it(kernel_t k, const uint8_t *buf, size_t bytes, size_t stride, int copies, int ctas, int replays,
             uint32_t *sink, cudaStream_t st, float out[3])
{
    const size_t share = ((bytes + ctas - 1) / ctas + 255) / 256 * 256;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < replays; i++)
        k<<<ctas, kThreads, 0, st>>>(buf + (size_t)(i % copies) * stride, bytes, share, sink);
    CK(cudaGetLastError());
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, st)); // warm-up
    const std::vector<float> t = bench::time_graph(ge, st, 1, replays);
    out[0] = t[3], out[1] = t[0], out[2] = t[6];
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
}

} // namespace

int main(int argc, char **argv)
{
    bench::name = "engine_stream_bench";
    settings conf = parse_args(argc, argv);
    if (const int rc = bench::start(conf.out, conf.force))
        return rc;
    const bench::device dev = bench::device_info();
    const cudaDeviceProp &prop = dev.prop;
    const int drv = dev.driver, rt = dev.runtime;
    const int sms = prop.multiProcessorCount;
    if (conf.ctas.empty())
        conf.ctas = {128, sms, 2 * sms, 4 * sms};
    const size_t bytes = (size_t)conf.kb * 1024, rate_bytes = (size_t)256 << 20;
    // the copies of --kb at a 4 KB stride, past 3x the L2; the rate row's two 256 MB copies in the same room
    const size_t stride = (bytes + 4095) / 4096 * 4096;
    const int copies = (int)std::max<size_t>(2, (3 * (size_t)prop.l2CacheSize + bytes - 1) / bytes);
    const int rate_copies = 2;
    const size_t room = std::max(stride * copies, rate_bytes * rate_copies);
    uint8_t *buf = nullptr;
    uint32_t *sink = nullptr;
    if (cudaMalloc(&buf, room) != cudaSuccess) {
        fprintf(stderr, "engine_stream_bench: no room for %zu bytes on the device\n", room);
        return 1;
    }
    CK(cudaMemset(buf, 1, room));
    CK(cudaMalloc(&sink, 65536 * 4));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    std::string csv = "schema,git_rev,host,gpu,sms,driver,runtime,row,bytes,copies,ctas,threads,width_bytes,"
                      "loads_a_round,registers,ctas_an_sm,replays,us_median,us_min,us_max,gbps_median\n";
    const auto row = [&](const char *kind, kernel_t k, size_t b, int cp, int ctas, int w, int u, const float t[3]) {
        cudaFuncAttributes fa;
        int per_sm = 0;
        CK(cudaFuncGetAttributes(&fa, k));
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, kThreads, 0));
        const double gbps = (double)b / (t[0] * 1e3);
        char line[2048];
        snprintf(line, sizeof line,
                 "stream-bench-1,%s,%s,%s,%d,%d,%d,%s,%zu,%d,%d,%d,%d,%d,%d,%d,%d,%.3f,%.3f,%.3f,%.1f\n", arb_git_rev(),
                 host, prop.name, sms, drv, rt, kind, b, cp, ctas, kThreads, w, u, fa.numRegs, per_sm, conf.replays,
                 t[0], t[1], t[2], gbps);
        csv += line;
        printf("%-6s %9zu B  %5d CTAs  %2d B x %2d a lane (%3d regs, %d CTAs an SM)  us %8.3f [%8.3f .. %8.3f]  "
               "%7.1f GB/s\n",
               kind, b, ctas, w, u, fa.numRegs, per_sm, t[0], t[1], t[2], gbps);
    };
    printf("# %s, %d SMs, L2 %d B; %zu B a launch over %d copies, %d launches a graph\n", prop.name, sms,
           prop.l2CacheSize, bytes, copies, conf.replays);
    float t[3];
    time_it(stream_share<16, 4>, buf, rate_bytes, rate_bytes, rate_copies, 4 * sms, conf.replays, sink, st, t);
    row("rate", stream_share<16, 4>, rate_bytes, rate_copies, 4 * sms, 16, 4, t);
    for (const long c : conf.ctas)
        for (const variant &v : kVariants) {
            time_it(v.k, buf, bytes, stride, copies, (int)c, conf.replays, sink, st, t);
            row(v.kind, v.k, bytes, copies, (int)c, v.w, v.u, t);
        }
    CK(cudaStreamSynchronize(st));
    return bench::write_out(conf.out, csv);
}
