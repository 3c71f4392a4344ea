/* SPDX-License-Identifier: MIT */
/*
 * An EAGLE-3 draft head's config.json (SGLang's / SpecForge's LlamaForCausalLMEagle3,
 * engine/draft/README.md): one Llama decoder layer whose q/k/v read 2 x hidden (the
 * input-normed token embedding, then the hidden-normed fused state), an `fc` fusing three
 * of the target's hidden states, its own lm_head over `draft_vocab_size` tokens and the
 * draft-to-target token map. Checked against the target's config (after overrides):
 * hidden_size equal (target_hidden_size absent or equal), vocab_size equal, the three
 * fused layers inside the target. Refused, naming the file and the field: another
 * architecture, more than one layer, tied embeddings, a bias, an activation other than
 * silu, rope_scaling other than null, splits that are not exact.
 */
#ifndef ARB_ENGINE_DRAFT_CONFIG_H
#define ARB_ENGINE_DRAFT_CONFIG_H

#include <stddef.h>

#include "model/config.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ARB_DRAFT_AUX 3u /* target hidden states fused by fc */

typedef struct arb_draft_config {
    char source[1024];          /* the config.json read */
    unsigned hidden_size;       /* H (= the target's) */
    unsigned intermediate_size; /* I of the draft's MLP */
    unsigned num_attention_heads, num_key_value_heads, head_dim;
    unsigned vocab_size;       /* the target's vocabulary */
    unsigned draft_vocab_size; /* Vd: rows of lm_head and entries of d2t */
    double rms_norm_eps, rope_theta;
    /* target layers whose output (the residual stream after the layer) feeds fc, ascending:
     * eagle_config.eagle_aux_hidden_state_layer_ids, or SGLang's default for a target of L
     * layers, the inputs of layers 2, L/2, L-3 (outputs of 1, L/2-1, L-4) */
    unsigned aux_layers[ARB_DRAFT_AUX];
    int aux_from_file; /* 1: eagle_config gave them */
} arb_draft_config_t;

/* Reads DIR/config.json (`path` the file itself) and checks it against the target. */
arb_status_t arb_draft_config_load(const char *path, const arb_model_config_t *target, arb_draft_config_t *d, char *why,
                                   size_t why_len);
/* The same from JSON text; origin names it in messages. */
arb_status_t arb_draft_config_parse(const char *json_text, const char *origin, const arb_model_config_t *target,
                                    arb_draft_config_t *d, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
