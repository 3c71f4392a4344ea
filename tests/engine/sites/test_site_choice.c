/* SPDX-License-Identifier: MIT */
/* Per-site choice from hand-made profiles, the JSON reader, and the site registry. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sites/site_choice.h"
#include "sites/site_registry.h"
#include "tap.h"

#define HDR "schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params,median_us,baseline_impl,baseline_params,baseline_median_us,speedup,confidence,sources,fusion,rep_bytes,points\n"
#define MAXB "18446744073709551615"

/* pcie-switch x 8: fused lsa up to 50000 B then NCCL Ring LL (unfused), graph; p2p in
 * eager; nvlink x 2: only plain all-reduce rows; x 4: one closed range; a nodes split. */
static const char profile_csv[] = HDR
    "1,pcie-switch,8,1,bf16,allreduce_rmsnorm,graph,0,50000,lsa,\"variant=oneshot,pdl=1\",12.5,nccl,\"algo=Ring,proto=LL,nccl=2.28.3\",30.1,2.408,ci95,a.csv@r1,fused,43008,3\n"
    "1,pcie-switch,8,1,bf16,allreduce_rmsnorm,graph,50001," MAXB ",nccl,\"algo=Ring,proto=LL,nccl=2.28.3\",80,nccl,\"algo=Ring,proto=LL,nccl=2.28.3\",80,1,baseline,a.csv@r1,unfused,917504,2\n"
    "1,pcie-switch,8,1,bf16,allreduce_rmsnorm,eager,0," MAXB ",p2p,\"variant=oneshot-push,blocks=8\",20,nccl,\"algo=Ring,proto=LL\",40,2,ci95,a.csv@r1,fused,14336,4\n"
    "1,pcie-switch,8,1,bf16,allreduce,eager,0," MAXB ",nccl,\"algo=Tree,proto=LL\",25,nccl,\"algo=Tree,proto=LL\",25,1,baseline,a.csv@r1,,14336,4\n"
    "1,nvlink,2,1,bf16,allreduce,graph,0," MAXB ",p2p,\"variant=oneshot-push,blocks=16\",6,nccl,\"algo=Ring,proto=LL\",10,1.666667,ci95,b.csv@r2,,14336,5\n"
    "1,pcie-switch,4,1,bf16,allreduce_rmsnorm,graph,14336,28672,lsa,variant=oneshot,9,nccl,algo=Ring,15,1.666667,ci95,c.csv@r3,fused,14336,2\n"
    "1,multi,2,0,bf16,allreduce,graph,0," MAXB ",nccl,algo=Ring,50,nccl,algo=Ring,50,1,baseline,d.csv@r4,,14336,1\n"
    "1,multi,2,2,bf16,allreduce,graph,0," MAXB ",nccl,algo=Tree,40,nccl,algo=Tree,40,1,baseline,d.csv@r4,,14336,1\n";

static arb_profile_t prof;

static arb_site_t site(const char *name, arb_op_t op, unsigned tokens, unsigned hidden, arb_mode_t mode, int ranks,
                       const char *fabric)
{
    return (arb_site_t){.name = name, .op = op, .tokens = tokens, .hidden = hidden, .mode = mode, .ranks = ranks,
                        .nodes = 1, .fabric = fabric};
}

static arb_choice_t choose(const arb_site_t *s)
{
    arb_choice_t c;
    char why[512];
    TAP_CHECK(arb_site_choose(&prof, "hand.csv", s, NULL, &c, why, sizeof why) == ARB_OK);
    return c;
}

static void load_fixture(void)
{
    char err[512];
    if (arb_profile_read_mem(profile_csv, sizeof profile_csv - 1, "hand.csv", &prof, err, sizeof err)) {
        printf("Bail out! fixture profile: %s\n", err);
        exit(1);
    }
}

static void test_exact_match(void)
{
    arb_site_t s = site("verify.attn", ARB_OP_ALLREDUCE_RMSNORM, 3, 7168, ARB_MODE_GRAPH, 8, "pcie-switch");
    TAP_CHECK(arb_site_bytes(&s) == 43008);
    arb_choice_t c = choose(&s);
    TAP_CHECK(c.from_profile && c.entry && strcmp(c.impl, "lsa") == 0);
    TAP_CHECK(strcmp(c.params, "variant=oneshot,pdl=1") == 0);
    TAP_CHECK(c.fusion == ARB_FUSION_PLUGIN);
    TAP_CHECK(strstr(c.note, "verify.attn") && strstr(c.note, "lsa"));
    /* 64 tokens: the NCCL range; the library version item is not handed to init. */
    s = site("prefill.attn", ARB_OP_ALLREDUCE_RMSNORM, 64, 7168, ARB_MODE_GRAPH, 8, "pcie-switch");
    c = choose(&s);
    TAP_CHECK(c.from_profile && strcmp(c.impl, "nccl") == 0 && strcmp(c.params, "algo=Ring,proto=LL") == 0);
    TAP_CHECK(c.fusion == ARB_FUSION_COMPOSED);
    /* the same site in eager mode: the eager rows (fused op first, not the allreduce row) */
    s.mode = ARB_MODE_EAGER;
    c = choose(&s);
    TAP_CHECK(strcmp(c.impl, "p2p") == 0 && c.fusion == ARB_FUSION_PLUGIN);
    /* an allreduce site takes only allreduce rows */
    s.op = ARB_OP_ALLREDUCE;
    c = choose(&s);
    TAP_CHECK(strcmp(c.impl, "nccl") == 0 && strcmp(c.params, "algo=Tree,proto=LL") == 0 && c.fusion == ARB_FUSION_AUTO);
}

static void test_range_edges(void)
{
    arb_site_t s = site("edge", ARB_OP_ALLREDUCE_RMSNORM, 1, 25000, ARB_MODE_GRAPH, 8, "pcie-switch"); /* 50000 B */
    TAP_CHECK(strcmp(choose(&s).impl, "lsa") == 0); /* max_bytes is inclusive */
    s.hidden = 25001;                              /* 50002 B: the next range */
    TAP_CHECK(strcmp(choose(&s).impl, "nccl") == 0 && choose(&s).from_profile);
    /* a closed range [14336, 28672] on 4 ranks: both edges in, one element either side out */
    s = site("x4", ARB_OP_ALLREDUCE_RMSNORM, 1, 7168, ARB_MODE_GRAPH, 4, "pcie-switch");
    TAP_CHECK(strcmp(choose(&s).impl, "lsa") == 0);
    s.tokens = 2;
    TAP_CHECK(strcmp(choose(&s).impl, "lsa") == 0);
    s.tokens = 1, s.hidden = 7167;
    arb_choice_t c = choose(&s);
    TAP_CHECK(!c.from_profile && strcmp(c.impl, "nccl") == 0 && !*c.params);
    TAP_CHECK(strstr(c.note, "size range") && strstr(c.note, "[14336, 28672]") && strstr(c.note, "14334 B"));
    s.tokens = 2, s.hidden = 7169;
    c = choose(&s);
    TAP_CHECK(!c.from_profile && strstr(c.note, "size range"));
}

static void test_fallback(void)
{
    arb_site_t s = site("decode.ffn", ARB_OP_ALLREDUCE_RMSNORM, 1, 7168, ARB_MODE_GRAPH, 16, "pcie-switch");
    arb_choice_t c = choose(&s);
    TAP_CHECK(!c.from_profile && !c.entry && strcmp(c.impl, "nccl") == 0 && !*c.params);
    TAP_CHECK(c.fusion == ARB_FUSION_COMPOSED);
    TAP_CHECK(strstr(c.note, "decode.ffn") && strstr(c.note, "ranks") && strstr(c.note, "nccl (its own choice)"));
    TAP_CHECK(strstr(c.note, "8") && strstr(c.note, "4")); /* the rank counts the profile has */
    TAP_CHECK(!strchr(c.note, '\n'));
    s.fabric = "pcie-hostbridge";
    c = choose(&s);
    TAP_CHECK(!c.from_profile && strstr(c.note, "fabric") && strstr(c.note, "pcie-switch") && strstr(c.note, "nvlink"));
    /* an allreduce site where the profile has only fused rows (4 ranks), or an
     * allreduce row in another mode only (8 ranks: eager) */
    s = site("ar", ARB_OP_ALLREDUCE, 1, 7168, ARB_MODE_GRAPH, 4, "pcie-switch");
    c = choose(&s);
    TAP_CHECK(!c.from_profile && strstr(c.note, "its op") && strstr(c.note, "allreduce_rmsnorm") && c.fusion == ARB_FUSION_AUTO);
    s.ranks = 8;
    c = choose(&s);
    TAP_CHECK(!c.from_profile && strstr(c.note, "its mode (hand.csv has: eager)"));
    /* the CPU reference engine falls back to its own backend */
    char why0[256];
    TAP_CHECK(arb_site_choose(&prof, "hand.csv", &s, "mpi-host", &c, why0, sizeof why0) == ARB_OK);
    TAP_CHECK(!c.from_profile && strcmp(c.impl, "mpi-host") == 0 && strstr(c.note, "-> mpi-host (its own choice)"));
    /* no profile at all */
    char why[256];
    TAP_CHECK(arb_site_choose(NULL, NULL, &s, NULL, &c, why, sizeof why) == ARB_OK && !c.from_profile &&
              strcmp(c.impl, "nccl") == 0 && strstr(c.note, "no profile"));
    /* not a site */
    s.tokens = 0;
    TAP_CHECK(arb_site_choose(&prof, "hand.csv", &s, NULL, &c, why, sizeof why) == ARB_ERR_INVALID && strstr(why, "tokens"));
}

static void test_mode_mismatch(void)
{
    arb_site_t s = site("verify.attn", ARB_OP_ALLREDUCE_RMSNORM, 3, 7168, ARB_MODE_CONTEXT, 8, "pcie-switch");
    arb_choice_t c = choose(&s);
    TAP_CHECK(!c.from_profile && strcmp(c.impl, "nccl") == 0);
    TAP_CHECK(strstr(c.note, "its mode") && strstr(c.note, "graph") && strstr(c.note, "eager"));
    /* nvlink x 2 has graph rows only: an eager site falls back, a graph one matches */
    s = site("decode.attn", ARB_OP_ALLREDUCE_RMSNORM, 1, 7168, ARB_MODE_EAGER, 2, "nvlink");
    TAP_CHECK(!choose(&s).from_profile);
}

static void test_op_tier_and_nodes(void)
{
    /* a fused site served by a plain all-reduce row: that all-reduce, composed */
    arb_site_t s = site("decode.attn", ARB_OP_ALLREDUCE_RMSNORM, 1, 7168, ARB_MODE_GRAPH, 2, "nvlink");
    arb_choice_t c = choose(&s);
    TAP_CHECK(c.from_profile && strcmp(c.impl, "p2p") == 0 && c.fusion == ARB_FUSION_COMPOSED);
    /* nodes: the exact count beats "not recorded"; another count takes the nodes-0 row */
    s = site("n", ARB_OP_ALLREDUCE, 1, 7168, ARB_MODE_GRAPH, 2, "multi");
    s.nodes = 2;
    TAP_CHECK(strcmp(choose(&s).params, "algo=Tree") == 0);
    s.nodes = 1;
    TAP_CHECK(strcmp(choose(&s).params, "algo=Ring") == 0);
}

static const char profile_json[] =
    "{ \"schema\": 1, \"generator\": \"arbench profile\", \"sources\": [],\n"
    "  \"entries\": [\n"
    "   { \"fabric\": \"pcie-switch\", \"ranks\": 8, \"nodes\": 1, \"dtype\": \"bf16\", \"op\": \"allreduce_rmsnorm\",\n"
    "     \"fusion\": \"fused\", \"mode\": \"graph\", \"min_bytes\": 0, \"max_bytes\": 50000, \"impl\": \"lsa\",\n"
    "     \"params\": \"variant=oneshot,pdl=1\", \"confidence\": \"ci95\", \"median_us\": 12.5, \"rep_bytes\": 43008,\n"
    "     \"baseline_impl\": \"nccl\", \"baseline_params\": \"algo=Ring,proto=LL\", \"baseline_median_us\": 30.1,\n"
    "     \"speedup\": 2.408, \"sources\": \"a.csv@r1\" },\n"
    "   { \"fabric\": \"pcie-switch\", \"ranks\": 8, \"nodes\": 1, \"dtype\": \"bf16\", \"op\": \"allreduce_rmsnorm\",\n"
    "     \"fusion\": \"unfused\", \"mode\": \"graph\", \"min_bytes\": 50001, \"max_bytes\": null, \"impl\": \"nccl\",\n"
    "     \"params\": \"algo=Ring,proto=LL,nccl=2.28.3\", \"confidence\": \"baseline\", \"median_us\": 80, \"rep_bytes\": 917504,\n"
    "     \"baseline_impl\": \"nccl\", \"baseline_params\": \"\", \"baseline_median_us\": null, \"speedup\": null, \"sources\": \"\" } ] }\n";

static void test_json(void)
{
    arb_profile_t pj;
    char why[512];
    TAP_CHECK(arb_site_profile_from_json(profile_json, sizeof profile_json - 1, "p.json", &pj, why, sizeof why) == ARB_OK);
    TAP_CHECK(pj.n == 2);
    if (pj.n != 2)
        return;
    TAP_CHECK(pj.e[1].max_bytes == SIZE_MAX && pj.e[0].max_bytes == 50000);
    arb_site_t s = site("verify.attn", ARB_OP_ALLREDUCE_RMSNORM, 3, 7168, ARB_MODE_GRAPH, 8, "pcie-switch");
    arb_choice_t c;
    TAP_CHECK(arb_site_choose(&pj, "p.json", &s, NULL, &c, why, sizeof why) == ARB_OK);
    TAP_CHECK(strcmp(c.impl, "lsa") == 0 && c.fusion == ARB_FUSION_PLUGIN && strcmp(c.params, "variant=oneshot,pdl=1") == 0);
    s.tokens = 1024; /* far into the open-ended range */
    TAP_CHECK(arb_site_choose(&pj, "p.json", &s, NULL, &c, why, sizeof why) == ARB_OK);
    TAP_CHECK(strcmp(c.impl, "nccl") == 0 && strcmp(c.params, "algo=Ring,proto=LL") == 0 && c.fusion == ARB_FUSION_COMPOSED);
    arb_profile_free(&pj);
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static void test_malformed_refused(void)
{
    char dir[] = "/tmp/arb-e2e-prof-XXXXXX";
    if (!mkdtemp(dir)) {
        TAP_CHECK(!"mkdtemp");
        return;
    }
    char path[256], why[1024];
    arb_profile_t p;
    struct {
        const char *file, *text, *expect;
    } bad[] = {
        {"overlap.csv", HDR "1,x,2,1,bf16,allreduce,graph,0,100,nccl,,1,,,,,,,,,\n1,x,2,1,bf16,allreduce,graph,50,200,p2p,,1,,,,,,,,,\n", "overlap"},
        {"maxmin.csv", HDR "1,x,2,1,bf16,allreduce,graph,100,50,nccl,,1,,,,,,,,,\n", "line 2: bad max_bytes"},
        {"schema.csv", HDR "2,x,2,1,bf16,allreduce,graph,0,50,nccl,,1,,,,,,,,,\n", "schema"},
        {"nocols.csv", "fabric,ranks\nx,2\n", "missing column"},
        {"type.json", "{\"schema\":1,\"entries\":[{\"fabric\":\"x\",\"ranks\":2,\"dtype\":\"bf16\",\"op\":\"allreduce\",\"mode\":\"graph\",\"min_bytes\":0,\"max_bytes\":9,\"impl\":\"nccl\",\"params\":\"\"},{\"fabric\":\"x\",\"ranks\":\"two\"}]}", "entries[1].ranks: expected an integer"},
        {"range.json", "{\"schema\":1,\"entries\":[{\"fabric\":\"x\",\"ranks\":2,\"dtype\":\"bf16\",\"op\":\"allreduce\",\"mode\":\"graph\",\"min_bytes\":10,\"max_bytes\":9,\"impl\":\"nccl\",\"params\":\"\"}]}", "entries[0]: bad max_bytes"},
        {"trunc.json", "{\"schema\":1,\"entries\":[", "not JSON"},
        {"shape.json", "{\"schema\":1,\"rows\":[]}", "\"entries\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, bad[i].file);
        TAP_CHECK(write_file(path, bad[i].text) == 0);
        why[0] = '\0';
        arb_status_t st = arb_site_profile_load(path, &p, why, sizeof why);
        int ok = st == ARB_ERR_INVALID && strstr(why, path) && strstr(why, bad[i].expect);
        if (!ok)
            printf("# %s: status %d, reason: %s\n", bad[i].file, (int)st, why);
        TAP_CHECK(ok);
        if (st == ARB_OK)
            arb_profile_free(&p);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/absent.csv", dir);
    TAP_CHECK(arb_site_profile_load(path, &p, why, sizeof why) == ARB_ERR_INVALID && strstr(why, path));
    /* the good files load from disk, CSV and JSON alike */
    snprintf(path, sizeof path, "%s/good.csv", dir);
    TAP_CHECK(write_file(path, profile_csv) == 0);
    TAP_CHECK(arb_site_profile_load(path, &p, why, sizeof why) == ARB_OK && p.n == 8);
    arb_profile_free(&p);
    unlink(path);
    snprintf(path, sizeof path, "%s/good.json", dir);
    TAP_CHECK(write_file(path, profile_json) == 0);
    TAP_CHECK(arb_site_profile_load(path, &p, why, sizeof why) == ARB_OK && p.n == 2);
    arb_profile_free(&p);
    unlink(path);
    rmdir(dir);
}

static void test_choice_parse(void)
{
    arb_choice_t c;
    char why[256], label[300];
    TAP_CHECK(arb_choice_parse("lsa:variant=oneshot,pdl=1", &c, why, sizeof why) == ARB_OK);
    TAP_CHECK(strcmp(c.impl, "lsa") == 0 && strcmp(c.params, "variant=oneshot,pdl=1") == 0 && c.fusion == ARB_FUSION_AUTO);
    arb_choice_label(&c, label, sizeof label);
    TAP_CHECK(strcmp(label, "lsa:variant=oneshot,pdl=1") == 0);
    TAP_CHECK(arb_choice_parse("nccl", &c, why, sizeof why) == ARB_OK && strcmp(c.impl, "nccl") == 0 && !*c.params);
    TAP_CHECK(arb_choice_parse("", &c, why, sizeof why) == ARB_ERR_INVALID && strstr(why, "IMPL[:params]"));
    TAP_CHECK(arb_choice_parse(":algo=Ring", &c, why, sizeof why) == ARB_ERR_INVALID);
}

/* ---- the registry, on a recording backend ---- */

typedef struct rec {
    int opens, closes, decline_lsa, fused_lsa, invalid_lsa;
    char opened[8][300];
    arb_use_t uses[8];
    int objs[8];
} rec_t;

static arb_status_t rec_open(void *ctx, const char *impl, const char *params, const arb_use_t *use, arb_inst_t **out,
                             char *why, size_t why_len)
{
    rec_t *r = ctx;
    if (r->decline_lsa && strcmp(impl, "lsa") == 0) {
        snprintf(why, why_len, "lsa: no P2P between the GPUs");
        return ARB_DECLINE;
    }
    if (r->invalid_lsa && strcmp(impl, "lsa") == 0) {
        snprintf(why, why_len, "lsa params '%s': unknown key", params);
        return ARB_ERR_INVALID;
    }
    if (r->opens == 8)
        return ARB_ERR_SYSTEM;
    snprintf(r->opened[r->opens], sizeof r->opened[0], "%s:%s", impl, params);
    r->uses[r->opens] = *use;
    *out = (arb_inst_t *)&r->objs[r->opens];
    r->objs[r->opens] = r->opens;
    r->opens++;
    return ARB_OK;
}

static int rec_has_fused(void *ctx, const arb_inst_t *in)
{
    rec_t *r = ctx;
    const int *o = (const int *)in;
    return strncmp(r->opened[*o], "lsa:", 4) == 0 && r->fused_lsa;
}

static void rec_close(void *ctx, arb_inst_t *in)
{
    (void)in;
    ((rec_t *)ctx)->closes++;
}

/* decode (1 token) and verify (3) on lsa, prefill (64) on NCCL Ring, a site with no entry. */
static void registry_sites(arb_site_registry_t *reg, size_t slot[5])
{
    static const struct {
        const char *name;
        unsigned tokens;
        int ranks;
    } sites[] = {{"decode.attn", 1, 8}, {"decode.ffn", 1, 8}, {"verify.attn", 3, 8}, {"prefill.attn", 64, 8}, {"odd.x16", 1, 16}};
    char why[256];
    arb_site_registry_init(reg, NULL);
    for (size_t i = 0; i < 5; i++) {
        arb_site_t s = site(sites[i].name, ARB_OP_ALLREDUCE_RMSNORM, sites[i].tokens, 7168, ARB_MODE_GRAPH, sites[i].ranks, "pcie-switch");
        arb_choice_t c = choose(&s);
        TAP_CHECK(arb_site_registry_add(reg, &s, &c, &slot[i], why, sizeof why) == ARB_OK);
    }
}

static void test_registry_opens_once(void)
{
    static arb_site_registry_t reg;
    size_t slot[5];
    registry_sites(&reg, slot);
    rec_t r = {.fused_lsa = 1};
    arb_inst_backend_t b = {.open = rec_open, .has_fused = rec_has_fused, .close = rec_close, .ctx = &r};
    char why[256];
    TAP_CHECK(arb_site_registry_open(&reg, &b, 0, why, sizeof why) == ARB_OK);
    TAP_CHECK(r.opens == 3); /* lsa, nccl Ring, nccl's own: each once */
    TAP_CHECK(strcmp(r.opened[0], "lsa:variant=oneshot,pdl=1") == 0);
    TAP_CHECK(strcmp(r.opened[1], "nccl:algo=Ring,proto=LL") == 0);
    TAP_CHECK(strcmp(r.opened[2], "nccl:") == 0); /* the fallback opens last */
    /* lsa serves 1- and 3-token sites: sized for the larger, the fused op */
    TAP_CHECK(r.uses[0].max_bytes == 43008 && r.uses[0].max_tokens == 3 && r.uses[0].op == ARB_OP_ALLREDUCE_RMSNORM);
    TAP_CHECK(r.uses[0].hidden == 7168 && r.uses[0].mode == ARB_MODE_GRAPH && r.uses[0].dtype == ARB_DTYPE_BF16);
    TAP_CHECK(r.uses[1].max_bytes == 64u * 7168 * 2);
    arb_fusion_t fz;
    arb_inst_t *a = arb_site_registry_instance(&reg, slot[0], &fz);
    TAP_CHECK(a == (arb_inst_t *)&r.objs[0] && fz == ARB_FUSION_PLUGIN);
    TAP_CHECK(arb_site_registry_instance(&reg, slot[1], NULL) == a && arb_site_registry_instance(&reg, slot[2], NULL) == a);
    TAP_CHECK(arb_site_registry_instance(&reg, slot[3], &fz) == (arb_inst_t *)&r.objs[1] && fz == ARB_FUSION_COMPOSED);
    TAP_CHECK(arb_site_registry_instance(&reg, slot[4], NULL) == (arb_inst_t *)&r.objs[2]);
    TAP_CHECK(!arb_site_registry_choice(&reg, slot[4])->from_profile);
    arb_site_t late = site("late", ARB_OP_ALLREDUCE, 1, 7168, ARB_MODE_GRAPH, 8, "pcie-switch");
    arb_choice_t c = choose(&late);
    size_t ls;
    TAP_CHECK(arb_site_registry_add(&reg, &late, &c, &ls, why, sizeof why) == ARB_ERR_INVALID);
    arb_site_registry_close(&reg);
    TAP_CHECK(r.closes == 3);
}

static void test_registry_decline_falls_back(void)
{
    static arb_site_registry_t reg;
    size_t slot[5];
    registry_sites(&reg, slot);
    rec_t r = {.decline_lsa = 1};
    arb_inst_backend_t b = {.open = rec_open, .has_fused = rec_has_fused, .close = rec_close, .ctx = &r};
    char why[256];
    TAP_CHECK(arb_site_registry_open(&reg, &b, 0, why, sizeof why) == ARB_OK);
    TAP_CHECK(r.opens == 2 && strcmp(r.opened[1], "nccl:") == 0);
    /* the fallback instance is sized for every site now on it (verify's 3 tokens included) */
    TAP_CHECK(r.uses[1].max_bytes == 43008 && r.uses[1].max_tokens == 3);
    const arb_choice_t *c = arb_site_registry_choice(&reg, slot[2]);
    TAP_CHECK(strcmp(c->impl, "nccl") == 0 && !c->from_profile && c->fusion == ARB_FUSION_COMPOSED);
    TAP_CHECK(strstr(c->note, "verify.attn") && strstr(c->note, "declined") && strstr(c->note, "no P2P"));
    TAP_CHECK(arb_site_registry_instance(&reg, slot[0], NULL) == arb_site_registry_instance(&reg, slot[4], NULL));
    arb_site_registry_close(&reg);
    TAP_CHECK(r.closes == 2);
    /* a fused choice on a plugin without its own kernel runs composed */
    registry_sites(&reg, slot);
    rec_t r2 = {.fused_lsa = 0};
    b.ctx = &r2;
    TAP_CHECK(arb_site_registry_open(&reg, &b, 0, why, sizeof why) == ARB_OK);
    arb_fusion_t fz;
    arb_site_registry_instance(&reg, slot[2], &fz);
    TAP_CHECK(fz == ARB_FUSION_COMPOSED && strstr(arb_site_registry_choice(&reg, slot[2])->note, "no fused kernel"));
    FILE *devnull = fopen("/dev/null", "w");
    if (devnull) {
        arb_site_registry_print(&reg, devnull);
        fclose(devnull);
    }
    arb_site_registry_close(&reg);
}

static void test_registry_refused_params(void)
{
    /* params from a profile that the plugin refuses: the sites fall back, saying so */
    static arb_site_registry_t reg;
    size_t slot[5];
    registry_sites(&reg, slot);
    rec_t r = {.invalid_lsa = 1};
    arb_inst_backend_t b = {.open = rec_open, .has_fused = rec_has_fused, .close = rec_close, .ctx = &r};
    char why[512];
    TAP_CHECK(arb_site_registry_open(&reg, &b, 0, why, sizeof why) == ARB_OK);
    const arb_choice_t *c = arb_site_registry_choice(&reg, slot[0]);
    TAP_CHECK(strcmp(c->impl, "nccl") == 0 && strstr(c->note, "refused its params") && strstr(c->note, "unknown key"));
    arb_site_registry_close(&reg);
    /* the same params given on the command line: an error naming them */
    arb_site_registry_init(&reg, NULL);
    arb_site_t s = site("decode.attn", ARB_OP_ALLREDUCE_RMSNORM, 1, 7168, ARB_MODE_GRAPH, 8, "pcie-switch");
    arb_choice_t cl;
    size_t sl;
    TAP_CHECK(arb_choice_parse("lsa:variant=bogus", &cl, why, sizeof why) == ARB_OK);
    TAP_CHECK(arb_site_registry_add(&reg, &s, &cl, &sl, why, sizeof why) == ARB_OK);
    TAP_CHECK(arb_site_registry_open(&reg, &b, 0, why, sizeof why) == ARB_ERR_INVALID && strstr(why, "lsa:variant=bogus"));
    arb_site_registry_close(&reg);
}

int main(int argc, char **argv)
{
    load_fixture();
    static const tap_test_t tests[] = {
        {"exact_match", test_exact_match},
        {"range_edges", test_range_edges},
        {"fallback", test_fallback},
        {"mode_mismatch", test_mode_mismatch},
        {"op_tier_and_nodes", test_op_tier_and_nodes},
        {"json", test_json},
        {"malformed_refused", test_malformed_refused},
        {"choice_parse", test_choice_parse},
        {"registry_opens_once", test_registry_opens_once},
        {"registry_decline_falls_back", test_registry_decline_falls_back},
        {"registry_refused_params", test_registry_refused_params},
    };
    int rc = tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
    arb_profile_free(&prof);
    return rc;
}
