/* SPDX-License-Identifier: MIT */
/* `arbench sweep`: option parsing; the work is in src/sweep/sweep.c. */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "base/common.h"
#include "runtime/agree.h"
#include "runtime/hostops.h"
#include "sweep/plan.h"
#include "sweep/sweep.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np N arbench sweep [OPTIONS]\n"
            "  --impl NAME[:PARAMS][,NAME...]  implementations (default: every one that can run here)\n"
            "                                  e.g. nccl, nccl:algo=Ring,proto=LL, p2p:variant=oneshot-push\n"
            "  --sizes LIST        bytes per rank: 43008,42K,1M, ranges 4K:1M:x2 or 32K:56K:+2K\n"
            "  --tokens LIST       sizes as tokens x hidden x element size, e.g. 1,2,3,4:64:x2\n"
            "  --hidden H          hidden size for --tokens (default 7168)\n"
            "  --modes LIST        eager,graph,context or all (default all)\n"
            "  --dtype bf16|fp32   element type (default bf16)\n"
            "  --op allreduce|allreduce_rmsnorm  operation (default allreduce; the fused op runs\n"
            "                      tokens 1,2,3,4,8,16,32,64 by default)\n"
            "  --iters N           timed calls in eager mode (default 200)\n"
            "  --warmup N          untimed calls first (default 20)\n"
            "  --graph-ops K       calls captured per graph (default 20)\n"
            "  --graph-replays R   timed graph replays (default 50)\n"
            "  --context-us US     compute kernel before each call in context mode (default 20)\n"
            "  --eps E             RMSNorm epsilon (default 1e-6)\n"
            "  --out FILE          results CSV (default results/sweep-<UTC time>-<host>.csv); an existing\n"
            "                      file is refused unless --append is given\n"
            "  --append            add this run's rows to an existing --out file (rows keep their run_id)\n"
            "  --no-check          time without checking (rows say check=skip)\n"
            "  --no-bind           do not bind ranks to the CPUs near their GPU\n"
            "  --host              run the host backends even where GPUs are visible\n"
            "  --quiet             no progress or info lines\n");
}

enum { O_IMPL = 1000, O_SIZES, O_TOKENS, O_HIDDEN, O_MODES, O_DTYPE, O_OP, O_ITERS, O_WARMUP, O_GOPS, O_GREP,
       O_CTX, O_EPS, O_OUT, O_NOCHECK, O_NOBIND, O_HOST, O_APPEND, O_QUIET, O_HELP };

static int parse_uint(const char *opt, const char *v, unsigned *out, char *err, size_t len)
{
    char *end;
    unsigned long x = strtoul(v, &end, 10);
    if (!*v || *end || x == 0 || x > 10000000ul || v[0] == '-') {
        snprintf(err, len, "%s '%s': expected a positive integer", opt, v);
        return -1;
    }
    *out = (unsigned)x;
    return 0;
}

static int parse_pos_double(const char *opt, const char *v, double *out, char *err, size_t len)
{
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !(x >= 0) || x > 1e7) {
        snprintf(err, len, "%s '%s': expected a non-negative number", opt, v);
        return -1;
    }
    *out = x;
    return 0;
}

static void default_out(char *buf, size_t len)
{
    char host[64] = "host", t[32];
    gethostname(host, sizeof host - 1);
    host[strcspn(host, ".")] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(t, sizeof t, "%Y%m%dT%H%M%SZ", &tm);
    mkdir("results", 0755);
    snprintf(buf, len, "results/sweep-%s-%s.csv", t, host);
}

/* Parses argv into plan; on error writes the message and returns -1. */
static int parse(int argc, char **argv, arb_plan_t *plan, int *quiet, int *help, char *err, size_t len)
{
    static const struct option opts[] = {
        {"impl", required_argument, 0, O_IMPL},     {"sizes", required_argument, 0, O_SIZES},
        {"tokens", required_argument, 0, O_TOKENS}, {"hidden", required_argument, 0, O_HIDDEN},
        {"modes", required_argument, 0, O_MODES},   {"dtype", required_argument, 0, O_DTYPE},
        {"op", required_argument, 0, O_OP},         {"iters", required_argument, 0, O_ITERS},
        {"warmup", required_argument, 0, O_WARMUP}, {"graph-ops", required_argument, 0, O_GOPS},
        {"graph-replays", required_argument, 0, O_GREP}, {"context-us", required_argument, 0, O_CTX},
        {"eps", required_argument, 0, O_EPS},       {"out", required_argument, 0, O_OUT},
        {"no-check", no_argument, 0, O_NOCHECK},    {"no-bind", no_argument, 0, O_NOBIND},
        {"host", no_argument, 0, O_HOST},           {"quiet", no_argument, 0, O_QUIET},
        {"append", no_argument, 0, O_APPEND},       {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0},
    };
    const char *sizes = NULL, *tokens = NULL;
    int sizes_given = 0;
    arb_plan_defaults(plan);
    opterr = 0;
    optind = 1;
    int c;
    double d;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_IMPL:
            if (arb_plan_parse_impls(optarg, plan, err, len))
                return -1;
            break;
        case O_SIZES: sizes = optarg; sizes_given = 1; break;
        case O_TOKENS: tokens = optarg; sizes_given = 1; break;
        case O_HIDDEN:
            if (parse_uint("--hidden", optarg, &plan->hidden, err, len))
                return -1;
            break;
        case O_MODES:
            if (arb_plan_parse_modes(optarg, &plan->modes, err, len))
                return -1;
            break;
        case O_DTYPE:
            if (arb_plan_parse_dtype(optarg, &plan->dtype, err, len))
                return -1;
            break;
        case O_OP:
            if (arb_plan_parse_op(optarg, &plan->op, err, len))
                return -1;
            break;
        case O_ITERS:
            if (parse_uint("--iters", optarg, &plan->iters, err, len))
                return -1;
            break;
        case O_WARMUP: {
            char *end;
            unsigned long x = strtoul(optarg, &end, 10);
            if (!*optarg || *end || x > 1000000ul || optarg[0] == '-') {
                snprintf(err, len, "--warmup '%s': expected a non-negative integer", optarg);
                return -1;
            }
            plan->warmup = (unsigned)x;
            break;
        }
        case O_GOPS:
            if (parse_uint("--graph-ops", optarg, &plan->graph_ops, err, len))
                return -1;
            break;
        case O_GREP:
            if (parse_uint("--graph-replays", optarg, &plan->graph_replays, err, len))
                return -1;
            break;
        case O_CTX:
            if (parse_pos_double("--context-us", optarg, &plan->context_us, err, len))
                return -1;
            break;
        case O_EPS:
            if (parse_pos_double("--eps", optarg, &d, err, len) || d <= 0) {
                snprintf(err, len, "--eps '%s': expected a positive number", optarg);
                return -1;
            }
            plan->eps = (float)d;
            break;
        case O_OUT:
            if (!*optarg) {
                snprintf(err, len, "--out: expected a file path");
                return -1;
            }
            snprintf(plan->out, sizeof plan->out, "%s", optarg);
            break;
        case O_NOCHECK: plan->check = 0; break;
        case O_NOBIND: plan->bind = 0; break;
        case O_HOST: plan->host_only = 1; break;
        case O_APPEND: plan->append = 1; break;
        case O_QUIET: *quiet = 1; break;
        case O_HELP: *help = 1; return 0;
        default:
            snprintf(err, len, "unknown or incomplete option '%s' (see arbench sweep --help)", argv[optind - 1]);
            return -1;
        }
    }
    if (optind < argc) {
        snprintf(err, len, "unexpected argument '%s' (see arbench sweep --help)", argv[optind]);
        return -1;
    }
    if (sizes && tokens) {
        snprintf(err, len, "--sizes and --tokens: give one of them");
        return -1;
    }
    if (sizes && arb_plan_set_sizes(plan, sizes, err, len))
        return -1;
    if (tokens && arb_plan_set_tokens(plan, tokens, err, len))
        return -1;
    if (!sizes_given && plan->op == ARB_OP_ALLREDUCE_RMSNORM && arb_plan_set_tokens(plan, "1,2,3,4,8,16,32,64", err, len))
        return -1;
    return arb_plan_finish(plan, err, len);
}

int cmd_sweep(int argc, char **argv)
{
    arb_plan_t *plan = calloc(1, sizeof *plan);
    char err[1024] = "";
    int quiet = 0, help = 0;
    if (!plan)
        return 2;
    int bad = parse(argc, argv, plan, &quiet, &help, err, sizeof err) != 0;
    if (help) {
        usage(stdout);
        free(plan);
        return 0;
    }
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "arbench sweep: MPI_Init failed\n");
        free(plan);
        return 2;
    }
    arb_mpi_t m;
    int rc = 2;
    if (arb_mpi_bootstrap(&m)) {
        fprintf(stderr, "arbench sweep: MPI bootstrap failed\n");
        goto out_finalize;
    }
    arb_set_log_rank(m.nranks > 1 ? m.rank : -1);
    arb_set_quiet(quiet);
    /* Everyone learns whether anyone's arguments were bad, so no rank waits alone. */
    if (arb_agree_failure(&m, bad, err, sizeof err) >= 0) {
        if (m.rank == 0)
            fprintf(stderr, "arbench sweep: %s\n", err);
        goto out_free;
    }
    if (arb_agree_argv(&m, argc, argv, err, sizeof err) != 0) {
        if (m.rank == 0)
            fprintf(stderr, "arbench sweep: %s\n", err);
        goto out_free;
    }
    if (!plan->out[0]) {
        if (m.rank == 0)
            default_out(plan->out, sizeof plan->out);
        MPI_Bcast(plan->out, sizeof plan->out, MPI_CHAR, 0, m.world);
    }
    {
        /* Exit status: 0 every point passed or was skipped, 1 a point failed or the GPU
         * became unusable, 2 bad input or setup, 130 interrupted (finished rows kept). */
        arb_sweep_result_t res;
        arb_status_t st = arb_sweep(plan, &m, argc, argv, &res);
        rc = st == ARB_ERR_SYSTEM ? 1 : st != ARB_OK ? 2 : res.interrupted ? 130 : res.nfail ? 1 : 0;
    }
out_free:
    arb_mpi_free(&m);
out_finalize:
    MPI_Finalize();
    free(plan);
    return rc;
}
