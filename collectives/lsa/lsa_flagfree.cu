/* SPDX-License-Identifier: MIT */
/*
 * oneshot-flagfree on the LSA path: the data carries its own readiness, so a call
 * costs one one-way write latency instead of write + barrier (push) or barrier +
 * read + barrier (pull).
 *
 * Lines. The payload travels in 8-byte units; unit u is sent as the 16-byte line
 *   { d0, epoch, d1, epoch }      (d0, d1: the unit's two 32-bit words)
 * written into every peer's scratch window with ONE 16-byte store. Memory ordering:
 * no flag and no fence. The argument is single-copy atomicity of each naturally
 * aligned 8-byte half {d, epoch} of that store as it lands in the peer's memory over
 * NVLink or PCIe P2P (the property NCCL's LL protocol is built on): a reader that sees
 * this call's epoch in both halves of a line has this call's 8 payload bytes, whatever
 * the order in which lines (or halves) arrive. The reader uses ld.volatile (relaxed,
 * system scope, served from L2, not the SM's incoherent L1) and re-polls each line
 * until both epochs match; it needs no acquire because it reads nothing else that
 * the writer published.
 *
 * Epochs. CTA b keeps its call count in rank-local device memory (W_CALLS + b); the
 * call's epoch is count + 1, read at kernel start and written back at the end, never a
 * kernel argument, so a captured CUDA graph replays correctly. Every call launches the
 * same number of CTAs and every CTA advances, so all counters of a rank, and of every
 * rank, are equal: the epoch is the call number, whichever CTA writes or reads a line.
 * The scratch window starts zeroed and the first epoch is 1; epochs only grow, so a
 * stale line always carries an older epoch. (Equality on 32 bits: a line not rewritten
 * for 2^32 calls could alias; far beyond any run.)
 *
 * Two line sets, by epoch parity: source s's lines of set e&1 on rank dst live at
 * lines_off + ((e&1)*n + s)*lines_bytes of dst's scratch window. Why two are enough:
 * a rank writes set k%2 again in call k+2 only after its call k+1 kernel finished,
 * which waited for a line of call k+1 from every peer; a peer writes those after its
 * call k kernel, the last reader of set k%2 in that peer's window, has finished.
 *
 * Sums: fp32 in rank order 0..n-1 (this rank's own unit read from send), rounded
 * once: bitwise identical on every rank.
 *
 * Spins are bounded: after timeout_ns the CTA records (CTA, peer, epoch) in the error
 * words and stops; recv keeps what it held for the units not summed, the epoch does
 * not advance, and later kernels on this rank return at once (lsa_failed), so the
 * peers time out too instead of hanging.
 */
#include "lsa_device.cuh"

/* 8-byte units as raw bits (a uint64_t per unit, element i at bits [i*W, (i+1)*W) for
 * W-bit elements, the little-endian memory order), so that no union with 16-bit
 * members sends the unit to local memory. */
template <typename T> struct unit_traits;
template <> struct unit_traits<__nv_bfloat16> {
    typedef unsigned short raw;
    static __device__ float to_f(raw r) { return __bfloat162float(__ushort_as_bfloat16(r)); }
    static __device__ raw from_f(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
};
template <> struct unit_traits<float> {
    typedef unsigned int raw;
    static __device__ float to_f(raw r) { return __uint_as_float(r); }
    static __device__ raw from_f(float x) { return __float_as_uint(x); }
};

/* Unit u of a count-element array; elements past count read as zero and nothing past
 * the array is touched (send may end right at count). */
template <typename T> static __device__ __forceinline__ uint64_t load_unit(const T *base, size_t u, size_t count)
{
    typedef typename unit_traits<T>::raw raw;
    constexpr int H = 8 / sizeof(T);
    const size_t first = u * H;
    if (first + H <= count)
        return *(const uint64_t *)(base + first);
    uint64_t x = 0;
#pragma unroll
    for (int i = 0; i < H; i++)
        if (first + i < count)
            x |= (uint64_t)((const raw *)base)[first + i] << (i * 8 * sizeof(T));
    return x;
}

template <typename T> static __device__ __forceinline__ float unit_elt(uint64_t x, int i)
{
    typedef typename unit_traits<T>::raw raw;
    return unit_traits<T>::to_f((raw)(x >> (i * 8 * sizeof(T))));
}

/* Waits for line *p to carry epoch in both halves (arb_spin_until: false after
 * timeout_ns, recorded, or when another CTA of this rank gave up). */
static __device__ __forceinline__ bool wait_line(const lsa_kargs &a, const uint4 *p, uint32_t epoch, int peer, uint4 *out)
{
    return arb_spin_until([&] { return arb_line_is(*out = arb_ld_line(p), epoch); }, lsa_error(a.words), peer,
                          LSA_WAIT_LINES, epoch, a.timeout_ns);
}

template <typename T>
__global__ void __launch_bounds__(1024) flagfree_kernel(const lsa_kargs a)
{
    constexpr int H = 8 / sizeof(T);
    if (lsa_failed(a))
        return;
    const uint32_t epoch = a.words[W_CALLS + blockIdx.x] + 1;
    const size_t nu = (a.count + H - 1) / H;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t set = epoch & 1u;
    const int n = a.lsa_size, me = a.lsa_rank;

    /* Send: my units into my source slot of every peer's current set, next rank first
     * so that not every rank writes into rank 0 first. */
    if (!a.hang) {
        const size_t mine = a.lines_off + (set * n + me) * a.lines_bytes;
        for (size_t u = first; u < nu; u += stride) {
            const uint64_t x = load_unit((const T *)a.send, u, a.count);
            for (int k = 1; k < n; k++) {
                const int p = me + k < n ? me + k : me + k - n;
                arb_st_line((uint4 *)(a.scratch_peer[p] + mine) + u, (uint32_t)x, (uint32_t)(x >> 32), epoch);
            }
        }
    }

    /* Receive: every source's lines in my own window, summed in rank order. */
    const char *set_base = a.scratch_peer[me] + a.lines_off + set * n * a.lines_bytes;
    bool failed = false;
    for (size_t u = first; u < nu && !failed; u += stride) {
        float acc[H];
#pragma unroll
        for (int i = 0; i < H; i++)
            acc[i] = 0.0f;
        for (int r = 0; r < n; r++) {
            uint64_t x;
            if (r == me) {
                x = load_unit((const T *)a.send, u, a.count);
            } else {
                uint4 l;
                if (!wait_line(a, (const uint4 *)(set_base + (size_t)r * a.lines_bytes) + u, epoch, r, &l)) {
                    failed = true;
                    break;
                }
                x = (uint64_t)l.x | (uint64_t)l.z << 32;
            }
#pragma unroll
            for (int i = 0; i < H; i++)
                acc[i] += unit_elt<T>(x, i);
        }
        if (failed)
            break;
        typedef typename unit_traits<T>::raw raw;
        raw *recv = (raw *)a.recv;
        const size_t e0 = u * H;
        if (e0 + H <= a.count) {
            uint64_t y = 0;
#pragma unroll
            for (int i = 0; i < H; i++)
                y |= (uint64_t)unit_traits<T>::from_f(acc[i]) << (i * 8 * sizeof(T));
            *(uint64_t *)(recv + e0) = y;
        } else {
#pragma unroll
            for (int i = 0; i < H; i++)
                if (e0 + i < a.count)
                    recv[e0 + i] = unit_traits<T>::from_f(acc[i]);
        }
    }
    /* Every thread read the counter and finished this epoch before it advances. */
    if (__syncthreads_or(failed))
        return;
    if (threadIdx.x == 0)
        a.words[W_CALLS + blockIdx.x] = epoch;
}

cudaError_t lsa_launch_flagfree(const lsa_kargs &a, bool bf16, int ctas, int threads, cudaStream_t s)
{
    if (bf16)
        flagfree_kernel<__nv_bfloat16><<<ctas, threads, 0, s>>>(a);
    else
        flagfree_kernel<float><<<ctas, threads, 0, s>>>(a);
    return cudaGetLastError();
}
