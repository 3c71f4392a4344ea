/* SPDX-License-Identifier: MIT */
/* engine/model/shard.c: per-rank shapes of Kimi-K2 at TP=8, exact-split and INT4 refusals,
 * the vocabulary remainder, shard ranges covering several ranks. */
#include "tap.h"
#include "model/config.h"
#include "model/shard.h"

static char why[1024];

static void t_kimi_tp8(void)
{
    arb_model_config_t c;
    arb_shard_t s;
    TAP_REQUIRE(arb_config_load("kimi-k2", &c, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_shard_make(&c, 8, 3, ARB_WEIGHTS_INT4, &s, why, sizeof why) == ARB_OK);
    TAP_EQ_INT(s.heads, 8);                     /* 64 / 8 */
    TAP_EQ_INT(s.head0, 24);
    TAP_EQ_INT(s.q_b_rows, 8 * 192);            /* heads x (128 + 64) */
    TAP_EQ_INT(s.q_b_row0, 24 * 192);
    TAP_EQ_INT(s.kv_b_rows, 8 * 256);           /* heads x (128 + 128) */
    TAP_EQ_INT(s.kv_b_row0, 24 * 256);
    TAP_EQ_INT(s.o_cols, 8 * 128);
    TAP_EQ_INT(s.o_col0, 24 * 128);
    TAP_EQ_INT(s.moe_inter, 256);               /* 2048 / 8: a multiple of 32, INT4 ok */
    TAP_EQ_INT(s.moe_inter0, 768);
    TAP_EQ_INT(s.shared_inter, 256);
    TAP_EQ_INT(s.dense_inter, 2304);            /* 18432 / 8 */
    TAP_EQ_INT(s.vocab, 20480);                 /* 163840 / 8 */
    TAP_EQ_INT(s.vocab0, 3 * 20480);
}

static void t_refusals(void)
{
    arb_model_config_t c;
    arb_shard_t s;
    TAP_REQUIRE(arb_config_load("kimi-k2", &c, why, sizeof why) == ARB_OK);
    TAP_EQ_INT(arb_shard_make(&c, 3, 0, ARB_WEIGHTS_BF16, &s, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "num_attention_heads 64 is not a multiple of --tp-shape 3");
    TAP_EQ_INT(arb_shard_make(&c, 8, 8, ARB_WEIGHTS_BF16, &s, why, sizeof why), ARB_ERR_INVALID);
    /* TP=16: heads 4, I_e_r 128, fine; TP=64: I_e_r = 32 fine, TP=128 not a multiple of heads */
    TAP_EQ_INT(arb_shard_make(&c, 64, 0, ARB_WEIGHTS_INT4, &s, why, sizeof why), ARB_OK);
    c.moe_intermediate_size = 1024; /* /64 = 16: a shard would split an INT4 group */
    TAP_EQ_INT(arb_shard_make(&c, 64, 0, ARB_WEIGHTS_BF16, &s, why, sizeof why), ARB_OK);
    TAP_EQ_INT(arb_shard_make(&c, 64, 0, ARB_WEIGHTS_INT4, &s, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "moe_intermediate_size / tp-shape = 1024 / 64 = 16");
    c.moe_intermediate_size = 2048;
    c.intermediate_size = 18433;
    TAP_EQ_INT(arb_shard_make(&c, 8, 0, ARB_WEIGHTS_BF16, &s, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "intermediate_size 18433");
}

static void t_vocab_remainder(void)
{
    arb_model_config_t c;
    arb_shard_t s;
    TAP_REQUIRE(arb_config_load("tiny", &c, why, sizeof why) == ARB_OK);
    c.vocab_size = 511;
    unsigned total = 0;
    for (unsigned r = 0; r < 4; r++) {
        TAP_REQUIRE(arb_shard_make(&c, 4, r, ARB_WEIGHTS_BF16, &s, why, sizeof why) == ARB_OK);
        TAP_EQ_INT(s.vocab0, total);
        TAP_EQ_INT(s.vocab, r < 3 ? 127 : 130);
        total += s.vocab;
    }
    TAP_EQ_INT(total, 511);
}

static void t_range(void)
{
    arb_model_config_t c;
    arb_shard_t one, all, half;
    TAP_REQUIRE(arb_config_load("tiny", &c, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_shard_make(&c, 1, 0, ARB_WEIGHTS_INT4, &one, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_shard_make_range(&c, 4, 0, 4, ARB_WEIGHTS_INT4, &all, why, sizeof why) == ARB_OK);
    /* all four shards of TP=4 are the unsharded model */
    TAP_EQ_INT(all.heads, one.heads);
    TAP_EQ_INT(all.q_b_rows, one.q_b_rows);
    TAP_EQ_INT(all.kv_b_rows, one.kv_b_rows);
    TAP_EQ_INT(all.o_cols, one.o_cols);
    TAP_EQ_INT(all.moe_inter, one.moe_inter);
    TAP_EQ_INT(all.dense_inter, one.dense_inter);
    TAP_EQ_INT(all.vocab, one.vocab);
    TAP_REQUIRE(arb_shard_make_range(&c, 4, 2, 2, ARB_WEIGHTS_BF16, &half, why, sizeof why) == ARB_OK);
    TAP_EQ_INT(half.head0, 2);
    TAP_EQ_INT(half.heads, 2);
    TAP_EQ_INT(half.moe_inter0, 64);
    TAP_EQ_INT(half.moe_inter, 64);
    TAP_EQ_INT(half.vocab0, 256);
    TAP_EQ_INT(half.vocab, 256);
    TAP_EQ_INT(arb_shard_make_range(&c, 4, 3, 2, ARB_WEIGHTS_BF16, &half, why, sizeof why), ARB_ERR_INVALID);
}

static void t_indices(void)
{
    /* expert-major: expert 2 of [4 x 64], row 3, col 5 */
    TAP_EQ_U64(arb_expert_index(2, 4, 64, 3, 5), (2ull * 4 + 3) * 64 + 5);
    /* scale groups of 32: col 33 is group 1 of that row, 2 groups per row */
    TAP_EQ_U64(arb_int4_scale_index(2, 4, 64, 3, 33), (2ull * 4 + 3) * 2 + 1);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"kimi_tp8", t_kimi_tp8}, {"refusals", t_refusals}, {"vocab_remainder", t_vocab_remainder},
        {"range", t_range},       {"indices", t_indices},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
