/* SPDX-License-Identifier: MIT */
/*
 * The parts of NCCL's tuner-plugin interface that this plugin implements, declared
 * here because NCCL does not install its tuner header. Layouts and values follow
 * NCCL 2.28's src/include/plugin/tuner/tuner_v4.h, tuner_v5.h, nccl_tuner.h and
 * nccl_common.h (read, not copied); a mismatch here is an ABI break, so every value
 * below is pinned by a static assertion or a comment naming where it comes from.
 *
 * NCCL 2.28 dlopen()s the library named by NCCL_TUNER_PLUGIN (a path, or a name
 * NAME that becomes libnccl-tuner-NAME.so) and looks up ncclTunerPlugin_v5, then
 * ncclTunerPlugin_v4, v3, v2. NCCL 2.30 added v6 (a getChunkSize callback); it
 * still falls back to v5.
 */
#ifndef ARB_NCCL_TUNER_ABI_H
#define ARB_NCCL_TUNER_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ncclResult_t from nccl.h; only its values matter across the ABI (an int-sized enum). */
typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
} ncclResult_t;

/* nccl_common.h: the collective passed to getCollInfo. Only AllReduce is tuned here. */
typedef enum {
    ncclFuncBroadcast = 0,
    ncclFuncReduce = 1,
    ncclFuncAllGather = 2,
    ncclFuncReduceScatter = 3,
    ncclFuncAllReduce = 4,
} ncclFunc_t;

/* nccl_common.h: log levels and subsystem flags of NCCL's logger. */
typedef enum {
    NCCL_LOG_NONE = 0,
    NCCL_LOG_VERSION = 1,
    NCCL_LOG_WARN = 2,
    NCCL_LOG_INFO = 3,
    NCCL_LOG_ABORT = 4,
    NCCL_LOG_TRACE = 5,
} ncclDebugLogLevel;

enum {
    NCCL_INIT = 0x1,
    NCCL_TUNING = 0x40,
    NCCL_ENV = 0x80,
};

/* NCCL passes its own ncclDebugLog: INFO lines print only under NCCL_DEBUG=INFO and when
 * `flags` intersects NCCL_DEBUG_SUBSYS; WARN lines print under NCCL_DEBUG=WARN or INFO. */
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file,
                                  int line, const char *fmt, ...);

/* nccl_tuner.h: indices into the cost table, [algorithm][protocol]. */
#define NCCL_ALGO_TREE 0
#define NCCL_ALGO_RING 1
#define NCCL_ALGO_COLLNET_DIRECT 2
#define NCCL_ALGO_COLLNET_CHAIN 3
#define NCCL_ALGO_NVLS 4
#define NCCL_ALGO_NVLS_TREE 5
#define NCCL_ALGO_PAT 6
#define NCCL_NUM_ALGORITHMS_V5 7

#define NCCL_PROTO_LL 0
#define NCCL_PROTO_LL128 1
#define NCCL_PROTO_SIMPLE 2
#define NCCL_NUM_PROTOCOLS_V5 3

/* A cell NCCL will not consider (unsupported, or excluded by NCCL_ALGO/NCCL_PROTO). */
#define NCCL_ALGO_PROTO_IGNORE (-1.0f)

/* tuner_v5.h sizes of the tuning-constant tables. */
#define NCCL_NUM_HW_LINKS_V5 3
#define NCCL_NUM_COMPCAPS_V5 4
#define NCCL_NUM_TUNING_SCALES_V5 3

typedef struct {
    int nNvlDomains;          /* number of NVLink domains */
    int minRanksPerNvlDomain; /* fewest ranks in any NVLink domain */
    int maxRanksPerNvlDomain; /* most ranks in any NVLink domain */
} ncclNvlDomainInfo_v5_t;

/* NCCL's model constants, in/out at init. This plugin reads and writes none of them;
 * the layout is declared so that the pointer type is exact. */
typedef struct {
    double baseLatencies[NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
    double hwLatencies[NCCL_NUM_HW_LINKS_V5][NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
    double llMaxBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
    double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
    double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
    double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
    double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
} ncclTunerConstants_v5_t;

/*
 * getCollInfo (same signature in v4 and v5):
 *   nBytes         message bytes per rank (count x element size for all-reduce)
 *   collCostTable  NOT an array of pointers: NCCL passes a contiguous
 *                  float[numAlgo][numProto] cast to float**; cells are predicted times
 *                  in microseconds, NCCL_ALGO_PROTO_IGNORE for unavailable ones. NCCL
 *                  runs the cheapest non-negative cell, so 0.0 claims a cell.
 *   nChannels      out: 0 (as NCCL passes it) keeps NCCL's channel count.
 * A non-success return makes NCCL fall back to its default tuning for that call.
 * A non-success return from init fails the communicator's creation.
 */
typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, uint64_t commId, size_t nRanks, size_t nNodes,
                         ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t *nvlDomainInfo,
                         ncclTunerConstants_v5_t *constants);
    ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                float **collCostTable, int numAlgo, int numProto, int regBuff,
                                int *nChannels);
    ncclResult_t (*finalize)(void *context);
} ncclTuner_v5_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void **context);
    ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                float **collCostTable, int numAlgo, int numProto, int regBuff,
                                int *nChannels);
    ncclResult_t (*destroy)(void *context);
} ncclTuner_v4_t;

#define ARB_NCCL_TUNER_SYMBOL_V5 "ncclTunerPlugin_v5"
#define ARB_NCCL_TUNER_SYMBOL_V4 "ncclTunerPlugin_v4"

_Static_assert(sizeof(ncclResult_t) == sizeof(int), "ncclResult_t must be int-sized");
_Static_assert(sizeof(ncclFunc_t) == sizeof(int), "ncclFunc_t must be int-sized");
_Static_assert(sizeof(ncclTunerConstants_v5_t) ==
                   sizeof(double) * (7 * 3 + 3 * 7 * 3 + 5 * 4 * 3),
               "ncclTunerConstants_v5_t layout differs from NCCL 2.28's tuner_v5.h");

#endif
