/* SPDX-License-Identifier: MIT */
/*
 * arb-weights-check DIR [--config FILE] [--tp-shape K] [--layers L]: is the Hugging Face
 * checkpoint in DIR one the engine can load? Reads config.json (DIR/config.json unless
 * --config; Kimi-K2.5's text_config nesting too) and its quantization_config, opens every
 * shard of the index, finds the names' prefix (Kimi-K2.5: language_model.), and for each rank of --tp-shape K (default 1) checks every tensor the
 * rank reads (name, shape from the config, dtype; INT4 experts' weight_shape) and prints
 * the tensors and bytes it would read. Nothing is loaded to a GPU.
 * Exit 0: loadable; 1: refused (the message names the tensor, the file and what was
 * expected); 2: bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "model/shard.h"
#include "weights/index.h"
#include "weights/names.h"
#include "weights/quant.h"
#include "weights/slice.h"

static int usage(void)
{
    fprintf(stderr, "usage: arb-weights-check DIR [--config FILE] [--tp-shape K] [--layers L]\n");
    return 2;
}

static int parse_uint(const char *s, unsigned *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || v == 0 || v > 1u << 20)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static int check_rank(const arb_model_config_t *cfg, const arb_ckpt_quant_t *q, const arb_ckpt_t *ck,
                      const char *prefix, unsigned k, unsigned r, char *why, size_t len)
{
    const arb_weight_format_t wf = q->experts;
    arb_shard_t sh;
    arb_wplan_t plan;
    uint64_t bytes = 0;
    if (arb_shard_make(cfg, k, r, wf, &sh, why, len) != ARB_OK ||
        arb_wplan_make(cfg, wf, &sh, prefix, &plan, why, len) != ARB_OK)
        return -1;
    plan.fp8 = q->fp8;
    arb_status_t st = arb_wplan_check(&plan, ck, &bytes, why, len);
    if (st == ARB_OK)
        printf("rank %u of %u: %zu tensors, %llu bytes (%.3f GB) to read\n", r, k, plan.n, (unsigned long long)bytes,
               (double)bytes / 1e9);
    arb_wplan_free(&plan);
    return st == ARB_OK ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *config = NULL;
    unsigned k = 1;
    arb_config_overrides_t ov = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            config = argv[++i];
        else if (strcmp(argv[i], "--tp-shape") == 0 && i + 1 < argc) {
            if (parse_uint(argv[++i], &k) != 0) {
                fprintf(stderr, "arb-weights-check: --tp-shape '%s': expected a positive integer\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--layers") == 0 && i + 1 < argc) {
            if (parse_uint(argv[++i], &ov.layers) != 0) {
                fprintf(stderr, "arb-weights-check: --layers '%s': expected a positive integer\n", argv[i]);
                return 2;
            }
        } else if (argv[i][0] == '-' || dir) {
            return usage();
        } else {
            dir = argv[i];
        }
    }
    if (!dir)
        return usage();
    char cfg_path[1200], why[2048];
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", dir);
    if (!config)
        config = cfg_path;
    arb_model_config_t cfg;
    arb_ckpt_quant_t q;
    if (arb_config_load(config, &cfg, why, sizeof why) != ARB_OK ||
        arb_config_override(&cfg, &ov, why, sizeof why) != ARB_OK ||
        arb_weights_quant_load(config, &q, why, sizeof why) != ARB_OK) {
        fprintf(stderr, "arb-weights-check: %s\n", why);
        return 1;
    }
    arb_ckpt_t ck;
    if (arb_ckpt_open(dir, &ck, why, sizeof why) != ARB_OK) {
        fprintf(stderr, "arb-weights-check: %s\n", why);
        return 1;
    }
    const char *prefix = arb_wplan_detect_prefix(&ck);
    if (!prefix) {
        fprintf(stderr,
                "arb-weights-check: %s: neither model.embed_tokens.weight nor language_model.model.embed_tokens.weight "
                "is there (expected a DeepSeek-V3-family checkpoint)\n",
                dir);
        arb_ckpt_close(&ck);
        return 1;
    }
    printf("%s: %zu tensors in %zu shard file(s); %s, %u layers, routed experts %s%s%s%s%s\n", dir, ck.n, ck.nshards,
           cfg.model_type_str, cfg.num_hidden_layers,
           q.experts == ARB_WEIGHTS_INT4 ? "INT4 (compressed-tensors)" : "bf16",
           cfg.nested_text_config ? " (config under text_config)" : "", prefix[0] ? "; names under " : "", prefix,
           q.fp8 ? "; FP8 128x128 blocks (dequantized to bf16 at load)" : "");
    int rc = 0;
    for (unsigned r = 0; r < k && rc == 0; r++)
        if (check_rank(&cfg, &q, &ck, prefix, k, r, why, sizeof why) != 0) {
            fprintf(stderr, "arb-weights-check: %s\n", why);
            rc = 1;
        }
    arb_ckpt_close(&ck);
    return rc;
}
