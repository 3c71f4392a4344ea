/* SPDX-License-Identifier: MIT */
/*
 * The timeline's launch numbers (engine/gpu/timeline_launches.c), no GPU needed: records as the
 * device writes them (each CTA's ordinal among its tag's CTAs and its grid), shuffled, become
 * each CTA's launch, also where launches of one tag have different grids (the GEMV's o_proj of
 * 896 blocks after dense GEMVs of 1152 and 256: a number from ordinal / grid, as the first form
 * made it on the device, put parts of two layers' o_proj under one number) and where the buffer
 * dropped the last CTAs; an ordinal twice, a grid of 0, a block outside its grid and a grid
 * that changes inside a launch are refused with the records left as they were.
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "gpu/kernels/timeline.h"

enum { CAP = 20000 };
static char why[512];
static arb_tl_rec_t recs[CAP], orig[CAP];
static unsigned want[CAP];
static size_t nrec;

/* Appends `grid` CTAs of one launch of tag (its number `truth`), ordinals from *ord, blocks in a
 * scrambled order. */
static void add_launch(unsigned tag, unsigned grid, unsigned *ord, unsigned truth)
{
    for (unsigned b = 0; b < grid; b++) {
        arb_tl_rec_t *x = recs + nrec;
        memset(x, 0, sizeof *x);
        x->tag = tag, x->grid = grid, x->block = (b * 7u + 3u) % grid, x->launch = (*ord)++;
        x->sm = b % 132, x->g0 = nrec;
        want[nrec++] = truth;
    }
}

/* A dense layer's GEMVs (o_proj 1152, the gate/up pairs' own tag, down 256), four MoE layers'
 * o_proj (896) each with a router (384), lm_head (1792); shuffled; kept in orig. */
static void make_step(void)
{
    unsigned og = 0, orr = 0, ogp = 0, lg = 0, lr = 0;
    nrec = 0;
    add_launch(ARB_TL_GEMV, 1152, &og, lg++);
    add_launch(ARB_TL_GEMV_PAIRS, 2432, &ogp, 0);
    add_launch(ARB_TL_GEMV, 256, &og, lg++);
    for (int l = 0; l < 4; l++) {
        add_launch(ARB_TL_GEMV, 896, &og, lg++);
        add_launch(ARB_TL_ROUTER, 384, &orr, lr++);
    }
    add_launch(ARB_TL_GEMV, 1792, &og, lg++);
    srand(7);
    for (size_t i = nrec - 1; i > 0; i--) {
        const size_t j = (size_t)rand() % (i + 1);
        const arb_tl_rec_t t = recs[i];
        recs[i] = recs[j], recs[j] = t;
        const unsigned w = want[i];
        want[i] = want[j], want[j] = w;
    }
    memcpy(orig, recs, nrec * sizeof *recs);
}

static size_t mismatches(const unsigned *w, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += recs[i].launch != w[i];
    return bad;
}

static void t_numbered(void)
{
    make_step();
    TAP_REQUIRE(arb_tl_number_launches(recs, nrec, why, sizeof why) == 0);
    TAP_EQ_U64(mismatches(want, nrec), 0);
    size_t o_proj_1 = 0; /* the second MoE layer's o_proj: the GEMV's launch 3, all 896 of it */
    for (size_t i = 0; i < nrec; i++)
        o_proj_1 += recs[i].tag == ARB_TL_GEMV && recs[i].launch == 3;
    TAP_EQ_U64(o_proj_1, 896);
    /* the first form's rule (ordinal / own grid) numbered that launch's CTAs two ways */
    unsigned lo = ~0u, hi = 0;
    for (size_t i = 0; i < nrec; i++)
        if (orig[i].tag == ARB_TL_GEMV && want[i] == 3) {
            const unsigned old = orig[i].launch / orig[i].grid;
            lo = old < lo ? old : lo, hi = old > hi ? old : hi;
        }
    TAP_CHECK(lo != hi);
}

static void t_dropped(void)
{
    make_step();
    unsigned top = 0; /* the GEMV's last ordinal */
    for (size_t i = 0; i < nrec; i++)
        if (orig[i].tag == ARB_TL_GEMV && orig[i].launch > top)
            top = orig[i].launch;
    size_t kept = 0;
    static unsigned want2[CAP];
    for (size_t i = 0; i < nrec; i++) /* the last 2000 GEMV CTAs to start: lm_head's, the last o_proj's tail */
        if (!(orig[i].tag == ARB_TL_GEMV && orig[i].launch + 2000 > top))
            recs[kept] = orig[i], want2[kept++] = want[i];
    TAP_CHECK(kept < nrec);
    TAP_REQUIRE(arb_tl_number_launches(recs, kept, why, sizeof why) == 0);
    TAP_EQ_U64(mismatches(want2, kept), 0);
}

/* Refused, the records as they were. */
static void refused(const char *what)
{
    static arb_tl_rec_t before[CAP];
    memcpy(before, recs, nrec * sizeof *recs);
    TAP_CHECK(arb_tl_number_launches(recs, nrec, why, sizeof why) == -1);
    tap_diag("refused: %s", why);
    TAP_CHECK(strstr(why, what) != NULL);
    TAP_CHECK(memcmp(before, recs, nrec * sizeof *recs) == 0);
}

static void t_refused(void)
{
    make_step();
    size_t j = 1; /* an ordinal twice: record 0 over the next record of its tag */
    while (j < nrec && recs[j].tag != recs[0].tag)
        j++;
    TAP_REQUIRE(j < nrec);
    recs[j] = recs[0];
    refused("recorded twice");
    memcpy(recs, orig, nrec * sizeof *recs);
    recs[9].grid = 0;
    refused("grid of 0");
    memcpy(recs, orig, nrec * sizeof *recs);
    recs[11].block = recs[11].grid;
    refused("has block");
    memcpy(recs, orig, nrec * sizeof *recs);
    for (j = 0; j < nrec && !(recs[j].tag == ARB_TL_ROUTER && recs[j].launch % 384 == 100); j++)
        ;
    TAP_REQUIRE(j < nrec);
    recs[j].grid = 385; /* the 101st CTA of a router launch claims another grid */
    refused("inside a launch");
    TAP_EQ_INT(arb_tl_number_launches(recs, 0, why, sizeof why), 0);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {{"numbered", t_numbered}, {"dropped", t_dropped}, {"refused", t_refused}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
