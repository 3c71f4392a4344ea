/* SPDX-License-Identifier: MIT */
/*
 * The table of a plugin's live symmetric windows (mem_alloc'd buffers), shared by
 * arb-nccl-symm.so and arb-lsa.so: collective allocation into a free slot, lookup of
 * the window that holds a pointer, and release. A slot index stays valid until its
 * buffer is freed, so a plugin may keep per-window data of its own by slot (lsa: the
 * buffer's address on every LSA rank).
 */
#ifndef ARB_SYMM_WINDOWS_H
#define ARB_SYMM_WINDOWS_H

#include <stddef.h>

#include <nccl.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SYMM_MAX_WINDOWS 64

typedef struct symm_window {
    char *base; /* NULL: a free slot */
    size_t bytes;
    ncclWindow_t win;
} symm_window_t;

typedef struct symm_windows {
    symm_window_t w[SYMM_MAX_WINDOWS];
} symm_windows_t;

/* Collective (every rank, same sizes, same order): a buffer of bytes in an
 * NCCL_WIN_COLL_SYMMETRIC window, in a free slot. Returns the slot, or -1 after
 * logging through ops which of ncclMemAlloc / registration / a symmetric window /
 * a free slot was missing (every rank registers even without a free slot, so that no
 * rank is left waiting). */
int symm_windows_alloc(symm_windows_t *t, ncclComm_t comm, const arb_host_ops_t *ops, size_t bytes);

/* The slot whose buffer holds [ptr, ptr + bytes) and ptr's offset in it; -1 if none. */
int symm_windows_find(const symm_windows_t *t, const void *ptr, size_t bytes, size_t *off);

/* Collective: deregisters and frees slot i (a free slot: nothing). */
void symm_windows_release(symm_windows_t *t, ncclComm_t comm, int i);

/* Collective: the slot of the buffer starting at ptr, released; NULL or unknown: nothing. */
void symm_windows_free(symm_windows_t *t, ncclComm_t comm, void *ptr);

/* Collective: every live slot, released (finalize). */
void symm_windows_free_all(symm_windows_t *t, ncclComm_t comm);

#ifdef __cplusplus
}
#endif

#endif
