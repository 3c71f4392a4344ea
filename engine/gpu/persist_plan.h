/* SPDX-License-Identifier: MIT */
/*
 * The persistent form's instruction lists (engine/gpu/persist.h), built on the host: a
 * segment of a layer (the ops between two call sites) is a chain of stages, stage s a
 * grid of tiles[s] independent tiles (one block index of the op's kernel form), every tile
 * of stage s reading what stage s - 1 (and, through it, every earlier stage) wrote. Each of
 * nctas resident CTAs gets a list of (stage, tile) entries in ascending stage order; a CTA
 * finishing its tiles of a stage adds their number to the stage's counter (release), and a
 * CTA waits, before its first tile of stage s, until stage s - 1's counter equals
 * tiles[s - 1] (acquire). With
 * every CTA resident and lists in stage order no wait can close a cycle, so there is no
 * grid barrier and no deadlock. Plain C (the planner is tested without a GPU).
 */
#ifndef ARB_ENGINE_GPU_PERSIST_PLAN_H
#define ARB_ENGINE_GPU_PERSIST_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "arbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ARB_PERSIST_MAX_STAGES 16u
#define ARB_PERSIST_MAX_TILES (1u << 24) /* a tile index fits the entry's low 24 bits */

typedef struct arb_persist_plan {
    unsigned nstages;
    unsigned tiles[ARB_PERSIST_MAX_STAGES];
    unsigned nctas;
    uint32_t *off; /* [nctas + 1]: CTA c's entries are ent[off[c] .. off[c + 1]) */
    uint32_t *ent; /* [sum of tiles]: stage << 24 | tile */
} arb_persist_plan_t;

/* The entry of (stage, tile) and back. */
static inline uint32_t arb_persist_entry(unsigned stage, unsigned tile) { return (uint32_t)stage << 24 | tile; }
static inline unsigned arb_persist_stage(uint32_t e) { return e >> 24; }
static inline unsigned arb_persist_tile(uint32_t e) { return e & (ARB_PERSIST_MAX_TILES - 1); }

/* Lists for `nstages` stages of tiles[] over nctas CTAs: stage s's tiles go round-robin
 * from the CTA after the one that took stage s - 1's last tile, so a stage of few tiles
 * lands on CTAs that had less of the one before. Refuses (naming the value) no stages,
 * more than ARB_PERSIST_MAX_STAGES, a stage of no tiles or of ARB_PERSIST_MAX_TILES or
 * more, no CTAs. On success the plan owns two allocations (arb_persist_plan_free). */
arb_status_t arb_persist_plan_build(const unsigned *tiles, unsigned nstages, unsigned nctas, arb_persist_plan_t *p,
                                    char *why, size_t why_len);

/* What the device relies on: every (stage, tile) exactly once, each CTA's entries in
 * non-decreasing stage order, offsets ascending to the total. */
arb_status_t arb_persist_plan_check(const arb_persist_plan_t *p, char *why, size_t why_len);

void arb_persist_plan_free(arb_persist_plan_t *p);

#ifdef __cplusplus
}
#endif

#endif
