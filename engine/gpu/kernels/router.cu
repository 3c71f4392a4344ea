// SPDX-License-Identifier: MIT
// The MoE router in two launches (forward.md):
//   router_logits  logits[t][e] = h[t] . router[e] (fp32): a block per expert row, eight
//                  warps over H, each lane's first vectors loaded before the PDL wait
//   router_topk    one block, launched under PDL behind the logits (the bias staged before
//                  its wait), a warp per token, the picks ranked in parallel (no serial
//                  pick loop: see router_topk_kernel):
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

template <int NL>
__global__ void __launch_bounds__(kTopkWarps *kWarp)
    router_topk_kernel(const float *logits, const float *__restrict__ bias, moe_route rt, int E, int k, int n_group,
                       int topk_group, float scaling, int T)
{
    extern __shared__ float topk_smem[];
    router_topk_tile<NL>(pdl_sync(), logits, bias, rt, E, k, n_group, topk_group, scaling, T, topk_smem);
}

template <int T>
__global__ void __launch_bounds__(kRouterWarps *kWarp)
    router_logits_kernel(const bf16 *__restrict__ h, const bf16 *__restrict__ W, float *__restrict__ logits, int H,
                         int E)
{
    router_logits_tile<T>(pdl_sync(), h, W, logits, H, E, (int)blockIdx.x);
}

} // namespace

size_t router_topk_smem(int E, int T) { return (size_t)T * E * 4 + (size_t)E * 4 + (size_t)T * E * 2; }

namespace {

template <int NL>
cudaError_t launch_topk(const launch_ctx &c, const float *logits, const float *bias, const moe_route &rt, int E,
                        int k, int n_group, int topk_group, float scaling, int T)
{
    const size_t smem = router_topk_smem(E, T);
    if (smem > 48 * 1024) { // beyond the default dynamic limit (E > 800 at T = 8): opt in
        const cudaError_t err = cudaFuncSetAttribute(router_topk_kernel<NL>,
                                                     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (err != cudaSuccess)
            return err;
    }
    return launch(c, router_topk_kernel<NL>, dim3(1), dim3(kTopkWarps * kWarp), smem, logits, bias, rt, E, k,
                  n_group, topk_group, scaling, T);
}

} // namespace

cudaError_t router(const launch_ctx &c, const bf16 *h, const bf16 *W, const float *bias, float *logits,
                   const moe_route &rt, int H, int E, int k, int n_group, int topk_group, float scaling, int T)
{
    if (E > kMaxExperts || k > kMaxTopk || n_group > kMaxGroups || n_group < 1 || E % n_group || H % 8 || T < 1 ||
        T > kMaxT)
        return cudaErrorInvalidValue;
    const dim3 grid(E), block(kRouterWarps * kWarp);
    cudaError_t err = cudaErrorInvalidValue;
    switch (T) {
    case 1: err = launch(c, router_logits_kernel<1>, grid, block, 0, h, W, logits, H, E); break;
    case 2: err = launch(c, router_logits_kernel<2>, grid, block, 0, h, W, logits, H, E); break;
    case 3: err = launch(c, router_logits_kernel<3>, grid, block, 0, h, W, logits, H, E); break;
    case 4: err = launch(c, router_logits_kernel<4>, grid, block, 0, h, W, logits, H, E); break;
    case 5: err = launch(c, router_logits_kernel<5>, grid, block, 0, h, W, logits, H, E); break;
    case 6: err = launch(c, router_logits_kernel<6>, grid, block, 0, h, W, logits, H, E); break;
    case 7: err = launch(c, router_logits_kernel<7>, grid, block, 0, h, W, logits, H, E); break;
    case 8: err = launch(c, router_logits_kernel<8>, grid, block, 0, h, W, logits, H, E); break;
    }
    if (err != cudaSuccess)
        return err;
    const int nl = (E + kWarp - 1) / kWarp;
    if (nl <= 4)
        return launch_topk<4>(c, logits, bias, rt, E, k, n_group, topk_group, scaling, T);
    if (nl <= 8)
        return launch_topk<8>(c, logits, bias, rt, E, k, n_group, topk_group, scaling, T);
    if (nl <= 12)
        return launch_topk<12>(c, logits, bias, rt, E, k, n_group, topk_group, scaling, T);
    if (nl <= 16)
        return launch_topk<16>(c, logits, bias, rt, E, k, n_group, topk_group, scaling, T);
    return launch_topk<kMaxExperts / kWarp>(c, logits, bias, rt, E, k, n_group, topk_group, scaling, T);
}

} // namespace arbk
