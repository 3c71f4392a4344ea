/* SPDX-License-Identifier: MIT */
#include "base/meta.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arb_config.h"
#include "base/common.h"
#if ARB_HAVE_NCCL
#include <nccl.h>
#endif

extern char **environ;

void arb_utc_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void fmt_nccl(int code, char *buf, size_t len)
{
    /* NCCL >= 2.9: code = major * 10000 + minor * 100 + patch */
    if (code <= 0)
        arb_snprintf(buf, len, "none");
    else
        arb_snprintf(buf, len, "%d.%d.%d", code / 10000, (code % 10000) / 100, code % 100);
}

void arb_nccl_versions(char *lib, size_t lib_len, char *hdr, size_t hdr_len, int *lib_code, int *hdr_code)
{
    int l = 0, h = 0;
#if ARB_HAVE_NCCL
    h = NCCL_VERSION_CODE;
    if (ncclGetVersion(&l) != ncclSuccess)
        l = 0;
#endif
    fmt_nccl(l, lib, lib_len);
    fmt_nccl(h, hdr, hdr_len);
    if (lib_code)
        *lib_code = l;
    if (hdr_code)
        *hdr_code = h;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void collect_env(char *buf, size_t len)
{
    size_t n = 0;
    for (char **e = environ; *e; e++)
        n++;
    const char **sel = calloc(n + 1, sizeof *sel);
    size_t k = 0;
    if (!sel) {
        buf[0] = '\0';
        return;
    }
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "NCCL_", 5) || !strncmp(*e, "CUDA_", 5) || !strncmp(*e, "ARBENCH_", 8))
            sel[k++] = *e;
    qsort(sel, k, sizeof *sel, cmp_str);
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < k && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ";" : "", sel[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    free(sel);
}

void arb_meta_collect(arb_meta_t *m, int argc, char **argv)
{
    memset(m, 0, sizeof *m);
    arb_snprintf(m->git_rev, sizeof m->git_rev, "%s", arb_git_rev());
    arb_snprintf(m->version, sizeof m->version, "%s", ARB_VERSION);
    if (gethostname(m->host, sizeof m->host - 1))
        arb_snprintf(m->host, sizeof m->host, "unknown");
    size_t used = 0;
    for (int i = 0; i < argc && used < sizeof m->argv; i++) {
        int w = snprintf(m->argv + used, sizeof m->argv - used, "%s%s", i ? " " : "", argv[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(lib, &n);
    lib[strcspn(lib, ",\n")] = '\0';
    arb_snprintf(m->mpi, sizeof m->mpi, "%s", lib);
    arb_nccl_versions(m->nccl, sizeof m->nccl, m->nccl_header, sizeof m->nccl_header, NULL, NULL);
    collect_env(m->env, sizeof m->env);
    arb_snprintf(m->gpu, sizeof m->gpu, "none");
    arb_snprintf(m->sm, sizeof m->sm, "none");
    arb_snprintf(m->driver, sizeof m->driver, "none");
    arb_snprintf(m->cuda, sizeof m->cuda, "none");
}
