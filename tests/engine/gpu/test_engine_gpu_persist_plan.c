/* SPDX-License-Identifier: MIT */
/*
 * The persistent form's instruction lists (engine/gpu/persist_plan.h), no GPU needed: at
 * Kimi-K2's TP=8 attention and MoE stage counts over an H200's and an RTX PRO 6000's grids,
 * every (stage, tile) exactly once, each CTA's list in stage order, the round-robin carried
 * from stage to stage (the load within one tile a stage of the balance), and the checker
 * refusing each kind of broken plan, so it can fail.
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "gpu/persist_plan.h"

static char why[1024];

/* The attention's stages at T = 1 (qkv_a, prep, q_b, absorb, attend, merge, W_uv, o_proj) and
 * the MoE's (logits, top-k, gate/up, down), as persist_attn_plan / persist_moe_plan count them. */
static const unsigned attn_t1[8] = {528, 2, 384, 72, 256, 64, 128, 896};
static const unsigned moe_t1[4] = {384, 1, 144, 448};

static unsigned load_of(const arb_persist_plan_t *p, unsigned c) { return p->off[c + 1] - p->off[c]; }

static void kimi_case(const unsigned *tiles, unsigned n, unsigned nctas, const char *what)
{
    arb_persist_plan_t p;
    TAP_REQUIRE(arb_persist_plan_build(tiles, n, nctas, &p, why, sizeof why) == ARB_OK);
    TAP_EQ_INT(arb_persist_plan_check(&p, why, sizeof why), ARB_OK);
    unsigned total = 0, lo = ~0u, hi = 0;
    for (unsigned s = 0; s < n; s++)
        total += tiles[s];
    TAP_EQ_INT(p.off[nctas], total);
    for (unsigned c = 0; c < nctas; c++) {
        lo = load_of(&p, c) < lo ? load_of(&p, c) : lo;
        hi = load_of(&p, c) > hi ? load_of(&p, c) : hi;
    }
    /* round-robin carried over: the loads differ by at most one tile (the whole plan is one sequence) */
    if (hi - lo > 1)
        TAP_FAIL_("%s over %u CTAs: loads %u .. %u", what, nctas, lo, hi);
    /* stage s starts at the CTA after stage s - 1's last tile */
    unsigned start = 0;
    for (unsigned s = 0; s < n; s++) {
        const unsigned c = start % nctas;
        int found = 0;
        for (uint32_t i = p.off[c]; i < p.off[c + 1]; i++)
            found |= p.ent[i] == arb_persist_entry(s, 0);
        if (!found)
            TAP_FAIL_("%s: stage %u's first tile not on CTA %u", what, s, c);
        start += tiles[s];
    }
    arb_persist_plan_free(&p);
    TAP_CHECK(p.off == NULL && p.ent == NULL);
}

static void t_kimi(void)
{
    kimi_case(attn_t1, 8, 264, "attention, H200 2 x 132");
    kimi_case(moe_t1, 4, 264, "MoE, H200 2 x 132");
    kimi_case(attn_t1, 8, 188, "attention, RTX PRO 6000 1 x 188");
    kimi_case(moe_t1, 4, 376, "MoE, RTX PRO 6000 2 x 188");
    kimi_case(attn_t1, 8, 5000, "attention, more CTAs than tiles");
    kimi_case(moe_t1, 4, 1, "MoE, one CTA");
}

static void refused(const unsigned *tiles, unsigned n, unsigned nctas, const char *needle)
{
    arb_persist_plan_t p;
    why[0] = 0;
    TAP_EQ_INT(arb_persist_plan_build(tiles, n, nctas, &p, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, needle);
    TAP_CHECK(p.off == NULL && p.ent == NULL);
}

static void t_refusals(void)
{
    unsigned many[ARB_PERSIST_MAX_STAGES + 1];
    for (unsigned i = 0; i <= ARB_PERSIST_MAX_STAGES; i++)
        many[i] = 1;
    refused(attn_t1, 0, 264, "0 stages");
    refused(many, ARB_PERSIST_MAX_STAGES + 1, 264, "17 stages");
    refused(attn_t1, 8, 0, "no CTAs");
    const unsigned zero[2] = {4, 0}, huge[2] = {4, ARB_PERSIST_MAX_TILES};
    refused(zero, 2, 8, "stage 1 has 0 tiles");
    refused(huge, 2, 8, "stage 1 has 16777216 tiles");
}

/* A good plan broken four ways: each must be refused, naming what is wrong. */
static void t_check_fails(void)
{
    const unsigned tiles[3] = {5, 3, 4};
    arb_persist_plan_t p;
    TAP_REQUIRE(arb_persist_plan_build(tiles, 3, 4, &p, why, sizeof why) == ARB_OK);
    TAP_EQ_INT(arb_persist_plan_check(&p, why, sizeof why), ARB_OK);
    /* CTA 0 holds stage 0 tile 0 first and a later stage after it: swap them (stage order broken) */
    const uint32_t a = p.ent[p.off[0]], b = p.ent[p.off[1] - 1];
    TAP_REQUIRE(arb_persist_stage(b) > arb_persist_stage(a));
    p.ent[p.off[0]] = b, p.ent[p.off[1] - 1] = a;
    TAP_EQ_INT(arb_persist_plan_check(&p, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "after stage");
    p.ent[p.off[0]] = a, p.ent[p.off[1] - 1] = b;
    /* a tile twice (and so another never) */
    const uint32_t keep = p.ent[1];
    p.ent[1] = p.ent[0];
    TAP_EQ_INT(arb_persist_plan_check(&p, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "listed twice");
    p.ent[1] = keep;
    /* a tile past its stage */
    p.ent[p.off[2]] = arb_persist_entry(0, 5);
    TAP_EQ_INT(arb_persist_plan_check(&p, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "outside the plan");
    arb_persist_plan_free(&p);
    /* offsets that do not reach the total */
    TAP_REQUIRE(arb_persist_plan_build(tiles, 3, 4, &p, why, sizeof why) == ARB_OK);
    p.off[4]--;
    TAP_EQ_INT(arb_persist_plan_check(&p, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "offsets span");
    arb_persist_plan_free(&p);
    TAP_EQ_INT(arb_persist_plan_check(&p, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "not built");
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {{"kimi", t_kimi}, {"refusals", t_refusals}, {"check_fails", t_check_fails}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
