// SPDX-License-Identifier: MIT
// engine_chain_bench's device side (engine_chain_bench.cu drives it: options, graphs, timing,
// the host check, the rows): the kernels of every mode, one launch a step or one persistent
// launch of every step.
//
// What one dependent-kernel boundary of a CUDA graph costs on this GPU, by how
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
#ifndef ARB_TESTS_ENGINE_CHAIN_MODES_CUH
#define ARB_TESTS_ENGINE_CHAIN_MODES_CUH

#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>

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

} // namespace

#endif
