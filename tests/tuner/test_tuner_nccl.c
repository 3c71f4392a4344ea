/* SPDX-License-Identifier: MIT */
/*
 * The tuner plugin inside real NCCL: one process drives 2 GPUs (ncclCommInitAll) with
 * NCCL_TUNER_PLUGIN pointing at the built module, twice, with two profiles that make
 * opposite choices for the same sizes. Each run happens in a child process (NCCL reads
 * its environment once per process); the parent reads NCCL's debug file and checks that
 * NCCL ran exactly the algorithm/protocol each profile named, within its channel count,
 * and that every all-reduce result is exact. Exit 77 where fewer than 2 GPUs are visible.
 *   test_tuner_nccl MODULE
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#define SKIP 77
#define SMALL_BYTES 43008  /* the 3-token verify all-reduce of the design notes */
#define LARGE_BYTES 262144

static char tmpdir[] = "/tmp/arb-tuner-nccl-XXXXXX";

typedef struct choice {
    const char *params;            /* what the profile row says */
    const char *algo, *proto;      /* how NCCL's TUNING line names it */
    int channels;                  /* at most this many channels, 0: any */
} choice_t;

typedef struct scenario {
    const char *name;
    choice_t small, large;
} scenario_t;

static const scenario_t scenarios[] = {
    {"A", {"algo=Tree,proto=Simple,channels=2", "TREE", "SIMPLE", 2}, {"algo=Ring,proto=LL", "RING", "LL", 0}},
    {"B", {"algo=Ring,proto=Simple,channels=1", "RING", "SIMPLE", 1}, {"algo=Tree,proto=LL", "TREE", "LL", 0}},
};

#define CUDA_OK(call)                                                                    \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            return 1;                                                                    \
        }                                                                                \
    } while (0)
#define NCCL_OK(call)                                                                    \
    do {                                                                                 \
        ncclResult_t r_ = (call);                                                        \
        if (r_ != ncclSuccess) {                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_)); \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

/* One all-reduce of `bytes` (fp32 sum) over both GPUs; checks every element.
 * Inputs are small integers, so the sum is exact whatever the algorithm. */
static int allreduce_checked(ncclComm_t *comms, cudaStream_t *streams, size_t bytes)
{
    size_t count = bytes / sizeof(float);
    float *host = malloc(bytes), *dev[2] = {NULL, NULL};
    if (!host)
        return 1;
    for (int d = 0; d < 2; d++) {
        for (size_t i = 0; i < count; i++)
            host[i] = (float)((d + 1) * (int)(i % 7));
        CUDA_OK(cudaSetDevice(d));
        CUDA_OK(cudaMalloc((void **)&dev[d], bytes));
        CUDA_OK(cudaMemcpy(dev[d], host, bytes, cudaMemcpyHostToDevice));
    }
    NCCL_OK(ncclGroupStart());
    for (int d = 0; d < 2; d++)
        NCCL_OK(ncclAllReduce(dev[d], dev[d], count, ncclFloat, ncclSum, comms[d], streams[d]));
    NCCL_OK(ncclGroupEnd());
    size_t wrong = 0;
    for (int d = 0; d < 2; d++) {
        CUDA_OK(cudaSetDevice(d));
        CUDA_OK(cudaStreamSynchronize(streams[d]));
        CUDA_OK(cudaMemcpy(host, dev[d], bytes, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i++)
            wrong += host[i] != (float)(3 * (int)(i % 7));
        CUDA_OK(cudaFree(dev[d]));
    }
    free(host);
    if (wrong)
        fprintf(stderr, "all-reduce of %zu bytes: %zu wrong elements\n", bytes, wrong);
    return wrong != 0;
}

/* The child: NCCL on 2 GPUs with the environment the parent set. */
static int run_nccl(void)
{
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        printf("no CUDA device visible: %s\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return SKIP;
    }
    if (ndev < 2) {
        printf("only %d GPU visible: this test needs 2\n", ndev);
        return SKIP;
    }
    int devs[2] = {0, 1};
    ncclComm_t comms[2];
    cudaStream_t streams[2];
    NCCL_OK(ncclCommInitAll(comms, 2, devs));
    for (int d = 0; d < 2; d++) {
        CUDA_OK(cudaSetDevice(d));
        CUDA_OK(cudaStreamCreate(&streams[d]));
    }
    int bad = allreduce_checked(comms, streams, SMALL_BYTES) || allreduce_checked(comms, streams, LARGE_BYTES);
    for (int d = 0; d < 2; d++) {
        NCCL_OK(ncclCommDestroy(comms[d]));
        CUDA_OK(cudaStreamDestroy(streams[d]));
    }
    return bad;
}

static int write_profile(const char *path, const scenario_t *s)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params,median_us,"
               "baseline_impl,baseline_params,baseline_median_us,speedup,confidence,sources\n");
    fprintf(f, "1,test,2,1,bf16,allreduce,graph,0,65536,nccl,\"%s\",1,nccl,,1,1,tie,test\n", s->small.params);
    fprintf(f, "1,test,2,1,bf16,allreduce,graph,65537,1048576,nccl,\"%s\",1,nccl,,1,1,tie,test\n", s->large.params);
    return fclose(f);
}

/* Finds NCCL's "AllReduce: <bytes> Bytes -> Algo X proto Y channel{Lo..Hi}={lo..hi}" line
 * and compares it with the choice. */
static int check_choice(const char *log, size_t bytes, const choice_t *c)
{
    char key[64], algo[32], proto[32];
    snprintf(key, sizeof key, "AllReduce: %zu Bytes -> Algo ", bytes);
    const char *at = strstr(log, key);
    int lo = 0, hi = -1;
    if (!at || sscanf(at + strlen(key), "%31s proto %31s channel{Lo..Hi}={%d..%d}", algo, proto, &lo, &hi) < 2) {
        printf("# no NCCL TUNING line for %zu bytes (is NCCL_DEBUG_SUBSYS honoured?)\n", bytes);
        return 1;
    }
    int ok = strcasecmp(algo, c->algo) == 0 && strcasecmp(proto, c->proto) == 0 &&
             (c->channels == 0 || (hi >= lo && hi - lo + 1 <= c->channels));
    printf("# %zu bytes: NCCL ran %s/%s on channels %d..%d; profile said %s\n", bytes, algo, proto, lo, hi, c->params);
    return !ok;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[1 << 22];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* The scratch folder and what the scenarios wrote in it; kept when a check failed (the
 * failing lines name its logs). */
static void remove_tmpdir(int nscen)
{
    char path[600];
    for (int i = 0; i < nscen; i++) {
        snprintf(path, sizeof path, "%s/profile-%s.csv", tmpdir, scenarios[i].name);
        unlink(path);
        snprintf(path, sizeof path, "%s/nccl-%s.log", tmpdir, scenarios[i].name);
        unlink(path);
    }
    rmdir(tmpdir);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODULE: MODULE is the path of libnccl-tuner-arbench.so\n", argv[0]);
        return 2;
    }
    if (!mkdtemp(tmpdir)) {
        printf("Bail out! mkdtemp failed\n");
        return 1;
    }
    int nscen = (int)(sizeof scenarios / sizeof scenarios[0]), failed = 0;
    printf("1..%d\n", nscen);
    for (int i = 0; i < nscen; i++) {
        const scenario_t *s = &scenarios[i];
        char profile[600], logpath[600];
        snprintf(profile, sizeof profile, "%s/profile-%s.csv", tmpdir, s->name);
        snprintf(logpath, sizeof logpath, "%s/nccl-%s.log", tmpdir, s->name);
        if (write_profile(profile, s)) {
            printf("Bail out! cannot write %s\n", profile);
            return 1;
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) { /* no CUDA in the parent before this point: the child owns it */
            setenv("NCCL_TUNER_PLUGIN", argv[1], 1);
            setenv("ARBENCH_TUNER_PROFILE", profile, 1);
            setenv("ARBENCH_TUNER_DEBUG", "1", 1);
            setenv("NCCL_DEBUG", "INFO", 1);
            setenv("NCCL_DEBUG_SUBSYS", "INIT,TUNING", 1);
            setenv("NCCL_DEBUG_FILE", logpath, 1);
            exit(run_nccl()); /* exit, not _exit: NCCL's debug file is flushed */
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
            printf("not ok %d - profile %s: the NCCL child died\n", i + 1, s->name);
            failed = 1;
            continue;
        }
        if (WEXITSTATUS(status) == SKIP) {
            remove_tmpdir(nscen);
            return SKIP;
        }
        const char *log = read_file(logpath);
        int bad = WEXITSTATUS(status) != 0 || !log;
        if (log) {
            int loaded = strstr(log, "Using arbench") != NULL;
            int read_profile = strstr(log, "ARBENCH-TUNER: profile") != NULL;
            if (!loaded || !read_profile)
                printf("# NCCL log %s: plugin loaded %d, profile read %d\n", logpath, loaded, read_profile);
            bad |= !loaded || !read_profile;
            bad |= check_choice(log, SMALL_BYTES, &s->small);
            bad |= check_choice(log, LARGE_BYTES, &s->large);
        }
        printf("%s %d - profile %s steers NCCL (log %s)\n", bad ? "not ok" : "ok", i + 1, s->name, logpath);
        failed |= bad;
    }
    if (!failed)
        remove_tmpdir(nscen);
    return failed;
}
