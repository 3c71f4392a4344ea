// SPDX-License-Identifier: MIT
// The timeline's host side (timeline.cuh): every instrumented file's buffer set at once, the
// tags' names. In a build without ARB_TIMELINE the setters do not exist and tl_attach says so.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/timeline.cuh"

// The files that hold instrumented kernels (each ends in ARB_TL_TU(name)).
#define ARB_TL_FILES(X)                                                                                                \
    X(argmax) X(embed) X(gemv) X(l2_pull) X(mla) X(mla_prep) X(mla_qb) X(mla_split) X(moe) X(persist) X(router)

namespace arbk {

#if ARB_TIMELINE
#define ARB_TL_DECLARE(name) cudaError_t tl_attach_##name(const tl_buf &b);
ARB_TL_FILES(ARB_TL_DECLARE)
#undef ARB_TL_DECLARE

cudaError_t tl_attach(const tl_buf &b)
{
    cudaError_t e = cudaSuccess;
#define ARB_TL_CALL(name)                                                                                              \
    if (e == cudaSuccess)                                                                                              \
        e = tl_attach_##name(b);
    ARB_TL_FILES(ARB_TL_CALL)
#undef ARB_TL_CALL
    return e;
}
#else
cudaError_t tl_attach(const tl_buf &) { return cudaErrorNotSupported; }
#endif

} // namespace arbk

extern "C" const char *arb_tl_tag_name(unsigned tag)
{
    static const char *const names[] = {"embed",   "gemv",         "gemv_pairs", "qkva_prep", "mla_prep",
                                        "absorb",  "qb_absorb",    "attend",     "merge",     "merge_uv",
                                        "uv",      "router",       "gate_up",    "down",      "argmax",
                                        "l2_pull", "persist_attn", "persist_moe"};
    static_assert(sizeof names / sizeof names[0] == ARB_TL_TAGS, "a name for every tag");
    return tag < ARB_TL_TAGS ? names[tag] : "?";
}

extern "C" int arb_tl_built(void) { return ARB_TIMELINE; }
