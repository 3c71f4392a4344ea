/* SPDX-License-Identifier: MIT */
/*
 * The tuner plugin's NCCL ABI: the exported v5 and v4 structs and nothing else, the v4
 * entry points, decision lines under ARBENCH_TUNER_DEBUG, a NULL context and logger.
 * TAP output; each test runnable alone: PROGRAM MODULE [NAME...] (tuner_case.h).
 */
#include "tuner_case.h"

static void t_exports(void)
{
    tuner_begin();
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

static void t_v4(void)
{
    tuner_begin();
    use_profile(TWO_RANGES);
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
    tuner_begin();
    use_profile(TWO_RANGES);
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
    tuner_begin();
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

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"exports", t_exports},
        {"v4", t_v4},
        {"debug_log", t_debug_log},
        {"null_context_and_logger", t_null_context_and_logger},
    };
    return tuner_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
