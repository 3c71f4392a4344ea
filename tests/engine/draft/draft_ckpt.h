/* SPDX-License-Identifier: MIT */
/*
 * For the tests: an EAGLE-3 draft head written as SpecForge writes one (config.json with
 * LlamaForCausalLMEagle3, draft_vocab_size and eagle_config; model.safetensors with fc,
 * midlayer.*, norm, lm_head, d2t I64 and t2d BOOL), from weights the test chooses, spoilt
 * one way if asked.
 */
#ifndef ARB_TESTS_DRAFT_CKPT_H
#define ARB_TESTS_DRAFT_CKPT_H

#include <stddef.h>
#include <stdint.h>

typedef struct draft_dims {
    unsigned H, I, nh, nkv, hd, V, Vd;
    unsigned aux[3];
} draft_dims_t;

typedef struct draft_tensors {
    uint16_t *fc, *in_norm, *hidden_norm, *post_norm, *norm; /* [H x 3H], [H] x 4 */
    uint16_t *q, *k, *v, *o;                                 /* [nh hd x 2H], [nkv hd x 2H] x 2, [H x nh hd] */
    uint16_t *gate, *up, *down;                              /* [I x H] x 2, [H x I] */
    uint16_t *lm_head;                                       /* [Vd x H] */
    int64_t *d2t;                                            /* [Vd] */
} draft_tensors_t;

/* Zeroed tensors of dims d (norms zero too); 0 on success. */
int draft_alloc(const draft_dims_t *d, draft_tensors_t *w);
void draft_free(draft_tensors_t *w);

/* Spoils: "none", "missing" (no lm_head.weight), "shape" (q_proj one column wider), "dtype"
 * (fc stored F16), "d2t" (a draft id mapped past the vocabulary), "hidden" (config.json
 * hidden_size 32), "arch" (architectures LlamaForCausalLM), "truncated" (the safetensors
 * file cut inside its data); "split" is no spoil: the tensors alternate between two shard
 * files named by model.safetensors.index.json. Writes into the existing folder dir; 0 on
 * success. */
int draft_write(const char *dir, const draft_dims_t *d, const draft_tensors_t *w, const char *spoil);

#endif
