/* SPDX-License-Identifier: MIT */
/*
 * The tuner plugin steering NCCL's cost table: which cell a profile row zeroes (and
 * nothing else), channels, inclusive bounds, ranks, nodes, mode and dtype preference,
 * rows and collectives that are not for NCCL, cells NCCL marks unavailable.
 * TAP output; each test runnable alone: PROGRAM MODULE [NAME...] (tuner_case.h).
 */
#include "tuner_case.h"

static void t_steer(void)
{
    tuner_begin();
    use_profile(TWO_RANGES);
    expect_choice(2, 1, ncclFuncAllReduce, 43008, NCCL_ALGO_RING, NCCL_PROTO_LL, 0);
    EXPECT(count_logs(NCCL_LOG_WARN, NULL) == 0, "no warning");
    EXPECT(count_logs(NCCL_LOG_INFO, "2 all-reduce rows") == 1, "init says it loaded 2 rows");
}

static void t_channels(void)
{
    tuner_begin();
    use_profile(TWO_RANGES);
    expect_choice(2, 1, ncclFuncAllReduce, 100000, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 4);
}

static void t_bounds_inclusive(void)
{
    tuner_begin();
    use_profile(TWO_RANGES);
    expect_choice(2, 1, ncclFuncAllReduce, 0, NCCL_ALGO_RING, NCCL_PROTO_LL, 0);
    expect_choice(2, 1, ncclFuncAllReduce, 65536, NCCL_ALGO_RING, NCCL_PROTO_LL, 0);
    expect_choice(2, 1, ncclFuncAllReduce, 65537, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 4);
    expect_choice(2, 1, ncclFuncAllReduce, 1048576, NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE, 4);
}

static void t_outside_ranges(void)
{
    tuner_begin();
    use_profile(TWO_RANGES);
    expect_choice(2, 1, ncclFuncAllReduce, 1048577, UNCHANGED);
    expect_choice(2, 1, ncclFuncAllReduce, (size_t)1 << 40, UNCHANGED);
    EXPECT(count_logs(NCCL_LOG_WARN, NULL) == 0, "no warning");
}

static void t_ranks_mismatch(void)
{
    tuner_begin();
    use_profile(TWO_RANGES);
    expect_choice(4, 1, ncclFuncAllReduce, 43008, UNCHANGED);
    expect_choice(1, 1, ncclFuncAllReduce, 43008, UNCHANGED);
    EXPECT(count_logs(NCCL_LOG_INFO, "0 all-reduce rows") == 2, "init says no row applies");
}

static void t_nodes(void)
{
    tuner_begin();
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
    tuner_begin();
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
    tuner_begin();
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
    tuner_begin();
    use_profile(TWO_RANGES);
    expect_choice(2, 1, ncclFuncAllGather, 43008, UNCHANGED);
    expect_choice(2, 1, ncclFuncReduceScatter, 43008, UNCHANGED);
    expect_choice(2, 1, (ncclFunc_t)8 /* AlltoAll in 2.28 */, 43008, UNCHANGED);
}

static void t_unavailable_cell(void)
{
    tuner_begin();
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

static void t_auto(void)
{
    tuner_begin();
    /* algo=auto: NCCL's own algorithm and protocol, the row's channel count still applies */
    use_profile(HEADER ROW("2", "1", "bf16", "allreduce", "graph", "0", "65536", "nccl", "algo=auto,proto=auto,channels=2,nccl=2.28.3"));
    expect_choice(2, 1, ncclFuncAllReduce, 43008, -1, -1, 2);
    EXPECT(count_logs(NCCL_LOG_WARN, NULL) == 0, "no warning");
}

static void t_small_table(void)
{
    tuner_begin();
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

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
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
        {"auto", t_auto},
        {"small_table", t_small_table},
    };
    return tuner_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
