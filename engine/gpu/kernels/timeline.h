/* SPDX-License-Identifier: MIT */
/* The step's timeline records (timeline.cuh says how kernels write them; C and C++): one
 * per CTA of an instrumented kernel, its thread 0's stamps on the global timer (g*, ns) and
 * on its SM's cycle counter (c*): at the start (0), at the return of its PDL wait (w; 0 in
 * a kernel that does not wait or before the wait returned) and at the end (1). Only a build
 * with -Dengine_timeline=true writes them (ARB_TIMELINE). */
#ifndef ARB_ENGINE_KERNELS_TIMELINE_H
#define ARB_ENGINE_KERNELS_TIMELINE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct arb_tl_rec {
    uint32_t tag;    /* arb_tl_tag_t */
    uint32_t launch; /* which launch of this tag in the recorded span, from 0 (the device writes
                        the CTA's ordinal among the tag's CTAs: arb_tl_number_launches) */
    uint32_t block;  /* linear block index */
    uint32_t sm;     /* %smid */
    uint32_t grid;   /* blocks in the CTA's launch */
    uint32_t pad_;
    uint64_t g0, gw, g1;
    uint64_t c0, cw, c1;
} arb_tl_rec_t;

/* The instrumented kernels (one tag each; a kernel that serves several kinds of the step, as
 * the GEMV, is told apart by its place in the launch order: ci/timeline.py). */
typedef enum arb_tl_tag {
    ARB_TL_EMBED = 0,
    ARB_TL_GEMV,
    ARB_TL_GEMV_PAIRS,
    ARB_TL_QKVA_PREP,
    ARB_TL_MLA_PREP,
    ARB_TL_ABSORB,
    ARB_TL_QB_ABSORB,
    ARB_TL_ATTEND,
    ARB_TL_MERGE,
    ARB_TL_MERGE_UV,
    ARB_TL_UV,
    ARB_TL_ROUTER,
    ARB_TL_GATE_UP,
    ARB_TL_DOWN,
    ARB_TL_ARGMAX,
    ARB_TL_L2_PULL,
    ARB_TL_PERSIST_ATTN,
    ARB_TL_PERSIST_MOE,
    ARB_TL_TAGS
} arb_tl_tag_t;

/* The tag's name ("gate_up"), "?" outside the enum. */
const char *arb_tl_tag_name(unsigned tag);

/* 1 in a build that records the timeline, else 0. */
int arb_tl_built(void);

/* Each record's launch from the CTA ordinal the device wrote there (engine/gpu/timeline_launches.c,
 * plain C): every CTA of one launch of a tag starts before any of the next (kernels that wait on
 * it run between them), so a launch's ordinals are contiguous and, per tag in ordinal order,
 * launch k holds the ordinals s_k .. s_k + grid - 1 from its first CTA's s_k. Launches of one tag
 * may have different grids (the GEMV's o_proj, dense and lm_head). Records past the buffer's room
 * are the last CTAs to start, so every launch but the last kept keeps its first. Returns 0, or -1
 * with the reason in why (an ordinal twice, a grid of 0, a block outside its grid) and the records
 * as they were. */
int arb_tl_number_launches(arb_tl_rec_t *r, size_t n, char *why, size_t why_len);

#ifdef __cplusplus
}

#include <cuda_runtime_api.h>

namespace arbk {
using tl_rec = arb_tl_rec_t;
// A file's buffer (timeline.cuh's c_tl): cap records, the records used, a CTA counter per tag.
struct tl_buf {
    tl_rec *rec;
    unsigned *count;
    unsigned *per_tag;
    unsigned cap;
    unsigned mark; // 0, or the ARB_TL_MARK(k) whose place takes the wait's stamp (gpu_timeline.cu)
};
// The marks a kernel may have: 1 .. kTlMarks (mla_qb.cu has them all).
constexpr unsigned kTlMarks = 6;
// Every instrumented file's buffer set to b (all zero: recording off). cudaErrorNotSupported in
// a build without ARB_TIMELINE.
cudaError_t tl_attach(const tl_buf &b);
} // namespace arbk
#endif

#endif
