/* SPDX-License-Identifier: MIT */
/*
 * What every tuner test program shares: the module loaded through its real path (dlopen,
 * then ncclTunerPlugin_v5 and _v4 looked up as NCCL does), a fake NCCL logger that records
 * every line, profiles written to a scratch file, a synthetic cost table and the check
 * that the profile's choice (and nothing else) changed. Included once by each program,
 * static like tap.h, so its checks count in that program's TAP state.
 *
 * Every test starts with tuner_begin() (a fresh log, no profile in the environment);
 * tuner_main(tests, n, argc, argv) runs them: PROGRAM MODULE [NAME...].
 */
#ifndef ARB_TESTS_TUNER_CASE_H
#define ARB_TESTS_TUNER_CASE_H

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/tap.h"
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

static inline void fake_log(ncclDebugLogLevel level, unsigned long flags, const char *file,
                            int line, const char *fmt, ...)
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

static inline int count_logs(ncclDebugLogLevel level, const char *needle)
{
    int n = 0;
    for (int i = 0; i < nlogs; i++)
        if (logs[i].level == level && (!needle || strstr(logs[i].text, needle)))
            n++;
    return n;
}

/* ---- failures: a TAP diagnostic naming the condition; the current test fails ---- */
#define EXPECT(cond, ...)                                                                \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            char expect_why_[512];                                                       \
            snprintf(expect_why_, sizeof expect_why_, __VA_ARGS__);                      \
            TAP_FAIL_("expected %s: %s", #cond, expect_why_);                            \
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

static inline void use_profile(const char *content)
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
static inline void fill_table(float t[NA][NP])
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
static inline void expect_choice(size_t nranks, size_t nnodes, ncclFunc_t coll, size_t nbytes, int algo,
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

/* Two ranges of NCCL's own choice (Ring/LL to 64 KiB, then Tree/Simple on 4 channels) and
 * a p2p row that is not for NCCL. */
#define TWO_RANGES                                                                                          \
    HEADER ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=Ring,proto=LL,nccl=2.28.3") \
        ROW("2", "1", "bf16", "allreduce", "graph", "65537", "1048576", "nccl",                              \
            "algo=Tree,proto=Simple,channels=4,nccl=2.28.3")                                                 \
        ROW("2", "1", "bf16", "allreduce", "graph", "0", "1048576", "p2p", "variant=oneshot-push,blocks=8,threads=512")

static inline void tuner_begin(void)
{
    nlogs = 0;
    unsetenv("ARBENCH_TUNER_PROFILE");
}

static inline int tuner_main(const tap_test_t *tests, size_t n, int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODULE [TEST...]: MODULE is the path of libnccl-tuner-arbench.so\n", argv[0]);
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
    int rc = tap_main(tests, n, argc - 1, argv + 1);
    unlink(profile_path);
    rmdir(tmpdir);
    dlclose(module);
    return rc;
}

#endif
