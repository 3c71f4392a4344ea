/* SPDX-License-Identifier: MIT */
/*
 * libnccl-tuner-arbench.so: an NCCL tuner plugin that steers NCCL's all-reduce to the
 * algorithm, protocol and channel count an arbench profile measured as best for that
 * message size (docs/tuner.md).
 *
 *   NCCL_TUNER_PLUGIN=/path/libnccl-tuner-arbench.so   (or =arbench, on the library path)
 *   ARBENCH_TUNER_PROFILE=/path/profile.csv            (unset: the plugin changes nothing)
 *   ARBENCH_TUNER_DEBUG=1                              (log every decision, NCCL_TUNING)
 *
 * Whatever goes wrong with the profile, the plugin logs it once per communicator and
 * leaves NCCL's own tuning in place: init and getCollInfo always return ncclSuccess,
 * since a failed init would fail the application's communicator creation.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_tuner_abi.h"
#include "rules.h"

#define TUNER_NAME "arbench"
#define TUNER_EXPORT __attribute__((visibility("default")))

typedef struct tuner_ctx {
    ncclDebugLogger_t log; /* NCCL's logger; NULL if the caller gave none */
    size_t nranks, nnodes;
    int debug;             /* ARBENCH_TUNER_DEBUG=1: log every decision */
    int warned_table;      /* a cost table too small for a rule was reported */
    tuner_rules_t rules;
} tuner_ctx_t;

/* One line through NCCL's logger, prefixed so that it can be grepped; without a logger
 * warnings go to stderr and the rest is dropped. */
__attribute__((format(printf, 5, 6))) static void tuner_log(ncclDebugLogger_t log,
                                                            ncclDebugLogLevel level,
                                                            unsigned long flags, int line,
                                                            const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (log)
        log(level, flags, __FILE__, line, "ARBENCH-TUNER: %s", msg);
    else if (level == NCCL_LOG_WARN)
        fprintf(stderr, "ARBENCH-TUNER: %s\n", msg);
}

#define TUNER_WARN(log, ...) tuner_log((log), NCCL_LOG_WARN, NCCL_TUNING, __LINE__, __VA_ARGS__)
#define TUNER_INFO(log, flags, ...) tuner_log((log), NCCL_LOG_INFO, (flags), __LINE__, __VA_ARGS__)

static void warn_skipped_row(void *arg, const char *msg)
{
    const tuner_ctx_t *ctx = arg;
    TUNER_WARN(ctx->log, "%s", msg);
}

static int debug_enabled(ncclDebugLogger_t log)
{
    const char *v = getenv("ARBENCH_TUNER_DEBUG");
    if (!v || !v[0] || strcmp(v, "0") == 0)
        return 0;
    if (strcmp(v, "1") == 0)
        return 1;
    TUNER_WARN(log, "ARBENCH_TUNER_DEBUG='%s' ignored: expected 0 or 1", v);
    return 0;
}

static ncclResult_t tuner_init(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                               void **context)
{
    *context = NULL;
    const char *path = getenv("ARBENCH_TUNER_PROFILE");
    if (!path || !path[0]) {
        TUNER_INFO(logFunction, NCCL_INIT | NCCL_TUNING,
                   "ARBENCH_TUNER_PROFILE is not set: NCCL's own tuning is unchanged");
        return ncclSuccess;
    }
    tuner_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        TUNER_WARN(logFunction, "out of memory: NCCL's own tuning is unchanged");
        return ncclSuccess;
    }
    ctx->log = logFunction;
    ctx->nranks = nRanks;
    ctx->nnodes = nNodes;
    ctx->debug = debug_enabled(logFunction);
    char err[1024];
    if (tuner_rules_load(path, nRanks, nNodes, &ctx->rules, warn_skipped_row, ctx, err,
                         sizeof err)) {
        TUNER_WARN(logFunction, "profile not used (ARBENCH_TUNER_PROFILE): %s; NCCL's own tuning is unchanged",
                   err);
        free(ctx);
        return ncclSuccess;
    }
    TUNER_INFO(logFunction, NCCL_INIT | NCCL_TUNING,
               "profile %s: %zu all-reduce rows for NCCL at %zu ranks, %zu nodes%s", path,
               ctx->rules.n, nRanks, nNodes,
               ctx->rules.n ? "" : " (none apply: NCCL's own tuning is unchanged)");
    if (ctx->debug)
        for (size_t i = 0; i < ctx->rules.n; i++) {
            const tuner_rule_t *r = &ctx->rules.v[i];
            TUNER_INFO(logFunction, NCCL_TUNING, "rule %zu: %llu..%llu bytes -> %s", i,
                       (unsigned long long)r->min_bytes, (unsigned long long)r->max_bytes,
                       r->what);
        }
    *context = ctx;
    return ncclSuccess;
}

static ncclResult_t tuner_init_v5(void **context, uint64_t commId, size_t nRanks, size_t nNodes,
                                  ncclDebugLogger_t logFunction,
                                  ncclNvlDomainInfo_v5_t *nvlDomainInfo,
                                  ncclTunerConstants_v5_t *constants)
{
    (void)commId;
    (void)nvlDomainInfo;
    (void)constants; /* NCCL's model constants stay as NCCL set them */
    return tuner_init(nRanks, nNodes, logFunction, context);
}

static ncclResult_t tuner_init_v4(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                                  void **context)
{
    return tuner_init(nRanks, nNodes, logFunction, context);
}

static ncclResult_t tuner_get_coll_info(void *context, ncclFunc_t collType, size_t nBytes,
                                        int numPipeOps, float **collCostTable, int numAlgo,
                                        int numProto, int regBuff, int *nChannels)
{
    (void)numPipeOps;
    (void)regBuff;
    tuner_ctx_t *ctx = context;
    if (!ctx || collType != ncclFuncAllReduce)
        return ncclSuccess;
    tuner_rule_t *rule = tuner_rules_find(&ctx->rules, nBytes);
    if (!rule) {
        if (ctx->debug)
            TUNER_INFO(ctx->log, NCCL_TUNING,
                       "AllReduce %zu bytes: no profile row covers it: NCCL's own choice", nBytes);
        return ncclSuccess;
    }
    if (rule->algo != TUNER_NCCL_CHOICE) {
        if (!collCostTable || rule->algo >= numAlgo || rule->proto >= numProto) {
            if (!ctx->warned_table)
                TUNER_WARN(ctx->log, "NCCL passed a %dx%d cost table, without a cell for %s: NCCL's own choice",
                           numAlgo, numProto, rule->what);
            ctx->warned_table = 1;
            return ncclSuccess;
        }
        /* collCostTable is a contiguous float[numAlgo][numProto] (see nccl_tuner_abi.h). */
        float *cell = (float *)collCostTable + (size_t)rule->algo * (size_t)numProto + (size_t)rule->proto;
        if (*cell < 0.0f) { /* NCCL_ALGO_PROTO_IGNORE: NCCL will not run this cell */
            if (!rule->warned_unavailable)
                TUNER_WARN(ctx->log, "AllReduce %zu bytes: profile asks for %s but NCCL marks it unavailable on this communicator (unsupported here, or excluded by NCCL_ALGO/NCCL_PROTO): NCCL's own choice, logged once per row",
                           nBytes, rule->what);
            rule->warned_unavailable = 1;
            return ncclSuccess; /* its channel count was measured for that cell: not applied */
        }
        if (ctx->debug)
            TUNER_INFO(ctx->log, NCCL_TUNING, "AllReduce %zu bytes -> %s (NCCL's estimate %.3f us)",
                       nBytes, rule->what, (double)*cell);
        *cell = 0.0f; /* NCCL runs the cheapest available cell; nothing costs less than 0 */
    } else if (ctx->debug) {
        TUNER_INFO(ctx->log, NCCL_TUNING, "AllReduce %zu bytes -> %s: algorithm and protocol left to NCCL",
                   nBytes, rule->what);
    }
    if (rule->channels > 0 && nChannels)
        *nChannels = rule->channels;
    return ncclSuccess;
}

static ncclResult_t tuner_finalize(void *context)
{
    tuner_ctx_t *ctx = context;
    if (ctx) {
        tuner_rules_free(&ctx->rules);
        free(ctx);
    }
    return ncclSuccess;
}

extern TUNER_EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5;
extern TUNER_EXPORT const ncclTuner_v4_t ncclTunerPlugin_v4;

const ncclTuner_v5_t ncclTunerPlugin_v5 = {
    .name = TUNER_NAME,
    .init = tuner_init_v5,
    .getCollInfo = tuner_get_coll_info,
    .finalize = tuner_finalize,
};

const ncclTuner_v4_t ncclTunerPlugin_v4 = {
    .name = TUNER_NAME,
    .init = tuner_init_v4,
    .getCollInfo = tuner_get_coll_info,
    .destroy = tuner_finalize,
};
