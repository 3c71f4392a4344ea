// SPDX-License-Identifier: MIT
// Not a test: what one dependent-kernel boundary of a CUDA graph costs on this GPU, by how
// the dependent kernel waits for its predecessor (issue 22: the engine's 14 dependent
// launches a layer). A graph of K kernels, each of G blocks of 256 threads: a block loads
// its own W KB of weights (read before any wait, distinct per kernel and block, so K x G x W
// is past L2 for the defaults), then waits, then reads the whole 14 KB activation its
// predecessor wrote (a GEMV's input, 7168 bf16) and writes its slice of the next one:
//   out[i] = in[i] + in[(i + 1) mod n] + 1     (every slice reads another block's slice)
// Ways to wait, each captured into its own graph:
//   plain     no PDL attribute: the graph's full dependency between kernels
//   pdl       PDL: every block triggers its dependents first (before its weight loads, as
//             the engine's kernels do), then griddepcontrol.wait
//   pdl-late  PDL: griddepcontrol.wait, then the trigger (the order the engine's merge, the
//             call sites' residual + RMSNorm and noop had until this bench measured it)
//   counter   PDL trigger first; instead of griddepcontrol.wait, thread 0 polls the
//             predecessor's counter (ld.acquire.gpu) until it holds every block; a block
//             adds itself to its own counter after its writes (bar.sync, fence, atomicAdd);
//             kernel k resets kernel k - 2's counter (all of k - 1 has passed its wait on it)
//   flag      as counter, but the block that adds the last count (a ticket, which it resets)
//             sets the kernel's flag word (st.release.gpu), and the dependents poll the flag:
//             the polls and the atomics are on different words
//   racy      PDL trigger first, no wait at all: the launch cost alone (its check may fail: a
//             read before the write; in the shapes run so far it passed)
// and the same K steps as the K stages of one persistent launch (no launch between them: the
// boundary of engine/gpu/kernels/persist.cu's form), every block resident (the modes are
// skipped, row check "not-resident", when the occupancy cannot hold G blocks), the stage's
// weights loaded before its wait as above, the sync words cleared by a memset node before the
// kernel in the graph:
//   p-counter a counter a stage: a block adds itself after its writes (bar.sync, fence,
//             atomicAdd); thread 0 of every block polls the previous stage's (ld.acquire)
//   p-l2      as p-counter, but the stage's weights are only pulled toward L2 before the wait
//             and loaded after it (what persist.cu's cta_wait does before a stage)
//   p-ahead   as p-counter, with the weights of stage k + 1 loaded into registers before stage
//             k's wait (software-pipelined: they arrive during stage k's wait and work); up to
//             32 KB a block (skipped above: row check "too-large")
//   p-flag    the block that adds the last count sets the stage's flag (st.release); the
//             blocks poll the flag
//   p-flags   a flag word per block and stage, set by the block after its writes (bar.sync,
//             fence, st.release): no atomics; warp 0 of every block polls the previous stage's
//             G words, lane j the words j, j + 32, ... (ld.acquire)
//   p-racy    no sync at all: a stage's work alone (its check may fail, as racy's)
//   p-stream  as p-counter, but every block's weights stream into a ring of D shared-memory
//             slots (--stream-depth D, default 3) as one continuous sequence of chunks across
//             the stages: --chunk-kb C cuts each stage's weights into chunks of C KB (the last
//             one shorter), 0 (the default) one chunk a stage. A producer thread
//             (--stream-producer T, default 32: not thread 0, which also fences before the
//             counter's atomic; 2-3% faster on an H100, results/engine-h100/d199eae-stream/) issues a
//             bulk copy (cp.async.bulk, the TMA; SM90 and SM120) a chunk, completing on its
//             slot's mbarrier: chunks 0 .. D - 1 at the start, chunk q + D once every thread has
//             left chunk q, whatever stage either belongs to. Before stage k warp 0 waits on the
//             previous stage's counter (the block behind one barrier); then, chunk by chunk, the
//             producer waits on the slot's mbarrier (the block behind one barrier), and every
//             thread acquires the slot and reads the chunk from shared memory.
//             While stage k waits, the next D chunks are in flight or landed: with whole stages,
//             D = 2 looks one stage past the current one, as p-ahead does in registers, D >= 3
//             deeper; with chunks, the ring is D x C KB however large a stage is (the design
//             docs/notes.md asks a persistent form for: the bytes keep streaming across the
//             boundaries, a ring that covers one boundary's wait). The ring must fit with G
//             blocks resident (else skipped, row check "not-resident"); a block that gives up
//             first waits out the copies it issued (no block exits with a copy in flight)
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
#include <cerrno>
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
#include "base/outfile.h"
}

#include "engine_chain_sync.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kAct = 7168 / 4; // u32 words of the activation: 7168 bf16 = 14 KB

enum { PLAIN, PDL, PDL_LATE, COUNTER, FLAG, RACY, P_COUNTER, P_L2, P_AHEAD, P_FLAG, P_FLAGS, P_RACY, P_STREAM, MODES };
const char *const kModeName[MODES] = {"plain", "pdl",     "pdl-late", "counter", "flag",   "racy",    "p-counter",
                                      "p-l2",  "p-ahead", "p-flag",   "p-flags", "p-racy", "p-stream"};
constexpr int kArriveFence = 0, kArriveRelease = 1, kArriveRelaxed = 2; // --arrive
const char *const kArriveName[] = {"fence", "release", "relaxed"};
constexpr int kMaxStreamDepth = 8; // p-stream's ring slots (one mbarrier each)
constexpr int kAheadVec = 8;       // p-ahead: a thread's share of one stage's weights in registers (32 KB a block)
constexpr bool racy_mode(int m) { return m == RACY || m == P_RACY; }

// A block's own weights, read before any wait (a fold of them, stored only when fold != 0: never).
__device__ __forceinline__ uint4 block_weights(const uint4 *wb, size_t wvec)
{
    uint4 acc = make_uint4(0, 0, 0, 0);
    for (size_t i = threadIdx.x; i < wvec; i += kThreads) {
        const uint4 v = __ldg(wb + i);
        acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
    }
    return acc;
}

// The whole activation (the GEMV's read of its input), then this block's slice of the next.
__device__ __forceinline__ void block_step(const unsigned *in, unsigned *out, uint4 acc, int fold)
{
    unsigned s = 0;
    for (int i = threadIdx.x; i < kAct; i += kThreads)
        s += __ldcg(in + i);
    const int per = (kAct + gridDim.x - 1) / gridDim.x;
    for (int j = threadIdx.x; j < per; j += kThreads) {
        const int i = blockIdx.x * per + j;
        if (i < kAct)
            out[i] =
                __ldcg(in + i) + __ldcg(in + (i + 1) % kAct) + 1u + (fold ? s ^ acc.x ^ acc.y ^ acc.z ^ acc.w : 0u);
    }
}

template <int MODE> __global__ void __launch_bounds__(kThreads)
    link(const uint4 *w, size_t wvec, const unsigned *in, unsigned *out, unsigned *ctr, int *err, int k, int nk,
         unsigned prev_blocks, int sleep_ns, int fold)
{
    constexpr bool polls = MODE == COUNTER || MODE == FLAG;
    // ctr: a counter (COUNTER) or a ticket (FLAG) per kernel, then (FLAG) a flag per kernel
    unsigned *flag = ctr + nk;
    if (MODE != PLAIN && MODE != PDL_LATE)
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    const uint4 acc = block_weights(w + (size_t)blockIdx.x * wvec, wvec);
    if (MODE == PDL || MODE == PDL_LATE || (polls && k == 0))
        asm volatile("griddepcontrol.wait;" ::: "memory");
    if (MODE == PDL_LATE)
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    unsigned *word = MODE == FLAG ? flag : ctr; // what the dependents poll
    const unsigned want = MODE == FLAG ? 1u : prev_blocks;
    if (polls && k == 0 && blockIdx.x == 0 && threadIdx.x < 2)
        word[nk - 2 + threadIdx.x] = 0; // the previous replay's last two words (no kernel resets them)
    if (polls && k > 0) {
        if (threadIdx.x == 0) {
            poll_at_least<false>(word + k - 1, want, err, k, sleep_ns); // past the deadline: the error word says so
            if (blockIdx.x == 0 && k >= 2)
                word[k - 2] = 0;
        }
        __syncthreads();
    }
    block_step(in, out, acc, fold);
    if (polls) {
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            const unsigned before = atomicAdd(ctr + k, 1u);
            if (MODE == FLAG && before == gridDim.x - 1) { // the last block: every block's writes are before it
                ctr[k] = 0;
                __threadfence();
                asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag + k), "r"(1u) : "memory");
            }
        }
    }
}

// Stage k's wait in a persistent launch (MODE's sync words of stage k - 1); false once any
// block's wait passed the deadline, so that no block spins on a stage that will never complete.
template <int MODE> __device__ __forceinline__ bool stage_wait(const unsigned *sync, int *err, int k, int nk,
                                                               int sleep_ns, bool relaxed = false)
{
    __shared__ int give_up;
    const unsigned G = gridDim.x;
    if (threadIdx.x < 32) {
        bool ok = true;
        if (MODE == P_FLAGS) // lane j: the words j, j + 32, ... of stage k - 1
            for (unsigned j = threadIdx.x; j < G && ok; j += 32)
                ok = poll_at_least<true>(sync + (size_t)(k - 1) * G + j, 1u, err, kErrStage + k, sleep_ns);
        else if (threadIdx.x == 0) // the stage's counter (G counts) or its flag (1)
            ok = poll_at_least<true>(MODE == P_FLAG ? sync + nk + k - 1 : sync + k - 1, MODE == P_FLAG ? 1u : G, err,
                                     kErrStage + k, sleep_ns, relaxed);
        const bool bad = __any_sync(0xffffffffu, !ok);
        if (threadIdx.x == 0)
            give_up = bad;
    }
    __syncthreads();
    return !give_up;
}

// Stage k is done in this block (every thread's writes are before the barrier). The counter's
// add: after __threadfence() (fence.sc), or with release (--arrive release: red.release.gpu, no
// separate fence; release is cumulative, so it orders the block's writes that the barrier put
// before it).
template <int MODE> __device__ __forceinline__ void stage_arrive(unsigned *sync, int k, int nk, int arrive)
{
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    if (MODE == P_COUNTER && arrive == kArriveRelease) {
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(sync + k) : "memory");
        return;
    }
    if (MODE == P_COUNTER && arrive == kArriveRelaxed) { // a measurement, not a synchronization
        asm volatile("red.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(sync + k) : "memory");
        return;
    }
    __threadfence();
    if (MODE == P_FLAGS) {
        asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(sync + (size_t)k * gridDim.x + blockIdx.x), "r"(1u)
                     : "memory");
    } else if (MODE == P_FLAG) {
        if (atomicAdd(sync + k, 1u) == gridDim.x - 1) { // the last block: every block's writes are before it
            __threadfence();
            asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(sync + nk + k), "r"(1u) : "memory");
        }
    } else {
        atomicAdd(sync + k, 1u);
    }
}

// A stage's weights: block b's are w[base + b * wvec, + wvec) (uint4).
struct stage_w {
    unsigned long long base, wvec;
};

// p-stream's producer (--stream-producer: one thread): the next chunk of the block's sequence, at (stage k, offset
// off) of its weights, at most `slot` uint4 long, into slot qi mod depth; false past the last
// stage. Stages of no weights have no chunks.
struct stream_producer {
    int k = 0;
    unsigned long long off = 0;
    unsigned qi = 0; // chunks issued

    __device__ __forceinline__ bool issue(const uint4 *w, const stage_w *stg, int nk, uint4 *ring,
                                          unsigned long long slot, unsigned long long *bars, int depth)
    {
        while (k < nk && off >= stg[k].wvec)
            k++, off = 0;
        if (k >= nk)
            return false;
        const unsigned long long len = min(slot, stg[k].wvec - off);
        const unsigned s = qi % depth;
        stream_issue(ring + s * slot, w + stg[k].base + blockIdx.x * stg[k].wvec + off, (unsigned)(len * 16), bars + s);
        off += len, qi++;
        return true;
    }
};

// A block giving up (thread 0): it waits out its copies still in flight, chunks q .. qi - 1,
// each with its own deadline, so that it does not exit while a copy writes its shared memory.
__device__ __forceinline__ void stream_drain(unsigned long long *bars, unsigned q, unsigned qi, int depth, int *err,
                                             int k)
{
    for (unsigned j = q; j < qi; j++)
        mbar_wait<false>(bars + j % depth, (j / depth) & 1u, err, kErrSlot + k);
}

// p-ahead's registers: a thread's uint4 of one stage's weights (zero past the block's wvec).
__device__ __forceinline__ void load_ahead(uint4 (&b)[kAheadVec], const uint4 *wb, size_t wvec)
{
#pragma unroll
    for (int j = 0; j < kAheadVec; j++) {
        const size_t i = threadIdx.x + (size_t)j * kThreads;
        b[j] = i < wvec ? __ldg(wb + i) : make_uint4(0, 0, 0, 0);
    }
}

// The K steps of `link` as the stages of one launch (the modes P_*): the same weights (stage
// k's at kernel k's place), the same activation reads and writes.
template <int MODE> __global__ void __launch_bounds__(kThreads)
    stages(const uint4 *w, const stage_w *stg, unsigned *act, unsigned *sync, int *err, int nk, int sleep_ns, int fold,
           int depth, unsigned long long slot, unsigned producer, int arrive, bool relaxed_poll)
{
    // p-ahead, p-l2 and p-stream wait and arrive as p-counter
    constexpr int SYNC = MODE == P_AHEAD || MODE == P_L2 || MODE == P_STREAM ? P_COUNTER : MODE;
    extern __shared__ uint4 ring[]; // p-stream: depth slots of `slot` uint4
    __shared__ unsigned long long bars[kMaxStreamDepth];
    __shared__ int give_up;
    stream_producer prod; // the producer thread's
    unsigned q = 0;       // p-stream: the chunks consumed (every thread)
    uint4 cur[kAheadVec], nxt[kAheadVec];
    if (MODE == P_AHEAD)
        load_ahead(cur, w + stg[0].base + blockIdx.x * stg[0].wvec, stg[0].wvec);
    if (MODE == P_STREAM) { // the slots' barriers, then chunks 0 .. depth - 1 in flight
        if (threadIdx.x == producer) {
            for (int j = 0; j < depth; j++)
                mbar_init(bars + j);
            asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
            while (prod.qi < (unsigned)depth && prod.issue(w, stg, nk, ring, slot, bars, depth)) {}
        }
        __syncthreads();
    }
    for (int k = 0; k < nk; k++) {
        const size_t wvec = stg[k].wvec;
        const uint4 *wk = w + stg[k].base + blockIdx.x * wvec; // this block's weights of stage k
        uint4 acc = make_uint4(0, 0, 0, 0);
        if (MODE == P_STREAM) {
            // nothing before the wait: the copies run ahead of it
        } else if (MODE == P_AHEAD) {
            if (k + 1 < nk)
                load_ahead(nxt, w + stg[k + 1].base + blockIdx.x * stg[k + 1].wvec, stg[k + 1].wvec); // stage k + 1's
        } else if (MODE == P_L2) {
            const char *wb = reinterpret_cast<const char *>(wk);
            for (size_t off = (size_t)threadIdx.x * 128; off < wvec * 16; off += (size_t)kThreads * 128)
                asm volatile("prefetch.global.L2 [%0];" ::"l"(wb + off));
        } else {
            acc = block_weights(wk, wvec);
        }
        if (MODE != P_RACY && MODE != P_STREAM && k > 0 && !stage_wait<SYNC>(sync, err, k, nk, sleep_ns, relaxed_poll))
            return;
        if (MODE == P_L2)
            acc = block_weights(wk, wvec);
        if (MODE == P_STREAM) { // the previous stage, then stage k's chunks from the ring as they land
            if (k > 0 && !stage_wait<SYNC>(sync, err, k, nk, sleep_ns, relaxed_poll)) {
                if (threadIdx.x == producer)
                    stream_drain(bars, q, prod.qi, depth, err, k);
                return;
            }
            for (size_t off = 0; off < wvec; q++) {
                const size_t len = min((size_t)slot, wvec - off);
                const unsigned s = q % depth, parity = (q / depth) & 1u;
                if (threadIdx.x == producer) { // the producer alone polls; the block behind one barrier
                    give_up = !mbar_wait<true>(bars + s, parity, err, kErrSlot + k);
                    if (give_up)
                        stream_drain(bars, q, prod.qi, depth, err, k);
                }
                __syncthreads();
                if (give_up || !mbar_wait<false>(bars + s, parity, err, kErrSlot + k)) // done: every thread's acquire
                    return;
                const uint4 *wb = ring + s * slot;
                for (size_t i = threadIdx.x; i < len; i += kThreads) {
                    const uint4 v = wb[i];
                    acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
                }
                off += len;
                __syncthreads();               // every thread has read slot s
                if (threadIdx.x == producer) { // chunk q + depth, if any, into the freed slot
                    // the reads above, before the copy's writes
                    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
                    prod.issue(w, stg, nk, ring, slot, bars, depth);
                }
            }
        }
        if (MODE == P_AHEAD) { // stage k's weights (loaded a stage ago) folded; stage k + 1's become cur
#pragma unroll
            for (int j = 0; j < kAheadVec; j++)
                acc.x ^= cur[j].x, acc.y ^= cur[j].y, acc.z ^= cur[j].z, acc.w ^= cur[j].w, cur[j] = nxt[j];
        }
        block_step(act + (size_t)k * kAct, act + (size_t)(k + 1) * kAct, acc, fold);
        if (MODE != P_RACY)
            stage_arrive<SYNC>(sync, k, nk, arrive);
        else
            __syncthreads();
    }
}

#define CK(x)                                                                                                          \
    do {                                                                                                               \
        const cudaError_t e_ = (x);                                                                                    \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "engine_chain_bench: %s: %s\n", #x, cudaGetErrorString(e_));                               \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

long parse(const char *opt, const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    const long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "engine_chain_bench: --%s '%s': expected an integer in %ld .. %ld\n", opt, v, lo, hi);
        exit(2);
    }
    return x;
}

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
    if (optind < argc) {
        fprintf(stderr, "engine_chain_bench: unexpected argument '%s'\n", argv[optind]);
        exit(2);
    }
    return o;
}

} // namespace

int main(int argc, char **argv)
{
    const settings o = parse_args(argc, argv);
    const int nk = o.nk, blocks = o.blocks, sleep_ns = o.sleep_ns, replays = o.replays, depth = o.depth;
    const long chunk_kb = o.chunk_kb, producer = o.producer;
    const int arrive = o.arrive;
    const bool relaxed_poll = o.relaxed_poll, force = o.force;
    const std::vector<long> &wkbs = o.wkbs;
    const char *out = o.out;
    char err[512];
    if (out &&
        arb_out_check("--out", out, force ? ARB_OUT_FORCE : ARB_OUT_NEW, "--force", nullptr, 0, err, sizeof err)) {
        fprintf(stderr, "engine_chain_bench: %s\n", err);
        return 2;
    }
    int ndev = 0;
    const cudaError_t de = cudaGetDeviceCount(&ndev);
    if (de != cudaSuccess || ndev == 0) {
        fprintf(stderr, "engine_chain_bench: no CUDA device (%s): nothing to measure\n",
                de != cudaSuccess ? cudaGetErrorString(de) : "none found");
        return 77;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int drv = 0, rt = 0;
    CK(cudaDriverGetVersion(&drv));
    CK(cudaRuntimeGetVersion(&rt));
    // stage k: its weights' place and size (uint4 a block), the list's entry k mod its length
    std::vector<stage_w> stg(nk);
    size_t wtot = 0, maxwv = 0;
    double wkb_mean = 0;
    for (int k = 0; k < nk; k++) {
        stg[k].base = wtot, stg[k].wvec = (size_t)wkbs[k % wkbs.size()] * 1024 / 16;
        wtot += (size_t)blocks * stg[k].wvec, maxwv = std::max(maxwv, (size_t)stg[k].wvec);
        wkb_mean += (double)wkbs[k % wkbs.size()] / nk;
    }
    std::string wkb_text; // the list as given, '/'-separated in the rows and the header
    for (size_t i = 0; i < wkbs.size(); i++)
        wkb_text += (i ? "/" : "") + std::to_string(wkbs[i]);
    // p-stream: a ring slot is a chunk, or (--chunk-kb 0) the largest stage
    const unsigned long long slot = chunk_kb ? (unsigned long long)chunk_kb * 1024 / 16 : maxwv;
    stage_w *dstg = nullptr;
    CK(cudaMalloc(&dstg, nk * sizeof(stage_w)));
    CK(cudaMemcpy(dstg, stg.data(), nk * sizeof(stage_w), cudaMemcpyHostToDevice));
    uint4 *w = nullptr;
    unsigned *act = nullptr, *ctr = nullptr;
    int *dev_err = nullptr;
    CK(cudaMalloc(&w, wtot * 16 + 16));
    CK(cudaMemset(w, 1, wtot * 16 + 16));
    CK(cudaMalloc(&act, (size_t)(nk + 1) * kAct * 4));
    const size_t sync_words = std::max((size_t)2 * nk, (size_t)nk * blocks); // p-flags: a word per stage and block
    CK(cudaMalloc(&ctr, sync_words * 4));
    CK(cudaMalloc(&dev_err, 4));
    std::vector<unsigned> h0(kAct), ref(kAct), got(kAct);
    for (int i = 0; i < kAct; i++)
        h0[i] = ref[i] = (unsigned)i * 2654435761u;
    for (int k = 0; k < nk; k++) {
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
    const double floor_us = blocks * wkb_mean * 1024 / 4.6e6; // a stage's mean
    // one CSV row: the mode's us a kernel or stage (median, min, max; empty when it did not run), its check
    auto row = [&](int mode, const char *times, const char *check) {
        char line[1024];
        snprintf(line, sizeof line, "chain-bench-5,%s,%s,%s,%d,%d,%d,%s,%d,%d,%s,%d,%d,%ld,%ld,%s,%s,%d,%s,%.4f,%s\n",
                 arb_git_rev(), host, prop.name, prop.multiProcessorCount, drv, rt, kModeName[mode], nk, blocks,
                 wkb_text.c_str(), sleep_ns, mode == P_STREAM ? depth : 0, mode == P_STREAM ? chunk_kb : 0,
                 mode == P_STREAM ? producer : 0,
                 mode == P_COUNTER || mode == P_AHEAD || mode == P_L2 || mode == P_STREAM ? kArriveName[arrive] : "",
                 mode >= P_COUNTER && mode != P_FLAGS && mode != P_RACY ? (relaxed_poll ? "relaxed" : "acquire") : "",
                 replays, times, floor_us, check);
        csv += line;
    };
    int rc = 0;
    printf("# engine_chain_bench: %s, %d SMs, driver %d, runtime %d; %d kernels of %d blocks, %s KB of weights a "
           "block (%.2f MB a kernel on average), sleep %d ns, p-stream depth %d, chunk %s, producer thread %ld, %d "
           "replays x 7, the persistent counters' add %s, their poll %s\n",
           prop.name, prop.multiProcessorCount, drv, rt, nk, blocks, wkb_text.c_str(), blocks * wkb_mean / 1024.0,
           sleep_ns, depth, chunk_kb ? (std::to_string(chunk_kb) + " KB").c_str() : "a stage", producer, replays,
           arrive == kArriveRelease   ? "with release (no fence)"
           : arrive == kArriveRelaxed ? "relaxed (not a synchronization)"
                                      : "after a fence",
           relaxed_poll ? "relaxed (not a synchronization)" : "acquire");
    if (wkbs.size() > 1 && nk % wkbs.size() == 0)
        printf("# the list is a period of %zu stages: a period's time is %zu x a stage's\n", wkbs.size(), wkbs.size());
    // p-stream's ring: depth slots in dynamic shared memory
    const size_t ring_bytes = (size_t)depth * slot * 16;
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
            const bool resident = (long)per_sm * prop.multiProcessorCount >= blocks;
            if (!resident || (mode == P_AHEAD && maxwv > (size_t)kAheadVec * kThreads)) {
                if (!resident)
                    printf("%-9s skipped: %d blocks are not all resident (at most %d a SM x %d SMs)\n", kModeName[mode],
                           blocks, per_sm, prop.multiProcessorCount);
                else
                    printf("%-9s skipped: %zu KB of weights a block do not fit its registers (at most %d KB)\n",
                           kModeName[mode], maxwv * 16 / 1024, kAheadVec * kThreads * 16 / 1024);
                row(mode, ",,", resident ? "too-large" : "not-resident");
                continue;
            }
        }
        CK(cudaMemcpy(act, h0.data(), kAct * 4, cudaMemcpyHostToDevice));
        CK(cudaMemset(act + kAct, 0, (size_t)nk * kAct * 4));
        CK(cudaMemset(ctr, 0, sync_words * 4));
        CK(cudaMemset(dev_err, 0, 4));
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        if (persistent) { // the sync words cleared, then the one launch of nk stages
            CK(cudaMemsetAsync(ctr, 0, sync_words * 4, st));
            pkern[mode - P_COUNTER]<<<blocks, kThreads, dyn, st>>>(w, dstg, act, ctr, dev_err, nk, sleep_ns, 0, depth,
                                                                   slot, (unsigned)producer, arrive, relaxed_poll);
            CK(cudaGetLastError());
        }
        for (int k = 0; k < nk && !persistent; k++) {
            cudaLaunchConfig_t cfg = {};
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            at[0].val.programmaticStreamSerializationAllowed = 1;
            cfg.gridDim = dim3(blocks), cfg.blockDim = dim3(kThreads), cfg.stream = st;
            cfg.attrs = at, cfg.numAttrs = mode == PLAIN ? 0 : 1;
            const uint4 *wk = w + stg[k].base;
            const unsigned *in = act + (size_t)k * kAct;
            unsigned *o = act + (size_t)(k + 1) * kAct;
            CK(cudaLaunchKernelEx(&cfg, kern[mode], wk, (size_t)stg[k].wvec, in, o, ctr, dev_err, k, nk,
                                  (unsigned)blocks, sleep_ns, 0));
        }
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        for (int i = 0; i < 3; i++)
            CK(cudaGraphLaunch(ge, st));
        CK(cudaStreamSynchronize(st));
        cudaEvent_t a, b;
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
        std::vector<float> t;
        for (int r = 0; r < 7; r++) {
            CK(cudaEventRecord(a, st));
            for (int i = 0; i < replays; i++)
                CK(cudaGraphLaunch(ge, st));
            CK(cudaEventRecord(b, st));
            CK(cudaEventSynchronize(b));
            float ms;
            CK(cudaEventElapsedTime(&ms, a, b));
            t.push_back(ms * 1e3f / replays / nk);
        }
        std::sort(t.begin(), t.end());
        int e = 0;
        CK(cudaMemcpy(&e, dev_err, 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(got.data(), act + (size_t)nk * kAct, kAct * 4, cudaMemcpyDeviceToHost));
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
        CK(cudaEventDestroy(a));
        CK(cudaEventDestroy(b));
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
        if (e) // a kernel may still be spinning: the device is not reusable for the next mode
            break;
    }
    if (out) {
        arb_outfile_t of;
        FILE *f = arb_outfile_open(&of, "--out", out, err, sizeof err);
        if (f && fputs(csv.c_str(), f) < 0) {
            arb_outfile_discard(&of);
            snprintf(err, sizeof err, "--out '%s': cannot write (%s)", out, strerror(errno));
            f = nullptr;
        }
        if (!f || arb_outfile_commit(&of, err, sizeof err)) {
            fprintf(stderr, "engine_chain_bench: %s\n", err);
            return 1;
        }
    }
    return rc;
}
