// SPDX-License-Identifier: MIT
// Peer window exchange over CUDA IPC and the P2P preflight; see p2p_team.h.
#include "p2p_team.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p2p_cuda.h"

namespace {

// One rank's verdict on a step, gathered so that every rank takes the same branch:
// a rank that declined alone would leave the others waiting in the next collective.
struct verdict {
    int status; // arb_status_t
    char why[240];
};

// Allgathers each rank's verdict; on any failure, writes the first failing rank's
// reason into why (prefixed with its rank) and returns its status on every rank.
arb_status_t agree(const p2p_team_t *t, arb_status_t mine, const char *my_why, char *why, size_t why_len)
{
    verdict v = {};
    v.status = (int)mine;
    snprintf(v.why, sizeof v.why, "%s", mine == ARB_OK ? "" : my_why);
    verdict all[P2P_MAX_RANKS];
    if (t->ops->allgather(t->ops->ctx, &v, all, sizeof v) != 0) {
        snprintf(why, why_len, "p2p: host allgather failed while agreeing on setup");
        return ARB_ERR_SYSTEM;
    }
    for (int r = 0; r < t->nranks; r++)
        if (all[r].status != ARB_OK) {
            snprintf(why, why_len, "rank %d: %s", r, all[r].why);
            return (arb_status_t)all[r].status;
        }
    return ARB_OK;
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
        snprintf(why, why_len, "ranks span %d nodes; p2p is single-node", info->nnodes);
        return ARB_DECLINE;
    }
    if (info->nranks > P2P_MAX_RANKS) {
        snprintf(why, why_len, "%d ranks; p2p supports at most %d ranks on one node", info->nranks, P2P_MAX_RANKS);
        return ARB_DECLINE;
    }

    rank_info me = {};
    int ndev = 0;
    if ((ce = cudaGetDeviceCount(&ndev)) != cudaSuccess || ndev == 0) {
        snprintf(mine, sizeof mine, "no CUDA device visible: %s",
                 ce != cudaSuccess ? cudaGetErrorString(ce) : "cudaGetDeviceCount returned 0");
        st = ARB_DECLINE;
    } else if ((ce = cudaGetDevice(&me.device)) != cudaSuccess ||
               (ce = cudaDeviceGetAttribute(&me.sm_count, cudaDevAttrMultiProcessorCount, me.device)) != cudaSuccess) {
        snprintf(mine, sizeof mine, "cannot query the current CUDA device: %s", cudaGetErrorString(ce));
        st = ARB_ERR_SYSTEM;
    }
    P2P_CHECK(agree(t, st, mine, why, why_len));
    t->device = me.device;

    // Peer access, from the device ids of all ranks.
    rank_info all[P2P_MAX_RANKS];
    if (ops->allgather(ops->ctx, &me, all, sizeof me) != 0) {
        snprintf(why, why_len, "p2p: host allgather of device ids failed");
        return ARB_ERR_SYSTEM;
    }
    t->max_blocks = P2P_MAX_BLOCKS;
    for (int r = 0; r < t->nranks; r++) {
        if (all[r].sm_count < t->max_blocks)
            t->max_blocks = all[r].sm_count;
        if (r == t->rank || all[r].device == me.device)
            continue; // the same GPU needs no peer access
        int ok = 0;
        if ((ce = cudaDeviceCanAccessPeer(&ok, me.device, all[r].device)) != cudaSuccess) {
            snprintf(mine, sizeof mine, "cudaDeviceCanAccessPeer(GPU %d, GPU %d): %s", me.device, all[r].device,
                     cudaGetErrorString(ce));
            st = ARB_ERR_SYSTEM;
        } else if (!ok && st == ARB_OK) {
            snprintf(mine, sizeof mine, "GPU %d (rank %d) cannot access GPU %d (rank %d): no CUDA peer access",
                     me.device, t->rank, all[r].device, r);
            st = ARB_DECLINE;
        }
    }
    P2P_CHECK(agree(t, st, mine, why, why_len));

    // This rank's window and state.
    t->window_bytes = P2P_WINDOW_HEAD_BYTES + ((payload_bytes + 4095) / 4096) * 4096;
    cudaIpcMemHandle_t handle, handles[P2P_MAX_RANKS];
    memset(&handle, 0, sizeof handle);
    P2P_CUDA_TRY(cudaMalloc((void **)&t->window, t->window_bytes), st, mine);
    if (st == ARB_OK)
        P2P_CUDA_TRY(cudaMemset(t->window, 0, t->window_bytes), st, mine);
    if (st == ARB_OK)
        P2P_CUDA_TRY(cudaMalloc((void **)&t->state, sizeof *t->state), st, mine);
    if (st == ARB_OK)
        P2P_CUDA_TRY(cudaMemset(t->state, 0, sizeof *t->state), st, mine);
    if (st == ARB_OK)
        P2P_CUDA_TRY(cudaIpcGetMemHandle(&handle, t->window), st, mine);
    if (st == ARB_OK)
        P2P_CUDA_TRY(cudaDeviceSynchronize(), st, mine);
    P2P_CHECK_GOTO(agree(t, st, mine, why, why_len), st, err_free_window);

    // Map every peer's window.
    if (ops->allgather(ops->ctx, &handle, handles, sizeof handle) != 0) {
        snprintf(why, why_len, "p2p: host allgather of IPC handles failed");
        st = ARB_ERR_SYSTEM;
        goto err_free_window;
    }
    for (int r = 0; r < t->nranks && st == ARB_OK; r++) {
        if (r == t->rank) {
            t->peer_window[r] = t->window;
            continue;
        }
        ce = cudaIpcOpenMemHandle((void **)&t->peer_window[r], handles[r], cudaIpcMemLazyEnablePeerAccess);
        if (ce != cudaSuccess) {
            t->peer_window[r] = NULL;
            snprintf(mine, sizeof mine, "cudaIpcOpenMemHandle of rank %d's window (GPU %d) on GPU %d: %s", r,
                     all[r].device, me.device, cudaGetErrorString(ce));
            st = ce == cudaErrorPeerAccessUnsupported ? ARB_DECLINE : ARB_ERR_SYSTEM;
        }
    }
    P2P_CHECK_GOTO(agree(t, st, mine, why, why_len), st, err_close_peers);

    {
        // Preflight: each rank writes a pattern into every peer, all wait, each checks
        // what arrived in its own window and what it reads from every peer's.
        peer_ptrs peers = {};
        for (int r = 0; r < t->nranks; r++)
            peers.head[r] = (p2p_window_head_t *)t->peer_window[r];
        uint64_t *dread = NULL, got_read[P2P_MAX_RANKS] = {0};
        p2p_window_head_t *head = (p2p_window_head_t *)malloc(sizeof *head);
        if (!head) {
            snprintf(mine, sizeof mine, "out of host memory");
            st = ARB_ERR_SYSTEM;
        }
        if (st == ARB_OK) {
            probe_write<<<1, P2P_MAX_RANKS>>>(peers, t->rank, t->nranks);
            P2P_CUDA_TRY(cudaDeviceSynchronize(), st, mine);
        }
        if (ops->barrier(ops->ctx) != 0 && st == ARB_OK) {
            snprintf(mine, sizeof mine, "host barrier failed during the P2P preflight");
            st = ARB_ERR_SYSTEM;
        }
        if (st == ARB_OK)
            P2P_CUDA_TRY(cudaMalloc((void **)&dread, sizeof got_read), st, mine);
        if (st == ARB_OK) {
            probe_read<<<1, P2P_MAX_RANKS>>>(peers, t->nranks, dread);
            P2P_CUDA_TRY(cudaMemcpy(got_read, dread, sizeof got_read, cudaMemcpyDeviceToHost), st, mine);
        }
        if (st == ARB_OK)
            P2P_CUDA_TRY(cudaMemcpy(head, t->window, sizeof *head, cudaMemcpyDeviceToHost), st, mine);
        for (int r = 0; r < t->nranks && st == ARB_OK; r++) {
            if (r == t->rank)
                continue;
            uint64_t want_w = probe_pattern(r, t->rank), want_r = probe_pattern(r, r);
            if (head->probe[r] != want_w) {
                snprintf(mine, sizeof mine, "P2P write from rank %d (GPU %d) to rank %d (GPU %d) did not arrive: read 0x%016llx, expected 0x%016llx",
                         r, all[r].device, t->rank, me.device, (unsigned long long)head->probe[r],
                         (unsigned long long)want_w);
                st = ARB_DECLINE;
            } else if (got_read[r] != want_r) {
                snprintf(mine, sizeof mine, "P2P read by rank %d (GPU %d) from rank %d (GPU %d) returned 0x%016llx, expected 0x%016llx",
                         t->rank, me.device, r, all[r].device, (unsigned long long)got_read[r],
                         (unsigned long long)want_r);
                st = ARB_DECLINE;
            }
        }
        free(head);
        if (dread)
            cudaFree(dread);
    }
    P2P_CHECK_GOTO(agree(t, st, mine, why, why_len), st, err_close_peers);
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
        snprintf(why, why_len, "reading the p2p device state: %s", cudaGetErrorString(ce));
        return ARB_ERR_SYSTEM;
    }
    if (s.err_code == P2P_ERR_TIMEOUT) {
        snprintf(why, why_len, "spin-wait timed out waiting for rank %d (epoch %u, block %u); this instance stays disabled",
                 s.err_peer, s.err_epoch, s.err_block);
        return ARB_ERR_TIMEOUT;
    }
    return ARB_OK;
}
