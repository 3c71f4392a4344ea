/* SPDX-License-Identifier: MIT */
/*
 * engine/model/engine_opts (and engine_opts_bits.c): the bit-list options parsed and named back (the
 * rows' step_form reads the names), the fold's refusal off the GPU's launches form, and the
 * defaults (no fold, no --l2-ahead pull; --l2-side's router in the GPU's launches form only). The option errors as a user meets them are engine_mpi.sh's.
 */
#include <string.h>

#include "tap.h"
#include "gpu/kernels/qb_fit.h"
#include "model/engine_opts.h"

static char err[1024];

static int parse(arb_engine_opts_t *o, int argc, char **argv)
{
    err[0] = 0;
    return arb_engine_opts_parse(argc, argv, o, err, sizeof err);
}

static void t_names(void)
{
    static const char *const want[2][4] = {{"none", "o_proj", "router", "o_proj+router"},
                                           {"none", "qkv_a", "o_proj", "qkv_a+o_proj"}};
    char b[32];
    for (int w = 0; w < 2; w++)
        for (unsigned x = 0; x < 4; x++)
            TAP_EQ_STR(arb_engine_opts_bits_str((arb_engine_bits_t)w, x, b, sizeof b), want[w][x]);
    char small[5]; /* truncated, still terminated */
    TAP_EQ_STR(arb_engine_opts_bits_str(ARB_BITS_WAVE_FIT, 3, small, sizeof small), "qkv_");
    TAP_EQ_STR(arb_engine_opts_bits_str(ARB_BITS_FUSE, 0, b, sizeof b), "none"); /* --fuse */
    TAP_EQ_STR(arb_engine_opts_bits_str(ARB_BITS_FUSE, ARB_FUSE_QB_ABSORB, b, sizeof b), "qb_absorb");
    TAP_EQ_STR(arb_engine_opts_bits_str(ARB_BITS_FUSE, ARB_FUSE_MERGE_UV, b, sizeof b), "merge_uv");
    TAP_EQ_STR(arb_engine_opts_bits_str(ARB_BITS_FUSE, ARB_FUSE_QB_ABSORB | ARB_FUSE_MERGE_UV, b, sizeof b), "qb_absorb+merge_uv");
    TAP_EQ_STR(arb_engine_opts_bits_str(ARB_BITS_FUSE, ARB_FUSE_QB_ABSORB | ARB_FUSE_PREP_QB, b, sizeof b), "qb_absorb+prep_qb");
    unsigned f = 99; /* --fuse's parser, as engine_gpu_bench calls it */
    char e[160];
    TAP_EQ_INT(arb_engine_opts_bits_parse(ARB_BITS_FUSE, "merge_uv,qb_absorb", &f, e, sizeof e), 0);
    TAP_EQ_INT(f, ARB_FUSE_QB_ABSORB | ARB_FUSE_MERGE_UV);
    TAP_EQ_INT(arb_engine_opts_bits_parse(ARB_BITS_FUSE, "prep_qb,qb_absorb", &f, e, sizeof e), 0);
    TAP_EQ_INT(f, ARB_FUSE_QB_ABSORB | ARB_FUSE_PREP_QB);
    TAP_EQ_INT(arb_engine_opts_bits_parse(ARB_BITS_FUSE, "none", &f, e, sizeof e), 0);
    TAP_EQ_INT(f, 0);
    TAP_CHECK(arb_engine_opts_bits_parse(ARB_BITS_FUSE, "merge", &f, e, sizeof e) != 0);
    TAP_HAS_STR(e, "unknown 'merge'");
}

static void t_parse_round_trip(void)
{
    arb_engine_opts_t o;
    char *a1[] = {"engine", "--wave-fit", "o_proj,qkv_a", "--wave-fit-from", "3", "--l2-ahead", "router", NULL};
    TAP_REQUIRE(parse(&o, 7, a1) == 0);
    TAP_EQ_INT(o.wave_fit, ARB_WAVE_FIT_QKV_A | ARB_WAVE_FIT_O_PROJ);
    TAP_EQ_INT(o.wave_from, 3);
    TAP_EQ_INT(o.l2_ahead, ARB_L2_AHEAD_ROUTER);
    TAP_EQ_INT(o.fuse, ARB_FUSE_QB_ABSORB | ARB_FUSE_PREP_QB); /* not given: both where the shapes fit */
    TAP_EQ_INT(o.fuse_given, 0);
    char *a3[] = {"engine", "--fuse", "qb_absorb", NULL};
    TAP_REQUIRE(parse(&o, 3, a3) == 0);
    TAP_EQ_INT(o.fuse, ARB_FUSE_QB_ABSORB);
    TAP_EQ_INT(o.fuse_given, 1);
    char *a4[] = {"engine", "--fuse", "qb_absorb", "--fuse", "none", NULL}; /* the last one given */
    TAP_REQUIRE(parse(&o, 5, a4) == 0);
    TAP_EQ_INT(o.fuse, 0);
    TAP_EQ_INT(o.fuse_given, 1);
    char *a5[] = {"engine", "--fuse", "merge_uv,qb_absorb", NULL};
    TAP_REQUIRE(parse(&o, 3, a5) == 0);
    TAP_EQ_INT(o.fuse, ARB_FUSE_QB_ABSORB | ARB_FUSE_MERGE_UV);
    char *a6[] = {"engine", "--fuse", "merge_uv", NULL};
    TAP_REQUIRE(parse(&o, 3, a6) == 0);
    TAP_EQ_INT(o.fuse, ARB_FUSE_MERGE_UV);
    TAP_REQUIRE(parse(&o, 7, a1) == 0);
    char b[32];
    TAP_EQ_STR(arb_engine_opts_bits_str(ARB_BITS_WAVE_FIT, o.wave_fit, b, sizeof b), "qkv_a+o_proj");
    char *a2[] = {"engine", NULL};
    TAP_REQUIRE(parse(&o, 1, a2) == 0);
    TAP_EQ_INT(o.wave_fit, 0);
    TAP_EQ_INT(o.wave_from, 1);
    TAP_EQ_INT(o.l2_ahead, 0);
}

/* Which fused kernels a model runs (qb_fit.h): the default drops what the shapes do not fit, an
 * explicit --fuse keeps it (the GPU model refuses it, naming the shapes); none outside the launches
 * form. Kimi-K2 / DeepSeek-V3: q_lora 1536, dn 128, dr 64, kv_lora 512. */
static void t_fuse_applied(void)
{
    const unsigned both = ARB_FUSE_QB_ABSORB | ARB_FUSE_MERGE_UV;
    TAP_EQ_INT(arb_fuse_applied(ARB_FUSE_QB_ABSORB, 0, 1, 1536, 128, 64, 128, 512), ARB_FUSE_QB_ABSORB);
    TAP_EQ_INT(arb_fuse_applied(ARB_FUSE_QB_ABSORB, 0, 1, 64, 16, 16, 16, 32), 0); /* tiny: dn 16 */
    TAP_EQ_INT(arb_fuse_applied(ARB_FUSE_QB_ABSORB, 1, 1, 64, 16, 16, 16, 32), ARB_FUSE_QB_ABSORB);
    TAP_EQ_INT(arb_fuse_applied(ARB_FUSE_QB_ABSORB, 0, 0, 1536, 128, 64, 128, 512), 0); /* persistent */
    TAP_EQ_INT(arb_fuse_applied(0, 1, 1, 1536, 128, 64, 128, 512), 0);                   /* --fuse none */
    TAP_EQ_INT(arb_fuse_applied(both, 0, 1, 1536, 128, 64, 128, 512), both);
    TAP_EQ_INT(arb_fuse_applied(both, 0, 1, 64, 16, 16, 16, 32), ARB_FUSE_MERGE_UV); /* tiny: merge_uv fits */
    TAP_EQ_INT(arb_fuse_applied(both, 0, 1, 1536, 128, 64, 192, 512), ARB_FUSE_QB_ABSORB); /* dv 192: dropped */
    TAP_EQ_INT(arb_fuse_applied(both, 1, 1, 1536, 128, 64, 192, 512), both);       /* given: kept, then refused */
    TAP_EQ_INT(arb_fuse_applied(both, 0, 0, 64, 16, 16, 16, 32), 0);               /* persistent */
    /* prep_qb: only with qb_absorb, by default; a q_b part under 256 inputs drops it */
    const unsigned pq = ARB_FUSE_QB_ABSORB | ARB_FUSE_PREP_QB;
    TAP_EQ_INT(arb_fuse_applied(pq, 1, 1, 1536, 128, 64, 128, 512), pq);
    TAP_EQ_INT(arb_fuse_applied(pq, 0, 1, 1536, 128, 64, 128, 512), pq);
    TAP_EQ_INT(arb_fuse_applied(ARB_FUSE_PREP_QB, 0, 1, 1536, 128, 64, 128, 512), 0);
    TAP_EQ_INT(arb_fuse_applied(ARB_FUSE_PREP_QB, 1, 1, 1536, 128, 64, 128, 512), ARB_FUSE_PREP_QB); /* refused later */
    TAP_EQ_INT(arb_fuse_applied(pq, 0, 1, 128, 128, 64, 128, 512), ARB_FUSE_QB_ABSORB); /* q_lora 128 */
    TAP_EQ_INT(arb_fuse_applied(pq, 0, 1, 64, 16, 16, 16, 32), 0);                       /* tiny */
    TAP_EQ_INT(arb_fuse_applied(pq, 0, 0, 1536, 128, 64, 128, 512), 0);                  /* persistent */
    TAP_CHECK(arb_qb_prep_fits(1536, 128, 64, 512));
    TAP_CHECK(arb_qb_prep_fits(512, 128, 64, 512));  /* one part of 512 */
    TAP_CHECK(!arb_qb_prep_fits(248, 128, 64, 512)); /* one part of 248: lanes without a first vector */
    TAP_CHECK(!arb_qb_prep_fits(1536, 64, 64, 512)); /* no fused q_b */
    TAP_CHECK(arb_qb_prep_fits(3584, 128, 64, 512));  /* rq + rkv 4096: 72 KB of shared memory at 8 tokens */
    TAP_CHECK(!arb_qb_prep_fits(3592, 128, 64, 512)); /* past it */
    TAP_EQ_INT(arb_fuse_applied(pq, 0, 1, 3592, 128, 64, 128, 512), ARB_FUSE_QB_ABSORB); /* dropped by default */
    TAP_CHECK(arb_merge_uv_fits(128, 512));
    TAP_CHECK(arb_merge_uv_fits(16, 32));
    TAP_CHECK(!arb_merge_uv_fits(129, 512)); /* two threads a row of a 256-thread block */
    TAP_CHECK(!arb_merge_uv_fits(128, 520)); /* past the kernels' latent row */
    TAP_CHECK(!arb_merge_uv_fits(128, 36));  /* not a multiple of 8 */
    TAP_CHECK(arb_qb_absorb_fits(1536, 128, 64, 512));
    TAP_CHECK(!arb_qb_absorb_fits(1536, 128, 40, 512)); /* RoPE rows not in CTAs of 16 */
    TAP_CHECK(!arb_qb_absorb_fits(1536, 128, 64, 520)); /* past the kernels' latent row */
    TAP_CHECK(!arb_qb_absorb_fits(4096, 128, 64, 512)); /* q_b's rows in four parts */
    TAP_CHECK(arb_qb_absorb_fits(4088, 128, 64, 512));  /* 511 vectors: two parts */
    TAP_EQ_INT(arb_gemv_parts(1536), 2);
    TAP_EQ_INT(arb_gemv_parts(7168), 4);
    TAP_EQ_INT(arb_gemv_parts(1000), 1);
}

static void t_refusals(void)
{
    arb_engine_opts_t o;
    char *a1[] = {"engine", "--config", "tiny", "--backend", "cpu", "--wave-fit-from", "2", NULL};
    TAP_CHECK(parse(&o, 7, a1) != 0);
    TAP_HAS_STR(err, "--wave-fit with --backend cpu");
    char *a2[] = {"engine", "--step-form", "persistent-attn", "--wave-fit", "o_proj", NULL};
    TAP_CHECK(parse(&o, 5, a2) != 0);
    TAP_HAS_STR(err, "--wave-fit with --step-form persistent-attn");
    char *a3[] = {"engine", "--config", "tiny", "--backend", "cpu", "--wave-fit", "none", NULL}; /* nothing folded */
    TAP_EQ_INT(parse(&o, 7, a3), 0);
    char *a4[] = {"engine", "--wave-fit", "qkv_a,,o_proj", NULL};
    TAP_CHECK(parse(&o, 3, a4) != 0);
    TAP_HAS_STR(err, "--wave-fit 'qkv_a,,o_proj'");
    char *a5[] = {"engine", "--config", "tiny", "--backend", "cpu", "--fuse", "qb_absorb", NULL};
    TAP_CHECK(parse(&o, 7, a5) != 0);
    TAP_HAS_STR(err, "--fuse with --backend cpu");
    char *a6[] = {"engine", "--step-form", "persistent", "--fuse", "qb_absorb", NULL};
    TAP_CHECK(parse(&o, 5, a6) != 0);
    TAP_HAS_STR(err, "--fuse with --step-form persistent");
    char *c1[] = {"engine", "--step-form", "persistent-attn", "--fuse", "merge_uv", NULL};
    TAP_CHECK(parse(&o, 5, c1) != 0);
    TAP_HAS_STR(err, "--fuse with --step-form persistent-attn");
    char *c2[] = {"engine", "--fuse", "merge_uv,merge_uv", NULL};
    TAP_CHECK(parse(&o, 3, c2) != 0);
    TAP_HAS_STR(err, "repeated 'merge_uv'");
    char *a9[] = {"engine", "--config", "tiny", "--backend", "cpu", NULL}; /* the default's fuse: not refused */
    TAP_EQ_INT(parse(&o, 5, a9), 0);
    char *a10[] = {"engine", "--step-form", "persistent", NULL};
    TAP_EQ_INT(parse(&o, 3, a10), 0);
    char *b1[] = {"engine", "--config", "tiny", "--backend", "cpu", "--moe-stage", "smem", NULL};
    TAP_CHECK(parse(&o, 7, b1) != 0);
    TAP_HAS_STR(err, "--moe-stage smem with --backend cpu");
    char *b2[] = {"engine", "--step-form", "persistent", "--moe-stage", "smem", NULL};
    TAP_CHECK(parse(&o, 5, b2) != 0);
    TAP_HAS_STR(err, "--moe-stage smem with --step-form persistent");
    char *b3[] = {"engine", "--step-form", "persistent-attn", "--moe-stage", "smem", NULL}; /* MoE as launches */
    TAP_EQ_INT(parse(&o, 5, b3), 0);
    TAP_EQ_INT(o.moe_stage, 1);
    char *b4[] = {"engine", "--moe-stage", "registers", NULL};
    TAP_CHECK(parse(&o, 3, b4) != 0);
    TAP_HAS_STR(err, "--moe-stage");
    char *b5[] = {"engine", NULL}; /* default none */
    TAP_EQ_INT(parse(&o, 1, b5), 0);
    TAP_EQ_INT(o.moe_stage, 0);
    TAP_EQ_INT(o.moe_early, 3); /* --moe-early: default spec (the GPU's launches) */
    TAP_EQ_INT(o.moe_order, 0);  /* --moe-order: default auto */
    char *m1[] = {"engine", "--moe-order", "routed-first", NULL};
    TAP_EQ_INT(parse(&o, 3, m1), 0);
    TAP_EQ_INT(o.moe_order, 2);
    char *m2[] = {"engine", "--step-form", "persistent-attn", "--moe-order", "shared-first", NULL}; /* MoE launches */
    TAP_EQ_INT(parse(&o, 5, m2), 0);
    TAP_EQ_INT(o.moe_order, 1);
    char *m3[] = {"engine", "--step-form", "persistent", "--moe-order", "shared-first", NULL};
    TAP_CHECK(parse(&o, 5, m3) != 0);
    TAP_HAS_STR(err, "--moe-order shared-first with --step-form persistent");
    char *m4[] = {"engine", "--config", "tiny", "--backend", "cpu", "--moe-order", "routed-first", NULL};
    TAP_CHECK(parse(&o, 7, m4) != 0);
    TAP_HAS_STR(err, "--moe-order routed-first with --backend cpu");
    char *m5[] = {"engine", "--config", "tiny", "--backend", "cpu", "--moe-order", "auto", NULL}; /* auto: anywhere */
    TAP_EQ_INT(parse(&o, 7, m5), 0);
    char *m7[] = {"engine", "--moe-order", "spread", NULL};
    TAP_EQ_INT(parse(&o, 3, m7), 0);
    TAP_EQ_INT(o.moe_order, 3);
    for (int i = 0; i < 4; i++) { /* the names the rows print parse back to their number */
        int back = -1;
        TAP_EQ_INT(arb_engine_opts_moe_order(arb_engine_opts_moe_order_name(i), &back, err, sizeof err), 0);
        TAP_EQ_INT(back, i);
    }
    TAP_CHECK(arb_engine_opts_moe_order_name(4) == NULL && arb_engine_opts_moe_order_name(-1) == NULL);
    char *m6[] = {"engine", "--moe-order", "routed", NULL};
    TAP_CHECK(parse(&o, 3, m6) != 0);
    TAP_HAS_STR(err, "--moe-order");
    TAP_HAS_STR(err, "routed");
    /* on and l2 withdrawn (the tiny check failed with on): refused, naming the run that showed it */
    char *e1[] = {"engine", "--moe-early", "on", NULL};
    TAP_CHECK(parse(&o, 3, e1) != 0);
    TAP_HAS_STR(err, "--moe-early on: withdrawn");
    TAP_HAS_STR(err, "results/engine-h200/6162998-moe-early/");
    char *e2[] = {"engine", "--step-form", "persistent-attn", "--moe-early", "on", NULL}; /* MoE as launches */
    TAP_CHECK(parse(&o, 5, e2) != 0);
    TAP_HAS_STR(err, "--moe-early on: withdrawn");
    char *e3[] = {"engine", "--step-form", "persistent", "--moe-early", "on", NULL};
    TAP_CHECK(parse(&o, 5, e3) != 0);
    TAP_HAS_STR(err, "--moe-early on: withdrawn"); /* withdrawn in every form */
    char *e4[] = {"engine", "--config", "tiny", "--backend", "cpu", "--moe-early", "on", NULL};
    TAP_CHECK(parse(&o, 7, e4) != 0);
    TAP_HAS_STR(err, "--moe-early on: withdrawn");
    char *e5[] = {"engine", "--moe-early", "yes", NULL};
    TAP_CHECK(parse(&o, 3, e5) != 0);
    TAP_HAS_STR(err, "--moe-early");
    TAP_HAS_STR(err, "spec or spec-sync"); /* the accepted names */
    char *e7[] = {"engine", "--moe-early", "l2", NULL};
    TAP_CHECK(parse(&o, 3, e7) != 0);
    TAP_HAS_STR(err, "--moe-early l2: withdrawn");
    char *e8[] = {"engine", "--step-form", "persistent", "--moe-early", "l2", NULL};
    TAP_CHECK(parse(&o, 5, e8) != 0);
    TAP_HAS_STR(err, "--moe-early l2: withdrawn");
    /* spec and spec-sync: the guessed selection, checked after the wait (the GPU's MoE launches only) */
    char *s1[] = {"engine", "--moe-early", "spec", NULL};
    TAP_EQ_INT(parse(&o, 3, s1), 0);
    TAP_EQ_INT(o.moe_early, 3);
    char *s2[] = {"engine", "--step-form", "persistent-attn", "--moe-early", "spec-sync", NULL}; /* MoE as launches */
    TAP_EQ_INT(parse(&o, 5, s2), 0);
    TAP_EQ_INT(o.moe_early, 4);
    char *s3[] = {"engine", "--step-form", "persistent", "--moe-early", "spec", NULL};
    TAP_CHECK(parse(&o, 5, s3) != 0);
    TAP_HAS_STR(err, "--moe-early spec with --step-form persistent");
    char *s4[] = {"engine", "--config", "tiny", "--backend", "cpu", "--moe-early", "spec-sync", NULL};
    TAP_CHECK(parse(&o, 7, s4) != 0);
    TAP_HAS_STR(err, "--moe-early spec-sync with --backend cpu");
    TAP_CHECK(strcmp(arb_engine_opts_moe_early_name(3), "spec") == 0);
    /* the default spec is dropped, not refused, where the MoE is not the GPU's launches */
    char *s5[] = {"engine", "--config", "tiny", "--backend", "cpu", NULL};
    TAP_EQ_INT(parse(&o, 5, s5), 0);
    TAP_EQ_INT(o.moe_early, 0);
    char *s6[] = {"engine", "--step-form", "persistent", NULL};
    TAP_EQ_INT(parse(&o, 3, s6), 0);
    TAP_EQ_INT(o.moe_early, 0);
    char *s7[] = {"engine", "--step-form", "persistent-attn", NULL}; /* MoE as launches: kept */
    TAP_EQ_INT(parse(&o, 3, s7), 0);
    TAP_EQ_INT(o.moe_early, 3);
    char *s8[] = {"engine", "--moe-early", "off", NULL};
    TAP_EQ_INT(parse(&o, 3, s8), 0);
    TAP_EQ_INT(o.moe_early, 0);
    TAP_CHECK(arb_engine_opts_moe_early_name(5) == NULL && arb_engine_opts_moe_early_name(-1) == NULL);
    char *e6[] = {"engine", "--config", "tiny", "--backend", "cpu", "--moe-early", "off", NULL}; /* off: anywhere */
    TAP_EQ_INT(parse(&o, 7, e6), 0);
    TAP_EQ_INT(o.moe_early, 0);
    TAP_EQ_INT(o.attn_min_rows, 0); /* the kernels' default */
    char *d1[] = {"engine", "--attn-min-rows", "8", "--step-form", "persistent", NULL}; /* every form */
    TAP_EQ_INT(parse(&o, 5, d1), 0);
    TAP_EQ_INT(o.attn_min_rows, 8);
    char *d2[] = {"engine", "--attn-min-rows", "65", NULL};
    TAP_CHECK(parse(&o, 3, d2) != 0);
    TAP_HAS_STR(err, "--attn-min-rows");
    char *d3[] = {"engine", "--attn-min-rows", "0", NULL};
    TAP_CHECK(parse(&o, 3, d3) != 0);
    char *d4[] = {"engine", "--config", "tiny", "--backend", "cpu", "--attn-min-rows", "8", NULL};
    TAP_CHECK(parse(&o, 7, d4) != 0);
    TAP_HAS_STR(err, "--attn-min-rows with --backend cpu");
    char *d5[] = {"engine", "--attn-fill", "6", NULL};
    TAP_EQ_INT(parse(&o, 3, d5), 0);
    TAP_EQ_INT(o.attn_fill, 6);
    char *d6[] = {"engine", "--attn-fill", "17", NULL};
    TAP_CHECK(parse(&o, 3, d6) != 0);
    TAP_HAS_STR(err, "--attn-fill");
    char *d7[] = {"engine", "--config", "tiny", "--backend", "cpu", "--attn-fill", "6", NULL};
    TAP_CHECK(parse(&o, 7, d7) != 0);
    TAP_HAS_STR(err, "--attn-fill with --backend cpu");
    TAP_EQ_INT(o.attn_wide_from, 0); /* never, by default */
    char *w1[] = {"engine", "--attn-wide-from", "3", NULL};
    TAP_EQ_INT(parse(&o, 3, w1), 0);
    TAP_EQ_INT(o.attn_wide_from, 3);
    char *w2[] = {"engine", "--attn-wide-from", "9", NULL}; /* past kMaxT */
    TAP_CHECK(parse(&o, 3, w2) != 0);
    TAP_HAS_STR(err, "--attn-wide-from");
    char *w3[] = {"engine", "--attn-wide-from", "0", NULL};
    TAP_CHECK(parse(&o, 3, w3) != 0);
    TAP_HAS_STR(err, "--attn-wide-from");
    char *w4[] = {"engine", "--attn-wide-from", "3", "--step-form", "persistent-attn", NULL}; /* the launches' */
    TAP_CHECK(parse(&o, 5, w4) != 0);
    TAP_HAS_STR(err, "--attn-wide-from with --step-form persistent-attn");
    char *w5[] = {"engine", "--config", "tiny", "--backend", "cpu", "--attn-wide-from", "2", NULL};
    TAP_CHECK(parse(&o, 7, w5) != 0);
    TAP_HAS_STR(err, "--attn-wide-from with --backend cpu");
    char *a7[] = {"engine", "--fuse", "absorb", NULL};
    TAP_CHECK(parse(&o, 3, a7) != 0);
    TAP_HAS_STR(err, "--fuse 'absorb': unknown 'absorb'");
    char *a8[] = {"engine", "--fuse", "qb_absorb,qb_absorb", NULL};
    TAP_CHECK(parse(&o, 3, a8) != 0);
    TAP_HAS_STR(err, "repeated 'qb_absorb'");
}

/* --l2-side: five names in bit order, named back joined by '+'; refused outside the GPU's
 * launches form and for unknown, repeated or empty names. */
static void t_l2_side(void)
{
    arb_engine_opts_t o;
    char *a1[] = {"engine", "--l2-side", "qkv_a,cache,o_proj,shared,router", NULL};
    TAP_REQUIRE(parse(&o, 3, a1) == 0);
    TAP_EQ_INT(o.l2_side, ARB_L2_SIDE_ALL);
    char b[40];
    TAP_EQ_STR(arb_engine_opts_bits_str(ARB_BITS_L2_SIDE, o.l2_side, b, sizeof b), "o_proj+router+shared+qkv_a+cache");
    TAP_EQ_STR(arb_engine_opts_bits_str(ARB_BITS_L2_SIDE, ARB_L2_SIDE_ROUTER | ARB_L2_SIDE_CACHE, b, sizeof b),
               "router+cache");
    TAP_EQ_STR(arb_engine_opts_bits_str(ARB_BITS_L2_SIDE, ARB_L2_SIDE_SHARED, b, sizeof b), "shared");
    TAP_EQ_STR(arb_engine_opts_bits_str(ARB_BITS_L2_SIDE, 0, b, sizeof b), "none");
    char *a2[] = {"engine", "--l2-side", "router", "--l2-side", "none", NULL}; /* the last one given */
    TAP_REQUIRE(parse(&o, 5, a2) == 0);
    TAP_EQ_INT(o.l2_side, 0);
    char *a3[] = {"engine", NULL};
    TAP_REQUIRE(parse(&o, 1, a3) == 0);
    TAP_EQ_INT(o.l2_side, ARB_L2_SIDE_ROUTER); /* default: the router's, in the GPU's launches form */
    TAP_EQ_INT(o.l2_side_given, 0);
    char *a4[] = {"engine", "--config", "tiny", "--backend", "cpu", NULL}; /* the default dropped, not refused */
    TAP_REQUIRE(parse(&o, 5, a4) == 0);
    TAP_EQ_INT(o.l2_side, 0);
    char *a5[] = {"engine", "--step-form", "persistent-attn", NULL};
    TAP_REQUIRE(parse(&o, 3, a5) == 0);
    TAP_EQ_INT(o.l2_side, 0);
    char *a6[] = {"engine", "--l2-side-upto", "1", NULL}; /* limits the default's branch */
    TAP_REQUIRE(parse(&o, 3, a6) == 0);
    TAP_EQ_INT(o.l2_side, ARB_L2_SIDE_ROUTER);
    TAP_EQ_INT(o.side_upto, 1);
    char *r1[] = {"engine", "--config", "tiny", "--backend", "cpu", "--l2-side", "o_proj", NULL};
    TAP_CHECK(parse(&o, 7, r1) != 0);
    TAP_HAS_STR(err, "--l2-side with --backend cpu");
    char *r2[] = {"engine", "--step-form", "persistent", "--l2-side", "router", NULL};
    TAP_CHECK(parse(&o, 5, r2) != 0);
    TAP_HAS_STR(err, "--l2-side with --step-form persistent");
    char *r3[] = {"engine", "--step-form", "persistent-attn", "--l2-side", "qkv_a", NULL};
    TAP_CHECK(parse(&o, 5, r3) != 0);
    TAP_HAS_STR(err, "--l2-side with --step-form persistent-attn");
    char *r4[] = {"engine", "--l2-side", "down", NULL};
    TAP_CHECK(parse(&o, 3, r4) != 0);
    TAP_HAS_STR(err, "--l2-side 'down': unknown 'down' (expected none, or a comma list of o_proj, router, shared, qkv_a and cache)");
    char *r5[] = {"engine", "--l2-side", "router,router", NULL};
    TAP_CHECK(parse(&o, 3, r5) != 0);
    TAP_HAS_STR(err, "repeated 'router'");
    char *r6[] = {"engine", "--l2-side", "o_proj,", NULL};
    TAP_CHECK(parse(&o, 3, r6) != 0);
    TAP_HAS_STR(err, "--l2-side 'o_proj,'");
    unsigned sb = 0;
    char e[256];
    TAP_EQ_INT(arb_engine_opts_bits_parse(ARB_BITS_L2_SIDE, "shared,qkv_a", &sb, e, sizeof e), 0); /* engine_gpu_bench's parser */
    TAP_EQ_INT(sb, ARB_L2_SIDE_SHARED | ARB_L2_SIDE_QKV_A);
    TAP_CHECK(arb_engine_opts_bits_parse(ARB_BITS_L2_SIDE, "attend", &sb, e, sizeof e) != 0);
    TAP_HAS_STR(e, "--l2-side 'attend': unknown 'attend'");
    char *r7[] = {"engine", "--config", "tiny", "--backend", "cpu", "--l2-side", "none", NULL}; /* nothing pulled */
    TAP_EQ_INT(parse(&o, 7, r7), 0);
    TAP_EQ_INT(o.side_upto, 8); /* default: every step */
    char *u1[] = {"engine", "--l2-side", "router,shared", "--l2-side-upto", "1", NULL};
    TAP_REQUIRE(parse(&o, 5, u1) == 0);
    TAP_EQ_INT(o.side_upto, 1);
    TAP_EQ_INT(o.l2_side, ARB_L2_SIDE_ROUTER | ARB_L2_SIDE_SHARED);
    char *u2[] = {"engine", "--l2-side", "none", "--l2-side-upto", "3", NULL}; /* nothing to limit */
    TAP_CHECK(parse(&o, 5, u2) != 0);
    TAP_HAS_STR(err, "--l2-side-upto 3 with no side branch");
    char *u5[] = {"engine", "--step-form", "persistent", "--l2-side-upto", "2", NULL};
    TAP_CHECK(parse(&o, 5, u5) != 0);
    TAP_HAS_STR(err, "--l2-side-upto 2 with no side branch");
    char *u3[] = {"engine", "--l2-side", "router", "--l2-side-upto", "9", NULL};
    TAP_CHECK(parse(&o, 5, u3) != 0);
    TAP_HAS_STR(err, "--l2-side-upto");
    char *u4[] = {"engine", "--l2-side", "router", "--l2-side-upto", "0", NULL};
    TAP_CHECK(parse(&o, 5, u4) != 0);
    TAP_HAS_STR(err, "--l2-side-upto");
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {{"names", t_names}, {"parse_round_trip", t_parse_round_trip}, {"fuse_applied", t_fuse_applied},
                                         {"refusals", t_refusals}, {"l2_side", t_l2_side}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
