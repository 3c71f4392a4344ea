// SPDX-License-Identifier: MIT
// What the GPU kernel tests share: the launch context, a seeded generator of bf16 inputs,
// device copies, a tolerance counter that reports the worst case, the router's buffers.
#ifndef ARB_TESTS_ENGINE_GPU_CHECK_H
#define ARB_TESTS_ENGINE_GPU_CHECK_H

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "tap.h"
#include "gpu/kernels/kernels.h"
#include "rmsnorm/rmsnorm.h"

namespace {

using arbk::bf16;

const arbk::launch_ctx g_lc = {nullptr, 1, {}, 0, 0, 0, 0};

uint64_t g_rng = 0x1234567;
float frand() // uniform in (-1, 1)
{
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return ((g_rng >> 40) + 0.5f) / 8388608.0f - 1.0f;
}
double bfd(uint16_t h) { return arb_bf16_to_f32(h); }
std::vector<uint16_t> rand_bf(size_t n, float scale)
{
    std::vector<uint16_t> v(n);
    for (auto &x : v)
        x = arb_f32_to_bf16(scale * frand());
    return v;
}

template <typename T> T *to_dev(const std::vector<T> &h)
{
    T *d = nullptr;
    if (cudaMalloc(&d, h.size() * sizeof(T) + 16) != cudaSuccess)
        return nullptr;
    cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
    return d;
}
template <typename T> std::vector<T> from_dev(const T *d, size_t n)
{
    std::vector<T> h(n);
    cudaDeviceSynchronize();
    cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
}

// got within tol_abs + rel * |ref| of ref, else counted (and the first few printed).
struct cmp {
    const char *what;
    size_t bad = 0, n = 0;
    double worst = 0;
    void operator()(double got, double ref, double tol)
    {
        n++;
        const double d = std::isfinite(got) ? fabs(got - ref) : INFINITY;
        if (d / (tol > 0 ? tol : 1e-30) > worst)
            worst = d / (tol > 0 ? tol : 1e-30);
        if (!(d <= tol) && bad++ < 4)
            tap_diag("%s[%zu]: got %.7g, want %.7g (tolerance %.3g)", what, n - 1, got, ref, tol);
    }
    bool ok()
    {
        tap_diag("%s: %zu values, %zu outside, worst %.3f of the tolerance", what, n, bad, worst);
        return bad == 0 && n > 0;
    }
};

struct route_dev {
    arbk::moe_route rt;
    int32_t *experts;
    unsigned *ticket; // the router's last-block ticket, zero
};
// H, Is: the MoE block's shapes, for the shared expert's parts (0, 0: the router alone).
route_dev alloc_route(int T, int k, int H = 0, int Is = 0)
{
    route_dev r{};
    if (const size_t np = H && Is ? arbk::moe_sh_part_floats(H, Is) : 0) {
        cudaMalloc(&r.rt.sh_part, sizeof(float) * np);
        cudaMalloc(&r.rt.sh_ticket, sizeof(unsigned) * arbk::moe_sh_tickets(Is));
        cudaMemset(r.rt.sh_ticket, 0, sizeof(unsigned) * arbk::moe_sh_tickets(Is));
    }
    cudaMalloc(&r.ticket, sizeof(unsigned));
    cudaMemset(r.ticket, 0, sizeof(unsigned));
    cudaMalloc(&r.experts, sizeof(int32_t) * T * k);
    cudaMalloc(&r.rt.coef, sizeof(float) * arbk::kMaxSlots * arbk::moe_tstride(arbk::kMoeMaxT)); // any T's stride
    cudaMalloc(&r.rt.uniq, sizeof(int32_t) * arbk::kMaxSlots);
    cudaMalloc(&r.rt.n_uniq, sizeof(int32_t));
    r.rt.experts = r.experts;
    return r;
}

// tap_main, or exit 77 (meson's skip) with a TAP plan of none where no CUDA device is visible.
int gpu_tap_main(const tap_test_t *tests, size_t n, int argc, char **argv)
{
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("1..0 # SKIP no CUDA device visible\n");
        return 77;
    }
    return tap_main(tests, n, argc, argv);
}

} // namespace

#endif
