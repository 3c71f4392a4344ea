/* SPDX-License-Identifier: MIT */
/* engine/weights/int4_ct.c and quant.c: a hand-packed compressed-tensors word into the
 * engine's nibbles, every value of [-8, 7] in every position, the quantization_config
 * schemes accepted and refused. */
#include <stdint.h>

#include "model/int4.h"
#include "tap.h"
#include "weights/int4_ct.h"
#include "weights/quant.h"

static char why[2048];

/* q = {1, 2, -1, -8, 7, 0, 3, -3}, value j in bits [4j, 4j+4):
 *   compressed-tensors nibbles q + 8 = {9, 10, 7, 0, 15, 8, 11, 5} -> 0x5B8F07A9
 *   engine (two's complement)        = {1, 2, 15, 8, 7, 0, 3, 13}  -> 0xD3078F21 */
static void t_hand_packed(void)
{
    static const int q[8] = {1, 2, -1, -8, 7, 0, 3, -3};
    TAP_EQ_U64((uint32_t)arb_int4_ct_pack8(q), 0x5B8F07A9u);
    TAP_EQ_U64((uint32_t)arb_int4_pack8(q), 0xD3078F21u);
    int32_t w = (int32_t)0x5B8F07A9u;
    TAP_EQ_U64((uint32_t)arb_int4_ct_to_engine(w), 0xD3078F21u);
    for (int j = 0; j < 8; j++) {
        TAP_EQ_INT(arb_int4_ct_unpack(w, j), q[j]);
        TAP_EQ_INT(arb_int4_unpack(arb_int4_ct_to_engine(w), j), q[j]);
    }
    int32_t words[2] = {(int32_t)0x5B8F07A9u, (int32_t)0x88888888u}; /* the second: eight zeros */
    arb_int4_ct_convert(words, 2);
    TAP_EQ_U64((uint32_t)words[0], 0xD3078F21u);
    TAP_EQ_U64((uint32_t)words[1], 0);
}

static void t_every_value(void)
{
    for (int v = -8; v <= 7; v++)
        for (int j = 0; j < 8; j++) {
            int q[8] = {0};
            for (int k = 0; k < 8; k++)
                q[k] = k == j ? v : (k * 5 + v + 16) % 16 - 8;
            int32_t e = arb_int4_ct_to_engine(arb_int4_ct_pack8(q));
            TAP_EQ_INT(e, arb_int4_pack8(q));
            for (int k = 0; k < 8; k++)
                TAP_EQ_INT(arb_int4_unpack(e, k), q[k]);
            TAP_EQ_INT(arb_int4_ct_to_engine(e), arb_int4_ct_pack8(q)); /* its own inverse */
        }
}

static const char *qc_fmt = "{\"model_type\":\"kimi_k2\",\"quantization_config\":{\"quant_method\":\"%s\","
                            "\"format\":\"%s\",\"config_groups\":{\"group_0\":{\"targets\":[\"Linear\"],"
                            "\"weights\":{\"num_bits\":%d,\"type\":\"int\",\"symmetric\":%s,\"strategy\":\"%s\","
                            "\"group_size\":%d}}}}}";

static arb_status_t fmt_of(const char *method, const char *format, int bits, const char *sym, const char *strategy,
                           int group, arb_weight_format_t *wf)
{
    char text[1024];
    snprintf(text, sizeof text, qc_fmt, method, format, bits, sym, strategy, group);
    return arb_weights_format_parse(text, "ckpt/config.json", wf, why, sizeof why);
}

static void t_schemes(void)
{
    arb_weight_format_t wf = ARB_WEIGHTS_INT4;
    TAP_EQ_INT(arb_weights_format_parse("{\"model_type\":\"deepseek_v3\"}", "c.json", &wf, why, sizeof why), ARB_OK);
    TAP_EQ_INT(wf, ARB_WEIGHTS_BF16);
    TAP_EQ_INT(fmt_of("compressed-tensors", "pack-quantized", 4, "true", "group", 32, &wf), ARB_OK);
    TAP_EQ_INT(wf, ARB_WEIGHTS_INT4);
    /* Kimi-K2.5: under text_config */
    TAP_EQ_INT(arb_weights_format_parse("{\"text_config\":{\"quantization_config\":{\"quant_method\":"
                                        "\"compressed-tensors\",\"format\":\"pack-quantized\",\"config_groups\":"
                                        "{\"g\":{\"weights\":{\"num_bits\":4,\"type\":\"int\",\"symmetric\":true,"
                                        "\"strategy\":\"group\",\"group_size\":32}}}}}}",
                                        "k25.json", &wf, why, sizeof why),
               ARB_OK);
    TAP_EQ_INT(fmt_of("awq", "pack-quantized", 4, "true", "group", 32, &wf), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "ckpt/config.json: quantization_config.quant_method 'awq' is not supported");
    /* FP8 blocks: DeepSeek-V3's own form accepted (dequantized at load), another block size refused */
    arb_ckpt_quant_t q = {0};
    TAP_EQ_INT(arb_weights_quant_parse("{\"quantization_config\":{\"activation_scheme\":\"dynamic\",\"fmt\":\"e4m3\","
                                       "\"quant_method\":\"fp8\",\"weight_block_size\":[128,128]}}",
                                       "ds.json", &q, why, sizeof why),
               ARB_OK);
    TAP_EQ_INT(q.fp8, 1);
    TAP_EQ_INT(q.experts, ARB_WEIGHTS_BF16);
    TAP_EQ_INT(fmt_of("fp8", "pack-quantized", 4, "true", "group", 32, &wf), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "ckpt/config.json: quantization_config.weight_block_size must be [128, 128]");
    TAP_EQ_INT(arb_weights_quant_parse("{\"quantization_config\":{\"fmt\":\"e5m2\",\"quant_method\":\"fp8\","
                                       "\"weight_block_size\":[128,128]}}",
                                       "ds.json", &q, why, sizeof why),
               ARB_ERR_INVALID);
    TAP_HAS_STR(why, "fmt 'e5m2' is not supported");
    TAP_EQ_INT(fmt_of("compressed-tensors", "int-quantized", 4, "true", "group", 32, &wf), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "format 'int-quantized'");
    TAP_EQ_INT(fmt_of("compressed-tensors", "pack-quantized", 8, "true", "group", 32, &wf), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "group_0.weights: quantization num_bits 8");
    TAP_EQ_INT(fmt_of("compressed-tensors", "pack-quantized", 4, "false", "group", 32, &wf), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "asymmetric");
    TAP_EQ_INT(fmt_of("compressed-tensors", "pack-quantized", 4, "true", "channel", 32, &wf), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "strategy 'channel'");
    TAP_EQ_INT(fmt_of("compressed-tensors", "pack-quantized", 4, "true", "group", 128, &wf), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "group_size 128 is not supported (accepted: 32)");
    TAP_EQ_INT(arb_weights_format_parse("{\"quantization_config\":{\"quant_method\":\"compressed-tensors\","
                                        "\"format\":\"pack-quantized\"}}",
                                        "c.json", &wf, why, sizeof why),
               ARB_ERR_INVALID);
    TAP_HAS_STR(why, "config_groups missing");
    TAP_EQ_INT(arb_weights_format_parse("{", "c.json", &wf, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "c.json");
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"hand_packed", t_hand_packed}, {"every_value", t_every_value}, {"schemes", t_schemes}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
