/* SPDX-License-Identifier: MIT */
/* What every results row records about the run: versions, machine, environment. */
#ifndef ARB_META_H
#define ARB_META_H

#include <stddef.h>

typedef struct arb_meta {
    char run_id[64];
    char git_rev[64];
    char version[32];
    char host[256];
    char argv[2048];
    char gpu[128], sm[16], driver[96], cuda[32];
    char nccl[32];        /* library version at run time, ncclGetVersion */
    char nccl_header[32]; /* the header this arbench was compiled against */
    char mpi[128];
    char fabric[32], binding[256];
    char env[4096];       /* NCCL_*, CUDA_*, ARBENCH_* variables that were set, sorted, ';'-separated */
    int ranks, nodes;
} arb_meta_t;

/* Fills the parts known locally (everything but gpu/fabric/binding/run_id). */
void arb_meta_collect(arb_meta_t *m, int argc, char **argv);
/* "2026-11-30T10:04:33Z" (UTC) */
void arb_utc_now(char *buf, size_t len);
/* The git revision: the build's vcs tag, else "unknown". */
const char *arb_git_rev(void);
/* NCCL version as "2.28.3", or "none" when built without NCCL; code 0 if none. */
void arb_nccl_versions(char *lib, size_t lib_len, char *hdr, size_t hdr_len, int *lib_code, int *hdr_code);

#endif
