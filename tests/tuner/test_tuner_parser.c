/* SPDX-License-Identifier: MIT */
/*
 * The tuner plugin reading profiles: no profile, a missing file, malformed, cut-off and
 * edited files refused as a whole with one warning, the role column, unknown names
 * skipped row by row.
 * TAP output; each test runnable alone: PROGRAM MODULE [NAME...] (tuner_case.h).
 */
#include "tuner_case.h"

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

static void t_no_env(void)
{
    tuner_begin();
    unsetenv("ARBENCH_TUNER_PROFILE");
    expect_choice(2, 1, ncclFuncAllReduce, 43008, UNCHANGED);
    setenv("ARBENCH_TUNER_PROFILE", "", 1);
    expect_choice(2, 1, ncclFuncAllReduce, 43008, UNCHANGED);
    EXPECT(count_logs(NCCL_LOG_WARN, NULL) == 0, "no warning");
}

static void t_missing_file(void)
{
    tuner_begin();
    setenv("ARBENCH_TUNER_PROFILE", "/nonexistent/arbench-profile.csv", 1);
    expect_choice(2, 1, ncclFuncAllReduce, 43008, UNCHANGED);
    EXPECT(count_logs(NCCL_LOG_WARN, "/nonexistent/arbench-profile.csv") == 1, "warning names the path");
}

static void t_malformed(void)
{
    tuner_begin();
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

/* A profile cut mid-row (a full disk, a partial copy) is refused, naming the row. */
static void t_truncated(void)
{
    tuner_begin();
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", TWO_RANGES);
    buf[strlen(buf) - 9] = '\0'; /* inside the last row's sources */
    expect_refused(buf, "line 4 (the last row) is cut off");
}

/* A row whose figures disagree (speedup 1.5 where 9.0 / 7.5 = 1.2) was edited: refused,
 * even where the row would steer NCCL. */
static void t_inconsistent(void)
{
    tuner_begin();
    expect_refused(HEADER "1,pcie,2,1,bf16,allreduce,graph,0,65536,nccl,\"algo=Ring,proto=LL\",7.5,nccl,\"algo=Ring,proto=LL\",9.0,1.5,ci95,results/a.csv@run1\n",
                   "speedup 1.5000, but baseline_median_us / median_us");
    expect_refused(HEADER_ROLE "1,pcie,2,1,bf16,allreduce,graph,0,65536,noop,,7.5,nccl,\"algo=Ring,proto=LL\",9.0,1.2,ci95,results/a.csv@run1,,99999,1,candidate\n",
                   "rep_bytes");
}

/* The role column, not the name, says which rows are NCCL's own choice: a baseline row
 * steers NCCL whatever its impl is called; an nccl-named candidate row does not. */
static void t_roles(void)
{
    tuner_begin();
    use_profile(HEADER_ROLE
                "1,pcie,2,1,bf16,allreduce,graph,0,65536,vendor-ar,\"algo=Tree,proto=LL\",7.5,vendor-ar,\"algo=Tree,proto=LL\",7.5,1.0,baseline,results/a.csv@run1,,43008,3,baseline\n"
                "1,pcie,2,1,bf16,allreduce,eager,0,65536,nccl,\"algo=Ring,proto=Simple\",7.5,nccl,\"algo=Ring,proto=LL\",9.0,1.2,ci95,results/a.csv@run1,,43008,3,candidate\n");
    expect_choice(2, 1, ncclFuncAllReduce, 43008, NCCL_ALGO_TREE, NCCL_PROTO_LL, 0);
    EXPECT(count_logs(NCCL_LOG_INFO, "1 all-reduce rows") == 1, "init loaded the baseline row only");
    expect_refused(HEADER_ROLE "1,pcie,2,1,bf16,allreduce,graph,0,65536,noop,,7.5,nccl,\"algo=Ring,proto=LL\",9.0,1.2,ci95,results/a.csv@run1,,43008,1,reference\n",
                   "role 'reference'");
}

static void t_header_only(void)
{
    tuner_begin();
    use_profile(HEADER);
    expect_choice(2, 1, ncclFuncAllReduce, 43008, UNCHANGED);
    EXPECT(count_logs(NCCL_LOG_WARN, NULL) == 0, "no warning");
}

static void t_unknown_names(void)
{
    tuner_begin();
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

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"no_env", t_no_env},
        {"missing_file", t_missing_file},
        {"malformed", t_malformed},
        {"truncated", t_truncated},
        {"inconsistent", t_inconsistent},
        {"roles", t_roles},
        {"header_only", t_header_only},
        {"unknown_names", t_unknown_names},
    };
    return tuner_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
