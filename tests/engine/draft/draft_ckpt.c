/* SPDX-License-Identifier: MIT */
/* For the tests: an EAGLE-3 draft head on disk (tests/engine/draft/draft_ckpt.h). */
#include "draft_ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "st_write.h"

int draft_alloc(const draft_dims_t *d, draft_tensors_t *w)
{
    const size_t H = d->H, qd = (size_t)d->nh * d->hd, kd = (size_t)d->nkv * d->hd;
    memset(w, 0, sizeof *w);
    w->fc = calloc(H * 3 * H, 2);
    w->in_norm = calloc(H, 2), w->hidden_norm = calloc(H, 2), w->post_norm = calloc(H, 2), w->norm = calloc(H, 2);
    w->q = calloc(qd * 2 * H, 2), w->k = calloc(kd * 2 * H, 2), w->v = calloc(kd * 2 * H, 2), w->o = calloc(H * qd, 2);
    w->gate = calloc((size_t)d->I * H, 2), w->up = calloc((size_t)d->I * H, 2), w->down = calloc(H * d->I, 2);
    w->lm_head = calloc((size_t)d->Vd * H, 2);
    w->d2t = calloc(d->Vd, sizeof *w->d2t);
    return w->fc && w->in_norm && w->hidden_norm && w->post_norm && w->norm && w->q && w->k && w->v && w->o &&
                   w->gate && w->up && w->down && w->lm_head && w->d2t
               ? 0
               : -1;
}

void draft_free(draft_tensors_t *w)
{
    void *ps[] = {w->fc, w->in_norm, w->hidden_norm, w->post_norm, w->norm, w->q,       w->k,
                  w->v,  w->o,       w->gate,        w->up,        w->down, w->lm_head, w->d2t};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
        free(ps[i]);
    memset(w, 0, sizeof *w);
}

static int write_config(const char *dir, const draft_dims_t *d, const char *spoil)
{
    char path[4200], text[2048];
    snprintf(path, sizeof path, "%s/config.json", dir);
    snprintf(
        text, sizeof text,
        "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"llama\",\n  \"hidden_act\": \"silu\",\n"
        "  \"hidden_size\": %u,\n  \"intermediate_size\": %u,\n  \"num_attention_heads\": %u,\n"
        "  \"num_key_value_heads\": %u,\n  \"head_dim\": %u,\n  \"num_hidden_layers\": 1,\n"
        "  \"rms_norm_eps\": 1e-06,\n  \"rope_theta\": 10000.0,\n  \"rope_scaling\": null,\n"
        "  \"tie_word_embeddings\": false,\n  \"vocab_size\": %u,\n  \"draft_vocab_size\": %u,\n"
        "  \"eagle_config\": {\"eagle_aux_hidden_state_layer_ids\": [%u, %u, %u], \"use_aux_hidden_state\": true}\n}\n",
        strcmp(spoil, "arch") == 0 ? "LlamaForCausalLM" : "LlamaForCausalLMEagle3",
        strcmp(spoil, "hidden") == 0 ? 32 : d->H, d->I, d->nh, d->nkv, d->hd, d->V, d->Vd, d->aux[0], d->aux[1],
        d->aux[2]);
    return st_write_text(path, text);
}

int draft_write(const char *dir, const draft_dims_t *d, const draft_tensors_t *w, const char *spoil)
{
    const uint64_t H = d->H, qd = (uint64_t)d->nh * d->hd, kd = (uint64_t)d->nkv * d->hd;
    uint8_t *t2d = malloc(d->V);
    int64_t *d2t = malloc(d->Vd * sizeof *d2t);
    uint16_t *wide = calloc(qd * (2 * H + 1), 2);
    if (!t2d || !d2t || !wide || write_config(dir, d, spoil)) {
        free(t2d), free(d2t), free(wide);
        return -1;
    }
    memset(t2d, 1, d->V);
    memcpy(d2t, w->d2t, d->Vd * sizeof *d2t);
    if (strcmp(spoil, "d2t") == 0)
        d2t[d->Vd - 1] = (int64_t)d->V; /* draft id Vd - 1 -> target id V + Vd - 1 */
    int shape = strcmp(spoil, "shape") == 0;
    st_w_tensor_t t[] = {
        {"fc.weight", strcmp(spoil, "dtype") == 0 ? "F16" : "BF16", 2, {H, 3 * H}, w->fc, H * 3 * H * 2},
        {"midlayer.input_layernorm.weight", "BF16", 1, {H}, w->in_norm, H * 2},
        {"midlayer.hidden_norm.weight", "BF16", 1, {H}, w->hidden_norm, H * 2},
        {"midlayer.self_attn.q_proj.weight",
         "BF16",
         2,
         {qd, 2 * H + shape},
         shape ? wide : w->q,
         qd * (2 * H + shape) * 2},
        {"midlayer.self_attn.k_proj.weight", "BF16", 2, {kd, 2 * H}, w->k, kd * 2 * H * 2},
        {"midlayer.self_attn.v_proj.weight", "BF16", 2, {kd, 2 * H}, w->v, kd * 2 * H * 2},
        {"midlayer.self_attn.o_proj.weight", "BF16", 2, {H, qd}, w->o, H * qd * 2},
        {"midlayer.post_attention_layernorm.weight", "BF16", 1, {H}, w->post_norm, H * 2},
        {"midlayer.mlp.gate_proj.weight", "BF16", 2, {d->I, H}, w->gate, (size_t)d->I * H * 2},
        {"midlayer.mlp.up_proj.weight", "BF16", 2, {d->I, H}, w->up, (size_t)d->I * H * 2},
        {"midlayer.mlp.down_proj.weight", "BF16", 2, {H, d->I}, w->down, (size_t)d->I * H * 2},
        {"norm.weight", "BF16", 1, {H}, w->norm, H * 2},
        {"d2t", "I64", 1, {d->Vd}, d2t, d->Vd * sizeof *d2t},
        {"t2d", "BOOL", 1, {d->V}, t2d, d->V},
        {"lm_head.weight", "BF16", 2, {d->Vd, H}, w->lm_head, (size_t)d->Vd * H * 2}, /* last: "missing" drops it */
    };
    char path[4200];
    size_t n = sizeof t / sizeof t[0] - (strcmp(spoil, "missing") == 0);
    int rc;
    if (strcmp(spoil, "split") == 0) { /* two shard files, tensors alternating, and the index */
        st_w_tensor_t part[2][16];
        size_t np[2] = {0, 0}, used = 0;
        char index[8192];
        used += (size_t)snprintf(index, sizeof index, "{\"metadata\": {}, \"weight_map\": {");
        for (size_t i = 0; i < n; i++) {
            part[i % 2][np[i % 2]++] = t[i];
            used +=
                (size_t)snprintf(index + used, sizeof index - used, "%s\"%s\": \"model-0000%zu-of-00002.safetensors\"",
                                 i ? ", " : "", t[i].name, i % 2 + 1);
        }
        snprintf(index + used, sizeof index - used, "}}\n");
        rc = 0;
        for (int f = 0; f < 2 && rc == 0; f++) {
            snprintf(path, sizeof path, "%s/model-0000%d-of-00002.safetensors", dir, f + 1);
            rc = st_write(path, part[f], np[f]);
        }
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        if (rc == 0)
            rc = st_write_text(path, index);
        free(t2d), free(d2t), free(wide);
        return rc;
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    rc = st_write(path, t, n);
    if (rc == 0 && strcmp(spoil, "truncated") == 0)
        rc = truncate(path, 4096); /* inside the data: the header's offsets pass the end */
    free(t2d), free(d2t), free(wide);
    return rc;
}
