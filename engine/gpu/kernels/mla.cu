// SPDX-License-Identifier: MIT
// MLA weight absorption (forward.md): qlat[t,h] = q_nope[t,h] @ W_uk[h] and
// qpe[t,h] = rope(q_pe[t,h], P0 + t); the attention itself is mla_split.cu's.
// W_uk[h] and W_uv[h] are rows of this rank's kv_b shard: per head dn rows of W_uk then
// dv rows of W_uv, each of kv_lora columns. Rows of a step are r = t * nh_r + h.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/mla_ops.cuh"

namespace arbk {
namespace {

__global__ void __launch_bounds__(kAbsorbWarps *kWarp)
    mla_absorb_kernel(const bf16 *__restrict__ q, const bf16 *__restrict__ kv_b, const float2 *__restrict__ rope_cs,
                      const int32_t *__restrict__ pos0, bf16 *__restrict__ qlat, bf16 *__restrict__ qpe, int nh_r,
                      int dn, int dr, int dv, int rkv, int T, l2_ahead ahead)
{
    ARB_TL(ARB_TL_ABSORB);
    __shared__ __align__(16) float sm[kAbsorbSmem / sizeof(float)];
    mla_absorb_tile(pdl_sync(), q, kv_b, rope_cs, pos0, qlat, qpe, nh_r, dn, dr, dv, rkv, T, (int)blockIdx.x,
                    (int)blockIdx.y, (int)gridDim.y, sm, ahead);
}

} // namespace

cudaError_t mla_absorb(const launch_ctx &c, const bf16 *q, const bf16 *kv_b, const float2 *rope_cs,
                       const int32_t *pos0, bf16 *qlat, bf16 *qpe, int nh_r, int dn, int dr, int dv, int rkv, int T)
{
    const dim3 grid(nh_r, mla_absorb_gy(rkv));
    return launch(c, mla_absorb_kernel, grid, dim3(kAbsorbWarps * kWarp), 0, q, kv_b, rope_cs, pos0, qlat, qpe, nh_r,
                  dn, dr, dv, rkv, T, c.ahead);
}

ARB_TL_TU(mla)

} // namespace arbk
