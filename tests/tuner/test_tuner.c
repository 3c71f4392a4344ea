/* SPDX-License-Identifier: MIT */
/*
 * The NCCL tuner plugin through its real loading path: dlopen the built module, look up
 * ncclTunerPlugin_v5 and _v4 as NCCL does, call init with a fake NCCL logger and
 * getCollInfo with a synthetic cost table, and check that the profile's choice (and
 * nothing else) changed. TAP output; each test runnable alone: test_tuner MODULE [NAME].
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_tuner_abi.h"

#define NA NCCL_NUM_ALGORITHMS_V5
#define NP NCCL_NUM_PROTOCOLS_V5

static const ncclTuner_v5_t *v5;
static const ncclTuner_v4_t *v4;
static void *module;
static char tmpdir[] = "/tmp/arb-tuner-test-XXXXXX";

/* ---- fake NCCL logger: records every line ---- */
#define MAX_LOGS 64
static struct {
    ncclDebugLogLevel level;
    unsigned long flags;
    char text[1200];
} logs[MAX_LOGS];
static int nlogs;

static void fake_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                     const char *fmt, ...)
{
    (void)file;
    (void)line;
    if (nlogs == MAX_LOGS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(logs[nlogs].text, sizeof logs[nlogs].text, fmt, ap);
    va_end(ap);
    logs[nlogs].level = level;
    logs[nlogs].flags = flags;
    if (getenv("TUNER_TEST_VERBOSE"))
        fprintf(stderr, "# log %d: %s\n", (int)level, logs[nlogs].text);
    nlogs++;
}

static int count_logs(ncclDebugLogLevel level, const char *needle)
{
    int n = 0;
    for (int i = 0; i < nlogs; i++)
        if (logs[i].level == level && (!needle || strstr(logs[i].text, needle)))
            n++;
    return n;
}

/* ---- failures: print a TAP diagnostic and fail the current test ---- */
static int failed;
#define EXPECT(cond, ...)                                                                \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            printf("# %s:%d: expected %s: ", __FILE__, __LINE__, #cond);                 \
            printf(__VA_ARGS__);                                                         \
            printf("\n");                                                                \
            failed = 1;                                                                  \
        }                                                                                \
    } while (0)

/* ---- profiles ---- */
#define HEADER                                                                           \
    "schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params,median_us," \
    "baseline_impl,baseline_params,baseline_median_us,speedup,confidence,sources\n"
/* With the columns `arbench profile` writes after them (fusion, rep_bytes, points, role). */
#define HEADER_ROLE                                                                      \
    "schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params,median_us," \
    "baseline_impl,baseline_params,baseline_median_us,speedup,confidence,sources,fusion,rep_bytes,points,role\n"
/* A row: ranks, nodes, dtype, op, mode, min, max, impl, params (quoted: it holds commas). */
#define ROW(ranks, nodes, dtype, op, mode, lo, hi, impl, params)                        \
    "1,pcie," ranks "," nodes "," dtype "," op "," mode "," lo "," hi "," impl ",\"" params \
    "\",7.5,nccl,\"algo=Ring,proto=LL\",9.0,1.2,ci95,results/a.csv@run1\n"

static char profile_path[512];

static void use_profile(const char *content)
{
    snprintf(profile_path, sizeof profile_path, "%s/profile.csv", tmpdir);
    FILE *f = fopen(profile_path, "w");
    if (!f || fputs(content, f) < 0 || fclose(f)) {
        printf("Bail out! cannot write %s\n", profile_path);
        exit(1);
    }
    setenv("ARBENCH_TUNER_PROFILE", profile_path, 1);
}

/* ---- cost tables: distinct costs (so that any change shows), some cells unavailable
 * as NCCL marks them on a single PCIe node: CollNet, NVLS and Ring/LL128 ---- */
static void fill_table(float t[NA][NP])
{
    for (int a = 0; a < NA; a++)
        for (int p = 0; p < NP; p++)
            t[a][p] = 100.0f + (float)(a * NP + p);
    for (int a = NCCL_ALGO_COLLNET_DIRECT; a <= NCCL_ALGO_NVLS_TREE; a++)
        for (int p = 0; p < NP; p++)
            t[a][p] = NCCL_ALGO_PROTO_IGNORE;
    t[NCCL_ALGO_RING][NCCL_PROTO_LL128] = NCCL_ALGO_PROTO_IGNORE;
}

/* Runs init (v5) + one getCollInfo + finalize; checks that only cell (algo, proto) changed,
 * to 0 (algo < 0: nothing changed), and that nChannels became `channels` (0: untouched). */
static void expect_choice(size_t nranks, size_t nnodes, ncclFunc_t coll, size_t nbytes, int algo,
                          int proto, int channels)
{
    float before[NA][NP], table[NA][NP];
    fill_table(before);
    memcpy(table, before, sizeof table);
    void *ctx = (void *)1;
    ncclNvlDomainInfo_v5_t nvl = {.nNvlDomains = 1, .minRanksPerNvlDomain = 1, .maxRanksPerNvlDomain = 1};
    ncclTunerConstants_v5_t constants;
    memset(&constants, 0x5a, sizeof constants);
    ncclTunerConstants_v5_t constants_before = constants;
    EXPECT(v5->init(&ctx, 42, nranks, nnodes, fake_log, &nvl, &constants) == ncclSuccess, "init ok");
    EXPECT(memcmp(&constants, &constants_before, sizeof constants) == 0, "constants untouched");
    int nch = 0;
    EXPECT(v5->getCollInfo(ctx, coll, nbytes, 1, (float **)table, NA, NP, 0, &nch) == ncclSuccess,
           "getCollInfo ok");
    EXPECT(v5->finalize(ctx) == ncclSuccess, "finalize ok");
    for (int a = 0; a < NA; a++)
        for (int p = 0; p < NP; p++) {
            float want = (a == algo && p == proto) ? 0.0f : before[a][p];
            EXPECT(table[a][p] == want, "cell [%d][%d] = %g, want %g", a, p, (double)table[a][p],
                   (double)want);
        }
    EXPECT(nch == channels, "nChannels %d, want %d", nch, channels);
}

#define UNCHANGED -1, -1, 0

/* ---- the tests ---- */

static void t_exports(void)
{
    EXPECT(v5 && v5->name && strcmp(v5->name, "arbench") == 0, "v5 named arbench");
    EXPECT(v5 && v5->init && v5->getCollInfo && v5->finalize, "v5 callbacks set");
    EXPECT(v4 && v4->name && strcmp(v4->name, "arbench") == 0, "v4 named arbench");
    EXPECT(v4 && v4->init && v4->getCollInfo && v4->destroy, "v4 callbacks set");
    /* everything else is hidden, including the compiled-in CSV reader */
    static const char *const hidden[] = {"tuner_rules_load", "tuner_rules_find", "arb_table_read",
                                         "arb_table_free", "arb_profile_row_check", "arb_role_parse",
                                         "ncclTunerPlugin_v6", NULL};
    for (int i = 0; hidden[i]; i++)
        EXPECT(dlsym(module, hidden[i]) == NULL, "%s not exported", hidden[i]);
}

static const char *const two_ranges =
    HEADER ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=Ring,proto=LL,nccl=2.28.3")
           ROW("2", "1", "bf16", "allreduce", "graph", "65537", "1048576", "nccl", "algo=Tree,proto=Simple,channels=4,nccl=2.28.3")
           ROW("2", "1", "bf16", "allreduce", "graph", "0", "1048576", "p2p", "variant=oneshot-push,blocks=8,threads=512");

static void t_steer(void)
{
    use_profile(two_ranges);
    expect_choice(2, 1, ncclFuncAllReduce, 43008, NCCL_ALGO_RING, NCCL_PROTO_LL, 0);
    EXPECT(count_logs(NCCL_LOG_WARN, NULL) == 0, "no warning");
    EXPECT(count_logs(NCCL_LOG_INFO, "2 all-reduce rows") == 1, "init says it loaded 2 rows");
}

static void t_channels(void)
{
    use_profile(two_ranges);
    expect_choice(2, 1, ncclFuncAllReduce, 100000, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 4);
}

static void t_bounds_inclusive(void)
{
    use_profile(two_ranges);
    expect_choice(2, 1, ncclFuncAllReduce, 0, NCCL_ALGO_RING, NCCL_PROTO_LL, 0);
    expect_choice(2, 1, ncclFuncAllReduce, 65536, NCCL_ALGO_RING, NCCL_PROTO_LL, 0);
    expect_choice(2, 1, ncclFuncAllReduce, 65537, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 4);
    expect_choice(2, 1, ncclFuncAllReduce, 1048576, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 4);
}

static void t_outside_ranges(void)
{
    use_profile(two_ranges);
    expect_choice(2, 1, ncclFuncAllReduce, 1048577, UNCHANGED);
    expect_choice(2, 1, ncclFuncAllReduce, (size_t)1 << 40, UNCHANGED);
    EXPECT(count_logs(NCCL_LOG_WARN, NULL) == 0, "no warning");
}

static void t_ranks_mismatch(void)
{
    use_profile(two_ranges);
    expect_choice(4, 1, ncclFuncAllReduce, 43008, UNCHANGED);
    expect_choice(1, 1, ncclFuncAllReduce, 43008, UNCHANGED);
    EXPECT(count_logs(NCCL_LOG_INFO, "0 all-reduce rows") == 2, "init says no row applies");
}

static void t_nodes(void)
{
    use_profile(HEADER ROW("2", "2", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=Tree,proto=LL")
                       ROW("2", "", "bf16", "allreduce", "eager", "0", "65536", "nccl", "algo=Ring,proto=Simple"));
    /* two nodes: the node-specific graph row wins; one node: only the row without nodes fits */
    expect_choice(2, 2, ncclFuncAllReduce, 43008, NCCL_ALGO_TREE, NCCL_PROTO_LL, 0);
    expect_choice(2, 1, ncclFuncAllReduce, 43008, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 0);
    use_profile(HEADER ROW("2", "2", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=Tree,proto=LL"));
    expect_choice(2, 1, ncclFuncAllReduce, 43008, UNCHANGED);
}

static void t_mode_preference(void)
{
    /* eager listed first and narrower: graph still wins, then context, then eager */
    use_profile(HEADER ROW("2", "1", "bf16", "allreduce", "eager", "40000", "50000", "nccl", "algo=Tree,proto=Simple")
                       ROW("2", "1", "bf16", "allreduce", "context", "0", "65536", "nccl", "algo=Tree,proto=LL")
                       ROW("2", "1", "bf16", "allreduce", "graph", "0", "1048576", "nccl", "algo=Ring,proto=LL"));
    expect_choice(2, 1, ncclFuncAllReduce, 43008, NCCL_ALGO_RING, NCCL_PROTO_LL, 0);
    use_profile(HEADER ROW("2", "1", "bf16", "allreduce", "eager", "40000", "50000", "nccl", "algo=Tree,proto=Simple")
                       ROW("2", "1", "bf16", "allreduce", "context", "0", "65536", "nccl", "algo=Tree,proto=LL"));
    expect_choice(2, 1, ncclFuncAllReduce, 43008, NCCL_ALGO_TREE, NCCL_PROTO_LL, 0);
    /* same mode: bf16 before fp32, then the narrower range */
    use_profile(HEADER ROW("2", "1", "fp32", "allreduce", "graph", "43008", "43008", "nccl", "algo=Tree,proto=Simple")
                       ROW("2", "1", "bf16", "allreduce", "graph", "0", "1048576", "nccl", "algo=Ring,proto=Simple")
                       ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=Ring,proto=LL"));
    expect_choice(2, 1, ncclFuncAllReduce, 43008, NCCL_ALGO_RING, NCCL_PROTO_LL, 0);
}

static void t_other_rows_ignored(void)
{
    /* other impls, the fused op and rows naming no choice are not for NCCL */
    use_profile(HEADER ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "p2p", "variant=oneshot-push,blocks=8")
                       ROW("2", "1", "bf16", "allreduce_rmsnorm", "graph", "0", "65536", "nccl", "algo=Tree,proto=LL")
                       ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "nccl=2.28.3")
                       ROW("2", "1", "bf16", "allreduce", "eager", "0", "65536", "nccl", "algo=Ring,proto=Simple"));
    expect_choice(2, 1, ncclFuncAllReduce, 43008, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 0);
    EXPECT(count_logs(NCCL_LOG_WARN, NULL) == 0, "no warning");
}

static void t_other_collectives(void)
{
    use_profile(two_ranges);
    expect_choice(2, 1, ncclFuncAllGather, 43008, UNCHANGED);
    expect_choice(2, 1, ncclFuncReduceScatter, 43008, UNCHANGED);
    expect_choice(2, 1, (ncclFunc_t)8 /* AlltoAll in 2.28 */, 43008, UNCHANGED);
}

static void t_unavailable_cell(void)
{
    /* Ring/LL128 is IGNORE in the table (as NCCL marks it on PCIe): leave it, warn once */
    use_profile(HEADER ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=Ring,proto=LL128,channels=2"));
    float before[NA][NP], table[NA][NP];
    fill_table(before);
    memcpy(table, before, sizeof table);
    void *ctx = NULL;
    EXPECT(v5->init(&ctx, 1, 2, 1, fake_log, NULL, NULL) == ncclSuccess, "init ok");
    for (int i = 0; i < 3; i++) {
        int nch = 0;
        EXPECT(v5->getCollInfo(ctx, ncclFuncAllReduce, 43008, 1, (float **)table, NA, NP, 0, &nch) ==
                   ncclSuccess, "getCollInfo ok");
        EXPECT(nch == 0, "channels not applied for an unavailable cell, got %d", nch);
    }
    v5->finalize(ctx);
    EXPECT(memcmp(table, before, sizeof table) == 0, "table unchanged");
    EXPECT(count_logs(NCCL_LOG_WARN, "unavailable") == 1, "warned once, got %d",
           count_logs(NCCL_LOG_WARN, "unavailable"));
}

static void t_no_env(void)
{
    unsetenv("ARBENCH_TUNER_PROFILE");
    expect_choice(2, 1, ncclFuncAllReduce, 43008, UNCHANGED);
    setenv("ARBENCH_TUNER_PROFILE", "", 1);
    expect_choice(2, 1, ncclFuncAllReduce, 43008, UNCHANGED);
    EXPECT(count_logs(NCCL_LOG_WARN, NULL) == 0, "no warning");
}

/* A profile that must be refused as a whole: logged once (naming `needle`), table untouched. */
static void expect_refused(const char *content, const char *needle)
{
    use_profile(content);
    int before = nlogs;
    expect_choice(2, 1, ncclFuncAllReduce, 43008, UNCHANGED);
    int warns = 0, named = 0;
    for (int i = before; i < nlogs; i++)
        if (logs[i].level == NCCL_LOG_WARN) {
            warns++;
            named += strstr(logs[i].text, needle) && strstr(logs[i].text, "profile not used");
        }
    EXPECT(warns == 1 && named == 1, "one warning naming '%s', got %d warnings", needle, warns);
}

/* A profile cut mid-row (a full disk, a partial copy) is refused, naming the row. */
static void t_truncated(void)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", two_ranges);
    buf[strlen(buf) - 9] = '\0'; /* inside the last row's sources */
    expect_refused(buf, "line 4 (the last row) is cut off");
}

/* A row whose figures disagree (speedup 1.5 where 9.0 / 7.5 = 1.2) was edited: refused,
 * even where the row would steer NCCL. */
static void t_inconsistent(void)
{
    expect_refused(HEADER "1,pcie,2,1,bf16,allreduce,graph,0,65536,nccl,\"algo=Ring,proto=LL\",7.5,nccl,\"algo=Ring,proto=LL\",9.0,1.5,ci95,results/a.csv@run1\n",
                   "speedup 1.5000, but baseline_median_us / median_us");
    expect_refused(HEADER_ROLE "1,pcie,2,1,bf16,allreduce,graph,0,65536,noop,,7.5,nccl,\"algo=Ring,proto=LL\",9.0,1.2,ci95,results/a.csv@run1,,99999,1,candidate\n",
                   "rep_bytes");
}

/* The role column, not the name, says which rows are NCCL's own choice: a baseline row
 * steers NCCL whatever its impl is called; an nccl-named candidate row does not. */
static void t_roles(void)
{
    use_profile(HEADER_ROLE
                "1,pcie,2,1,bf16,allreduce,graph,0,65536,vendor-ar,\"algo=Tree,proto=LL\",7.5,vendor-ar,\"algo=Tree,proto=LL\",7.5,1.0,baseline,results/a.csv@run1,,43008,3,baseline\n"
                "1,pcie,2,1,bf16,allreduce,eager,0,65536,nccl,\"algo=Ring,proto=Simple\",7.5,nccl,\"algo=Ring,proto=LL\",9.0,1.2,ci95,results/a.csv@run1,,43008,3,candidate\n");
    expect_choice(2, 1, ncclFuncAllReduce, 43008, NCCL_ALGO_TREE, NCCL_PROTO_LL, 0);
    EXPECT(count_logs(NCCL_LOG_INFO, "1 all-reduce rows") == 1, "init loaded the baseline row only");
    expect_refused(HEADER_ROLE "1,pcie,2,1,bf16,allreduce,graph,0,65536,noop,,7.5,nccl,\"algo=Ring,proto=LL\",9.0,1.2,ci95,results/a.csv@run1,,43008,1,reference\n",
                   "role 'reference'");
}

static void t_missing_file(void)
{
    setenv("ARBENCH_TUNER_PROFILE", "/nonexistent/arbench-profile.csv", 1);
    expect_choice(2, 1, ncclFuncAllReduce, 43008, UNCHANGED);
    EXPECT(count_logs(NCCL_LOG_WARN, "/nonexistent/arbench-profile.csv") == 1, "warning names the path");
}

static void t_malformed(void)
{
    const char *good = ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=Ring,proto=LL");
    char buf[4096];
    /* a required column missing */
    expect_refused("schema,ranks,nodes,dtype,op,mode,min_bytes,impl,params\n"
                   "1,2,1,bf16,allreduce,graph,0,nccl,\"algo=Ring,proto=LL\"\n", "max_bytes");
    /* a row with fewer fields than the header */
    snprintf(buf, sizeof buf, "%s%s1,pcie,2,1\n", HEADER, good);
    expect_refused(buf, "fields");
    /* bad numbers, even in a row that would not apply */
    snprintf(buf, sizeof buf, "%s%s%s", HEADER, good,
             ROW("2", "1", "bf16", "allreduce", "graph", "12x", "65536", "p2p", "variant=a"));
    expect_refused(buf, "min_bytes");
    snprintf(buf, sizeof buf, "%s%s", HEADER,
             ROW("2", "1", "bf16", "allreduce", "graph", "0", "-5", "nccl", "algo=Ring,proto=LL"));
    expect_refused(buf, "max_bytes");
    snprintf(buf, sizeof buf, "%s%s", HEADER,
             ROW("two", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=Ring,proto=LL"));
    expect_refused(buf, "ranks");
    snprintf(buf, sizeof buf, "%s%s", HEADER,
             ROW("2", "1.5", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=Ring,proto=LL"));
    expect_refused(buf, "nodes");
    snprintf(buf, sizeof buf, "%s%s", HEADER,
             ROW("2", "1", "bf16", "allreduce", "graph", "65537", "65536", "nccl", "algo=Ring,proto=LL"));
    expect_refused(buf, "at most max_bytes");
    snprintf(buf, sizeof buf, "%s%s", HEADER,
             ROW("2", "1", "bf16", "allreduce", "graph", "0", "99999999999999999999999", "nccl", "algo=Ring,proto=LL"));
    expect_refused(buf, "max_bytes");
    /* another schema */
    snprintf(buf, sizeof buf, "%s2%s", HEADER, good + 1);
    expect_refused(buf, "schema");
    /* not CSV: an unterminated quote; an empty file */
    snprintf(buf, sizeof buf, "%s1,pcie,2,1,bf16,allreduce,graph,0,65536,nccl,\"algo=Ring\n", HEADER);
    expect_refused(buf, "cut off");
    expect_refused("", "empty");
}

static void t_header_only(void)
{
    use_profile(HEADER);
    expect_choice(2, 1, ncclFuncAllReduce, 43008, UNCHANGED);
    EXPECT(count_logs(NCCL_LOG_WARN, NULL) == 0, "no warning");
}

static void t_unknown_names(void)
{
    /* rows with unknown names are skipped with a warning naming the value; the rest apply */
    use_profile(HEADER ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=Butterfly,proto=LL")
                       ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=Ring,proto=LL256")
                       ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=Ring,proto=LL,channels=0")
                       ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=Ring")
                       ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=env,proto=LL")
                       ROW("2", "1", "bf16", "allreduce", "warp", "0", "65536", "nccl", "algo=Ring,proto=LL")
                       ROW("2", "1", "bf16", "allreduce", "eager", "0", "65536", "nccl", "algo=tree,proto=simple"));
    expect_choice(2, 1, ncclFuncAllReduce, 43008, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 0);
    static const char *const named[] = {"Butterfly", "LL256", "channels", "both algo= and proto=",
                                        "NCCL_ALGO", "warp", NULL};
    for (int i = 0; named[i]; i++)
        EXPECT(count_logs(NCCL_LOG_WARN, named[i]) == 1, "one warning naming '%s'", named[i]);
    EXPECT(count_logs(NCCL_LOG_WARN, NULL) == 6, "6 warnings, got %d", count_logs(NCCL_LOG_WARN, NULL));
}

static void t_auto(void)
{
    /* algo=auto: NCCL's own algorithm and protocol, the row's channel count still applies */
    use_profile(HEADER ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=auto,proto=auto,channels=2,nccl=2.28.3"));
    expect_choice(2, 1, ncclFuncAllReduce, 43008, -1, -1, 2);
    EXPECT(count_logs(NCCL_LOG_WARN, NULL) == 0, "no warning");
}

static void t_v4(void)
{
    use_profile(two_ranges);
    float before[NA][NP], table[NA][NP];
    fill_table(before);
    memcpy(table, before, sizeof table);
    void *ctx = NULL;
    int nch = 0;
    EXPECT(v4->init(2, 1, fake_log, &ctx) == ncclSuccess && ctx, "v4 init ok with a context");
    EXPECT(v4->getCollInfo(ctx, ncclFuncAllReduce, 100000, 1, (float **)table, NA, NP, 0, &nch) ==
               ncclSuccess, "getCollInfo ok");
    EXPECT(v4->destroy(ctx) == ncclSuccess, "destroy ok");
    before[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] = 0.0f;
    EXPECT(memcmp(table, before, sizeof table) == 0, "only Tree/Simple changed, to 0");
    EXPECT(nch == 4, "nChannels 4, got %d", nch);
}

static void t_debug_log(void)
{
    use_profile(two_ranges);
    setenv("ARBENCH_TUNER_DEBUG", "1", 1);
    expect_choice(2, 1, ncclFuncAllReduce, 43008, NCCL_ALGO_RING, NCCL_PROTO_LL, 0);
    expect_choice(2, 1, ncclFuncAllReduce, 5 << 20, UNCHANGED);
    unsetenv("ARBENCH_TUNER_DEBUG");
    int decision = -1, none = -1;
    for (int i = 0; i < nlogs; i++) {
        if (strstr(logs[i].text, "AllReduce 43008 bytes -> Ring/LL"))
            decision = i;
        if (strstr(logs[i].text, "AllReduce 5242880 bytes: no profile row"))
            none = i;
    }
    EXPECT(decision >= 0 && logs[decision].level == NCCL_LOG_INFO && (logs[decision].flags & NCCL_TUNING),
           "an INFO/TUNING line for the decision");
    EXPECT(none >= 0, "a line for the size no row covers");
    /* without the variable, no decision lines */
    nlogs = 0;
    expect_choice(2, 1, ncclFuncAllReduce, 43008, NCCL_ALGO_RING, NCCL_PROTO_LL, 0);
    EXPECT(count_logs(NCCL_LOG_INFO, "AllReduce 43008") == 0, "quiet without ARBENCH_TUNER_DEBUG");
}

static void t_null_context_and_logger(void)
{
    /* NCCL may hand back the NULL context of a plugin that loaded nothing */
    float before[NA][NP], table[NA][NP];
    fill_table(before);
    memcpy(table, before, sizeof table);
    int nch = 0;
    EXPECT(v5->getCollInfo(NULL, ncclFuncAllReduce, 43008, 1, (float **)table, NA, NP, 0, &nch) ==
               ncclSuccess, "NULL context ok");
    EXPECT(v5->finalize(NULL) == ncclSuccess, "finalize(NULL) ok");
    EXPECT(memcmp(table, before, sizeof table) == 0 && nch == 0, "nothing changed");
    /* no logger: warnings go to stderr, nothing crashes */
    setenv("ARBENCH_TUNER_PROFILE", "/nonexistent/arbench-profile.csv", 1);
    void *ctx = (void *)1;
    EXPECT(v5->init(&ctx, 1, 2, 1, NULL, NULL, NULL) == ncclSuccess && ctx == NULL,
           "init without logger ok, no context");
}

static void t_small_table(void)
{
    /* a table smaller than the profile's cell (a future or older NCCL): untouched, warned */
    use_profile(HEADER ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=PAT,proto=Simple"));
    float table[2][NP] = {{1, 2, 3}, {4, 5, 6}};
    void *ctx = NULL;
    int nch = 0;
    v5->init(&ctx, 1, 2, 1, fake_log, NULL, NULL);
    EXPECT(v5->getCollInfo(ctx, ncclFuncAllReduce, 43008, 1, (float **)table, 2, NP, 0, &nch) ==
               ncclSuccess, "getCollInfo ok");
    v5->finalize(ctx);
    EXPECT(table[0][0] == 1 && table[1][2] == 6, "untouched");
    EXPECT(count_logs(NCCL_LOG_WARN, "cost table") == 1, "warned");
}

static const struct {
    const char *name;
    void (*fn)(void);
} tests[] = {
    {"exports", t_exports},
    {"steer", t_steer},
    {"channels", t_channels},
    {"bounds_inclusive", t_bounds_inclusive},
    {"outside_ranges", t_outside_ranges},
    {"ranks_mismatch", t_ranks_mismatch},
    {"nodes", t_nodes},
    {"mode_preference", t_mode_preference},
    {"other_rows_ignored", t_other_rows_ignored},
    {"other_collectives", t_other_collectives},
    {"unavailable_cell", t_unavailable_cell},
    {"no_env", t_no_env},
    {"missing_file", t_missing_file},
    {"malformed", t_malformed},
    {"truncated", t_truncated},
    {"inconsistent", t_inconsistent},
    {"roles", t_roles},
    {"header_only", t_header_only},
    {"unknown_names", t_unknown_names},
    {"auto", t_auto},
    {"v4", t_v4},
    {"debug_log", t_debug_log},
    {"null_context_and_logger", t_null_context_and_logger},
    {"small_table", t_small_table},
};

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s MODULE [TEST]: MODULE is the path of libnccl-tuner-arbench.so\n", argv[0]);
        return 2;
    }
    /* RTLD_LOCAL like NCCL's plugin loader, so only what the module exports is visible */
    module = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!module) {
        printf("Bail out! dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    v5 = dlsym(module, ARB_NCCL_TUNER_SYMBOL_V5);
    v4 = dlsym(module, ARB_NCCL_TUNER_SYMBOL_V4);
    if (!v5 || !v4) {
        printf("Bail out! %s does not export %s and %s\n", argv[1], ARB_NCCL_TUNER_SYMBOL_V5,
               ARB_NCCL_TUNER_SYMBOL_V4);
        return 1;
    }
    if (!mkdtemp(tmpdir)) {
        printf("Bail out! mkdtemp %s failed\n", tmpdir);
        return 1;
    }
    unsetenv("ARBENCH_TUNER_DEBUG");
    size_t n = sizeof tests / sizeof tests[0];
    int selected = 0, any_failed = 0;
    for (size_t i = 0; i < n; i++)
        selected += argc < 3 || strcmp(argv[2], tests[i].name) == 0;
    if (!selected) {
        fprintf(stderr, "no test named '%s'\n", argv[2]);
        return 2;
    }
    printf("1..%d\n", selected);
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        if (argc == 3 && strcmp(argv[2], tests[i].name) != 0)
            continue;
        failed = 0;
        nlogs = 0;
        unsetenv("ARBENCH_TUNER_PROFILE");
        tests[i].fn();
        printf("%s %d - %s\n", failed ? "not ok" : "ok", ++k, tests[i].name);
        any_failed |= failed;
    }
    unlink(profile_path);
    rmdir(tmpdir);
    dlclose(module);
    return any_failed;
}
