// SPDX-License-Identifier: MIT
// Not a test: what one dependent-kernel boundary of a CUDA graph costs on this GPU, by how
// the dependent kernel waits for its predecessor (issue 22), and whether a persistent stage
// can stream its weights: the modes and what each step does are in engine_chain_modes.cuh;
// this file runs them (a CUDA graph a mode), times them, checks them and writes the rows.
// --weights-kb takes one size or a list, stage k taking the list's entry k mod its length (a
// layer's launches: the engine's per-kernel bytes over G blocks, docs/engine.md).
// After the timed replays the last activation is compared with the same recurrence on the
// host; a mismatch fails the run (exit 1), except for racy, where it is the expected outcome
// and is reported. A counter poll past 2 s sets an error word; the run then fails.
// Usage: engine_chain_bench [--kernels K] [--blocks G] [--weights-kb W[,W...]] [--sleep-ns N]
//                           [--stream-depth D] [--chunk-kb C] [--stream-producer T]
//                           [--arrive fence|release|relaxed] [--poll acquire|relaxed] [--replays R]
//                           [--out FILE.csv [--force]]
// --arrive: how a persistent stage's counter is added to (p-counter, p-l2, p-ahead, p-stream):
// thread 0's __threadfence() then atomicAdd (fence, the default, as persist.cu), one
// red.release.gpu (release) after the block's barrier, or red.relaxed.gpu (relaxed); --poll:
// how the counter is polled, ld.acquire.gpu (the default) or ld.relaxed.gpu (relaxed). The two
// relaxed forms order nothing: they are measurements of what the ordering costs (the host check
// still runs), not synchronizations.
// Rows: schema chain-bench-5 (-4 had no poll column, and at d199eae no stream_producer or arrive
// column either: the header row names them; -3 had one weights_kb and no chunk_kb; -2 no
// stream_depth either; -1, in results/engine-h200/trigger-first-ab/, no git_rev). --out follows the project's output rule
// (src/base/outfile.h: an existing file is refused unless --force, written whole through a
// temporary). No GPU: says so, exit 77.
#include <algorithm>
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
#include "engine_chain_modes.cuh"

namespace {

#define CK BENCH_CK
using bench::parse;

// --weights-kb: one size or a comma-separated list of at most 64, each 0 .. 1024 KB.
std::vector<long> parse_list(const char *opt, const char *v)
{
    std::vector<long> out;
    std::string s(v);
    for (size_t a = 0;;) {
        const size_t b = s.find(',', a);
        const std::string item = s.substr(a, b == std::string::npos ? std::string::npos : b - a);
        if (item.empty() || out.size() == 64) {
            fprintf(stderr, "engine_chain_bench: --%s '%s': expected 1 to 64 comma-separated integers in 0 .. 1024\n",
                    opt, v);
            exit(2);
        }
        out.push_back(parse(opt, item.c_str(), 0, 1024));
        if (b == std::string::npos)
            return out;
        a = b + 1;
    }
}

// The bench's settings, from its options (bad ones: a message naming the option, exit 2).
struct settings {
    int nk = 120, blocks = 264, sleep_ns = 0, replays = 20, depth = 3;
    long chunk_kb = 0, producer = 32;
    int arrive = kArriveFence;
    bool relaxed_poll = false;
    std::vector<long> wkbs = {16};
    const char *out = nullptr;
    bool force = false;
};

settings parse_args(int argc, char **argv)
{
    settings o;
    static const option opts[] = {{"force", no_argument, nullptr, 'f'},
                                  {"kernels", required_argument, nullptr, 'k'},
                                  {"blocks", required_argument, nullptr, 'g'},
                                  {"weights-kb", required_argument, nullptr, 'w'},
                                  {"sleep-ns", required_argument, nullptr, 's'},
                                  {"replays", required_argument, nullptr, 'r'},
                                  {"out", required_argument, nullptr, 'o'},
                                  {"stream-depth", required_argument, nullptr, 'd'},
                                  {"chunk-kb", required_argument, nullptr, 'c'},
                                  {"stream-producer", required_argument, nullptr, 'p'},
                                  {"arrive", required_argument, nullptr, 'a'},
                                  {"poll", required_argument, nullptr, 'P'},
                                  {nullptr, 0, nullptr, 0}};
    for (int c; (c = getopt_long(argc, argv, "", opts, nullptr)) != -1;) {
        switch (c) {
        case 'k': o.nk = (int)parse("kernels", optarg, 3, 4096); break;
        case 'g': o.blocks = (int)parse("blocks", optarg, 1, 65536); break;
        case 'w': o.wkbs = parse_list("weights-kb", optarg); break;
        case 'c': o.chunk_kb = parse("chunk-kb", optarg, 0, 1024); break;
        case 'p': o.producer = parse("stream-producer", optarg, 0, kThreads - 1); break;
        case 'a':
            o.arrive = !strcmp(optarg, "fence")     ? kArriveFence
                       : !strcmp(optarg, "release") ? kArriveRelease
                       : !strcmp(optarg, "relaxed") ? kArriveRelaxed
                                                    : -1;
            if (o.arrive < 0) {
                fprintf(stderr, "engine_chain_bench: --arrive '%s': expected fence, release or relaxed\n", optarg);
                exit(2);
            }
            break;
        case 'P':
            if (strcmp(optarg, "acquire") && strcmp(optarg, "relaxed")) {
                fprintf(stderr, "engine_chain_bench: --poll '%s': expected acquire or relaxed\n", optarg);
                exit(2);
            }
            o.relaxed_poll = !strcmp(optarg, "relaxed");
            break;
        case 's': o.sleep_ns = (int)parse("sleep-ns", optarg, 0, 100000); break;
        case 'r': o.replays = (int)parse("replays", optarg, 1, 100000); break;
        case 'd': o.depth = (int)parse("stream-depth", optarg, 1, kMaxStreamDepth); break;
        case 'o': o.out = optarg; break;
        case 'f': o.force = true; break;
        default:
            fprintf(stderr,
                    "usage: engine_chain_bench [--kernels K] [--blocks G] [--weights-kb W[,W...]] [--sleep-ns N] "
                    "[--stream-depth D] [--chunk-kb C] [--stream-producer T] [--arrive fence|release|relaxed] "
                    "[--poll acquire|relaxed] [--replays R] [--out FILE.csv [--force]]\n");
            exit(2);
        }
    }
    bench::no_operands(optind, argc, argv);
    return o;
}

} // namespace

int main(int argc, char **argv)
{
    bench::name = "engine_chain_bench";
    const settings conf = parse_args(argc, argv);
    if (const int rc = bench::start(conf.out, conf.force))
        return rc;
    const bench::device dev = bench::device_info();
    const cudaDeviceProp &prop = dev.prop;
    const int drv = dev.driver, rt = dev.runtime;
    // stage k: its weights' place and size (uint4 a block), the list's entry k mod its length
    std::vector<stage_w> stg(conf.nk);
    size_t wtot = 0, maxwv = 0;
    double wkb_mean = 0;
    for (int k = 0; k < conf.nk; k++) {
        stg[k].base = wtot, stg[k].wvec = (size_t)conf.wkbs[k % conf.wkbs.size()] * 1024 / 16;
        wtot += (size_t)conf.blocks * stg[k].wvec, maxwv = std::max(maxwv, (size_t)stg[k].wvec);
        wkb_mean += (double)conf.wkbs[k % conf.wkbs.size()] / conf.nk;
    }
    std::string wkb_text; // the list as given, '/'-separated in the rows and the header
    for (size_t i = 0; i < conf.wkbs.size(); i++)
        wkb_text += (i ? "/" : "") + std::to_string(conf.wkbs[i]);
    // p-stream: a ring slot is a chunk, or (--chunk-kb 0) the largest stage
    const unsigned long long slot = conf.chunk_kb ? (unsigned long long)conf.chunk_kb * 1024 / 16 : maxwv;
    stage_w *dstg = nullptr;
    CK(cudaMalloc(&dstg, conf.nk * sizeof(stage_w)));
    CK(cudaMemcpy(dstg, stg.data(), conf.nk * sizeof(stage_w), cudaMemcpyHostToDevice));
    uint4 *w = nullptr;
    unsigned *act = nullptr, *ctr = nullptr;
    int *dev_err = nullptr;
    CK(cudaMalloc(&w, wtot * 16 + 16));
    CK(cudaMemset(w, 1, wtot * 16 + 16));
    CK(cudaMalloc(&act, (size_t)(conf.nk + 1) * kAct * 4));
    const size_t sync_words =
        std::max((size_t)2 * conf.nk, (size_t)conf.nk * conf.blocks); // p-flags: a word per stage and block
    CK(cudaMalloc(&ctr, sync_words * 4));
    CK(cudaMalloc(&dev_err, 4));
    std::vector<unsigned> h0(kAct), ref(kAct), got(kAct);
    for (int i = 0; i < kAct; i++)
        h0[i] = ref[i] = (unsigned)i * 2654435761u;
    for (int k = 0; k < conf.nk; k++) {
        std::vector<unsigned> nx(kAct);
        for (int i = 0; i < kAct; i++)
            nx[i] = ref[i] + ref[(i + 1) % kAct] + 1u;
        ref.swap(nx);
    }
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    std::string csv =
        "schema,git_rev,host,gpu,sms,driver,runtime,mode,kernels,blocks,weights_kb,sleep_ns,stream_depth,"
        "chunk_kb,stream_producer,arrive,poll,replays,us_per_kernel_median,us_per_kernel_min,us_per_kernel_max,weights_floor_us_at_4.6TBps,"
        "check\n";
    void (*const kern[])(const uint4 *, size_t, const unsigned *, unsigned *, unsigned *, int *, int, int, unsigned,
                         int, int) = {link<PLAIN>, link<PDL>, link<PDL_LATE>, link<COUNTER>, link<FLAG>, link<RACY>};
    static_assert(sizeof kern / sizeof *kern == RACY + 1, "a kernel for every launch mode");
    // in mode order, one for each persistent mode (a short list would leave a null kernel and
    // shift every mode after the gap onto its neighbour's kernel: the static_assert)
    void (*const pkern[])(const uint4 *, const stage_w *, unsigned *, unsigned *, int *, int, int, int, int,
                          unsigned long long, unsigned, int,
                          bool) = {stages<P_COUNTER>, stages<P_L2>,   stages<P_AHEAD>, stages<P_FLAG>,
                                   stages<P_FLAGS>,   stages<P_RACY>, stages<P_STREAM>};
    static_assert(sizeof pkern / sizeof *pkern == MODES - P_COUNTER, "a kernel for every persistent mode");
    const double floor_us = conf.blocks * wkb_mean * 1024 / 4.6e6; // a stage's mean
    // one CSV row: the mode's us a kernel or stage (median, min, max; empty when it did not run), its check
    auto row = [&](int mode, const char *times, const char *check) {
        char line[1024];
        snprintf(
            line, sizeof line, "chain-bench-5,%s,%s,%s,%d,%d,%d,%s,%d,%d,%s,%d,%d,%ld,%ld,%s,%s,%d,%s,%.4f,%s\n",
            arb_git_rev(), host, prop.name, prop.multiProcessorCount, drv, rt, kModeName[mode], conf.nk, conf.blocks,
            wkb_text.c_str(), conf.sleep_ns, mode == P_STREAM ? conf.depth : 0, mode == P_STREAM ? conf.chunk_kb : 0,
            mode == P_STREAM ? conf.producer : 0,
            mode == P_COUNTER || mode == P_AHEAD || mode == P_L2 || mode == P_STREAM ? kArriveName[conf.arrive] : "",
            mode >= P_COUNTER && mode != P_FLAGS && mode != P_RACY ? (conf.relaxed_poll ? "relaxed" : "acquire") : "",
            conf.replays, times, floor_us, check);
        csv += line;
    };
    int rc = 0;
    printf("# engine_chain_bench: %s, %d SMs, driver %d, runtime %d; %d kernels of %d blocks, %s KB of weights a "
           "block (%.2f MB a kernel on average), sleep %d ns, p-stream depth %d, chunk %s, producer thread %ld, %d "
           "replays x 7, the persistent counters' add %s, their poll %s\n",
           prop.name, prop.multiProcessorCount, drv, rt, conf.nk, conf.blocks, wkb_text.c_str(),
           conf.blocks * wkb_mean / 1024.0, conf.sleep_ns, conf.depth,
           conf.chunk_kb ? (std::to_string(conf.chunk_kb) + " KB").c_str() : "a stage", conf.producer, conf.replays,
           conf.arrive == kArriveRelease   ? "with release (no fence)"
           : conf.arrive == kArriveRelaxed ? "relaxed (not a synchronization)"
                                           : "after a fence",
           conf.relaxed_poll ? "relaxed (not a synchronization)" : "acquire");
    if (conf.wkbs.size() > 1 && conf.nk % conf.wkbs.size() == 0)
        printf("# the list is a period of %zu stages: a period's time is %zu x a stage's\n", conf.wkbs.size(),
               conf.wkbs.size());
    // p-stream's ring: depth slots in dynamic shared memory
    const size_t ring_bytes = (size_t)conf.depth * slot * 16;
    for (int mode = 0; mode < MODES; mode++) {
        const bool persistent = mode >= P_COUNTER;
        const size_t dyn = mode == P_STREAM ? ring_bytes : 0;
        if (persistent) { // every block must be resident, or a wait never ends
            int per_sm = 0;
            cudaFuncAttributes fa;
            CK(cudaFuncGetAttributes(&fa, pkern[mode - P_COUNTER]));
            if (dyn + fa.sharedSizeBytes > (size_t)prop.sharedMemPerBlockOptin) {
                printf("%-9s skipped: its ring of %zu bytes and %zu static are past the device's %zu a block\n",
                       kModeName[mode], dyn, (size_t)fa.sharedSizeBytes, (size_t)prop.sharedMemPerBlockOptin);
                row(mode, ",,", "not-resident");
                continue;
            }
            if (dyn) { // the ring's room, and as much of the SM's L1 as shared memory as the occupancy query assumes
                CK(cudaFuncSetAttribute(pkern[mode - P_COUNTER], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)dyn));
                CK(cudaFuncSetAttribute(pkern[mode - P_COUNTER], cudaFuncAttributePreferredSharedMemoryCarveout,
                                        cudaSharedmemCarveoutMaxShared));
            }
            CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pkern[mode - P_COUNTER], kThreads, dyn));
            const bool resident = (long)per_sm * prop.multiProcessorCount >= conf.blocks;
            if (!resident || (mode == P_AHEAD && maxwv > (size_t)kAheadVec * kThreads)) {
                if (!resident)
                    printf("%-9s skipped: %d blocks are not all resident (at most %d a SM x %d SMs)\n", kModeName[mode],
                           conf.blocks, per_sm, prop.multiProcessorCount);
                else
                    printf("%-9s skipped: %zu KB of weights a block do not fit its registers (at most %d KB)\n",
                           kModeName[mode], maxwv * 16 / 1024, kAheadVec * kThreads * 16 / 1024);
                row(mode, ",,", resident ? "too-large" : "not-resident");
                continue;
            }
        }
        CK(cudaMemcpy(act, h0.data(), kAct * 4, cudaMemcpyHostToDevice));
        CK(cudaMemset(act + kAct, 0, (size_t)conf.nk * kAct * 4));
        CK(cudaMemset(ctr, 0, sync_words * 4));
        CK(cudaMemset(dev_err, 0, 4));
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        if (persistent) { // the sync words cleared, then the one launch of nk stages
            CK(cudaMemsetAsync(ctr, 0, sync_words * 4, st));
            pkern[mode - P_COUNTER]<<<conf.blocks, kThreads, dyn, st>>>(
                w, dstg, act, ctr, dev_err, conf.nk, conf.sleep_ns, 0, conf.depth, slot, (unsigned)conf.producer,
                conf.arrive, conf.relaxed_poll);
            CK(cudaGetLastError());
        }
        for (int k = 0; k < conf.nk && !persistent; k++) {
            cudaLaunchConfig_t cfg = {};
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            at[0].val.programmaticStreamSerializationAllowed = 1;
            cfg.gridDim = dim3(conf.blocks), cfg.blockDim = dim3(kThreads), cfg.stream = st;
            cfg.attrs = at, cfg.numAttrs = mode == PLAIN ? 0 : 1;
            const uint4 *wk = w + stg[k].base;
            const unsigned *in = act + (size_t)k * kAct;
            unsigned *o = act + (size_t)(k + 1) * kAct;
            CK(cudaLaunchKernelEx(&cfg, kern[mode], wk, (size_t)stg[k].wvec, in, o, ctr, dev_err, k, conf.nk,
                                  (unsigned)conf.blocks, conf.sleep_ns, 0));
        }
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        for (int i = 0; i < 3; i++)
            CK(cudaGraphLaunch(ge, st));
        CK(cudaStreamSynchronize(st));
        const std::vector<float> t = bench::time_graph(ge, st, conf.replays, (double)conf.replays * conf.nk);
        int e = 0;
        CK(cudaMemcpy(&e, dev_err, 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(got.data(), act + (size_t)conf.nk * kAct, kAct * 4, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (int i = 0; i < kAct; i++)
            bad += got[i] != ref[i];
        const char *check = e ? "timeout" : bad ? "mismatch" : "ok";
        if ((e || bad) && !racy_mode(mode))
            rc = 1;
        printf("%-9s us a %s: median %7.3f  min %7.3f  max %7.3f  (weights alone at 4.6 TB/s: %.3f)  check %s%s\n",
               kModeName[mode], persistent ? "stage " : "kernel", t[3], t[0], t[6], floor_us, check,
               racy_mode(mode) ? (bad ? " (expected: no wait)" : " (the race did not show this time)") : "");
        if (e)
            fprintf(stderr, "engine_chain_bench: %s: a wait of %s %d%s passed 2 s\n", kModeName[mode],
                    e >= kErrStage ? "stage" : "kernel",
                    e >= kErrSlot    ? e - kErrSlot
                    : e >= kErrStage ? e - kErrStage
                                     : e,
                    e >= kErrSlot ? "'s weights (its slot's mbarrier)" : "");
        if (bad && !racy_mode(mode))
            fprintf(stderr, "engine_chain_bench: %s: %d of %d words differ from the host recurrence\n", kModeName[mode],
                    bad, kAct);
        char times[96];
        snprintf(times, sizeof times, "%.4f,%.4f,%.4f", t[3], t[0], t[6]);
        row(mode, times, check);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
        if (e) // a kernel may still be spinning: the device is not reusable for the next mode
            break;
    }
    if (bench::write_out(conf.out, csv))
        return 1;
    return rc;
}
