// SPDX-License-Identifier: MIT
// Peer window exchange over CUDA IPC and the P2P preflight; see p2p_team.h.
#include "p2p_team.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arb_plugin_util.h"
#include "arbench/status.h"

namespace {

// One rank's verdict on a step, gathered so that every rank takes the same branch:
// a rank that declined alone would leave the others waiting in the next collective.
struct verdict {
    int status; // arb_status_t
    char why[240];
};

// Allgathers each rank's verdict; on any failure, returns the most severe status on
// every rank (arb_status_t's order) with the reason of the first rank that has it,
// prefixed with its rank (the reason already names where it was raised).
arb_status_t agree(const p2p_team_t *t, arb_status_t mine, const char *my_why, char *why, size_t why_len)
{
    verdict v = {};
    v.status = (int)mine;
    snprintf(v.why, sizeof v.why, "%s", mine == ARB_OK ? "" : my_why);
    verdict all[P2P_MAX_RANKS];
    if (t->ops->allgather(t->ops->ctx, &v, all, sizeof v) != 0) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "p2p: host allgather failed while agreeing on setup");
    }
    int worst = 0;
    for (int r = 1; r < t->nranks; r++)
        if (all[r].status > all[worst].status)
            worst = r;
    if (all[worst].status == ARB_OK)
        return ARB_OK;
    snprintf(why, why_len, "rank %d: %s", worst, all[worst].why);
    return (arb_status_t)all[worst].status;
}

// The preflight pattern rank `src` writes into rank `dst`'s window.
__host__ __device__ uint64_t probe_pattern(int src, int dst)
{
    return 0xA5C3F00D00000000ull ^ ((uint64_t)src << 16) ^ ((uint64_t)dst << 4) ^ 0x1234ull;
}

struct peer_ptrs {
    p2p_window_head_t *head[P2P_MAX_RANKS];
};

// Writes this rank's pattern into probe[rank] of every peer's window (and its own
// probe_self), through the same SM stores over P2P that the all-reduce kernels use.
__global__ void probe_write(peer_ptrs peers, int rank, int nranks)
{
    int r = threadIdx.x;
    if (r == rank)
        peers.head[rank]->probe_self = probe_pattern(rank, rank);
    if (r < nranks && r != rank)
        peers.head[r]->probe[rank] = probe_pattern(rank, r);
    __threadfence_system();
}

// Reads every peer's probe_self through the mapping (the pull direction).
__global__ void probe_read(peer_ptrs peers, int nranks, uint64_t *out)
{
    int r = threadIdx.x;
    if (r < nranks)
        out[r] = *(volatile uint64_t *)&peers.head[r]->probe_self;
}

struct rank_info {
    int device;
    int sm_count;
    int can_access[P2P_MAX_RANKS]; // can_access[r]: this device can map rank r's memory
};

// The current device and its SM count.
arb_status_t query_device(rank_info *me, char *why, size_t why_len)
{
    ARB_CUDA_TRY(cudaGetDevice(&me->device), why, why_len);
    ARB_CUDA_TRY(cudaDeviceGetAttribute(&me->sm_count, cudaDevAttrMultiProcessorCount, me->device), why, why_len);
    return ARB_OK;
}

// The local half of the preflight before the barrier: this rank's pattern into
// every peer's window (SM stores over P2P, as the kernels do), completed.
arb_status_t preflight_write(const p2p_team_t *t, const peer_ptrs &peers, char *why, size_t why_len)
{
    probe_write<<<1, P2P_MAX_RANKS>>>(peers, t->rank, t->nranks);
    ARB_CUDA_TRY(cudaDeviceSynchronize(), why, why_len);
    return ARB_OK;
}

// This rank's window (zeroed), its device state (zeroed) and the window's IPC handle.
arb_status_t alloc_window(p2p_team_t *t, cudaIpcMemHandle_t *handle, char *why, size_t why_len)
{
    ARB_CUDA_TRY(cudaMalloc((void **)&t->window, t->window_bytes), why, why_len);
    ARB_CUDA_TRY(cudaMemset(t->window, 0, t->window_bytes), why, why_len);
    ARB_CUDA_TRY(cudaMalloc((void **)&t->state, sizeof *t->state), why, why_len);
    ARB_CUDA_TRY(cudaMemset(t->state, 0, sizeof *t->state), why, why_len);
    ARB_CUDA_TRY(cudaIpcGetMemHandle(handle, t->window), why, why_len);
    ARB_CUDA_TRY(cudaDeviceSynchronize(), why, why_len);
    return ARB_OK;
}

// The local half of the preflight after the barrier: what every peer wrote into this
// window, and what this rank reads from every peer's probe_self. ARB_DECLINE names the
// pair and the direction that failed.
arb_status_t preflight_check(const p2p_team_t *t, const peer_ptrs &peers, const rank_info *all, int my_device,
                             char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    uint64_t *dread = NULL, got_read[P2P_MAX_RANKS] = {0};
    p2p_window_head_t *head = (p2p_window_head_t *)malloc(sizeof *head);
    if (!head)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory");
    ARB_CUDA_GOTO(st, cudaMalloc((void **)&dread, sizeof got_read), err_free, why, why_len);
    probe_read<<<1, P2P_MAX_RANKS>>>(peers, t->nranks, dread);
    ARB_CUDA_GOTO(st, cudaMemcpy(got_read, dread, sizeof got_read, cudaMemcpyDeviceToHost), err_free, why, why_len);
    ARB_CUDA_GOTO(st, cudaMemcpy(head, t->window, sizeof *head, cudaMemcpyDeviceToHost), err_free, why, why_len);
    for (int r = 0; r < t->nranks; r++) {
        if (r == t->rank)
            continue;
        const uint64_t want_w = probe_pattern(r, t->rank), want_r = probe_pattern(r, r);
        if (head->probe[r] != want_w)
            ARB_RAISE_GOTO(st, ARB_DECLINE, err_free, why, why_len,
                           "P2P write from rank %d (GPU %d) to rank %d (GPU %d) did not arrive: read 0x%016llx, expected 0x%016llx",
                           r, all[r].device, t->rank, my_device, (unsigned long long)head->probe[r],
                           (unsigned long long)want_w);
        if (got_read[r] != want_r)
            ARB_RAISE_GOTO(st, ARB_DECLINE, err_free, why, why_len,
                           "P2P read by rank %d (GPU %d) from rank %d (GPU %d) returned 0x%016llx, expected 0x%016llx",
                           t->rank, my_device, r, all[r].device, (unsigned long long)got_read[r],
                           (unsigned long long)want_r);
    }
err_free:
    free(head);
    if (dread)
        cudaFree(dread);
    return st;
}

} // namespace

extern "C" arb_status_t p2p_team_open(const arb_comm_info_t *info, const arb_host_ops_t *ops,
                                      size_t payload_bytes, p2p_team_t *t, char *why, size_t why_len)
{
    char mine[240] = "";
    arb_status_t st = ARB_OK;
    cudaError_t ce;
    memset(t, 0, sizeof *t);
    t->rank = info->rank;
    t->nranks = info->nranks;
    t->ops = ops;
    // Decided from arguments identical on every rank: no agreement needed.
    if (info->nnodes > 1 || info->local_nranks != info->nranks) {
        ARB_RAISE(ARB_DECLINE, why, why_len, "ranks span %d nodes; p2p is single-node", info->nnodes);
    }
    if (info->nranks > P2P_MAX_RANKS) {
        ARB_RAISE(ARB_DECLINE, why, why_len, "%d ranks; p2p supports at most %d ranks on one node", info->nranks, P2P_MAX_RANKS);
    }

    rank_info me = {};
    st = arb_plugin_device_check(info, "p2p", mine, sizeof mine);
    // A host-only run (no device made current) is one on every rank: decline at once.
    if (st == ARB_DECLINE && info->cuda_device < 0) {
        snprintf(why, why_len, "%s", mine);
        return st;
    }
    if (st == ARB_OK)
        st = query_device(&me, mine, sizeof mine);
    ARB_TRY(agree(t, st, mine, why, why_len));
    t->device = me.device;

    // Peer access, from the device ids of all ranks.
    rank_info all[P2P_MAX_RANKS];
    if (ops->allgather(ops->ctx, &me, all, sizeof me) != 0) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "p2p: host allgather of device ids failed");
    }
    t->max_blocks = P2P_MAX_BLOCKS;
    for (int r = 0; r < t->nranks; r++) {
        if (all[r].sm_count < t->max_blocks)
            t->max_blocks = all[r].sm_count;
        if (r == t->rank || all[r].device == me.device)
            continue; // the same GPU needs no peer access
        int ok = 0;
        if ((ce = cudaDeviceCanAccessPeer(&ok, me.device, all[r].device)) != cudaSuccess) {
            ARB_WHY(mine, sizeof mine, "cudaDeviceCanAccessPeer(GPU %d, GPU %d): %s", me.device, all[r].device,
                    cudaGetErrorString(ce));
            st = ARB_ERR_SYSTEM;
        } else if (!ok && st == ARB_OK) {
            ARB_WHY(mine, sizeof mine, "GPU %d (rank %d) cannot access GPU %d (rank %d): no CUDA peer access",
                    me.device, t->rank, all[r].device, r);
            st = ARB_DECLINE;
        }
    }
    ARB_TRY(agree(t, st, mine, why, why_len));

    // This rank's window and state.
    t->window_bytes = P2P_WINDOW_HEAD_BYTES + ((payload_bytes + 4095) / 4096) * 4096;
    cudaIpcMemHandle_t handle, handles[P2P_MAX_RANKS];
    memset(&handle, 0, sizeof handle);
    st = alloc_window(t, &handle, mine, sizeof mine);
    ARB_TRY_GOTO(st, agree(t, st, mine, why, why_len), err_free_window);

    // Map every peer's window.
    if (ops->allgather(ops->ctx, &handle, handles, sizeof handle) != 0) {
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err_free_window, why, why_len, "p2p: host allgather of IPC handles failed");
    }
    for (int r = 0; r < t->nranks && st == ARB_OK; r++) {
        if (r == t->rank) {
            t->peer_window[r] = t->window;
            continue;
        }
        ce = cudaIpcOpenMemHandle((void **)&t->peer_window[r], handles[r], cudaIpcMemLazyEnablePeerAccess);
        if (ce != cudaSuccess) {
            t->peer_window[r] = NULL;
            ARB_WHY(mine, sizeof mine, "cudaIpcOpenMemHandle of rank %d's window (GPU %d) on GPU %d: %s", r,
                    all[r].device, me.device, cudaGetErrorString(ce));
            st = ce == cudaErrorPeerAccessUnsupported ? ARB_DECLINE : ARB_ERR_SYSTEM;
        }
    }
    ARB_TRY_GOTO(st, agree(t, st, mine, why, why_len), err_close_peers);

    {
        // Preflight: each rank writes a pattern into every peer, all wait (every rank
        // takes part in the barrier, also one that failed), each checks what arrived in
        // its own window and what it reads from every peer's.
        peer_ptrs peers = {};
        for (int r = 0; r < t->nranks; r++)
            peers.head[r] = (p2p_window_head_t *)t->peer_window[r];
        st = preflight_write(t, peers, mine, sizeof mine);
        if (ops->barrier(ops->ctx) != 0 && st == ARB_OK) {
            ARB_WHY(mine, sizeof mine, "host barrier failed during the P2P preflight");
            st = ARB_ERR_SYSTEM;
        }
        if (st == ARB_OK)
            st = preflight_check(t, peers, all, me.device, mine, sizeof mine);
    }
    ARB_TRY_GOTO(st, agree(t, st, mine, why, why_len), err_close_peers);
    return ARB_OK;

err_close_peers:
    for (int r = 0; r < t->nranks; r++)
        if (r != t->rank && t->peer_window[r])
            cudaIpcCloseMemHandle(t->peer_window[r]);
    ops->barrier(ops->ctx); // no peer still maps this window when it is freed
err_free_window:
    if (t->state)
        cudaFree(t->state);
    if (t->window)
        cudaFree(t->window);
    memset(t->peer_window, 0, sizeof t->peer_window);
    t->window = NULL;
    t->state = NULL;
    return st;
}

extern "C" void p2p_team_close(p2p_team_t *t)
{
    cudaDeviceSynchronize();
    for (int r = 0; r < t->nranks; r++)
        if (r != t->rank && t->peer_window[r])
            cudaIpcCloseMemHandle(t->peer_window[r]);
    t->ops->barrier(t->ops->ctx); // every peer has unmapped this window
    cudaFree(t->state);
    cudaFree(t->window);
    memset(t, 0, sizeof *t);
}

extern "C" arb_status_t p2p_team_query_error(p2p_team_t *t, char *why, size_t why_len)
{
    p2p_dev_state_t s;
    cudaError_t ce = cudaMemcpy(&s, t->state, sizeof s, cudaMemcpyDeviceToHost);
    if (ce != cudaSuccess) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "reading the p2p device state: %s", cudaGetErrorString(ce));
    }
    if (s.err.failed) {
        // indexed by P2P_WAIT_FLAG, P2P_WAIT_LINES, P2P_WAIT_FUSED_LINES
        static const char *const what[] = {"flag", "lines", "fused lines"};
        ARB_RAISE(ARB_ERR_TIMEOUT, why, why_len, "spin-wait timed out waiting for rank %u's %s (epoch %u, block %u); this instance stays disabled",
                 s.err.peer, s.err.what < 3 ? what[s.err.what] : "?", s.err.epoch, s.err.cta);
    }
    return ARB_OK;
}
