/* SPDX-License-Identifier: MIT */
/*
 * The draft of the speculative cycles (docs/engine-e2e.md): one propose path, two drafts.
 *
 * With --draft-dir DIR, the EAGLE-3 head of DIR (engine/draft: config.json and weights
 * read per rank through engine/weights, sharded like the target, its forward on the
 * target's backend (draft_cpu.h, or draft_gpu.h on the GPU, where it reads the target's
 * states and embedding on the device) on the call sites of the target's layer 0, 2
 * all-reduces per draft step). It reads the target's
 * hidden states after three layers (the backend's aux_hidden or device_inputs) and the target's embedding:
 * its cache row at position p fuses the target's states at p with the embedding of the
 * token at p + 1 and predicts the token at p + 2. A cycle at cache length C first catches
 * up on the rows the target has verified since (positions len .. C - 1, one step), whose
 * last row proposes d_1, then k - 1 one-row steps on its own pre-norm output and the
 * proposed tokens (d_2 .. d_k); after the verify its valid rows end at C (the rows past it
 * read its own states, and are redone from the target's next cycle, as SGLang's draft
 * extend does). Greedy, its argmax over the draft vocabulary mapped by d2t.
 *
 * Without it, a stand-in with the target's configuration and one dense decoder layer at the
 * same hidden size (arb_draft_config), on the target's backend and the same call sites; it
 * reads only the token. Prefilled with the prompt; per cycle it catches up on the positions
 * it has not seen, then k one-token steps whose greedy outputs are its proposals.
 *
 * Either way each proposal passes through the cycle's draw (engine/stats/spec.h) before
 * the draft's next step reads it: planted with --accept-rate, measured with --draft-dir.
 */
#ifndef ARB_ENGINE_RUN_DRAFT_H
#define ARB_ENGINE_RUN_DRAFT_H

#include <stddef.h>
#include <stdint.h>

#include "draft/draft_cpu.h"
#include "draft/draft_gpu.h"
#include "run/step.h"

typedef struct arb_run_draft {
    arb_stepper_t *target;
    arb_stepper_t step;             /* the stand-in on the target's backend and sites */
    arb_draft_cpu_t *head;          /* the EAGLE-3 head (--draft-dir) on the CPU backend, or NULL */
    arb_draft_gpu_t *ghead;         /* the same on the GPU backend, or NULL */
    uint16_t *aux, *embed, *hidden; /* the head's inputs: [max_T x 3H], [max_T x H], [H] */
    uint32_t *hist;                 /* [positions]: the token at each position */
    uint32_t own[ARB_SPEC_MAX_K];   /* the last cycle's proposals before the draw */
    unsigned len;                   /* positions (from 0) the draft's cache holds */
    unsigned cap;
} arb_run_draft_t;

/* The stand-in's configuration: the target's with one (dense) decoder layer. */
void arb_draft_config(const arb_model_config_t *target, arb_model_config_t *draft);

/* Collective: --draft-dir's config.json and this rank's tensors checked against the target
 * (nothing read yet), the target told which hidden states to keep; refused with
 * --context 0. Nothing to do without --draft-dir. */
arb_status_t arb_run_draft_setup(arb_engine_run_t *r, char *why, size_t len);

/* Collective: builds the draft (the head's weights read) and brings its cache to the
 * prompt. Steps in the target's mode. */
arb_status_t arb_run_draft_open(arb_stepper_t *target, arb_run_draft_t *d, char *why, size_t len);
/* Collective: the k proposals after `first` at position pos (the target's cache length),
 * each through arb_spec_plant_apply(plant, j, .) before the next step reads it; *us the
 * steps' time (each step's the maximum over ranks). */
arb_status_t arb_run_draft_propose(arb_run_draft_t *d, uint32_t first, unsigned k, unsigned pos,
                                   const arb_spec_plant_t *plant, uint32_t *drafts, double *us, char *why, size_t len);
/* After the verify: positions pos .. pos + n - 1 hold tokens[0..n) (the cycle's first input
 * and the accepted drafts); the draft's valid rows are cut to what the target confirmed. */
void arb_run_draft_accept(arb_run_draft_t *d, const uint32_t *tokens, unsigned n, unsigned pos);
void arb_run_draft_close(arb_run_draft_t *d);

#endif
