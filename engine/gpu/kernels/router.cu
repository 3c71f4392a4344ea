// SPDX-License-Identifier: MIT
// The MoE router in one launch (forward.md):
//   logits  logits[t][e] = h[t] . router[e] (fp32): a block per expert row, eight warps
//           over H, each lane's first vectors loaded before the PDL wait
//   top-k   by the last block of the logits to finish (a ticket: common.cuh's
//           grid_last_block), a warp per token, the picks ranked in parallel (no serial
//           pick loop: router_ops.cuh's router_topk_tile; until the seventh session a
//           launch of its own, one block behind the logits under PDL):
//   score = sigmoid(logits); choice = score + e_score_correction_bias
//   groups: keep the topk_group groups whose top-2 choice sum is largest (all if n_group 1)
//   top-k experts by choice among the kept groups, ties to the lower index
//   w_j = score[e_j] / sum_j score[e_j] * routed_scaling_factor
// and the step's dedupe for the MoE kernels: the distinct experts in ascending order
// (uniq, n_uniq) and coef[u][t] = the weight token t gives expert uniq[u] (0 if none).
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/router_ops.cuh"

namespace arbk {
namespace {

template <int T, int NL>
__global__ void __launch_bounds__(kRouterWarps *kWarp)
    router_kernel(const bf16 *__restrict__ h, const bf16 *__restrict__ W, const float *__restrict__ bias,
                  float *logits, moe_route rt, int H, int E, int k, int n_group, int topk_group, float scaling,
                  unsigned *ticket)
{
    ARB_TL(ARB_TL_ROUTER);
    extern __shared__ float topk_smem[];
    // the bias (a weight) where the top-k stages it, by every block before its logits: the
    // last block's top-k then finds it there (STAGED) instead of waiting on memory after the ticket
    for (int e = threadIdx.x; e < E; e += blockDim.x)
        topk_smem[T * E + e] = __ldg(bias + e);
    router_logits_tile<T>(pdl_sync(), h, W, logits, H, E, (int)blockIdx.x);
    if (!grid_last_block(ticket))
        return;
    // the other blocks' logits through L2 (the tile reads them with __ldcg); its wait and
    // trigger are the kernel's own, already passed
    router_topk_tile<NL, persist_sync, true>(persist_sync(), logits, bias, rt, E, k, n_group, topk_group, scaling, T,
                                             topk_smem);
}

static_assert(kRouterWarps == kTopkWarps, "the top-k runs in a logits block");

} // namespace

size_t router_topk_smem(int E, int T) { return (size_t)T * E * 4 + (size_t)E * 4 + (size_t)T * E * 2; }

namespace {

template <int T, int NL>
cudaError_t launch_router(const launch_ctx &c, const bf16 *h, const bf16 *W, const float *bias, float *logits,
                          const moe_route &rt, int H, int E, int k, int n_group, int topk_group, float scaling,
                          unsigned *ticket)
{
    const size_t smem = router_topk_smem(E, T);
    if (smem > 48 * 1024) { // beyond the default dynamic limit (E > 800 at T = 8): opt in
        const cudaError_t err =
            cudaFuncSetAttribute(router_kernel<T, NL>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (err != cudaSuccess)
            return err;
    }
    return launch(c, router_kernel<T, NL>, dim3(E), dim3(kRouterWarps * kWarp), smem, h, W, bias, logits, rt, H, E, k,
                  n_group, topk_group, scaling, ticket);
}

template <int T>
cudaError_t router_t(const launch_ctx &c, const bf16 *h, const bf16 *W, const float *bias, float *logits,
                     const moe_route &rt, int H, int E, int k, int n_group, int topk_group, float scaling,
                     unsigned *ticket)
{
    const int nl = (E + kWarp - 1) / kWarp;
    if (nl <= 4)
        return launch_router<T, 4>(c, h, W, bias, logits, rt, H, E, k, n_group, topk_group, scaling, ticket);
    if (nl <= 8)
        return launch_router<T, 8>(c, h, W, bias, logits, rt, H, E, k, n_group, topk_group, scaling, ticket);
    if (nl <= 12)
        return launch_router<T, 12>(c, h, W, bias, logits, rt, H, E, k, n_group, topk_group, scaling, ticket);
    if (nl <= 16)
        return launch_router<T, 16>(c, h, W, bias, logits, rt, H, E, k, n_group, topk_group, scaling, ticket);
    return launch_router<T, kMaxExperts / kWarp>(c, h, W, bias, logits, rt, H, E, k, n_group, topk_group, scaling,
                                                 ticket);
}

} // namespace

cudaError_t router(const launch_ctx &c, const bf16 *h, const bf16 *W, const float *bias, float *logits,
                   const moe_route &rt, int H, int E, int k, int n_group, int topk_group, float scaling,
                   unsigned *ticket, int T)
{
    if (E > kMaxExperts || k > kMaxTopk || n_group > kMaxGroups || n_group < 1 || E % n_group || H % 8 || T < 1 ||
        T > kMaxT || !ticket)
        return cudaErrorInvalidValue;
    return with_t(T, [&](auto t) {
        return router_t<decltype(t)::value>(c, h, W, bias, logits, rt, H, E, k, n_group, topk_group, scaling, ticket);
    });
}

ARB_TL_TU(router)

} // namespace arbk
